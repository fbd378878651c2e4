"""Envs: the scenes and tasks an evaluation runs on, behind one contract (issue 23).

`EnvSpec` declares a task (spec.py); the registry finds it by name among the built-ins
(`boat-on-disk`, `pick-lift`) and the `fontaine.envs` entry points a lab installs (registry.py),
reads a lab's env file (`--env path/to/env.yaml`: envfile.py, with declare.py, mjcf_scan.py and
place_scene.py), and runs a registered Gymnasium env
through an adapter (gym_adapter.py: `--env gym:ID`, or an adapter file). This
package may import engine.sim and prereg, never console (tests/test_import_rules.py).
"""

from engine.envs.declare import EnvFileError
from engine.envs.envfile import is_env_file, load_env_file
from engine.envs.gym_adapter import is_gym_ref
from engine.envs.registry import (
    DEFAULT_ENV,
    ENTRY_POINT_GROUP,
    UnknownEnv,
    check_name,
    compiled_scenes,
    entries,
    env_names,
    env_record,
    env_sha256,
    get_env,
    list_lines,
)
from engine.envs.spec import BoundsSpec, EnvError, EnvSpec, GraspSpec, ResetSpec, SimEnv, SuccessSpec

__all__ = [
    "DEFAULT_ENV", "ENTRY_POINT_GROUP", "BoundsSpec", "EnvError", "EnvFileError", "EnvSpec", "GraspSpec", "ResetSpec",
    "SimEnv", "SuccessSpec", "UnknownEnv", "check_name", "compiled_scenes", "entries", "env_names", "env_record", "env_sha256", "get_env",
    "is_env_file", "is_gym_ref", "list_lines", "load_env_file",
]
