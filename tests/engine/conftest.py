"""Fixtures shared by the engine's test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def act_ckpt(tmp_path_factory):
    """One tiny ACT checkpoint per module that asks (tests/engine/lerobot_fixtures.py, about 1 s), read and never
    changed: a test that changes a file of it changes its own copy (`shutil.copytree`)."""
    from tests.engine.lerobot_fixtures import build_checkpoint

    return build_checkpoint(tmp_path_factory.mktemp("act") / "act", "act")
