"""The env contract: what an evaluation scene declares, and what its running instance offers.

An `EnvSpec` is the whole of a task as data plus two builders: the scene (an `MjSpec`), the
object and the target named, the policy's image inputs mapped to the scene's cameras, the
seeded reset distribution with its strike rule, the success predicate with its tolerances,
the progress metric, the physical bounds (floor, table, the region any object stays in, so
every distance is bounded) and the episode defaults. `make()` returns a `SimEnv`, the running
instance the episode loop (engine/workers/episode.py) and the workers drive.

Its content hash (`sha256()`) covers the spec's canonical JSON, the scene as MuJoCo writes it
(`MjSpec.to_xml`, which holds every geom, body, camera and solver setting) and every file the
spec references (an MJCF, its meshes): a changed tolerance, a moved camera or an edited mesh
changes it; reformatting the Python that builds it does not.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

import numpy as np

from engine.envs import pinned
from prereg.core.errors import UsageError
from prereg.core.safe_read import why_not_a_file

NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)


class EnvError(UsageError):
    """An env that cannot be used: unknown, not loadable, or declaring something its scene lacks (exit 2)."""


@runtime_checkable
class SimEnv(Protocol):
    """One running scene, driven at the control tick. Sim units: joint targets in radians."""

    tick: int

    def reset(self, seed: int) -> int: ...  # draw and settle the scene for `seed`; the reset strikes it took

    def step_tick(self, targets_rad: np.ndarray) -> None: ...

    @property
    def success(self) -> bool: ...

    def row(self) -> dict: ...  # the simulator's row fields for the episode so far

    def state_rad(self) -> np.ndarray: ...

    def privileged(self) -> dict: ...  # true poses, for privileged policies (a scripted oracle)

    def policy_images(self) -> dict[str, np.ndarray]: ...  # {policy input: HxWx3 uint8}

    def film(self, size: int | None = None) -> np.ndarray: ...  # one video frame

    def close(self) -> None: ...


@dataclass(frozen=True)
class ResetSpec:
    """The seeded reset distribution and its strike rule, in words and numbers."""

    distribution: str
    params: Mapping[str, Any]
    settle_ticks: int
    strike_rule: str  # what makes a settled draw invalid, and what happens then
    max_strikes: int


@dataclass(frozen=True)
class SuccessSpec:
    predicate: str
    tolerances: Mapping[str, float]  # every threshold the predicate uses, named with its unit
    hold_ticks: int


@dataclass(frozen=True)
class GraspSpec:
    """How a grasp is read from contacts: the two jaw geoms, held for `hold_ticks`."""

    jaw_geoms: tuple[str, str]
    hold_ticks: int
    rule: str


@dataclass(frozen=True)
class BoundsSpec:
    """Where things can be. Boxes are (x_min, x_max, y_min, y_max) in metres, world frame."""

    floor_z_m: float
    table_top_z_m: float
    table_xy_m: tuple[float, float, float, float]
    room_xy_m: tuple[float, float, float, float]  # the floor inside its walls: no object leaves it
    ceiling_z_m: float

    def max_distance_m(self) -> float:
        """The longest XY distance between a point on the table and one in the room: no row's
        distance (initial, final, min) can exceed it, so no progress can either."""
        tx0, tx1, ty0, ty1 = self.table_xy_m
        rx0, rx1, ry0, ry1 = self.room_xy_m
        return math.hypot(max(tx1 - rx0, rx1 - tx0), max(ty1 - ry0, ry1 - ty0))

    def contains(self, pos) -> bool:
        x0, x1, y0, y1 = self.room_xy_m
        return x0 <= pos[0] <= x1 and y0 <= pos[1] <= y1 and self.floor_z_m - 0.01 <= pos[2] <= self.ceiling_z_m


@dataclass(frozen=True)
class EnvSpec:
    name: str
    description: str
    object_body: str
    target_body: str
    cameras: Mapping[str, str]  # the policy's image inputs -> the scene's camera names
    reset: ResetSpec
    success: SuccessSpec
    progress: str  # the progress metric, in words
    grasp: GraspSpec
    bounds: BoundsSpec
    episode_seconds: float
    control_hz: int
    task: str  # the default language instruction
    build_scene: Callable[[], Any]  # -> mujoco.MjSpec
    make: Callable[..., SimEnv]  # make(spec, render_size=224[, model=None]) -> a SimEnv (model: a compiled variant)
    files: tuple[tuple[str, Path], ...] = field(default=())  # (label, path) of every file the scene reads

    def __post_init__(self):
        if not NAME_RE.fullmatch(self.name):
            raise EnvError(f"env name {self.name!r}: use lower-case letters, digits and '-' (at most 64)")

    def create(self, render_size: int = 224, model=None) -> SimEnv:
        """A running instance of this env; with `model` (a compiled variant of `build_scene()`'s scene,
        engine/envs/variant_env.py), one stepping a copy of that model instead of the scene as declared."""
        if model is None:
            return self.make(self, render_size=render_size)
        if not self.takes_model():
            raise EnvError(self.no_model_why())
        return self.make(self, render_size=render_size, model=model)

    def takes_model(self) -> bool:
        """Whether `make` accepts a compiled model (`model=`): what a registered visual variant needs."""
        import inspect

        try:
            params = inspect.signature(self.make).parameters
        except (TypeError, ValueError):
            return False
        return "model" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    def no_model_why(self) -> str:
        return (f"env {self.name}: its make() takes no compiled model, so it cannot run a registered variant; "
                "give it make(spec, render_size=224, model=None), building the env on `model` when one is given")

    def canonical(self) -> dict:
        """Everything declared, as JSON-able data (builders by their qualified names)."""
        out = {}
        for key in ("name", "description", "object_body", "target_body", "progress", "episode_seconds",
                    "control_hz", "task"):
            out[key] = getattr(self, key)
        out["cameras"] = dict(sorted(self.cameras.items()))
        for key in ("reset", "success", "grasp", "bounds"):
            out[key] = _jsonable(asdict(getattr(self, key)))
        out["build_scene"] = _qualname(self.build_scene)
        out["make"] = _qualname(self.make)
        out["files"] = sorted(label for label, _ in self.files)
        return out

    def canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), allow_nan=False)

    def scene_xml(self) -> str:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*empty prefix.*")
            return self.build_scene().to_xml()

    def sha256(self) -> str:
        """The content hash: canonical JSON, the scene's XML, then each referenced file by label."""
        h = hashlib.sha256()
        h.update(b"fontaine-env-1\0" + self.canonical_json().encode() + b"\0")
        h.update(hashlib.sha256(self.scene_xml().encode()).hexdigest().encode() + b"\0")
        for label, path in sorted(self.files, key=lambda f: f[0]):
            try:
                digest = _file_sha256(Path(path))
            except OSError as exc:
                raise EnvError(f"env {self.name}: file {label} ({path}) cannot be read "
                               f"({exc.strerror or exc})") from None
            h.update(f"{label}\0{digest}\0".encode())
        return h.hexdigest()

    def problems(self, model) -> list[str]:
        """What the spec names that the compiled scene lacks, and collision bits that would let the
        jaw meshes (not the pads) touch the object, one line each (empty when none)."""
        import mujoco

        out = []

        def has(kind, name):
            return mujoco.mj_name2id(model, kind, name) >= 0

        for what, name in (("object body", self.object_body), ("target body", self.target_body)):
            if not has(mujoco.mjtObj.mjOBJ_BODY, name):
                out.append(f"env {self.name}: {what} {name!r} is not in the scene")
        for key, cam in self.cameras.items():
            if not has(mujoco.mjtObj.mjOBJ_CAMERA, cam):
                out.append(f"env {self.name}: camera {cam!r} (the policy's {key!r} image) is not in the scene")
        for geom in self.grasp.jaw_geoms:
            if not has(mujoco.mjtObj.mjOBJ_GEOM, geom):
                out.append(f"env {self.name}: jaw geom {geom!r} is not in the scene")
        for label, path in self.files:
            why = why_not_a_file(path) if pinned.get(path) is None else None
            if why is not None:
                out.append(f"env {self.name}: file {label} {why} ({path})")
        if not out:
            from engine.sim.scene import collision_problems

            out += [f"env {self.name}: {p}" for p in collision_problems(model, self.object_body, self.grasp.jaw_geoms)]
        return out

    def line(self) -> str:
        """One line for --list-envs: the name first."""
        return f"{self.name}\t{self.description}"


def _qualname(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _file_sha256(path: Path) -> str:
    data = pinned.get(path)  # a launch's pinned bytes (engine/envs/pinned.py): the ones compiled and run
    if data is not None:
        return hashlib.sha256(data).hexdigest()
    from prereg.core.safe_read import Unreadable, check_regular

    try:  # a FIFO swapped in since the scan would hold the open forever
        check_regular(path)
    except Unreadable as exc:
        raise OSError(exc.why) from None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
