"""benchmarks/bench_gym.py cannot rot: it runs at a tiny size, both Gymnasium paths against their baselines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_gym as bench  # noqa: E402


def test_the_bench_measures_both_gymnasium_paths(capsys):
    pytest.importorskip("so101_nexus_mujoco")
    bench.main(["--seeds", "1", "--episode-seconds", "0.5", "--repeats", "1", "--image-size", "16"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1 seeds x 15 ticks")
    assert out[1].startswith("1. Fontaine's boat-on-disk as a Gymnasium env")
    assert [line.split()[0] for line in out[2:5]] == ["native", "native+obs", "gym"]
    assert "x1.000 of native+obs" in out[3] and out[5].startswith("  the gym step against the native tick")
    assert out[6].startswith("2. gym:MuJoCoPickAndPlace-v1 through its adapter (25 env steps of 20 ms in 15 ticks)")
    assert [line.split()[0] for line in out[7:9]] == ["bare", "adapter"] and "x1.000 of bare" in out[7]


def test_the_default_run_is_short_and_long_is_the_recorded_one(capsys):
    """The default finishes in under a minute on the shared box; --long is what benchmarks/README.md records."""
    short, long_ = bench.parse_args([]), bench.parse_args(["--long"])
    assert (short.seeds, short.episode_seconds, short.repeats) == (1, 4.0, 3)
    assert (long_.seeds, long_.episode_seconds, long_.repeats) == (3, 10.0, 5)
    given = bench.parse_args(["--long", "--seeds", "2"])
    assert (given.seeds, given.repeats) == (2, 5)
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeats", "0"])
    assert "--repeats must be at least 1" in capsys.readouterr().err
