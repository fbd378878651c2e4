"""fontaine-eval's bad-input handling: one clear line, exit code 2, never a traceback."""

from __future__ import annotations

import pytest

from engine.cli import main
from tests.helpers import run_eval


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--num-seeds", "-3"], "--num-seeds: must be a positive integer"),
        (["--policy", "oracle"], "invalid choice: 'oracle'"),
        (["--seeds", "5-2"], "empty seed range"),
        (["--episode-seconds", "nan"], "not a finite number"),
        (["--video-draw", "sometimes", "--policy", "hold"], "--video-draw 'sometimes'"),
        (["--arm", "a"], "--arm needs --prereg"),
        (["--policy", "hold", "--molmoact2", "tiny"], "choose one policy"),
        (["--molmoact2-grammar-masked"], "modifies --molmoact2-discrete"),
        (["--resume", "/nonexistent/run"], "no readable manifest.json"),
        (["--policy", "hold", "--record-predicts", "--ray", "local"], "not supported with --ray"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and err.startswith("fontaine-eval: error:") and "\n" not in err
    assert "Traceback" not in err


def test_unwritable_run_dir(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["--policy", "hold", "--video-draw", "none", "--run-dir", str(blocker / "run")]) == 2
    assert "not writable" in capsys.readouterr().err


def test_missing_gl_library_is_a_clear_error(tmp_path):
    out = run_eval("--policy", "scripted", "--video-draw", "all", "--num-seeds", "1", "--run-dir", str(tmp_path / "r"),
                   env={"MUJOCO_GL": "no-such-gl"})
    assert out.returncode == 2
    assert "offscreen rendering is unavailable" in out.stderr and "apt-get install" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "r").exists()  # nothing written before the check
