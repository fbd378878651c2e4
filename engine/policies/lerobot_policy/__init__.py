"""Any lerobot checkpoint as an engine policy (`fontaine-eval --lerobot CKPT`, `policy: lerobot`).

The checkpoint is a local directory or a Hugging Face id (downloaded into the Hugging Face cache
like MolmoAct2's, `--revision` picking the commit; HF_HUB_OFFLINE / HF_ENDPOINT / HF_TOKEN
honoured). It is loaded with lerobot's own code: `PreTrainedConfig.from_pretrained`, the policy
class `lerobot.policies.factory.get_policy_class(config.type)`, and the checkpoint's saved pre- and
post-processors through `make_pre_post_processors(config, pretrained_path=...)`. Its input features
are fed from the sim by name or by a declared mapping (features.py); how its actions are executed
(batched chunks in the driver, or `select_action` at every tick in each worker) is policy.py's.

Pins: a hub commit, or `sha256:<checkpoint_sha256>` for a local directory, where checkpoint_sha256
covers every file lerobot's loader reads (`loader_files`: config.json, the weights, the saved pre-
and post-processors and every state file they name), by name and content. What is hashed is what
runs: the files are hashed before loading and again once the policy is loaded, and a launch whose
files changed in between (or differ from the ones the run recorded, `expected_files`, which each
worker of a `step` run loads against) is refused naming the file. A Hugging Face cache's copy is
checked against the hub's own blob names (sha256 for LFS files, the git blob id for the others),
so an edited cache is not the pinned commit. The manifest records the policy type, the sha256 of
config.json (`config_sha256`), of the processors' files and of the weights, every file's sha256
(`files`), the pin, the feature mapping and the serving mode.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from engine.policies.convmap.shim import PRESETS, ConvMap
from engine.policies.lerobot_policy.features import FeatureError, FeaturePlan, parse_map, plan_features
from engine.policies.molmoact2.checkpoint import HubSettings, _one_line, check_checkpoint_files
from prereg.core.errors import UsageError

__all__ = ["LerobotError", "FeatureError", "load_policy", "probe", "check_feeds", "parse_map", "serving_of", "check_pin"]

CONFIG_NAME = "config.json"


class LerobotError(UsageError):
    """A lerobot checkpoint the engine cannot serve; one line for a person (exit 2)."""


@dataclass(frozen=True)
class Probe:
    """What the checkpoint is, read before any weights: where it lies, its config, its pin."""

    requested: str
    path: Path
    source: str  # "local" | "hub"
    revision: str | None  # the hub commit (hub ids)
    config: object  # lerobot's PreTrainedConfig
    config_sha256: str
    processors_sha256: str
    weights_sha256: str
    files: tuple[tuple[str, str], ...] = ()  # (name, sha256) of every file the loader reads, by name

    @property
    def checkpoint_sha256(self) -> str:
        return checkpoint_sha256(self.files)

    @property
    def pin(self) -> str:
        return pin_of(self.source, self.revision, self.files)


def checkpoint_sha256(files) -> str:
    """One hash of every file the loader reads, each by its name and content: what a local pin names."""
    digest = hashlib.sha256()
    for name, sha in files:
        digest.update(f"{name}\0{sha}\n".encode())
    return digest.hexdigest()


def pin_of(source: str, revision: str | None, files) -> str:
    """A hub checkpoint's commit; a local one's `sha256:` of every file its loader reads."""
    return revision if source == "hub" and revision else f"sha256:{checkpoint_sha256(files)}"


def resolve(checkpoint: str, revision: str | None = None, *, log=None) -> tuple[Path, str, str | None]:
    """(directory, source, commit) of a local checkpoint directory or a Hugging Face id."""
    from engine.policies.molmoact2.checkpoint import CheckpointError, hub_revision, hub_settings

    requested = str(checkpoint or "").strip()
    if not requested:
        raise LerobotError("--lerobot needs a checkpoint: a local directory or a Hugging Face id")
    local = Path(requested).expanduser()
    try:
        os.stat(local)
    except (FileNotFoundError, NotADirectoryError):
        local = None
    except OSError as exc:
        raise LerobotError(f"lerobot checkpoint {requested!r} cannot be read ({exc.strerror or exc})") from None
    if local is not None:
        if not local.is_dir():
            raise LerobotError(f"lerobot checkpoint {requested!r} is a file; pass the folder that holds "
                               "config.json, model.safetensors and the policy_*processor.json files")
        return check_readable(local.resolve()), "local", None
    parts = requested.split("/")
    if len(parts) != 2 or not all(parts) or requested.startswith((".", "~")):
        raise LerobotError(f"lerobot checkpoint {requested!r} not found: not a directory, and not a Hugging Face "
                           "id (owner/name)")
    try:
        path, commit = _hub_snapshot(requested, hub_revision(revision), hub_settings(), log)
    except CheckpointError as exc:
        raise LerobotError(str(exc)) from None
    return check_readable(path), "hub", commit



def check_readable(path: Path) -> Path:
    """Every file of the checkpoint that is read is a regular file, and its JSON files parse (config.json,
    policy_*.json): else a LerobotError naming it (molmoact2.checkpoint.check_checkpoint_files)."""
    return check_checkpoint_files(path, (CONFIG_NAME,), LerobotError)


_HUB_SNAPSHOTS: dict[tuple[str, str | None, HubSettings], tuple[Path, str]] = {}


def _hub_snapshot(repo_id: str, revision: str | None, hub: HubSettings, log) -> tuple[Path, str]:
    """One download (or cache look-up) per hub id, revision and Hugging Face environment in a
    process: a launch asks for the checkpoint's directory from the CLI's checks, the probe, the
    feature plan and the serving mode, and each asked the hub again (a revision request each, and
    a timeout each when the hub is unreachable). A changed endpoint, cache, offline switch or
    token is a new key; a failure is not remembered, nor a snapshot since deleted from the cache."""
    from engine.policies.molmoact2.checkpoint import download_snapshot

    key = (repo_id, revision, hub)
    if key not in _HUB_SNAPSHOTS or not _HUB_SNAPSHOTS[key][0].is_dir():
        _HUB_SNAPSHOTS[key] = download_snapshot(repo_id, revision, log=log, who="lerobot")
    return _HUB_SNAPSHOTS[key]


@functools.lru_cache(maxsize=8)
def probe(checkpoint: str, revision: str | None = None) -> Probe:
    """Resolve the checkpoint and read its config (cached: the CLI, the factory and the driver ask)."""
    path, source, commit, processors, weights, files = _hashed(checkpoint, revision)
    import lerobot.policies  # noqa: F401 - registers every policy type's config class
    from lerobot.configs.policies import PreTrainedConfig

    try:  # the files were hashed first: the bytes it parses are these
        config = PreTrainedConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - draccus/lerobot's refusal, as one line
        raise LerobotError(f"{path / CONFIG_NAME} is not a lerobot policy config: {_one_line(exc, 240)}") from None
    by_name = dict(files)
    return Probe(checkpoint, path, source, commit, config, _sha256_of([CONFIG_NAME], by_name),
                 _sha256_of(processors, by_name), _sha256_of(weights, by_name), files)


@functools.lru_cache(maxsize=8)
def _hashed(checkpoint: str, revision: str | None = None) -> tuple[Path, str, str | None, list, list, tuple]:
    """(path, source, commit, processor names, weight names, (name, sha256) of every file the loader reads):
    what a pin is made of, read with no lerobot import (about 10 s of CPU), so a pin that does not hold is
    refused at once (check_pin). Once per process, as the probe that reads it."""
    path, source, commit = resolve(checkpoint, revision)
    if not (path / CONFIG_NAME).is_file():
        raise LerobotError(f"{path} has no {CONFIG_NAME}; it is not a lerobot policy checkpoint")
    weights = sorted(p.name for p in path.iterdir() if p.name.endswith(".safetensors") and p.name.startswith("model"))
    if not weights:
        raise LerobotError(f"{path} holds no model.safetensors; it is not a lerobot policy checkpoint")
    processors = sorted(p.name for p in path.iterdir() if p.name.startswith("policy_") and p.is_file())
    if "policy_preprocessor.json" not in processors:
        raise LerobotError(f"{path} has no policy_preprocessor.json: a lerobot checkpoint saves its pre- and "
                           "post-processors (normalisation) beside the weights (lerobot >= 0.4)")
    files = file_hashes(path, loader_files(path))
    return path, source, commit, processors, weights, tuple(sorted(files.items()))


def forget_probes() -> None:
    """Forget what this process read of its checkpoints (the probes and the hashes under them): a fresh look."""
    probe.cache_clear()
    _hashed.cache_clear()


def loader_files(path: Path) -> list[str]:
    """Every file of the checkpoint lerobot's loader reads: config.json, the weights (model*.safetensors), the
    saved processors (policy_*) and every state file their steps name (refused when one is missing)."""
    import json

    names = {CONFIG_NAME} | {p.name for p in path.iterdir() if p.is_file() and (
        p.name.startswith("policy_") or (p.name.startswith("model") and p.name.endswith(".safetensors")))}
    for which in ("pre", "post"):
        spec = path / f"policy_{which}processor.json"
        try:
            steps = json.loads(spec.read_text()).get("steps", []) if spec.is_file() else []
        except (OSError, ValueError, AttributeError) as exc:
            raise LerobotError(f"{spec} is not readable JSON ({exc})") from None
        for step in steps if isinstance(steps, list) else []:
            state = step.get("state_file") if isinstance(step, dict) else None
            if isinstance(state, str) and state:
                if not (path / state).is_file():
                    raise LerobotError(f"{spec} names the state file {state}, which {path} does not hold")
                names.add(state)
    return sorted(names)


def file_hashes(path: Path, names) -> dict[str, str]:
    """{name: sha256 of its content}, read now (never cached). A Hugging Face cache's file must be its
    blob: a blob named by a sha256 (LFS) or a git blob id whose content is not that is an edited cache."""
    import os

    from engine.policies.molmoact2.checkpoint import _content_sha256, git_blob_sha1

    out = {}
    for name in names:
        real = Path(os.path.realpath(path / name))
        try:
            sha = _content_sha256(real)
            blob = real.name if real.parent.name == "blobs" else None
            if blob is not None and ((len(blob) == 64 and blob != sha) or (len(blob) == 40 and blob != git_blob_sha1(real))):
                raise LerobotError(f"{path / name}: the Hugging Face cache's copy is not the hub's file (its blob "
                                   f"{blob[:12]} holds content hashing to {sha[:12]}): the pinned commit is not what "
                                   "would load; delete the file from the cache and download it again")
        except OSError as exc:
            raise LerobotError(f"{path / name} cannot be read ({exc.strerror or exc})") from None
        out[name] = sha
    return out


def _differences(want: dict[str, str], have: dict[str, str]) -> list[str]:
    """Each file whose sha256 differs, 'NAME (sha256 A... when hashed, now B...)'."""
    return [f"{name} ({want[name][:12] if name in want else 'absent'} when hashed, now "
            f"{have[name][:12] if name in have else 'absent'})"
            for name in sorted(set(want) | set(have)) if want.get(name) != have.get(name)]


def check_files(info: Probe, expected: dict[str, str] | None, when: str, *, fresh: bool = True) -> None:
    """Refuse (one line, naming each file) a checkpoint whose files are not `expected` (the ones the run
    recorded) or, with none, the ones the probe hashed. `fresh`: hash the files now (after loading: what
    was read is what was hashed); else compare the probe's hashes (no reading)."""
    want = dict(expected) if expected else dict(info.files)
    have = file_hashes(info.path, sorted(set(want) | set(loader_files(info.path)))) if fresh else dict(info.files)
    changed = _differences(want, have)
    if changed:
        raise LerobotError(f"refused: the lerobot checkpoint {info.path} changed {when}: {'; '.join(changed)}. "
                           "What runs must be what was hashed and pinned: restore the files, or launch again")


def check_pin(checkpoint: str, revision: str | None) -> str:
    """The checkpoint's pin when it is `revision` (a plan's); else the one-line refusal."""
    _, source, commit, _, weights, files = _hashed(checkpoint, revision)  # no lerobot import: a refusal is at once
    pin = pin_of(source, commit, files)
    if revision != pin and source == "local" and revision == f"sha256:{_sha256_of(weights, dict(files))}":
        raise LerobotError(f"refused: the pre-registration pins {checkpoint} by its weights alone ({revision[:19]}...); "
                           "a local lerobot pin covers every file the loader reads (config.json, the weights, the "
                           f"processors and their state files): register {pin} by amendment")
    if revision != pin:
        raise LerobotError(f"refused: the pre-registration pins {checkpoint} at revision {revision!r}, but what "
                           f"loads is {pin}: one of its files ({', '.join(n for n, _ in files)}) is not what "
                           "was frozen (pin that, by amendment, or restore the checkpoint the plan named)")
    return pin


def check_feeds(checkpoint: str, revision: str | None, cameras, feature_map=()) -> FeaturePlan:
    """The feature plan, or the one-line refusal naming the feature the scene cannot feed.

    Read from config.json as JSON (what lerobot's config parses it into, for the features): a refusal
    costs no lerobot import (about 10 s on a loaded 2-core box)."""
    import json
    from types import SimpleNamespace

    path, _, _ = resolve(checkpoint, revision)
    try:
        raw = json.loads((path / CONFIG_NAME).read_text())
        features = {group: {k: SimpleNamespace(type=str(v["type"]), shape=tuple(v["shape"]))
                            for k, v in (raw.get(group) or {}).items()}
                    for group in ("input_features", "output_features")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LerobotError(f"{path / CONFIG_NAME} is not a lerobot policy config ({type(exc).__name__}: {exc})") from None
    return plan_features(SimpleNamespace(**features), cameras, parse_map(feature_map))


@functools.lru_cache(maxsize=8)
def serving_of(checkpoint: str, revision: str | None = None) -> str:
    """`chunk` (batched in the driver) or `step` (select_action every tick in each worker), read from
    the checkpoint's files without importing lerobot (policy.serving_mode)."""
    from engine.policies.lerobot_policy.serving import serving_mode

    path, _, _ = resolve(checkpoint, revision)
    return serving_mode(path)


def _processors(info: Probe, device: str):
    from lerobot.policies.factory import make_pre_post_processors

    try:
        return make_pre_post_processors(info.config, pretrained_path=str(info.path),
                                        preprocessor_overrides={"device_processor": {"device": device}})
    except Exception as exc:  # noqa: BLE001
        raise LerobotError(f"the saved processors in {info.path} do not load: {_one_line(exc, 240)}") from None


def _checked(checkpoint: str, revision: str | None, pinned: bool, feature_map, cameras, expected_files: dict | None):
    """The checkpoint probed and checked as loading and describing it both need: the files the run
    recorded first (a pin is one hash of them all), the pin, the feature map against the cameras.
    (probe's info, the declared map, the feature plan)."""
    info = probe(checkpoint, revision)
    if expected_files:
        check_files(info, expected_files, "after the run recorded it", fresh=False)
    if pinned:
        check_pin(checkpoint, revision)
    declared = parse_map(feature_map)
    return info, declared, plan_features(info.config, cameras, declared)


def load_policy(checkpoint: str, *, revision: str | None = None, pinned: bool = False, device: str | None = None,
                convmap: ConvMap = PRESETS["identity"], feature_map=(), task: str | None = None,
                cameras=None, expected_files: dict | None = None):
    """Resolve, check and load a lerobot checkpoint; every failure a person can fix is a LerobotError.

    `cameras`: the scene's policy image inputs, checked against the checkpoint's image features
    (None: not checked here; fontaine-eval checks them against the env before writing anything).
    `expected_files`: {name: sha256} the run recorded (fontaine-eval, before it started): the files
    must be those, before loading and once loaded; without it, the ones hashed just before loading."""
    import torch

    from engine.policies.lerobot_policy.policy import LerobotPolicy
    from engine.policies.lerobot_policy.serving import serving_mode

    info, declared, plan = _checked(checkpoint, revision, pinned, feature_map, cameras, expected_files)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LerobotError(f"device {device!r} asked for, but CUDA is not available here; use --device cpu")
    if device == "cpu":
        from engine.policies.molmoact2 import _limit_cpu_threads

        _limit_cpu_threads(torch)
    config = copy.deepcopy(info.config)  # the probe's stays as read (it is cached)
    config.device = device
    from lerobot.policies.factory import get_policy_class

    try:
        cls = get_policy_class(config.type)
        policy = cls.from_pretrained(str(info.path), config=config, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - a missing extra, weights that do not fit: one line
        raise LerobotError(f"lerobot cannot load the {config.type} policy in {info.path}: {_one_line(exc, 240)}") from None
    policy.eval()
    pre, post = _processors(info, device)
    mode = serving_mode(info.path)
    check_files(info, expected_files, "while it was being loaded")  # what was read is what was hashed
    description = {
        **_facts(info, plan, declared, mode, convmap, task),
        "device": device,
        "parameters": int(sum(p.numel() for p in policy.parameters())),
        "torch_threads": torch.get_num_threads() if device == "cpu" else None,
    }
    return LerobotPolicy(policy=policy, preprocessor=pre, postprocessor=post, plan=plan, convmap=convmap,
                         task=task, mode=mode, description=description)


def _facts(info: Probe, plan: FeaturePlan, declared: dict, mode: str, convmap: ConvMap, task) -> dict:
    """What the manifest records of a lerobot checkpoint, loaded or not."""
    config = info.config
    return {
        "policy": "lerobot",
        "policy_type": config.type,
        "checkpoint": info.requested,
        "checkpoint_path": str(info.path),
        "checkpoint_source": info.source,
        "revision": info.revision,
        "pin": info.pin,
        "config_sha256": info.config_sha256,
        "processors_sha256": info.processors_sha256,
        "weights_sha256": info.weights_sha256,
        "checkpoint_sha256": info.checkpoint_sha256,
        "files": dict(info.files),
        "features": plan.as_dict(),
        "feature_map_declared": declared,
        "serving": mode,
        "served": "in the driver, batched" if mode == "chunk" else "in each worker, select_action every tick",
        "n_action_steps": int(getattr(config, "n_action_steps", 1) or 1),
        "chunk_size": getattr(config, "chunk_size", None),
        "n_obs_steps": int(getattr(config, "n_obs_steps", 1) or 1),
        "dtype": str(getattr(config, "dtype", None) or "fp32"),
        "use_amp": bool(getattr(config, "use_amp", False)),
        "convmap": convmap.as_dict(),
        "task": task,
    }


def describe_checkpoint(checkpoint: str, *, revision: str | None = None, pinned: bool = False,
                        convmap: ConvMap = PRESETS["identity"], feature_map=(), task: str | None = None,
                        expected_files: dict | None = None) -> dict:
    """The manifest's record of a checkpoint each worker loads itself (`step` mode), read in the driver
    without its weights: the same facts as a loaded policy's describe(), the pin checked."""
    from engine.policies.lerobot_policy.serving import serving_mode

    info, declared, plan = _checked(checkpoint, revision, pinned, feature_map, None, expected_files)
    return _facts(info, plan, declared, serving_mode(info.path), convmap, task)


def _sha256_of(names, files: dict[str, str]) -> str:
    """The manifest's per-part hash (config, processors, weights): each file's name and sha256, in order."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update(files[name].encode())
    return digest.hexdigest()


def release_state_box(checkpoint: str, revision: str | None = None, feature_map=()):
    """(q01, q99) of the state the checkpoint was trained on, in its own units: the release box the
    shim's coverage tripwire judges the sim's joints against (MolmoAct2's comes from norm_stats.json).

    Read from the saved preprocessor's normaliser stats for the state feature: `q01`/`q99` where
    lerobot computed quantiles (datasets since 0.4), else `min`/`max`."""
    import json

    import numpy as np
    from safetensors.numpy import load_file

    path, _, _ = resolve(checkpoint, revision)
    feature = check_feeds(checkpoint, revision, None, feature_map).state
    if feature is None:
        raise LerobotError(f"{path}: the checkpoint reads no state, so the shim's coverage has nothing to judge")
    try:
        steps = json.loads((path / "policy_preprocessor.json").read_text()).get("steps", [])
        for step in steps:
            if not step.get("state_file"):
                continue
            stats = load_file(str(path / step["state_file"]))
            for lo, hi in (("q01", "q99"), ("min", "max")):
                if f"{feature}.{lo}" in stats and f"{feature}.{hi}" in stats:
                    return (np.asarray(stats[f"{feature}.{lo}"], dtype=np.float64).reshape(-1)[:6],
                            np.asarray(stats[f"{feature}.{hi}"], dtype=np.float64).reshape(-1)[:6])
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise LerobotError(f"{path}: the saved normaliser stats cannot be read ({type(exc).__name__}: {exc})") from None
    raise LerobotError(f"{path}: the saved preprocessor has no q01/q99 or min/max for {feature}; the coverage "
                       "tripwire needs the state range the policy was trained on")
