"""The one vocabulary of a pre-registration, shared with the engine: policies, decodes, convmaps,
dtypes, intervals, joints and the reads a rule may name. The engine imports these lists (prereg
imports nothing from the engine); tests/test_vocabulary.py keeps the engine's own choices in step."""

from __future__ import annotations

import re

FORMAT = "fontaine-prereg/1"

PLUGIN = "plugin"  # a lab's own policy: the `fontaine.policies` entry point the arm's checkpoint names
POLICIES = ("scripted", "molmoact2", "molmoact2-discrete", "lerobot", PLUGIN)  # lerobot: any lerobot checkpoint (ACT, ...)
DECODES = {"molmoact2": ("flow",), "molmoact2-discrete": ("reference", "grammar-masked")}
PATHWAYS = {"molmoact2": "flow", "molmoact2-discrete": "discrete"}  # a MolmoAct2 policy's pathway
CONVMAPS = ("official", "identity", "fit")
DTYPES = ("bf16", "fp32")
INTERVALS = ("wilson", "clopper-pearson", "both")
JOINT_NAMES = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")



def decode_problem(policy: str, decode: str | None) -> str | None:
    """Why `decode` is not one the policy's pathway allows, in one line, or None when it is (or the
    policy loads no model): the document's check, the engine's policy factory and the MolmoAct2 loader
    all ask here, so the three never disagree about which decodes a pathway allows."""
    allowed = DECODES.get(policy)
    if allowed is None or decode in allowed:
        return None
    return f"the {PATHWAYS[policy]} pathway ({policy}) decodes with {' or '.join(allowed)}, not {decode!r}"


# Reads a decision rule may name (per arm); the first block needs only the arm's rows, the
# second needs a comparator.
ARM_READS = (
    "successes", "n", "n_planned", "success_rate", "success_ci_low", "success_ci_high",
    "reset_strikes", "zero_fallbacks", "zero_fallback_rate", "predicts", "error_rows", "mask_violations",
    "engaged", "knock_aways", "quiet", "progress_final_mean", "progress_final_median",
)
COMPARATOR_READS = (
    "delta_mean", "delta_ci_low", "delta_ci_high", "better", "tied", "worse",
    "shared_seeds", "success_overlap",
)
RULE_READS = ARM_READS + COMPARATOR_READS
SECONDARY_READS = (
    "engaged", "knock_aways", "quiet", "progress_final_mean", "progress_final_median",
    "success_seeds", "chart", "mask_violations", "first_action_delta_deg", "success_overlap",
)
PRIMARY_READS = ("successes",)

# The joint-convention shim's tripwires a plan may register under `gates: tripwires:` (docs/convmap.md),
# run by the driver before the first episode; the defaults are engine/policies/convmap/tripwires.py's.
TRIPWIRES = ("coverage", "first_action")
COVERAGE_MAX_UNCOVERED = 0.30  # share of a joint's reachable range the map may leave clipped
RIG_TABLE_SEEDS = (0, 1, 2, 3, 4, 5)  # the scripted oracle's rollouts that make the rig table ...
RIG_TABLE_EPISODE_SECONDS = 30.0  # ... and their budget
FIRST_ACTION_SEEDS = 3  # the probe's seeds: the first few of the protocol's
FIRST_ACTION_MAX_DEG = 10.0  # the limit without an anchor

# A revision that pins a Hugging Face snapshot immutably: a full 40-hex Git commit (a plan's
# revision or fast_revision; the engine's download refuses anything else where it needs a pin).
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")

# How a policy served in the driver answers the observations waiting together (fontaine-eval --serving),
# and what that makes of a run's rows (the manifest's policy_resolved.rows; the report says it)
SERVING_INVARIANT, SERVING_BATCHED = "invariant", "batched"
SERVINGS = (SERVING_INVARIANT, SERVING_BATCHED)
ROWS_INVARIANT = "invariant"  # each action computed alone (batch 1, or in the episode's own worker)
ROWS_BATCH_DEPENDENT = "batch-dependent"  # served batched: an action's last bits depend on its batch
ROWS_LEVELS = {
    ROWS_INVARIANT: "each observation's action is computed alone (batch 1), or in the episode's own worker: "
                    "the rows do not depend on the number of workers or on timing",
    ROWS_BATCH_DEPENDENT: "served batched: an action can differ in its last bits with the observations that shared "
                          "its predict call, so the rows can depend on the number of workers and on timing "
                          "(fontaine-eval --serving invariant serves each alone)",
}

