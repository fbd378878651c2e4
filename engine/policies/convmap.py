"""The joint-convention shim: a per-joint affine map between rig degrees and model degrees.

`model = sign * rig + offset`; inverse `rig = sign * (model - offset)`. Rig degrees are the
simulator's joints in LeRobot's calibrated-degree convention: arm joints rad -> deg (same zero
as the SO-101 new-calibration MJCF), gripper linear 0..100 over its joint range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.policies.base import JOINT_NAMES

GRIPPER_RANGE_RAD = (-0.17453, 1.74533)  # so101_new_calib.xml, low = closed


@dataclass(frozen=True)
class ConvMap:
    signs: tuple[float, ...]
    offsets_deg: tuple[float, ...]
    name: str = "custom"

    def to_model(self, rig_deg: np.ndarray) -> np.ndarray:
        """State in: rig degrees -> model degrees (before normalisation). Works on (..., 6)."""
        return np.asarray(self.signs) * rig_deg + np.asarray(self.offsets_deg)

    def to_rig(self, model_deg: np.ndarray) -> np.ndarray:
        """Action out: model degrees -> rig degrees (before the controller). Works on (..., 6)."""
        return np.asarray(self.signs) * (model_deg - np.asarray(self.offsets_deg))

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "joints": {
                j: {"sign": int(s), "offset_deg": float(o)}
                for j, s, o in zip(JOINT_NAMES, self.signs, self.offsets_deg)
            },
        }


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


def rig_deg_to_sim_rad(d: np.ndarray) -> np.ndarray:
    """Inverse of `sim_rad_to_rig_deg`."""
    d = np.asarray(d, dtype=np.float64)
    out = np.deg2rad(d)
    lo, hi = GRIPPER_RANGE_RAD
    out[..., 5] = lo + d[..., 5] / 100.0 * (hi - lo)
    return out
