"""Compile a scene once, hand it to the workers (issue 26).

Compiling the SO-101 scene costs a worker about 1.5-2 s and 390 MB (mesh hulls and BVHs), and
each of a run's workers used to pay it for the same scene. Now the process that starts the
workers (engine.workers.pool.LocalPool: the driver, or a Ray shard on its node) compiles each scene they
need once, saves it as MJB into an anonymous in-memory file it keeps open (`Export`), and names
it to each worker as `/proc/<its pid>/fd/<n>`. A worker `install`s those names before it builds
anything; every place that compiles a scene asks `model(key)` first and gets the handed model,
loaded once per worker and shared read-only by the worker's env and its scripted oracle (neither
writes to its model: each steps or poses its own MjData). A scene not handed (an entry-point env,
a machine without /proc, a load that fails) is compiled by the worker as before.

An MJB holds every array of the compiled model, so a loaded model is the compiled one: rows,
readings and images are bit-identical (tests/engine/test_worker_handoff.py, per env). Nothing
is written to disk, and the memory goes when the parent closes the file or dies.

Keys: `boat-on-disk` (engine.sim.scene, also the oracle's kinematics), `pick-lift`, and
`env-file:<absolute path>` for an env file.
"""

from __future__ import annotations

import os
from pathlib import Path

_HANDED: dict[str, str] = {}  # key -> the MJB's path (this process is a worker)
_LOADED: dict[str, object] = {}  # key -> the model loaded from it
_FAILED: dict[str, str] = {}  # key -> why it could not be loaded (then the worker compiles it)


def install(scenes: dict[str, str]) -> None:
    """In a worker: the scenes handed to it, {key: path of an MJB}."""
    _HANDED.clear()
    _LOADED.clear()
    _FAILED.clear()
    _HANDED.update(scenes or {})


def reset() -> None:
    install({})


def model(key: str):
    """The handed scene `key` (one instance per process, read-only), or None: compile it."""
    if key not in _HANDED or key in _FAILED:
        return None
    if key not in _LOADED:
        import mujoco

        try:
            _LOADED[key] = mujoco.MjModel.from_binary_path(_HANDED[key])
        except Exception as exc:  # noqa: BLE001 - any failure: the worker compiles it, as it used to
            _FAILED[key] = f"{type(exc).__name__}: {exc}"
            return None
    return _LOADED[key]


def is_handed(m) -> bool:
    """Whether `m` is a handed model (shared: a caller must not take a copy it would not need)."""
    return any(m is v for v in _LOADED.values())


def report() -> dict:
    """What this worker was handed and used: {"loaded": [...], "failed": {key: why}}."""
    return {"loaded": sorted(_LOADED), "failed": dict(_FAILED)}


class Export:
    """The parent's side: compiled models saved as MJB into anonymous files kept open until `close`."""

    def __init__(self):
        self._fds: dict[str, int] = {}
        self.bytes = 0

    def add(self, key: str, m) -> None:
        import mujoco
        import numpy as np

        buf = np.empty(mujoco.mj_sizeModel(m), dtype=np.uint8)
        mujoco.mj_saveModel(m, None, buf)
        fd = _anonymous_file(f"fontaine-scene-{key[:40]}")
        try:
            view = memoryview(buf)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            raise
        self._fds[key] = fd
        self.bytes += len(buf)

    def names(self) -> dict[str, str]:
        """{key: a path any process of this user can open while this one holds the file}."""
        pid = os.getpid()
        return {key: f"/proc/{pid}/fd/{fd}" for key, fd in self._fds.items()}

    def close(self) -> None:
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()


def available() -> bool:
    """Handing scenes needs /proc/<pid>/fd (Linux)."""
    return Path(f"/proc/{os.getpid()}/fd").is_dir()


def _anonymous_file(name: str) -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create(name, getattr(os, "MFD_CLOEXEC", 0))
    import tempfile

    f = tempfile.TemporaryFile()  # unlinked at once: gone with the last descriptor
    fd = os.dup(f.fileno())
    f.close()
    return fd
