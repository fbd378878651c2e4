"""Batched bf16 flow predicts of a mid-size random MolmoAct2 on a CUDA device, against batch 1.

    .venv/bin/python benchmarks/gpu_molmoact2.py [--batches 1,4,8,16] [--repeats 10]

Builds (once, in a temp dir or --cache-dir) a random model with lerobot's classes at a
mid size (text 1024 wide x 12 layers, ViT 384 x 6 on 224-px images, action expert 512),
loads it through the engine's loader in bf16 on CUDA and times `predict_batch` on two
224x224 cameras per observation: per-call and per-observation milliseconds, observations per
second, and the per-observation speed-up of each batch over batch 1. Without CUDA it says so
and exits 0 (`--allow-cpu` runs it anyway, slowly, to check the script).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench_molmoact2 import _obs  # the same random observations as the CPU benchmark (this folder is on sys.path)

from engine.policies.molmoact2.tiny import ModelDims

MID = ModelDims(
    text_hidden=1024,
    text_layers=12,
    text_heads=16,
    text_kv_heads=4,
    vit_hidden=384,
    vit_layers=6,
    vit_heads=6,
    expert_hidden=512,
    expert_heads=8,
    image_px=224,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--flow-steps", type=int, default=10)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--allow-cpu", action="store_true", help="run on the CPU (fp32, small) to check the script")
    args = parser.parse_args()

    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.allow_cpu:
        print("gpu_molmoact2: no CUDA device here; nothing to measure (run it on a GPU machine).")
        return 0
    dims = MID if on_gpu else ModelDims()
    dtype, device = ("bf16", "cuda") if on_gpu else ("fp32", "cpu")

    from engine.policies.molmoact2 import load_policy
    from engine.policies.molmoact2.tiny import build_tiny

    root = args.cache_dir or Path(tempfile.mkdtemp(prefix="gpu-molmoact2-"))
    started = time.perf_counter()
    ckpt = build_tiny(root / ("molmoact2-mid" if on_gpu else "molmoact2-tiny"), dims=dims)
    built = time.perf_counter() - started
    policy = load_policy(str(ckpt), pathway="flow", decode="flow", dtype=dtype, device=device, flow_steps=args.flow_steps)
    d = policy.describe()
    name = torch.cuda.get_device_name(0) if on_gpu else "cpu"
    print(f"device {name}; model {d['parameters'] / 1e6:.1f} M parameters, {dtype}, "
          f"chunk {policy.chunk_horizon}, euler-{args.flow_steps}; built in {built:.1f} s")

    batches = [int(b) for b in args.batches.split(",")]
    observations = [_obs(i) for i in range(max(batches))]
    policy.predict_batch(observations[: max(batches)])  # warm-up: kernels, allocator, CUDA graph
    base = None
    print(f"{'batch':>5} {'ms/call':>9} {'ms/obs':>8} {'obs/s':>8} {'speed-up/obs':>13}")
    for batch in batches:
        policy.predict_batch(observations[:batch])
        wall = _median_wall(lambda b=batch: policy.predict_batch(observations[:b]), args.repeats, on_gpu)
        per_obs = wall / batch
        base = base or per_obs
        print(f"{batch:5d} {wall * 1e3:9.1f} {per_obs * 1e3:8.1f} {1 / per_obs:8.1f} {base / per_obs:12.2f}x")
    if on_gpu:
        print(f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
    return 0


def _median_wall(fn, repeats: int, sync: bool) -> float:
    walls = []
    for _ in range(repeats):
        if sync:
            torch.cuda.synchronize()
        started = time.perf_counter()
        fn()
        if sync:
            torch.cuda.synchronize()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


if __name__ == "__main__":
    sys.exit(main())
