"""What the operator sets up on the rig for a selected seed: the seed's initial condition, written by the
engine (`fontaine-eval --sim-predictions RUN`, engine/run/predictions.py) and shown by the console's real
session (console/widgets/real_session.py), which never imports the engine.

`real/seed_<n>.json` (schema 1): the object's base centre in cm and its yaw in degrees, the target's
centre in cm, in the scene's world frame (x forward from the base, y left, z up; the same frame as the
rig table), the env's name, and the picture's file name; `real/seed_<n>.png`: the scene's front camera
at that initial condition (absent where the engine had no offscreen rendering: `picture` is null).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prereg.rundir.files import REAL_SETUP, load_json_object, write_json_atomic

SETUP_SCHEMA = 1


def setup_paths(run_dir: str | Path, seed: int) -> tuple[Path, Path]:
    """(the poses' JSON, the front view's PNG) of `seed` in the run directory."""
    folder = Path(run_dir) / REAL_SETUP
    return folder / f"seed_{int(seed):04d}.json", folder / f"seed_{int(seed):04d}.png"


@dataclass(frozen=True)
class Setup:
    seed: int
    env: str
    object_cm: tuple[float, float, float]
    object_yaw_deg: float
    target_cm: tuple[float, float, float]
    picture: Path | None = None  # the PNG, when the engine could render it

    def lines(self) -> list[str]:
        """The initial condition in words, one line each: what to put where."""
        ox, oy, oz = self.object_cm
        tx, ty, tz = self.target_cm
        return [f"object  x {ox:+.1f} cm  y {oy:+.1f} cm  z {oz:+.1f} cm  yaw {self.object_yaw_deg:+.0f}°",
                f"target  x {tx:+.1f} cm  y {ty:+.1f} cm  z {tz:+.1f} cm",
                f"env {self.env} · world frame: x forward from the base, y left, z up"]


def write_setup(run_dir: str | Path, seed: int, env: str, object_m, object_yaw_rad: float, target_m,
                png: bytes | None) -> Path:
    """Write `seed`'s setup (metres and radians in, cm and degrees written); the JSON's path."""
    js, pic = setup_paths(run_dir, seed)
    js.parent.mkdir(parents=True, exist_ok=True)
    if png is not None:
        tmp = pic.with_suffix(".png.tmp")
        tmp.write_bytes(png)
        tmp.replace(pic)
    write_json_atomic(js, {
        "schema": SETUP_SCHEMA, "seed": int(seed), "env": env,
        "object_cm": [round(float(v) * 100.0, 2) for v in object_m],
        "object_yaw_deg": round(math.degrees(float(object_yaw_rad)), 1),
        "target_cm": [round(float(v) * 100.0, 2) for v in target_m],
        "picture": pic.name if png is not None else None,
    })
    return js


def _triple(v) -> tuple[float, float, float] | None:
    if isinstance(v, list) and len(v) == 3 and all(type(x) in (int, float) and math.isfinite(x) for x in v):
        return (float(v[0]), float(v[1]), float(v[2]))
    return None


def read_setup(run_dir: str | Path, seed: int) -> tuple[Setup | None, str | None]:
    """(`seed`'s setup, None), or (None, why not: missing, or what is wrong with the file)."""
    js, pic = setup_paths(run_dir, seed)
    obj, why = load_json_object(js)
    if obj is None:
        return None, ("missing: run fontaine-eval --sim-predictions on the run to write it" if why == "missing"
                      else f"{js.name}: {why}")
    o, t, yaw = _triple(obj.get("object_cm")), _triple(obj.get("target_cm")), obj.get("object_yaw_deg")
    if obj.get("schema") != SETUP_SCHEMA or obj.get("seed") != seed or o is None or t is None \
            or type(yaw) not in (int, float) or not isinstance(obj.get("env"), str):
        return None, f"{js.name}: not a setup of seed {seed} (schema {SETUP_SCHEMA}: seed, env, object_cm, object_yaw_deg, target_cm)"
    picture = pic if obj.get("picture") == pic.name and pic.is_file() else None
    return Setup(seed, obj["env"], o, float(yaw), t, picture), None
