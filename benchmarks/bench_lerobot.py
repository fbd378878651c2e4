"""A lerobot checkpoint through the adapter vs lerobot's own select_action loop, on the same observations.

    .venv/bin/python benchmarks/bench_lerobot.py [--image 96] [--batch 4] [--repeats 5] [--threads 1]

A tiny randomly initialised ACT (lerobot's API, ResNet18 backbone, chunk 10, n_action_steps 5) and
the same with temporal ensembling are saved to a temp folder and loaded both ways. The baseline,
measured in the same run, is lerobot-eval's per-tick loop: `preprocess_observation`, the saved
preprocessor, `select_action`, the saved postprocessor, every tick. Printed, as ratios against it:
- per chunk: one adapter predict (batch 1, chunk mode) vs one lerobot tick that fills the queue;
  (each pair is timed back to back, alternating order; a ratio is the median of the per-pair ratios)
- per tick over an episode: the adapter's predicts / ticks vs the lerobot loop's cost per tick;
- batched: the adapter's per-observation cost at batch N vs batch 1 (workers served together);
- invariant: N waiting observations served one by one (`--serving invariant`, bit for bit their batch-1
  actions, checked) vs in one call (`--serving batched`), and how far the batched actions drift;
- step mode (temporal ensembling: select_action every tick): adapter per tick vs the loop's;
- images rendered at 224 px and resized to the checkpoint's size: the resize's share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.policies.base import Observation  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=96, help="the checkpoint's image size (px a side)")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import os

    os.environ["FONTAINE_TORCH_THREADS"] = str(args.threads)
    from engine.policies.lerobot_policy import load_policy
    from tests.engine.lerobot_fixtures import LerobotLoop, build_checkpoint

    tmp = Path(tempfile.mkdtemp(prefix="bench-lerobot-"))
    image = (3, args.image, args.image)
    act = build_checkpoint(tmp / "act", "act", image=image)
    ens = build_checkpoint(tmp / "act-te", "act", image=image, n_action_steps=1, temporal_ensemble_coeff=0.01)
    adapter = load_policy(str(act), device="cpu")
    torch.set_num_threads(args.threads)
    loop = LerobotLoop(act)
    n = adapter.n_action_steps
    print(f"tiny ACT: {adapter.describe()['parameters']:,} parameters, {args.image} px images x2, "
          f"n_action_steps {n}, torch threads {torch.get_num_threads()}")

    episode = _episode(0, args.ticks, args.image)
    _check_equal(adapter, loop, episode)

    def lerobot_fill():
        loop.reset()
        loop.select([episode[0]])

    base_chunk, ours_chunk, ratio = _paired(lerobot_fill, lambda: adapter.predict_batch([episode[0]]), args.repeats)
    print(f"per chunk   lerobot select_action (queue empty) {base_chunk * 1e3:7.1f} ms   "
          f"adapter predict {ours_chunk * 1e3:7.1f} ms   ratio {ratio:.2f}x")

    def lerobot_episode():
        loop.reset()
        for obs in episode:
            loop.select([obs])

    def adapter_episode():
        for t in range(0, len(episode), n):
            adapter.predict_batch([episode[t]])

    base_tick, ours_tick, ratio = _paired(lerobot_episode, adapter_episode, args.repeats)
    print(f"per tick    lerobot loop {base_tick / len(episode) * 1e3:7.2f} ms   adapter "
          f"{ours_tick / len(episode) * 1e3:7.2f} ms   ratio {ratio:.2f}x  "
          "(lerobot preprocesses every tick; the adapter once a chunk)")

    batch = [_episode(s, 1, args.image)[0] for s in range(args.batch)]
    one, many, ratio = _paired(lambda: adapter.predict_batch(batch[:1]), lambda: adapter.predict_batch(batch),
                               args.repeats, scale_b=1 / len(batch))
    print(f"batched     adapter batch {len(batch)} {many * 1e3:7.1f} ms per observation vs batch 1 "
          f"{one * 1e3:7.1f} ms   ratio {ratio:.2f}x")

    from engine.policies.factory import Batched, PerObservation

    invariant, batched = PerObservation(adapter), Batched(adapter)
    alone = np.stack([adapter.chunk_actions([o])[0] for o in batch])
    per_obs = np.stack([c.targets_rad for c in invariant.predict_batch(batch)])
    together = np.stack([c.targets_rad for c in batched.predict_batch(batch)])
    assert np.array_equal(per_obs, adapter.to_sim(alone)), "invariant serving is not its batch-1 action"
    drift = float(np.abs(together - per_obs).max())
    t_batched, t_invariant, ratio = _paired(lambda: batched.predict_batch(batch), lambda: invariant.predict_batch(batch),
                                            args.repeats)
    print(f"invariant   {len(batch)} observations served alone {t_invariant * 1e3:7.1f} ms vs batched "
          f"{t_batched * 1e3:7.1f} ms   ratio {ratio:.2f}x  (bit for bit batch 1; batched drifts up to "
          f"{drift:.2g} rad)")

    step = load_policy(str(ens), device="cpu")
    loop_te = LerobotLoop(ens)

    def lerobot_step_episode():
        loop_te.reset()
        for obs in episode:
            loop_te.select([obs])

    def adapter_step_episode():
        for obs in episode:
            step.predict_batch([obs])

    base_step, ours_step, ratio = _paired(lerobot_step_episode, adapter_step_episode, args.repeats)
    print(f"step mode   lerobot loop {base_step / len(episode) * 1e3:7.2f} ms per tick   adapter "
          f"{ours_step / len(episode) * 1e3:7.2f} ms   ratio {ratio:.2f}x")

    big = _episode(0, 1, 224)[0]
    same, resized, ratio = _paired(lambda: adapter.predict_batch([episode[0]]), lambda: adapter.predict_batch([big]),
                                   args.repeats)
    print(f"resize      224 px rendered -> {args.image} px: adapter predict {resized * 1e3:7.1f} ms vs "
          f"{same * 1e3:7.1f} ms at the checkpoint's size   ratio {ratio:.2f}x")
    return 0


def _check_equal(adapter, loop, episode) -> None:
    """The benchmark measures the same computation: the first chunk equals select_action's actions."""
    loop.reset()
    want = np.stack([loop.select([o])[0] for o in episode[: adapter.n_action_steps]])
    got = adapter.chunk_actions([episode[0]])[0]
    assert np.array_equal(got, want), "adapter and select_action disagree"


def _episode(seed: int, ticks: int, size: int) -> list[Observation]:
    rng = np.random.default_rng(seed)
    state = rng.normal(size=6) * 0.3
    return [Observation(seed=seed, tick=t, replan_index=t, state_rad=state + 0.01 * t,
                        images={c: rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for c in ("front", "wrist")})
            for t in range(ticks)]


def _paired(base, ours, repeats: int, scale_b: float = 1.0) -> tuple[float, float, float]:
    """(median base wall, median ours wall x scale_b, median of the per-repeat ratios): the two are timed
    back to back, alternating which goes first, so a noisy neighbour hits both alike."""
    base(), ours()  # warm-up
    a, b = [], []
    for i in range(repeats):
        for fn, out, k in ((base, a, 1.0), (ours, b, scale_b))[:: 1 if i % 2 == 0 else -1]:
            started = time.perf_counter()
            fn()
            out.append((time.perf_counter() - started) * k)
    return statistics.median(a), statistics.median(b), statistics.median(y / x for x, y in zip(a, b))


if __name__ == "__main__":
    sys.exit(main())
