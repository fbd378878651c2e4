"""`K` never leaves a run `died`: the console waits as long as an episode of the run can take,
and when it must SIGKILL (or the driver ends without its final state) it records the end itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console import kill, runs
from prereg import rundir as rd
from prereg.rundir.files import write_json_atomic
from tests.helpers import wait_until

FAKE_DRIVER = Path(__file__).parent / "fake_driver.py"


def test_the_grace_is_the_runs_longest_episode_plus_a_margin(tmp_path):
    write_json_atomic(tmp_path / rd.MANIFEST, {"episode_seconds": 30.0, "seeds": [0, 1]})
    assert kill.grace_s(tmp_path) == 1.5 * 30 + kill.GRACE_MARGIN_S  # a 30 s episode always outlasted 10 s
    (tmp_path / rd.ROWS).write_text(json.dumps({"seed": 0, "wall_s": 100.0}) + "\n")
    assert kill.grace_s(tmp_path) >= 100  # a slow policy: the walls seen so far count
    write_json_atomic(tmp_path / rd.MANIFEST, {"episode_seconds": "x"})
    assert kill.grace_s(tmp_path) >= kill.MIN_GRACE_S


def _start(d: Path, *extra: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, str(FAKE_DRIVER), str(d), "--rows", "3", "--total", "6",
                          "--row-every", "0.05", *extra], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: (d / rd.ROWS).exists() and len((d / rd.ROWS).read_text().splitlines()) >= 3,
               timeout=30, what="three rows")
    return p


def test_a_kill_past_the_grace_is_recorded_stopped_by_kill_with_the_seeds_to_resume(tmp_path):
    d = tmp_path / "run"
    p = _start(d, "--ignore-term")  # its episode outlasts any grace: SIGTERM does not end it
    try:
        pid = json.loads((d / rd.PID).read_text())
        outcome = kill.kill_run(d, pid, who="fontaine-console (test)", grace=0.5)
        assert "SIGKILL" in outcome and "recorded as stopped by kill" in outcome, outcome
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    status = json.loads((d / rd.STATUS).read_text())
    assert status["state"] == "stopped" and status["stop"]["by"] == "kill", status
    assert status["lost_seeds"] == [3, 4, 5] and "SIGKILL after 0.5 s" in status["reason"]
    assert status["in_flight_seeds"] == [3, 4]  # the driver's last word on its two workers' episodes
    assert "in flight when killed [3, 4]; never started 1" in status["reason"]
    assert status["stop"]["who"] == "fontaine-console (test)"
    info = runs.read_run(d)
    assert info.state == "stopped"  # never `died`: R resumes it like any stopped run


def test_a_driver_that_dies_on_sigterm_without_its_end_is_recorded_too(tmp_path):
    d = tmp_path / "run"
    p = _start(d)  # the fake driver has no SIGTERM handler: it dies without a final state
    try:
        pid = json.loads((d / rd.PID).read_text())
        outcome = kill.kill_run(d, pid, grace=10)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "SIGKILL" not in outcome.split(";")[0] and "recorded as stopped by kill" in outcome
    assert runs.read_run(d).state == "stopped"


def test_a_driver_that_writes_its_own_end_is_left_alone(tmp_path):
    write_json_atomic(tmp_path / rd.STATUS, {"state": "stopped", "reason": "signal: SIGTERM received"})
    assert kill.record_kill(tmp_path) is None
    assert json.loads((tmp_path / rd.STATUS).read_text())["reason"] == "signal: SIGTERM received"


def test_a_killed_comparison_run_lists_its_episodes_by_arm_and_seed(tmp_path):
    """A comparison run's episode is (arm, seed): a seed with a row of one arm only still owes the other."""
    write_json_atomic(tmp_path / rd.MANIFEST, {"arm": "a-vs-b", "seeds": [0, 1, 2], "episode_seconds": 5.0,
                                                  "arms": [{"arm": "a", "policy": {"kind": "scripted"}},
                                                           {"arm": "b", "policy": {"kind": "scripted"}}]})
    write_json_atomic(tmp_path / rd.STATUS, {"state": "running", "done": 3, "total": 6,
                                                "in_flight_seeds": [["b", 1], ["a", 2]]})
    (tmp_path / rd.ROWS).write_text("".join(json.dumps({"arm": a, "seed": s, "status": "ok", "success": False}) + "\n"
                                            for a, s in (("a", 0), ("b", 0), ("a", 1))))
    said = kill.record_kill(tmp_path, killed_after=12.0)
    status = json.loads((tmp_path / rd.STATUS).read_text())
    assert status["lost_seeds"] == [["b", 1], ["a", 2], ["b", 2]] and (status["done"], status["total"]) == (3, 6)
    assert "3 episode(s) without a row" in said
    assert "in flight when killed [b:1, a:2]; never started 1" in status["reason"]


@pytest.mark.slow
def test_a_real_driver_stopped_by_k_names_who_sent_the_signal(tmp_path):
    """`s` names the person in the stop reason; `K` did not ("signal: SIGTERM received"). The console
    now writes who sent the signal first, and the driver gives that as its reason."""
    from tests.helpers import launch_detached, read_status

    d = tmp_path / "run"
    proc = launch_detached(d, "--policy", "hold", "--inject-latency-ms", "200", "--episode-seconds", "3",
                           "--video-draw", "none", "--seeds", "0-7", "--workers", "1")
    try:
        wait_until(lambda: read_status(d).get("state") == "running", timeout=120, what="a running driver")
        pid = json.loads((d / rd.PID).read_text())
        outcome = kill.kill_run(d, pid, who="fontaine-console (ana)")
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    status = read_status(d)
    assert "SIGKILL" not in outcome and status["state"] == "stopped", (outcome, status)
    assert status["stop"]["by"] == "signal" and status["stop"]["who"] == "fontaine-console (ana)", status["stop"]
    assert status["reason"].startswith("signal (fontaine-console (ana)): SIGTERM to process group"), status["reason"]
