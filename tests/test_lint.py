"""The code passes the project's ruff configuration (pyproject.toml [tool.ruff]): part of the suite,
so CI runs it with the tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(REPO)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


MAX_MODULE_LINES = 600  # a module past this is split along its seams (issue 31)


def test_no_module_is_over_600_lines():
    sizes = {str(p.relative_to(REPO)): sum(1 for _ in p.open(encoding="utf-8"))
             for package in ("engine", "console", "prereg") for p in (REPO / package).rglob("*.py")}
    over = sorted(f"{name} ({n} lines)" for name, n in sizes.items() if n > MAX_MODULE_LINES)
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them along their seams): {', '.join(over)}"
