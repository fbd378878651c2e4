"""Policies a lab brings: the `fontaine.policies` entry points (`fontaine-eval --policy NAME`).

A lab's distribution declares, in its pyproject.toml,

    [project.entry-points."fontaine.policies"]
    my-policy = "my_lab.policy:make_policy"

where `make_policy` is a class or a callable taking no arguments that returns an object with

    chunk_horizon: int            # ticks each returned chunk covers at most (30 = 1 s at 30 Hz)
    needs_images: bool            # render the scene's cameras for it (costs wall time)
    def reset(self, seed: int) -> None: ...
        # a new episode (its seed) starts; called before that episode's first predict
    def predict(self, observations: list[PolicyObservation]) -> list[array-like (H, 6)]: ...
        # one call for the waiting observations (several episodes, batched across workers);
        # element i answers observation i: H <= chunk_horizon joint targets, one per 30 Hz tick

and optionally `describe(self) -> dict` (recorded in the manifest). Units are LeRobot calibrated
degrees (the five arm joints in degrees, the gripper 0..100, JOINT_NAMES order) on the model's side
of the joint-convention shim, exactly what a lerobot checkpoint sees: `--convmap` (identity by
default) maps them. docs/policies.md has a complete example. Entry points are read with
importlib.metadata each time; a built-in's name (scripted, hold) cannot be taken.
"""

from __future__ import annotations

import importlib.metadata
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.policies.base import JOINT_NAMES, Chunk, Observation
from engine.policies.convmap import PRESETS, ConvMap, rig_deg_to_sim_rad, sim_rad_to_rig_deg
from prereg.core.errors import UsageError

ENTRY_POINT_GROUP = "fontaine.policies"
RESERVED = ("scripted", "hold", "lerobot", "molmoact2", "molmoact2-discrete")


class PluginError(UsageError):
    """A `fontaine.policies` entry point that cannot be used: one line (exit 2)."""


@dataclass(frozen=True)
class PolicyObservation:
    """What a lab's policy sees at a replan."""

    seed: int  # the episode's seed
    tick: int  # 30 Hz ticks since the episode's reset
    replan_index: int  # 0 at the episode's first predict
    state_deg: np.ndarray  # (6,) joints, LeRobot calibrated degrees through the shim (JOINT_NAMES order)
    task: str
    images: dict[str, np.ndarray] | None  # {"front": HxWx3 uint8, "wrist": ...} when needs_images


def _entry_points():
    """The installed `fontaine.policies` entry points (tests replace this or install a distribution)."""
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def plugin_names() -> list[str]:
    return sorted({ep.name for ep in _entry_points() if ep.name not in RESERVED})


def is_plugin(name: str) -> bool:
    return name not in RESERVED and any(ep.name == name for ep in _entry_points())


def load_plugin(name: str, *, convmap: ConvMap = PRESETS["identity"], task: str | None = None) -> "PluginPolicy":
    """The entry point called `name`, built and wrapped; PluginError (one line) when it cannot be."""
    found = [ep for ep in _entry_points() if ep.name == name and name not in RESERVED]
    if not found:
        known = ", ".join(["scripted", "hold", *plugin_names()])  # (and --lerobot, --molmoact2 CKPT)
        raise PluginError(f"--policy {name}: no such policy (known: {known}); a lab's own is a "
                          f"'{ENTRY_POINT_GROUP}' entry point (docs/policies.md)")
    ep = found[0]
    dist = getattr(getattr(ep, "dist", None), "name", None)
    source = f"entry point {ep.value}" + (f" ({dist})" if dist else "")
    try:
        inner = ep.load()()
    except Exception as exc:  # noqa: BLE001 - a lab's code may fail in any way: one line, never a traceback
        raise PluginError(f"policy {name}: {source} cannot be loaded ({type(exc).__name__}: {exc})") from None
    missing = [a for a in ("reset", "predict") if not callable(getattr(inner, a, None))]
    horizon = getattr(inner, "chunk_horizon", None)
    if missing or isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        what = f"no {' or '.join(missing)} method" if missing else f"chunk_horizon {horizon!r} (a positive int)"
        raise PluginError(f"policy {name}: {source} gave {type(inner).__name__} with {what}; "
                          "see docs/policies.md for the protocol")
    return PluginPolicy(name, inner, source=source, version=getattr(getattr(ep, "dist", None), "version", None),
                        convmap=convmap, task=task)


class PluginPolicy:
    """A lab's policy behind the engine's Policy protocol: served batched in the driver, the shim applied."""

    needs_privileged = False
    serve_in_driver = True

    def __init__(self, name: str, inner, *, source: str, version: str | None, convmap: ConvMap, task: str | None):
        self.name, self.inner, self.convmap, self.task = name, inner, convmap, task
        self.chunk_horizon = int(inner.chunk_horizon)
        self.needs_images = bool(getattr(inner, "needs_images", False))
        self._source, self._version = source, version

    def describe(self) -> dict[str, Any]:
        own = getattr(self.inner, "describe", None)
        extra = own() if callable(own) else {}
        return {"policy": self.name, "source": self._source, "version": self._version, "chunk_horizon": self.chunk_horizon,
                "needs_images": self.needs_images, "convmap": self.convmap.as_dict(), "task": self.task,
                **({"own": extra} if extra else {})}

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        if not observations:
            return []
        started = time.perf_counter()
        for obs in observations:
            if obs.replan_index == 0:
                self.inner.reset(int(obs.seed))
        inputs = [PolicyObservation(seed=o.seed, tick=o.tick, replan_index=o.replan_index,
                                    state_deg=self.convmap.to_model(sim_rad_to_rig_deg(np.asarray(o.state_rad))),
                                    task=self.task or o.task, images=o.images) for o in observations]
        answers = list(self.inner.predict(inputs))
        if len(answers) != len(observations):
            raise ValueError(f"policy {self.name} answered {len(answers)} of {len(observations)} observations")
        chunks = []
        for answer in answers:
            deg = np.asarray(answer, dtype=np.float64)
            if deg.ndim == 1:
                deg = deg[None, :]
            if deg.ndim != 2 or deg.shape[1] != len(JOINT_NAMES) or len(deg) == 0 or not np.isfinite(deg).all():
                raise ValueError(f"policy {self.name} returned a chunk of shape {deg.shape} (want (H, 6), finite)")
            targets = rig_deg_to_sim_rad(self.convmap.to_rig(deg))
            chunks.append(Chunk(targets_rad=targets, batch_size=len(observations),
                                info={"predict_wall_s": time.perf_counter() - started}))
        return chunks
