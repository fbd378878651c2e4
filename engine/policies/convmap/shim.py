"""The joint-convention shim: a per-joint affine map between rig degrees and model degrees.

`model = sign * rig + offset`; inverse `rig = sign * (model - offset)`. Rig degrees are the
simulator's joints in LeRobot's calibrated-degree convention: arm joints rad -> deg (same zero
as the SO-101 new-calibration MJCF), gripper linear 0..100 over its joint range.

A wrong sign here does not crash anything: the seed's released checkpoint looked inert until the
shoulder_lift mirror (model = 90 - arm) was applied. So the map is resolved explicitly (preset,
then `JOINT=[SIGN,]OFFSET` overrides), printed before launch and recorded in the manifest.
Fitting the map from stats lives in `convmap_fit`, its pre-launch checks in `convmap_tripwires`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.policies.base import JOINT_NAMES
from prereg.core.argcheck import ascii_float
from prereg.core.errors import UsageError
from prereg.core.vocabulary import CONVMAPS

GRIPPER_RANGE_RAD = (-0.17453, 1.74533)  # so101_new_calib.xml, low = closed


@dataclass(frozen=True)
class ConvMap:
    signs: tuple[float, ...]
    offsets_deg: tuple[float, ...]
    name: str = "custom"
    # Per-joint provenance ("official", "fit", "override", "declared:official", ...); empty = `name`.
    sources: tuple[str, ...] = field(default=(), compare=False)

    def to_model(self, rig_deg: np.ndarray) -> np.ndarray:
        """State in: rig degrees -> model degrees (before normalisation). Works on (..., 6)."""
        return np.asarray(self.signs) * rig_deg + np.asarray(self.offsets_deg)

    def to_rig(self, model_deg: np.ndarray) -> np.ndarray:
        """Action out: model degrees -> rig degrees (before the controller). Works on (..., 6)."""
        return np.asarray(self.signs) * (model_deg - np.asarray(self.offsets_deg))

    def as_dict(self) -> dict:
        joints = {
            j: {"sign": int(s), "offset_deg": float(o)}
            for j, s, o in zip(JOINT_NAMES, self.signs, self.offsets_deg)
        }
        for j, src in zip(JOINT_NAMES, self.sources):
            joints[j]["source"] = src
        return {"name": self.name, "joints": joints}


PRESETS: dict[str, ConvMap] = {
    "official": ConvMap((1, -1, 1, 1, 1, 1), (0, 90, 90, 0, 0, 0), "official"),
    "identity": ConvMap((1, 1, 1, 1, 1, 1), (0, 0, 0, 0, 0, 0), "identity"),
}


def sim_rad_to_rig_deg(q: np.ndarray) -> np.ndarray:
    """(..., 6) sim joint radians -> rig degrees (arm rad2deg, gripper linear 0..100)."""
    q = np.asarray(q, dtype=np.float64)
    out = np.rad2deg(q)
    lo, hi = GRIPPER_RANGE_RAD
    out[..., 5] = (q[..., 5] - lo) / (hi - lo) * 100.0
    return out


def first_action_delta_deg(state_rad, targets: np.ndarray) -> list[float]:
    """Per-joint |first target - current state| in rig degrees, rounded for a row: the shim's
    unit-bug detector (a predict's `first_action_delta_deg`)."""
    delta = np.abs(sim_rad_to_rig_deg(targets[0]) - sim_rad_to_rig_deg(np.asarray(state_rad)))
    return [round(float(v), 4) for v in delta]


def rig_deg_to_sim_rad(d: np.ndarray) -> np.ndarray:
    """Inverse of `sim_rad_to_rig_deg`."""
    d = np.asarray(d, dtype=np.float64)
    out = np.deg2rad(d)
    lo, hi = GRIPPER_RANGE_RAD
    out[..., 5] = lo + d[..., 5] / 100.0 * (hi - lo)
    return out


# --- Overrides, resolution, printing -------------------------------------------------------
#
# `--convmap-override JOINT=[SIGN,]OFFSET` is the escape hatch the seed needed when the fit's
# margin rule rejected a real, documented mirror: it must carry a sign, and a typo must fail
# loudly (a silently ignored override is a wrong unit contract that looks like a weak policy).

PRESET_NAMES: tuple[str, ...] = CONVMAPS  # prereg.core.vocabulary: what a pre-registration may name


class ConvMapError(UsageError, ValueError):
    """A convmap spec that cannot be honoured (bad override token, unknown preset, ...)."""


def _override_error(token: str, why: str) -> ConvMapError:
    return ConvMapError(
        f"bad --convmap-override {token!r}: {why}; expected JOINT=[SIGN,]OFFSET "
        f"(e.g. shoulder_lift=-1,90 or wrist_roll=-90) with JOINT one of: {', '.join(JOINT_NAMES)}"
    )


def parse_override(token: str) -> tuple[str, int, float]:
    """`JOINT=[SIGN,]OFFSET` -> (joint, sign, offset_deg); the bare form keeps sign +1."""
    if not isinstance(token, str) or token.count("=") != 1:
        raise _override_error(str(token), "needs exactly one '='")
    joint, value = (part.strip() for part in token.split("="))
    if joint not in JOINT_NAMES:
        raise _override_error(token, f"unknown joint {joint!r}")
    parts = [p.strip() for p in value.split(",")]
    if len(parts) not in (1, 2) or any(p == "" for p in parts):
        raise _override_error(token, f"malformed value {value!r}")
    try:
        numbers = [ascii_float(p) for p in parts]  # ASCII digits only (float() reads '٣' too)
    except ValueError:
        raise _override_error(token, f"malformed value {value!r} (not a number)") from None
    if not all(np.isfinite(numbers)):
        raise _override_error(token, f"malformed value {value!r} (not finite)")
    sign, offset = (1.0, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])
    if sign not in (1.0, -1.0):
        raise _override_error(token, f"sign must be +1 or -1, got {parts[0]!r}")
    return joint, int(sign), float(offset)


def apply_overrides(cmap: ConvMap, overrides: list[str] | tuple[str, ...]) -> ConvMap:
    """Replace the (sign, offset) of each overridden joint; a joint given twice is an error."""
    parsed = [parse_override(tok) for tok in overrides]
    seen: dict[str, str] = {}
    for tok, (joint, _, _) in zip(overrides, parsed):
        if joint in seen:
            raise ConvMapError(
                f"bad --convmap-override {tok!r}: joint {joint!r} already overridden by {seen[joint]!r}"
            )
        seen[joint] = tok
    if not parsed:
        return cmap
    signs, offsets = list(cmap.signs), list(cmap.offsets_deg)
    sources = list(cmap.sources) if cmap.sources else [cmap.name] * len(JOINT_NAMES)
    for joint, sign, offset in parsed:
        i = JOINT_NAMES.index(joint)
        signs[i], offsets[i], sources[i] = sign, offset, "override"
    name = f"{cmap.name}+override({','.join(j for j, _, _ in parsed)})"
    return ConvMap(tuple(signs), tuple(offsets), name, sources=tuple(sources))


def resolve_convmap(preset: str, overrides: list[str] | tuple[str, ...] = (), *, fit=None) -> ConvMap:
    """The map a run uses: a preset (official | identity | fit), then the overrides on top.

    `fit` is a `convmap_fit.FitReport`; `preset="fit"` needs one (its `.convmap` is the base).
    """
    if preset == "fit":
        if fit is None:
            raise ConvMapError("--convmap fit needs a fit report (seam stats + the release norm_stats)")
        base = fit.convmap
    elif preset in PRESETS:
        base = PRESETS[preset]
    else:
        raise ConvMapError(f"unknown --convmap preset {preset!r}; choose one of: {', '.join(PRESET_NAMES)}")
    return apply_overrides(base, list(overrides))


def convmap_from_dict(d: dict) -> ConvMap:
    """Inverse of `ConvMap.as_dict` (e.g. to re-read the map a manifest recorded)."""
    joints = d["joints"]
    missing = [j for j in JOINT_NAMES if j not in joints]
    if missing:
        raise ConvMapError(f"convmap dict lacks joints {missing}")
    signs = tuple(int(joints[j]["sign"]) for j in JOINT_NAMES)
    if any(s not in (1, -1) for s in signs):
        raise ConvMapError(f"convmap dict has a sign other than +-1: {signs}")
    offsets = tuple(float(joints[j]["offset_deg"]) for j in JOINT_NAMES)
    sources = tuple(str(joints[j].get("source", "")) for j in JOINT_NAMES)
    return ConvMap(signs, offsets, str(d.get("name", "custom")), sources=sources if any(sources) else ())


def _affine_text(sign: float, offset: float) -> str:
    lin = "rig" if sign > 0 else "-rig"
    if offset == 0:
        return lin
    return f"{lin} {'+' if offset > 0 else '-'} {abs(offset):g}"


def format_convmap(cmap: ConvMap) -> str:
    """The per-joint table printed before launch: sign, offset, the model-side formula, source."""
    rows = [f"convmap {cmap.name}: model = sign * rig + offset (degrees; gripper 0..100 linear)"]
    rows.append(f"  {'joint':<14} {'sign':>4} {'offset':>8}  {'model =':<14} source")
    for i, j in enumerate(JOINT_NAMES):
        s, o = cmap.signs[i], float(cmap.offsets_deg[i])
        src = cmap.sources[i] if cmap.sources else cmap.name
        rows.append(f"  {j:<14} {int(s):>+4d} {o:>+8.1f}  {_affine_text(s, o):<14} {src}")
    return "\n".join(rows)
