"""The fields a document may hold (every known key, the name and override patterns) and the positioned
problem context validation reports through (`Ctx`: a field path to its 1-based line; `Errors`: one
item's problems, remembering whether it had any)."""

from __future__ import annotations

import re

from prereg.core.errors import Problem

TOP_KEYS = ("fontaine", "id", "title", "created", "arms", "protocol", "reads", "gates", "decision_rules", "comparison")
AMEND_KEYS = ("title", "arms", "protocol", "reads", "gates", "decision_rules", "comparison")
ARM_KEYS = (
    "name", "policy", "checkpoint", "revision", "fast_revision", "decode", "convmap", "convmap_overrides",
    "norm_tag", "dtype", "workers", "flow_steps", "task", "notes", "env", "env_sha256", "grasp_miss", "grasp_drop", "features",
)
PROTOCOL_KEYS = ("seeds", "episode_seconds", "workers", "video_draw", "record_predicts", "env", "env_sha256",
                 "pass_env", "success_field", "variants", "read_variant", "pool_cameras")
GATE_KEYS = ("gpu_hours", "pace", "stall", "warn_fraction", "decided", "sequential", "tripwires")
TRIPWIRE_KEYS = {"coverage": ("max_uncovered", "span_limited", "rig"), "first_action": ("seeds", "anchor_deg", "max_deg")}
RIG_KEYS = ("seeds", "episode_seconds")  # gates.tripwires.coverage.rig: the scripted rollouts behind the rig table
TRIPWIRES_HINT = ("tripwires: {coverage: {max_uncovered: 0.30, span_limited: [wrist_roll]}, "
                  "first_action: {anchor_deg: 6.31}} (docs/convmap.md)")
DECIDED_VALUES = ("stop", "record")  # gates.decided: stop when the rules are settled, or only record it
READS_KEYS = ("primary", "interval", "validity", "secondary", "comparator", "power", "real")
POWER_KEYS = ("assumed_rates", "minimum_effect", "delta_sd_cm", "pilot")  # reads.power: prereg/stats/power.py
EFFECT_KEYS = ("success_rate", "progress_cm")
VALIDITY_KEYS = ("reset_strikes_max", "zero_fallback_rate_max", "error_rows_max")
RULE_KEYS = ("if", "then", "arm")

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
OVERRIDE_RE = re.compile(r"^(?P<joint>[a-z_]+)=(?:(?P<sign>[+-]?1),)?(?P<offset>[+-]?\d+(?:\.\d+)?)$")


class Ctx:
    """Problems with positions, for one YAML part (the front matter or an amendment block)."""

    def __init__(self, problems: list[Problem], lines: dict, prefix: str, fallback_line: int):
        self.problems = problems
        self.lines = lines
        self.prefix = prefix
        self.fallback = fallback_line

    def line(self, path: tuple) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), self.fallback)

    def name(self, path: tuple) -> str:
        out = self.prefix
        for p in path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
        return out

    def err(self, path: tuple, msg: str, hint: str = "", line: int | None = None) -> None:
        self.problems.append(Problem(self.name(path), msg, line or self.line(path), hint))


class Errors:
    """`ctx.err` under one item's path (`errs(sub, msg, hint)` reports at path + sub), remembering
    whether any was reported: an item with a problem is not built."""

    def __init__(self, ctx: Ctx, path: tuple) -> None:
        self.ctx, self.path, self.bad = ctx, path, False

    def __call__(self, sub: tuple, msg: str, hint: str = "") -> None:
        self.bad = True
        self.ctx.err(self.path + sub, msg, hint)

    def unknown_keys(self, raw: dict, known, what: str) -> None:
        """Each key of `raw` not in `known`: "unknown {what} 'k'", naming the known ones."""
        for k in raw:
            if k not in known:
                self((k,), f"unknown {what} '{k}'", "known: " + ", ".join(known))
