"""Fontaine's envs registered as Gymnasium envs (issue 34): `import engine.gym`, then
`gymnasium.make("fontaine/boat-on-disk-v0")`, `"fontaine/pick-lift-v0"`, or `"fontaine/env-v0"` with
`env=` any env Fontaine runs (an env file, `gym:ID`, an entry point). Observation and action spaces in
lerobot's convention (engine/gym/env.py); lerobot-eval runs them through engine/gym/lerobot.py.

This package may import engine.envs, engine.sim, engine.policies.convmap.shim and prereg
(tests/test_import_rules.py); nothing in the engine imports it.
"""

from __future__ import annotations

import gymnasium

NAMESPACE = "fontaine"
ENTRY_POINT = "engine.gym.env:FontaineGymEnv"
BUILTIN_SECONDS = {"boat-on-disk": 30.0, "pick-lift": 20.0}  # engine.envs' episode_seconds (a test holds them equal)
CONTROL_HZ = 30


def gym_id(env: str) -> str:
    return f"{NAMESPACE}/{env}-v0"


def register() -> None:
    """Register the built-ins and the generic `fontaine/env-v0` (idempotent)."""
    for env, seconds in BUILTIN_SECONDS.items():
        if gym_id(env) not in gymnasium.registry:
            gymnasium.register(id=gym_id(env), entry_point=ENTRY_POINT, kwargs={"env": env},
                               max_episode_steps=int(round(seconds * CONTROL_HZ)))
    if gym_id("env") not in gymnasium.registry:
        gymnasium.register(id=gym_id("env"), entry_point=ENTRY_POINT, max_episode_steps=int(30 * CONTROL_HZ))


register()
