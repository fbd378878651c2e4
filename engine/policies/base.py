"""The one interface every policy serves: observations in, chunks of joint targets out.

Units at this seam are the simulator's own: the five arm joints in radians and the gripper
joint in radians (low = closed), in the order of `JOINT_NAMES`. A policy that speaks another
convention (MolmoAct2 speaks rig degrees through the joint-convention shim) converts inside.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from prereg.core.vocabulary import JOINT_NAMES as VOCAB_JOINTS

JOINT_NAMES: tuple[str, ...] = VOCAB_JOINTS  # the one list, shared with pre-registrations (prereg/core/vocabulary.py)
CONTROL_HZ = 30
DEFAULT_TASK = "put the boat on the disk"


@dataclass
class Observation:
    """What a policy sees at a replan. `privileged` is filled only for policies that ask for it."""

    seed: int
    tick: int
    replan_index: int
    state_rad: np.ndarray  # (6,) joint positions, sim units
    task: str = DEFAULT_TASK
    images: dict[str, np.ndarray] | None = None  # {"front": HxWx3 uint8, "wrist": HxWx3 uint8}
    privileged: dict[str, Any] | None = None  # true poses: boat_pos, boat_quat, disk_pos, ...


@dataclass
class Chunk:
    """A chunk of joint position targets, one row per 30 Hz tick, in sim units."""

    targets_rad: np.ndarray  # (H, 6)
    zero_fallback: bool = False  # the emission did not decode; the chunk is a hold/zero chunk
    mask_violations: int = 0  # grammar-mask interventions during this decode
    batch_size: int = 1  # how many observations shared the predict call
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    name: str
    chunk_horizon: int  # ticks per chunk; replans per episode follow from the episode budget
    needs_images: bool
    needs_privileged: bool
    serve_in_driver: bool  # True: one instance in the driver serves batched predicts (GPU models)

    def describe(self) -> dict[str, Any]:
        """Resolved settings for the manifest (checkpoint, hash, decode mode, shim, dtype, ...)."""
        ...

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        """One call for the waiting observations; element i answers observation i."""
        ...
