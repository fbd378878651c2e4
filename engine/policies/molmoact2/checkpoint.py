"""Finding, downloading, checking and loading a MolmoAct2 checkpoint before any episode starts.

A Hugging Face id is downloaded with `huggingface_hub.snapshot_download` into the standard
cache (progress on stderr, so in driver.log), honouring HF_HUB_OFFLINE, HF_ENDPOINT, HF_TOKEN,
HF_HOME and HF_HUB_CACHE as they are when the checkpoint is resolved; the commit it resolved to
is what the manifest records. A local directory is pinned by the sha256 of its weight files.

Everything a run cannot survive (no weights, no norm stats, an unknown norm tag, a config the
engine cannot serve) is raised here as one `CheckpointError` whose message says what was wrong
and what to do; the CLI prints it and exits 2.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prereg.core.errors import UsageError
from prereg.core.safe_read import os_error_why
from prereg.core.vocabulary import COMMIT_RE

FAST_TOKENIZER_SUBDIR = "action_tokenizer"
RELEASE_FAST_TOKENIZER = "allenai/MolmoAct2-FAST-Tokenizer"
# The commit of RELEASE_FAST_TOKENIZER the discrete pathway loads, pinned like a plan pins a checkpoint:
# a 40-hex commit, never a branch (`main` can move under a registered run). Nobody on this project has
# seen that repo's commit list (no download from here, and no copy of it in the repo or the lab notes),
# so it is NOT FILLED IN: until it is, a checkpoint without its own tokenizer (CKPT/action_tokenizer)
# is refused with a line saying so, rather than fetched unpinned. To fill it in, on a machine that can
# reach the hub: `huggingface-cli download allenai/MolmoAct2-FAST-Tokenizer` prints the snapshot path,
# whose folder name is the commit (or read huggingface.co/allenai/MolmoAct2-FAST-Tokenizer/commits/main).
RELEASE_FAST_TOKENIZER_REVISION: str | None = None
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


class CheckpointError(UsageError):
    """A checkpoint the engine cannot serve; the message is for a person, not a traceback (exit 2)."""


@dataclass(frozen=True)
class ResolvedCheckpoint:
    requested: str  # what the user typed: a path, a Hugging Face id, or "tiny"
    path: Path  # the local directory holding config.json and the weights
    source: str  # "local" | "hub" | "tiny"
    revision: str | None  # the Hugging Face commit of the snapshot (hub ids only)


def resolve_checkpoint(
    checkpoint: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    revision: str | None = None,
    log=None,
) -> ResolvedCheckpoint:
    """A local directory, a Hugging Face id (downloaded, or found in the cache), or `tiny` (built
    on demand). `revision` (a commit, branch or tag) applies to a Hugging Face id."""
    requested = str(checkpoint or "").strip()
    if not requested:
        raise CheckpointError("no MolmoAct2 checkpoint given: pass a local directory, a Hugging Face id, or 'tiny'")
    if requested == "tiny":
        from engine.policies.molmoact2.tiny import build_tiny, default_cache_dir

        target = Path(cache_dir) / "molmoact2-tiny" if cache_dir is not None else default_cache_dir()
        return ResolvedCheckpoint(requested, build_tiny(target), "tiny", None)

    local = check_local_path(requested)
    if local.is_dir():
        return ResolvedCheckpoint(requested, check_checkpoint_files(local.resolve(), ("config.json",)), "local", None)
    if local.exists():
        raise CheckpointError(f"MolmoAct2 checkpoint {requested!r}: {local.resolve()} is a file, not a checkpoint "
                              "directory (pass the folder that holds config.json and the safetensors)")
    if not _looks_like_repo_id(requested):
        raise CheckpointError(
            f"MolmoAct2 checkpoint {requested!r} not found: {local.resolve()} is not a directory, and it is not a "
            "Hugging Face id (owner/name). Pass a checkpoint directory, a Hugging Face id, or 'tiny'."
        )
    path, commit = download_snapshot(requested, revision, log=log)
    if not (path / "config.json").is_file():
        raise CheckpointError(f"{requested}@{commit} has no config.json; it is not a MolmoAct2 checkpoint")
    return ResolvedCheckpoint(requested, check_checkpoint_files(path, ("config.json",)), "hub", commit)


def check_checkpoint_files(path: Path, parsed: tuple[str, ...] = (), error: type[UsageError] | None = None) -> Path:
    """`path`, once every JSON and safetensors file in it is a regular file (a FIFO named config.json
    or model.safetensors hung the launch, read or hashed; a directory or a loop there was a traceback)
    and the JSON files named in `parsed` (and any `policy_*.json`) are JSON objects (a corrupt
    policy_preprocessor.json failed in every worker, a traceback each). Else `error` (default
    CheckpointError) naming the file. Stat'ed, and read bounded, never blocking."""
    from prereg.core.safe_read import JSON_MAX_BYTES, Unreadable, check_regular, read_regular

    error = error or CheckpointError
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise error(f"checkpoint {path}: cannot be listed ({os_error_why(exc)})") from None
    for name in names:
        if not name.endswith((".json", ".safetensors")):
            continue
        try:
            if name in parsed or (name.startswith("policy_") and name.endswith(".json")):
                obj = json.loads(read_regular(path / name, JSON_MAX_BYTES))
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
            else:
                check_regular(path / name)
        except FileNotFoundError:  # a dangling link: what needs the file says it is missing
            continue
        except Unreadable as exc:
            raise error(f"checkpoint {path}: {name}: {exc.why}") from None
        except (ValueError, RecursionError) as exc:
            raise error(f"checkpoint {path}: {name} is not a JSON object ({_one_line(exc, 120)}); the checkpoint "
                        "is damaged: save or download it again") from None
    return path


def check_local_path(requested: str) -> Path:
    """The checkpoint as a local path; CheckpointError when something is there but cannot be
    used (a symbolic link loop, no permission): said now, before a run directory is written."""
    local = Path(requested).expanduser()
    try:
        os.stat(local)
    except (FileNotFoundError, NotADirectoryError):
        pass  # not a local path: a Hugging Face id, or a typo said by the caller
    except OSError as exc:
        raise CheckpointError(f"MolmoAct2 checkpoint {requested!r}: {local} cannot be read ({os_error_why(exc)}); "
                              "pass the folder that holds config.json and the safetensors, a Hugging Face id, "
                              "or 'tiny'") from None
    return local


def hub_revision(revision: str | None) -> str | None:
    """The part of a revision the hub understands: a pin for a local directory or tiny is not one."""
    if revision is None or revision in ("local", "tiny") or str(revision).startswith("sha256:"):
        return None
    return str(revision)


def _looks_like_repo_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


@dataclass(frozen=True)
class HubSettings:
    endpoint: str
    cache: str
    offline: bool
    token: str | None  # never printed


def hub_settings() -> HubSettings:
    """The Hugging Face environment as it is now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    env = os.environ
    endpoint = (env.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    if env.get("HF_HUB_CACHE"):
        cache = env["HF_HUB_CACHE"]
    elif env.get("HF_HOME"):
        cache = os.path.join(env["HF_HOME"], "hub")
    else:
        cache = constants.HF_HUB_CACHE
    offline_env = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE")
    offline = constants._is_true(offline_env) if offline_env is not None else bool(constants.HF_HUB_OFFLINE)
    return HubSettings(endpoint, os.path.expanduser(os.path.expandvars(cache)), offline, env.get("HF_TOKEN") or None)


def download_snapshot(repo_id: str, revision: str | None = None, *, log=None, who: str = "molmoact2") -> tuple[Path, str]:
    """(snapshot directory, commit) of `repo_id` at `revision`, downloading what the cache lacks
    (`who` prefixes the progress lines: the policy kind downloading).

    Every failure is one CheckpointError line: offline and not cached, unknown repo or revision,
    refused token, unreachable endpoint, a transfer cut mid-file (run again: it resumes).
    """
    import huggingface_hub
    from huggingface_hub.errors import (
        GatedRepoError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    say = log or _stderr
    hub = hub_settings()
    where = f"{repo_id}@{revision or 'main'}"
    if hub.offline:
        say(f"{who}: looking up {where} in the Hugging Face cache {hub.cache} (HF_HUB_OFFLINE is set)")
    else:
        say(f"{who}: fetching {where} from {hub.endpoint} into {hub.cache}")
    try:
        path = huggingface_hub.snapshot_download(
            repo_id=repo_id,
            repo_type="model",
            revision=revision,
            cache_dir=hub.cache,
            endpoint=hub.endpoint,
            token=hub.token,
            local_files_only=hub.offline,
        )
    except HFValidationError:  # the user's repo id or revision, not a transfer: nothing to resume
        raise CheckpointError(
            f"{where}: not a Hugging Face repo id and revision (a repo id is OWNER/NAME of letters, digits, "
            "'-', '_' and '.'; a revision a branch, a tag or a commit)"
        ) from None
    except RevisionNotFoundError:
        raise CheckpointError(
            f"revision {revision!r} of {repo_id} does not exist on {hub.endpoint}: pin a commit the repo has"
        ) from None
    except GatedRepoError:
        raise CheckpointError(
            f"{repo_id} on {hub.endpoint} is gated: accept its terms on the hub and set HF_TOKEN to a token that may read it"
        ) from None
    except RepositoryNotFoundError:
        token = "HF_TOKEN is set but was refused" if hub.token else "a private repo needs HF_TOKEN"
        raise CheckpointError(f"Hugging Face repo {repo_id} not found on {hub.endpoint} ({token})") from None
    except LocalEntryNotFoundError as exc:
        if hub.offline:
            raise CheckpointError(
                f"{where} is not in the Hugging Face cache {hub.cache} and HF_HUB_OFFLINE is set: unset it to "
                "download, or copy the snapshot into that cache (HF_HOME / HF_HUB_CACHE)"
            ) from None
        raise CheckpointError(
            f"cannot download {where} from {hub.endpoint} and it is not in the cache {hub.cache}: {_one_line(exc.__cause__ or exc)}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a cut transfer, a full disk, a refused connection: one line
        raise CheckpointError(
            f"download of {where} from {hub.endpoint} failed ({type(exc).__name__}: {_one_line(exc)}); "
            f"run again to resume (the partial download stays in {hub.cache})"
        ) from None
    path = Path(path)
    commit = path.name
    say(f"{who}: {where} is commit {commit} ({path})")
    return path, commit


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _stderr(message: str) -> None:
    """A lookup line on stderr: a repo id or a revision is the user's text (`org/\\x1b]0;pwn\\x07`),
    shown through the one sanitiser, never obeyed by the terminal."""
    import sys

    from prereg.core.untrusted import say

    say(message, file=sys.stderr)


def checkpoint_pin(ckpt: ResolvedCheckpoint, fingerprint: dict[str, str]) -> str:
    """What a pre-registration's `revision` must say for this checkpoint: the hub commit, or
    sha256:<weights_sha256> for a local directory, or `local` for the tiny model."""
    if ckpt.source == "hub" and ckpt.revision:
        return ckpt.revision
    if ckpt.source == "tiny":
        return "local"
    return f"sha256:{fingerprint['weights_sha256']}"


def read_norm_metadata(ckpt: Path, norm_tag: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(whole norm_stats payload, the tag's metadata); errors name the file and the tags present."""
    filename = "norm_stats.json"
    config_path = ckpt / "config.json"
    if config_path.is_file():
        try:
            filename = json.loads(config_path.read_text()).get("norm_stats_filename") or filename
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{config_path} is not readable JSON ({exc}); the checkpoint is damaged") from None
    stats_path = ckpt / filename
    if not stats_path.is_file():
        raise CheckpointError(
            f"{stats_path} is missing: a MolmoAct2 checkpoint needs its normalisation stats "
            f"({filename}, with a tag such as 'so100_so101_molmoact2') to turn joint angles into model inputs"
        )
    try:
        payload = json.loads(stats_path.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{stats_path} is not readable JSON ({exc})") from None
    by_tag = payload.get("metadata_by_tag")
    if not isinstance(by_tag, dict) or not by_tag:
        raise CheckpointError(f"{stats_path} has no 'metadata_by_tag' mapping; it is not a MolmoAct2 norm-stats file")
    if norm_tag not in by_tag:
        raise CheckpointError(
            f"norm tag {norm_tag!r} is not in {stats_path}; tags present: {', '.join(sorted(map(str, by_tag)))}. "
            "Pass one of them (--norm-tag or the pre-registration's arm)."
        )
    meta = by_tag[norm_tag]
    for key in ("action_stats", "state_stats"):
        stats = meta.get(key) if isinstance(meta, dict) else None
        if not isinstance(stats, dict) or stats.get("q01") is None and stats.get("min") is None:
            raise CheckpointError(f"norm tag {norm_tag!r} in {stats_path} has no usable {key}")
    return payload, meta


def check_servable(config: Any, *, pathway: str, state_dim: int, action_dim: int, horizon: int) -> None:
    """Refuse, up front, a config whose predicts would fail or be silently wrong."""
    problems = []
    if int(getattr(config, "max_action_dim", -1)) != 32:
        problems.append(f"max_action_dim={getattr(config, 'max_action_dim', None)} (the engine serves 32)")
    if getattr(config, "state_format", "discrete") != "discrete":
        problems.append(f"state_format={config.state_format!r} (only discrete state tokens are served)")
    if int(getattr(config, "num_state_tokens", 0) or 0) <= 0 or getattr(config, "state_token_start_id", None) is None:
        problems.append("no discrete state tokens (num_state_tokens / state_token_start_id)")
    if state_dim != 6:
        problems.append(f"state stats have {state_dim} dims (the SO-101 sim has 6 joints)")
    if action_dim < 6 or action_dim > 32:
        problems.append(f"action stats have {action_dim} dims (need 6..32)")
    max_h = int(getattr(config, "max_action_horizon", 0) or 0)
    if horizon < 1 or horizon > max_h:
        problems.append(f"the tag's action_horizon {horizon} exceeds max_action_horizon {max_h}")
    mode = str(getattr(config, "action_mode", ""))
    if pathway == "flow":
        if not getattr(config, "add_action_expert", False) or mode not in ("continuous", "both"):
            problems.append(f"no flow action expert (add_action_expert={getattr(config, 'add_action_expert', None)}, action_mode={mode!r})")
    else:
        if mode not in ("discrete", "both"):
            problems.append(f"action_mode={mode!r} has no discrete action head")
        for key in ("action_start_token_id", "action_end_token_id", "action_token_start_id", "eos_token_id"):
            if getattr(config, key, None) is None:
                problems.append(f"{key} is not set")
        if int(getattr(config, "num_action_tokens", 0) or 0) <= 0:
            problems.append("num_action_tokens is 0")
    if getattr(config, "enable_depth_reasoning", False) and pathway == "discrete":
        pass  # depth reasoning is optional at inference; we never ask for it
    if problems:
        raise CheckpointError("the engine cannot serve this MolmoAct2 checkpoint: " + "; ".join(problems))


def weights_fingerprint(ckpt: ResolvedCheckpoint) -> dict[str, str]:
    """sha256 of the weight files; a Hugging Face cache already names its blobs by their sha256."""
    files = sorted(p for p in ckpt.path.iterdir() if p.name.endswith(".safetensors"))
    if not files:
        raise CheckpointError(f"{ckpt.path} holds no *.safetensors weights (looked for {', '.join(WEIGHT_FILES)})")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(_file_sha256(path).encode())
    return {"weights_sha256": digest.hexdigest()}


def _file_sha256(path: Path) -> str:
    real = Path(os.path.realpath(path))
    if real.parent.name == "blobs" and len(real.name) == 64:
        return real.name  # LFS blob: the hub named it by its sha256
    return _content_sha256(real)


def _content_sha256(path: Path) -> str:
    """sha256 of the bytes the file holds now (never a name standing for them)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def git_blob_sha1(path: Path) -> str:
    """The git blob id of the file's content: how the hub names (and ETags) a file kept outside LFS."""
    h = hashlib.sha1()
    h.update(f"blob {os.path.getsize(path)}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def fast_tokenizer_dir(ckpt: Path, *, pin: str | None = None, log=None) -> tuple[Path, dict]:
    """(the FAST tokenizer's directory, its provenance for the manifest): ours beside the weights
    (pinned by the sha256 of its tokenizer.json), else the release's at `pin` (the arm's
    `fast_revision`, `--fast-revision`), else at RELEASE_FAST_TOKENIZER_REVISION."""
    local = ckpt / FAST_TOKENIZER_SUBDIR
    if (local / "tokenizer.json").is_file():
        return local, {"source": "checkpoint", "path": str(local),
                       "tokenizer_sha256": _file_sha256(local / "tokenizer.json")}
    pin = fast_tokenizer_pin(pin)
    try:
        snapshot, commit = download_snapshot(RELEASE_FAST_TOKENIZER, pin, log=log)
    except CheckpointError as exc:
        raise CheckpointError(
            f"the discrete pathway needs a FAST action tokenizer: none at {local}, and {exc}"
        ) from None
    if commit != pin:
        raise CheckpointError(f"{RELEASE_FAST_TOKENIZER} at {pin} resolved to commit {commit}: refused, the "
                              "tokenizer is pinned to one commit")
    if not (snapshot / "tokenizer.json").is_file():
        raise CheckpointError(f"{RELEASE_FAST_TOKENIZER} ({snapshot}) has no tokenizer.json")
    return snapshot, {"source": "hub", "repo": RELEASE_FAST_TOKENIZER, "revision": commit, "path": str(snapshot)}


def fast_tokenizer_pin(pin: str | None = None) -> str:
    """The commit the release FAST tokenizer is fetched at: `pin` (the run's), else
    RELEASE_FAST_TOKENIZER_REVISION; refused unless a 40-hex commit (never an unpinned fetch)."""
    if pin is None and RELEASE_FAST_TOKENIZER_REVISION is None:
        raise CheckpointError(
            f"the discrete pathway needs the release FAST tokenizer {RELEASE_FAST_TOKENIZER}, and it is never "
            "fetched unpinned: pass --fast-revision COMMIT (or `fast_revision:` in the arm of a pre-registration) "
            "with the repo's 40-hex commit (`huggingface-cli download allenai/MolmoAct2-FAST-Tokenizer` prints "
            f"the snapshot path, whose last folder is the commit), or put the tokenizer beside the weights in "
            f"CKPT/{FAST_TOKENIZER_SUBDIR}")
    pin = RELEASE_FAST_TOKENIZER_REVISION if pin is None else pin
    if not is_commit(pin):
        raise CheckpointError(f"the FAST tokenizer's revision {pin!r} is not a 40-hex commit (a branch or tag "
                              "can move); pass the commit itself")
    return pin


def is_commit(text: str) -> bool:
    """A full 40-hex Git commit (what pins a Hugging Face snapshot immutably)."""
    return COMMIT_RE.fullmatch(text) is not None


def load_config(ckpt: Path):
    """The model config alone, so a checkpoint the engine cannot serve is refused before the
    (possibly many-GB) weights are read."""
    from lerobot.policies.molmoact2.molmoact2_hf_model.configuration_molmoact2 import MolmoAct2Config

    if not (ckpt / "config.json").is_file():
        raise CheckpointError(f"{ckpt} has no config.json; it is not a MolmoAct2 checkpoint directory")
    try:
        return MolmoAct2Config.from_pretrained(str(ckpt))
    except Exception as exc:  # noqa: BLE001 - a config transformers cannot read is the user's to fix
        raise CheckpointError(f"{ckpt / 'config.json'} is not a MolmoAct2 config: {exc}") from None


def load_model(ckpt: Path, config, *, dtype, device):
    """The saved weights, exactly: `from_pretrained` re-initialises them, so reload them strictly."""
    from lerobot.policies.molmoact2.modeling_molmoact2 import _strict_load_safetensors_weights
    from lerobot.policies.molmoact2.molmoact2_hf_model.modeling_molmoact2 import (
        MolmoAct2ForConditionalGeneration,
    )
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a progress bar per load would litter the driver log
    try:
        model = MolmoAct2ForConditionalGeneration.from_pretrained(
            str(ckpt), config=config, dtype=dtype, low_cpu_mem_usage=True, local_files_only=True
        )
        _strict_load_safetensors_weights(model, str(ckpt))
    except (FileNotFoundError, RuntimeError, OSError, ValueError) as exc:
        raise CheckpointError(f"the weights in {ckpt} do not load into lerobot's MolmoAct2: {exc}") from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    model.to(device=device)  # not dtype: from_pretrained set it, and a cast would round RoPE's fp32 inv_freq
    model.eval()
    model.requires_grad_(False)
    return model


def load_processor(ckpt: Path):
    from lerobot.policies.molmoact2.processor_molmoact2 import _load_local_molmoact2_processor

    try:
        processor = _load_local_molmoact2_processor(str(ckpt))
    except (FileNotFoundError, OSError, ValueError) as exc:
        raise CheckpointError(f"the processor/tokenizer in {ckpt} cannot be loaded: {exc}") from None
    processor.tokenizer.padding_side = "left"  # batched prompts end together, where decoding starts
    return processor
