"""The driver under faults, for real: a full disk, a deleted run directory, two drivers on one
directory, a driver killed with -9, every worker dead, a video that cannot be written.

Each ends in a state within seconds, never a hang; rows already written stay intact; no
worker outlives its driver.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from prereg import rundir as rd
from prereg.core.errors import EXIT_DONE, EXIT_FAILED, EXIT_STOPPED
from prereg.rundir.lock import lock_holder
from tests.helpers import (
    REPO,
    eval_argv,
    launch_detached,
    read_rows,
    read_status,
    run_eval,
    shadowing_working_folder,
    wait_until,
)

SCRIPTED = ("--policy", "scripted", "--episode-seconds", "4")


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _workers_started(proc: subprocess.Popen, n: int) -> list[psutil.Process]:
    def found():
        kids = [p for p in _children(proc.pid) if "resource_tracker" not in " ".join(_cmdline(p))]
        return kids if len(kids) >= n else None

    return wait_until(found, timeout=120, what=f"{n} worker processes")


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _all_gone(procs: list[psutil.Process]) -> bool:
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def _rows_intact(run_dir: Path) -> list[dict]:
    """Every line of rows.jsonl is a whole JSON row ending in a newline (no torn line)."""
    data = (run_dir / rd.ROWS).read_bytes()
    assert not data or data.endswith(b"\n"), data[-200:]
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB tmpfs (CI runs as root); skipped, saying why, where mounting is not allowed."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): {out.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(path: Path) -> None:
    """Write until the disk says ENOSPC."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass


@pytest.mark.slow
def test_a_full_disk_fails_the_run_in_seconds_with_rows_intact(small_disk, tmp_path):
    run_dir = small_disk / "run"
    # what the driver prints goes off the full disk, so every byte of it is kept and read below
    log, err_log = tmp_path / "driver.log", tmp_path / "stderr.log"
    with open(log, "wb") as out, open(err_log, "wb") as err:
        proc = subprocess.Popen(eval_argv(*SCRIPTED, "--seeds", "0-40", "--workers", "2", "--video-draw", "none",
                                          "--run-dir", str(run_dir)),
                                cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    try:
        workers = _workers_started(proc, 2)
        wait_until(lambda: len(read_rows(run_dir)) >= 2, timeout=120, what="two rows")
        _fill(small_disk / "filler")  # the disk fills up under the running driver
        code = proc.wait(timeout=30)  # the run fails at the next write; it does not go on through its 41 seeds
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == EXIT_FAILED, code
    status = read_status(run_dir)
    assert status["state"] == "failed" and status["reason"].startswith("disk full"), status
    assert status["stop"]["by"] == "error"
    text, err = log.read_text(), err_log.read_text()
    # one line says it (the issue found a traceback printed before it), never a traceback
    assert "Traceback" not in text + err, (text[-3000:], err[-3000:])
    failed = [ln for ln in err.splitlines() if ln.startswith("fontaine-eval: ")]
    assert len(failed) == 1 and failed[0].startswith("fontaine-eval: failed: disk full"), (failed, err[-3000:])
    rows = _rows_intact(run_dir)
    assert len(rows) >= 2 and len({r["seed"] for r in rows}) == len(rows)
    wait_until(lambda: _all_gone(workers), timeout=5, what="the workers to be gone")


@pytest.mark.slow
def test_a_run_directory_deleted_mid_run_fails_in_seconds_and_leaves_no_process(tmp_path):
    run_dir = tmp_path / "run"
    log = tmp_path / "driver.log"
    err_log = tmp_path / "stderr.log"
    with open(log, "wb") as out, open(err_log, "wb") as err:
        proc = subprocess.Popen(eval_argv(*SCRIPTED, "--seeds", "0-40", "--workers", "2", "--video-draw", "none",
                                          "--run-dir", str(run_dir)),
                                cwd=REPO, stdout=out, stderr=err, start_new_session=True)
    try:
        workers = _workers_started(proc, 2)
        wait_until(lambda: len(read_rows(run_dir)) >= 1, timeout=120, what="a first row")
        gone = tmp_path / "gone"
        run_dir.rename(gone)  # atomically away from the driver's paths, then deleted
        shutil.rmtree(gone, ignore_errors=True)
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == EXIT_FAILED
    text, err = log.read_text(), err_log.read_text()
    assert f"fontaine-eval: failed: run directory deleted: {run_dir}" in err, (text[-2000:], err)
    assert "Traceback" not in text + err  # the traceback went to a log file, never the terminal
    wait_until(lambda: _all_gone(workers), timeout=5, what="the workers to be gone")


@pytest.mark.slow
def test_two_drivers_on_one_directory_one_runs_the_other_exits_2(tmp_path):
    run_dir = tmp_path / "run"
    argv = eval_argv(*SCRIPTED, "--seeds", "0-3", "--workers", "2", "--video-draw", "none", "--run-dir", str(run_dir))
    procs = [subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], (codes, outs)
    loser = outs[[p.returncode for p in procs].index(2)][1]
    assert loser.count("\n") == 1 and ("is being written by process" in loser or "already holds a run" in loser), loser
    rows = _rows_intact(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1, 2, 3]


@pytest.mark.slow
def test_two_resumes_of_one_run_only_one_writes(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rd.write_stop(run_dir, rd.StopReason(rd.BY_USER, "stopped before it began"))
    out = run_eval(*SCRIPTED, "--seeds", "0-5", "--workers", "2", "--video-draw", "none", "--run-dir", str(run_dir))
    assert out.returncode == EXIT_STOPPED and read_rows(run_dir) == [], out.stderr
    argv = eval_argv("--resume", str(run_dir))
    procs = [subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert sorted(p.returncode for p in procs) == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)][1]
    assert "is being written by process" in loser, loser
    assert sorted(r["seed"] for r in _rows_intact(run_dir)) == [0, 1, 2, 3, 4, 5]


def test_a_stale_lock_never_blocks(tmp_path):
    """The lock is the kernel's: a holder that died (here: a child killed with -9) holds nothing."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    code = ("import sys, time; from pathlib import Path; from prereg import rundir as rd; "
            "rd.RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([os.sys.executable, "-c", code, str(run_dir)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(rd.RunLocked) as err:
        rd.RunLock(run_dir).acquire()
    assert f"process {holder.pid}" in str(err.value) and lock_holder(run_dir)["pid"] == holder.pid
    holder.kill()
    holder.wait()
    lock = rd.RunLock(run_dir).acquire()  # the file is still there, with the dead pid in it
    lock.release()
    assert lock_holder(run_dir) is None


@pytest.mark.slow
def test_workers_die_with_a_driver_killed_by_sigkill_and_write_nothing_after(tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, "--policy", "scripted", "--episode-seconds", "20", "--seeds", "0-7",
                           "--workers", "2", "--video-draw", "all")
    try:
        workers = _workers_started(proc, 2)
        wait_until(lambda: any(run_dir.joinpath(rd.VIDEOS).iterdir()), timeout=120, what="videos being written")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.time()
        wait_until(lambda: _all_gone(workers), timeout=2, interval=0.05, what="every worker gone within 2 s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    written_after = [str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                     if p.is_file() and p.stat().st_mtime > killed_at + 0.05 and p.name != "driver.log"]
    assert written_after == []
    assert [p.name for p in (run_dir / rd.VIDEOS).iterdir() if not p.name.startswith(".")] == []  # none finished


@pytest.mark.slow
def test_every_worker_dead_fails_the_run_with_a_non_zero_exit(tmp_path):
    run_dir = tmp_path / "run"
    out = run_eval("--policy", "scripted", "--episode-seconds", "2", "--seeds", "0-3", "--workers", "2",
                   "--video-draw", "none", "--run-dir", str(run_dir), env={"MUJOCO_GL": "bogus"})
    assert out.returncode == EXIT_FAILED, out.stderr
    status = read_status(run_dir)
    assert status["state"] == "failed" and status["reason"].startswith("every worker died"), status
    assert "no episode finished" in status["reason"] and "fontaine-eval: failed: every worker died" in out.stderr


def test_a_video_that_cannot_be_written_costs_the_video_never_the_row(tmp_path):
    run_dir = tmp_path / "run"
    out = run_eval("--policy", "scripted", "--episode-seconds", "1", "--seeds", "0", "--video-draw", "all",
                   "--run-dir", str(run_dir), faults={"FONTAINE_FAULT_VIDEO_ENOSPC": "1"})
    assert out.returncode == 0, out.stderr
    (row,) = read_rows(run_dir)
    assert row["status"] == "ok" and row["video"] is None
    assert row["note"] == "video not written: OSError: [Errno 28] No space left on device", row["note"]
    assert [p.name for p in (run_dir / rd.VIDEOS).iterdir()] == []  # no broken mp4, no leftover part


@pytest.mark.slow
def test_fontaine_eval_started_by_hand_gives_its_workers_no_webhook_and_no_secret(tmp_path):
    """A worker's environment is an allow-list (issue 33: HF_TOKEN and *_KEY stayed in it): what the
    kernel shows of each worker and of the fork server they are forked from holds no secret, and the one
    variable the run passes by name (--pass-env, issue 45) and no other."""
    hook = "https://discord.com/api/webhooks/123456789012345678/Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5"
    token = "hf_" + "Q" * 34
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *SCRIPTED, "--seeds", "0-3", "--workers", "2", "--video-draw", "none",
                           "--pass-env", "LAB_TRACE_DIR",  # issue 45: a lab's own variable, passed by name
                           env={"FONTAINE_DISCORD_WEBHOOK": hook, "NOTIFY": hook, "HF_TOKEN": token,
                                "WANDB_API_KEY": "wandb-secret-value", "FONTAINE_API_TOKEN": "also-secret",
                                "LAB_TRACE_DIR": "/lab/traces", "LAB_OTHER": "not named"})
    try:
        workers = _workers_started(proc, 2)
        envs = {}
        for w in workers:
            for p in (w, *([w.parent()] if w.parent() and w.parent().pid != proc.pid else [])):
                try:
                    envs[p.pid] = Path(f"/proc/{p.pid}/environ").read_bytes()
                except (OSError, psutil.Error):
                    pass
        assert envs, "no worker environment could be read"
        for raw in envs.values():
            env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
            assert not [k for k in env if b"WEBHOOK" in k.upper()] and b"NOTIFY" not in env
            assert hook.encode() not in raw and token.encode() not in raw and b"secret" not in raw
            assert not {b"HF_TOKEN", b"WANDB_API_KEY", b"FONTAINE_API_TOKEN"} & env.keys()
            assert env.get(b"MUJOCO_GL") and env.get(b"PATH")  # what a worker runs with stays
            assert env.get(b"LAB_TRACE_DIR") == b"/lab/traces" and b"LAB_OTHER" not in env  # named, and only it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_to_the_runs_process_group_stops_it_with_the_episodes_in_flight_finished(tmp_path, sig):
    """Issue 33: SIGTERM to the run's process group (the console's `K` first, a closing terminal) killed
    the fork server and with it every worker: `failed`, "worker died" error rows. SIGHUP exited 129 and
    left status.json `running`. Now only the driver acts on either: the episodes in flight finish, the
    run ends `stopped` (exit 3) with ok rows only, and the seeds not run are owed to --resume."""
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, "--policy", "scripted", "--episode-seconds", "10", "--seeds", "0-9",
                           "--workers", "2", "--video-draw", "none")
    try:
        _workers_started(proc, 2)
        in_flight = wait_until(lambda: read_status(run_dir).get("in_flight_seeds"), timeout=120,
                               what="episodes in flight")
        os.killpg(proc.pid, sig)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (run_dir / rd.LOG).read_text()
    status = read_status(run_dir)
    assert code == EXIT_STOPPED, (code, log[-3000:])
    assert status["state"] == "stopped" and status["stop"]["by"] == "signal", status
    assert status["stop"]["detail"] == f"{signal.Signals(sig).name} received"
    rows = _rows_intact(run_dir)
    assert rows and all(r["status"] == "ok" for r in rows), [r.get("error") for r in rows]  # no "worker died"
    assert len(rows) < 10 and "worker died" not in log
    assert set(in_flight) - {r["seed"] for r in rows} <= set(status.get("lost_seeds") or []), (in_flight, status)
    if sig == signal.SIGTERM:  # what was not run is owed to --resume, and it runs exactly that
        out = run_eval("--resume", str(run_dir))
        assert out.returncode == EXIT_DONE, out.stderr
        assert sorted(r["seed"] for r in _rows_intact(run_dir)) == list(range(10))


HOLD_SLOW = ("--policy", "hold", "--inject-latency-ms", "300", "--video-draw", "none", "--workers", "2")


def _sigterm_when_in_flight(proc: subprocess.Popen, run_dir: Path) -> tuple[list, float]:
    """SIGTERM to the run's group once both workers have an episode under way; (in flight, when)."""
    def under_way():
        status = read_status(run_dir)
        both = len(status.get("in_flight_seeds") or []) == 2 and status.get("predict_rounds", 0) >= 1
        return status["in_flight_seeds"] if both else None

    in_flight = wait_until(under_way, timeout=120, what="two episodes under way")
    os.killpg(proc.pid, signal.SIGTERM)
    return in_flight, time.monotonic()


@pytest.mark.slow
def test_sigterm_abandons_600_s_episodes_after_its_grace_and_ends_stopped_before_a_schedulers_sigkill(tmp_path):
    """Issue 43: with 600 s episodes in flight SIGTERM left the run `stopping` for up to ten minutes;
    a scheduler SIGKILLs after ~30 s, so it never read `stopped`. Now the episodes in flight get the
    default 20 s grace, then are abandoned: no rows, owed to --resume, `stopped` within 30 s."""
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *HOLD_SLOW, "--episode-seconds", "600", "--seeds", "0-3")
    try:
        workers = _workers_started(proc, 2)
        in_flight, signalled = _sigterm_when_in_flight(proc, run_dir)
        wait_until(lambda: read_status(run_dir).get("state") == "stopped", timeout=30, interval=0.05,
                   what="`stopped` within 30 s of SIGTERM")
        took = time.monotonic() - signalled
        assert proc.wait(timeout=30 - took) == EXIT_STOPPED
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert 20 <= took < 30, took  # the grace was given, and no more
    wait_until(lambda: _all_gone(workers), timeout=5, what="every worker gone")
    status = read_status(run_dir)
    assert status["stop"]["by"] == "signal" and status["lost_seeds"] == in_flight, status
    assert "SIGTERM" in status["reason"] and "2 episodes in flight abandoned, owed to --resume" in status["reason"]
    assert _rows_intact(run_dir) == []  # never an error row for an abandoned episode


@pytest.mark.slow
def test_episodes_abandoned_past_the_sigterm_grace_are_run_by_resume_exactly_once(tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *HOLD_SLOW, "--episode-seconds", "20", "--seeds", "0-2", "--term-grace-s", "1")
    try:
        in_flight, signalled = _sigterm_when_in_flight(proc, run_dir)
        assert proc.wait(timeout=30) == EXIT_STOPPED
        assert time.monotonic() - signalled < 10
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    status = read_status(run_dir)
    rows = _rows_intact(run_dir)
    assert status["state"] == "stopped" and all(r["status"] == "ok" for r in rows), (status, rows)
    assert set(in_flight) - {r["seed"] for r in rows} == set(status["lost_seeds"]) != set(), status
    assert "1 s grace ran out" in status["reason"]
    assert "--term-grace-s" in json.loads((run_dir / rd.MANIFEST).read_text())["argv"]  # recorded with the command
    out = run_eval("--resume", str(run_dir))
    assert out.returncode == EXIT_DONE, out.stderr
    assert sorted(r["seed"] for r in _rows_intact(run_dir)) == [0, 1, 2]


@pytest.mark.slow
def test_a_stop_file_keeps_its_boundary_stop_whatever_the_sigterm_grace(tmp_path):
    """The console's `s` (a STOP file) is no SIGTERM: the episodes in flight finish, even with no grace."""
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *HOLD_SLOW, "--episode-seconds", "4", "--seeds", "0-5", "--term-grace-s", "0")
    try:
        in_flight = wait_until(lambda: read_status(run_dir).get("predict_rounds", 0) >= 1
                               and read_status(run_dir).get("in_flight_seeds"), timeout=120, what="episodes in flight")
        (run_dir / rd.STOP).write_text("enough for today\n")
        assert proc.wait(timeout=60) == EXIT_STOPPED
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    status = read_status(run_dir)
    assert status["state"] == "stopped" and not status["lost_seeds"] and "abandoned" not in status["reason"]
    assert set(in_flight) <= {r["seed"] for r in _rows_intact(run_dir) if r["status"] == "ok"}


@pytest.mark.slow
def test_a_run_from_a_folder_holding_an_engine_py_never_imports_it(tmp_path):
    """Issue 43: run from a folder that holds an `engine.py`, the fork server (`python -c`, which puts
    the working folder first on sys.path) imported it: tracebacks, "every worker died"."""
    folder, argv = shadowing_working_folder(tmp_path)
    run_dir = tmp_path / "run"
    out = subprocess.run([*argv, "--policy", "scripted", "--episode-seconds", "2", "--seeds", "0-2", "--workers", "2",
                          "--video-draw", "none", "--run-dir", str(run_dir)], cwd=folder, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == EXIT_DONE, (out.stdout[-2000:], out.stderr[-2000:])
    log = (run_dir / rd.LOG).read_text() if (run_dir / rd.LOG).exists() else ""
    assert "was imported" not in out.stdout + out.stderr + log
    assert sorted(r["seed"] for r in _rows_intact(run_dir)) == [0, 1, 2]
