"""Scenes compiled once and handed to the workers as MJB (engine/sim/handoff.py, issue 26): a model
loaded from the MJB gives bit-identical rows, readings and images to one compiled in-process, for
each built-in env and an env file; a worker started by the pool loads what it was handed, imports
no torch, and writes the row an in-process episode writes."""

from __future__ import annotations

import time

import numpy as np
import pytest

from engine.envs import compiled_scenes, get_env
from engine.policies.factory import PolicySpec, make_policy
from engine.sim import handoff, scene
from engine.workers.episode import run_episode
from tests.engine.env_file_fixture import write_env

TIMING = ("wall_s", "started_at", "finished_at")


@pytest.fixture(autouse=True)
def _no_handoff_left():
    handoff.reset()
    yield
    handoff.reset()


def _episode(env_name: str, seed: int, seconds: float):
    """Row, per-tick readings and the last frame of one scripted episode in a fresh env."""
    env = get_env(env_name).create(render_size=64)
    policy = make_policy(PolicySpec(kind="scripted"))
    readings = []
    step = env.step_tick

    def step_and_read(targets):
        step(targets)
        r = env.reading()
        readings.append((r.pos.tobytes(), r.upright_cos, r.speed_m_s, r.touching_arm, r.held,
                         env.state_rad().tobytes(), env.data.qvel.tobytes()))

    env.step_tick = step_and_read
    row = run_episode(env, seed, seconds, lambda obs: policy.predict_batch([obs])[0],
                      chunk_horizon=policy.chunk_horizon, needs_images=False, needs_privileged=True)
    frame = env.film()
    models = (env.model, policy.kinematics.model)
    env.close()
    return {k: v for k, v in row.items() if k not in TIMING}, readings, frame, models


def _handed(tmp_path, env_name: str):
    """Install the scenes a pool would hand over for `env_name` with a scripted oracle, as MJB."""
    scenes = compiled_scenes(env_name)
    scenes.setdefault(scene.SCENE_KEY, scene.compiled_model())
    export = handoff.Export()
    for key, model in scenes.items():
        export.add(key, model)
    handoff.install(export.names())
    return export


@pytest.mark.parametrize("env_name,seed", [("boat-on-disk", 3), ("pick-lift", 1), ("file", 2)])
def test_a_scene_loaded_from_mjb_gives_the_rows_readings_and_images_of_one_compiled_here(tmp_path, env_name, seed):
    if env_name == "file":
        env_name = str(write_env(tmp_path / "lab"))
    compiled = _episode(env_name, seed, 8.0)
    export = _handed(tmp_path, env_name)
    try:
        loaded = _episode(env_name, seed, 8.0)
        assert sorted(handoff.report()["loaded"]) == sorted(export.names()) and not handoff.report()["failed"]
    finally:
        export.close()
    env_model, oracle_model = loaded[3]
    assert handoff.is_handed(env_model) and handoff.is_handed(oracle_model)  # not compiled: loaded
    assert not handoff.is_handed(compiled[3][0])
    assert loaded[0] == compiled[0]
    assert len(loaded[1]) == len(compiled[1]) > 100 and loaded[1] == compiled[1]
    assert np.array_equal(loaded[2], compiled[2])


def test_a_handed_scene_that_cannot_be_loaded_is_compiled_by_the_worker(tmp_path):
    handoff.install({scene.SCENE_KEY: str(tmp_path / "missing.mjb")})
    model = scene.build_model()
    assert model.nbody > 0 and not handoff.is_handed(model)
    report = handoff.report()
    assert report["loaded"] == [] and scene.SCENE_KEY in report["failed"]


def test_a_pool_worker_loads_the_handed_scene_imports_no_torch_and_writes_the_in_process_row(tmp_path):
    from engine.record.config import RunConfig
    from engine.workers.pool import LocalPool

    cfg = RunConfig(run_id="t", arm="scripted", policy=PolicySpec(kind="scripted"), seeds=[5], episode_seconds=4.0,
                    workers=1, video_draw="none")
    pool = LocalPool(cfg, tmp_path, None, 1, log=lambda _m: None)
    try:
        assert list(pool.scenes) == [scene.SCENE_KEY]
        deadline = time.monotonic() + 120
        while not all(w.ready for w in pool.workers.values()) and time.monotonic() < deadline:
            pool.poll(0.05)
        (w,) = pool.workers.values()
        assert w.info is not None and w.info.scenes == (scene.SCENE_KEY,) and w.info.heavy == ()
        pool.submit(5)
        rows = []
        while not rows and time.monotonic() < deadline:
            rows = pool.poll(0.1)
    finally:
        pool.close()
    (done,) = rows
    row = done.as_dict()
    assert row["status"] == "ok", row
    here, _, _, _ = _episode("boat-on-disk", 5, 4.0)
    assert {k: row[k] for k in here} == here
