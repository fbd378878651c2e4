"""Envs: the scenes and tasks an evaluation runs on, behind one contract (issue 23).

`EnvSpec` declares a task (spec.py); the registry finds it by name among the built-ins
(`boat-on-disk`) and the `fontaine.envs` entry points a lab installs (registry.py). This
package may import engine.sim and prereg, never console (tests/test_import_rules.py).
"""

from engine.envs.registry import (
    DEFAULT_ENV,
    ENTRY_POINT_GROUP,
    UnknownEnv,
    check_name,
    entries,
    env_names,
    env_sha256,
    get_env,
    list_lines,
)
from engine.envs.spec import BoundsSpec, EnvError, EnvSpec, GraspSpec, ResetSpec, SimEnv, SuccessSpec

__all__ = [
    "DEFAULT_ENV", "ENTRY_POINT_GROUP", "BoundsSpec", "EnvError", "EnvSpec", "GraspSpec", "ResetSpec", "SimEnv",
    "SuccessSpec", "UnknownEnv", "check_name", "entries", "env_names", "env_sha256", "get_env", "list_lines",
]
