"""An env's share of reachable seeds, for `fontaine-eval --list-envs` (issue 45): of its first `SHARE_SEEDS`
seeds, how many start with the object and the target within the SO-101's reach (engine/sim/reach.py), so
a lab knows before any policy is blamed how much of its task is doable at all.

Worked out once per env content and reach rule: each env is reset on every seed and checked (a few
seconds for Fontaine's envs, about half a minute for so101-nexus's, whose far spawns take the solver
longest), and the count kept in `$FONTAINE_CACHE/reach/` (default `~/.cache/fontaine/reach/`) under the
env's sha256 and `REACH_RULE`; a changed env or a changed rule is worked out again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

SHARE_SEEDS = 50


def reach_rule() -> str:
    """What the share depends on besides the env: the reach module's numbers (a change re-counts)."""
    from engine.sim import reach

    rule = {k: v for k, v in vars(reach).items() if k.isupper() and isinstance(v, (int, float, tuple))}
    return hashlib.sha256(json.dumps(rule, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    from prereg.core.cache import cache_root

    return cache_root() / "reach"


def count_reachable(spec, seeds: int = SHARE_SEEDS) -> int:
    """Reset the env of `spec` (an EnvSpec) on seeds 0 .. seeds-1 and count the starts the arm reaches."""
    env = spec.create(render_size=32)
    try:
        reached = 0
        for seed in range(seeds):
            env.reset(seed)
            reached += bool(env.reach().reachable)
        return reached
    finally:
        env.close()


def reach_share(spec, sha256: str, seeds: int = SHARE_SEEDS) -> tuple[int, int]:
    """(reachable seeds, seeds) of the env of `spec` (an EnvSpec) whose content hash is `sha256`, from the
    cache or counted."""
    path = cache_dir() / f"{sha256}-{reach_rule()}-{seeds}.json"
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        if type(got.get("reachable")) is int and got.get("seeds") == seeds:
            return got["reachable"], seeds
    except (OSError, ValueError, AttributeError):
        pass  # not counted yet, or a file that is not ours: count again
    reached = count_reachable(spec, seeds)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"env": spec.name, "reachable": reached, "seeds": seeds}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the share is printed, just not kept
    return reached, seeds


def share_text(reached: int, seeds: int) -> str:
    return f"reachable {reached}/{seeds} seeds ({100 * reached / seeds:.0f}%)"
