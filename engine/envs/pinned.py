"""An env file's bytes, read once: what is hashed is what is compiled and what every worker reads.

A launch of an env file (`fontaine-eval --env lab/env.yaml`, or a plan's) pins it before it checks its
hash (engine.envs.envfile.pin): every file the env reads (the YAML, the MJCF and its includes, meshes
and textures, the arm's MJCF and meshes) is read from disk once, here, and from then on this process
reads those bytes, never the disk: the declaration is parsed from them, the hash is computed from
them, the scene is compiled from them (MuJoCo's include and asset dictionaries), and the pool hands
them to its workers (`install`), so an edit made after the hash cannot reach the run. Pure: bytes by
absolute path; nothing here imports MuJoCo.
"""

from __future__ import annotations

import os
from pathlib import Path

from prereg.core.safe_read import Unreadable, read_regular

ASSET_MAX_BYTES = 256 << 20  # a mesh or texture: large, but bounded (an env file's YAML and MJCF: mjcf_scan's limit)

_PINNED: dict[str, bytes] = {}
_GENERATION = [0]  # moves at every pin, install and clear: a cache of what was read from files keys on it


def generation() -> int:
    return _GENERATION[0]


def key(path) -> str:
    return os.path.realpath(Path(path).expanduser())


def get(path) -> bytes | None:
    """The pinned bytes of `path`, or None when it is not pinned (then it is read from disk)."""
    return _PINNED.get(key(path))


def read(path, limit: int = ASSET_MAX_BYTES) -> bytes:
    """`path`'s pinned bytes, else its bytes on disk now: bounded and never blocking (a FIFO named as an
    MJCF would hold the open forever); OSError (FileNotFoundError when missing) with why in words."""
    data = get(path)
    if data is None:
        data = _read_disk(path, limit)
    if len(data) > limit:
        raise OSError(f"larger than {limit // 1024} KB: not an env file")
    return data


def _read_disk(path, limit: int) -> bytes:
    try:
        return read_regular(path, limit)
    except Unreadable as exc:
        raise OSError(exc.why if "bytes" not in exc.why else f"larger than {limit // 1024} KB: "
                      "not an env file") from None


def pin(paths) -> list[str]:
    """Read each of `paths` from disk now and keep those bytes; the keys pinned."""
    out = []
    for p in paths:
        k = key(p)
        try:
            data = read_regular(k, ASSET_MAX_BYTES)
        except Unreadable as exc:
            raise OSError(f"{p}: {exc.why}") from None
        _PINNED[k] = data
        out.append(k)
    _GENERATION[0] += 1
    return out


def pinned() -> dict[str, bytes]:
    """Every pinned file (what a worker is handed)."""
    return dict(_PINNED)


def install(files: dict[str, bytes] | None) -> None:
    """In a worker: the launch's pinned bytes, in place of anything pinned before."""
    _PINNED.clear()
    _PINNED.update(files or {})
    _GENERATION[0] += 1


def clear() -> None:
    _PINNED.clear()
    _GENERATION[0] += 1
