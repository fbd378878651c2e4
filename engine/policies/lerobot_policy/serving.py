"""Where a lerobot checkpoint is served, read from its saved files alone (no lerobot, no torch import):
a worker asks this to know whether the driver serves the policy (policy.py explains the two modes)."""

from __future__ import annotations

import json
from pathlib import Path

CHUNK, STEP = "chunk", "step"
STATELESS_POST_STEPS = ("unnormalizer_processor", "device_processor")


def serving_mode(checkpoint_dir) -> str:
    """`chunk` when a batched chunk call equals `select_action`'s queue for this checkpoint, else `step`.

    Read from the saved files alone (config.json, policy_{pre,post}processor.json), so that a worker
    can tell where the policy is served without importing lerobot: ACT without temporal ensembling,
    one observation step, and a postprocessor that only unnormalises (no relative actions, which
    lerobot turns absolute with the state of every tick)."""
    base = Path(checkpoint_dir)
    try:
        config = json.loads((base / "config.json").read_text())
        steps = {which: [str(s.get("registry_name") or s.get("class") or "") for s in
                         json.loads((base / f"policy_{which}processor.json").read_text()).get("steps", [])]
                 for which in ("pre", "post")}
    except (OSError, ValueError, AttributeError):
        return STEP
    if config.get("type") != "act" or config.get("temporal_ensemble_coeff") is not None:
        return STEP
    if int(config.get("n_obs_steps") or 1) != 1:
        return STEP
    if any("relative" in n or "absolute" in n for n in steps["pre"] + steps["post"]):
        return STEP
    return CHUNK if set(steps["post"]) <= set(STATELESS_POST_STEPS) else STEP
