"""The shim instrument through fontaine-eval: seam stats, fit, overrides, tripwires."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_eval


def test_bad_override_is_one_line_naming_the_token(tmp_path):
    out = run_eval("--molmoact2", "tiny", "--convmap-override", "elbow=1,90", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2
    assert "elbow=1,90" in out.stderr and "Traceback" not in out.stderr
    out = run_eval("--molmoact2", "tiny", "--convmap-override", "wrist_roll=2,90", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "wrist_roll=2,90" in out.stderr


def test_fit_without_a_rig_table_says_how_to_make_one(tmp_path):
    out = run_eval("--molmoact2", "tiny", "--convmap", "fit", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2
    assert "--convmap-seam-stats" in out.stderr and "--policy scripted" in out.stderr


def test_anchor_values_parse_or_name_the_flag():
    from engine.cli.convmap import ConvmapUsageError, parse_anchor

    assert parse_anchor(None) is None
    assert parse_anchor("6.31") == [6.31] * 6
    assert parse_anchor("2,3,13.2,2,1,5") == [2.0, 3.0, 13.2, 2.0, 1.0, 5.0]
    for bad in ("abc", "1,2", "-1", "nan"):
        with pytest.raises(ConvmapUsageError, match="--convmap-anchor-deg"):
            parse_anchor(bad)


def test_replay_switches_need_their_instrument(tmp_path):
    out = run_eval("--molmoact2", "tiny", "--convmap-anchor-deg", "6.31", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "--convmap-tripwires" in out.stderr and "Traceback" not in out.stderr
    out = run_eval("--molmoact2", "tiny", "--convmap-fit-tiebreak", "off", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "--convmap fit" in out.stderr


@pytest.mark.slow
def test_seam_stats_fit_and_tripwires_end_to_end(tmp_path, capsys):
    """The rig table from a `fontaine-eval` process; the two tripwire runs that read it (the instrument judges
    and exits: no run, no driver) through fontaine-eval's own `main` in this process, where each process
    paid the torch/lerobot imports again (~10 s of CPU) for the same code."""
    from engine.cli.main import main

    seam = tmp_path / "seam.json"
    out = run_eval("--policy", "scripted", "--seeds", "0", "--episode-seconds", "12", "--convmap-seam-stats", str(seam))
    assert out.returncode == 0, out.stderr
    stats = json.loads(seam.read_text())
    assert set(stats["joints"]) >= {"shoulder_pan", "gripper"}

    run_dir = tmp_path / "tw"
    code = main(["--molmoact2", "tiny", "--dtype", "fp32", "--convmap", "fit", "--convmap-seam-stats", str(seam),
                 "--convmap-override", "wrist_roll=-90", "--convmap-tripwires", "--seeds", "0,1", "--run-dir", str(run_dir)])
    out = capsys.readouterr()
    # The random tiny model's first actions are far from the state: tripwire (b) must fail it.
    assert code == 1, out.err
    assert "fit, frozen as per-joint overrides" in out.out
    assert "BLIND TO SIGN AT REST" in out.out
    report = json.loads((run_dir / "convmap_tripwires.json").read_text())
    assert report  # the per-joint tables travel with the run
    assert not (run_dir / "manifest.json").exists()  # a failed tripwire launches nothing

    # The lab note's replay: the margin-only fit, and tripwire (b) against an explicit anchor.
    run_dir = tmp_path / "replay"
    code = main(["--molmoact2", "tiny", "--dtype", "fp32", "--convmap", "fit", "--convmap-fit-tiebreak", "off",
                 "--convmap-seam-stats", str(seam), "--convmap-tripwires", "--convmap-anchor-deg", "6.31",
                 "--seeds", "0", "--run-dir", str(run_dir)])
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    assert "coverage tiebreak OFF" in out.out
    report = json.loads((run_dir / "convmap_tripwires.json").read_text())
    first = report["tripwires"]["first_action"]
    assert all(j["anchor_deg"] == 6.31 and j["limit_deg"] == pytest.approx(12.62) for j in first["joints"])
