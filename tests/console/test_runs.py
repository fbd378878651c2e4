"""Run directories, liveness, launch, stop and escalation: the console's run control, without the UI."""

import json
import os
import subprocess
import sys

import psutil
import pytest

from console import kill, runs
from console.watcher import Watcher
from prereg import rundir as rd
from prereg.rundir.files import new_run_id
from tests.console.conftest import FAKE_DRIVER, make_row, make_run_dir, wait_file


def test_run_id_names_prereg_arm_and_utc_time():
    assert new_run_id("demo-tiny-engine", "scripted", now=0) == "demo-tiny-engine-scripted-19700101-000000"


def test_read_run_lists_missing_and_unreadable_files(tmp_path):
    d = tmp_path / "r1"
    d.mkdir()
    (d / "manifest.json").write_text("[1, 2]")
    info = runs.read_run(d)
    assert info.missing == ["status.json", "pid.json", "heartbeat", "rows.jsonl"]
    assert info.problems == ["manifest.json: not a JSON object"]
    assert info.state == "unreadable" and not info.live


def test_state_is_corrected_by_the_process_table_and_stop(tmp_path):
    me = psutil.Process()
    mine = {"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()}
    d = make_run_dir(tmp_path, "live", state="running", done=3, pid=mine)
    assert runs.read_run(d).state == "running" and runs.read_run(d).live
    runs.request_stop(d, who="test", detail="because", now=0)
    assert json.loads((d / "STOP").read_text()) == {"by": "user", "who": "test", "detail": "because", "gate": None,
                                                    "at": "1970-01-01T00:00:00Z"}
    assert runs.read_run(d).state == "stopping"
    reused = dict(mine, create_time=mine["create_time"] - 100)
    d2 = make_run_dir(tmp_path, "reused", state="running", done=3, pid=reused)
    assert runs.read_run(d2).liveness == runs.GONE and runs.read_run(d2).state == "died"
    d3 = make_run_dir(tmp_path, "finished", state="done", pid=reused)
    assert runs.read_run(d3).state == "done"


def test_launch_detached_own_session_log_and_reaped(tmp_path):
    d = tmp_path / "runs" / "x"
    p = runs.launch_detached([sys.executable, str(FAKE_DRIVER), str(d), "--rows", "2", "--total", "2",
                              "--row-every", "0.01"], d)
    assert os.getpgid(p.pid) == p.pid and os.getsid(p.pid) == p.pid
    assert p.wait(timeout=30) == 0
    assert (d / "driver.log").exists()
    assert json.loads((d / "status.json").read_text())["state"] == "done"


def test_kill_run_sigterms_the_group_of_a_live_run(tmp_path):
    d = tmp_path / "x"
    p = subprocess.Popen([sys.executable, str(FAKE_DRIVER), str(d)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_file(d / "pid.json")
        pid = json.loads((d / "pid.json").read_text())
        assert runs.liveness(pid) == runs.ALIVE
        outcome = kill.kill_run(d, pid, grace=10)
        assert "SIGTERM sent to process group" in outcome
        p.wait(timeout=10)
        assert runs.liveness(pid) == runs.GONE
        assert kill.kill_run(d, pid) == "the run's process is already gone; nothing was signalled"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_watcher_follows_a_replaced_rows_file(tmp_path):
    d = make_run_dir(tmp_path, "a-scripted-20260101-000000", total=10, done=5, state="running")
    updates = []
    w = Watcher(tmp_path, updates.append)
    w.poll_once(now=1.0)
    assert updates[-1].detail.view.rows == 5 and updates[-1].runs[0].successes == 1
    tmp = d / "rows.tmp"
    tmp.write_text("".join(json.dumps(make_row(s)) + "\n" for s in (0, 9)))
    os.replace(tmp, d / "rows.jsonl")
    w.poll_once(now=1.5)
    detail = updates[-1].detail
    assert detail.view.rows == 2 and detail.view.successes == 2 and detail.view.restarts == 1
    assert "replaced" in detail.restart_reason
    n = len(updates)
    w.poll_once(now=1.6)  # nothing changed: no update is sent
    assert len(updates) == n
    w.stop()


def test_watcher_discovers_new_and_removed_runs(tmp_path):
    updates = []
    w = Watcher(tmp_path, updates.append)
    w.poll_once(now=1.0)
    make_run_dir(tmp_path, "b-scripted-20260101-000000")
    w.poll_once(now=10.0)
    assert [r.run_id for r in updates[-1].runs] == ["b-scripted-20260101-000000"]
    import shutil
    shutil.rmtree(tmp_path / "b-scripted-20260101-000000")
    w.poll_once(now=20.0)
    assert updates[-1].runs == ()
    w.stop()


def test_launch_refuses_a_run_directory_another_driver_writes(tmp_path):

    d = tmp_path / "runs" / "busy"
    d.mkdir(parents=True)
    lock = rd.RunLock(d).acquire()
    try:
        with pytest.raises(runs.RunBusy, match=f"being written by process {os.getpid()}"):
            runs.launch_detached([sys.executable, "-c", "pass"], d)
    finally:
        lock.release()
    runs.launch_detached([sys.executable, "-c", "pass"], d).wait(timeout=30)


def test_a_launched_run_does_not_get_the_discord_webhook(tmp_path, monkeypatch):
    url = "https://discord.com/api/webhooks/123456789012345678/" + "Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7Bh4Gt9Cr1Jm6Ez0"
    monkeypatch.setenv("FONTAINE_DISCORD_WEBHOOK_URL", url)
    monkeypatch.setenv("FONTAINE_DISCORD_WEBHOOK_FILE", "/somewhere/webhook")
    monkeypatch.setenv("HF_TOKEN", "needed-for-checkpoints")
    run_dir = tmp_path / "r"
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    p = runs.launch_detached([sys.executable, "-c", code], run_dir)
    assert p.wait(timeout=30) == 0
    env = json.loads((run_dir / "driver.log").read_text())
    assert not [k for k in env if "WEBHOOK" in k] and url not in json.dumps(env)
    assert env["HF_TOKEN"] == "needed-for-checkpoints"  # a run may need it to fetch a checkpoint
