"""Validation: every problem names its field and its line."""

from __future__ import annotations

import pytest

from prereg.document.check_arms import parse_seeds
from prereg.document.read import load, parse

GOOD = """---
fontaine: fontaine-prereg/1
id: t1
title: a test
created: 2026-11-30
arms:
  - name: a
    policy: molmoact2-discrete
    checkpoint: tiny
    decode: reference
    convmap: official
  - name: b
    policy: scripted
protocol:
  seeds: 0-9
  episode_seconds: 20
  workers: 2
reads:
  primary: successes
  secondary: [engaged, knock_aways]
gates:
  gpu_hours: 0.5
  pace: {after_episodes: 3, limit_hours: 1}
decision_rules:
  - if: a.successes >= 1
    then: go
---

Plain words.
"""


def problems_of(text: str):
    return parse(text, "t.md").problems


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_good_document_validates():
    doc = parse(GOOD, "t.md")
    assert doc.problems == []
    assert [a.name for a in doc.arms()] == ["a", "b"]
    assert doc.sections[0].protocol.seeds == tuple(range(10))
    assert doc.sections[0].gates.pace_limit_hours == 1.0


def test_shipped_examples_validate(examples_dir):
    for p in sorted(examples_dir.glob("*.md")):
        doc = load(p)
        assert doc.problems == [], (p, [x.render() for x in doc.problems])


def test_missing_arm_field_names_field_and_line():
    text = GOOD.replace("    checkpoint: tiny\n", "")
    (pr,) = problems_of(text)
    assert pr.field == "arms[0].checkpoint"
    assert pr.line == line_of(text, "- name: a")
    assert "missing" in pr.message


@pytest.mark.parametrize(
    "checkpoint, revision, ok",
    [
        ("allenai/MolmoAct2-SO100_101", "main", False),  # a branch moves
        ("allenai/MolmoAct2-SO100_101", "v1.0", False),
        ("allenai/MolmoAct2-SO100_101", None, False),
        ("allenai/MolmoAct2-SO100_101", "0123456789abcdef0123456789abcdef01234567", True),
        ("/data/ckpt", "sha256:" + "ab" * 32, True),
        ("/data/ckpt", "sha256:short", False),
        ("tiny", "local", True),
        ("tiny", None, True),
    ],
)
def test_a_model_arm_pins_an_immutable_revision(checkpoint, revision, ok):
    text = GOOD.replace("    checkpoint: tiny\n", f"    checkpoint: {checkpoint}\n"
                        + (f"    revision: '{revision}'\n" if revision is not None else ""))
    found = problems_of(text)
    if ok:
        assert found == []
    else:
        (pr,) = found
        assert pr.field == "arms[0].revision" and ("immutable" in pr.message or "missing" in pr.message)


@pytest.mark.parametrize("value, ok", [("0123456789abcdef0123456789abcdef01234567", True), ("main", False),
                                       ("0123456789ABCDEF0123456789ABCDEF01234567", False)])
def test_a_discrete_arm_may_pin_the_fast_tokenizer_to_a_commit(value, ok):
    text = GOOD.replace("    decode: reference\n", f"    decode: reference\n    fast_revision: '{value}'\n", 1)
    found = problems_of(text)
    if ok:
        assert found == [] and parse(text).find_arm("a")[0].fast_revision == value
    else:
        (pr,) = found
        assert pr.field == "arms[0].fast_revision" and "40-hex commit" in pr.message
        assert pr.line == line_of(text, "fast_revision:")
    text = GOOD.replace("    policy: scripted\n", f"    policy: scripted\n    fast_revision: '{value}'\n", 1)
    (pr,) = problems_of(text)
    assert pr.field == "arms[1].fast_revision" and "policy scripted has none" in pr.message


def test_record_predicts_is_a_protocol_switch():
    doc = parse(GOOD.replace("  workers: 2\n", "  workers: 2\n  record_predicts: true\n", 1))
    assert doc.problems == [] and doc.find_arm("a")[1].protocol.record_predicts is True
    assert parse(GOOD).find_arm("a")[1].protocol.record_predicts is False
    (pr,) = problems_of(GOOD.replace("  workers: 2\n", "  workers: 2\n  record_predicts: yes-please\n", 1))
    assert pr.field == "protocol.record_predicts" and "true or false" in pr.message


def test_a_plan_says_which_success_it_reads():
    """Issue 45: Fontaine's success (a place released and at rest) by default, or the env's own."""
    from prereg.rundir.rows import read_as_success

    assert parse(GOOD).find_arm("a")[1].protocol.success_field == "success"
    doc = parse(GOOD.replace("  workers: 2\n", "  workers: 2\n  success_field: env_success\n", 1))
    assert doc.problems == [] and doc.find_arm("a")[1].protocol.success_field == "env_success"
    (pr,) = problems_of(GOOD.replace("  workers: 2\n", "  workers: 2\n  success_field: placed\n", 1))
    assert pr.field == "protocol.success_field" and "success or env_success" in pr.message
    row = {"seed": 1, "success": False, "success_tick": None, "env_success": True, "env_success_tick": 40}
    assert read_as_success(row) is row
    assert read_as_success(row, "env_success") == {**row, "success": True, "success_tick": 40}


def test_grasp_miss_is_the_scripted_arms_skill_knob():
    """Issue 24: a scripted arm may register the oracle's seeded grasp-miss probability."""
    doc = parse(GOOD.replace("    policy: scripted\n", "    policy: scripted\n    grasp_miss: 0.5\n", 1))
    assert doc.problems == [] and doc.find_arm("b")[0].grasp_miss == 0.5
    assert parse(GOOD).find_arm("b")[0].grasp_miss is None
    text = GOOD.replace("    policy: scripted\n", "    policy: scripted\n    grasp_miss: 1.5\n", 1)
    (pr,) = problems_of(text)
    assert pr.field == "arms[1].grasp_miss" and "probability from 0 to 1" in pr.message
    assert pr.line == line_of(text, "grasp_miss")
    text = GOOD.replace("    convmap: official\n", "    convmap: official\n    grasp_miss: 0.2\n", 1)
    (pr,) = problems_of(text)
    assert pr.line == line_of(text, "grasp_miss") and "policy molmoact2-discrete has none" in pr.message


def test_grasp_drop_is_the_scripted_arms_drop_knob():
    """Issue 34: a scripted arm may register the oracle's seeded drop probability (grasped, then dropped)."""
    doc = parse(GOOD.replace("    policy: scripted\n", "    policy: scripted\n    grasp_drop: 0.3\n", 1))
    assert doc.problems == [] and doc.find_arm("b")[0].grasp_drop == 0.3
    text = GOOD.replace("    policy: scripted\n", "    policy: scripted\n    grasp_drop: yes\n", 1)
    (pr,) = problems_of(text)
    assert pr.field == "arms[1].grasp_drop" and "probability from 0 to 1" in pr.message
    text = GOOD.replace("    convmap: official\n", "    convmap: official\n    grasp_drop: 0.2\n", 1)
    (pr,) = problems_of(text)
    assert "policy molmoact2-discrete has none" in pr.message


@pytest.mark.parametrize("written, meant", [
    (None, "0"), ("0", "0"), ("auto", "auto"), ("none", "none"), ("all", "all"), ("'seeds:3, 7'", "seeds:3,7"),
])
def test_video_draw_takes_the_flags_grammar(written, meant):
    text = GOOD if written is None else GOOD.replace("  workers: 2\n", f"  workers: 2\n  video_draw: {written}\n", 1)
    doc = parse(text)
    assert doc.problems == [] and doc.find_arm("a")[1].protocol.video_draw == meant  # omitted: 0, as it always meant


def test_a_video_draw_that_means_nothing_is_refused_where_it_is_written():
    text = GOOD.replace("  workers: 2\n", "  workers: 2\n  video_draw: 3\n", 1)
    (pr,) = problems_of(text)
    assert pr.field == "protocol.video_draw" and "only 0 is a number" in pr.message
    assert pr.line == line_of(text, "video_draw: 3")


def test_empty_seed_list():
    text = GOOD.replace("seeds: 0-9", "seeds: []")
    (pr,) = problems_of(text)
    assert pr.field == "protocol.seeds" and "empty" in pr.message
    assert pr.line == line_of(text, "seeds: []")


def test_negative_gate():
    text = GOOD.replace("gpu_hours: 0.5", "gpu_hours: -1")
    (pr,) = problems_of(text)
    assert pr.field == "gates.gpu_hours"
    assert pr.line == line_of(text, "gpu_hours: -1")


def test_negative_pace_limit():
    text = GOOD.replace("limit_hours: 1}", "limit_hours: -2}")
    (pr,) = problems_of(text)
    assert pr.field == "gates.pace.limit_hours"
    assert pr.line == line_of(text, "pace:")


def test_unknown_secondary_read():
    text = GOOD.replace("[engaged, knock_aways]", "[engaged, vibes]")
    (pr,) = problems_of(text)
    assert pr.field == "reads.secondary[1]" and "vibes" in pr.message
    assert pr.line == line_of(text, "secondary:")


def test_rule_on_unknown_read_and_unknown_arm():
    text = GOOD.replace("a.successes >= 1", "a.luck >= 1")
    (pr,) = problems_of(text)
    assert pr.field == "decision_rules[0].if" and "luck" in pr.message
    assert pr.line == line_of(text, "a.luck")
    text = GOOD.replace("a.successes >= 1", "zz.successes >= 1")
    (pr,) = problems_of(text)
    assert "zz" in pr.message


def test_rule_without_arm_is_ambiguous_with_two_arms():
    text = GOOD.replace("a.successes >= 1", "successes >= 1")
    (pr,) = problems_of(text)
    assert "names no arm" in pr.message


def test_bad_decode_unknown_policy_bad_override():
    text = GOOD.replace("decode: reference", "decode: flow")
    assert problems_of(text)[0].field == "arms[0].decode"
    text = GOOD.replace("policy: scripted", "policy: oracle")
    assert problems_of(text)[0].field == "arms[1].policy"
    text = GOOD.replace("    convmap: official\n", "    convmap: official\n    convmap_overrides: [elbow=90]\n")
    (pr,) = problems_of(text)
    assert pr.field == "arms[0].convmap_overrides[0]" and "elbow" in pr.message
    assert pr.line == line_of(text, "convmap_overrides")


def test_yaml_syntax_error_has_line():
    text = GOOD.replace("  workers: 2", "  workers: [2")
    (pr,) = problems_of(text)
    assert pr.line is not None and pr.line >= line_of(text, "workers: [2")


def test_duplicate_arm_and_duplicate_key():
    text = GOOD.replace("name: b", "name: a")
    assert any("already declared" in p.message for p in problems_of(text))
    text = GOOD.replace("  workers: 2", "  workers: 2\n  workers: 3")
    (pr,) = problems_of(text)
    assert "twice" in pr.message and pr.line == line_of(text, "workers: 3")


def test_no_front_matter():
    (pr,) = [p for p in problems_of("# just words\n") if p.field == "front matter"]
    assert pr.line == 1


@pytest.mark.parametrize("spec,want", [
    ("0-4", [0, 1, 2, 3, 4]), ([6], [6]), (7, [7]), ({"start": 10, "count": 3}, [10, 11, 12]),
    ("0-2,9", [0, 1, 2, 9]),
])
def test_seed_forms(spec, want):
    assert parse_seeds(spec) == want


@pytest.mark.parametrize("spec", ["5-1", "a-b", -1, {"start": 0}, True])
def test_bad_seed_forms(spec):
    with pytest.raises(ValueError):
        parse_seeds(spec)


@pytest.mark.parametrize("spec,why", [
    ("0-10000000", "'0-10000000' names more than 100,000 seeds"),
    ({"start": 0, "count": 10**6}, "names more than 100,000 seeds"),
    ("0-99999,100000", "names more than 100,000 seeds"),
    (["0-99999", 100000], "names more than 100,000 seeds"),
    (2**32, "seed 4294967296 in 4294967296 is past the largest seed, 2147483647"),
    (2**31, "is past the largest seed, 2147483647"),
    ("2147483647-2147483648", "seed 2147483648 in '2147483647-2147483648' is past the largest seed"),
    ({"start": 2**31 - 1, "count": 2}, "is past the largest seed"),
    ("9" * 40, "is not a seed or a range"),
    ({"start": -5, "count": 3}, "seeds are >= 0"),
])
def test_seed_bounds_are_the_clis_and_are_checked_before_anything_is_expanded(spec, why):
    """`seeds: 0-10000000` hung validate and the launch; the CLI refuses the same plan at once."""
    with pytest.raises(ValueError) as got:
        parse_seeds(spec)
    assert why in str(got.value)


@pytest.mark.parametrize("spec", ["0-2147483647", {"start": 0, "count": 2**31 - 1}])
def test_two_billion_seeds_are_refused_without_being_expanded(spec):
    """Counted, never listed: expanded, these would never return (or exhaust memory)."""
    from tests.helpers import returns_within

    def refused():
        with pytest.raises(ValueError) as got:
            parse_seeds(spec)
        return str(got.value)

    assert "names more than 100,000 seeds" in returns_within(refused, timeout=10, what="parse_seeds")


def test_the_seed_bounds_are_one_pair_of_constants_for_documents_and_flags():
    from engine.cli import parser as cli
    from prereg.core import limits

    assert (cli.MAX_SEEDS, cli.MAX_SEED) == (limits.MAX_SEEDS, limits.MAX_SEED) == (100_000, 2**31 - 1)
    assert (cli.MAX_WORKERS, cli.MAX_EPISODE_SECONDS) == (limits.MAX_WORKERS, limits.MAX_EPISODE_SECONDS) == (256, 3600)
    assert parse_seeds(f"{limits.MAX_SEED}") == [limits.MAX_SEED]
    assert len(parse_seeds(f"0-{limits.MAX_SEEDS - 1}")) == limits.MAX_SEEDS


def test_a_document_with_too_many_seeds_is_refused_at_its_line_at_once():
    from tests.helpers import returns_within

    text = GOOD.replace("seeds: 0-9", "seeds: 0-2147483647")  # expanded, it would never return
    (pr,) = returns_within(lambda: problems_of(text), timeout=10, what="validating two billion seeds")
    assert pr.field == "protocol.seeds" and "more than 100,000 seeds" in pr.message
    assert pr.line == line_of(text, "seeds: 0-2147483647")
    many = GOOD.replace("seeds: 0-9", "seeds: 0-99999")  # the most a run takes: validates
    assert problems_of(many) == []


def test_the_package_stays_pure():
    import subprocess
    import sys

    code = ("import sys, prereg.outputs.cli, prereg.outputs.report, prereg.document.launch, prereg.document.seal; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'console', 'mujoco', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("old,new,field,says", [
    ("    policy: scripted\n", "    policy: [scripted]\n", "arms[1].policy", "must be a single value"),
    ("  episode_seconds: 20\n", "  episode_seconds: .nan\n", "protocol.episode_seconds", "from 0.1 to 3600"),
    ("  episode_seconds: 20\n", "  episode_seconds: .inf\n", "protocol.episode_seconds", "from 0.1 to 3600"),
    # issue 33: the bounds fontaine-eval's flags have (prereg/core/limits.py), a plan has too
    ("  episode_seconds: 20\n", "  episode_seconds: 1e9\n", "protocol.episode_seconds", "from 0.1 to 3600"),
    ("  episode_seconds: 20\n", "  episode_seconds: 0.0001\n", "protocol.episode_seconds", "from 0.1 to 3600"),
    ("  workers: 2\n", "  workers: 100000\n", "protocol.workers", "from 1 to 256"),
    ("  gpu_hours: 0.5\n", "  gpu_hours: .inf\n", "gates.gpu_hours", ""),
    ("title: a test\n", "title: a test\ndeep: " + "[" * 5000 + "]" * 5000 + "\n", "front matter", "nested more than"),
])
def test_hostile_values_are_one_problem_each_never_a_traceback(old, new, field, says):
    text = GOOD.replace(old, new)
    assert text != GOOD
    (pr,) = problems_of(text)
    assert pr.field == field and says in pr.message and pr.line == line_of(text, new.splitlines()[-1][:20])
