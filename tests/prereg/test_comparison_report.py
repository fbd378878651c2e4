"""`fontaine-prereg report` on a comparison run (issue 24): the one directory read as both of its arms
(rows split by their arm), each arm's fixed-n reads labelled as read after an anytime-valid stop when
the comparison stopped the run, B paired with A, and the decision with the episodes it saved."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prereg.document.comparison_spec import PROGRESS_METRIC, ComparisonSpec
from prereg.outputs.report import build_report, read_registration
from prereg.stats.comparison import BETTER, UNDECIDED, decide
from prereg.stats.comparison import path as comparison_path
from prereg.stats.comparison_engines import betting_cs, betting_cs_path
from tests.comparison_run import compare_doc, comparison_rows, comparison_spec, make_comparison_run, row

NOW = "2026-12-01T15:00:00Z"
# clumsy wins seeds 0-3 only, steady every seed: the 8th discordant seed (seed 11) decides "B better"
A_WINS = [s < 4 for s in range(12)]
B_WINS = [True] * 12


def decided_run(tmp_path, **kw):
    doc = compare_doc(tmp_path)
    rows = comparison_rows(A_WINS, B_WINS) + [row("clumsy", 12, False)]  # in flight at the decision: it counts as run
    return doc, make_comparison_run(doc, tmp_path / "runs" / "cmp", rows, **kw)


@pytest.mark.parametrize("key", ["clumsy", "steady", "clumsy-vs-steady"])
def test_a_comparison_run_is_read_as_both_of_its_arms(tmp_path, key):
    doc, run = decided_run(tmp_path)
    rep = build_report(doc, {key: run}, append=False, now=NOW)
    assert sorted(rep.arms) == ["clumsy", "steady"]
    a, b = rep.arms["clumsy"].reads, rep.arms["steady"].reads
    assert (a.successes, a.n, b.successes, b.n) == (4, 13, 12, 12)  # each arm its own rows, not the other's
    assert a.n_planned == b.n_planned == 60 and a.valid and b.valid, (a.checks, b.checks)
    (c,) = rep.comparisons
    assert c.outcome == BETTER and c.decided_at == 12 and c.recorded
    # against the batch validate sized for power 0.8 at 0.5 -> 0.9 (25 seeds, exact McNemar), not max seeds x 2
    assert (c.sized_seeds, c.episodes_run, c.batch, c.saved) == (25, 25, 50, 25)
    assert rep.arms["steady"].after_stop.startswith("read after an anytime-valid stop")
    (pair,) = rep.arms["steady"].comparators
    assert pair.comparator.name == "clumsy" and not pair.registered and pair.paired.shared_seeds == 12
    assert pair.paired.better == 8  # the 8 discordant seeds
    text = rep.summary_text()
    assert "comparison clumsy vs steady" in text and "steady better than clumsy at 12/60 seeds" in text
    assert "25 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): 25 saved" in text
    assert text.count("label     read after an anytime-valid stop") == 2


def test_one_results_file_chart_and_json_for_the_run(tmp_path):
    doc, run = decided_run(tmp_path)
    build_report(doc, {"clumsy": run}, append=False, now=NOW)
    md = (run / "results.md").read_text()
    assert md.startswith("# Results: clumsy and steady (one comparison run)")
    assert "## Comparison: clumsy vs steady" in md and "### clumsy" in md and "### steady" in md
    assert "25 saved" in md and md.count("**Read after an anytime-valid stop") == 3  # the run's, and each arm's
    assert (run / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = json.loads((run / "results.json").read_text())
    assert res["arm"] == "clumsy-vs-steady" and set(res["arms"]) == {"clumsy", "steady"}
    assert res["arms"]["steady"]["primary"]["successes"] == 12 and res["arms"]["steady"]["label"]
    assert res["comparison"]["outcome"] == "B better" and res["comparison"]["episodes_saved"] == 25
    reg = (tmp_path / "runs" / "demo-compare.results.md").read_text()
    assert "## Comparison: clumsy vs steady" in reg


def test_the_results_section_appended_to_a_copy_states_the_comparison(tmp_path):
    doc, run = decided_run(tmp_path)
    rep = build_report(doc, {"clumsy-vs-steady": run}, now=NOW)
    assert rep.appended
    text = doc.read_text()
    assert "### Comparison: clumsy vs steady" in text and "25 saved" in text


def test_a_run_that_reached_max_seeds_undecided_is_not_labelled(tmp_path):
    doc = compare_doc(tmp_path)
    body = doc.read_text().replace("max_seeds: 60", "max_seeds: 4")
    doc.write_text(body[:body.index("<!-- fontaine:sealed")])
    from prereg.document.seal import freeze

    freeze(doc)
    run = make_comparison_run(doc, tmp_path / "runs" / "short", comparison_rows([True] * 4, [True] * 4))
    rep = build_report(doc, {"steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert c.outcome == UNDECIDED and not c.stopped_by_decision and c.saved == 0
    assert rep.arms["clumsy"].reads.n_planned == 4 and rep.arms["clumsy"].reads.valid  # the capped plan
    assert not rep.arms["steady"].after_stop
    # max seeds 4 is under the sized batch (25): the batch is the 4 seeds the plan allows
    said = "no decision before max seeds: 8 episodes run against the batch's 8 (max seeds, 4 x 2 arms, under the 25 seeds"
    assert said in rep.summary_text()


def test_a_run_of_another_comparison_is_invalid(tmp_path):
    doc = compare_doc(tmp_path)
    spec = comparison_spec(doc)
    other = {**ComparisonSpec.from_record({**spec.__dict__, "alpha": 0.1}).__dict__}
    other.pop("line")
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows(A_WINS, B_WINS),
                              manifest_over={"comparison": {**other, "assumed_rates": list(spec.assumed_rates)}})
    _, reports, _ = read_registration(doc, {"clumsy": run})
    for arm in ("clumsy", "steady"):
        r = reports[arm].reads
        assert not r.valid and any("recorded comparison alpha 0.1 is not the registered 0.05" in c.text
                                   for c in r.checks if not c.ok)


def test_a_decision_the_driver_did_not_record_is_read_from_the_rows_and_said(tmp_path):
    doc, run = decided_run(tmp_path, record=False)
    _, reports, _ = read_registration(doc, {"steady": run})
    c = reports["steady"].comparison
    assert not c.recorded and c.outcome == BETTER and c.decision_text().startswith("steady better")
    assert "the driver's record: status.json records no decision (the driver recorded none)" in c.lines()


# ---------------------------------------------------------------- the path the console draws (pure)


def test_the_band_over_seeds_is_the_confidence_sequence_of_each_prefix():
    rng = np.random.default_rng(7)
    d = rng.normal(0.8, 2.0, 40)
    lo, hi = betting_cs_path(d, 20.0, 0.05)
    for k in (1, 5, 17, 40):
        assert (lo[k - 1], hi[k - 1]) == betting_cs(d[:k], 20.0, 0.05)
    assert np.all(np.diff(lo) >= 0) and np.all(np.diff(hi) <= 0)  # a running intersection only narrows


def test_the_path_and_the_decision_read_the_same_rows(tmp_path):
    doc = compare_doc(tmp_path)
    spec = comparison_spec(doc)
    rows = comparison_rows(A_WINS, B_WINS)
    seeds = list(range(60))
    from prereg.rundir.rows import rows_by_seed

    a = rows_by_seed([r for r in rows if r["arm"] == "clumsy"], seeds)
    b = rows_by_seed([r for r in rows if r["arm"] == "steady"], seeds)
    p = comparison_path(spec, a, b, seeds)
    d = decide(spec, a, b, seeds)
    assert p.at == tuple(range(1, 13)) and p.max_seeds == 60
    assert p.e_better[d.at - 1] >= p.threshold > p.e_better[d.at - 2]  # the e-process crosses 2/alpha where it decided
    assert (round(p.lo[-1], 4), round(p.hi[-1], 4)) == tuple(d.values["cs"])
    assert "e-value" in p.evidence_text() and "at 12/60 seeds" in p.evidence_text()


def test_a_progress_path_stops_before_a_delta_that_breaks_the_bound():
    spec = ComparisonSpec("a", "b", PROGRESS_METRIC, "savi", minimum_effect=1.0, delta_bound_cm=5.0)
    a = {s: row("a", s, False, progress=0.0) for s in range(6)}
    b = {s: row("b", s, False, progress=3.0 if s != 4 else 9.0) for s in range(6)}
    p = comparison_path(spec, a, b, range(6))
    assert p.void_at == 5 and p.at == (1, 2, 3, 4) and p.mean[-1] == 3.0
    assert "mean b - a +3.000 cm" in p.evidence_text()
