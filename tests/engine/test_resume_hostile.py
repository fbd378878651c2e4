"""A resume re-checks its manifest with the command line's own types and bounds (issue 33): a manifest
is a file anyone can edit. `workers: 100000` over 200,000 seeds was honoured until the kernel's OOM
killer took the resume and an unrelated run with it; a wrong type was "internal error ... a bug"."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from prereg import rundir as rd
from tests.helpers import run_eval


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A real run's directory, stopped before its first episode (a resume would run both seeds)."""
    run_dir = tmp_path_factory.mktemp("resume") / "run"
    run_dir.mkdir()
    rd.write_stop(run_dir, rd.StopReason(rd.BY_USER, "stopped before it began"))
    out = run_eval("--policy", "scripted", "--episode-seconds", "1", "--seeds", "0-1", "--video-draw", "none",
                   "--run-dir", str(run_dir))
    assert out.returncode == rd.EXIT_STOPPED, out.stderr
    return run_dir


CASES = {
    "workers 100000": ({"workers": 100_000}, "config.workers 100000: must be an integer from 1 to 256"),
    "200,000 seeds": ({"seeds": list(range(200_000))}, "config.seeds holds 200,000 seeds, not 1 to 100,000"),
    "episode_seconds 1e9": ({"episode_seconds": 1e9}, "config.episode_seconds 1000000000.0: must be from 0.1 to 3600"),
    "episode_seconds 0": ({"episode_seconds": 0}, "config.episode_seconds 0: must be from 0.1 to 3600"),
    "workers a string": ({"workers": "2"}, "config.workers is str '2'"),
    "seeds not numbers": ({"seeds": ["a", 1]}, "config.seeds is not a list of whole numbers"),
    "a seed past the largest": ({"seeds": [0, 2**31]}, "past the largest seed"),
    "seeds repeat": ({"seeds": [1, 1]}, "seeds repeat"),
    "policy a string": ({"policy": "scripted"}, "config.policy is not a JSON object"),
    "a dtype no one has": ({"policy": {"kind": "scripted", "dtype": "fp64"}}, "config.policy.dtype 'fp64' is not one of"),
    "flow steps 0": ({"policy": {"kind": "scripted", "flow_steps": 0}}, "config.policy.flow_steps 0: must be an integer"),
    "a run id out of its folder": ({"run_id": "../../x"}, "config.run_id '../../x' is not a run id"),
    "render size 1e6": ({"render_size": 1_000_000}, "config.render_size 1000000: must be an integer from 16 to 1,024"),
    "batch wait 1e12": ({"batch_wait_max_ms": 1e12}, "config.batch_wait_max_ms"),
    "arms a number": ({"arms": 5}, "config.arms is int 5"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resume_refuses_a_manifest_the_command_line_would_refuse(stopped_run, capsys, case):
    change, needle = CASES[case]
    manifest = json.loads((stopped_run / rd.MANIFEST).read_text())
    before = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file() and p.name != rd.MANIFEST}
    hostile = {**manifest, "config": {**manifest["config"], **change}}
    (stopped_run / rd.MANIFEST).write_text(json.dumps(hostile))
    try:
        assert main(["--resume", str(stopped_run)]) == rd.EXIT_USAGE
        err = capsys.readouterr().err.strip()
        assert err.startswith("fontaine-eval: error: ") and needle in err and "\n" not in err, err
        assert "cannot be resumed" in err and "internal error" not in err
        after = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file() and p.name != rd.MANIFEST}
        assert after == before  # nothing written, nothing started
    finally:
        (stopped_run / rd.MANIFEST).write_text(json.dumps(manifest))


def test_the_manifest_as_written_still_resumes(stopped_run):
    out = run_eval("--resume", str(stopped_run))
    assert out.returncode == rd.EXIT_DONE, out.stderr
    assert sorted(json.loads(x)["seed"] for x in (stopped_run / rd.ROWS).read_text().splitlines()) == [0, 1]


@pytest.mark.parametrize("change, needle", [
    ({"gates": [1]}, "config.gates is list [1]"),
    ({"gates": {"gpu_hours": "x"}}, "config.gates.gpu_hours is str 'x', not a gate's value"),
    ({"video_draw": "sometimes"}, "config.video_draw: 'sometimes' is not a video draw"),
    ({"policy": {"kind": "scripted", "convmap_overrides": ["wrist_rol=5"]}}, "unknown joint 'wrist_rol'"),
])
def test_a_resume_refuses_what_it_would_drop_or_crash_on(stopped_run, capsys, change, needle):
    """Found by the sweep: wrong-typed gates were dropped silently (the run resumed without them), a bad
    video draw or override crashed the driver ("driver crashed ... a bug")."""
    manifest = json.loads((stopped_run / rd.MANIFEST).read_text())
    (stopped_run / rd.MANIFEST).write_text(json.dumps({**manifest, "config": {**manifest["config"], **change}}))
    try:
        assert main(["--resume", str(stopped_run)]) == rd.EXIT_USAGE
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err and "internal error" not in err, err
    finally:
        (stopped_run / rd.MANIFEST).write_text(json.dumps(manifest))


def test_a_resume_refuses_a_history_that_is_not_one(stopped_run, capsys):
    manifest = json.loads((stopped_run / rd.MANIFEST).read_text())
    (stopped_run / rd.MANIFEST).write_text(json.dumps({**manifest, "resumes": 5}))
    try:
        assert main(["--resume", str(stopped_run)]) == rd.EXIT_USAGE
        assert "resumes is int 5, not a list of resumes" in capsys.readouterr().err
    finally:
        (stopped_run / rd.MANIFEST).write_text(json.dumps(manifest))
