"""Policy specs (what a manifest records and a worker can rebuild) and their construction."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from engine.policies.base import DEFAULT_TASK, Chunk, Observation
from prereg.core.errors import UsageError
from prereg.core.vocabulary import DECODES as VOCAB_DECODES
from prereg.core.vocabulary import (
    PLUGIN,
    POLICIES,
    ROWS_BATCH_DEPENDENT,
    ROWS_INVARIANT,
    SERVING_BATCHED,
    SERVING_INVARIANT,
    decode_problem,
)

POLICY_KINDS = POLICIES + ("hold",)  # a pre-registration's policies, and the engine's own no-op baseline
# ... and any `fontaine.policies` entry point by its name (engine/policies/plugins.py)
DECODES = tuple(d for ds in VOCAB_DECODES.values() for d in ds)


class PolicyError(UsageError):
    """A policy that cannot be built as asked (bad spec, missing checkpoint): one clear message, exit 2."""


@dataclass(frozen=True)
class PolicySpec:
    kind: str = "scripted"
    checkpoint: str | None = None
    revision: str | None = None  # a Hugging Face commit/branch/tag to download; with pinned, what must load
    fast_revision: str | None = None  # the discrete pathway's release FAST tokenizer: the commit to fetch it at
    pinned: bool = False  # a pre-registration's revision: a launch whose checkpoint differs is refused
    decode: str | None = None  # flow | reference | grammar-masked
    dtype: str = "bf16"
    device: str | None = None  # None = cuda when available, else cpu
    convmap: str = "official"
    convmap_overrides: tuple[str, ...] = ()
    norm_tag: str = "so100_so101_molmoact2"
    flow_steps: int = 10
    task: str = DEFAULT_TASK
    inject_latency_ms: float = 0.0  # test/benchmark knob: a fixed extra cost per predict call
    grasp_miss: float = 0.0  # the scripted oracle's skill knob (engine/policies/scripted.py); 0 for a model
    grasp_drop: float = 0.0  # the scripted oracle's drop knob (let go after the lift); 0 for a model
    feature_map: tuple[str, ...] = ()  # lerobot: FEATURE=SOURCE, a checkpoint input fed by another sim input
    serving: str | None = None  # invariant | batched: how a policy served in the driver answers; None: the kind's default
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["convmap_overrides"] = list(self.convmap_overrides)
        d["feature_map"] = list(self.feature_map)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "PolicySpec":
        d = dict(d)
        d["convmap_overrides"] = tuple(d.get("convmap_overrides") or ())
        d["feature_map"] = tuple(d.get("feature_map") or ())
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)

    @property
    def is_model(self) -> bool:
        """A learned model (MolmoAct2, a lerobot checkpoint): it sees camera frames, reads and writes
        joints through the joint-convention shim (with its release table), and wants a GPU."""
        return self.kind.startswith("molmoact2") or self.kind == "lerobot"

    @property
    def serving_mode(self) -> str:
        """`invariant` (each observation served alone: bit for bit its batch-1 action) or `batched` (the waiting
        observations in one call: faster, and batch-dependent in the last bits). Default: invariant, but
        MolmoAct2, whose batching is most of its throughput on a GPU (the manifest and the report say so)."""
        if self.serving is not None:
            return self.serving
        return SERVING_BATCHED if self.kind.startswith("molmoact2") else SERVING_INVARIANT

    @property
    def serve_in_driver(self) -> bool:
        if self.kind == "lerobot":  # batched in the driver, or select_action every tick in each worker
            mode = self.extra.get("lerobot_serving")  # fontaine-eval records it before the run starts
            if mode is None:
                from engine.policies.lerobot_policy import serving_of

                mode = serving_of(self.checkpoint, self.revision)
            return mode == "chunk"
        return self.kind != "scripted"


def make_policy(spec: PolicySpec):
    """Build the policy a spec names. MolmoAct2 imports torch, so it is imported only here."""
    for knob in ("grasp_miss", "grasp_drop"):
        if spec.kind != "scripted" and getattr(spec, knob):
            raise PolicyError(f"{knob} is a knob of the scripted oracle; policy {spec.kind} has none")
    if spec.kind == "scripted":
        from engine.policies.scripted import ScriptedOracle

        try:
            policy = ScriptedOracle(grasp_miss=spec.grasp_miss, grasp_drop=spec.grasp_drop)
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
    elif spec.kind == "hold":
        from engine.policies.hold import HoldPolicy

        policy = HoldPolicy()
    elif spec.kind in ("molmoact2", "molmoact2-discrete"):
        policy = _make_molmoact2(spec)
    elif spec.kind == "lerobot":
        policy = _make_lerobot(spec)
    elif spec.kind == PLUGIN:  # a plan's plugin arm: the entry point its checkpoint names, pinned by content
        from engine.policies.plugins import load_plugin

        if not spec.checkpoint:
            raise PolicyError("a plugin arm names its fontaine.policies entry point as its checkpoint")
        policy = load_plugin(spec.checkpoint, convmap=_convmap(spec), task=spec.task,
                             pin=spec.revision if spec.pinned else None)
    else:
        from engine.policies.plugins import load_plugin

        policy = load_plugin(spec.kind, convmap=_convmap(spec), task=spec.task)  # unknown: one line naming the known
    if getattr(policy, "serve_in_driver", False):
        policy = PerObservation(policy) if spec.serving_mode == SERVING_INVARIANT else Batched(policy)
    if spec.inject_latency_ms > 0:
        policy = SlowedPolicy(policy, spec.inject_latency_ms / 1000.0)
    return policy


def resolve_spec_convmap(spec: PolicySpec):
    from engine.policies.convmap.shim import resolve_convmap

    return resolve_convmap(spec.convmap, list(spec.convmap_overrides))


def describe_unserved(spec: PolicySpec) -> dict:
    """The manifest's record of a policy each worker loads itself (the driver does not load it): a
    lerobot checkpoint's type, config hash and pin are read from its files (its pin checked here)."""
    out = {"policy": spec.kind, "served": "in each worker", "rows": ROWS_INVARIANT}
    if spec.kind == "lerobot":
        from engine.policies.lerobot_policy import describe_checkpoint

        out.update(describe_checkpoint(spec.checkpoint, revision=spec.revision, pinned=spec.pinned,
                                       convmap=_convmap(spec), feature_map=spec.feature_map, task=spec.task,
                                       expected_files=spec.extra.get("lerobot_files")))
    return out


def load_served(cfg) -> tuple[object, dict]:
    """What this process serves for a run (the driver, or a Ray shard on its node) and the manifest's
    record of it: (the policy, or None when each worker loads its own; its description), or in a
    comparison run (`cfg.arms`) ({arm: policy} for the served arms; {arm: description} for both)."""
    if not cfg.arms:
        spec = cfg.policy
        if not spec.serve_in_driver:
            return None, describe_unserved(spec)  # a lerobot checkpoint's type, config hash and pin
        policy = make_policy(spec)
        return policy, policy.describe()
    policies, described = {}, {}
    for arm, spec in cfg.arm_policies():
        if spec.serve_in_driver:
            policies[arm] = make_policy(spec)
            described[arm] = policies[arm].describe()
        else:
            described[arm] = describe_unserved(spec)
    return policies, described


def _convmap(spec: PolicySpec):
    from engine.policies.convmap.shim import ConvMapError

    try:
        return resolve_spec_convmap(spec)
    except ConvMapError as exc:
        raise PolicyError(str(exc)) from None


def _make_lerobot(spec: PolicySpec):
    """A lerobot checkpoint, loaded with lerobot's factory (engine/policies/lerobot_policy)."""
    if not spec.checkpoint:
        raise PolicyError("--lerobot needs a checkpoint (a local directory or a Hugging Face id)")
    from engine.policies.lerobot_policy import load_policy

    return load_policy(spec.checkpoint, revision=spec.revision, pinned=spec.pinned, device=spec.device,
                       convmap=_convmap(spec), feature_map=spec.feature_map, task=spec.task,
                       expected_files=spec.extra.get("lerobot_files"))  # the files the run recorded, in every worker


def _make_molmoact2(spec: PolicySpec):
    from engine.policies.convmap.shim import ConvMapError

    try:
        cmap = resolve_spec_convmap(spec)
    except ConvMapError as exc:
        raise PolicyError(str(exc)) from None
    from engine.policies.molmoact2 import CheckpointError, load_policy

    pathway = "flow" if spec.kind == "molmoact2" else "discrete"
    decode = spec.decode or ("flow" if pathway == "flow" else "reference")
    problem = decode_problem(spec.kind, decode)
    if problem is not None:
        raise PolicyError(problem)
    if not spec.checkpoint:
        raise PolicyError(f"--{spec.kind} needs a checkpoint (a local directory, a Hugging Face id, or 'tiny')")
    try:
        return load_policy(
            spec.checkpoint,
            pathway=pathway,
            decode=decode,
            dtype=spec.dtype,
            device=spec.device,
            convmap=cmap,
            norm_tag=spec.norm_tag,
            flow_steps=spec.flow_steps,
            task=spec.task,
            revision=spec.revision,
            pinned=spec.pinned,
            fast_revision=spec.fast_revision,
        )
    except CheckpointError as exc:
        raise PolicyError(str(exc)) from None


class _Serving:
    """A policy served in the driver, as the run's serving mode has it (its attributes are the inner one's)."""

    batching = ""
    rows = ""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        if name == "_inner":  # not set yet (a copy being built): never recurse
            raise AttributeError(name)
        return getattr(self._inner, name)

    def describe(self) -> dict:
        return {**self._inner.describe(), "batching": self.batching, "rows": self.rows}


class PerObservation(_Serving):
    """`--serving invariant`: each waiting observation served alone, so its action is bit for bit the one it
    gets at batch 1 whatever waited with it: the rows do not depend on the number of workers or on timing
    (a batched call's kernels round differently by batch size: ACT's actions moved by 2.7e-7 rad between
    batch 1 and 4). The cost against batching is measured in benchmarks/bench_lerobot.py."""

    batching = "per observation (batch 1)"
    rows = ROWS_INVARIANT

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        return [chunk for o in observations for chunk in self._inner.predict_batch([o])]


class Batched(_Serving):
    """`--serving batched`: the waiting observations in one call (throughput), rows batch-dependent."""

    batching = "batched (the observations waiting together, one call)"
    rows = ROWS_BATCH_DEPENDENT

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        return self._inner.predict_batch(observations)


class SlowedPolicy:
    """Adds a fixed cost to every predict call (benchmarks and tests of batching and pace)."""

    def __init__(self, inner, delay_s: float):
        self._inner = inner
        self._delay_s = delay_s
        for attr in ("name", "chunk_horizon", "needs_images", "needs_privileged", "serve_in_driver"):
            setattr(self, attr, getattr(inner, attr))

    def describe(self) -> dict:
        return {**self._inner.describe(), "inject_latency_ms": self._delay_s * 1000.0}

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        time.sleep(self._delay_s)
        return self._inner.predict_batch(observations)
