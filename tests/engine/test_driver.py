"""End-to-end tests of the driver with real detached runs of the scripted oracle and the
state-copy baseline on the real scene. They wait on conditions, never on fixed sleeps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from prereg import rundir as rd
from tests.helpers import REPO, eval_argv, launch_detached, read_rows, read_status, run_eval, stable, wait_until

pytestmark = pytest.mark.slow

FINAL = ("stopped", "done", "failed")
SCRIPTED = ("--policy", "scripted", "--episode-seconds", "12", "--video-draw", "none")


def _final(run_dir):
    return wait_until(lambda: read_status(run_dir).get("state") in FINAL and read_status(run_dir),
                      timeout=240, what=f"a final state in {run_dir}")


def test_detached_run_survives_its_parent_and_writes_the_contract(tmp_path):
    run_dir = tmp_path / "run"
    # A parent that launches the run detached and exits at once, as the console does on quit.
    argv = eval_argv(*SCRIPTED[:-2], '--seeds', '0,1', '--workers', '2', '--video-draw', '0', '--run-dir', str(run_dir))
    parent = (
        "import subprocess, sys\n"
        f"log = open({str(run_dir / 'driver.log')!r}, 'ab')\n"
        f"p = subprocess.Popen({argv!r},"
        " start_new_session=True, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True)\n"
        "print(p.pid)\n"
    )
    run_dir.mkdir()
    out = subprocess.run([sys.executable, "-c", parent], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status = _final(run_dir)
    assert status["state"] == "done", (run_dir / "driver.log").read_text()
    # status.json is the contract's Status written whole: every key, in its order, and it reads back clean
    assert list(status) == ["schema", "state", "run_id", "arm", "done", "total", "ok", "errors", "successes", "elapsed_s",
                            "projected_wall_s", "eta_s", "pace", "settled", "sequential", "gpu_hours", "gpu_hours_source",
                            "gpu_busy_hours", "gpu_busy_source", "gpus", "mean_batch", "predict_rounds", "worker_crashes",
                            "lost_seeds", "in_flight_seeds", "cancelled_seeds", "executor", "reason", "stop", "gates", "pid", "updated_at"]
    typed = rd.Status.from_dict(status)
    assert typed.problems == () and typed.to_dict() == status and typed.done == 2
    rows = read_rows(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1]
    assert all(r["status"] == "ok" for r in rows)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["seeds"] == [0, 1] and manifest["workers"] == 2 and manifest["versions"]["mujoco"]
    pid = json.loads((run_dir / "pid.json").read_text())
    assert pid["pid"] == pid["pgid"] and pid["create_time"] > 0  # its own session and process group
    summary = json.loads((run_dir / "rows.json").read_text())
    assert summary["summary"]["episodes"] == 2 and len(summary["rows"]) == 2
    assert (run_dir / "heartbeat").exists()
    videos = sorted(p.name for p in (run_dir / "videos").iterdir())
    assert len(videos) == 2 and all(v.endswith(".mp4") for v in videos)  # draw 0: first episode of each worker
    assert all((run_dir / "videos" / v).stat().st_size > 1000 for v in videos)


def test_stop_file_stops_at_an_episode_boundary(tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *SCRIPTED, "--seeds", "0-5", "--workers", "1")
    wait_until(lambda: len(read_rows(run_dir)) >= 1, timeout=180, what="a first row")
    (run_dir / "STOP").write_text(json.dumps({"by": "test", "reason": "enough", "at": "now"}))
    status = _final(run_dir)
    assert proc.wait(timeout=60) == 3
    rows = read_rows(run_dir)
    assert status["state"] == "stopped" and "enough" in status["reason"]
    assert 1 <= len(rows) < 6 and status["done"] == len(rows)
    assert all(r["status"] == "ok" and r["ticks"] > 0 for r in rows)


def test_kill_9_then_resume_gives_the_rows_of_an_uninterrupted_run(tmp_path):
    seeds = "0-3"
    ref = tmp_path / "ref"
    out = run_eval(*SCRIPTED, "--seeds", seeds, "--workers", "2", "--run-dir", str(ref))
    assert out.returncode == 0, out.stderr + out.stdout

    run_dir = tmp_path / "killed"
    proc = launch_detached(run_dir, *SCRIPTED, "--seeds", seeds, "--workers", "2")
    wait_until(lambda: len(read_rows(run_dir)) >= 1, timeout=180, what="a first row")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with open(run_dir / "rows.jsonl", "a") as f:  # a crash mid-write leaves a torn line
        f.write('{"schema": 1, "seed": 3, "succ')
    done_before = len(read_rows_ok(run_dir))
    assert done_before < 4

    out = run_eval("--resume", str(run_dir))
    assert out.returncode == 0, out.stderr + out.stdout
    assert "set aside" in out.stdout
    rows = {r["seed"]: r for r in read_rows(run_dir)}
    ref_rows = {r["seed"]: r for r in read_rows(ref)}
    assert sorted(rows) == [0, 1, 2, 3]
    for seed in rows:
        assert stable(rows[seed]) == stable(ref_rows[seed]), f"seed {seed} differs after resume"
    assert "torn" in (run_dir / "rows.set-aside.jsonl").read_text()
    assert read_status(run_dir)["state"] == "done"


def read_rows_ok(run_dir):
    rows = []
    for line in (run_dir / "rows.jsonl").read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return rows


def test_pace_tripwire_stops_a_slow_run(tmp_path):
    run_dir = tmp_path / "run"
    out = run_eval("--policy", "hold", "--inject-latency-ms", "200", "--episode-seconds", "2", "--video-draw", "none",
                   "--seeds", "0-5", "--workers", "1", "--pace-limit-hours", "0.0005", "--pace-after-episodes", "2",
                   "--run-dir", str(run_dir))
    assert out.returncode == 3, out.stderr  # stopped (by a gate): its own exit code
    status = read_status(run_dir)
    assert status["state"] == "stopped"
    assert status["stop"]["by"] == "gate" and status["stop"]["gate"] == "pace"
    assert status["reason"].startswith("gate pace: projected wall")
    assert json.loads((run_dir / "STOP").read_text())["by"] == "gate"
    assert 2 <= len(read_rows(run_dir)) < 6


def test_batched_predicts_fill_to_the_worker_count(tmp_path):
    run_dir = tmp_path / "run"
    # a generous shortest wait: the batch fills by the mechanism, not by the machine being quiet enough
    out = run_eval("--policy", "hold", "--inject-latency-ms", "30", "--episode-seconds", "3", "--video-draw", "none",
                   "--seeds", "0-5", "--workers", "3", "--batch-wait-ms", "1000", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    summary = json.loads((run_dir / "rows.json").read_text())["summary"]
    assert summary["mean_batch"] >= 2.5, summary
    rows = read_rows(run_dir)
    assert all(r["predicts"] == 3 for r in rows)  # 90 ticks / 30-tick chunks
    assert all(1 <= r["mean_batch"] <= 3 for r in rows)


def test_a_crashed_worker_leaves_an_error_row_and_the_run_goes_on(tmp_path):
    run_dir = tmp_path / "run"
    out = run_eval("--policy", "hold", "--episode-seconds", "2", "--video-draw", "none", "--seeds", "0-3",
                   "--workers", "2", "--run-dir", str(run_dir), faults={"FONTAINE_FAULT_CRASH_SEEDS": "1"})
    assert out.returncode == 0, out.stderr
    rows = {r["seed"]: r for r in read_rows(run_dir)}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[1]["status"] == "error" and "died" in rows[1]["error"]
    assert rows[1]["success"] is None  # no made-up values
    assert all(rows[s]["status"] == "ok" for s in (0, 2, 3))
    status = read_status(run_dir)
    assert status["errors"] == 1 and status["worker_crashes"] == 1
    assert "1 error rows" in out.stdout


def test_second_sigterm_aborts_in_flight_episodes_without_rows(tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, "--policy", "hold", "--inject-latency-ms", "300", "--episode-seconds", "10",
                           "--video-draw", "none", "--seeds", "0-7", "--workers", "2")
    wait_until(lambda: read_status(run_dir).get("state") == "running" and read_status(run_dir).get("predict_rounds", 0) >= 1,
               timeout=120, what="a running driver")
    proc.send_signal(signal.SIGTERM)
    wait_until(lambda: read_status(run_dir).get("state") == "stopping", timeout=30, what="stopping")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    status = read_status(run_dir)
    assert status["state"] == "stopped" and "aborted" in status["reason"]
    rows = read_rows(run_dir)
    assert status["lost_seeds"] and not ({r["seed"] for r in rows} & set(status["lost_seeds"]))
    assert all(r["status"] == "ok" for r in rows)


def test_fault_injection_lives_in_the_tests_only():
    """The crash and slow-load faults are installed by tests/engine/faults.py; no production
    module reads a fault variable (they once sat in the worker loop and the policy factory)."""
    import re

    hooks = re.compile(r"\bFAULT_|FONTAINE_INJECT|os\._exit\(3\)")
    found = [f"{p.relative_to(REPO)}" for pkg in ("engine", "prereg", "console")
             for p in (REPO / pkg).rglob("*.py") if hooks.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_a_stop_file_first_seen_empty_takes_its_words_once_they_are_written(tmp_path):
    """`echo '{...}' > STOP` creates the file before writing it: a driver that read it in between
    stops (a `touch` stops too) and takes the words as the reason when they arrive."""
    from types import SimpleNamespace

    from engine.run.driver import _Driver
    from prereg import rundir as rd

    said, states = [], []
    d = SimpleNamespace(stop=None, run_dir=tmp_path, log=said.append, _write_status=states.append)
    (tmp_path / "STOP").touch()
    _Driver._check_stop_file(d)
    assert d.stop.detail == rd.EMPTY_STOP_DETAIL and states == [rd.STOPPING]
    _Driver._check_stop_file(d)  # still empty: nothing new to say
    assert len(said) == 1
    (tmp_path / "STOP").write_text(json.dumps({"by": "test", "detail": "enough", "who": "ana"}))
    _Driver._check_stop_file(d)
    assert d.stop.detail == "enough" and d.stop.who == "ana" and said[-1] == f"stop reason: {d.stop.text()}"
    (tmp_path / "STOP").write_text(json.dumps({"by": "test", "detail": "changed my mind"}))
    _Driver._check_stop_file(d)  # a stop with words keeps them
    assert d.stop.detail == "enough"
