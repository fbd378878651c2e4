"""Running aggregates of a run's rows, in memory that does not grow with the file.

The console shows what a researcher reads off a run while it goes: successes with an
interval, knock-aways, engaged vs quiet, zero-fallbacks per predict, reset strikes (must
be 0), error rows, one outcome per seed, the spread of `progress_final_cm`, the latest
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

from prereg.rows import ENGAGED_CM, KNOCK_AWAY_CM, BadLine

RECENT_ROWS = 30
RECENT_BAD = 20

# Outcome of one seed, in the order that decides a row's single colour.
ERROR, SUCCESS, KNOCK_AWAY, ENGAGED, QUIET = "error", "success", "knock_away", "engaged", "quiet"

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


def row_outcome(row: dict) -> str:
    """One word per row, for the per-seed grid: error > success > knock-away > engaged > quiet."""
    return _classify(row)[0]


def _classify(row: dict) -> tuple[str, bool, bool]:
    """(outcome, knock-away, engaged); the flags fall back to the distances when null."""
    get = row.get
    if get("status") == "error":
        return ERROR, False, False
    knock = get("knock_away")
    if knock is None:
        pf = _num(get("progress_final_cm"))
        knock = pf is not None and pf <= KNOCK_AWAY_CM
    engaged = get("engaged")
    if engaged is None:
        p = _num(get("progress_cm"))
        engaged = p is not None and p > ENGAGED_CM
    knock, engaged = knock is True, engaged is True
    if get("success") is True:
        return SUCCESS, knock, engaged
    return (KNOCK_AWAY if knock else ENGAGED if engaged else QUIET), knock, engaged


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

    rows: int = 0
    ok_rows: int = 0
    successes: int = 0
    knock_aways: int = 0
    engaged: int = 0
    tipped: int = 0
    predicts: int = 0
    zero_fallbacks: int = 0
    mask_violations: int = 0
    reset_strikes: int = 0
    rows_with_reset_strikes: int = 0
    errors: int = 0
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
        """Fold rows in. One loop with the counters in locals: a 100k-row file is folded in well
        under a second (see benchmarks/bench_console.py)."""
        n = self.rows
        ok = successes = knocks = engaged_n = tipped = predicts = zero_fb = masks = 0
        strikes_sum = strike_rows = errors = dups = 0
        pf_sum, batch_sum, batch_n = 0.0, 0.0, 0
        outcomes, recent = self.seed_outcomes, self.recent
        pf_counts, wall_counts = self._progress_final, self._walls
        for row in rows:
            get = row.get
            n += 1
            recent.append((n, row))
            outcome, knock, engaged = _classify(row)
            seed = get("seed")
            if seed in outcomes:
                dups += 1
            outcomes[seed] = outcome
            strikes = _int(get("reset_strikes"))
            if strikes > 0:
                strikes_sum += strikes
                strike_rows += 1
            if outcome == ERROR:
                errors += 1
                self.error_messages.append(f"seed {seed}: {get('error') or 'error (no message)'}")
                continue
            ok += 1
            successes += outcome == SUCCESS
            knocks += knock
            engaged_n += engaged
            tipped += get("tipped") is True
            predicts += _int(get("predicts"))
            zero_fb += _int(get("zero_fallbacks"))
            masks += _int(get("mask_violations"))
            pf = _num(get("progress_final_cm"))
            if pf is not None:
                pf_counts[round(pf, 2)] += 1
                pf_sum += pf
            wall = _num(get("wall_s"))
            if wall is not None:
                wall_counts[round(wall, 1)] += 1
            mb = _num(get("mean_batch"))
            if mb is not None:
                batch_sum += mb
                batch_n += 1
        if n == self.rows:
            return
        self.version += 1
        self.rows = n
        self.ok_rows += ok
        self.successes += successes
        self.knock_aways += knocks
        self.engaged += engaged_n
        self.tipped += tipped
        self.predicts += predicts
        self.zero_fallbacks += zero_fb
        self.mask_violations += masks
        self.reset_strikes += strikes_sum
        self.rows_with_reset_strikes += strike_rows
        self.errors += errors
        self.duplicate_seeds += dups
        self._pf_sum += pf_sum
        self._batch_sum += batch_sum
        self._batch_n += batch_n

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
        return AggregateView(
            rows=self.rows,
            ok_rows=self.ok_rows,
            successes=self.successes,
            success_ci=wilson_interval(self.successes, self.ok_rows),
            knock_aways=self.knock_aways,
            engaged=self.engaged,
            quiet=self.ok_rows - self.engaged,
            tipped=self.tipped,
            predicts=self.predicts,
            zero_fallbacks=self.zero_fallbacks,
            zero_fallback_rate=(self.zero_fallbacks / self.predicts) if self.predicts else None,
            mask_violations=self.mask_violations,
            reset_strikes=self.reset_strikes,
            rows_with_reset_strikes=self.rows_with_reset_strikes,
            errors=self.errors,
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


def _num(value) -> float | None:
    """A finite-or-inf number as float; None for null, bools, strings and NaN."""
    t = type(value)
    if t is float:
        return None if value != value else value
    if t is int:
        return float(value)
    return None


def _int(value) -> int:
    t = type(value)
    if t is int:
        return value
    if t is float and value == value and value not in (math.inf, -math.inf):
        return int(value)
    return 0


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
