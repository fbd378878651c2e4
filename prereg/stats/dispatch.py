"""What a sequential comparison costs when W workers run it: episodes run against the seeds its test read.

The registered test reads the plan prefix both arms have (prereg/stats/comparison.py), so its cost on
paper is 2 x the seeds at the decision. A run spends more: W workers take jobs in plan order ((A, k),
(B, k), then k + 1), episodes end in any order (a success ends its episode early), and when the prefix
that decides is complete some later episodes have already finished (spent, read by nobody) and up to
W - 1 are in flight. Until issue 47 the driver let those run to their end; now it cancels them
(engine/run/driver.py: never rows, owed nothing). This module simulates the driver's dispatch over the
test's own sequences (prereg.stats.operating.run_sequences) and counts both ways, so the claim "within
2% of the design's expectation" is a figure of the shipped test, checked in
tests/prereg/test_dispatch.py and drawn in docs/ by scripts/dispatch_figure.py.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from prereg.document.comparison_spec import ComparisonSpec
from prereg.stats.operating import run_sequences, simulate_success


@dataclass(frozen=True)
class DispatchCost:
    design_episodes: float  # 2 x the mean seeds at the decision: what the test reads
    run_cancelled: float  # mean episodes finished when the deciding prefix is complete (in flight: cancelled)
    run_to_end: float  # ... plus the episodes in flight then, run to their end (before issue 47)

    @property
    def ratio_cancelled(self) -> float:
        return self.run_cancelled / self.design_episodes

    @property
    def ratio_to_end(self) -> float:
        return self.run_to_end / self.design_episodes


def episode_times(rng, a: np.ndarray, b: np.ndarray, success_share: float, noise: float) -> np.ndarray:
    """Each job's wall (S x 2n, plan order (A, k), (B, k)): a failure runs its whole budget (1.0), a
    success ends at `success_share` of it; lognormal noise of sd `noise` on both."""
    ok = np.empty((a.shape[0], 2 * a.shape[1]), dtype=bool)
    ok[:, 0::2], ok[:, 1::2] = a, b
    return np.where(ok, success_share, 1.0) * rng.lognormal(0.0, noise, ok.shape)


def spent(walls: np.ndarray, workers: int, decided_at: int) -> tuple[int, int]:
    """One sequence: W lanes take jobs in plan order as they free up. (episodes finished when the first
    `decided_at` seeds of both arms are, episodes started by then): what a run spends with the episodes in
    flight cancelled, and with them run to their end."""
    n_jobs = walls.shape[0]
    lanes = [0.0] * workers
    heapq.heapify(lanes)
    ends = np.empty(n_jobs)
    starts = np.empty(n_jobs)
    for j in range(n_jobs):
        t = heapq.heappop(lanes)
        starts[j], ends[j] = t, t + walls[j]
        heapq.heappush(lanes, ends[j])
    decided = ends[: 2 * decided_at].max()
    return int((ends <= decided).sum()), int((starts < decided).sum())


def dispatch_cost(spec: ComparisonSpec, pa: float, pb: float, *, workers: int = 8, sims: int = 2000,
                  success_share: float = 0.35, noise: float = 0.2, seed: int = 0) -> DispatchCost:
    """The registered test at rates (pa, pb), run by `workers` workers: mean episodes the test reads,
    and mean episodes run with the in-flight ones cancelled at the decision or run to their end."""
    rng = np.random.default_rng(seed)
    n = int(spec.max_seeds)
    a, b = simulate_success(rng, sims, n, pa, pb)
    _code, when = run_sequences(spec, n, a, b)
    walls = episode_times(rng, a, b, success_share, noise)
    cancelled, to_end = zip(*(spent(walls[s], workers, int(when[s])) for s in range(sims)))
    return DispatchCost(2.0 * float(np.mean(when)), float(np.mean(cancelled)), float(np.mean(to_end)))
