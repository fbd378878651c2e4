"""Registered visual variants (issue 48): declared in an env file, hashed with it and each on its own,
checked against the scene, applied to the MjSpec as declared, compiled once per process."""

from __future__ import annotations

import numpy as np
import pytest

from engine.envs import EnvFileError, env_sha256, get_env
from engine.envs import variants as decl_variants
from engine.envs.envfile import read_declaration
from engine.envs.variant_env import make_variant_env, variant_of
from engine.sim import variants as sim_variants
from tests.engine.env_file_fixture import ENV, write_env

VARIANTS = """variants:
  dim-light:
    lighting: {direction: [0.3, 0.0, -1.0], intensity: 0.35}
  dark-table:
    colors: {table: [0.2, 0.2, 0.22, 1.0]}
  clutter:
    distractors:
      - {shape: box, size: [0.02, 0.02, 0.03], pos: [0.35, -0.20, 0.03], yaw_deg: 90, rgba: [0.8, 0.1, 0.1, 1]}
      - {shape: cylinder, size: [0.015, 0.04], pos: [0.30, 0.25, 0.04]}
  camera-left:
    camera_offsets: {front: [0.0, 0.02, 0.0]}
"""


@pytest.fixture
def lab(tmp_path):
    return write_env(tmp_path / "lab", ENV + VARIANTS)


def test_the_variants_are_read_in_file_order_and_each_has_its_own_hash(lab):
    decl = read_declaration(lab)
    assert [v.name for v in decl.variants] == ["dim-light", "dark-table", "clutter", "camera-left"]
    assert [v.moves_a_camera for v in decl.variants] == [False, False, False, True]
    assert len({v.sha256() for v in decl.variants}) == 4
    assert decl_variants.SHAPES == sim_variants.DISTRACTOR_SHAPES


def test_a_variant_edited_is_a_different_env_and_a_different_variant(lab, tmp_path):
    digest = env_sha256(str(lab))
    other = write_env(tmp_path / "other", ENV + VARIANTS.replace("intensity: 0.35", "intensity: 0.4"))
    assert env_sha256(str(other)) != digest
    a, b = read_declaration(lab).variants[0], read_declaration(other).variants[0]
    assert a.sha256() != b.sha256() and a.name == b.name


def test_each_variant_changes_the_compiled_scene_as_declared_and_nothing_else(lab):
    decl = read_declaration(lab)
    get_env(str(lab))  # checks the names against the scene
    base = make_variant_env(decl, sim_variants.BASE, render_size=16)
    envs = {v.name: make_variant_env(decl, v.name, render_size=16) for v in decl.variants}
    try:
        bm = base.model
        dim = envs["dim-light"].model
        assert np.allclose(dim.light_dir[0], np.array([0.3, 0.0, -1.0]) / np.linalg.norm([0.3, 0.0, -1.0]))
        assert np.allclose(dim.light_diffuse[0], [0.35] * 3)
        table = bm.geom("table").id
        assert np.allclose(envs["dark-table"].model.geom_rgba[table], [0.2, 0.2, 0.22, 1.0])
        clutter = envs["clutter"].model
        assert clutter.ngeom == bm.ngeom + 2
        box = clutter.geom(sim_variants.DISTRACTOR_PREFIX + "0")
        assert np.allclose(box.size, [0.02, 0.02, 0.03]) and np.allclose(box.pos, [0.35, -0.20, 0.03])
        assert np.allclose(box.quat, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
        assert box.contype[0] == 0 and box.conaffinity[0] == 0  # seen, never touched
        cam = decl.cameras["front"]
        assert np.allclose(envs["camera-left"].model.cam(cam).pos, bm.cam(cam).pos + [0.0, 0.02, 0.0])
        for name in ("dim-light", "dark-table", "camera-left"):  # the physics is the scene's
            m = envs[name].model
            assert m.ngeom == bm.ngeom and m.nbody == bm.nbody and m.opt.timestep == bm.opt.timestep
        # the same seed draws the same scene on every variant: a crossed design
        starts = {name: (env.reset(3), env.object_pos().round(6).tolist()) for name, env in
                  [("base", base), *envs.items()]}
        assert len({str(v) for v in starts.values()}) == 1
        frames = {name: env.render(env.cameras["front"]) for name, env in [("base", base), *envs.items()]}
        for name in envs:
            assert not np.array_equal(frames[name], frames["base"]), name  # each variant is seen
    finally:
        for env in [base, *envs.values()]:
            env.close()


def test_a_variants_scene_is_compiled_once_per_process(lab):
    decl = read_declaration(lab)
    before = sim_variants.COMPILES["count"]
    envs = [make_variant_env(decl, "clutter", render_size=16) for _ in range(3)]
    try:
        assert sim_variants.COMPILES["count"] - before <= 1
        assert envs[0].model is not envs[1].model  # each env steps its own copy
    finally:
        for env in envs:
            env.close()
    with pytest.raises(KeyError, match="variants: base, dim-light"):
        variant_of(decl, "foggy")


@pytest.mark.parametrize("block, says", [
    ("variants:\n  base:\n    colors: {table: [0, 0, 0, 1]}\n", "is the scene itself"),
    ("variants:\n  v:\n    colors: {tabel: [0, 0, 0, 1]}\n", "variants.v.colors: no geom 'tabel'"),
    ("variants:\n  v:\n    lighting: {intensity: 0.5, lights: [sun]}\n", "no light 'sun' in the scene (lights: top)"),
    ("variants:\n  v:\n    lighting: {direction: [0, 0, 0]}\n", "points nowhere"),
    ("variants:\n  v:\n    distractors: [{shape: cone, size: [1], pos: [0, 0, 0]}]\n", "shape: box or cylinder"),
    ("variants:\n  v:\n    distractors: [{shape: cylinder, size: [0.01, 0.02, 0.03], pos: [0, 0, 0]}]\n",
     "is not 2 numbers"),
    ("variants:\n  v:\n    camera_offsets: {side: [0, 0, 0]}\n", "not a policy input"),
    ("variants:\n  v:\n    fog: 1\n", "not a variant field"),
])
def test_a_bad_variant_says_what_and_where(tmp_path, block, says):
    lab = write_env(tmp_path / "lab", ENV + block)
    with pytest.raises(EnvFileError) as err:
        get_env(str(lab))
    assert says in str(err.value) and str(lab) in str(err.value)
