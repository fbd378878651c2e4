"""benchmarks/bench_variants.py cannot rot: it runs at a tiny size on an env file with variants."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.engine.env_file_fixture import ENV, write_env
from tests.engine.test_variants import VARIANTS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_variants as bench  # noqa: E402


def test_the_bench_runs_and_prints_the_ratios(tmp_path, capsys):
    lab = write_env(tmp_path / "lab", ENV + VARIANTS)
    bench.main(["--env", str(lab), "--seeds", "1", "--episode-seconds", "0.5", "--render-size", "16", "--repeats", "1"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("env lab-cube: 1 seeds x 15 ticks") and out[0].endswith("base, dim-light, dark-table")
    assert [line.split()[0] for line in out[1:4]] == ["one", "three", "naive"]
    assert out[4].startswith("three / one = ") and out[5].startswith("naive / one = ")


def test_an_env_without_two_variants_is_refused(tmp_path):
    import pytest

    with pytest.raises(SystemExit, match="declares 0 variant"):
        bench.main(["--env", str(write_env(tmp_path / "lab"))])
