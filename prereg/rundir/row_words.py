"""A row in words: what each field of the row contract (prereg/rundir/rows.py) means, and its value as a
person reads it. The console's seed view (`w`) and the report's page (results.html) show a seed's
row with these words."""

from __future__ import annotations

import json

from prereg.core.untrusted import redacted
from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM

# What each field of a row means, in words (the row contract is prereg/rundir/rows.py).
FIELD_WORDS: dict[str, str] = {
    "schema": "row schema version",
    "run_id": "the run this row belongs to",
    "arm": "the arm (policy configuration) of the run",
    "seed": "the episode's seed: boat and arm start positions",
    "variant": "the registered visual variant of the scene it ran on (null: the scene as declared)",
    "worker": "the worker process that ran the episode",
    "success": "Fontaine's success: a place's object released and at rest on the target (a lift's: held at its height)",
    "success_tick": "simulation tick at which it succeeded",
    "ticks": "simulation ticks run",
    "episode_seconds": "episode length, simulated seconds",
    "dist_initial_cm": "boat-to-goal distance at the start",
    "dist_final_cm": "boat-to-goal distance at the end",
    "dist_min_cm": "closest the boat came to the goal",
    "progress_cm": "best progress toward the goal (initial - min distance)",
    "progress_final_cm": "progress kept at the end (initial - final distance)",
    "knock_away": f"pushed away: progress_final <= {KNOCK_AWAY_CM:g} cm",
    "engaged": f"moved the boat: progress > {ENGAGED_CM:g} cm",
    "upright_final": "boat uprightness at the end (1 = upright)",
    "object_z_mm": "object's base height at the end",
    "boat_z_mm": "boat height at the end (rows before schema 3)",
    "success_streak": "ticks in a row the success test held at the end",
    "env_success": "the env's own success test (a Gymnasium env's info; an env file's as declared)",
    "env_success_tick": "tick at which the env's own test first held",
    "reachable": "the SO-101 reaches a grasp on the object and a place at the target from this start",
    "tipped": "the boat tipped over",
    "reset_strikes": "resets that failed their check (must be 0)",
    "grasped_lifted": "both jaw pads held the object off its support (0.1 s or more)",
    "grasped_squeezed": "both jaw pads pressed the object from two sides, on its support or not (0.1 s or more)",
    "grasped": "grasped_lifted, by its name in rows before schema 4",
    "grasp_tick": "simulation tick at which the grasp held",
    "lift_max_mm": "highest the boat was lifted while held",
    "carried_cm": "how far the boat travelled while held",
    "released": "the gripper let go of a grasped boat",
    "predicts": "policy calls in the episode",
    "zero_fallbacks": "predicts answered with a zero chunk (a decode failure)",
    "mask_violations": "tokens the grammar mask changed",
    "mean_batch": "mean batch size the predicts were served in",
    "first_action_delta_deg": "first action's jump from the current pose",
    "wall_s": "wall-clock seconds the episode took",
    "started_at": "when it started (UTC)",
    "finished_at": "when it finished (UTC)",
    "video": "the filmed episode, relative to the run directory",
    "status": "ok, or error (the episode did not finish)",
    "error": "why the episode failed",
    "note": "a remark from the driver (e.g. a video that could not be written)",
}
UNITS = {"dist_initial_cm": "cm", "dist_final_cm": "cm", "dist_min_cm": "cm", "progress_cm": "cm",
         "progress_final_cm": "cm", "boat_z_mm": "mm", "object_z_mm": "mm", "first_action_delta_deg": "°", "wall_s": "s",
         "episode_seconds": "s", "lift_max_mm": "mm", "carried_cm": "cm"}
NOT_IN_CONTRACT = "(not in the row contract)"


def fmt_value(key: str, value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        text = f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.4g}"
        if text in ("-0", "-0.0"):
            text = "0"
    else:
        text = redacted(str(value))  # a row is a file anyone can write: a token in its note is not shown
    unit = UNITS.get(key)
    return f"{text} {unit}" if unit else text


def row_in_words(row: dict) -> list[tuple[str, str, str]]:
    """(field, value, what it means) for every field of the row, contract fields first."""
    out = []
    for key in list(FIELD_WORDS) + [k for k in row if k not in FIELD_WORDS]:
        if key in row:
            value = row[key]
            if isinstance(value, (dict, list)):
                value = json.dumps(value)[:200]
            out.append((key, fmt_value(key, value), FIELD_WORDS.get(key, NOT_IN_CONTRACT)))
    return out
