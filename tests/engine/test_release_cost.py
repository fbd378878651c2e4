"""benchmarks/bench_release_cost.py cannot rot: its two measurements run at a tiny size."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_release_cost as bench  # noqa: E402


def test_decode_step_cost_runs_at_a_small_vocabulary():
    cost = bench.decode_step_cost(4224, batch_sizes=(2,), hidden=64, n=3, lm_head=False)
    assert cost["vocab"] == 4224 and cost["fast_bpe_vocab"] > 0
    for dtype in ("fp32", "bf16"):
        row = cost[f"batch2_{dtype}"]
        assert row["full_argmax_us"] > 0 and row["mask_us"] > 0
        assert row["engine_masked_step_us"] == pytest.approx(row["full_argmax_us"] + row["mask_us"])


def test_a_tiny_depth_builds_in_bf16_and_predicts():
    previous = torch.get_num_threads()
    try:
        result = bench.measure_depth(bench.TINY, 1, batch=2, flow_steps=2, threads=1, cap_bytes=None)
    finally:
        torch.set_num_threads(previous)
    assert result["param_dtypes"] == ["torch.bfloat16"]  # born bf16: no fp32 copy
    assert result["parameters"] == bench.count_parameters(bench.TINY, 1)
    assert result["predict_s"] > 0 and result["flow_loop_s"] > 0 and result["peak_rss_gb"] > 0
    assert torch.get_default_dtype() == torch.float32  # the build restores the default


def test_the_release_shape_is_the_published_one():
    """Counted on the meta device (nothing allocated): ~5.5 B parameters, as the release reports."""
    params = bench.count_parameters(bench.RELEASE, bench.RELEASE.text_layers)
    assert 5.2e9 < params < 5.9e9


def test_fit_is_least_squares():
    a, b = bench._fit([1, 2, 4], [3.0, 5.0, 9.0])
    assert (a, b) == pytest.approx((1.0, 2.0))
