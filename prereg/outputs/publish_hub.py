"""Sending a publish plan to the Hugging Face hub (`publish`: the repo and its branch created if needed, one
commit of the files the repo does not hold already) and the one line for each way the hub can fail. The token
is huggingface_hub's own: a file holding it, or another secret, is refused before anything is sent, and no
message names it. huggingface_hub (and httpx) are imported inside the functions, so `prereg` stays importable
without them. The plan is prereg/outputs/publish.py's (a Space's root: prereg/outputs/publish_space.py)."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from urllib.parse import urlsplit

from prereg.core.errors import UsageError
from prereg.core.untrusted import secret_in
from prereg.outputs.publish import SPACE, Published, PublishFailed, PublishPlan, _commit_url, _repo_url
from prereg.outputs.publish_space import space_front
from prereg.rundir.files import utc_now


def hub_endpoint() -> str:
    """The hub's address as the environment says now (HF_ENDPOINT; huggingface_hub reads it once, at import)."""
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def publish(plan: PublishPlan, *, private: bool = False, log=print) -> Published:
    """Create the repo if needed (a dataset, or a static Space; and the branch), then send in one commit every
    file the repo does not hold already (a Space: with its index.html and, if it has none, a README.md).

    Nothing differs: no commit, `sent` 0 and the repo's head commit (the caller keeps its records). Raises
    PublishFailed (one line, nothing published) when the hub is offline, unreachable or refuses; UsageError
    when there is no token or a file holds it. The token is never in a message."""
    from huggingface_hub import CommitOperationAdd, HfApi, get_token

    endpoint = hub_endpoint()
    token = get_token()
    if not token:
        raise UsageError("no Hugging Face token: set HF_TOKEN to a token with write access (or `hf auth login`); "
                         "nothing published (--dry-run lists what would go)")
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE")  # huggingface_hub read it at import; the environment now wins
    if constants._is_true(env) if env is not None else constants.HF_HUB_OFFLINE:
        raise PublishFailed("HF_HUB_OFFLINE is set: nothing published; unset it to publish "
                            "(--dry-run lists what would go)")
    needle = token.encode()
    contents = {}
    for item in plan.items:
        data = item.content()
        if needle in data:
            raise UsageError(f"{item.local}: contains the Hugging Face token; nothing published. Remove it from the "
                             "file (and revoke the token: it was written to disk)")
        secret = secret_in(data)
        if secret is not None:  # another token, a webhook URL, a NAME_KEY=value: never uploaded either
            raise UsageError(f"{item.local}: contains {secret}; nothing published. Remove it from the file "
                             "(and revoke it: it was written to disk)")
        contents[item.path_in_repo] = data
    if not sys.stderr.isatty():  # progress bars only on a terminal: a log or a pipe gets the one line of each outcome
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    api = HfApi(endpoint=endpoint, token=token)
    repo, kind = plan.repo_id, plan.repo_type
    what = "static Space" if kind == SPACE else "dataset repo"
    try:
        step = f"creating the {what} {repo}"
        api.create_repo(repo, repo_type=kind, private=private or None, exist_ok=True,
                        **({"space_sdk": "static"} if kind == SPACE else {}))
        if plan.revision and plan.revision != "main":
            step = f"creating the branch {plan.revision} of {repo}"
            api.create_branch(repo, branch=plan.revision, repo_type=kind, exist_ok=True)
        step = f"listing the files of {repo}"
        held = _held(api, repo, kind, plan.revision)
        if kind == SPACE:
            contents.update(space_front(plan, held, contents))
        send = {path: data for path, data in contents.items() if not _same(held.get(path), data)}
        if not send:
            step = f"reading the head commit of {repo}"
            head = api.repo_info(repo, repo_type=kind, revision=plan.revision).sha
            return Published(repo, plan.revision or "main", head, _commit_url(endpoint, repo, kind, head), endpoint,
                             utc_now(), kind, 0, len(contents))
        log(f"sending {len(send)} of {len(contents)} files to {_repo_url(endpoint, repo, kind)} in one commit"
            + (f" ({len(contents) - len(send)} unchanged, not sent)" if len(send) < len(contents) else "") + " ...")
        step = f"committing {len(send)} files to {repo}"
        ops = [CommitOperationAdd(path_in_repo=path, path_or_fileobj=data) for path, data in send.items()]
        info = api.create_commit(repo, operations=ops, repo_type=kind, revision=plan.revision,
                                 commit_message=f"fontaine-prereg publish: {plan.prereg_id} "
                                                f"({', '.join(r.arm for r in plan.runs)})",
                                 commit_description=_description(plan))
    except Exception as exc:  # noqa: BLE001 - every failure talking to the hub: one line, nothing published
        raise PublishFailed(_scrub(_failure_line(exc, step, repo, endpoint), token)) from None
    return Published(repo, plan.revision or "main", info.oid, info.commit_url, endpoint, utc_now(), kind,
                     len(send), len(contents))


def _held(api, repo: str, kind: str, revision: str | None) -> dict[str, tuple[str, str | None]]:
    """What the repo holds at `revision`: path -> (git blob id, the LFS sha256 of a large file or None)."""
    from huggingface_hub.hf_api import RepoFile

    out = {}
    for entry in api.list_repo_tree(repo, repo_type=kind, revision=revision, recursive=True):
        if isinstance(entry, RepoFile):
            out[entry.path] = (entry.blob_id, entry.lfs.sha256 if entry.lfs else None)
    return out


def _same(held: tuple[str, str | None] | None, data: bytes) -> bool:
    """Whether the repo's file is these bytes: by its LFS sha256 when it is a large file, else its git blob id."""
    if held is None:
        return False
    blob, sha256 = held
    if sha256:
        return hashlib.sha256(data).hexdigest() == sha256
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob


def _description(plan: PublishPlan) -> str:
    lines = [f"Pre-registration {plan.prereg_id} ({plan.prereg_path.name}), reported runs:"]
    lines += [f"- {r.arm}: {r.run_dir.name}" for r in plan.runs]
    return "\n".join(lines)


def _failure_line(exc: BaseException, step: str, repo: str, endpoint: str) -> str:
    from huggingface_hub.errors import (
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set: nothing published; unset it to publish"
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None) if isinstance(exc, HfHubHTTPError) else None
    xet = _XET_HTTP.search(str(exc)) if status is None else None  # hf_xet (Rust) says the status in its message
    if xet is not None:
        return _xet_line(int(xet.group(1)), xet.group(2), step, repo, endpoint)
    head = f"{endpoint} refused {step}"
    if status == 401:
        return (f"{head} (401: the token was not accepted): nothing published; set HF_TOKEN to a valid token "
                "with write access (`hf auth whoami` checks it)")
    if status == 403:
        owner = repo.split("/")[0]
        return (f"{head} (403: the token may not write there): nothing published; use a token with write access to "
                f"{owner} (a fine-grained token needs write on it), or --repo a dataset repo you can write")
    if isinstance(exc, RevisionNotFoundError):
        return f"{head} (the revision does not exist): nothing published; --revision a branch of {repo}"
    if isinstance(exc, RepositoryNotFoundError) or status == 404:
        return f"{head} (404: {repo} not found): nothing published; check --repo and that the token may see it"
    said = _one_line(getattr(exc, "server_message", None) or exc)
    if status is not None and status >= 500:
        return f"{endpoint} failed while {step} ({status}, a server error: {said}): nothing published; run again later"
    if status is not None:
        return f"{head} ({status}: {said}): nothing published; check --repo and --revision, or --dry-run"
    import httpx

    if isinstance(exc, (httpx.TransportError, OSError)):
        return (f"cannot reach {endpoint} while {step} ({type(exc).__name__}: {_one_line(exc)}): nothing published; "
                "check the network (and HF_ENDPOINT), then run again")
    return (f"{step} on {endpoint} failed ({type(exc).__name__}: {_one_line(exc)}): nothing published; run again, "
            "or --dry-run to check what would go")


# hf_xet's error for an answer it did not want: "HTTP status client error (404 Not Found), domain: http://..."
_XET_HTTP = re.compile(r"HTTP status (?:client|server) error \((\d{3})[^)]*\)(?:, domain: (\S+))?")


def _xet_line(status: int, url: str | None, step: str, repo: str, endpoint: str) -> str:
    """The one line for a large file refused on its way through Xet storage: the hub answered, so never
    'cannot reach'."""
    where = urlsplit(url or "").path or "its Xet storage"
    if status == 404 and "xet-write-token" in where:
        return (f"{endpoint} has no Xet storage (it answered 404 to {where}) while {step}: nothing published; "
                "set HF_HUB_DISABLE_XET=1 to send the large files (videos, charts) through LFS instead")
    if status in (401, 403):
        return (f"{endpoint} refused the Xet storage of {repo} ({status} on {where}) while {step}: nothing published; "
                "use a token with write access there (`hf auth whoami`), or HF_HUB_DISABLE_XET=1 to use LFS")
    kind = "a server error" if status >= 500 else "refused"
    return (f"{endpoint}'s Xet storage answered {status} ({kind}) on {where} while {step}: nothing published; run "
            "again" + (" later" if status >= 500 else ", or HF_HUB_DISABLE_XET=1 to send the large files through LFS"))


def _one_line(exc: BaseException | str, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "<token>") if token else text
