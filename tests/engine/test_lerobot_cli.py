"""`fontaine-eval --lerobot` flags: what does not apply, or cannot be honoured, is one line and exit 2, nothing written."""

from __future__ import annotations

import pytest

from engine.cli import main

pytest.importorskip("lerobot")


@pytest.mark.parametrize("extra, says", [
    (["--flow-steps", "5"], "--flow-steps: MolmoAct2's"),
    (["--dtype", "bf16", "--norm-tag", "x"], "--dtype, --norm-tag: MolmoAct2's"),
    (["--lerobot-map", "observation.images.top"], "expected FEATURE=SOURCE"),
    (["--lerobot-map", "observation.images.side=front"], "names observation.images.side, which the checkpoint does not read"),
    (["--policy", "hold"], "choose one policy, not --policy and --lerobot"),
])
def test_bad_lerobot_flags_are_one_line(tmp_path, capsys, extra, says):
    from tests.engine.lerobot_fixtures import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "act", "act")
    run_dir = tmp_path / "run"
    code = main(["--lerobot", str(ckpt), "--num-seeds", "1", "--run-dir", str(run_dir), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1, err
    assert not run_dir.exists()


def test_a_map_without_a_checkpoint_and_a_missing_checkpoint(tmp_path, capsys):
    assert main(["--lerobot-map", "observation.state=state", "--run-dir", str(tmp_path / "r")]) == 2
    assert "--lerobot-map maps the inputs of --lerobot CKPT" in capsys.readouterr().err
    assert main(["--lerobot", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "not found" in capsys.readouterr().err and not (tmp_path / "r").exists()
