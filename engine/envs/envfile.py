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

import copy
import functools
import math
import warnings
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.envs.spec import NAME_RE, BoundsSpec, EnvError, EnvSpec, GraspSpec, ResetSpec, SuccessSpec

SUFFIXES = (".yaml", ".yml")  # prereg.document.validation.ENV_FILE_SUFFIXES
MAX_FILE_BYTES = 1 << 20  # an env file (and each MJCF it includes) is a few KB
POLICY_INPUTS = ("front", "wrist")  # the image inputs a policy reads (engine.sim.env.POLICY_CAMERAS's keys)
TOLERANCES = ("radius_m", "place_height_m", "height_tolerance_m", "upright_cos_min", "still_speed_m_s")
TOP_KEYS = ("name", "description", "task", "scene", "arm", "object", "target", "cameras", "reset", "success",
            "bounds", "episode", "grasp")
ARM_MODES = ("attach", "included")
BUILTIN_NAMES = ("boat-on-disk", "pick-lift")  # engine.envs.registry.BUILTINS (a test holds them equal)
CONTROL_HZ = 30  # the engine's control tick (engine.sim.metrics.TICKS_PER_SECOND)

RESET_DEFAULTS = {"object_radius_m": [0.12, 0.24], "object_azimuth_deg": 50.0, "target_radius_m": [0.12, 0.24],
                  "target_azimuth_deg": 50.0, "min_separation_m": 0.10, "object_yaw": "uniform",
                  "settle_ticks": 15, "max_strikes": 20}
SUCCESS_DEFAULTS = {"hold_ticks": 15}


class EnvFileError(EnvError):
    """An env file with problems: one line per problem (`file:line: what`), exit 2."""

    def __init__(self, path, lines: list[str]):
        self.path, self.lines = str(path), list(lines)
        n = len(self.lines)
        super().__init__("\n".join([f"env file {self.path} cannot be used ({n} problem{'s' if n != 1 else ''}; "
                                    "nothing was run):"] + ["  " + line for line in self.lines]))

    def one_line(self) -> str:
        """One line per problem, as a validation report (run_cli prints it as it is)."""
        return str(self).strip()


def is_env_file(ref) -> bool:
    """An `--env` value that names a file rather than a registered env."""
    return isinstance(ref, (str, Path)) and str(ref).endswith(SUFFIXES)


# --------------------------------------------------------------------------- the MJCF, scanned


@dataclass
class _Element:
    tag: str
    attrs: dict
    file: Path
    line: int
    parent: "_Element | None" = None
    children: list = field(default_factory=list)


@dataclass
class _Scan:
    """What the MJCF (with its includes) declares, each with where: bodies, cameras, names, files."""

    elements: list[_Element] = field(default_factory=list)
    files: list[tuple[Path, Path, int]] = field(default_factory=list)  # (file, the MJCF naming it, its line)
    problems: list[str] = field(default_factory=list)

    def named(self, tag: str) -> dict[str, _Element]:
        return {e.attrs["name"]: e for e in self.elements if e.tag == tag and "name" in e.attrs}


def _scan_mjcf(path: Path, label: str, scan: _Scan, parent: _Element | None = None, depth: int = 0) -> None:
    """Parse one MJCF file with expat (which knows each element's line), following `<include>`."""
    if depth > 8:
        scan.problems.append(f"{label}: includes nested more than 8 deep")
        return
    try:
        data = _read_bounded(path)
    except OSError as exc:
        scan.problems.append(f"{label}: cannot be read ({exc.strerror or exc})")
        return
    stack: list[_Element] = [parent] if parent is not None else []
    parser = xml.parsers.expat.ParserCreate()
    includes: list[tuple[_Element, Path]] = []

    def start(tag, attrs):
        el = _Element(tag, dict(attrs), path, parser.CurrentLineNumber, stack[-1] if stack else None)
        if el.parent is not None:
            el.parent.children.append(el)
        scan.elements.append(el)
        stack.append(el)
        if tag == "include" and "file" in attrs:
            includes.append((el, path.parent / attrs["file"]))

    def end(tag):
        stack.pop()

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        scan.problems.append(f"{label}:{exc.lineno}: not valid XML ({xml.parsers.expat.ErrorString(exc.code)})")
        return
    for el, inc in includes:
        scan.files.append((inc, path, el.line))
        if not inc.is_file():
            scan.problems.append(f"{label}:{el.line}: included file {el.attrs['file']!r} is missing ({inc})")
            continue
        # an include's contents take its place: its elements hang under the include's parent
        _scan_mjcf(inc, str(inc), scan, el.parent, depth + 1)


def _asset_files(scan: _Scan, scene: Path) -> None:
    """Every mesh, texture, height field and skin file the MJCF loads, checked to exist."""
    compiler = {}
    for el in scan.elements:
        if el.tag == "compiler":
            compiler.update(el.attrs)
    base = scene.parent
    dirs = {"mesh": compiler.get("meshdir", compiler.get("assetdir", "")),
            "skin": compiler.get("meshdir", compiler.get("assetdir", "")),
            "texture": compiler.get("texturedir", compiler.get("assetdir", "")),
            "hfield": compiler.get("assetdir", "")}
    for el in scan.elements:
        if el.tag in dirs and "file" in el.attrs and (el.parent is None or el.parent.tag == "asset"):
            name = el.attrs["file"]
            path = Path(name) if Path(name).is_absolute() else base / dirs[el.tag] / name
            scan.files.append((path, el.file, el.line))
            if not path.is_file():
                what = "mesh" if el.tag == "mesh" else el.tag
                scan.problems.append(f"{el.file}:{el.line}: {what} file {name!r} is missing ({path})")


def _read_bounded(path: Path) -> bytes:
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"larger than {MAX_FILE_BYTES // 1024} KB: not an env file")
    return data


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
    cameras: dict
    reset: dict
    success: dict
    bounds: dict
    episode_seconds: float
    jaw_geoms: tuple[str, str]
    files: tuple[tuple[str, Path], ...]


def load_env_file(ref) -> EnvSpec:
    """The EnvSpec an env file declares, or EnvFileError with one line per problem."""
    decl = read_declaration(Path(ref).expanduser().resolve())
    spec = _spec(decl)
    model = _compile(decl)  # the arm attached, the floor added: what the episodes run
    problems = [f"{decl.path}: {p.split(': ', 1)[1]}" for p in spec.problems(model)]
    if problems:
        raise EnvFileError(decl.path, problems)
    return spec


def read_declaration(path: Path) -> Declared:
    """Read and check the YAML and the MJCF it names; every problem found, one line each."""
    from prereg.core.yamlpos import PosYAMLError, load_with_lines

    f = str(path)
    if not path.is_file():
        raise EnvFileError(path, [f"{f}: env file not found" if not path.exists() else f"{f}: not a regular file"])
    try:
        text = _read_bounded(path).decode("utf-8")
        raw, lines, dups = load_with_lines(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvFileError(path, [f"{f}: cannot be read ({getattr(exc, 'strerror', None) or exc})"]) from None
    except PosYAMLError as exc:
        raise EnvFileError(path, [f"{f}:{exc.line}: {str(exc).replace('a pre-registration', 'an env file')}"]) from None
    if not isinstance(raw, dict):
        raise EnvFileError(path, [f"{f}:1: an env file is a YAML mapping (name:, scene:, object:, ...)"])
    out: list[str] = []

    def at(*keys) -> str:
        for n in range(len(keys), -1, -1):
            if keys[:n] in lines:
                return f"{f}:{lines[keys[:n]]}"
        return f

    def err(keys: tuple, message: str) -> None:
        out.append(f"{at(*keys)}: {'.'.join(str(k) for k in keys)}: {message}")

    for key, line in dups:
        out.append(f"{f}:{line}: {'.'.join(str(k) for k in key)}: given twice")
    for key in raw:
        if key not in TOP_KEYS:
            err((key,), f"not an env field (fields: {', '.join(TOP_KEYS)})")

    def text_field(key, required=True, default=None) -> str:
        v = raw.get(key, default)
        if v is None:
            if required:
                err((key,), "missing")
            return ""
        if not isinstance(v, str) or not v.strip():
            err((key,), f"{v!r} is not a text")
            return ""
        return v.strip()

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

    cameras = raw.get("cameras")
    cams: dict = {}
    if not isinstance(cameras, dict):
        err(("cameras",), "missing: map the policy's inputs to the scene's cameras, e.g. {front: top_cam, wrist: wrist}"
            if cameras is None else "a mapping {policy input: scene camera}")
    else:
        for key, cam in cameras.items():
            if key not in POLICY_INPUTS:
                err(("cameras", key), f"not a policy input (inputs: {', '.join(POLICY_INPUTS)})")
            elif not isinstance(cam, str) or not cam:
                err(("cameras", key), f"{cam!r} is not a camera name")
            else:
                cams[key] = cam
        for key in POLICY_INPUTS:
            if key not in cameras:
                err(("cameras",), f"the policy's {key!r} input has no camera")

    def section(key: str, defaults: dict, required: tuple = ()) -> dict:
        v = raw.get(key)
        if v is None:
            v = {}
            if required:
                err((key,), f"missing ({', '.join(required)})")
                return dict(defaults)
        if not isinstance(v, dict):
            err((key,), "a mapping")
            return dict(defaults)
        known = set(defaults) | set(required)
        for k in v:
            if k not in known:
                err((key, k), f"not a {key} field (fields: {', '.join(sorted(known))})")
        return {**defaults, **{k: v[k] for k in v if k in known}}

    def number(keys: tuple, value, lo=None, hi=None, integer=False):
        ok = isinstance(value, int if integer else (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(float(value)):
            ok = False
        if not ok or (lo is not None and value < lo) or (hi is not None and value > hi):
            rng = f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else (f" >= {lo:g}" if lo is not None else "")
            err(keys, f"{value!r} is not {'an integer' if integer else 'a number'}{rng}")
            return None
        return int(value) if integer else float(value)

    def pair(keys, value, lo, hi):
        if not (isinstance(value, list) and len(value) == 2):
            err(keys, f"{value!r} is not [low, high]")
            return None
        a, b = number(keys, value[0], lo, hi), number(keys, value[1], lo, hi)
        if a is None or b is None:
            return None
        if a > b:
            err(keys, f"{value!r}: low above high")
            return None
        return [a, b]

    reset = section("reset", RESET_DEFAULTS)
    for key in ("object_radius_m", "target_radius_m"):
        reset[key] = pair(("reset", key), reset[key], 0.0, 0.6)
    for key in ("object_azimuth_deg", "target_azimuth_deg"):
        reset[key] = number(("reset", key), reset[key], 0.0, 180.0)
    reset["min_separation_m"] = number(("reset", "min_separation_m"), reset["min_separation_m"], 0.0, 0.5)
    if reset["object_yaw"] not in ("uniform", "fixed"):
        err(("reset", "object_yaw"), f"{reset['object_yaw']!r}: 'uniform' (in [-pi, pi)) or 'fixed' (as the MJCF has it)")
    reset["settle_ticks"] = number(("reset", "settle_ticks"), reset["settle_ticks"], 1, 300, integer=True)
    reset["max_strikes"] = number(("reset", "max_strikes"), reset["max_strikes"], 0, 100, integer=True)

    success = section("success", SUCCESS_DEFAULTS, TOLERANCES)
    for key in TOLERANCES:
        if key not in success:
            if "success" in raw:
                err(("success",), f"tolerance {key} missing (every threshold of the success test is declared)")
            continue
        success[key] = number(("success", key), success[key], -1.0 if key == "upright_cos_min" else 0.0, 1.0)
    success["hold_ticks"] = number(("success", "hold_ticks"), success["hold_ticks"], 1, 3000, integer=True)

    from engine.sim import scene as sim_scene

    bounds = section("bounds", {"table_xy_m": list(sim_scene.table_bounds_xy()), "table_top_z_m": 0.0,
                                "floor_depth_m": sim_scene.FLOOR_DEPTH_M, "room_half_m": sim_scene.ROOM_HALF_M,
                                "room_height_m": sim_scene.ROOM_HEIGHT_M})
    txy = bounds["table_xy_m"]
    if not (isinstance(txy, list) and len(txy) == 4 and all(number(("bounds", "table_xy_m"), v, -5.0, 5.0) is not None
                                                             for v in txy)):
        err(("bounds", "table_xy_m"), f"{txy!r} is not [x_min, x_max, y_min, y_max] in metres")
        txy = None
    elif not (txy[0] < txy[1] and txy[2] < txy[3]):
        err(("bounds", "table_xy_m"), f"{txy!r}: each min below its max")
        txy = None
    bounds["table_xy_m"] = [float(v) for v in txy] if txy else None
    bounds["table_top_z_m"] = number(("bounds", "table_top_z_m"), bounds["table_top_z_m"], -1.0, 1.0)
    bounds["floor_depth_m"] = number(("bounds", "floor_depth_m"), bounds["floor_depth_m"], 0.05, 5.0)
    bounds["room_half_m"] = number(("bounds", "room_half_m"), bounds["room_half_m"], 0.2, 20.0)
    bounds["room_height_m"] = number(("bounds", "room_height_m"), bounds["room_height_m"], 0.2, 20.0)
    if txy and bounds["room_half_m"] is not None:
        cx, cy = (txy[0] + txy[1]) / 2, (txy[2] + txy[3]) / 2
        if max(txy[1] - cx, txy[3] - cy) >= bounds["room_half_m"]:
            err(("bounds", "room_half_m"), f"{bounds['room_half_m']:g} m: the walls would cut the table")

    episode = section("episode", {"seconds": 30.0, "control_hz": CONTROL_HZ})
    seconds = number(("episode", "seconds"), episode["seconds"], 0.1, 3600.0)
    if episode["control_hz"] != CONTROL_HZ:
        err(("episode", "control_hz"), f"{episode['control_hz']!r}: the engine's control tick is {CONTROL_HZ} Hz")

    grasp = section("grasp", {"jaw_geoms": ["fixed_pad", "moving_pad"]})
    jaws = grasp["jaw_geoms"]
    if not (isinstance(jaws, list) and len(jaws) == 2 and all(isinstance(j, str) and j for j in jaws)):
        err(("grasp", "jaw_geoms"), f"{jaws!r} is not two geom names")
        jaws = ["fixed_pad", "moving_pad"]
    if arm == "attach" and jaws != ["fixed_pad", "moving_pad"]:
        err(("grasp", "jaw_geoms"), "with arm: attach the jaws are Fontaine's pads (fixed_pad, moving_pad)")

    # the MJCF
    scene_ref = raw.get("scene")
    files: list[tuple[str, Path]] = [(path.name, path)]
    scene_path = None
    if scene_ref is None:
        err(("scene",), "missing: the MJCF file of the scene, relative to this file (e.g. scene.xml)")
    elif not isinstance(scene_ref, str) or not scene_ref.endswith(".xml"):
        err(("scene",), f"{scene_ref!r} is not an MJCF file (path/to/scene.xml, relative to this file)")
    else:
        scene_path = (path.parent / scene_ref).resolve()
        if not scene_path.is_file():
            err(("scene",), f"{scene_ref!r} is missing ({scene_path})")
            scene_path = None

    def label_of(p: Path) -> str:
        p = Path(p).resolve()
        try:
            return p.relative_to(path.parent).as_posix()
        except ValueError:
            return str(p)

    if scene_path is not None:
        scan = _Scan()
        _scan_mjcf(scene_path, str(scene_path), scan)
        parsed = not scan.problems  # a missing mesh does not hide the names; XML that does not parse does
        if parsed:
            _asset_files(scan, scene_path)
        out += scan.problems
        files.append((label_of(scene_path), scene_path))
        for fp, _, _ in scan.files:
            files.append((label_of(fp), Path(fp).resolve()))
        if parsed:
            _check_names(scan, scene_path, label_of, object_body, target_body, cams, arm, jaws, err, out)
    if out:
        raise EnvFileError(path, out)
    if arm == "attach":
        from engine.envs.boat_on_disk import arm_files

        files += list(arm_files())
    return Declared(path=path, name=name, description=description, task=task, scene=scene_path, arm=arm,
                    object_body=object_body, target_body=target_body, cameras=cams, reset=reset, success=success,
                    bounds=bounds, episode_seconds=seconds, jaw_geoms=(jaws[0], jaws[1]),
                    files=tuple(sorted(set(files))))


ARM_BODIES = ("base", "shoulder", "upper_arm", "lower_arm", "wrist", "gripper", "moving_jaw_so101_v1")
ARM_NAMES = {"geom": ("fixed_pad", "moving_pad"), "site": ("grasp",), "camera": ("wrist",)}


def _check_names(scan: _Scan, scene_path: Path, label_of, object_body, target_body, cams, arm, jaws, err, out):
    from engine.sim.scene import JOINT_NAMES

    bodies, cameras = scan.named("body"), scan.named("camera")
    for what, key, name in (("object", "object", object_body), ("target", "target", target_body)):
        if name and name not in bodies:
            known = ", ".join(sorted(bodies)) or "none"
            err((key,), f"{what} body {name!r} is not in {label_of(scene_path)} (bodies: {known})")
    if object_body in bodies:
        el = bodies[object_body]
        free = any(c.tag == "freejoint" or (c.tag == "joint" and c.attrs.get("type") == "free") for c in el.children)
        if not free:
            out.append(f"{el.file}:{el.line}: object body {object_body!r} has no free joint (<freejoint/>): "
                       "the reset places it and the arm moves it")
        elif el.parent is not None and el.parent.tag == "body":
            out.append(f"{el.file}:{el.line}: object body {object_body!r} is inside another body: a free body "
                       "hangs from <worldbody>")
    if target_body in bodies:
        el = bodies[target_body]
        if el.attrs.get("mocap") != "true":
            out.append(f"{el.file}:{el.line}: target body {target_body!r} is not a mocap body (mocap=\"true\"): "
                       "the reset moves it each episode")
    if arm == "attach":
        arm_cams = {"wrist"}
        for tag, names in (("body", ARM_BODIES), *ARM_NAMES.items(), ("joint", JOINT_NAMES)):
            mine = scan.named(tag)
            out.extend(f"{mine[n].file}:{mine[n].line}: the SO-101 is not attachable: the scene already has a {tag} "
                       f"named {n!r}, one of the arm's (rename it, or declare arm: included)" for n in names if n in mine)
    else:
        arm_cams = set()
        joints = scan.named("joint")
        missing = [n for n in JOINT_NAMES if n not in joints]
        geoms = scan.named("geom")
        missing += [f"jaw geom {j!r}" for j in jaws if j not in geoms]
        if missing:
            err(("arm",), f"arm: included, but {label_of(scene_path)} lacks the SO-101's " + ", ".join(missing))
    for key, cam in cams.items():
        if cam not in cameras and cam not in arm_cams:
            known = ", ".join(sorted(set(cameras) | arm_cams)) or "none"
            err(("cameras", key), f"camera {cam!r} not found in {label_of(scene_path)} (cameras: {known})")


# --------------------------------------------------------------------------- the scene and the spec


def build_scene(decl: Declared):
    """The lab's MJCF, with Fontaine's solver, the SO-101 attached (unless included), the
    collision bits that let the pads (not the jaw meshes) grip the object, and the floor and walls."""
    import mujoco

    from engine.sim import scene as sim_scene

    spec = mujoco.MjSpec.from_file(str(decl.scene))
    sim_scene._set_solver(spec)
    sim_scene._set_visual(spec)
    obj = spec.body(decl.object_body)
    object_geoms = set()
    stack = [obj]
    while stack:
        b = stack.pop()
        object_geoms.update(id(g) for g in b.geoms)
        stack.extend(b.bodies)
    scene_geoms = list(spec.geoms)
    if decl.arm == "attach":
        sim_scene._attach_arm(spec)
        for g in scene_geoms:  # the lab's own geoms; the arm's bits are set by _attach_arm
            if id(g) in object_geoms:
                g.contype = g.conaffinity = sim_scene.BIT_BOAT
            elif g.contype or g.conaffinity:
                g.contype = g.conaffinity = sim_scene.BIT_ARM | sim_scene.BIT_BOAT
    b = decl.bounds
    x0, x1, y0, y1 = b["table_xy_m"]
    sim_scene._add_floor_and_walls(spec, center_xy=((x0 + x1) / 2, (y0 + y1) / 2),
                                   floor_z=b["table_top_z_m"] - b["floor_depth_m"], half=b["room_half_m"],
                                   height=b["room_height_m"])
    spec.stat.extent, spec.stat.center, spec.stat.meansize = (sim_scene.STAT_EXTENT_M, list(sim_scene.STAT_CENTER),
                                                              sim_scene.STAT_MEANSIZE_M)
    return spec


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


def _stamp(path: Path):
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def stamps(spec: EnvSpec) -> tuple:
    """What a cached result about a file env depends on: each of its files' size and mtime."""
    return tuple((label, _stamp(Path(p))) for label, p in spec.files)


def _compiled(decl: Declared):
    key = (str(decl.path), tuple((label, _stamp(p)) for label, p in decl.files))
    if key not in _COMPILED:
        _COMPILED.clear()
        _COMPILED[key] = build_scene(decl).compile()
    return _COMPILED[key]


def _spec(decl: Declared) -> EnvSpec:
    from engine.sim import scene as sim_scene
    from engine.sim.env import HOME_RAD
    from engine.sim.metrics import GRASP_HOLD_TICKS

    b = decl.bounds
    x0, x1, y0, y1 = b["table_xy_m"]
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, b["room_half_m"]
    floor = b["table_top_z_m"] - b["floor_depth_m"]
    tol = {k: decl.success[k] for k in TOLERANCES}
    return EnvSpec(
        name=decl.name,
        description=decl.description,
        object_body=decl.object_body,
        target_body=decl.target_body,
        cameras=dict(decl.cameras),
        reset=ResetSpec(
            distribution=("object and target centres each at a radius uniform in their spawn radius and an azimuth "
                          "uniform in +-their azimuth from the pan axis, on the table top, redrawn until at least "
                          "the minimum separation apart; object yaw uniform in [-pi, pi) (or as the MJCF has it: "
                          "fixed); arm at home; numpy.random.default_rng(seed)"),
            params={**{k: decl.reset[k] for k in ("object_radius_m", "object_azimuth_deg", "target_radius_m",
                                                   "target_azimuth_deg", "min_separation_m", "object_yaw")},
                    "pan_axis_xy_m": [float(v) for v in sim_scene.PAN_AXIS_XY], "home_rad": [float(v) for v in HOME_RAD],
                    "arm": decl.arm},
            settle_ticks=decl.reset["settle_ticks"],
            strike_rule=("after settling: the object not upright on the table where it was put, still moving, "
                         "touching the arm, or the arm not at home is a strike; redrawn from "
                         "default_rng((seed, strike)) and counted in the row"),
            max_strikes=decl.reset["max_strikes"],
        ),
        success=SuccessSpec(
            predicate=("the object's base (its body origin) within radius_m of the target's centre, "
                       "place_height_m above the target's origin within height_tolerance_m, upright, still and "
                       "not touching the arm, held for hold_ticks ticks in a row (success latches)"),
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
    def make(spec: EnvSpec, render_size: int = 224):
        return _place_env_class()(decl, _compile(decl), render_size=render_size)

    return make


# --------------------------------------------------------------------------- the running scene


def _metrics_class():
    from engine.sim.metrics import EpisodeMetrics

    class PlaceMetrics(EpisodeMetrics):
        """EpisodeMetrics with the file's declared tolerances and hold."""

        def __init__(self, tol: dict, hold_ticks: int, *args, **kwargs):
            self.tol, self.hold_ticks = tol, hold_ticks
            super().__init__(*args, **kwargs)

        def succeeds(self, r) -> bool:
            t = self.tol
            return (math.hypot(r.pos[0] - self.disk_pos[0], r.pos[1] - self.disk_pos[1]) <= t["radius_m"]
                    and abs(float(r.pos[2]) - self.disk_top_z) < t["height_tolerance_m"]
                    and r.upright_cos >= t["upright_cos_min"] and r.speed_m_s < t["still_speed_m_s"]
                    and not r.touching_arm)

    return PlaceMetrics


@functools.cache
def _place_env_class():
    """PlaceEnv: `_PlaceScene` on engine.sim.env.ObjectEnv, joined at first use so that reading an
    env file imports no mujoco."""
    from engine.sim.env import ObjectEnv

    return type("PlaceEnv", (_PlaceScene, ObjectEnv), {"__module__": __name__, "__qualname__": "PlaceEnv"})


class _PlaceScene:
    """One running pick-and-place scene from an env file (engine.envs.SimEnv): its reset, target height,
    privileged poses and film cameras; the tick, readings and images are ObjectEnv's (`_place_env_class`)."""

    def __init__(self, decl: Declared, model, *, render_size: int = 224):
        from engine.sim import handoff
        from engine.sim.scene import JOINT_NAMES

        if not handoff.is_handed(model):  # a worker's handed scene is its own already
            model = copy.deepcopy(model)
        obj = model.body(decl.object_body)
        arm_root = model.body_rootid[model.jnt_bodyid[model.joint(JOINT_NAMES[0]).id]]
        super().__init__(model, render_size=render_size, cameras=decl.cameras,
                         obj_joint=int(model.body_jntadr[obj.id]),
                         is_obj=model.body_rootid[model.geom_bodyid] == obj.id,
                         is_arm=model.body_rootid[model.geom_bodyid] == arm_root, jaw_geoms=decl.jaw_geoms,
                         target_body=decl.target_body)
        self.decl = decl
        self._initial_quat = self.data.qpos[self._obj_qpos + 3:self._obj_qpos + 7].copy()
        self._metrics_cls = _metrics_class()

    def _place_height(self) -> float:
        return float(self.target()[2]) + self.decl.success["place_height_m"]

    def reset(self, seed: int) -> int:
        import mujoco

        from engine.sim.env import HOME_RAD, yaw_quat
        from engine.sim.scene import PAN_AXIS_XY

        r, top = self.decl.reset, self.decl.bounds["table_top_z_m"]

        def point(rng, radius, az):
            rad = rng.uniform(*radius)
            a = np.deg2rad(rng.uniform(-az, az))
            return PAN_AXIS_XY + rad * np.array([np.cos(a), np.sin(a)])

        problem = None
        for strike in range(r["max_strikes"] + 1):
            rng = np.random.default_rng(int(seed) if strike == 0 else (int(seed), strike))
            for _ in range(1000):
                obj_xy = point(rng, r["object_radius_m"], r["object_azimuth_deg"])
                tgt_xy = point(rng, r["target_radius_m"], r["target_azimuth_deg"])
                if np.linalg.norm(obj_xy - tgt_xy) >= r["min_separation_m"]:
                    break
            quat = yaw_quat(float(rng.uniform(-np.pi, np.pi))) if r["object_yaw"] == "uniform" else self._initial_quat
            mujoco.mj_resetData(self.model, self.data)
            self.data.mocap_pos[self._target] = [tgt_xy[0], tgt_xy[1], top]
            self.data.qpos[self._qpos_adr] = HOME_RAD
            self.data.ctrl[:6] = HOME_RAD
            self.data.qpos[self._obj_qpos:self._obj_qpos + 3] = [obj_xy[0], obj_xy[1], top]
            self.data.qpos[self._obj_qpos + 3:self._obj_qpos + 7] = quat
            mujoco.mj_forward(self.model, self.data)
            self.metrics = None
            for _ in range(r["settle_ticks"]):
                self.step_tick(HOME_RAD)
            reading = self.reading()
            arm_off = np.abs(self.state_rad()[:5] - HOME_RAD[:5]).max()
            problem = ("not upright on the table" if reading.upright_cos < 0.99 or abs(reading.pos[2] - top) > 0.001
                       else "not settled where it was put" if np.linalg.norm(reading.pos[:2] - obj_xy) > 0.002
                       or reading.speed_m_s > 0.002
                       else "touching the arm" if reading.touching_arm
                       else "arm not at home" if arm_off > np.deg2rad(2.0) else None)
            if problem is None:
                self.tick = 0
                self.metrics = self._metrics_cls(
                    {k: self.decl.success[k] for k in TOLERANCES}, self.decl.success["hold_ticks"],
                    self.target(), self._place_height(), reading, strike)
                return strike
        raise RuntimeError(f"seed {seed}: no valid reset in {r['max_strikes'] + 1} draws (last: the object "
                           f"{problem}); the env file's scene or reset distribution is broken")

    def privileged(self) -> dict:
        """True poses: the generic names, and the boat plan's (the scripted oracle places the object
        as it places the boat)."""
        pos, quat, target = self.object_pos(), self.object_quat(), self.target()
        return {"plan": "place", "object_pos": pos, "object_quat": quat, "target_pos": target,
                "boat_pos": pos, "boat_quat": quat,
                "boat_linvel": self.object_linvel(),
                "disk_pos": target, "disk_radius": self.decl.success["radius_m"], "disk_top_z": self._place_height()}

    def film_cameras(self) -> tuple[str, ...]:
        """The policy's views side by side (front, wrist)."""
        return tuple(self.cameras[k] for k in POLICY_INPUTS)
