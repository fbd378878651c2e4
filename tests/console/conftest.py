"""Fixtures for the console tests: run directories on disk and a wait-on-condition helper."""

from __future__ import annotations

import asyncio
import time

import pytest

from console.app import FontaineApp
from console.fixtures import FIXED_TIME, make_row, make_run_dir


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition"):
    """Let the app run until predicate() is true (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def runs_dir(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    return d


@pytest.fixture
def prereg_dir(tmp_path):
    d = tmp_path / "preregs"
    d.mkdir()
    return d


def make_app(runs_dir, prereg_dir=None, clock=None, **kw) -> FontaineApp:
    return FontaineApp(
        runs_dir=runs_dir,
        prereg_dirs=[prereg_dir] if prereg_dir else [],
        clock=clock or (lambda: FIXED_TIME + 5.0),
        poll_s=kw.pop("poll_s", 0.05),
        notifier=kw.pop("notifier", None),
        **kw,
    )


__all__ = ["wait_for", "make_app", "make_row", "make_run_dir", "FIXED_TIME", "asyncio"]
