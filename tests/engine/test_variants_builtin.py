"""Registered visual variants on every env (issue 48): declared inline in a plan or in an env file, read by one
reader, checked against the compiled scene, applied to the built-ins (boat-on-disk, pick-lift), env files and
entry-point envs; what the policy sees changes where the variant says, the physics does not, and each
(scene, variant) compiles once per process."""

from __future__ import annotations

import dataclasses
import importlib.metadata

import numpy as np
import pytest

from engine.envs import EnvError, get_env, registry
from engine.envs.variant_env import create_env, resolve_variants
from engine.policies.scripted import ScriptedOracle
from engine.sim import variants as sim_variants
from engine.workers.episode import run_episode
from prereg.rundir.rows import complete_row
from tests.engine.env_file_fixture import ENV, write_env
from tests.helpers import stable

INLINE = {
    "dim-light": {"lighting": {"direction": [0.3, 0.0, -1.0], "intensity": 0.3}},
    "dark-table": {"colors": {"table": [0.2, 0.2, 0.22, 1.0]}},
    "clutter": {"distractors": [{"shape": "box", "size": [0.03, 0.03, 0.04], "pos": [0.30, 0.0, 0.04],
                                 "rgba": [0.9, 0.1, 0.1, 1.0]}]},
    "camera-left": {"camera_offsets": {"front": [0.0, 0.04, 0.0]}},
}
SIZE = 64


@pytest.fixture(scope="module")
def lift():
    """pick-lift's base and each inline variant, one running env each."""
    variants = resolve_variants("pick-lift", list(INLINE), INLINE)
    envs = {"base": create_env("pick-lift", None, SIZE), **{v.name: create_env("pick-lift", v, SIZE) for v in variants}}
    yield envs
    for e in envs.values():
        e.close()


def test_inline_variants_on_a_builtin_are_read_in_the_plans_order_with_their_hashes():
    got = resolve_variants("boat-on-disk", ["camera-left", "dim-light"], {k: INLINE[k] for k in ("dim-light", "camera-left")})
    assert [v.name for v in got] == ["camera-left", "dim-light"]
    assert got[0].moves_a_camera and not got[1].moves_a_camera
    assert got[0].camera_offsets == (("front", (0.0, 0.04, 0.0)),)  # the policy's input -> boat-on-disk's camera
    assert resolve_variants("boat-on-disk", [], {}) == ()


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where two frames differ by more than a few levels in some channel."""
    return np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 8


def _geom_pixels(env, camera: str, geom: str) -> np.ndarray:
    """Where `geom` is drawn in the camera's view (MuJoCo's segmentation rendering)."""
    import mujoco

    seg = env._render(env._renderer, camera, segment=True)
    return (seg[..., 0] == env.model.geom(geom).id) & (seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM))


def test_what_the_policy_sees_changes_where_the_variant_says(lift):
    for env in lift.values():
        env.reset(5)
    front = {name: env.policy_images()["front"] for name, env in lift.items()}
    wrist = {name: env.policy_images()["wrist"] for name, env in lift.items()}
    assert _changed(front["dim-light"], front["base"]).mean() > 0.5  # the light falls on everything in view
    table = _geom_pixels(lift["base"], "front", "table")
    assert 0.2 < table.mean() < 0.95
    assert np.array_equal(_changed(front["dark-table"], front["base"]), table)  # the table's pixels, and only they
    box = _geom_pixels(lift["clutter"], "front", sim_variants.DISTRACTOR_PREFIX + "0")
    appeared = _changed(front["clutter"], front["base"])
    assert box.sum() >= 20 and appeared.sum() >= 0.9 * box.sum()  # the box is in view and seen ...
    assert not appeared[~box].any()  # ... and nothing else changed
    assert _changed(front["camera-left"], front["base"]).mean() > 0.05  # the view moved ...
    assert np.array_equal(wrist["camera-left"], wrist["base"])  # ... only the front camera's
    m = {name: env.model for name, env in lift.items()}
    assert np.allclose(m["camera-left"].cam("front").pos, m["base"].cam("front").pos + [0.0, 0.04, 0.0])


def test_the_physics_is_the_scenes_same_seed_same_row(lift):
    """Lighting, colours and distractors change only images: the scripted oracle's episode on each gives the
    base's row, field for field (a distractor collides with nothing)."""
    oracle = ScriptedOracle()

    def row(env):
        r = run_episode(env, 2, 8.0, lambda obs: oracle.predict_batch([obs])[0], chunk_horizon=oracle.chunk_horizon,
                        needs_images=False, needs_privileged=True)
        return stable(complete_row({**r, "status": "ok"}))

    base = row(lift["base"])
    assert base["success"] is True  # a rollout that grasps and lifts: contacts on every link are exercised
    for name in ("dim-light", "dark-table", "clutter"):
        assert row(lift[name]) == base, name
    clutter = lift["clutter"].model
    box = clutter.geom(sim_variants.DISTRACTOR_PREFIX + "0")
    assert box.contype[0] == 0 and box.conaffinity[0] == 0
    (v,) = resolve_variants("boat-on-disk", ["clutter"], {"clutter": INLINE["clutter"]})  # the boat's scene too
    boat, boat_clutter = create_env("boat-on-disk", None, 16), create_env("boat-on-disk", v, 16)
    try:
        assert boat_clutter.model.ngeom == boat.model.ngeom + 1 and row(boat_clutter) == row(boat)
    finally:
        boat.close()
        boat_clutter.close()


def test_a_variant_compiles_once_per_process_and_every_env_copies_it():
    own = {"colors": {"table": [0.21, 0.2, 0.22, 1.0]}}  # a declaration no other test compiles
    (v,) = resolve_variants("boat-on-disk", ["dark-table"], {"dark-table": own})
    before = sim_variants.COMPILES["count"]
    a = create_env("boat-on-disk", v, 16)
    after_first = sim_variants.COMPILES["count"]
    b = create_env("boat-on-disk", v, 16)
    try:
        assert after_first - before == 1 and sim_variants.COMPILES["count"] == after_first
        assert a.model is not b.model  # each env steps its own copy
        table = a.model.geom("table").id
        assert np.allclose(a.model.geom_rgba[table], [0.21, 0.2, 0.22, 1.0])
        again = create_env("boat-on-disk", dataclasses.replace(v), 16)  # an equal declaration: the same compile
        again.close()
        assert sim_variants.COMPILES["count"] == after_first
    finally:
        a.close()
        b.close()


def test_an_env_files_variants_and_inline_ones_run_side_by_side(tmp_path):
    lab = write_env(tmp_path / "lab", ENV + "variants:\n  dark-table:\n    colors: {table: [0.2, 0.2, 0.2, 1.0]}\n")
    got = resolve_variants(str(lab), ["dark-table", "dim-light"], {"dim-light": INLINE["dim-light"]})
    assert [v.name for v in got] == ["dark-table", "dim-light"]
    env = create_env(str(lab), got[1], 16)
    try:
        assert np.allclose(env.model.light_diffuse[0], [0.3] * 3)
    finally:
        env.close()
    with pytest.raises(EnvError) as exc:
        resolve_variants(str(lab), ["dark-table"], {"dark-table": INLINE["dark-table"]})
    text = str(exc.value)
    assert "declared both inline in the plan's protocol" in text and str(lab) in text


@pytest.mark.parametrize("names, declarations, says", [
    (["fog"], {}, "'fog': not declared inline in the plan's protocol's variants, and env 'boat-on-disk' declares no variants"),
    (["a", "a"], {"a": {"colors": {"table": [0, 0, 0, 1]}}}, "'a': listed 2 times"),
    (["base"], {}, "the scene as declared always runs"),
    (["a"], {"a": {"colors": {"tabel": [0, 0, 0, 1]}}}, "the plan's protocol: variants.a.colors: no geom 'tabel' in the scene"),
    (["a"], {"a": {"lighting": {"intensity": 3}}}, "the plan's protocol: variants.a.lighting.intensity: 3 is not a number in [0, 2]"),
    (["a"], {"a": {"lighting": {"intensity": 1, "lights": ["sun"]}}}, "no light 'sun' in the scene (lights: top)"),
    (["a"], {"a": {"camera_offsets": {"side": [0, 0, 0]}}}, "variants.a.camera_offsets.side: not a policy input"),
    (["a"], {"a": {"texture": 1}}, "variants.a.texture: not a variant field"),
    ([], {"a": {"colors": {"table": [0, 0, 0, 1]}}}, "'a': declared inline in the plan's protocol but not among the variants run"),
])
def test_a_bad_variant_says_what_and_where(names, declarations, says):
    with pytest.raises(EnvError) as exc:
        resolve_variants("boat-on-disk", names, declarations)
    assert says in str(exc.value)


def test_a_gymnasium_env_refuses_variants_in_one_line():
    for call in (lambda: resolve_variants("gym:MuJoCoPickLift-v1", ["a"], {"a": INLINE["dim-light"]}),
                 lambda: create_env("gym:MuJoCoPickLift-v1", sim_variants.Variant("a"), 16)):
        with pytest.raises(EnvError, match="a Gymnasium env builds its own model") as exc:
            call()
        assert "\n" not in str(exc.value)


LAB_MODULE = '''
import dataclasses
from engine.envs import pick_lift


def with_model():
    return dataclasses.replace(pick_lift.spec(), name="lab-lift")


def _make(spec, render_size=224):
    return pick_lift.PickLiftEnv(render_size=render_size)


def without_model():
    return dataclasses.replace(pick_lift.spec(), name="lab-old", make=_make)
'''


def test_an_entry_point_env_runs_variants_when_its_make_takes_a_model(tmp_path, monkeypatch):
    (tmp_path / "lab_variant_envs.py").write_text(LAB_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [importlib.metadata.EntryPoint(name=n, value=f"lab_variant_envs:{f}", group=registry.ENTRY_POINT_GROUP)
           for n, f in (("lab-lift", "with_model"), ("lab-old", "without_model"))]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    (v,) = resolve_variants("lab-lift", ["dark-table"], {"dark-table": INLINE["dark-table"]})
    env = create_env("lab-lift", v, 16)
    try:
        assert np.allclose(env.model.geom_rgba[env.model.geom("table").id], [0.2, 0.2, 0.22, 1.0])
    finally:
        env.close()
    assert get_env("lab-old").takes_model() is False
    with pytest.raises(EnvError, match="env lab-old: its make\\(\\) takes no compiled model"):
        resolve_variants("lab-old", ["dark-table"], {"dark-table": INLINE["dark-table"]})
