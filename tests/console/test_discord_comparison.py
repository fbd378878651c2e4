"""Discord posts of a comparison run (issue 24): each update carries one line of the comparison's
evidence, the end posts and the results post say the decision and the episodes it saved against the batch."""

from __future__ import annotations

import json

from console.notify.messages import due_posts
from console.notify.snapshot import read_snapshot
from console.notify.wording import DESCRIPTION_MAX
from prereg.outputs.report import build_report
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run, row

A_WINS = [s < 4 for s in range(12)]  # the 8th seed only steady wins (seed 11) decides "B better" at 12/60
B_WINS = [True] * 12


def live(run, state="running"):
    status = json.loads((run / "status.json").read_text())
    status.update(state=state, stop=None, reason=None)
    (run / "status.json").write_text(json.dumps(status))
    (run / "heartbeat").touch()
    return run


def posts(run, posted=()):
    return due_posts(read_snapshot(run), set(posted))


def test_an_update_before_the_decision_carries_the_evidence_so_far(tmp_path):
    doc = compare_doc(tmp_path)
    run = live(make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows([True] * 6, [True] * 5 + [False])))
    (update,) = [p for p in posts(run, ["launch"]) if p.key.startswith("update")]
    assert update.key == "update:10"
    lines = update.description.splitlines()
    # every post names the arms and counts them apart, the preview (content) first
    assert update.content.startswith("clumsy vs steady 12/120 · clumsy 6/6 · steady 5/6 successes")
    assert "**clumsy**: successes **6**/6 · knock-aways 0 · engaged 6" in lines
    assert "**steady**: successes **5**/6 · knock-aways 0 · engaged 5" in lines
    (line,) = [x for x in lines if x.startswith("comparison:")]
    assert line.startswith("comparison: no decision yet: at 6/60 seeds: steady 5/6 vs clumsy 6/6; e-value")
    assert "(decides at 40)" in line and "confidence sequence for the rate difference" in line
    assert "saved" not in update.description  # savings are an end-of-run figure


def test_an_update_after_the_decision_carries_the_drivers_text(tmp_path):
    doc = compare_doc(tmp_path)
    run = live(make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows(A_WINS, B_WINS)), "stopping")
    (update,) = [p for p in posts(run, ["launch"]) if p.key.startswith("update")]
    assert "comparison: steady better than clumsy at 12/60 seeds" in update.description


def test_the_stopped_post_and_the_results_post_say_the_decision_and_the_episodes_saved(tmp_path):
    doc = compare_doc(tmp_path)
    rows = comparison_rows(A_WINS, B_WINS) + [row("clumsy", 12, False)]
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", rows)
    (stopped,) = posts(run, ["launch"])
    assert stopped.key == "stopped:25"
    assert "clumsy vs steady 25/120 · stopped at 25/120" in stopped.content
    assert "reason: decided: (comparison) steady better than clumsy at 12/60 seeds" in stopped.description
    cost = "cost: 25 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): 25 saved"
    assert cost in stopped.description
    build_report(doc, {"clumsy-vs-steady": run}, append=False, now="2026-12-01T15:00:00Z")
    results = next(p for p in posts(run, ["launch", "stopped:25"]) if p.key == "results")
    # not "B better"
    assert "results: steady better than clumsy (the registered comparison, decided at 12/60 seeds)" in results.content
    head = results.description.split("\n\n")[0].splitlines()
    assert head[0] == "**stopped · VALID · steady better than clumsy (the registered comparison, decided at 12/60 seeds)**"
    assert head[3] == cost and results.description.count("saved") == 1  # said once
    assert "clumsy: 4/13 successes (of 60 planned), 0 knock-aways, 4 engaged · VALID" in head
    assert "steady: 12/12 successes (of 60 planned), 0 knock-aways, 12 engaged · VALID" in head
    assert any("read after an anytime-valid stop" in x for x in head)
    assert any("steady.successes" in x and "(descriptive: the plan decides by its registered comparison)" in x for x in head)
    assert len(results.description) <= DESCRIPTION_MAX
