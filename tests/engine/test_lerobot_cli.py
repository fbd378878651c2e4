"""`fontaine-eval --lerobot` flags: what does not apply, or cannot be honoured, is one line and exit 2, nothing written."""

from __future__ import annotations

import pytest

from engine.cli.main import main

pytest.importorskip("lerobot")


@pytest.mark.parametrize("extra, says", [
    (["--flow-steps", "5"], "--flow-steps: MolmoAct2's"),
    (["--dtype", "bf16", "--norm-tag", "x"], "--dtype, --norm-tag: MolmoAct2's"),
    (["--lerobot-map", "observation.images.top"], "expected FEATURE=SOURCE"),
    (["--lerobot-map", "observation.images.side=front"], "names observation.images.side, which the checkpoint does not read"),
    (["--policy", "hold"], "choose one policy, not --policy and --lerobot"),
])
def test_bad_lerobot_flags_are_one_line(act_ckpt, tmp_path, capsys, extra, says):
    run_dir = tmp_path / "run"
    code = main(["--lerobot", str(act_ckpt), "--num-seeds", "1", "--run-dir", str(run_dir), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1, err
    assert not run_dir.exists()


def test_a_map_without_a_checkpoint_and_a_missing_checkpoint(tmp_path, capsys):
    assert main(["--lerobot-map", "observation.state=state", "--run-dir", str(tmp_path / "r")]) == 2
    assert "--lerobot-map maps the inputs of --lerobot CKPT" in capsys.readouterr().err
    assert main(["--lerobot", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "not found" in capsys.readouterr().err and not (tmp_path / "r").exists()


def _hostile(ckpt, name: str, kind: str) -> None:
    import os

    path = ckpt / name
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "dir":
        path.mkdir()
    else:  # corrupt: what a disk error or a half copy leaves
        path.write_bytes(b"\x00\xff{not json" * 100)


@pytest.mark.parametrize("name, kind, says", [
    ("config.json", "fifo", "config.json: is a FIFO (named pipe), not a regular file"),
    ("model.safetensors", "fifo", "model.safetensors: is a FIFO (named pipe), not a regular file"),
    ("model.safetensors", "loop", "model.safetensors: a symbolic link loop"),
    ("config.json", "dir", "config.json: is a directory, not a regular file"),
    ("policy_preprocessor.json", "corrupt", "policy_preprocessor.json is not a JSON object"),
    ("policy_postprocessor.json", "fifo", "policy_postprocessor.json: is a FIFO"),
])
def test_a_checkpoint_file_that_is_not_what_it_says_is_one_line_never_a_hang(act_ckpt, tmp_path, capsys, name, kind,
                                                                              says):
    """Issue 33: a FIFO as config.json or model.safetensors hung the launch; a corrupt
    policy_preprocessor.json printed a traceback from each of 3 workers and exited 1."""
    import shutil

    from tests.helpers import returns_within

    ckpt = shutil.copytree(act_ckpt, tmp_path / "act")  # its own copy: one of its files is broken below
    _hostile(ckpt, name, kind)
    run_dir = tmp_path / "run"
    code = returns_within(lambda: main(["--lerobot", str(ckpt), "--num-seeds", "3", "--workers", "3",
                                        "--run-dir", str(run_dir)]), 120, what="fontaine-eval --lerobot")
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not run_dir.exists()


@pytest.mark.slow
def test_processors_that_fail_to_load_in_the_workers_are_one_line_and_exit_2(tmp_path):
    """A step-served checkpoint (diffusion: each worker loads it) whose saved processors are JSON but
    do not load: each worker printed its traceback and the run exited 1. Now the first worker's
    refusal reaches the driver (engine.workers.worker.StartFailed), which says it once: exit 2, the run `failed`
    with "could not start", no traceback."""
    import json

    from prereg import rundir as rd
    from tests.engine.lerobot_fixtures import build_checkpoint
    from tests.helpers import run_eval

    ckpt = build_checkpoint(tmp_path / "diffusion", "diffusion")
    (ckpt / "policy_preprocessor.json").write_text(json.dumps({"name": "x", "steps": [{"registry_name": "no_such_step"}]}))
    run_dir = tmp_path / "run"
    out = run_eval("--lerobot", str(ckpt), "--num-seeds", "2", "--workers", "2", "--episode-seconds", "0.5",
                   "--video-draw", "none", "--run-dir", str(run_dir))
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "the saved processors in" in lines[0], out.stderr[-3000:]
    assert "Traceback" not in out.stdout + out.stderr
    status = json.loads((run_dir / rd.STATUS).read_text())
    assert status["state"] == "failed" and status["reason"].startswith("could not start")
