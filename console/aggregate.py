"""Running aggregates of a run's rows, in memory that does not grow with the file.

The console shows what a researcher reads off a run while it goes: successes with an
interval, knock-aways, engaged vs quiet, zero-fallbacks per predict, reset strikes (must
be 0), error rows, one outcome per seed (prereg.rundir.rows.episode_outcome), the spread of `progress_final_cm`, the latest
rows and the median episode wall (the stall gate's yardstick). Rows are folded in one at
a time and dropped; only a bounded window of recent rows is kept. Distributions are kept
as counts of values rounded to display precision, so their size depends on the range of
values, not on the number of rows.

Pure: no Textual, no files. `RunAggregate.snapshot()` gives the UI an immutable copy.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

from prereg.rundir.rows import ERROR, BadLine, RowCounts, episode_outcome, number

RECENT_ROWS = 120  # the latest-rows panel shows as many as it has lines for: a tall terminal (220x60) has ~40
RECENT_BAD = 20

HIST_MIN_CM, HIST_MAX_CM, HIST_BIN_CM = -10.0, 10.0, 1.0


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a success proportion (None when there are no trials).

    The same numbers as `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` (Newcombe
    1998, no continuity correction; a test checks the two agree), computed here because
    importing scipy.stats takes seconds, which a console that opens a run must not spend.
    """
    if n <= 0:
        return None
    return _wilson(successes, n, confidence)


@lru_cache(maxsize=256)
def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    p = k / n
    denom = 2 * (n + z * z)
    center = (2 * n * p + z * z) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z * z)
    lo = 0.0 if k == 0 else center - delta
    hi = 1.0 if k == n else center + delta
    return (lo, hi)


@dataclass(frozen=True)
class AggregateView:
    """An immutable copy of the aggregates, safe to hand from the poller thread to the UI."""

    rows: int
    ok_rows: int
    successes: int
    success_ci: tuple[float, float] | None
    knock_aways: int
    engaged: int
    quiet: int
    tipped: int
    predicts: int
    zero_fallbacks: int
    zero_fallback_rate: float | None
    mask_violations: int
    reset_strikes: int
    rows_with_reset_strikes: int
    errors: int
    error_messages: tuple[str, ...]
    duplicate_seeds: int
    seed_outcomes: dict
    progress_final_hist: tuple[tuple[str, int], ...]
    progress_final_counts: tuple[tuple[float, int], ...]  # (value rounded to 0.01 cm, count), ascending
    progress_final_mean: float | None
    progress_final_median: float | None
    median_wall_s: float | None
    mean_batch: float | None
    recent: tuple[dict, ...]
    corrupt: int
    recent_bad: tuple[BadLine, ...]
    restarts: int
    version: int


@dataclass
class RunAggregate:
    """Fold rows in with `add`; `snapshot()` for the UI; `reset()` when the file restarts."""

    counts: RowCounts = field(default_factory=RowCounts)  # prereg.rundir.rows: the counts every consumer shows
    duplicate_seeds: int = 0
    corrupt: int = 0
    restarts: int = 0
    version: int = 0  # bumped on every change, so the UI redraws only when needed
    seed_outcomes: dict = field(default_factory=dict)
    error_messages: deque = field(default_factory=lambda: deque(maxlen=5))
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_ROWS))
    recent_bad: deque = field(default_factory=lambda: deque(maxlen=RECENT_BAD))
    _progress_final: Counter = field(default_factory=Counter)  # value rounded to 0.01 cm -> count
    _walls: Counter = field(default_factory=Counter)  # wall_s rounded to 0.1 s -> count
    _batch_sum: float = 0.0
    _batch_n: int = 0
    _pf_sum: float = 0.0

    def add(self, row: dict) -> None:
        self.add_many((row,))

    def add_many(self, rows) -> None:
        """Fold rows in: the counts through `prereg.rundir.rows.RowCounts` (the one classifier), then the
        distributions in one loop with locals: a 100k-row file is folded in well under a second
        (see benchmarks/bench_console.py)."""
        rows = rows if isinstance(rows, (list, tuple)) else list(rows)
        if not rows:
            return
        classes: list = []
        self.counts.add_many(rows, classes)
        n = self.counts.rows - len(rows)
        dups = 0
        pf_sum, batch_sum, batch_n = 0.0, 0.0, 0
        outcomes, recent = self.seed_outcomes, self.recent
        pf_counts, wall_counts = self._progress_final, self._walls
        for row, c in zip(rows, classes):
            outcome = c[0]
            get = row.get
            n += 1
            recent.append((n, row))
            seed = get("seed")
            if seed in outcomes:
                dups += 1
            outcomes[seed] = episode_outcome(row, c)  # the grid shows the episode's one outcome
            if outcome == ERROR:
                self.error_messages.append(f"seed {seed}: {get('error') or get('status') or 'error (no message)'}")
                continue
            pf = number(get("progress_final_cm"))
            if pf is not None:
                pf_counts[round(pf, 2)] += 1
                pf_sum += pf
            wall = number(get("wall_s"))
            if wall is not None:
                wall_counts[round(wall, 1)] += 1
            mb = number(get("mean_batch"))
            if mb is not None:
                batch_sum += mb
                batch_n += 1
        self.version += 1
        self.duplicate_seeds += dups
        self._pf_sum += pf_sum
        self._batch_sum += batch_sum
        self._batch_n += batch_n

    # what the runs table and the tests read, straight from the counts (one source)
    rows = property(lambda self: self.counts.rows)
    ok_rows = property(lambda self: self.counts.ok)
    successes = property(lambda self: self.counts.successes)
    errors = property(lambda self: self.counts.errors)
    knock_aways = property(lambda self: self.counts.knock_aways)
    engaged = property(lambda self: self.counts.engaged)
    reset_strikes = property(lambda self: self.counts.reset_strikes)

    def add_bad(self, bad: BadLine) -> None:
        self.corrupt += 1
        self.version += 1
        self.recent_bad.append(bad)

    def reset(self) -> None:
        """Forget everything (the file was truncated or replaced) but count the restart."""
        restarts, version = self.restarts + 1, self.version + 1
        self.__init__()
        self.restarts, self.version = restarts, version

    def snapshot(self) -> AggregateView:
        c = self.counts
        return AggregateView(
            rows=c.rows,
            ok_rows=c.ok,
            successes=c.successes,
            success_ci=wilson_interval(c.successes, c.rows),  # errored episodes count as non-successes, as in the report
            knock_aways=c.knock_aways,
            engaged=c.engaged,
            quiet=c.quiet,
            tipped=c.tipped,
            predicts=c.predicts,
            zero_fallbacks=c.zero_fallbacks,
            zero_fallback_rate=c.zero_fallback_rate,
            mask_violations=c.mask_violations,
            reset_strikes=c.reset_strikes,
            rows_with_reset_strikes=c.rows_with_reset_strikes,
            errors=c.errors,
            error_messages=tuple(self.error_messages),
            duplicate_seeds=self.duplicate_seeds,
            seed_outcomes=dict(self.seed_outcomes),
            progress_final_hist=self.progress_final_histogram(),
            progress_final_counts=tuple(sorted(self._progress_final.items())),
            progress_final_mean=self._progress_final_mean(),
            progress_final_median=_counter_median(self._progress_final),
            median_wall_s=self.median_wall_s(),
            mean_batch=(self._batch_sum / self._batch_n) if self._batch_n else None,
            recent=tuple(self.recent),
            corrupt=self.corrupt,
            recent_bad=tuple(self.recent_bad),
            restarts=self.restarts,
            version=self.version,
        )

    def _progress_final_mean(self) -> float | None:
        n = sum(self._progress_final.values())
        return self._pf_sum / n if n else None

    def median_wall_s(self) -> float | None:
        return _counter_median(self._walls)

    def progress_final_histogram(self) -> tuple[tuple[str, int], ...]:
        """Counts in 1 cm bins over [-10, 10) cm, with an underflow and an overflow bin."""
        nbins = int((HIST_MAX_CM - HIST_MIN_CM) / HIST_BIN_CM)
        counts = [0] * (nbins + 2)
        for value, n in self._progress_final.items():
            if value < HIST_MIN_CM:
                counts[0] += n
            elif value >= HIST_MAX_CM:
                counts[-1] += n
            else:
                counts[1 + int((value - HIST_MIN_CM) // HIST_BIN_CM)] += n
        labels = [f"< {HIST_MIN_CM:g}"]
        labels += [f"{HIST_MIN_CM + i * HIST_BIN_CM:+g}" for i in range(nbins)]
        labels += [f">= {HIST_MAX_CM:g}"]
        return tuple(zip(labels, counts))


def _counter_median(counter: Counter) -> float | None:
    """Median of the multiset a Counter describes (mean of the two middles when even)."""
    n = sum(counter.values())
    if not n:
        return None
    lo_rank, hi_rank = (n - 1) // 2, n // 2
    lo = hi = None
    seen = 0
    for value in sorted(counter):
        seen += counter[value]
        if lo is None and seen > lo_rank:
            lo = value
        if seen > hi_rank:
            hi = value
            break
    return (lo + hi) / 2
