"""A lab's MJCF as it is (issue 34): grasps read right in every env (collision bits set by name, checked
after compile), so101-nexus's pick-and-place scene loads unedited (its own floor, a static target, a
cube whose origin is its centre, no named camera, its own <option>), and a scene that cannot work is
refused at load, one line each, exit 2, before any run directory exists."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest

from engine.cli.main import main
from engine.envs import EnvFileError, env_record, envfile, get_env
from engine.policies.scripted import ScriptedOracle
from engine.sim import scene
from engine.sim.env import ObjectEnv
from engine.workers.episode import run_episode
from prereg.rundir.outcomes import SUCCESS, episode_outcome
from tests.engine.env_file_fixture import ENV, SCENE, write_env, write_included_env
from tests.engine.nexus_fixture import write_nexus_env

ENV_FILES = {"lab": write_env, "included": write_included_env, "nexus": write_nexus_env}
EVERY_ENV = ["boat-on-disk", "pick-lift", *ENV_FILES]
ORACLE_SEEDS = {"boat-on-disk": (0, 1, 2), "pick-lift": (0, 1, 2), "lab": (0, 1, 2), "included": (0, 1, 2),
                "nexus": (1, 2, 8)}  # nexus: seeds whose cube spawns within the oracle's top-down reach


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    made = {}

    def load(which: str):
        if which not in made:
            ref = which if which not in ENV_FILES else str(ENV_FILES[which](tmp_path_factory.mktemp(which) / "lab"))
            made[which] = (ref, get_env(ref))
        return made[which]

    return load


def _collide(model, a: int, b: int) -> bool:
    return bool(model.geom_contype[a] & model.geom_conaffinity[b] or model.geom_contype[b] & model.geom_conaffinity[a])


@pytest.mark.parametrize("which", EVERY_ENV)
def test_the_object_collides_with_the_pads_and_never_with_the_jaw_meshes(envs, which):
    _, spec = envs(which)
    env = spec.create(render_size=16)
    try:
        model = env.model
        obj = [g for g in np.flatnonzero(env._is_obj) if model.geom_contype[g] or model.geom_conaffinity[g]]
        pads = [model.geom(j).id for j in spec.grasp.jaw_geoms]
        meshes = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
                  and model.mesh(model.geom_dataid[g]).name in scene.JAW_MESHES
                  and (model.geom_contype[g] or model.geom_conaffinity[g])]
        assert obj and len(pads) == 2 and len(meshes) == 2
        assert all(_collide(model, o, p) for o in obj for p in pads)
        assert not any(_collide(model, o, m) for o in obj for m in meshes)
        assert all(_collide(model, m, model.geom(n).id) for m in meshes for n in ("fixed_pad", "moving_pad")
                   if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, n) >= 0)  # the jaws still meet each other
        assert spec.problems(model) == []
    finally:
        env.close()


def test_the_first_geom_of_a_scene_keeps_its_own_bits(envs):
    """The bug: the object's geoms were marked by id() of MjSpec wrappers Python had freed, so the
    scene's first geom (the table) took the object's bits and the object the arm's."""
    _, spec = envs("lab")
    model = envfile._compile(envfile.read_declaration(spec.files[0][1].parent / "env.yaml"))
    table, block = model.geom("table").id, model.geom("block").id
    assert model.geom_contype[table] == model.geom_conaffinity[table] == scene.BIT_ARM | scene.BIT_BOAT
    assert model.geom_contype[block] == model.geom_conaffinity[block] == scene.BIT_BOAT


def test_a_scene_whose_bits_let_the_jaw_meshes_touch_the_object_is_refused():
    boat = get_env("boat-on-disk")
    model = scene.build_spec().compile()
    jaw = next(g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
               and model.mesh(model.geom_dataid[g]).name == "moving_jaw_so101_v1")
    model.geom_conaffinity[jaw] = scene.BIT_ARM | scene.BIT_BOAT
    (problem,) = boat.problems(model)
    assert "collides with the jaw mesh" in problem and "moving_jaw_so101_v1" in problem


@pytest.mark.parametrize("which", EVERY_ENV)
def test_every_oracle_success_is_a_grasp(envs, which):
    _, spec = envs(which)
    env = spec.create(render_size=16)
    oracle = ScriptedOracle()
    try:
        rows = [run_episode(env, seed, 20.0, lambda obs: oracle.predict_batch([obs])[0], chunk_horizon=oracle.chunk_horizon,
                            needs_images=False, needs_privileged=True) for seed in ORACLE_SEEDS[which]]
    finally:
        env.close()
    assert any(r["success"] for r in rows), rows
    for r in rows:
        if r["success"]:
            assert r["grasped_lifted"] and r["grasp_tick"] < r["success_tick"] and r["lift_max_mm"] > 20.0, r
            assert episode_outcome({**r, "status": "ok"}) == SUCCESS


def test_the_nexus_scene_loads_as_the_package_builds_it(envs, tmp_path, monkeypatch):
    ref, spec = envs("nexus")
    decl = envfile.read_declaration(spec.files[0][1].parent / "env.yaml")
    assert decl.arm == "attach" and decl.arm_include  # its <include> of the package's arm: Fontaine attaches its own
    assert decl.make_mocap and decl.scene_floor_z == 0.0  # a static target made mocap; its floor kept
    assert dict(spec.cameras) == {"front": "fontaine/front", "wrist": "wrist"}  # declared, and the arm's by its name
    assert all(not label.startswith("/") for label, _ in spec.files)  # the hash moves with neither folder nor venv
    model = envfile._compile(decl)
    assert model.body("target").mocapid[0] >= 0
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0  # the lab's own floor ...
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, scene.ROOM_PREFIX + "floor") < 0  # ... and no second one
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, scene.ROOM_PREFIX + "wall_px") >= 0
    cam = model.camera("fontaine/front")
    assert np.isclose(model.cam_fovy[cam.id], 45.0)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    view = -data.cam_xmat[cam.id].reshape(3, 3)[:, 2]  # a camera looks along its -z
    assert np.allclose(data.cam_xpos[cam.id], [0.225, 0.0, 0.785]) and np.allclose(view, [0, 0, -1], atol=1e-9)
    env = spec.create(render_size=16)
    try:
        assert env.reset(1) == 0
        reading = env.reading()
        assert abs(reading.pos[2]) < 1e-3  # its base on the floor, though its origin is its centre
        assert abs(env.object_pos()[2] - 0.0125) < 1e-3
    finally:
        env.close()
    record = env_record(ref)
    assert record["physics"] == {"mode": "fontaine", "overridden": {
        "timestep": {"scene": 0.002, "ran": scene.TIMESTEP_S}, "impratio": {"scene": 1.0, "ran": 10.0},
        "integrator": {"scene": "euler", "ran": "implicitfast"}, "noslip_iterations": {"scene": 3, "ran": 0}}}
    monkeypatch.chdir(tmp_path)
    assert main(["--policy", "scripted", "--env", ref, "--seeds", "1", "--episode-seconds", "12", "--video-draw", "none",
                 "--run-dir", "run"]) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["env"]["physics"] == record["physics"]  # what Fontaine overrode, in the manifest
    (row,) = [json.loads(line) for line in (tmp_path / "run" / "rows.jsonl").read_text().splitlines()]
    assert row["success"] and row["grasped_lifted"] and row["schema"] == 4


def test_physics_scene_honours_the_option_when_its_timestep_divides_the_tick(tmp_path):
    path = write_nexus_env(tmp_path / "a", envfile_text(physics="scene"))
    with pytest.raises(EnvFileError, match="timestep 0.002 s does not divide the 30 Hz tick"):
        get_env(str(path))
    (tmp_path / "a" / "scene.xml").write_text((tmp_path / "a" / "scene.xml").read_text()
                                              .replace('timestep="0.002"', 'timestep="0.0020833333333333333"'))
    spec = get_env(str(path))
    env = spec.create(render_size=16)
    try:
        assert np.isclose(env.model.opt.timestep, 1 / 480) and env.model.opt.noslip_iterations == 3 and env._substeps == 16
        assert env.model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    finally:
        env.close()
    assert env_record(str(path))["physics"] == {"mode": "scene", "overridden": {}}


def envfile_text(**extra) -> str:
    from tests.engine.nexus_fixture import ENV as NEXUS

    return NEXUS + "".join(f"{k}: {v}\n" for k, v in extra.items())


def test_fontaines_names_are_its_own_so_a_scene_may_use_floor_walls_and_room(tmp_path):
    scene_xml = SCENE.replace('<light name="top"', '<geom name="wall_px" type="box" size="0.01 0.4 0.05" pos="0.66 0 0.05"/>\n'
                              '    <body name="room"><geom name="floor" type="box" size="0.1 0.1 0.01" pos="0 0.7 -0.01"/></body>\n'
                              '    <light name="top"')
    spec = get_env(str(write_env(tmp_path / "lab", scene=scene_xml)))
    env = spec.create(render_size=16)
    try:
        names = {env.model.geom(g).name for g in range(env.model.ngeom)}
        assert {"wall_px", "floor", scene.ROOM_PREFIX + "floor", scene.ROOM_PREFIX + "wall_px"} <= names
        assert env.reset(0) == 0
    finally:
        env.close()


def test_the_objects_origin_may_be_anywhere(tmp_path):
    """The block's mesh shifted so its origin is 2 cm above and 1 cm beside its base: the reset still
    rests it on the table, the rows read its base, and the oracle still places it."""
    from tests.engine.env_file_fixture import write_stl

    path = write_env(tmp_path / "lab")
    write_stl(tmp_path / "lab" / "meshes" / "block.stl", offset=(0.01, 0.0, -0.02))
    spec = get_env(str(path))
    env = spec.create(render_size=16)
    oracle = ScriptedOracle()
    try:
        row = run_episode(env, 0, 12.0, lambda obs: oracle.predict_batch([obs])[0], chunk_horizon=oracle.chunk_horizon,
                          needs_images=False, needs_privileged=True)
        assert row["reset_strikes"] == 0 and row["success"] and row["grasped_lifted"] and abs(row["object_z_mm"] - 2.0) < 1.0
        assert abs(env.object_pos()[2] - (0.002 + 0.02)) < 1e-3  # the origin stays 2 cm above the base it rests on
    finally:
        env.close()


def _refused(tmp_path, capsys, env_text=ENV, scene_xml=SCENE) -> list[str]:
    path = write_env(tmp_path / "bad", env_text, scene_xml)
    assert main(["--policy", "hold", "--env", str(path), "--num-seeds", "1", "--run-dir", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"fontaine-eval: error: env file {path} cannot be used")
    return [line.strip() for line in err[1:]]


@pytest.mark.parametrize("env_text, scene_xml, needle", [
    (ENV, SCENE.replace('<body name="pad" mocap="true"', '<body name="pad"').replace(
        '<geom name="pad"', '<joint name="slide" type="slide"/><geom name="pad"'), "target body 'pad' has a joint"),
    (ENV, SCENE.replace('mass="0.015"', 'mass="0.015" contype="0" conaffinity="0"'),
     "object body 'block' has no geom that collides"),
    (ENV.replace("  target_radius_m: [0.12, 0.24]\n", "  target_radius_m: [0.12, 0.70]\n"), SCENE,
     "reset.target: the region reaches"),
    (ENV, SCENE.replace('<geom name="table" type="box" size="0.45 0.40 0.01" pos="0.20 0 -0.01" rgba="0.6 0.5 0.4 1"/>',
                        ""), "reset: no valid reset in 21 draws (last: the object not resting where it was put"),
    (ENV.replace("front: top_cam", "front: {pos: [0.5, 0, 0.4], look_at: [0.5, 0, 0.4], fovy: 50}"), SCENE,
     "cameras.front: pos and look_at are the same point"),
    (ENV.replace("  still_speed_m_s: 0.01\n", "  still_speed_m_s: 0.01\n  robot_still_rad_s: 0.2\n"), SCENE,
     "success.robot_still_rad_s: not used by success.test"),
], ids=["target-joint", "object-no-collision", "region-off-table", "nothing-holds-it", "camera-nowhere",
        "tolerance-unused"])
def test_a_scene_that_cannot_work_is_refused_in_one_line(tmp_path, capsys, env_text, scene_xml, needle):
    (line,) = _refused(tmp_path, capsys, env_text, scene_xml)
    assert needle in line, line
    assert line.startswith(str(tmp_path / "bad"))


def test_object_env_readings_for_an_object_resting_on_a_side():
    """A cube with its origin at its centre, tipped onto a side: its base is the face down, its face
    cosine 1 (any face), its upright cosine 0."""
    spec = mujoco.MjSpec()
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[1, 1, 0.1])
    cube = spec.worldbody.add_body(name="cube", pos=[0.3, 0.0, 0.02])
    cube.add_freejoint()
    cube.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02, 0.02, 0.02])
    target = spec.worldbody.add_body(name="t", mocap=True)
    target.add_geom(name="pad_a", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], pos=[1, 1, 1])
    target.add_geom(name="pad_b", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], pos=[1, -1, 1])
    for j in scene.JOINT_NAMES:
        arm = spec.worldbody.add_body(name=f"link_{j}", pos=[-1, 0, 0.5])
        arm.add_joint(name=j, type=mujoco.mjtJoint.mjJNT_HINGE)
        arm.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], mass=0.1)
    model = spec.compile()
    from engine.sim.geometry import rest_box

    env = ObjectEnv(model, render_size=16, cameras={}, obj_joint=0, is_obj=model.geom_bodyid == model.body("cube").id,
                    is_arm=np.zeros(model.ngeom, bool), jaw_geoms=("pad_a", "pad_b"), target_body="t",
                    rest_box=rest_box(model, model.body("cube").id))
    side = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])  # 90 deg about x
    env.place_object([0.3, 0.1], side, 0.0)
    r = env.reading()
    assert np.allclose(r.pos, [0.3, 0.1, 0.0], atol=1e-9) and abs(r.upright_cos) < 1e-9 and np.isclose(r.face_cos, 1.0)
    assert np.allclose(env.object_pos(), [0.3, 0.1, 0.02])
    env.close()


def test_docs_envs_md_shows_the_nexus_env_file_the_tests_load():
    import re

    from tests.engine.nexus_fixture import ENV as NEXUS
    from tests.helpers import REPO

    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "envs.md").read_text(), re.S)
    assert NEXUS in blocks
