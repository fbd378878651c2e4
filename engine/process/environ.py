"""What a sim worker may see of the driver's environment: an allow-list, never an inheritance.

The driver may hold secrets it needs (HF_TOKEN to download a checkpoint) and secrets of its user it
does not (`WANDB_API_KEY`, `AWS_SECRET_ACCESS_KEY`, the Discord webhook). A worker simulates episodes
and runs a policy's code on what it is handed: the checkpoint is downloaded by the driver before any
worker starts, so a worker needs none of them, and a policy's code that could read them could leak
them. A worker (and the fork server it is forked from) gets only the variables named here, and of
those none whose name or value looks like a secret.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from prereg.core.untrusted import secret_in
from prereg.core.webhook_env import is_webhook_var

# what a worker runs with: the interpreter, the locale, temporary files, GL, CUDA, threads, caches
ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "PWD", "TMPDIR", "TEMP", "TMP",
    "VIRTUAL_ENV", "LD_LIBRARY_PATH", "DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM",
    "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_ENDPOINT", "HF_HUB_DISABLE_TELEMETRY",
    "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_CACHE", "TRANSFORMERS_OFFLINE", "TORCH_HOME",
    "IMAGEIO_FFMPEG_EXE", "SSL_CERT_FILE", "SSL_CERT_DIR",
})
ALLOWED_PREFIXES = ("LC_", "PYTHON", "FONTAINE_", "XDG_", "CUDA_", "NVIDIA_", "EGL_", "__EGL", "MESA_", "LIBGL_",
                    "GALLIUM_", "__GLX", "CUBLAS_", "CUDNN_", "TORCH_")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the folder that holds engine/, prereg/ and console/
SAFE_PATH = "PYTHONSAFEPATH"  # never the working folder first on sys.path (Python 3.11+)
# a name that says secret is dropped even where the allow-list names its prefix (FONTAINE_..._TOKEN)
SECRET_NAME = re.compile(r"WEBHOOK|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$|_KEY_", re.IGNORECASE)


def worker_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default os.environ) a worker may have, and PYTHONSAFEPATH: the fork
    server starts as `python -c` in the user's working folder, and Python puts that folder first on
    sys.path, so an `engine.py` there was imported in place of the package (issue 43: "every worker
    died"). With it set no worker, fork server or shard's pool imports from its working folder."""
    environ = os.environ if environ is None else environ
    return {**{k: v for k, v in environ.items()
               if (k in ALLOWED_NAMES or k.startswith(ALLOWED_PREFIXES)) and not SECRET_NAME.search(k)
               and not is_webhook_var(k, v) and secret_in(v) is None}, SAFE_PATH: "1"}


@contextmanager
def outside_the_working_folder():
    """Ray gives every worker of a job the driver's working folder, first on its sys.path (`ray.init`
    reads it), so a shard would import an `engine.py` there before any of the package's code runs:
    while `ray.init` starts, the working folder is the one that holds this package (whose `engine`
    is this one), which a local cluster's processes keep as theirs. The driver's other threads read
    no relative path meanwhile (the heartbeat may miss a beat)."""
    here = os.getcwd()
    os.chdir(PACKAGE_ROOT)
    try:
        yield
    finally:
        os.chdir(here)


def held_back(environ: Mapping[str, str] | None = None) -> list[str]:
    """The names (never the values) of the variables a worker does not get."""
    environ = os.environ if environ is None else environ
    kept = worker_environ(environ)
    return sorted(k for k in environ if k not in kept)
