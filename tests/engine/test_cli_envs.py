"""fontaine-eval and envs: --list-envs, --env NAME, an unknown env refused before anything is
written, and the manifest recording the env's name and content hash."""

from __future__ import annotations

import importlib.metadata
import json

from engine.cli.main import main
from engine.envs import env_sha256, registry
from tests.helpers import REPO


def _fast_share(monkeypatch, tmp_path):
    """The reach share without 50 resets an env (tests/engine/test_reach.py counts for real): one fewer
    than the seeds, kept under tmp_path."""
    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("engine.envs.reach_share.count_reachable", lambda spec, seeds: seeds - 1)


def test_list_envs_prints_one_env_a_line_name_first_and_writes_nothing(tmp_path, tmp_path_factory, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _fast_share(monkeypatch, tmp_path_factory.mktemp("cache"))
    ep = importlib.metadata.EntryPoint(name="lab-boat", value="tests.engine.test_cli_envs:lab_boat",
                                       group="fontaine.envs")
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    assert main(["--list-envs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["boat-on-disk", "pick-lift", "lab-boat",
                                                        "gym:MuJoCoPickAndPlace-v1", "gym:MuJoCoPickLift-v1"]
    assert "the lab's boat" in lines[2]
    assert all(line.endswith("\treachable 49/50 seeds (98%)") for line in lines)  # each env's share of reachable seeds
    assert "\tgym (so101-nexus-mujoco 0.3.12)\t" in lines[3]  # the Gymnasium envs Fontaine ships adapters for
    assert list(tmp_path.iterdir()) == []


def lab_boat():
    import dataclasses

    return dataclasses.replace(registry.get_env("boat-on-disk"), name="lab-boat", description="the lab's boat")


def test_an_unknown_env_is_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, needle in (("stack-cube", "--env stack-cube: no such env (known: boat-on-disk, pick-lift)"),
                         ("../x", "not an env name")):
        assert main(["--policy", "hold", "--env", name, "--num-seeds", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("fontaine-eval: error:") and needle in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []


def test_the_frozen_document_decides_the_env(tmp_path, capsys):
    demo = REPO / "prereg" / "examples" / "demo.md"
    assert main(["--prereg", str(demo), "--arm", "scripted", "--env", "boat-on-disk",
                 "--run-dir", str(tmp_path / "r")]) == 2
    assert "--env: the frozen pre-registration decides this" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_manifest_records_the_env_and_its_hash_and_rows_carry_the_grasp_fields(tmp_path):
    run_dir = tmp_path / "r"
    assert main(["--policy", "hold", "--env", "boat-on-disk", "--num-seeds", "1", "--episode-seconds", "0.5",
                 "--video-draw", "none", "--run-dir", str(run_dir)]) == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env"] == {"name": "boat-on-disk", "sha256": env_sha256("boat-on-disk")}
    assert manifest["config"]["env"] == "boat-on-disk"
    row = json.loads((run_dir / "rows.jsonl").read_text().splitlines()[0])
    assert row["schema"] == 4 and row["status"] == "ok" and row["grasped_lifted"] is False and row["released"] is False


def test_a_resume_whose_env_is_gone_is_refused(tmp_path, capsys):
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig

    config = RunConfig(run_id="r", arm="hold", policy=PolicySpec(kind="hold"), seeds=[0], env="lab-gone")
    (tmp_path / "manifest.json").write_text(json.dumps({"config": config.as_dict()}))
    assert main(["--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--env lab-gone: no such env" in err and "\n" not in err
    assert RunConfig.from_dict({k: v for k, v in config.as_dict().items() if k != "env"}).env == "boat-on-disk"


def test_list_envs_with_an_env_prints_its_sha256_for_a_plan_to_pin(capsys, tmp_path, monkeypatch):
    _fast_share(monkeypatch, tmp_path)
    assert main(["--list-envs", "--env", "boat-on-disk"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("boat-on-disk\t") and f"\tsha256 {env_sha256('boat-on-disk')}\t" in line
    assert line.endswith("\treachable 49/50 seeds (98%)")


def test_an_arm_that_names_an_env_runs_on_it(tmp_path, monkeypatch):
    import shutil

    from engine.cli.parser import build_parser
    from engine.cli.resolve import resolve
    from prereg.document.seal import amend, freeze

    ep = importlib.metadata.EntryPoint(name="lab-boat", value="tests.engine.test_cli_envs:lab_boat",
                                       group="fontaine.envs")
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    doc = tmp_path / "demo.md"
    shutil.copy(REPO / "prereg" / "examples" / "demo.md", doc)
    pin = env_sha256("lab-boat")  # a built-in env is pinned by its hash like a file (a wrong one is refused at launch)
    amend(doc, data={"arms": [{"name": "lab", "policy": "scripted", "env": "lab-boat", "env_sha256": pin}]},
          title="the lab's boat", why="Registered before its launch.")
    freeze(doc, now="2026-12-01T10:00:00Z")
    config, _, _ = resolve(build_parser().parse_args(["--prereg", str(doc), "--arm", "lab", "--run-dir", str(tmp_path / "r")]))
    assert config.env == "lab-boat"
    config, _, _ = resolve(build_parser().parse_args(["--prereg", str(doc), "--arm", "scripted",
                                                      "--run-dir", str(tmp_path / "s")]))
    assert config.env == "boat-on-disk"
