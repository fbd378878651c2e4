"""Fixtures for the prereg tests: copies of the shipped examples and hand-made run dirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prereg.rows import complete_row

EXAMPLES = Path(__file__).resolve().parents[2] / "prereg" / "examples"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture
def demo(tmp_path) -> Path:
    """A private copy of the frozen demo pre-registration."""
    dst = tmp_path / "demo.md"
    shutil.copy(EXAMPLES / "demo.md", dst)
    return dst


@pytest.fixture
def discrete(tmp_path) -> Path:
    dst = tmp_path / "discrete_ar_100.md"
    shutil.copy(EXAMPLES / "discrete_ar_100.md", dst)
    return dst


def make_row(seed: int, **kw) -> dict:
    base = dict(seed=seed, success=False, progress_cm=0.0, progress_final_cm=0.0, reset_strikes=0,
                predicts=10, zero_fallbacks=0, mask_violations=0, status="ok")
    base.update(kw)
    return complete_row(base)


@pytest.fixture
def run_dir(tmp_path):
    """run_dir(name, rows, status=None, manifest=None, tail='') -> a run directory with rows.jsonl."""

    def make(name: str, rows: list[dict], status: dict | None = None, manifest: dict | None = None,
             tail: str = "") -> Path:
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        text = "".join(json.dumps(r) + "\n" for r in rows) + tail
        (d / "rows.jsonl").write_text(text)
        if status is not None:
            (d / "status.json").write_text(json.dumps(status))
        if manifest is not None:
            (d / "manifest.json").write_text(json.dumps(manifest))
        return d

    return make
