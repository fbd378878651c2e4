"""The floor and walls around the table: a knocked-off boat lands, and every distance is bounded."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.envs import get_env
from engine.sim import scene
from engine.sim.env import HOME_RAD, BoatEnv
from prereg.rundir.outcomes import OFF_TABLE, episode_outcome

BOUNDS = get_env("boat-on-disk").bounds


@pytest.fixture(scope="module")
def env():
    e = BoatEnv()
    yield e
    e.close()


def hold_home(env: BoatEnv, ticks: int) -> None:
    for _ in range(ticks):
        env.step_tick(HOME_RAD)


@pytest.mark.parametrize("pos, linvel", [
    ([0.62, 0.30, 0.0], [1.5, 0.8, 0.3]),  # pushed off the table's corner
    ([0.30, -0.38, 0.02], [0.0, -2.0, 0.0]),  # knocked off its side
], ids=["corner", "side"])
def test_a_boat_knocked_off_the_table_lands_on_the_floor(env, pos, linvel):
    env.reset(10)
    env.place_boat(pos, linvel=linvel, restart_metrics=False)
    hold_home(env, 150)  # 5 s: a 0.75 m fall takes 0.4 s
    boat = env.boat_pos()
    assert BOUNDS.contains(boat), boat
    assert abs(boat[2] - scene.FLOOR_Z) < 0.02  # on the floor (upright or on its side), not falling
    assert env.boat_reading().speed_m_s < 0.05
    row = env.row()
    assert math.isfinite(row["progress_final_cm"]) and row["knock_away"]
    assert abs(row["progress_final_cm"]) <= BOUNDS.max_distance_m() * 100
    assert row["dist_final_cm"] <= BOUNDS.max_distance_m() * 100
    assert row["grasped_lifted"] is False
    assert row["off_table"] is True and episode_outcome({**row, "status": "ok"}) == OFF_TABLE


def test_a_boat_flung_hard_is_stopped_by_the_walls(env):
    env.reset(3)
    env.place_boat([0.6, 0.0, 0.05], linvel=[12.0, 3.0, 1.0], restart_metrics=False)
    hold_home(env, 240)
    boat = env.boat_pos()
    assert BOUNDS.contains(boat) and boat[2] > scene.FLOOR_Z - 0.01, boat
    assert abs(env.row()["progress_final_cm"]) <= BOUNDS.max_distance_m() * 100


def test_the_floor_is_below_the_table_and_the_bounds_hold_the_table(env):
    floor = env.model.geom(scene.ROOM_PREFIX + "floor")
    assert floor.type[0] == scene.mujoco.mjtGeom.mjGEOM_PLANE
    assert np.isclose(env.data.geom_xpos[floor.id][2], scene.FLOOR_Z)
    tx0, tx1, ty0, ty1 = BOUNDS.table_xy_m
    rx0, rx1, ry0, ry1 = BOUNDS.room_xy_m
    assert rx0 < tx0 < tx1 < rx1 and ry0 < ty0 < ty1 < ry1
    assert BOUNDS.floor_z_m < BOUNDS.table_top_z_m
    assert 1.0 < BOUNDS.max_distance_m() < 5.0


def test_the_policy_cameras_do_not_draw_the_floor_but_videos_do(env):
    """The floor is in a geom group the policy's cameras leave out (their images are the ones
    the scene had before the floor); the video frame draws it, so a fallen boat shows."""
    pytest.importorskip("mujoco")
    env.reset(0)
    assert env.model.geom(scene.ROOM_PREFIX + "floor").group[0] == scene.ROOM_GEOM_GROUP > 2
    try:
        policy = env.render("front")
    except Exception as exc:  # noqa: BLE001 - no GL on this machine
        pytest.skip(f"no offscreen GL: {exc}")
    film = env.film()
    assert film.shape[1] == 2 * policy.shape[1]
    assert not np.array_equal(film[:, : policy.shape[1]], policy)  # the floor shows past the table's edge


def _lowest_during_fall(env, pos, linvel, ticks: int = 45) -> float:
    """The lowest any point of the object reaches, substep by substep, dropped from `pos` at `linvel`."""
    from engine.sim.geometry import colliding_geoms, lowest_z

    env.reset(3)
    obj = colliding_geoms(env.model, env.model.body(env.model.geom_bodyid[np.flatnonzero(env._is_obj)[0]]).id)
    q = np.array([0.92, 0.38, 0.1, 0.0])  # landing on an edge: the deepest dip
    env.data.qpos[env._obj_qpos:env._obj_qpos + 3] = pos
    env.data.qpos[env._obj_qpos + 3:env._obj_qpos + 7] = q / np.linalg.norm(q)
    env.data.qvel[env._obj_qvel:env._obj_qvel + 3] = linvel
    scene.mujoco.mj_forward(env.model, env.data)
    lowest = np.inf
    for _ in range(ticks * env._substeps):
        env.data.ctrl[:6] = HOME_RAD
        scene.mujoco.mj_step(env.model, env.data)
        lowest = min(lowest, lowest_z(env.model, env.data, obj))
    return lowest


@pytest.mark.parametrize("which", ["boat-on-disk", "lab"])
def test_a_5_m_s_fall_neither_tunnels_the_table_nor_dips_below_the_floor(env, tmp_path, which):
    """Supports take Fontaine's impact settings (a stiff contact that wins over the object's): with
    MuJoCo's defaults a boat dropped at 5 m/s sank 38 mm, through the 20 mm table, and 3.5 cm into the
    floor; now under 1 cm (7 mm, edge first). The lab's own table (an env file) gets the same."""
    if which == "lab":
        from tests.engine.env_file_fixture import write_env

        spec = get_env(str(write_env(tmp_path / "lab")))
        e = spec.create(render_size=16)
    else:
        spec, e = get_env(which), env
    try:
        top, floor = spec.bounds.table_top_z_m, spec.bounds.floor_z_m
        assert _lowest_during_fall(e, [0.30, 0.10, 0.06], [0.0, 0.0, -5.0]) > top - 0.01  # the table is 20 mm thick
        assert e.object_pos()[2] > top - 0.001  # and it rests on it
        assert _lowest_during_fall(e, [0.30, 0.60, floor + 0.06], [0.0, 0.0, -5.0]) > floor - 0.01  # BoundsSpec.contains
    finally:
        if e is not env:
            e.close()
