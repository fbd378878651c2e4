"""Which posts a run directory is owed, and what they say: pure, no network."""

from __future__ import annotations

import json
import os
import time

from console.discord_messages import (
    DESCRIPTION_MAX, Post, due_posts, gate_spec_from, read_snapshot, seed_span, shorten_markdown,
)
from fake_discord import HandMadeRun
from prereg.rundir import StopReason


def owed(run, posted=(), *, now=None, **kw):
    return due_posts(read_snapshot(run.dir, now=now), set(posted), **kw)


def keys(posts):
    return [p.key for p in posts]


def age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_live_run_is_owed_its_launch_then_the_latest_update_only(tmp_path):
    run = HandMadeRun(tmp_path, total=100)
    assert keys(owed(run)) == ["launch"]
    run.episodes(9)
    assert keys(owed(run, ["launch"])) == []
    run.episodes(34)
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["update:30"]
    assert "caught up: the updates at 20 episodes were not posted" in posts[0].description
    assert keys(owed(run, ["launch", "update:30"])) == []
    assert keys(owed(run, ["launch", "update:30"], every_episodes=5)) == []  # 30 is still the latest
    run.episodes(36)
    assert keys(owed(run, ["launch", "update:30"], every_episodes=5)) == ["update:35"]


def test_the_last_milestone_is_left_to_the_end_posts(tmp_path):
    run = HandMadeRun(tmp_path, total=20).episodes(20, state="stopping")
    assert keys(owed(run, ["launch", "update:10"])) == []


def test_a_finished_run_gets_its_end_posts_and_no_updates(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(45, state="done")
    assert keys(owed(run, ["launch", "update:10"])) == ["done"]
    done = owed(run, ["launch"])[0]
    assert "frozen reads not written yet" in done.description and "**45/100**" in done.description
    run.results()
    assert keys(owed(run, ["launch", "done"])) == ["results"]
    assert keys(owed(run, ["launch"])) == ["results"]  # reads already there: no separate done post


def test_runs_that_ended_long_ago_and_were_never_posted_stay_quiet(tmp_path):
    run = HandMadeRun(tmp_path, total=10).episodes(10, state="done").results()
    assert keys(owed(run)) == ["results"]  # ended just now: the owner wants it
    age(run.dir / "status.json", 7 * 3600)
    assert owed(run) == []  # last week's runs do not flood the channel
    assert keys(owed(run, ["launch"])) == ["results"]  # but a run we followed is caught up


def test_a_stop_by_a_tripwire_posts_the_tripwire_then_the_stop(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(12)
    run.status("stopped", stop=StopReason("gate", "projected wall 3.10 h > limit 2.5 h after 12/100 episodes", gate="pace"))
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["tripwire:pace", "stopped:12"]
    assert "projected wall 3.10 h" in posts[0].description
    assert "reason: gate pace: projected wall 3.10 h" in posts[1].description
    run.status("stopped", stop=StopReason("user", "stop key in the console", who="alice"))
    assert keys(owed(run, ["launch"])) == ["stopped:12"]


def test_a_gate_that_trips_live_is_posted_once(tmp_path):
    run = HandMadeRun(tmp_path, total=100, gates={"gpu_hours_gate": 0.05}).episodes(20)  # 0.08 GPU-h spent
    posts = owed(run, ["launch", "update:20"])
    assert keys(posts) == ["tripwire:gpu_hours"]
    assert "GPU-hours 0.080 of 0.05" in posts[0].description
    assert keys(owed(run, ["launch", "update:20", "tripwire:gpu_hours"])) == []


def test_a_stale_heartbeat_is_a_stall_posted_once_per_episode_count(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(12)
    assert keys(owed(run, ["launch", "update:10"])) == []
    age(run.dir / "heartbeat", 600)  # median episode wall 30 s: the stall limit is 120 s
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["stall:12"] and "heartbeat 600 s old" in posts[0].description
    assert keys(owed(run, ["launch", "update:10", "stall:12"])) == []


def test_a_failed_run_says_why(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(3)
    run.status("failed", reason="worker 1 crashed: MuJoCo model failed to load")
    posts = owed(run, ["launch"])
    assert keys(posts) == ["failed:3"]
    assert "MuJoCo model failed to load" in posts[0].description


def test_updates_show_validity_problems(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    with open(run.dir / "rows.jsonl", "a") as f:
        f.write(json.dumps({"seed": 10, "status": "error", "error": "boom", "reset_strikes": 2}) + "\n")
    text = owed(run, ["launch"])[0].description
    assert "reset strikes **2** (must be 0)" in text and "error rows **1**" in text


def test_long_results_are_shortened_to_fit_and_every_post_stays_within_discords_limits(tmp_path):
    long = "# Results\n\n" + "\n".join(f"| seed {i} | {'x' * 80} |" for i in range(200))
    run = HandMadeRun(tmp_path, total=100, gates={}).episodes(100, state="done").results(long)
    posts = owed(run, ["launch"])
    assert keys(posts) == ["results"]
    text = posts[0].description
    assert len(text) <= DESCRIPTION_MAX and text.endswith("(shortened: the full reads are in results.md)")
    assert "**Results**" in text and "seed 0 · " in text and "|" not in text
    for p in posts:
        assert_fits_discord(p)


def test_markdown_tables_and_headings_read_as_lines():
    md = "## Reads\n\n| read | value |\n|:---|---:|\n| successes | 9/100 |\n"
    assert shorten_markdown(md, 500) == "**Reads**\n\nread · value\nsuccesses · 9/100"


def test_names_from_files_cannot_inject_mentions_or_markdown(tmp_path):
    run = HandMadeRun(tmp_path, run_id="run_*bold*", total=10)
    p = owed(run)[0]
    assert "`run_*bold*`" in p.content  # in a code span
    assert_fits_discord(p)


def test_gates_read_from_the_manifest_accept_the_driver_flag_names():
    spec = gate_spec_from({"gpu_hours_gate": 1.5, "pace_limit_hours": 2.5, "pace_after_episodes": 10, "other": 1})
    assert (spec.gpu_hours, spec.pace_limit_hours, spec.pace_after_episodes) == (1.5, 2.5, 10)
    assert gate_spec_from(None).gpu_hours is None


def test_seed_spans():
    assert seed_span(list(range(100))) == "0–99"
    assert seed_span([42, 47, 55]) == "42, 47, 55"
    assert seed_span(list(range(0, 40, 2))).endswith(", …")


def assert_fits_discord(p: Post) -> None:
    assert len(p.content) <= 2000 and len(p.title) <= 256 and len(p.description) <= 4096
    assert len(p.title) + len(p.description) + len(p.footer) <= 6000


def test_updates_say_when_the_decision_was_settled(tmp_path):
    from console.discord_messages import progress_lines, read_snapshot
    from console.fixtures import make_run_dir
    from prereg import rundir as rd

    d = make_run_dir(tmp_path, "settled", state="running", done=70, total=100)
    status = rd.read_json(d / rd.STATUS)
    status["settled"] = {"at": 63, "total": 100, "all": True,
                         "rules": [{"condition": "successes >= 20", "settled": True, "verdict": "does not hold"}]}
    rd.write_json_atomic(d / rd.STATUS, status)
    assert any("settled at 63/100" in line for line in progress_lines(read_snapshot(d)))


def test_a_registered_curtailment_is_read_and_described():
    from console.discord_messages import describe_gates, gate_spec_from

    spec = gate_spec_from({"gpu_hours": 0.05, "decided": "stop"})
    assert spec.decided == "stop" and "stops once its decision rules are settled" in describe_gates(spec)
