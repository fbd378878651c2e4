"""Registered visual variants of a scene (issue 48): what a variant overrides, its hash, and its scene
compiled once per process.

A variant is a named set of overrides of the scene as the policy sees it (SimplerEnv's visual variant
aggregation): the lights (direction, intensity), geoms' colours (the table's, the floor's), static
distractor objects (boxes and cylinders at a pose) and camera position offsets. It is applied to the
env's MjSpec, which is then compiled; `compiled` keeps one model per (scene, variant) in the process,
so a worker pays a variant's compile once, not once an episode. The declaration (engine/envs/variants.py
reads it from an env file) is frozen: `sha256` covers its canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass

import mujoco
import numpy as np

from prereg.rundir.rows import BASE_VARIANT

BASE = BASE_VARIANT  # the scene as declared: the variant every crossed design runs first
DISTRACTOR_SHAPES = ("box", "cylinder")
DISTRACTOR_PREFIX = "fontaine/distractor/"  # a distractor's geom name (engine.sim.scene.ROOM_PREFIX + ...)


@dataclass(frozen=True)
class Lighting:
    direction: tuple[float, float, float] | None = None  # each light's direction (normalised); None: as declared
    intensity: float | None = None  # each light's diffuse level, the same in r, g, b; None: as declared
    lights: tuple[str, ...] = ()  # the lights changed; () = every light of the scene


@dataclass(frozen=True)
class Distractor:
    shape: str  # DISTRACTOR_SHAPES
    size: tuple[float, ...]  # MuJoCo's: a box's three half-sizes, a cylinder's radius and half-height
    pos: tuple[float, float, float]
    yaw_deg: float = 0.0
    rgba: tuple[float, float, float, float] = (0.5, 0.5, 0.5, 1.0)  # seen, never touched: it collides with nothing


@dataclass(frozen=True)
class Variant:
    name: str
    lighting: Lighting | None = None
    colors: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()  # (geom, rgba): its material replaced
    distractors: tuple[Distractor, ...] = ()
    camera_offsets: tuple[tuple[str, tuple[float, float, float]], ...] = ()  # (scene camera, metres added to pos)

    @property
    def moves_a_camera(self) -> bool:
        """A camera-pose variant: read apart, not pooled, unless the plan pools it (prereg/stats/variants.py)."""
        return bool(self.camera_offsets)

    def canonical(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()


def apply(spec: mujoco.MjSpec, variant: Variant) -> mujoco.MjSpec:
    """`spec` edited in place as `variant` says (the names were checked against the scene when the
    env file was read: engine/envs/variants.py); returned for chaining."""
    if variant.lighting is not None:
        lit = variant.lighting
        for light in spec.lights:
            if lit.lights and light.name not in lit.lights:
                continue
            if lit.direction is not None:
                d = np.asarray(lit.direction, dtype=float)
                light.dir = d / np.linalg.norm(d)
            if lit.intensity is not None:
                light.diffuse = [lit.intensity] * 3
    for geom, rgba in variant.colors:
        g = spec.geom(geom)
        g.material = ""  # a material's colour would win over the geom's
        g.rgba = list(rgba)
    for i, d in enumerate(variant.distractors):
        g = spec.worldbody.add_geom()
        g.name = f"{DISTRACTOR_PREFIX}{i}"
        g.type = mujoco.mjtGeom.mjGEOM_BOX if d.shape == "box" else mujoco.mjtGeom.mjGEOM_CYLINDER
        g.size = list(d.size) + [0.0] * (3 - len(d.size))
        g.pos = list(d.pos)
        half = math.radians(d.yaw_deg) / 2
        g.quat = [math.cos(half), 0.0, 0.0, math.sin(half)]
        g.rgba = list(d.rgba)
        g.contype = g.conaffinity = 0  # the reset's draws and the arm pass through it: only the images change
    for camera, offset in variant.camera_offsets:
        cam = spec.camera(camera)
        cam.pos = list(np.asarray(cam.pos, dtype=float) + np.asarray(offset, dtype=float))
    return spec


_COMPILED: dict = {}
COMPILES = {"count": 0}  # compiles done in this process (tests and benchmarks/bench_variants.py read it)


def compiled(scene_key: str, variant: Variant, build_spec) -> mujoco.MjModel:
    """The variant's scene, compiled the first time this process asks for it (`build_spec()` -> the
    env's MjSpec) and kept: one compile per (scene, variant) per worker. The caller copies it before
    stepping it (engine/envs/place_scene.py does)."""
    key = (scene_key, variant.sha256())
    if key not in _COMPILED:
        _COMPILED[key] = apply(build_spec(), variant).compile()
        COMPILES["count"] += 1
    return _COMPILED[key]
