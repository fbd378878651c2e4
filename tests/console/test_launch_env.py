"""The launch dialog names the env an arm runs on and the hash its plan froze it with (issue 23)."""

from __future__ import annotations

import shutil

from console import preregs
from prereg.document.seal import amend, freeze
from tests.helpers import REPO

PIN = "1047e8d2" + "ab" * 28


def test_the_launch_settings_name_the_env_and_its_pinned_hash(tmp_path):
    lines = dict(preregs.launch_settings(preregs.DEMO_PREREG, "scripted")[0])
    assert lines["env"] == "boat-on-disk (the default) · sha256 not pinned"
    doc = tmp_path / "demo.md"
    shutil.copy(REPO / "prereg" / "examples" / "demo.md", doc)
    amend(doc, data={"arms": [{"name": "lab", "policy": "scripted", "env": "lab/env.yaml", "env_sha256": PIN}]},
          title="the lab's block", why="Registered before its launch.")
    freeze(doc, now="2026-12-01T10:00:00Z")
    settings, problem = preregs.launch_settings(doc, "lab")
    assert problem is None and dict(settings)["env"] == f"lab/env.yaml · sha256 {PIN[:12]}"
    assert [label for label, _ in settings].count("env") == 1
