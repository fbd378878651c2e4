"""Moved to tests/fake_hub.py (shared by the engine's download tests and prereg's publish tests)."""

from tests.fake_hub import Commit, DatasetRepo, FakeHub  # noqa: F401
