"""How a post reads on a phone (issue 38's Discord words): whole counts, no module paths or lab
jargon, no projection once a run has ended, a decision said once, tripwires one joint a line, the
checks a flag launch runs, a comparison run's videos named by arm and seed."""

from __future__ import annotations

import json
import shutil

from console.notify.messages import due_posts
from console.notify.snapshot import read_snapshot
from console.notify.wording import count_text, report_head
from tests.console.fake_discord import HandMadeRun


def owed(run_dir, posted=()):
    return due_posts(read_snapshot(run_dir), set(posted))


def reported_run(tmp_path, *, state="done"):
    """A real report (results.md, results.json) of a run of the curtailment example: 6 successes and an error row."""
    from prereg.outputs.report import build_report
    from tests.prereg.conftest import EXAMPLES, launched_manifest, make_row

    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    run = tmp_path / "runs" / "oracle"
    run.mkdir(parents=True)
    rows = [make_row(s, success=True) for s in range(6)] + [make_row(6, status="error", success=True)]
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "status.json").write_text(json.dumps({"state": state, "done": 7, "total": 7, "elapsed_s": 700.0,
                                                 "projected_wall_s": 720.0}))
    (run / "manifest.json").write_text(json.dumps(launched_manifest(doc, "oracle")))
    build_report(doc, {"oracle": run}, append=False, now="2026-12-01T09:00:00Z")
    return run


def test_counts_are_whole_numbers_in_every_post(tmp_path):
    run = reported_run(tmp_path)
    (post,) = [p for p in owed(run, ["launch", "done"]) if p.key == "results"]
    assert "knock-aways 0 · engaged 0 · " in post.description.splitlines()[0]
    # results.json written by another hand, its counts as 23.0: still whole in the post
    head, _, _ = report_head({"primary": {"successes": 4, "n": 25}, "knock_aways": 0.0, "engaged": 23.0, "valid": True})
    assert "knock-aways 0 · engaged 23 · VALID" in head and ".0" not in head
    assert [count_text(v) for v in (3, 3.0, 2.5, True, "3", None, float("nan"))] == ["3", "3", "?", "?", "?", "?", "?"]
