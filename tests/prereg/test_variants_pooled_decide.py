"""Decisions on the pooled rate (issue 48, `read_variant: pooled`; prereg/stats/variants_decide.py): each seed's
share of pooled variants solved is one observation; the registered sequential test and comparison bet on it,
so their error rates hold at every seed read (simulated here over crossed designs whose variants are
correlated, the table in docs/prereg.md: scripts/variants_pooled_decide.py); the plan, the manifest, the fold
and the report read it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prereg import rundir as rd
from prereg.document.comparison_spec import ComparisonSpec
from prereg.document.read import load, parse
from prereg.document.seal import freeze
from prereg.outputs.report import build_report
from prereg.rundir.fold import Plan
from prereg.stats.comparison import BETTER, WORSE
from prereg.stats.sequential import H0, H1, Sprt, check_rows, oc
from prereg.stats.story import Story
from prereg.stats.variants_decide import (
    PooledRows,
    comparison_check,
    comparison_oc,
    decision_subject,
    pooled_comparison_decision,
    pooled_sequential_decision,
    pooled_sequential_oc,
    seed_shares,
    sequential_check,
)
from tests.prereg.conftest import make_row
from tests.prereg.test_plan_variants import with_protocol
from tests.prereg.test_prereg_document import line_of

SPRT = Sprt(0.3, 0.6, 0.05, 0.1)
CONFIG = {"variants": ["dim", "cam"], "camera_variants": ["cam"], "read_variant": "pooled"}


def crossed(won: dict, seeds, arm=None) -> list[dict]:
    """Rows of every (variant, seed); won {variant (None: base): seeds solved}."""
    extra = {"arm": arm} if arm else {}
    return [make_row(s, success=s in w, variant=v, **extra) for v, w in won.items() for s in seeds]


def manifest(**config) -> rd.Manifest:
    return rd.Manifest.of({"config": {**CONFIG, **config}})


# ---------------------------------------------------------------- the observations


def test_a_seeds_share_counts_the_pooled_variants_on_the_plan_prefix():
    rows = crossed({None: {0, 1, 2}, "dim": {0, 2}, "cam": {1, 2, 3}}, range(4))
    rows = [r for r in rows if not (r["variant"] == "dim" and r["seed"] == 2)]  # seed 2 still running on dim
    seeds, shares, pooled = seed_shares(rows, range(4), manifest())
    assert pooled == ("base", "dim") and list(seeds) == [0, 1]  # the camera apart; seed 3 waits for seed 2
    assert list(shares) == [1.0, 0.5]
    _, shares, pooled = seed_shares(rows, range(4), manifest(pool_cameras=True))
    assert pooled == ("base", "dim", "cam") and shares == pytest.approx([2 / 3, 2 / 3])
    error = make_row(0, success=True, variant="dim", status="error", error="boom")
    assert list(seed_shares([*rows, error], range(4), manifest())[1]) == [0.5, 0.5]  # an error row is no success


def test_the_manifest_reads_pooled_only_in_a_crossed_design_and_its_counts_are_bases():
    m = manifest()
    assert (m.read_variant, m.counted_variant) == ("pooled", "base")
    assert Plan.of(m).variant == "base"  # the live panels' k/n: the scene as declared
    alone = rd.Manifest.of({"config": {"read_variant": "pooled"}})
    assert (alone.read_variant, alone.counted_variant) == ("base", None)
    assert PooledRows.of(alone, []) is None and PooledRows.of(manifest(read_variant="dim"), []) is None


# ---------------------------------------------------------------- one arm


def test_the_sequential_test_on_the_pooled_rate_decides_on_the_shares_and_says_so():
    every = crossed({None: set(range(20)), "dim": set(range(20)), "cam": set()}, range(20))
    d = pooled_sequential_decision(SPRT, every, manifest(), range(20))
    assert d.decision == H1 and d.at < 20 and d.successes == 2 * d.at
    assert "pooled rate" in d.text and "2 pooled variants" in d.text and f"at {d.at}/20 seeds" in d.text
    none = crossed({None: set(), "dim": set(), "cam": set(range(20))}, range(20))
    assert pooled_sequential_decision(SPRT, none, manifest(), range(20)).decision == H0
    assert pooled_sequential_decision(SPRT, every[:3], manifest(), range(20)) is None  # no seed on every variant


def test_the_driver_call_routes_the_read_the_plan_names():
    # base solves nothing, dim every seed: reading base accepts H0, pooled (0.5 a seed) neither early
    rows = crossed({None: set(), "dim": set(range(30)), "cam": set()}, range(30))
    spec = SPRT.as_dict()
    base = sequential_check(spec, rows, {**CONFIG, "read_variant": "base"}, range(30))
    assert base == check_rows(spec, [r for r in rows if r["variant"] is None], range(30)) and base["decision"] == H0
    assert sequential_check(spec, rows, {**CONFIG, "read_variant": "dim"}, range(30))["decision"] == H1
    pooled = sequential_check(spec, rows, CONFIG, range(30))
    assert pooled is None or pooled["read"] == "pooled"
    won = sequential_check(spec, crossed({None: set(range(30)), "dim": set(range(30))}, range(30)), CONFIG, range(30))
    assert won["decision"] == H1 and won["read"] == "pooled" and won["p0"] == 0.3
    assert sequential_check(None, rows, CONFIG, range(30)) is None


@pytest.mark.parametrize("rates", [(0.3,) * 4, (0.5, 0.1, 0.3, 0.3), (0.05, 0.55, 0.3, 0.3)])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.95])
def test_type_one_error_and_power_hold_whatever_the_variants_correlation(rates, rho):
    """At a pooled rate of p0 (H0's edge) it accepts H1 at most alpha of the time; at p1 it accepts H0 at most
    beta and H1 most of the time, over simulated crossed designs (3 sigma of Monte Carlo slack)."""
    sims, n = 1500, 60
    null = pooled_sequential_oc(SPRT, rates, rho, n, sims=sims, seed=1)
    assert null.p == pytest.approx(SPRT.p0) and null.accept_h1 <= SPRT.alpha + 3 * np.sqrt(SPRT.alpha / sims)
    alt = pooled_sequential_oc(SPRT, [r + 0.3 for r in rates], rho, n, sims=sims, seed=2)
    assert alt.accept_h0 <= SPRT.beta + 3 * np.sqrt(SPRT.beta / sims) and alt.accept_h1 >= 0.85
    assert 1 <= null.expected_episodes < n and 1 <= alt.expected_episodes < n


def test_against_base_alone_it_reads_fewer_seeds_when_the_variants_differ_and_no_fewer_when_they_copy():
    """Measured, not assumed: with independent variants the pooled test decides sooner than the SPRT on base
    alone at the same design; when every variant copies the seed (rho near 1) it is no better (the table)."""
    base = oc(SPRT, 60, 0.3)
    loose = pooled_sequential_oc(SPRT, (0.3,) * 5, 0.0, 60, sims=1500, seed=3)
    tight = pooled_sequential_oc(SPRT, (0.3,) * 5, 0.99, 60, sims=1500, seed=3)
    assert loose.expected_episodes < base.expected_episodes < tight.expected_episodes + 1.5
    assert loose.expected_episodes < tight.expected_episodes


# ---------------------------------------------------------------- a comparison run


SPEC = ComparisonSpec("a", "b", "success", "savi", alpha=0.05, minimum_effect=0.15, max_seeds=40)


def test_the_comparison_on_the_pooled_rates_decides_b_better_and_the_driver_call_routes_it():
    seeds = range(40)
    rows = (crossed({None: set(range(0, 40, 4)), "dim": set(), "cam": set()}, seeds, "a")
            + crossed({None: set(seeds), "dim": set(seeds), "cam": set()}, seeds, "b"))
    d = pooled_comparison_decision(SPEC, rows, manifest(), seeds)
    assert d.outcome == BETTER and d.at < 40 and d.values["read"] == "pooled" and d.values["pooled"] == ["base", "dim"]
    assert d.values["rate_b"] == 1.0 and "on the pooled rate" in d.text and d.stops_run
    assert comparison_check(SPEC, rows, CONFIG, seeds).as_dict() == d.as_dict()
    flipped = ComparisonSpec("b", "a", "success", "savi", alpha=0.05, minimum_effect=0.15, max_seeds=40)
    assert pooled_comparison_decision(flipped, rows, manifest(), seeds).outcome == WORSE
    base = comparison_check(SPEC, rows, {**CONFIG, "read_variant": "base"}, seeds)
    assert "pooled" not in base.as_dict().get("read", "")  # base alone: the registered test's own decision
    progress = ComparisonSpec("a", "b", "progress_final_cm", "savi", clip_cm=5.0)
    with pytest.raises(ValueError, match="a progress comparison reads one variant"):
        pooled_comparison_decision(progress, rows, manifest(), seeds)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.95])
def test_the_pooled_comparison_keeps_its_level_and_outpowers_base_alone(rho):
    sims = 1000
    same = comparison_oc(0.05, 0.15, (0.5, 0.3, 0.4, 0.6), (0.5, 0.3, 0.4, 0.6), 80, rho, 0.5, sims=sims, seed=4)
    wrong = same["pooled"]["better"] + same["pooled"]["worse"]
    assert wrong <= 0.05 + 3 * np.sqrt(0.05 / sims)
    shift = comparison_oc(0.05, 0.15, (0.4, 0.3, 0.5, 0.4), (0.6, 0.5, 0.7, 0.6), 80, rho, 0.5, sims=sims, seed=5)
    assert shift["pooled"]["worse"] == 0.0 and shift["pooled"]["better"] >= shift["base (savi)"]["better"]
    assert shift["pooled"]["expected_seeds"] <= shift["base (savi)"]["expected_seeds"]
    if rho == 0.0:
        assert same["pooled"]["equivalent"] > 0.5  # four variants a seed narrow the difference enough to say so


# ---------------------------------------------------------------- the plan


@pytest.mark.parametrize("extra, field, needle, says", [
    ("  read_variant: pooled\n", "protocol.read_variant", "read_variant: pooled",
     "read_variant: pooled reads the pooled rate of the variants run, but protocol.variants lists none"),
    ("  variants: [dim, pooled]\n", "protocol.variants[1]", "variants: [dim, pooled]", "'pooled' is not a variant name"),
])
def test_a_pooled_read_needs_variants_and_no_variant_is_named_pooled(extra, field, needle, says):
    text = with_protocol(extra)
    problems = parse(text, "t.md").problems
    assert [(p.field, p.line) for p in problems] == [(field, line_of(text, needle))], problems
    assert says in problems[0].message and problems[0].hint


def test_a_pooled_plan_validates_and_says_what_its_decision_reads():
    p = parse(with_protocol("  variants: [dim]\n  read_variant: pooled\n"), "t.md")
    assert p.problems == [] and p.sections[0].protocol.read_variant == "pooled"
    assert decision_subject("pooled", ("dim",)).startswith("the pooled rate over base, dim")
    assert decision_subject("dim", ("dim",)) == "dim"


def test_validate_prints_what_the_pooled_decision_reads(tmp_path, capsys):
    from prereg.outputs.cli import main

    path = tmp_path / "plan.md"
    path.write_text(with_protocol("  variants: [dim]\n  read_variant: pooled\n"))
    main(["validate", str(path)])
    out = capsys.readouterr().out
    assert "the decision reads the pooled rate over base, dim" in out


# ---------------------------------------------------------------- the report


def pooled_plan(tmp_path):
    text = with_protocol("  variants: [dim, dark]\n  read_variant: pooled\n").replace("seeds: 0-9", "seeds: 0-39", 1).replace(
        "  gpu_hours: 0.5\n", "  gpu_hours: 0.5\n  sequential: {p0: 0.3, p1: 0.6, alpha: 0.05, beta: 0.1}\n", 1)
    path = tmp_path / "pooled.md"
    path.write_text(text)
    freeze(path)
    assert load(path).problems == []
    return path


def test_the_report_decides_on_the_pooled_rate_and_counts_base(tmp_path, run_dir):
    """Base solves a seed in five, both variants every seed: reading base accepts H0 (p <= 0.3), the plan
    reads the pooled rate (0.73) and accepts H1; the k/n every count reads stays base's, and says so."""
    path = pooled_plan(tmp_path)
    seeds = range(40)
    rows = crossed({None: set(range(0, 40, 5)), "dim": set(seeds), "dark": set(seeds)}, seeds)
    config = {"variants": ["dim", "dark"], "read_variant": "pooled"}
    record = sequential_check(SPRT.as_dict(), rows, config, seeds)  # what the driver records (status.json)
    run = run_dir("pooled", rows, status={"state": "done", "done": 120, "total": 120, "sequential": record},
                  launched=(path, "b"), manifest={"config": config})
    rep = build_report(path, {"b": run}, append=False, now="2026-12-07T12:00:00Z")
    got = json.loads((run / rd.RESULTS_JSON).read_text())
    assert (got["primary"]["successes"], got["primary"]["n"]) == (8, 40)  # the counts: base's
    assert got["valid"] is True  # the driver's record is the pooled test's: no provenance problem
    assert check_rows(SPRT.as_dict(), [r for r in rows if r["variant"] is None], seeds)["decision"] == H0
    seq = next(v for v in got["sequential_tests"] if v["key"] == "base:sequential:b")
    want = pooled_sequential_decision(SPRT, rows, rd.Manifest.of({"config": config}), seeds)
    assert seq["verdict"] == "final" and seq["decision"] == want.as_dict() and want.decision == H1
    assert "on the pooled rate" in seq["label"] or "on the pooled rate" in seq["why"]
    assert any("decide on the pooled rate (base, dim, dark)" in n and "reads the base rows" in n
               for n in rep.arms["b"].reads.notes)
    # one story on every surface: the arm's line leads with the pooled rate that decides, base's k/n after it
    story = Story.from_dict(got["story"])
    line = story.arms[0].line()
    assert line.startswith("b: pooled 0.73 (decides) (95% CI") and "what the decision reads (base 8/40 successes)" in line
    assert story.arms[0].pooled == story.variants[0].pooled_words()
    md = (run / rd.RESULTS).read_text()
    assert "decide on the pooled rate; the counts above and every decision rule read `base` only" in md
    assert "| base | 8/40 |" in md and "| pooled |" in md and "| decides |" not in md


def test_a_driver_record_of_the_base_test_is_not_what_a_pooled_plan_decides(tmp_path, run_dir):
    path = pooled_plan(tmp_path)
    seeds = range(40)
    rows = crossed({None: set(range(0, 40, 5)), "dim": set(seeds), "dark": set(seeds)}, seeds)
    wrong = check_rows(SPRT.as_dict(), [r for r in rows if r["variant"] is None], seeds)  # base's H0
    run = run_dir("pooled", rows, status={"state": "done", "done": 120, "total": 120, "sequential": wrong},
                  launched=(path, "b"), manifest={"config": {"variants": ["dim", "dark"], "read_variant": "pooled"}})
    rep = build_report(path, {"b": run}, append=False, now="2026-12-07T12:00:00Z")
    problems = [c.text for c in rep.arms["b"].reads.checks if not c.ok]
    assert any("status.json's record of the sequential test is not what the rows decide" in t for t in problems)
