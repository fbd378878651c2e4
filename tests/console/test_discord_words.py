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
    """A real report (results.md, results.json) of a run of the curtailment example: 6 successes and an
    error row, its predicts served one a policy call (a served policy's rows say so: mean_batch)."""
    from prereg.outputs.report import build_report
    from tests.prereg.conftest import EXAMPLES, launched_manifest, make_row

    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    run = tmp_path / "runs" / "oracle"
    run.mkdir(parents=True)
    rows = [make_row(s, success=True, mean_batch=1.0) for s in range(6)] + [make_row(6, status="error", success=True)]
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "status.json").write_text(json.dumps({"state": state, "done": 7, "total": 7, "elapsed_s": 700.0,
                                                 "projected_wall_s": 720.0}))
    (run / "manifest.json").write_text(json.dumps(launched_manifest(doc, "oracle")))
    build_report(doc, {"oracle": run}, append=False, now="2026-12-01T09:00:00Z")
    return run


def test_counts_are_whole_numbers_in_every_post(tmp_path):
    run = reported_run(tmp_path)
    (post,) = [p for p in owed(run, ["launch", "done"]) if p.key == "results"]
    assert ", 0 knock-aways, 0 engaged · " in post.description.splitlines()[1]  # the story's arm line
    # results.json written by another hand, its counts as 23.0: still whole in the post
    head, _, _ = report_head({"primary": {"successes": 4, "n": 25}, "knock_aways": 0.0, "engaged": 23.0, "valid": True})
    assert "knock-aways 0 · engaged 23 · VALID" in head and ".0" not in head
    assert [count_text(v) for v in (3, 3.0, 2.5, True, "3", None, float("nan"))] == ["3", "3", "?", "?", "?", "?", "?"]


def test_a_post_of_a_run_that_has_ended_says_what_it_took_and_projects_nothing(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(20)
    (update,) = [p for p in owed(run.dir, ["launch"]) if p.key == "update:20"]
    assert "pace 15 s/episode · projected wall 25 min (limit 2.5 h)" in update.description  # live: projected
    run.episodes(100, state="done")
    (done,) = owed(run.dir, ["launch", "update:90"])
    assert done.key == "done" and "wall 25 min · pace 15 s/episode" in done.description
    assert "projected" not in done.description
    run.status("stopped", reason="stop key in the console (alice)")
    (stopped,) = owed(run.dir, ["launch", "done"])
    assert "projected" not in stopped.description and "wall 25 min" in stopped.description


def test_a_run_its_decision_stopped_says_the_decision_once(tmp_path):
    from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run, row

    doc = compare_doc(tmp_path)
    rows = comparison_rows([s < 4 for s in range(12)], [True] * 12) + [row("clumsy", 12, False)]
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", rows)
    (stopped,) = owed(run, ["launch"])
    d = stopped.description
    decision = "steady better than clumsy at 12/60 seeds: steady 12/12 vs clumsy 4/12"
    assert d.count(decision) == 1 and "reason: decided: (comparison) " + decision in d
    assert "confidence sequence for the rate difference [-0.060, +0.752]" in d  # whole, not cut
    assert "cost: 25 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): " \
        "25 saved" in d
    # a run stopped for another reason keeps the comparison's line
    status = json.loads((run / "status.json").read_text())
    status.update(stop=None, reason="stop key in the console (alice)")
    (run / "status.json").write_text(json.dumps(status))
    (other,) = owed(run, ["launch"])
    assert other.description.count(decision) == 1 and "\ncomparison: " + decision in other.description


def test_a_comparison_runs_published_videos_are_named_by_arm_and_seed():
    from console.notify.wording import published_lines
    from prereg.outputs.publish import PUBLISHED_KEY, video_key, video_words

    url = "https://huggingface.co/datasets/lab/evals/blob/abc/cmp/videos/rollout_seed002.mp4"
    videos = {video_key("steady", 2, comparison=True): url, video_key("clumsy", 11, comparison=True): url}
    (line,) = published_lines({PUBLISHED_KEY: {"folder_url": "https://huggingface.co/datasets/lab/evals/tree/abc/cmp",
                                               "commit": "abc", "videos": videos}})
    assert f"videos [steady, seed 2]({url}) [clumsy, seed 11]({url})" in line and "steady:2" not in line
    assert video_words(video_key("oracle", 6, comparison=False)) == "seed 6"  # a one-arm run's: its seed
    assert video_words("a:b:7") == "a:b, seed 7"  # the seed is after the last colon


def test_a_launch_post_says_what_is_checked_with_or_without_registered_gates(tmp_path):
    flags = HandMadeRun(tmp_path / "flags", total=10, gates={})
    (launch,) = owed(flags.dir)
    lines = launch.description.splitlines()
    assert "gates: none" not in lines  # the stall check runs all the same
    assert "gates: none registered (no GPU-hour or pace limit)" in lines
    assert ("checked: a stall is posted when the heartbeat is older than 4 × the median episode (at least 60 s),"
            " or 15 min while starting") in lines
    registered = HandMadeRun(tmp_path / "registered", total=10)
    (launch,) = owed(registered.dir)
    assert "gates: GPU-hours ≤ 1.5 · projected wall ≤ 2.5 h (judged after 10 episodes)" in launch.description
    assert "checked: a stall is posted" in launch.description


def test_the_results_post_quotes_results_md_without_module_paths_or_lab_jargon(tmp_path):
    run = reported_run(tmp_path)
    md = (run / "results.md").read_text()
    (post,) = [p for p in owed(run, ["launch", "done"]) if p.key == "results"]
    for text in (md, post.description):
        assert "prereg." not in text and "lab notes" not in text and "mean batch" not in text
    assert "**Other reads**: no knock-away; tipped 0; spend wall 11.7 min, 70 predicts (1.00 per policy call)" in md
    assert "**Outcomes** (one per episode, the first that holds): error 1 · success 6" in md
    primary = next(line for line in md.splitlines() if line.startswith("- **Primary**"))
    assert primary[2:60] in post.description  # the arm's reads, quoted after the story's head


def test_a_masked_link_in_a_runs_text_is_shown_as_text():
    """issue 43: `[x](https://evil.example)` in an arm or a reason reached posts clickable; plain brackets stay."""
    from console.notify.wording import esc, shorten_markdown

    assert esc("[click](https://evil.example) seeds [0, 1]") == r"\[click\](https://evil.example) seeds [0, 1]"
    assert shorten_markdown("- reason: [x](https://evil.example)", 500) == r"- reason: \[x\](https://evil.example)"
