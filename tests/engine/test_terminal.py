"""Closing the terminal a run was started in (issue 43): `tmux kill-server` hung the pane's terminal up,
the SIGHUP handler wrote "stopping ..." to it, and the run ended `failed | driver crashed: OSError:
[Errno 5] Input/output error (a bug: ...)`. The driver's output is detached from the terminal before
the run starts (engine/process/terminal.py): a closed terminal ends the run `stopped`, resumable, never a bug.

The run's terminal is a pty this test holds the master of; closing the master is the terminal closing."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import subprocess
import termios
import time

import pytest

from prereg import rundir as rd
from tests.helpers import REPO, eval_argv, read_rows, read_status, run_eval


def _launch_on_a_pty(run_dir, *args, controlling: bool):
    """fontaine-eval with stdin, stdout and stderr a pty's slave; as its session's controlling terminal
    when `controlling` (then closing the master sends the session SIGHUP, as a terminal emulator's
    exit does), else only a terminal it writes to (closing it fails every write with EIO, no signal)."""
    master, slave = pty.openpty()

    def take_terminal():
        if controlling:
            fcntl.ioctl(1, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(eval_argv(*args, "--run-dir", str(run_dir)), cwd=REPO, stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True, preexec_fn=take_terminal)
    os.close(slave)
    return proc, master


def _read_until_rows(master, run_dir, n: int) -> bytes:
    """What the terminal shows until the run has `n` rows (read, so the pty never fills up)."""
    seen = b""
    deadline = time.monotonic() + 180
    while len(read_rows(run_dir)) < n:
        assert time.monotonic() < deadline, f"no {n} rows in 180 s; the terminal said {seen[-2000:]!r}"
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def _ended(proc, run_dir) -> tuple[int, dict, str]:
    try:
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (run_dir / rd.LOG).read_text() if (run_dir / rd.LOG).exists() else ""
    return code, read_status(run_dir), log


@pytest.mark.slow
def test_closing_the_terminal_stops_the_run_resumable_never_a_bug(tmp_path):
    run_dir = tmp_path / "run"
    proc, master = _launch_on_a_pty(run_dir, "--policy", "scripted", "--episode-seconds", "4", "--seeds", "0-7",
                                    "--workers", "1", "--video-draw", "none", controlling=True)
    shown = _read_until_rows(master, run_dir, 1)
    assert b"fontaine-eval: run" in shown  # the terminal was the run's, until it closed
    os.close(master)  # the terminal closes: the kernel hangs the session up (SIGHUP)
    code, status, log = _ended(proc, run_dir)
    assert code == rd.EXIT_STOPPED, (code, status, log[-3000:])
    assert status["state"] == rd.STOPPED and status["stop"]["by"] == "signal", status
    assert status["stop"]["detail"] == "SIGHUP received"
    assert "a bug" not in (status.get("reason") or "") and "Input/output error" not in log, log[-3000:]
    assert "stopping at the episode boundary: signal: SIGHUP received" in log  # what it said after: in driver.log
    assert f"run {run_dir}  state stopped" in log  # the summary after the run too, never on a closed terminal
    rows = read_rows(run_dir)
    assert rows and len(rows) < 8 and all(r["status"] == "ok" for r in rows)
    out = run_eval("--resume", str(run_dir))  # resumable: the rest runs, each seed once
    assert out.returncode == rd.EXIT_DONE, out.stderr[-2000:]
    assert sorted(r["seed"] for r in read_rows(run_dir)) == list(range(8))


@pytest.mark.slow
def test_a_terminal_that_fails_every_write_is_left_and_the_run_goes_on(tmp_path):
    """No SIGHUP at all (the pty is not the run's controlling terminal): every write to it fails with EIO
    once it is closed, and the run still ends `done`, what it said from then on in driver.log."""
    run_dir = tmp_path / "run"
    proc, master = _launch_on_a_pty(run_dir, "--policy", "scripted", "--episode-seconds", "2", "--seeds", "0-3",
                                    "--workers", "1", "--video-draw", "none", controlling=False)
    _read_until_rows(master, run_dir, 1)
    os.close(master)
    code, status, log = _ended(proc, run_dir)
    assert code == rd.EXIT_DONE and status["state"] == rd.DONE, (code, status, log[-3000:])
    assert "Input/output error" not in log and f"run {run_dir}  state done" in log
    assert sorted(r["seed"] for r in read_rows(run_dir)) == list(range(4)) and not (run_dir / rd.STOP).exists()
