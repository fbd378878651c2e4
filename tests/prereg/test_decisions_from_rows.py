"""Decisions are functions of the rows (issue 32, point 1): a comparison's decision and a recorded
sequential decision are recomputed from rows.jsonl by the code the driver ran; status.json's record is
shown beside it and a difference is a provenance problem; a decision on an arm that cannot bear one
(INVALID, partial, live) is undetermined with every reason, as rules are."""

from __future__ import annotations

import json

from prereg.outputs.report import build_report, read_registration
from prereg.stats.comparison import BETTER
from prereg.stats.reads import UNDETERMINED
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run
from tests.prereg.conftest import make_row, scripted_doc

NOW = "2026-12-01T15:00:00Z"
A_WINS = [s < 4 for s in range(12)]  # clumsy wins seeds 0-3, steady every seed: B better at seed 11
B_WINS = [True] * 12


def decided(tmp_path, rows=None, **kw):
    doc = compare_doc(tmp_path)
    rows = comparison_rows(A_WINS, B_WINS) if rows is None else rows
    return doc, make_comparison_run(doc, tmp_path / "runs" / "cmp", rows, **kw)


def rewrite_rows(run, change):
    rows = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]
    rows = [change(r) for r in rows]
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_decision_on_a_valid_run_stands_and_says_the_record_agrees(tmp_path):
    doc, run = decided(tmp_path)
    rep = build_report(doc, {"steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert c.outcome == BETTER and c.verdict.verdict == "final" and not c.record_problems
    assert "the driver's record: status.json records the same decision" in c.lines()
    res = json.loads((run / "results.json").read_text())
    assert res["valid"] is True and res["comparison"]["outcome"] == BETTER


def test_an_error_row_makes_an_arm_invalid_and_the_decision_undetermined_everywhere(tmp_path):
    doc, run = decided(tmp_path)
    rewrite_rows(run, lambda r: {**r, "status": "error", "error": "boom"} if (r["arm"], r["seed"]) == ("clumsy", 5) else r)
    rep = build_report(doc, {"steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert not rep.arms["clumsy"].reads.valid
    assert c.outcome == UNDETERMINED and c.verdict.decision is not None  # the rows still decide; it cannot stand
    assert "clumsy: INVALID" in c.verdict.why and "error rows" in c.verdict.why
    assert c.decision_text().startswith("undetermined (clumsy: INVALID")
    res = json.loads((run / "results.json").read_text())
    assert res["valid"] is False and res["comparison"]["outcome"] == UNDETERMINED
    assert res["comparison"]["verdict"]["rows_decide"]["outcome"] == BETTER
    md = (run / "results.md").read_text()
    assert "- Decision: undetermined (clumsy: INVALID" in md and "- Decision: final" not in md
    assert "comparison: **undetermined" in _discord_head(res)


def _discord_head(res: dict) -> str:
    from console.notify.wording import report_head

    head, _, _ = report_head(res)
    return head


def test_a_reset_strike_on_a_steady_row_makes_the_decision_undetermined(tmp_path):
    doc, run = decided(tmp_path)
    rewrite_rows(run, lambda r: {**r, "reset_strikes": 2} if (r["arm"], r["seed"]) == ("steady", 3) else r)
    _, reports, judgement = read_registration(doc, {"steady": run})
    (cv,) = judgement.comparisons
    assert cv.verdict == UNDETERMINED and "steady: INVALID" in cv.why and "reset strike" in cv.why


def test_rows_swapped_between_the_arms_are_decided_from_the_rows_and_the_record_is_a_provenance_problem(tmp_path):
    doc, run = decided(tmp_path)

    def swap(r):  # every seed's outcome moves to the other arm; status.json keeps "steady better"
        other = "steady" if r["arm"] == "clumsy" else "clumsy"
        return {**r, "arm": other}
    rewrite_rows(run, swap)
    rep = build_report(doc, {"steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    a, b = rep.arms["clumsy"].reads, rep.arms["steady"].reads
    assert (a.successes, b.successes) == (12, 4)
    assert c.decision["outcome"] == "B worse"  # what the rows decide, by the driver's code
    assert c.record["outcome"] == BETTER and c.record_problems  # what the driver recorded, shown beside it
    assert "outcome 'B better' (the rows: 'B worse')" in c.record_problems[0]
    for r in (a, b):  # a provenance problem of both arms: neither can bear the decision
        assert not r.valid and any(ch.name == "record" and not ch.ok for ch in r.checks)
    assert c.outcome == UNDETERMINED and "(recorded)" not in "\n".join(c.lines())
    text = rep.summary_text()
    assert "the driver's record: status.json's record of the comparison's decision is not what the rows decide" in text


def test_a_record_of_a_decision_the_rows_do_not_reach_is_a_provenance_problem(tmp_path):
    doc, run = decided(tmp_path, rows=comparison_rows(A_WINS[:6], B_WINS[:6]), state="stopped")
    status = json.loads((run / "status.json").read_text())
    status["comparison"] = {"outcome": BETTER, "at": 19, "max_seeds": 60, "text": "steady better ... at 19/60"}
    (run / "status.json").write_text(json.dumps(status))
    _, reports, judgement = read_registration(doc, {"steady": run})
    c = reports["steady"].comparison
    assert c.decision is None and "but the rows decide none" in c.record_problems[0]
    assert judgement.comparisons[0].verdict == UNDETERMINED


def test_a_comparison_run_that_ended_before_deciding_is_undetermined_not_decided(tmp_path):
    doc, run = decided(tmp_path, rows=comparison_rows(A_WINS[:6], B_WINS[:6]), state="stopped")
    _, _, judgement = read_registration(doc, {"steady": run})
    (cv,) = judgement.comparisons
    assert cv.verdict == UNDETERMINED and cv.decision is None
    assert "the run ended at 6/60 (stopped) before the comparison decided" in cv.why


def test_a_comparison_read_beside_another_run_of_one_of_its_arms_is_labelled_and_undetermined(tmp_path, run_dir):
    doc, run = decided(tmp_path)
    batch = run_dir("clumsy-batch", [make_row(s, success=s < 30) for s in range(60)],
                    status={"state": "done"}, launched=(doc, "clumsy"))
    rep = build_report(doc, {"clumsy": batch, "steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert c.outcome == UNDETERMINED
    assert f"clumsy: read from run {batch.name}, not from the comparison run {run.name}" in c.verdict.why
    assert "this run's rows decide: steady better than clumsy at 12/60" in c.decision_text()


def test_the_stop_detail_is_never_cut_in_a_verdict(tmp_path):
    doc, run = decided(tmp_path)
    _, _, judgement = read_registration(doc, {"steady": run})
    (v,) = judgement.verdicts  # steady.successes > clumsy.successes: cut short by the registered stop
    assert v.verdict == UNDETERMINED
    full = judgement.comparisons[0].decision.text
    assert len(full) > 200 and full in v.why  # the whole decision, recomputed, not status.json's 200-character line
    assert "…" not in v.why


def test_a_sequential_record_that_the_rows_do_not_support_is_a_provenance_problem(tmp_path, run_dir):
    from prereg.document.seal import freeze

    doc = tmp_path / "seq.md"
    doc.write_text(_sequential_doc(compare_doc(tmp_path).read_text()))
    freeze(doc, now="2026-01-01T00:00:00Z")
    rows = [make_row(s, success=True) for s in range(8)]
    from prereg.document.read import load
    from prereg.stats.sequential import check_rows

    spec = load(doc).sections[0].gates.sequential
    recorded = check_rows(spec, rows, list(range(60)))
    assert recorded is not None and recorded["decision"] == "H1"
    status = {"state": "stopped", "sequential": recorded,
              "stop": {"by": "decided", "detail": "(sequential) " + recorded["text"]}}
    good = run_dir("good", rows, status=status, launched=(doc, "steady"))
    bad_rows = [make_row(s, success=s % 2 == 0) for s in range(8)]  # the rows changed after the run
    bad = run_dir("bad", bad_rows, status=status, launched=(doc, "steady"))
    _, ok, judgement = read_registration(doc, {"steady": good})
    assert ok["steady"].reads.valid and _seq(judgement, "steady").verdict == "final"
    _, changed, judgement = read_registration(doc, {"steady": bad})
    r = changed["steady"].reads
    assert not r.valid and any(c.name == "record" and "sequential test" in c.text for c in r.checks if not c.ok)
    assert _seq(judgement, "steady").verdict == UNDETERMINED


def _seq(judgement, arm):
    return next(s for s in judgement.sequential if s.arm == arm)


def _sequential_doc(src: str) -> str:
    """compare.md without its comparison, with a sequential test on the success rate."""
    head, _, rest = src.partition("comparison:\n")
    rest = rest[rest.index("---"):]
    head = head.replace("gates:\n  gpu_hours: 0.05\n",
                        "gates:\n  gpu_hours: 0.05\n  sequential: {p0: 0.3, p1: 0.9, alpha: 0.05, beta: 0.1}\n")
    assert "sequential" in head
    return head + rest.split("\n<!-- fontaine:sealed")[0].rstrip("\n") + "\n"


def test_disjoint_seeds_make_shared_seeds_at_least_one_not_hold(tmp_path, run_dir):
    doc = scripted_doc(tmp_path, amendments=[(
        {"arms": [{"name": "b", "policy": "scripted"}], "protocol": {"seeds": "6-11", "episode_seconds": 20},
         "reads": {"comparator": {"arm": "a", "for": ["b"]}},
         "decision_rules": [{"if": "b.shared_seeds >= 1", "then": "the arms were run on shared seeds"}]},
        "2026-01-01T00:01:00Z")])
    a = run_dir("a", [make_row(s) for s in range(6)], status={"state": "done"}, launched=(doc, "a"))
    b = run_dir("b", [make_row(s) for s in range(6, 12)], status={"state": "done"}, launched=(doc, "b"))
    _, reports, judgement = read_registration(doc, {"a": a, "b": b})
    assert reports["a"].reads.valid and reports["b"].reads.valid
    (v,) = judgement.verdicts
    assert v.verdict == "does not hold" and "b.shared_seeds = 0 >= 1 (false)" in v.detail
