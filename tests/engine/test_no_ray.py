"""Where Ray is not installed, --ray is one clear error (this test needs no Ray, so it always runs)."""

from __future__ import annotations

import os

from tests.helpers import REPO, run_eval

SCRIPTED = ("--policy", "scripted", "--episode-seconds", "1", "--video-draw", "none")


def test_without_ray_one_clear_error(tmp_path):
    """`ray` unimportable (a sitecustomize that blocks it): exit 2 with the install hint, no run dir."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoRay:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n"
        "            raise ImportError('No module named ray (blocked by the test)')\n"
        "sys.meta_path.insert(0, _NoRay())\n")
    run_dir = tmp_path / "run"
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    out = run_eval(*SCRIPTED, "--seeds", "0", "--ray", "127.0.0.1:1", "--run-dir", str(run_dir), env=env, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "pip install '.[ray]'" in out.stderr and "Traceback" not in out.stderr + out.stdout
    assert not run_dir.exists()  # nothing written
