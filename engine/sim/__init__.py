"""The MuJoCo SO-101 boat scene, its task metrics and the offscreen renderer.

MUJOCO_GL defaults to EGL (headless, works on CPU Mesa) and must be set before mujoco's
GL bits are imported, so this package sets it first; a process that imported mujoco
earlier keeps whatever it had.
"""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from engine.sim.env import BoatEnv  # noqa: E402
from engine.sim.render import RenderUnavailable  # noqa: E402

__all__ = ["BoatEnv", "RenderUnavailable"]
