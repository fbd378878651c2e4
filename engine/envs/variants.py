"""An env file's registered visual variants (issue 48): read, checked against the scene, and run.

```yaml
variants:                                   # each a name (lower-case, digits, '-'; not 'base')
  dim-light:
    lighting: {direction: [0.3, 0.0, -1.0], intensity: 0.35}   # optional: lights: [top] (default: all)
  dark-table:
    colors: {table: [0.2, 0.2, 0.22, 1.0]}  # geom -> rgba (its material replaced)
  clutter:
    distractors:                            # static, seen and never touched
      - {shape: box, size: [0.02, 0.02, 0.03], pos: [0.35, -0.20, 0.03], yaw_deg: 30, rgba: [0.8, 0.1, 0.1, 1]}
      - {shape: cylinder, size: [0.015, 0.04], pos: [0.30, 0.25, 0.04]}
  camera-left:
    camera_offsets: {front: [0.0, 0.02, 0.0]}   # policy input -> metres added to its camera's position
```

The variants are part of the YAML, so of the env's hash; each has its own sha256 too
(engine/sim/variants.py). The scene every run has is `base`; a crossed design runs every seed on
`base` and on each variant. A variant's scene is compiled once per process (engine/envs/variant_env.py).
"""

from __future__ import annotations

from engine.envs.declare import POLICY_INPUTS, _Reader
from prereg.rundir.rows import VARIANT_FIELDS as FIELDS
from prereg.rundir.rows import VARIANT_NAME_RE as NAME_RE

KEY = "variants"
LIGHTING_FIELDS = ("direction", "intensity", "lights")
DISTRACTOR_FIELDS = ("shape", "size", "pos", "yaw_deg", "rgba")
SHAPES = ("box", "cylinder")  # engine.sim.variants.DISTRACTOR_SHAPES (a test holds them equal)
SIZES = {"box": 3, "cylinder": 2}


def read_variants(r: _Reader, raw: dict, cameras: dict) -> tuple:
    """The declared variants as engine.sim.variants.Variant, in file order (() when none); problems go
    to `r`. `cameras`: the policy's input -> its scene camera (camera offsets name inputs)."""
    from engine.sim.variants import BASE, Distractor, Lighting, Variant

    given = raw.get(KEY)
    if given is None:
        return ()
    if not isinstance(given, dict) or not given:
        r.err((KEY,), "a mapping {variant name: {lighting, colors, distractors, camera_offsets}}")
        return ()
    out = []
    for name, v in given.items():
        at = (KEY, name)
        if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name == BASE:
            r.err(at, f"{name!r}: name a variant with lower-case letters, digits and '-' ({BASE!r} is the scene itself)")
            continue
        if not isinstance(v, dict) or not v:
            r.err(at, "a mapping with any of " + ", ".join(FIELDS))
            continue
        for k in v:
            if k not in FIELDS:
                r.err((*at, k), f"not a variant field (fields: {', '.join(FIELDS)})")
        out.append(Variant(name=name, lighting=_lighting(r, at, v.get("lighting"), Lighting),
                           colors=_colors(r, at, v.get("colors")),
                           distractors=_distractors(r, at, v.get("distractors"), Distractor),
                           camera_offsets=_offsets(r, at, v.get("camera_offsets"), cameras)))
    return tuple(out)


def _lighting(r, at, v, Lighting):
    if v is None:
        return None
    if not isinstance(v, dict) or not ({"direction", "intensity"} & set(v)):
        r.err((*at, "lighting"), "a mapping with direction: [x, y, z] and/or intensity: 0-2 (lights: [names] optional)")
        return None
    for k in v:
        if k not in LIGHTING_FIELDS:
            r.err((*at, "lighting", k), f"not a lighting field (fields: {', '.join(LIGHTING_FIELDS)})")
    direction = r.vector((*at, "lighting", "direction"), v["direction"], 3, -1e3, 1e3) if "direction" in v else None
    if direction is not None and not any(direction):
        r.err((*at, "lighting", "direction"), "[0, 0, 0] points nowhere")
    intensity = r.number((*at, "lighting", "intensity"), v["intensity"], 0.0, 2.0) if "intensity" in v else None
    lights = v.get("lights", [])
    if not (isinstance(lights, list) and all(isinstance(x, str) and x for x in lights)):
        r.err((*at, "lighting", "lights"), f"{lights!r} is not a list of the scene's light names")
        lights = []
    return Lighting(direction=tuple(direction) if direction else None, intensity=intensity, lights=tuple(lights))


def _colors(r, at, v) -> tuple:
    if v is None:
        return ()
    if not isinstance(v, dict):
        r.err((*at, "colors"), "a mapping {geom name: [r, g, b, a]}")
        return ()
    out = []
    for geom, rgba in v.items():
        got = r.vector((*at, "colors", geom), rgba, 4, 0.0, 1.0)
        if got is not None:
            out.append((str(geom), tuple(got)))
    return tuple(out)


def _distractors(r, at, v, Distractor) -> tuple:
    if v is None:
        return ()
    if not isinstance(v, list) or not v:
        r.err((*at, "distractors"), "a list of {shape: box|cylinder, size, pos, yaw_deg, rgba}")
        return ()
    out = []
    for i, d in enumerate(v):
        k = (*at, "distractors", i)
        if not isinstance(d, dict) or d.get("shape") not in SHAPES:
            r.err(k, f"{d!r}: each a mapping with shape: {' or '.join(SHAPES)}, size, pos")
            continue
        for f in d:
            if f not in DISTRACTOR_FIELDS:
                r.err((*k, f), f"not a distractor field (fields: {', '.join(DISTRACTOR_FIELDS)})")
        n = SIZES[d["shape"]]
        size = r.vector((*k, "size"), d.get("size"), n, 0.001, 1.0)
        pos = r.vector((*k, "pos"), d.get("pos"), 3, -5.0, 5.0)
        yaw = r.number((*k, "yaw_deg"), d.get("yaw_deg", 0.0), -360.0, 360.0)
        rgba = r.vector((*k, "rgba"), d.get("rgba", [0.5, 0.5, 0.5, 1.0]), 4, 0.0, 1.0)
        if None not in (size, pos, yaw, rgba):
            out.append(Distractor(shape=d["shape"], size=tuple(size), pos=tuple(pos), yaw_deg=yaw, rgba=tuple(rgba)))
    return tuple(out)


def _offsets(r, at, v, cameras: dict) -> tuple:
    if v is None:
        return ()
    if not isinstance(v, dict):
        r.err((*at, "camera_offsets"), "a mapping {policy input: [dx, dy, dz] metres}")
        return ()
    out = []
    for cam, off in v.items():
        if cam not in POLICY_INPUTS:
            r.err((*at, "camera_offsets", cam), f"not a policy input (inputs: {', '.join(POLICY_INPUTS)})")
            continue
        got = r.vector((*at, "camera_offsets", cam), off, 3, -0.5, 0.5)
        if got is not None and cam in cameras:
            out.append((cameras[cam], tuple(got)))
    return tuple(out)


def variant_problems(path, variants: tuple, model) -> list[str]:
    """Each variant's names checked against the compiled scene: a geom, light or camera it names that
    the scene lacks, one line each."""
    import mujoco

    def names(kind, n):
        return {mujoco.mj_id2name(model, kind, i) for i in range(n)} - {None}

    geoms = names(mujoco.mjtObj.mjOBJ_GEOM, model.ngeom)
    lights = names(mujoco.mjtObj.mjOBJ_LIGHT, model.nlight)
    cams = names(mujoco.mjtObj.mjOBJ_CAMERA, model.ncam)
    out = []
    for v in variants:
        for geom, _ in v.colors:
            if geom not in geoms:
                out.append(f"{path}: variants.{v.name}.colors: no geom {geom!r} in the scene (name it in the MJCF)")
        if v.lighting is not None:
            if not lights:
                out.append(f"{path}: variants.{v.name}.lighting: the scene has no light to change")
            for light in v.lighting.lights:
                if light not in lights:
                    out.append(f"{path}: variants.{v.name}.lighting.lights: no light {light!r} in the scene "
                               f"(lights: {', '.join(sorted(lights)) or 'none named'})")
        for cam, _ in v.camera_offsets:
            if cam not in cams:
                out.append(f"{path}: variants.{v.name}.camera_offsets: camera {cam!r} is not a camera of the "
                           "compiled scene")
    return out
