"""The predict trail: one JSON line per observation a driver-served policy answered.

`fontaine-eval --record-predicts` (or a pre-registration's `protocol: record_predicts: true`)
writes `predicts.jsonl` in the run directory, so a fallback can be inspected after the fact:

- `seed`, `replan` (0-based replan index within the episode), `tick` (and `arm`, in a comparison
  run: which arm's policy answered);
- `pathway` (`flow` | `discrete`) and `decode` (`flow` | `reference` | `grammar-masked`);
- `tokens`: the generated ids (discrete only, else null), as the decode loop produced them;
- `chunk_normalized`: the action chunk the policy executes, before unnormalisation, in the
  model's convention (list of lists, n_action_steps x action_dim; zeros on a zero-fallback);
- `fallback`: null, or the zero-fallback reason (`engine.policies.molmoact2.fast`);
- `decode_notes`: anomalies lerobot's decode went through (discrete reference only);
- `mask_interventions`: tokens the grammar mask changed (0 elsewhere);
- `first_action_deg`: the first target after the shim, in rig degrees (the sim's convention in
  degrees: arm joints rad2deg, gripper 0..100).

Lines are written and flushed one at a time, like rows; a resumed run appends. Off by default.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from prereg.rundir.files import PREDICTS  # the file name is the run-directory contract's


class PredictTrail:
    """Append-only writer of predicts.jsonl (one process writes it: the one serving the policy)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a", encoding="utf-8")
        self.lines = 0

    @classmethod
    def for_run(cls, run_dir: Path) -> "PredictTrail":
        return cls(Path(run_dir) / PREDICTS)

    def record(self, observations, chunks, arm: str | None = None) -> None:
        """One line per (observation, chunk) of a served batch, flushed before returning."""
        for obs, chunk in zip(observations, chunks):
            line = trail_line(obs, chunk) if arm is None else {"arm": arm, **trail_line(obs, chunk)}
            self._fh.write(json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n")
            self.lines += 1
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def trail_line(obs, chunk) -> dict[str, Any]:
    from engine.policies.convmap.shim import sim_rad_to_rig_deg

    info = chunk.info or {}
    normalised = info.get("chunk_normalized")
    tokens = info.get("tokens")
    first = sim_rad_to_rig_deg(np.asarray(chunk.targets_rad, dtype=np.float64)[0])
    return {
        "seed": int(obs.seed),
        "replan": int(obs.replan_index),
        "tick": int(obs.tick),
        "pathway": info.get("pathway"),
        "decode": info.get("decode"),
        "tokens": None if tokens is None else [int(t) for t in tokens],
        "chunk_normalized": None if normalised is None else _floats(normalised),
        "fallback": info.get("fallback_reason"),
        "decode_notes": info.get("decode_notes"),
        "mask_interventions": int(chunk.mask_violations or 0),
        "first_action_deg": _floats(first),
    }


def _floats(values) -> list:
    """Nested lists of floats that survive JSON (float32 values round-trip exactly as float64)."""
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        return [None if not math.isfinite(v) else v for v in arr.ravel().tolist()]
    return arr.tolist()
