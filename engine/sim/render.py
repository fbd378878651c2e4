"""Offscreen rendering, created lazily: a machine without GL can still run the oracle."""

from __future__ import annotations

import os
import weakref
from contextlib import contextmanager

import mujoco
import numpy as np

from prereg.core.errors import UsageError

INSTALL_HINT = (
    "install an offscreen GL: `apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri` with "
    "MUJOCO_GL=egl, or `apt-get install libosmesa6` with MUJOCO_GL=osmesa"
)


class RenderUnavailable(UsageError, RuntimeError):
    """No offscreen OpenGL context could be made; the message says what to install (exit 2)."""


DEFAULT_GEOM_GROUPS = (0, 1, 2)  # what a default mjvOption draws (the policy's cameras)


class FrameRenderer:
    """One mujoco.Renderer per model, made on the first frame; shadows and reflections off.

    `groups` are the geom groups any of its frames may draw (a scene_option that shows another
    group draws no mesh for it): the GL context holds only what it can draw (see `_lean_context`)."""

    def __init__(self, model: mujoco.MjModel, size: int, groups: tuple[int, ...] = DEFAULT_GEOM_GROUPS):
        self.model = model
        self.size = int(size)
        self.groups = tuple(sorted(set(groups)))
        self._renderer: mujoco.Renderer | None = None
        self._finalizer: weakref.finalize | None = None

    def render(self, data: mujoco.MjData, camera: str, scene_option: mujoco.MjvOption | None = None) -> np.ndarray:
        """An HxWx3 uint8 frame from the named camera (a fresh array, safe to keep); `scene_option`
        picks the geom groups drawn (default: MuJoCo's, groups 0-2)."""
        renderer = self._renderer or self._make()
        renderer.update_scene(data, camera=camera, scene_option=scene_option)
        return renderer.render().copy()

    def segment(self, data: mujoco.MjData, camera: str, scene_option: mujoco.MjvOption | None = None) -> np.ndarray:
        """The same view's segmentation: HxWx2 int32 (object id, mjtObj type; -1 where nothing is drawn)."""
        renderer = self._renderer or self._make()
        renderer.update_scene(data, camera=camera, scene_option=scene_option)
        renderer.enable_segmentation_rendering()
        try:
            return renderer.render().copy()
        finally:
            renderer.disable_segmentation_rendering()

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._renderer = self._finalizer = None

    def _make(self) -> mujoco.Renderer:
        try:
            with _lean_context(self.model, self.size, self.groups):
                renderer = mujoco.Renderer(self.model, height=self.size, width=self.size,
                                           max_geom=scene_geoms(self.model))
        except Exception as exc:  # the GL backends raise several unrelated types
            raise RenderUnavailable(_why_no_renderer(exc)) from exc
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._renderer = renderer
        # Free the GL context before interpreter teardown, where mujoco's __del__ fails noisily.
        self._finalizer = weakref.finalize(self, renderer.close)
        return renderer


def scene_geoms(model: mujoco.MjModel) -> int:
    """Room in the abstract scene for everything mjv_updateScene can add with our options (geoms,
    sites, tendons, flexes, skins, twice over): mujoco.Renderer's default of 10,000 was ~10 MB a
    renderer for a scene of 45 geoms."""
    return 2 * (model.ngeom + model.nsite + model.ntendon + model.nflex + model.nskin) + 100


@contextmanager
def _lean_context(model: mujoco.MjModel, size: int, groups: tuple[int, ...]):
    """While the renderer's GL context is made, the model as the context needs it: an offscreen
    buffer of `size` pixels a side (the model's offwidth x offheight, 640 x 480 by default, with 4x
    multisampling), and no triangles for meshes that no geom of `groups` shows. mjr_makeContext
    uploads every mesh; the SO-101's collision meshes (group 3, never drawn: 320k of its 350k
    faces) were about 30 MB of a worker's heap (Mesa keeps display lists in memory). The frames
    are the same pixels. Restored before anything else runs (the worker's rollout thread makes it
    between ticks), so physics never sees the change."""
    vis = model.vis.global_
    saved_off = (int(vis.offwidth), int(vis.offheight))
    drawn = {int(model.geom_dataid[g]) for g in range(model.ngeom)
             if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and int(model.geom_group[g]) in groups}
    hidden = [i for i in range(model.nmesh) if i not in drawn]
    saved_faces = model.mesh_facenum[hidden].copy()
    saved_graph = model.mesh_graphadr[hidden].copy()
    try:
        vis.offwidth, vis.offheight = size, size
        model.mesh_facenum[hidden] = 0
        model.mesh_graphadr[hidden] = -1
        yield
    finally:
        vis.offwidth, vis.offheight = saved_off
        model.mesh_facenum[hidden] = saved_faces
        model.mesh_graphadr[hidden] = saved_graph


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
