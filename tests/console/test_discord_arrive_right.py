"""Posts that are right when they arrive (issue 31, part 3), and a comparison run's posts naming its arms
(part 2). Each test is a case that was posted wrong: "arm ? · policy ?" on every launch, a false stall
while a model loaded, "9/8 episodes" from a copied line, a recovered webhook flooding launch,
update:10, update:20 and done within 0.2 s, and a webhook_gone line that said 1 post was owed where 4 were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil

from console.notify.ledger import read_ledger
from console.notify.messages import due_posts
from console.notify.snapshot import read_snapshot
from prereg.rundir.files import write_json_atomic
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run
from tests.console.fake_discord import FAKE_WEBHOOK_URL, HandMadeRun
from tests.console.test_discord_notify import OTHER_URL, keys_posted, wait_until


def owed(run_dir, posted=()):
    return due_posts(read_snapshot(run_dir), set(posted))


def age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_the_launch_post_waits_until_the_run_runs_and_names_what_runs(tmp_path):
    run_dir = tmp_path / "flow-a-20261130-080000"
    run_dir.mkdir()
    write_json_atomic(run_dir / "status.json", {"schema": 1, "state": "starting", "done": 0, "total": 25})
    assert owed(run_dir) == []  # no manifest yet: nothing is known of the run
    run = HandMadeRun(tmp_path, state="starting")  # the manifest, the policy loading
    assert owed(run.dir) == []
    run.status("running")  # policy loaded (policy_resolved written), tripwires passed
    (launch,) = owed(run.dir)
    assert launch.key == "launch" and "?" not in launch.content and "?" not in launch.description.split("\n")[1]
    assert launch.content.startswith("A 0/25 · launched · molmoact2 flow")
    assert "arm **A** · policy **molmoact2**" in launch.description


def test_a_comparison_runs_launch_names_both_arms_and_their_policies(tmp_path):
    run = make_comparison_run(compare_doc(tmp_path), tmp_path / "runs" / "cmp",
                              comparison_rows([True] * 3, [True] * 3), state="running")
    (launch, update) = owed(run)[:2] if len(owed(run)) > 1 else (owed(run)[0], None)
    assert launch.content.startswith("clumsy vs steady 6/120 · launched")
    assert "arm **clumsy** · policy **scripted**" in launch.description
    assert "arm **steady** · policy **scripted**" in launch.description
    assert "60 seeds (0–59) per arm, interleaved by seed" in launch.description
    assert "comparison: clumsy vs steady on success" in launch.description
    assert update is None  # 6 episodes: no update yet


def test_a_copied_row_line_is_one_episode_in_every_post(tmp_path):
    """A line written twice posted '9/8 episodes' and counted its success twice."""
    run = HandMadeRun(tmp_path, total=8).episodes(8, state="done")
    with open(run.dir / "rows.jsonl") as f:
        first = f.readline()
    with open(run.dir / "rows.jsonl", "a") as f:
        f.write(first)  # seed 0 (a success) again
    (done,) = owed(run.dir, ["launch"])
    assert done.content.startswith("A 8/8 · done: 2/8 successes")  # seeds 0 and 5, once each
    assert "**8/8** episodes" in done.description
    assert "1 row(s) repeat a seed: the last row of each seed counts" in done.description


def test_start_up_has_its_own_limit_not_the_stall_limit(tmp_path):
    """'heartbeat 62 s old (stall beyond 60 s) at 0/4' was posted while the model loaded."""
    run = HandMadeRun(tmp_path, total=4, state="starting")
    (run.dir / "heartbeat").touch()
    age(run.dir / "heartbeat", 62)
    assert owed(run.dir) == []  # starting: judged against the start-up limit (900 s), not 60 s
    age(run.dir / "heartbeat", 1000)
    (stall,) = owed(run.dir)
    assert stall.key == "stall:0" and "while starting (start-up stall beyond 900 s)" in stall.description
    run.status("running")  # the same stale heartbeat once episodes run is a stall by the stall limit
    age(run.dir / "heartbeat", 62)
    assert [p.key for p in owed(run.dir, ["launch"])] == ["stall:0"]


def test_a_run_whose_driver_died_is_said_once_not_stalled_forever(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(gone.pid).create_time()
    gone.wait()
    run = HandMadeRun(tmp_path, total=25).episodes(12)
    write_json_atomic(run.dir / "pid.json", {"pid": gone.pid, "pgid": gone.pid, "create_time": created})
    assert owed(run.dir, ["launch", "update:10"]) == []  # just gone: a kill from the console records first
    age(run.dir / "heartbeat", 600)
    (died,) = owed(run.dir, ["launch", "update:10"])
    assert died.key == "died:12" and died.content.startswith("A 12/25 · died at 12/25")
    assert "fontaine-eval --resume runs/flow-a-20261130-080000" in died.description
    assert owed(run.dir, ["launch", "update:10", "died:12"]) == []  # once; no stall alert either
    age(run.dir / "heartbeat", 7 * 3600)
    assert owed(run.dir) == []  # died hours ago and never posted about: a notifier started now owes it nothing


def test_posts_owed_to_a_run_that_ended_fold_into_its_end_post_marked_late(fake, make_notifier, tmp_path):
    """A 404 webhook, a run that goes on and ends, then a good URL: launch, update:10, update:20 and done
    all arrived within 0.2 s, none marked late, and the ledger said 1 post was owed."""
    run = HandMadeRun(tmp_path, total=25)
    fake.fail_next(404, times=50)
    n = make_notifier()
    assert n.poll_run(run.dir) == ["launch"]
    assert wait_until(lambda: n.gone)
    assert n.poll_run(run.episodes(10).dir) == ["update:10"]
    assert n.poll_run(run.episodes(20).dir) == ["update:20"]
    assert n.poll_run(run.episodes(25, state="done").dir) == ["done"]
    gone = [e["owed"] for e in read_ledger(run.dir) if e.get("event") == "webhook_gone"]
    assert gone[0] == ["launch"] and set(gone[-1]) == {"launch", "update:10", "update:20", "done"}  # what is owed now
    assert len(gone) == 4  # said again each time what is owed grew

    fake._failures.clear()
    n.set_url(OTHER_URL)
    assert n.wait_idle(10)
    assert keys_posted(fake) == ["done"]  # one post, not four in a burst
    (done,) = fake.messages
    assert done.payload["content"].startswith("A 25/25 · late · done: 5/25 successes")
    description = done.payload["embeds"][0]["description"]
    assert "late: this post stands for 3 earlier posts not delivered when due " \
           "(launch, update:10, update:20)" in description
    posted = [e for e in read_ledger(run.dir) if e.get("key") == "done"]
    assert posted and set(posted[0]["covers"]) == {"launch", "update:10", "update:20"}
    assert n.poll_run(run.dir) == []  # nothing owed any more: the ledger records them as covered
    assert FAKE_WEBHOOK_URL not in json.dumps(read_ledger(run.dir))


def test_a_seed_out_of_the_arms_reach_is_said_apart_in_the_post(tmp_path):
    """Issue 45: a row saying its start is out of the SO-101's reach leaves k/n, and the post says so."""
    run = HandMadeRun(tmp_path, total=8).episodes(8, state="done")
    with open(run.dir / "rows.jsonl") as f:
        first = json.loads(f.readline())  # seed 0, a success
    with open(run.dir / "rows.jsonl", "a") as f:
        f.write(json.dumps({**first, "reachable": False}) + "\n")
    (done,) = owed(run.dir, ["launch"])
    assert "1 seed(s) out of the SO-101's reach (reachable: false): counted apart" in done.description
    assert done.content.startswith("A 7/8 · done: 1/7 successes")  # seed 5 only: seed 0 is out of k/n
