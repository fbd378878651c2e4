"""An object's extent from its collision geometry, whatever its body origin (issue 34).

A lab's object may have its origin anywhere: at its centre (so101-nexus's cube), at a corner of a
mesh, under its base (Fontaine's boat). Where it rests, where its base is and how high it stands
are read from the geoms that collide, in the compiled model: boxes, spheres, capsules, cylinders
and ellipsoids exactly, meshes by their vertices, anything else by MuJoCo's bounding box.
"""

from __future__ import annotations

import mujoco
import numpy as np

_BOX, _SPHERE, _CAPSULE, _CYLINDER, _ELLIPSOID, _MESH = (
    mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE,
    mujoco.mjtGeom.mjGEOM_CYLINDER, mujoco.mjtGeom.mjGEOM_ELLIPSOID, mujoco.mjtGeom.mjGEOM_MESH)


def colliding_geoms(model: mujoco.MjModel, body_id: int) -> np.ndarray:
    """The ids of the geoms of `body_id`'s subtree that take part in collisions."""
    in_tree = model.body_rootid[model.geom_bodyid] == model.body_rootid[body_id]
    if model.body_rootid[body_id] != body_id:  # not a top-level body: its own subtree only
        in_tree = np.array([_descends(model, int(b), body_id) for b in model.geom_bodyid])
    collides = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    return np.flatnonzero(in_tree & collides)


def _descends(model, body: int, ancestor: int) -> bool:
    while body != ancestor and body != 0:
        body = int(model.body_parentid[body])
    return body == ancestor


def extent_along(model: mujoco.MjModel, geom: int, pos: np.ndarray, mat: np.ndarray, axis: np.ndarray) -> tuple[float, float]:
    """(min, max) of `axis` . x over the points x of `geom` placed at (pos, mat) in some frame."""
    axis = np.asarray(axis, dtype=float)
    c = float(axis @ pos)
    local = mat.T @ axis  # the axis in the geom's frame
    size = model.geom_size[geom]
    t = model.geom_type[geom]
    if t == _SPHERE:
        half = size[0]
    elif t == _BOX:
        half = float(np.abs(local) @ size)
    elif t == _ELLIPSOID:
        half = float(np.sqrt(np.sum((local * size) ** 2)))
    elif t == _CAPSULE:
        half = abs(local[2]) * size[1] + size[0]
    elif t == _CYLINDER:
        half = abs(local[2]) * size[1] + size[0] * float(np.sqrt(max(0.0, 1.0 - local[2] ** 2)))
    elif t == _MESH:
        mesh = model.geom_dataid[geom]
        start, n = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
        proj = model.mesh_vert[start:start + n] @ local
        return c + float(proj.min()), c + float(proj.max())
    else:  # a height field, an SDF: MuJoCo's bounding box in the geom's frame
        centre, halves = model.geom_aabb[geom][:3], model.geom_aabb[geom][3:]
        c += float(local @ centre)
        half = float(np.abs(local) @ halves)
    return c - half, c + half


def rest_box(model: mujoco.MjModel, body_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, rotation): the box that holds `body_id`'s colliding geometry (its subtree's) as
    the model places it at rest, in world axes about the body's origin, and the body's rotation
    there. The base of an object so placed is (centre x, centre y, low z) from its origin."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    origin = data.xpos[body_id]
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in colliding_geoms(model, body_id):
        pos, mat = data.geom_xpos[g] - origin, data.geom_xmat[g].reshape(3, 3)
        for i in range(3):
            a, b = extent_along(model, g, pos, mat, np.eye(3)[i])
            lo[i], hi[i] = min(lo[i], a), max(hi[i], b)
    return lo, hi, data.xmat[body_id].reshape(3, 3).copy()


def lowest_z(model: mujoco.MjModel, data: mujoco.MjData, geoms) -> float:
    """The lowest world z of the geoms, as `data` places them (after mj_kinematics)."""
    up = np.array([0.0, 0.0, 1.0])
    return min(extent_along(model, g, data.geom_xpos[g], data.geom_xmat[g].reshape(3, 3), up)[0] for g in geoms)
