"""The same run directory read by the console panel, the Discord post, the driver's summary and the
report gives the same counts: one classifier (prereg.rundir.rows) decides them all."""

from __future__ import annotations

import json

from console.notify.messages import progress_lines, results_post
from console.notify.snapshot import read_snapshot, tally
from console.watcher import RunWatch
from engine.record.summary import summarize
from prereg.outputs.report import build_report
from prereg.rundir.rows import read_rows
from tests.prereg.conftest import make_row

NOW = "2026-11-30T09:00:00Z"


def tricky_rows() -> list[dict]:
    """Rows where the old consumers disagreed: error rows that claim success, non-ok statuses, flags
    that contradict the distances, reset strikes on an error row, null distances."""
    return [
        make_row(0, success=True, progress_cm=8.0, progress_final_cm=7.5),
        make_row(1, success=True, status="error", error="worker died", reset_strikes=1),
        make_row(2, status="timeout", progress_final_cm=-4.0, knock_away=True),
        make_row(3, status=None, success=True),
        make_row(4, progress_final_cm=-2.0, knock_away=False, progress_cm=0.0),  # the distance decides
        make_row(5, progress_final_cm=None, knock_away=True, progress_cm=None, engaged=True),  # flags stand in
    ]


def test_console_discord_driver_and_report_show_the_same_counts(demo, run_dir):
    """A copied line (seed 0 twice) counts once everywhere: it showed 'succ 2/7' on 6 seeds and posted '7/6'."""
    rows = tricky_rows() + [make_row(0, success=True, progress_cm=8.0, progress_final_cm=7.5)]
    d = run_dir("same", rows, status={"state": "done", "done": 6, "total": 6}, launched=(demo, "scripted"),
                tail=json.dumps({**make_row(9), "seed": True}) + "\n")  # a wrong-typed row: a bad line
    watch = RunWatch(d)
    watch.refresh()
    view = watch.agg.snapshot()
    snap = read_snapshot(d)
    t = tally(snap.all_counts())
    summary = summarize(read_rows(d / "rows.jsonl").rows, planned_seeds=list(range(6)))
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads

    expected = dict(rows=6, successes=1, errors=3, knock_aways=2, engaged=2, reset_strikes=1)
    assert (view.rows, view.successes, view.errors, view.knock_aways, view.engaged, view.reset_strikes) == \
        tuple(expected.values())
    assert (snap.done, t.successes, t.errors, t.knock_aways, t.engaged, t.reset_strikes) == \
        tuple(expected.values())
    assert (summary["episodes"], summary["successes"], summary["errors"], summary["knock_aways"],
            summary["engaged"], summary["reset_strikes"]) == tuple(expected.values())
    assert (r.n, r.successes, r.error_rows, r.knock_aways, r.engaged, r.reset_strikes) == tuple(expected.values())
    assert view.quiet == summary["quiet"] == r.quiet == 0
    assert view.corrupt == 1 and len(r.bad_lines) == 1 and "'seed' is true" in r.bad_lines[0]
    # and what each shows people
    assert "successes **1**" in progress_lines(snap)[0] and "knock-aways 2" in progress_lines(snap)[0]
    assert "error rows **3**" in "\n".join(progress_lines(snap))
    assert "successes **1 / 6**" in (d / "results.md").read_text()
    assert view.duplicate_seeds == snap.fold.duplicates == 1 and len(r.duplicate_seeds) == 1
    assert results_post(read_snapshot(d)).content.split(" · ")[1] == "results: 1/6 successes"
