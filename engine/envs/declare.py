"""Reading a declaration's fields (issue 34): the YAML opener with each value's line, the policy's cameras
(a scene's, or declared by position, look-at point and fovy), the success test composed from
engine.sim.metrics.PREDICATES with its tolerances, and the reset regions around any point. An env file
(envfile.py) and a Gymnasium env's adapter (gym_adapter.py) read them the same way, and every problem is
one line with its file and line (EnvFileError, exit 2)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from engine.envs import pinned
from engine.envs.mjcf_scan import _read_bounded
from engine.envs.spec import EnvError

POLICY_INPUTS = ("front", "wrist")  # the image inputs a policy reads (engine.sim.env.POLICY_CAMERAS's keys)
TOLERANCES = ("radius_m", "place_height_m", "height_tolerance_m", "upright_cos_min", "still_speed_m_s")  # the default test's
TOLERANCE_RANGES = {"radius_m": (0.0, 1.0), "place_height_m": (-1.0, 1.0), "height_tolerance_m": (0.0, 1.0),
                    "upright_cos_min": (-1.0, 1.0), "face_cos_min": (0.0, 1.0), "still_speed_m_s": (0.0, 10.0),
                    "robot_still_rad_s": (0.0, 100.0)}  # engine.sim.metrics.PREDICATES's tolerances
CONTROL_HZ = 30  # the engine's control tick (engine.sim.metrics.TICKS_PER_SECOND)
CAMERA_KEYS = ("pos", "look_at", "fovy")
REGION_KEYS = ("center_xy_m", "radius_m", "azimuth_deg", "yaw_deg")
REGION_DEFAULTS = {  # centred on the pan axis, as the built-ins spawn
    "object": {"radius_m": [0.12, 0.24], "azimuth_deg": [-50.0, 50.0], "yaw_deg": [-180.0, 180.0]},
    "target": {"radius_m": [0.12, 0.24], "azimuth_deg": [-50.0, 50.0], "yaw_deg": "fixed"},
}
LEGACY_RESET = {"object_radius_m": ("object", "radius_m"), "object_azimuth_deg": ("object", "azimuth_deg"),
                "object_yaw": ("object", "yaw_deg"), "target_radius_m": ("target", "radius_m"),
                "target_azimuth_deg": ("target", "azimuth_deg")}  # the flat keys of the first env files
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
        if not path.is_file() and pinned.get(path) is None:
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


