"""Offscreen rendering, created lazily: a machine without GL can still run the oracle."""

from __future__ import annotations

import os
import weakref

import mujoco
import numpy as np

from prereg.core.errors import UsageError

INSTALL_HINT = (
    "install an offscreen GL: `apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri` with "
    "MUJOCO_GL=egl, or `apt-get install libosmesa6` with MUJOCO_GL=osmesa"
)


class RenderUnavailable(UsageError, RuntimeError):
    """No offscreen OpenGL context could be made; the message says what to install (exit 2)."""


class FrameRenderer:
    """One mujoco.Renderer per model, made on the first frame; shadows and reflections off."""

    def __init__(self, model: mujoco.MjModel, size: int):
        self.model = model
        self.size = int(size)
        self._renderer: mujoco.Renderer | None = None
        self._finalizer: weakref.finalize | None = None

    def render(self, data: mujoco.MjData, camera: str, scene_option: mujoco.MjvOption | None = None) -> np.ndarray:
        """An HxWx3 uint8 frame from the named camera (a fresh array, safe to keep); `scene_option`
        picks the geom groups drawn (default: MuJoCo's, groups 0-2)."""
        renderer = self._renderer or self._make()
        renderer.update_scene(data, camera=camera, scene_option=scene_option)
        return renderer.render().copy()

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._renderer = self._finalizer = None

    def _make(self) -> mujoco.Renderer:
        try:
            renderer = mujoco.Renderer(self.model, height=self.size, width=self.size)
        except Exception as exc:  # the GL backends raise several unrelated types
            raise RenderUnavailable(_why_no_renderer(exc)) from exc
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._renderer = renderer
        # Free the GL context before interpreter teardown, where mujoco's __del__ fails noisily.
        self._finalizer = weakref.finalize(self, renderer.close)
        return renderer


def _why_no_renderer(exc: Exception) -> str:
    """Name the backend mujoco actually chose: it reads MUJOCO_GL once, when first imported."""
    from mujoco.rendering.classic import gl_context

    chosen = getattr(gl_context, "_MUJOCO_GL", "?")
    now = os.environ.get("MUJOCO_GL", "")
    message = f"cannot create an offscreen renderer with MUJOCO_GL={chosen!r} ({type(exc).__name__}: {exc}); "
    if chosen != now:
        message += (
            f"mujoco was imported before MUJOCO_GL was set to {now!r} (engine.sim sets it when imported "
            "first): export MUJOCO_GL=egl before starting Python, or import engine.sim before mujoco; "
        )
    return message + INSTALL_HINT
