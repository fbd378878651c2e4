"""What the console shows of a run's rows, in memory that grows with its seeds, never its lines.

The counts are the run's read model (prereg/rundir/fold.py): per arm, the last row of each planned
seed (a copied line, a resumed seed, counts once; rows out of the plan are counted apart), the one
classifier's counts, the spread of `progress_final_cm` and the episode walls (the stall gate's
yardstick). On top of it the console keeps what only it shows: the latest rows as written (a
bounded window), the last error messages and the lines that could not be read.

Pure: no Textual, no files. `RunAggregate.snapshot()` gives the UI an immutable copy.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from itertools import islice

from prereg.core.wilson import wilson_interval
from prereg.rundir.fold import ONE_ARM, ArmTally, Plan, RowsFold, counter_median
from prereg.rundir.outcomes import RowCounts, is_error
from prereg.rundir.rows import BadLine
from prereg.stats.story import VariantStory
from prereg.stats.variants import Crossed, feed_variants
from prereg.stats.variants_live import live_stories

RECENT_ROWS = 120  # the latest-rows panel shows as many as it has lines for: a tall terminal (220x60) has ~40
RECENT_BAD = 20
GRID_MAX_SEEDS = 600  # the per-seed grid draws at most this many cells (a comparison run: its half per arm)

HIST_MIN_CM, HIST_MAX_CM, HIST_BIN_CM = -10.0, 10.0, 1.0


@dataclass(frozen=True)
class ArmView:
    """One arm's counts (a one-arm run has one, `arm` None): over `episodes`, its planned seeds with a row."""

    arm: str | None
    episodes: int  # the denominator: planned seeds with a row, the last row of each
    planned: int | None  # seeds in the plan (None: no readable manifest)
    counts: RowCounts
    success_ci: tuple[float, float] | None
    duplicates: int  # rows that replaced an earlier row of their seed
    out_of_plan: int  # rows of seeds outside the plan: read, not counted
    seed_outcomes: dict  # seed -> its counted row's episode outcome, for the seeds the grid can draw (GRID_MAX_SEEDS)
    progress_final_counts: tuple[tuple[float, int], ...]
    progress_final_mean: float | None
    progress_final_median: float | None
    median_wall_s: float | None
    mean_batch: float | None


@dataclass(frozen=True)
class AggregateView:
    """An immutable copy of the aggregates, safe to hand from the poller thread to the UI. The counts
    at the top level are every arm's together; `arms` has each arm's (one, in a one-arm run)."""

    rows: int  # counted episodes (planned (arm, seed) pairs with a row)
    lines: int  # rows read, every one (duplicates and out-of-plan rows included)
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
    duplicate_seeds: int  # rows that replaced an earlier row of their seed (counted once: the last)
    out_of_plan: int  # rows of seeds (or arms) outside the plan: read, not counted
    seed_outcomes: dict  # a one-arm run's seed -> outcome, the seeds the grid can draw ({} in a comparison run: `arms`)
    progress_final_hist: tuple[tuple[str, int], ...]
    progress_final_counts: tuple[tuple[float, int], ...]  # (value rounded to 0.01 cm, count), ascending
    progress_final_mean: float | None
    progress_final_median: float | None
    median_wall_s: float | None
    mean_batch: float | None
    recent: tuple[tuple[int, dict], ...]  # (line, row) of the latest rows read, as written
    corrupt: int
    recent_bad: tuple[BadLine, ...]
    restarts: int
    version: int
    arms: tuple[ArmView, ...] = ()
    unreachable: int = 0  # seeds out of the SO-101's reach (rows with reachable false): counted apart, not in k/n
    variants: tuple[VariantStory, ...] = ()  # a crossed design's live reads, one per arm (RunAggregate.variant_stories)

    @property
    def comparison(self) -> bool:
        return len(self.arms) > 1


@dataclass
class RunAggregate:
    """Fold rows in with `add_many`; `snapshot()` for the UI; `reset()` when the file restarts."""

    plan: Plan = field(default_factory=Plan)
    fold: RowsFold = None  # prereg/rundir/fold.py: the counts every reader shows
    corrupt: int = 0
    restarts: int = 0
    version: int = 0  # bumped on every change, so the UI redraws only when needed
    error_messages: deque = field(default_factory=lambda: deque(maxlen=5))
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_ROWS))
    recent_bad: deque = field(default_factory=lambda: deque(maxlen=RECENT_BAD))
    crossed: Crossed | None = None  # a crossed design (issue 48): every variant is folded, each apart
    variant_folds: dict = field(default_factory=dict)  # variant -> its RowsFold (the read variant's is `fold`)

    def __post_init__(self) -> None:
        if self.fold is None:
            self.fold = RowsFold(self.plan)
        if self.crossed is not None and not self.variant_folds:  # one fold per variant, fed the same rows
            self.variant_folds = {v: self.fold if v == self.plan.variant else RowsFold(plan)
                                  for v, plan in self.crossed.plans(self.plan).items()}

    def add(self, row: dict) -> None:
        self.add_many((row,))

    def add_many(self, rows) -> None:
        """Fold rows in (the read model's fold, then the latest rows and the error messages): a
        100k-row file in well under a second (benchmarks/bench_console.py)."""
        rows = rows if isinstance(rows, (list, tuple)) else list(rows)
        if not rows:
            return
        n = self.fold.lines
        self.fold.add_many(rows)
        if self.variant_folds:
            feed_variants(self.variant_folds, rows, self.fold)
        self.recent.extend(enumerate(rows[-RECENT_ROWS:], start=n + 1 + max(0, len(rows) - RECENT_ROWS)))
        errors = [r for r in rows if is_error(r)]
        for r in errors[-self.error_messages.maxlen:]:
            arm = f"{r.get('arm')} " if self.plan.arms else ""
            self.error_messages.append(f"{arm}seed {r.get('seed')}: {r.get('error') or r.get('status') or 'error (no message)'}")
        self.version += 1

    # what the runs table and the tests read, straight from the counts (one source)
    rows = property(lambda self: self.fold.episodes)
    ok_rows = property(lambda self: self.fold.total().ok)
    successes = property(lambda self: self.fold.total().successes)
    errors = property(lambda self: self.fold.total().errors)

    def arm_successes(self) -> tuple[tuple[str | None, int, int], ...]:
        """(arm, successes, episodes) of each arm: the runs list shows a comparison run's side by side."""
        return tuple((key, t.counts.successes, t.episodes) for key, t in self.fold.arms.items())

    def add_bad(self, bad: BadLine) -> None:
        self.corrupt += 1
        self.version += 1
        self.recent_bad.append(bad)

    def reset(self, plan: Plan | None = None) -> None:
        """Forget everything (the file was truncated or replaced, or the plan is known now) but count the restart."""
        restarts, version = self.restarts + 1, self.version + 1
        self.__init__(plan or self.plan, crossed=self.crossed)
        self.restarts, self.version = restarts, version

    def median_wall_s(self) -> float | None:
        return self.fold.median_wall_s()

    def snapshot(self) -> AggregateView:
        c = self.fold.total()
        arms = tuple(self._arm_view(key, t) for key, t in self.fold.arms.items())
        pf = Counter()
        for t in self.fold.arms.values():
            pf.update(t.progress_final)
        pf_sum = sum(t.progress_final_sum for t in self.fold.arms.values())
        batch_n = sum(t.batch_n for t in self.fold.arms.values())
        n_pf = sum(pf.values())
        return AggregateView(
            rows=c.rows,
            lines=self.fold.lines,
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
            duplicate_seeds=self.fold.duplicates,
            out_of_plan=self.fold.out_of_plan,
            seed_outcomes=arms[0].seed_outcomes if len(arms) == 1 else {},
            progress_final_hist=histogram(pf),
            progress_final_counts=tuple(sorted(pf.items())),
            progress_final_mean=pf_sum / n_pf if n_pf else None,
            progress_final_median=counter_median(pf),
            median_wall_s=self.median_wall_s(),
            mean_batch=(sum(t.batch_sum for t in self.fold.arms.values()) / batch_n) if batch_n else None,
            recent=tuple(self.recent),
            corrupt=self.corrupt,
            recent_bad=tuple(self.recent_bad),
            restarts=self.restarts,
            version=self.version,
            arms=arms,
            unreachable=self.fold.unreachable,
            variants=self.variant_stories(),
        )

    def variant_stories(self) -> tuple[VariantStory, ...]:
        """A crossed design's reads per arm as they stand (prereg.stats.variants: the report's computation, on
        the folds), stated as the report's story states them; () for a run of one scene."""
        return live_stories(self.crossed, self.variant_folds) if self.crossed is not None else ()

    def _arm_view(self, key, t: ArmTally) -> ArmView:
        n_pf = sum(t.progress_final.values())
        return ArmView(
            arm=None if key is ONE_ARM else key, episodes=t.episodes,
            planned=len(self.plan.seeds) if self.plan.seeds is not None else None,
            counts=_copy(t.counts), success_ci=wilson_interval(t.counts.successes, t.episodes),
            duplicates=t.duplicates, out_of_plan=t.out_of_plan,
            seed_outcomes=self._grid_outcomes(t),
            progress_final_counts=tuple(sorted(t.progress_final.items())),
            progress_final_mean=t.progress_final_sum / n_pf if n_pf else None,
            progress_final_median=counter_median(t.progress_final),
            median_wall_s=counter_median(t.walls),
            mean_batch=t.batch_sum / t.batch_n if t.batch_n else None,
        )


    def _grid_outcomes(self, t: ArmTally) -> dict:
        """The outcomes of the seeds the grid can draw: the plan's first ones (a run without one: the
        first seen), so a snapshot of a 100k-seed run copies hundreds of cells, never 100k."""
        most = GRID_MAX_SEEDS // max(1, len(self.fold.arms))
        seeds = self.plan.seeds[:most] if self.plan.seeds is not None else islice(t.seeds, most)
        return {s: t.outcome_of(s) for s in seeds if s in t.seeds}


def _copy(c: RowCounts) -> RowCounts:
    out = RowCounts(**{k: v for k, v in vars(c).items() if k != "by_outcome"})
    out.by_outcome = dict(c.by_outcome)
    return out


def histogram(counts: Counter) -> tuple[tuple[str, int], ...]:
    """Counts in 1 cm bins over [-10, 10) cm, with an underflow and an overflow bin."""
    nbins = int((HIST_MAX_CM - HIST_MIN_CM) / HIST_BIN_CM)
    bins = [0] * (nbins + 2)
    for value, n in counts.items():
        if value < HIST_MIN_CM:
            bins[0] += n
        elif value >= HIST_MAX_CM:
            bins[-1] += n
        else:
            bins[1 + int((value - HIST_MIN_CM) // HIST_BIN_CM)] += n
    labels = [f"< {HIST_MIN_CM:g}"]
    labels += [f"{HIST_MIN_CM + i * HIST_BIN_CM:+g}" for i in range(nbins)]
    labels += [f">= {HIST_MAX_CM:g}"]
    return tuple(zip(labels, bins))

