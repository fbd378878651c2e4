"""MolmoAct2 on the CPU with the tiny model: what batching buys, and what the grammar mask costs.

    .venv/bin/python benchmarks/bench_molmoact2.py [--batch 8] [--repeats 5] [--threads 1]

Prints the per-observation flow predict time at batch 1 and at batch N (and their ratio), then
the discrete decode at batch 1 under the reference and the grammar-masked decode: wall per
predict, steps, time per step, fallbacks, interventions, and the mask's own cost per step
(table lookup + masked argmax) against a full-vocabulary argmax. Last, the predict trail
(`--record-predicts`): the cost of writing one predicts.jsonl line per observation, per line
and as a share of the predict it records, for each pathway.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from engine.policies.base import Observation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, default=None, help="where the tiny model lives (default: a temp dir)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from engine.policies.molmoact2 import load_policy

    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="bench-molmoact2-"))
    load = dict(dtype="fp32", device="cpu", cache_dir=cache)
    flow = load_policy("tiny", pathway="flow", decode="flow", **load)
    print(f"tiny MolmoAct2: {flow.describe()['parameters']:,} parameters, chunk horizon {flow.chunk_horizon}, "
          f"torch threads {args.threads}")

    batch = [_obs(i) for i in range(args.batch)]
    flow.predict_batch(batch[:1])  # warm-up
    one = _median_wall(lambda: flow.predict_batch(batch[:1]), args.repeats)
    many = _median_wall(lambda: flow.predict_batch(batch), args.repeats)
    per_obs = many / len(batch)
    print(f"flow  batch 1: {one * 1e3:8.1f} ms per observation")
    print(f"flow  batch {len(batch)}: {per_obs * 1e3:8.1f} ms per observation ({many * 1e3:.1f} ms per call)")
    print(f"flow  per-observation ratio batch 1 / batch {len(batch)}: {one / per_obs:.2f}x")

    for decode in ("reference", "grammar-masked"):
        policy = load_policy("tiny", pathway="discrete", decode=decode, **load)
        walls, steps, fallbacks, violations = [], [], 0, 0
        for i in range(args.repeats):
            started = time.perf_counter()
            chunk = policy.predict_batch([_obs(100 + i)])[0]
            walls.append(time.perf_counter() - started)
            steps.append(chunk.info["decode_steps"])
            fallbacks += int(chunk.zero_fallback)
            violations += chunk.mask_violations
        wall, n = statistics.median(walls), statistics.median(steps)
        print(f"{decode:>14}: {wall * 1e3:8.1f} ms per predict, {n:.0f} steps ({wall / n * 1e3:.2f} ms/step), "
              f"zero fallbacks {fallbacks}/{args.repeats}, mask interventions {violations}")
        batched = _median_wall(lambda p=policy, b=batch: p.predict_batch(b), max(1, args.repeats // 2)) / len(batch)
        print(f"{'':>14}  batch {len(batch)}: {batched * 1e3:8.1f} ms per observation "
              f"(per-observation ratio batch 1 / batch {len(batch)}: {wall / batched:.2f}x)")
        if policy.grammar is not None:
            _mask_step_cost(policy)
        _trail_cost(policy, batch, batched, args.repeats)
    _trail_cost(flow, batch, per_obs, args.repeats)
    return 0


def _trail_cost(policy, batch, predict_per_obs_s: float, repeats: int) -> None:
    """Writing the served batch to predicts.jsonl (encode + write + flush), against the predict."""
    from engine.record.predict_trail import PredictTrail

    chunks = policy.predict_batch(batch)
    with tempfile.TemporaryDirectory(prefix="bench-trail-") as tmp:
        trail = PredictTrail.for_run(Path(tmp))
        rounds = max(20, repeats * 10)
        started = time.perf_counter()
        for _ in range(rounds):
            trail.record(batch, chunks)
        per_line = (time.perf_counter() - started) / (rounds * len(batch))
        size = trail.path.stat().st_size / trail.lines
        trail.close()
    label = "flow" if policy.pathway == "flow" else ""
    print(f"{label:>14}  trail: {per_line * 1e6:7.1f} us and {size / 1024:.1f} KiB per line, "
          f"{per_line / predict_per_obs_s * 100:.3f}% of the predict per observation at batch {len(batch)}")


def _mask_step_cost(policy) -> None:
    """The mask's own per-step cost, apart from the model: lookup + masked argmax vs full argmax."""
    grammar, ids = policy.grammar, policy.token_ids
    vocab = policy.model.lm_head.out_features
    logits = torch.randn(vocab)
    state = grammar.start()
    action = slice(ids.action0, ids.action0 + policy.codec.n_bpe)
    n = 2000
    started = time.perf_counter()
    for _ in range(n):
        allowed = torch.from_numpy(grammar.allowed_tokens(state))
        int(logits[action].masked_fill(~allowed, float("-inf")).argmax())
    masked = (time.perf_counter() - started) / n
    started = time.perf_counter()
    for _ in range(n):
        int(logits.argmax())
    full = (time.perf_counter() - started) / n
    print(f"{'':>14}  mask step {masked * 1e6:.1f} us vs full-vocabulary argmax {full * 1e6:.1f} us "
          f"(vocabulary {vocab}; the release's is ~152k)")


def _median_wall(fn, repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def _obs(seed: int, px: int = 224) -> Observation:
    """A seeded random observation: two px x px camera images and a joint state."""
    rng = np.random.default_rng(seed)
    images = {cam: rng.integers(0, 256, size=(px, px, 3), dtype=np.uint8) for cam in ("front", "wrist")}
    return Observation(seed=seed, tick=0, replan_index=0, state_rad=rng.uniform(-0.5, 0.5, 6), images=images)


if __name__ == "__main__":
    raise SystemExit(main())
