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
        # one observation per call (--serving invariant, the default), or the waiting observations of
        # several episodes across workers (--serving batched); element i answers observation i:
        # H <= chunk_horizon joint targets, one per 30 Hz tick

and optionally `describe(self) -> dict` (recorded in the manifest). Units are LeRobot calibrated
degrees (the five arm joints in degrees, the gripper 0..100, JOINT_NAMES order) on the model's side
of the joint-convention shim, exactly what a lerobot checkpoint sees: `--convmap` (identity by
default) maps them. docs/policies.md has a complete example. Entry points are read with
importlib.metadata each time; a built-in's name (scripted, hold) cannot be taken.

Pinned by content (`plugin_source`): the entry point, its distribution's name and version, and every
file of the top-level package (or module) the entry point lives in, wherever it is installed (an
editable install's source folder included; `__pycache__` left out), each by its path inside the package
and its sha256: `sha256:<plugin_sha256>`, what a plan's `policy: plugin` arm registers as its `revision`.
The files are hashed before the entry point is imported and again once it is loaded; a pinned launch
whose files are another pin, or changed in between, is refused naming the file. What it does not
cover: other distributions it imports (numpy, torch, ...) and files it reads from outside its package.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.policies.base import JOINT_NAMES, Chunk, Observation
from engine.policies.convmap.shim import PRESETS, ConvMap, rig_deg_to_sim_rad, sim_rad_to_rig_deg
from prereg.core.errors import UsageError

ENTRY_POINT_GROUP = "fontaine.policies"
RESERVED = ("scripted", "hold", "lerobot", "molmoact2", "molmoact2-discrete", "plugin")


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


@dataclass(frozen=True)
class PluginSource:
    """What a plugin policy is, by content: its entry point, distribution, version and files."""

    name: str  # the entry point's name
    value: str  # module:attribute
    distribution: str | None
    version: str | None
    files: tuple[tuple[str, str], ...]  # (path inside the package, sha256), sorted
    where: str  # the folder (or file) hashed, for messages

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256(f"entry_point={self.name}\nvalue={self.value}\ndistribution={self.distribution}\n"
                                f"version={self.version}\n".encode())
        for label, sha in self.files:
            digest.update(f"{label}\0{sha}\n".encode())
        return digest.hexdigest()

    @property
    def pin(self) -> str:
        return f"sha256:{self.sha256}"

    def as_dict(self) -> dict:
        return {"entry_point": self.value, "distribution": self.distribution, "version": self.version,
                "files": dict(self.files), "plugin_sha256": self.sha256, "pin": self.pin, "installed_at": self.where}


def plugin_source(ep) -> PluginSource:
    """Hash the entry point's top-level package (or module) as installed now, without importing it."""
    import importlib.util
    from pathlib import Path

    dist = getattr(ep, "dist", None)
    top = ep.value.split(":", 1)[0].split(".", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # ValueError: a module without a spec (built in memory)
        spec = None
    roots = list(spec.submodule_search_locations or ()) if spec is not None and spec.submodule_search_locations else []
    origin = spec.origin if spec is not None and not roots and spec.origin not in (None, "built-in", "frozen") else None
    files: dict[str, str] = {}
    for root in map(Path, roots):
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
                files[f"{top}/{rel.as_posix()}"] = _sha256(path)
    if origin is not None:
        files[Path(origin).name] = _sha256(Path(origin))
    where = ", ".join(map(str, roots)) or (origin or "(no file: a module built in memory)")
    return PluginSource(ep.name, ep.value, getattr(dist, "name", None), getattr(dist, "version", None),
                        tuple(sorted(files.items())), where)


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _entry_point(name: str):
    found = [ep for ep in _entry_points() if ep.name == name and name not in RESERVED]
    if not found:
        known = ", ".join(["scripted", "hold", *plugin_names()])  # (and --lerobot, --molmoact2 CKPT)
        raise PluginError(f"--policy {name}: no such policy (known: {known}); a lab's own is a "
                          f"'{ENTRY_POINT_GROUP}' entry point (docs/policies.md)")
    return found[0]


def check_pin(name: str, pin: str | None) -> PluginSource:
    """The plugin's source when its pin is `pin` (a plan's); else the one-line refusal."""
    src = plugin_source(_entry_point(name))
    if pin is not None and src.pin != pin:
        raise PluginError(f"refused: the pre-registration pins policy {name} at {pin}, but what is installed is "
                          f"{src.pin} ({src.distribution or 'no distribution'} {src.version or ''}, files in "
                          f"{src.where}): pin that, by amendment, or install the one the plan froze")
    return src


def load_plugin(name: str, *, convmap: ConvMap = PRESETS["identity"], task: str | None = None,
                pin: str | None = None) -> "PluginPolicy":
    """The entry point called `name`, built and wrapped; PluginError (one line) when it cannot be.
    `pin` (a plan's `sha256:<plugin_sha256>`): what is installed must be it, before and after loading."""
    ep = _entry_point(name)
    before = check_pin(name, pin)
    dist = getattr(getattr(ep, "dist", None), "name", None)
    source = f"entry point {ep.value}" + (f" ({dist})" if dist else "")
    try:
        inner = ep.load()()
    except Exception as exc:  # noqa: BLE001 - a lab's code may fail in any way: one line, never a traceback
        raise PluginError(f"policy {name}: {source} cannot be loaded ({type(exc).__name__}: {exc})") from None
    after = plugin_source(ep)  # what was imported is what was hashed
    if after.files != before.files:
        was, now = dict(before.files), dict(after.files)
        changed = [f"{k} ({was[k][:12] if k in was else 'absent'} when hashed, now {now[k][:12] if k in now else 'absent'})"
                   for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k)]
        raise PluginError(f"refused: policy {name} changed while it was being loaded: {'; '.join(changed)}")
    missing = [a for a in ("reset", "predict") if not callable(getattr(inner, a, None))]
    horizon = getattr(inner, "chunk_horizon", None)
    if missing or isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        what = f"no {' or '.join(missing)} method" if missing else f"chunk_horizon {horizon!r} (a positive int)"
        raise PluginError(f"policy {name}: {source} gave {type(inner).__name__} with {what}; "
                          "see docs/policies.md for the protocol")
    return PluginPolicy(name, inner, source=source, version=getattr(getattr(ep, "dist", None), "version", None),
                        convmap=convmap, task=task, pinned=before)


class PluginPolicy:
    """A lab's policy behind the engine's Policy protocol: served batched in the driver, the shim applied."""

    needs_privileged = False
    serve_in_driver = True

    def __init__(self, name: str, inner, *, source: str, version: str | None, convmap: ConvMap, task: str | None,
                 pinned: PluginSource | None = None):
        self.name, self.inner, self.convmap, self.task = name, inner, convmap, task
        self.chunk_horizon = int(inner.chunk_horizon)
        self.needs_images = bool(getattr(inner, "needs_images", False))
        self._source, self._version, self._pinned = source, version, pinned

    def describe(self) -> dict[str, Any]:
        own = getattr(self.inner, "describe", None)
        extra = own() if callable(own) else {}
        return {"policy": self.name, "source": self._source, "version": self._version, "chunk_horizon": self.chunk_horizon,
                "needs_images": self.needs_images, "convmap": self.convmap.as_dict(), "task": self.task,
                **(self._pinned.as_dict() if self._pinned is not None else {}),
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
