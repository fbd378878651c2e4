"""gates.tripwires: a plan registers the shim's tripwires; every bad setting names its field and line."""

from __future__ import annotations

import pytest

from prereg.core.vocabulary import COVERAGE_MAX_UNCOVERED, FIRST_ACTION_MAX_DEG, RIG_TABLE_SEEDS
from prereg.document.model import CoverageTripwire, FirstActionTripwire, Tripwires, tripwires_from_dict
from prereg.document.read import parse
from prereg.rundir.status import GateSpec
from tests.prereg.test_prereg_document import GOOD, line_of

REGISTERED = """  tripwires:
    coverage:
      max_uncovered: 0.3
      span_limited: [wrist_roll]
      rig: {seeds: 0-2, episode_seconds: 12}
    first_action:
      seeds: [0, 1]
      anchor_deg: 6.31
"""


def with_tripwires(block: str) -> str:
    return GOOD.replace("  pace: {after_episodes: 3, limit_hours: 1}\n",
                        "  pace: {after_episodes: 3, limit_hours: 1}\n" + block, 1)


def test_registered_tripwires_reach_the_gates_and_read_back():
    doc = parse(with_tripwires(REGISTERED), "t.md")
    assert doc.problems == []
    gates = doc.sections[0].gates
    plan = tripwires_from_dict(gates.tripwires)
    assert plan == Tripwires(
        CoverageTripwire(max_uncovered=0.3, span_limited=("wrist_roll",), rig_seeds=(0, 1, 2), rig_episode_seconds=12.0),
        FirstActionTripwire(seeds=(0, 1), anchor_deg=(6.31,) * 6, max_deg=FIRST_ACTION_MAX_DEG),
    )
    # the manifest's gates carry them as JSON, and a reader gets the same plan back
    assert tripwires_from_dict(GateSpec.from_dict({"tripwires": plan.as_dict()}).tripwires) == plan


def test_a_bare_tripwire_takes_the_defaults_and_none_registers_nothing():
    doc = parse(with_tripwires("  tripwires:\n    coverage:\n"), "t.md")
    assert doc.problems == []
    plan = tripwires_from_dict(doc.sections[0].gates.tripwires)
    assert plan.first_action is None
    assert plan.coverage == CoverageTripwire(COVERAGE_MAX_UNCOVERED, (), RIG_TABLE_SEEDS)
    assert parse(GOOD, "t.md").sections[0].gates.tripwires is None
    assert tripwires_from_dict(None) is None and tripwires_from_dict({}) is None


@pytest.mark.parametrize("old, new, field, needle, words", [
    ("span_limited: [wrist_roll]", "span_limited: [wrist_rol]", "gates.tripwires.coverage.span_limited[0]",
     "span_limited:", "unknown joint 'wrist_rol'"),
    ("span_limited: [wrist_roll]", "span_limited: [wrist_roll, wrist_roll]", "gates.tripwires.coverage.span_limited[1]",
     "span_limited:", "given twice"),
    ("span_limited: [wrist_roll]", "span_limited: {wrist_roll: 1}", "gates.tripwires.coverage.span_limited",
     "span_limited:", "must be a list of joints"),
    ("max_uncovered: 0.3", "max_uncovered: 30", "gates.tripwires.coverage.max_uncovered",
     "max_uncovered:", "must be a fraction"),
    ("rig: {seeds: 0-2, episode_seconds: 12}", "rig: {seeds: 0-2, episode_seconds: -1}",
     "gates.tripwires.coverage.rig.episode_seconds", "rig:", "must be seconds"),
    ("anchor_deg: 6.31", "anchor_deg: [1, 2]", "gates.tripwires.first_action.anchor_deg",
     "anchor_deg:", "one number of degrees >= 0 or 6"),
    ("      seeds: [0, 1]\n", "      seeds: []\n", "gates.tripwires.first_action.seeds", "seeds: []", "at least one seed"),
    ("    first_action:", "    first_actoin:", "gates.tripwires.first_actoin", "first_actoin:", "unknown tripwire"),
    ("      anchor_deg: 6.31", "      anchor: 6.31", "gates.tripwires.first_action.anchor", "anchor: 6.31",
     "unknown first_action field"),
])
def test_a_bad_setting_names_its_field_and_line(old, new, field, needle, words):
    text = with_tripwires(REGISTERED.replace(old, new, 1))
    (pr,) = parse(text, "t.md").problems
    assert pr.field == field and words in pr.message, pr.render()
    assert pr.line == line_of(text, needle)
    assert pr.hint  # says what would do


def test_a_fraction_in_percent_says_so():
    text = with_tripwires(REGISTERED.replace("max_uncovered: 0.3", "max_uncovered: 54", 1))
    (pr,) = parse(text, "t.md").problems
    assert "0.30 is 30%" in pr.hint


def test_tripwires_must_name_one():
    for block in ("  tripwires: {}\n", "  tripwires: [coverage]\n", "  tripwires:\n    coverage: 0.3\n"):
        (pr,) = parse(with_tripwires(block), "t.md").problems
        assert pr.field.startswith("gates.tripwires") and pr.line == line_of(with_tripwires(block), "tripwires:") + (
            1 if "coverage: 0.3" in block else 0)


def test_the_registered_tripwires_read_in_one_line():
    from prereg.document.model import describe_tripwires

    gates = parse(with_tripwires(REGISTERED), "t.md").sections[0].gates
    assert describe_tripwires(gates.tripwires) == ("tripwires before the first episode: coverage <= 30% uncovered "
                                                   "(span-limited allowed: wrist_roll), first action vs state "
                                                   "(anchor 6.31 deg)")
    assert describe_tripwires(None) is None
    bare = parse(with_tripwires("  tripwires:\n    first_action:\n"), "t.md").sections[0].gates
    assert describe_tripwires(bare.tripwires) == "tripwires before the first episode: first action vs state (<= 10 deg)"


def test_show_lists_them_with_the_gates(tmp_path):
    from prereg.outputs.cli import main

    doc = tmp_path / "t.md"
    doc.write_text(with_tripwires(REGISTERED))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["show", str(doc)])
    assert "gates: gpu_hours 0.5" in out.getvalue() and "span-limited allowed: wrist_roll" in out.getvalue()
