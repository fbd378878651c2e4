"""The one verdict engine (prereg/stats/verdict.py): each case the issue measured, built from hand-written rows.

- a paired rule reads its comparator: INVALID, partial, live or missing comparator arms make it so;
- a curtailed verdict never overrides INVALID (nor does a sequential one, nor another plan's hash);
- two sections with the same rule text keep their own answers (keyed by section, not text);
- sequential decisions read the plan prefix, so completion order and workers cannot move them
  (a simulation with successes finishing early at 1, 8 and 32 workers);
- the driver's curtailment check reads the prefix too.
"""

from __future__ import annotations

import heapq
import shutil

import numpy as np
import pytest

from prereg import rundir as rd
from prereg.document.seal import amend, freeze
from prereg.outputs.report import build_report
from prereg.rundir.rows import plan_prefix, rows_by_seed
from prereg.stats.curtail import check_run
from prereg.stats.sequential import H1, Sprt, oc, sequential_decision
from tests.prereg.conftest import EXAMPLES, make_row

NOW = "2026-12-01T09:00:00Z"

PAIRED = """---
fontaine: fontaine-prereg/1
id: paired-test
title: "b against its comparator a"
created: 2026-12-01
arms:
  - name: a
    policy: scripted
  - name: b
    policy: scripted
protocol:
  seeds: 0-9
  episode_seconds: 10
  workers: 2
reads:
  primary: successes
  validity: {reset_strikes_max: 0, error_rows_max: 0}
  comparator: {arm: a, for: [b]}
gates:
  gpu_hours: 1
decision_rules:
  - if: b.delta_mean > 0
    then: b moves the boat further than a
---

# b against a
"""

ONE_ARM = """---
fontaine: fontaine-prereg/1
id: same-text
title: "A, then B in an amendment, with the same rule text"
created: 2026-12-01
arms:
  - name: A
    policy: scripted
protocol:
  seeds: 0-5
  episode_seconds: 10
  workers: 2
reads:
  primary: successes
gates:
  gpu_hours: 1
decision_rules:
  - if: successes >= 5
    then: A works
---

# A
"""


@pytest.fixture
def paired_doc(tmp_path):
    p = tmp_path / "paired.md"
    p.write_text(PAIRED)
    freeze(p, now=NOW, commit="test")
    return p


def b_run(run_dir, doc, name="b"):
    return run_dir(name, [make_row(s, progress_final_cm=2.0 + 0.1 * s) for s in range(10)],
                   status={"state": "done"}, launched=(doc, "b"))


def verdict_of(rep, condition):
    (v,) = [v for v in rep.verdicts if v.rule.condition == condition]
    return v


def test_a_paired_rule_is_undetermined_when_its_comparator_is_invalid(paired_doc, run_dir):
    b = b_run(run_dir, paired_doc)
    rows = [make_row(s, progress_final_cm=0.0) for s in range(9)] + [make_row(9, status="error")]
    a = run_dir("a", rows, status={"state": "done"}, launched=(paired_doc, "a"))
    v = verdict_of(build_report(paired_doc, {"a": a, "b": b}, append=False, now=NOW), "b.delta_mean > 0")
    assert v.verdict == "undetermined" and v.arms == ("a", "b")
    assert any(r.startswith("a: INVALID: error rows 1") for r in v.reasons)


def test_a_paired_rule_is_provisional_or_undetermined_on_a_partial_or_live_comparator(paired_doc, run_dir):
    b = b_run(run_dir, paired_doc)
    rows = [make_row(s, progress_final_cm=0.0) for s in range(6)]
    a = run_dir("a", rows, status={"state": "stopped"}, launched=(paired_doc, "a"))
    v = verdict_of(build_report(paired_doc, {"a": a, "b": b}, append=False, now=NOW), "b.delta_mean > 0")
    assert v.verdict == "provisional" and v.label == "provisional at 6/10 for a (HOLDS so far)"
    shutil.rmtree(a)
    live = run_dir("a", rows, status={"state": "running"}, launched=(paired_doc, "a"))
    v = verdict_of(build_report(paired_doc, {"a": live, "b": b}, append=False, now=NOW), "b.delta_mean > 0")
    assert v.verdict == "undetermined" and "a: the run is still running (6/10 episodes)" in v.reasons
    shutil.rmtree(live)
    v = verdict_of(build_report(paired_doc, {"b": b}, append=False, now=NOW), "b.delta_mean > 0")
    assert v.verdict == "undetermined"  # no run of a anywhere: the comparator is missing, and said so
    assert "a: no run of this arm in this report" in v.reasons


def test_a_paired_rule_holds_on_two_valid_complete_arms(paired_doc, run_dir):
    b = b_run(run_dir, paired_doc)
    a = run_dir("a", [make_row(s, progress_final_cm=0.0) for s in range(10)], status={"state": "done"},
                launched=(paired_doc, "a"))
    rep = build_report(paired_doc, {"a": a, "b": b}, append=False, now=NOW)
    v = verdict_of(rep, "b.delta_mean > 0")
    assert v.verdict == "HOLDS" and v.key == "base#1" and v.arms == ("a", "b")


def test_a_curtailed_verdict_never_overrides_invalid(tmp_path, run_dir):
    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    rows = [make_row(s, success=True) for s in range(5)] + [make_row(5, status="error")]
    stop = rd.StopReason(rd.BY_DECIDED, "rules settled at 5/20").as_dict()
    d = run_dir("oracle", rows, status={"state": "stopped", "stop": stop}, launched=(doc, "oracle"))
    rep = build_report(doc, {"oracle": d}, append=False, now=NOW)
    v = verdict_of(rep, "successes >= 5")
    assert v.verdict == "undetermined" and v.decided == "decided at 5/20 by the registered curtailment"
    assert "oracle: INVALID: error rows 1" in v.why and "settled HOLDS at 5/20" in v.why
    assert "[HOLDS" not in rep.summary_text()
    clean = run_dir("oracle-ok", rows[:5], status={"state": "stopped", "stop": stop}, launched=(doc, "oracle"))
    v = verdict_of(build_report(doc, {"oracle": clean}, append=False, now=NOW), "successes >= 5")
    assert v.label == "HOLDS (final: decided at 5/20 by the registered curtailment)"



SEQUENTIAL = """---
fontaine: fontaine-prereg/1
id: sequential-test
title: "a registered sequential test on one arm"
created: 2026-12-01
arms:
  - name: a
    policy: scripted
protocol:
  seeds: 0-19
  episode_seconds: 10
  workers: 2
reads:
  primary: successes
  validity: {reset_strikes_max: 0, error_rows_max: 0}
gates:
  gpu_hours: 1
  sequential: {p0: 0.1, p1: 0.6, alpha: 0.05, beta: 0.1}
decision_rules:
  - if: successes >= 15
    then: a works
---

# a, with a registered SPRT
"""


def test_a_sequential_decision_on_an_arm_that_ends_invalid_is_undetermined_with_both_reasons(tmp_path, run_dir):
    # two successes cross the SPRT's upper bound (2 log 6 = 3.58 >= log(0.9 / 0.05) = 2.89): the driver
    # stops; an episode in flight then crashes and leaves an error row, over the registered limit of 0
    doc = tmp_path / "sequential.md"
    doc.write_text(SEQUENTIAL)
    freeze(doc, now=NOW, commit="test")
    stop = rd.StopReason(rd.BY_DECIDED, "(sequential) H1 accepted at 2/20").as_dict()
    rows = [make_row(0, success=True), make_row(1, success=True)]
    d = run_dir("a", rows + [make_row(2, status="error")], status={"state": "stopped", "stop": stop},
                launched=(doc, "a"))
    rep = build_report(doc, {"a": d}, now=NOW)
    (s,) = rep.sequential
    assert s.verdict == "undetermined" and s.decision.decision == H1 and s.decision.at == 2
    assert s.why.startswith("INVALID: error rows 1") and "the test reached H1 at 2/20" in s.why  # both reasons
    v = verdict_of(rep, "successes >= 15")  # the rule the stop cut short: both reasons too, not the first alone
    assert v.verdict == "undetermined" and len(v.reasons) == 2
    assert v.reasons[0].startswith("a: INVALID: error rows 1")
    assert v.reasons[1].startswith("a registered stop ended arm a at 3/20 before this rule was settled")
    for text in ((d / "results.md").read_text(), doc.read_text()):
        assert "final: H1" not in text and "the test reached H1 at 2/20" in text
    assert "[final" not in rep.summary_text()
    clean = run_dir("a-ok", rows, status={"state": "stopped", "stop": stop}, launched=(doc, "a"))
    (s,) = build_report(doc, {"a": clean}, append=False, now=NOW).sequential
    assert s.verdict == "final" and s.label == "final: H1 accepted at 2/20"


def test_a_curtailed_run_reported_against_another_plan_is_undetermined(tmp_path, run_dir):
    # the same rule text, the same id, another registration: the run's manifest carries the
    # other frozen hash, so its provenance is INVALID and the curtailed decision cannot stand
    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    text = doc.read_text()
    other = tmp_path / "other" / "curtailment.md"
    other.parent.mkdir()
    other.write_text(text[:text.index("<!-- fontaine:sealed")].rstrip("\n").replace(
        "The arm stays valid:", "The arm stays VALID:") + "\n")
    freeze(other, now=NOW, commit="test")
    stop = rd.StopReason(rd.BY_DECIDED, "rules settled at 5/20").as_dict()
    d = run_dir("oracle", [make_row(s, success=True) for s in range(5)], status={"state": "stopped", "stop": stop},
                launched=(doc, "oracle"))
    v = verdict_of(build_report(doc, {"oracle": d}, append=False, now=NOW), "successes >= 5")
    assert v.label == "HOLDS (final: decided at 5/20 by the registered curtailment)"  # against its own plan
    before = other.read_text()
    rep = build_report(other, {"oracle": d}, now=NOW)
    assert not rep.arms["oracle"].reads.valid
    assert [c.ok for c in rep.arms["oracle"].reads.checks if c.name == "provenance"] == [False]
    for cond in ("successes >= 5", "successes == 0"):
        v = verdict_of(rep, cond)
        assert v.verdict == "undetermined" and v.reasons and v.reasons[0].startswith("oracle: INVALID: ")
        assert ", but a decision never stands on an arm that cannot bear one" in v.why
    assert "settled HOLDS at 5/20" in verdict_of(rep, "successes >= 5").why
    assert "[HOLDS" not in rep.summary_text() and "[does not hold" not in rep.summary_text()
    assert not rep.appended and other.read_text() == before  # and nothing appended to the other plan

def test_two_sections_with_the_same_rule_text_keep_their_own_answers(tmp_path, run_dir):
    doc = tmp_path / "same.md"
    doc.write_text(ONE_ARM)
    freeze(doc, now=NOW, commit="test")
    amend(doc, data={"arms": [{"name": "B", "policy": "scripted"}],
                     "decision_rules": [{"if": "successes >= 5", "then": "B works"}]})
    freeze(doc, now=NOW, commit="test")
    a = run_dir("A", [make_row(s, success=True) for s in range(6)], status={"state": "done"}, launched=(doc, "A"))
    b = run_dir("B", [make_row(s, success=s < 2) for s in range(3)], status={"state": "stopped"},
                launched=(doc, "B"))
    rep = build_report(doc, {"A": a, "B": b}, append=False, now=NOW)
    by_key = {v.key: v for v in rep.verdicts}
    assert set(by_key) == {"base#1", "amendment-1#1"}
    assert by_key["base#1"].verdict == "HOLDS" and by_key["base#1"].arms == ("A",)
    assert "A.successes = 6" in by_key["base#1"].detail
    assert by_key["amendment-1#1"].label == "provisional at 3/6 (does not hold so far)"
    assert "B.successes = 2" in by_key["amendment-1#1"].detail


def test_the_drivers_curtailment_check_reads_the_plan_prefix(tmp_path, run_dir):
    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    prereg = {"id": "demo-curtailment", "path": str(doc)}
    late = [make_row(s, success=True) for s in range(1, 6)]  # five successes, but seed 0 is still running
    d = run_dir("oracle", late, launched=(doc, "oracle"))
    s = check_run(prereg, "oracle", late, d)
    assert s["at"] == 0 and not s["all"]
    s = check_run(prereg, "oracle", late + [make_row(0, success=False)], d)
    assert s["at"] == 6 and s["all"] and [r["key"] for r in s["rules"]] == ["base#1", "base#2"]


def test_a_decision_is_dated_by_the_shortest_plan_prefix_that_settles_it(tmp_path, run_dir):
    # seed 4 finishes after seed 5 (2 workers): its row lengthens the prefix from 4 to 6 at once,
    # but seeds 0-4 alone already settle both rules, so the decision is "at 5", as in plan order
    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    prereg = {"id": "demo-curtailment", "path": str(doc)}
    rows = [make_row(s, success=True) for s in (0, 1, 2, 3, 5, 4)]
    d = run_dir("oracle", rows, launched=(doc, "oracle"))
    assert not check_run(prereg, "oracle", rows[:5], d)["all"]
    s = check_run(prereg, "oracle", rows, d)
    assert s["at"] == 5 and s["all"]
    assert [r["verdict"] for r in s["rules"]] == ["HOLDS", "does not hold"]


# ---------------------------------------------------------------- order-free sequential decisions


def completion_order(durations: np.ndarray, workers: int) -> list[int]:
    """Seeds dispatched in plan order to the first free of `workers` lanes; the order they finish in."""
    lanes = [(0.0, w) for w in range(workers)]
    heapq.heapify(lanes)
    done = []
    for seed, d in enumerate(durations):
        free_at, w = heapq.heappop(lanes)
        done.append((free_at + d, seed))
        heapq.heappush(lanes, (free_at + d, w))
    return [s for _, s in sorted(done)]


def simulate(spec: Sprt, planned: int, p: float, workers: int, sims: int, rng, *, engine: bool) -> float:
    """P(accept H1): rows fed as the driver feeds them (in completion order), decided by the engine's
    plan-prefix rule, or (engine=False) by the naive rule the driver used before: the SPRT on every
    row so far, whatever its place in the plan."""
    seeds = list(range(planned))
    h1 = 0
    for _ in range(sims):
        success = rng.random(planned) < p
        durations = np.where(success, rng.uniform(0.1, 0.4, planned), 1.0)  # a success ends its episode early
        rows: dict[int, dict] = {}
        k = n = 0
        for seed in completion_order(durations, workers):
            rows[seed] = {"seed": seed, "success": bool(success[seed]), "status": "ok"}
            if engine:
                d = sequential_decision(spec, seeds, rows)
                d = d.decision if d else None
            else:
                n, k = n + 1, k + bool(success[seed])
                d = spec.decision(k, n)
            if d is not None:
                h1 += d == H1
                break
    return h1 / sims


@pytest.mark.parametrize("workers", [1, 8, 32])
def test_sequential_decisions_do_not_depend_on_completion_order(workers):
    spec, planned, sims = Sprt(p0=0.1, p1=0.6, alpha=0.05, beta=0.1), 20, 3000
    exact = oc(spec, planned, spec.p0).accept_h1  # the registered test's own level at p0, in plan order
    got = simulate(spec, planned, spec.p0, workers, sims, np.random.default_rng(7 + workers), engine=True)
    se = (exact * (1 - exact) / sims) ** 0.5
    assert got <= exact + 4 * se, (workers, got, exact)
    assert abs(got - exact) <= 4 * se + 1e-9
    assert got <= spec.alpha / (1 - spec.beta) + 4 * se  # within Wald's bound


def test_the_naive_completion_order_is_biased_which_is_why_the_prefix_is_read():
    spec, planned, sims = Sprt(p0=0.1, p1=0.6, alpha=0.05, beta=0.1), 20, 3000
    exact = oc(spec, planned, spec.p0).accept_h1
    naive = simulate(spec, planned, spec.p0, 8, sims, np.random.default_rng(3), engine=False)
    assert naive > exact + 0.05  # the trap the issue measured (0.022 -> 0.23 on this plan): the simulation has teeth


def test_the_prefix_is_the_plan_order_not_the_arrival_order():
    rows = rows_by_seed([{"seed": s} for s in (3, 1, 0, 7)], range(10))
    assert [r["seed"] for r in plan_prefix(range(10), rows)] == [0, 1]
    assert plan_prefix([5, 3, 1], {3: {"seed": 3}, 5: {"seed": 5}}) == [{"seed": 5}, {"seed": 3}]


# ---------------------------------------------------------------- the paired success difference


def test_the_paired_success_interval_never_collapses_and_is_antisymmetric():
    from prereg.stats.reads import newcombe_paired_ci

    lo, hi = newcombe_paired_ci(0, 0, 20, 0)  # every pair disagrees one way: Wald gave [-100, -100] pp
    assert lo == -1.0 and -1.0 < hi < -0.7
    a, b = newcombe_paired_ci(5, 7, 2, 6), newcombe_paired_ci(5, 2, 7, 6)
    assert a[0] == pytest.approx(-b[1]) and a[1] == pytest.approx(-b[0])
    assert newcombe_paired_ci(3, 0, 0, 7)[0] < 0 < newcombe_paired_ci(3, 0, 0, 7)[1]
    assert newcombe_paired_ci(0, 0, 0, 0) is None


@pytest.mark.parametrize("pa,pb,rho", [(0.1, 0.1, 0.0), (0.3, 0.1, 0.5), (0.5, 0.4, 0.3), (0.9, 0.6, 0.2)])
def test_the_paired_success_interval_covers_at_its_level(pa, pb, rho):
    """Coverage of Newcombe's paired interval at n = 30 seeds, 2000 simulated tables (figure: docs/newcombe-coverage.png)."""
    from prereg.stats.reads import newcombe_paired_ci

    n, sims = 30, 2000
    both = pa * pb + rho * ((pa * (1 - pa) * pb * (1 - pb)) ** 0.5)
    cells = np.array([both, pa - both, pb - both, 1 - pa - pb + both])
    assert (cells >= 0).all()
    tables = np.random.default_rng(11).multinomial(n, cells, size=sims)
    uniq, counts = np.unique(tables, axis=0, return_counts=True)
    covered = sum(c for t, c in zip(uniq, counts) if (ci := newcombe_paired_ci(*map(int, t)))[0] <= pa - pb <= ci[1])
    coverage = covered / sims
    assert coverage >= 0.93, coverage  # nominal 0.95; 4 Monte Carlo errors below it is 0.93


def test_the_report_shows_the_paired_success_difference(paired_doc, run_dir):
    b = run_dir("b", [make_row(s, success=s < 8, progress_final_cm=1.0) for s in range(10)], status={"state": "done"},
                launched=(paired_doc, "b"))
    a = run_dir("a", [make_row(s, success=s < 2) for s in range(10)], status={"state": "done"},
                launched=(paired_doc, "a"))
    rep = build_report(paired_doc, {"a": a, "b": b}, append=False, now=NOW)
    ps = rep.arms["b"].comparators[0].paired.success
    assert (ps.shared, ps.both, ps.only_arm, ps.only_comparator, ps.neither) == (10, 2, 6, 0, 2)
    assert ps.delta == pytest.approx(0.6) and 0 < ps.ci[0] < 0.6 < ps.ci[1] <= 1
    assert "success difference +60.0 pp on 10 seeds" in rep.summary_text()


def test_with_uncorrelated_margins_the_paired_interval_is_newcombes_independent_one():
    from prereg.stats.power import newcombe_interval  # checked there against Newcombe's published example
    from prereg.stats.reads import newcombe_paired_ci

    for both, only_a, only_b, neither in [(2, 4, 1, 2), (3, 6, 1, 2), (1, 1, 1, 1)]:  # phi = 0: a*d == b*c
        n = both + only_a + only_b + neither
        lo, hi = newcombe_interval(both + only_a, n, both + only_b, n)
        assert newcombe_paired_ci(both, only_a, only_b, neither) == pytest.approx((float(lo), float(hi)), abs=1e-9)
