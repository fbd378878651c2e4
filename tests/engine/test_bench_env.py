"""benchmarks/bench_env.py cannot rot: it runs at a tiny size on each kind of env (a built-in, the
second built-in, an env file), its layer-alone measurement through the env contract alone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.engine.env_file_fixture import write_env

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_env as bench  # noqa: E402


@pytest.mark.parametrize("env", ["boat-on-disk", "pick-lift", "file"])
def test_the_bench_runs_on_every_kind_of_env(env, tmp_path, capsys):
    name = str(write_env(tmp_path / "lab")) if env == "file" else env
    bench.main(["--env", name, "--seeds", "1", "--episode-seconds", "1", "--repeats", "1", "--layer-reps", "5"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"env {name}: 1 seeds x 30 ticks")
    assert [line.split()[0] for line in out[1:4]] == ["bare", "env", "served"]
    assert "x1.000 of bare physics" in out[1]  # bare against itself
    assert out[4].startswith("the layer alone (step_tick less its physics") and "us/tick" in out[4]
    assert out[5].startswith("served loop ") and out[5].endswith("the goal (>= 0.8x bare physics)")
