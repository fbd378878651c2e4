"""A run's rows folded as they arrive, per arm, by the one denominator.

The denominator (`prereg.rundir.rows.latest_rows`, written once): an arm counts its planned seeds,
each by the last row written for it. A resumed run re-runs a seed whose row was an error, and a line
copied twice is one episode: such a row replaces the one before it (`duplicates`), it never counts
twice ("succ 9/9" on 8 seeds). A row for a seed outside the plan, or of an arm the run does not
have, is read and not counted (`out_of_plan`); so is the row of a seed whose start the SO-101 cannot
reach (`reachable` false, prereg.rundir.rows.unreachable): its seed is counted apart (`unreachable`),
out of k/n, whatever the policy did. A comparison run (manifest `arms`) folds each arm
apart; a one-arm run folds every row into one tally.

`RowsFold` is the incremental form the console's watcher, the Discord notifier and the kill record
fold rows.jsonl with (through `prereg.rundir.tail.RowsTailer`, so a poll reads only what was
appended); the report reads whole files by `latest_rows`. A property test holds the two to the same
counts whatever the order and the batches the rows come in. Memory grows with the seeds (what each
counted row added, packed in about 80 bytes, so a later row of the seed can take its place), never
with the lines.

Besides the counts (`RowCounts`, the one classifier's) a tally keeps the spread of the counted ok
rows' `progress_final_cm` (to 0.01 cm) and `wall_s` (to 0.1 s) as counts of values, and their mean
batch: what the console's panels and the stall gate read.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

from prereg.rundir.manifest import Manifest
from prereg.rundir.outcomes import EPISODE_OUTCOMES, ERROR, OUTCOMES, SUCCESS, RowCounts, classify, contribution
from prereg.rundir.rows import read_as_success, unreachable, variant_of

ONE_ARM = None  # the key of a one-arm run's tally


@dataclass(frozen=True)
class Plan:
    """What a run planned: its seeds (None: unknown, every seed counts) and a comparison run's arms."""

    seeds: tuple[int, ...] | None = None
    arms: tuple[str, ...] | None = None  # a comparison run's two arms; None: one arm
    success_field: str = "success"  # what the plan reads as a success (prereg.rundir.rows.read_as_success)
    variant: str | None = None  # a crossed design (issue 48): the variant counted; None: every row, whatever its variant

    @classmethod
    def of(cls, manifest: Manifest | None, variant: str | None = None) -> "Plan":
        """The manifest's plan; in a crossed design it counts the variant the plan reads (or `variant`)."""
        if manifest is None:
            return cls()
        read = variant if variant and manifest.variants else manifest.counted_variant
        return cls(manifest.seeds, tuple(manifest.arms) if manifest.is_comparison else None, manifest.success_field, read)

    @property
    def keys(self) -> tuple:
        """The tallies a fold keeps: one per arm, or the one arm's."""
        return self.arms if self.arms else (ONE_ARM,)

    @property
    def episodes(self) -> int | None:
        """Planned episodes: seeds x arms (None when the seeds are unknown)."""
        return None if self.seeds is None else len(self.seeds) * len(self.keys)


@dataclass
class ArmTally:
    """One arm's counted rows (the last row of each planned seed) and what was read beside them."""

    counts: RowCounts = field(default_factory=RowCounts)
    duplicates: int = 0  # rows that replaced an earlier row of their seed
    out_of_plan: int = 0  # rows of seeds outside the plan: read, not counted
    unreachable: set = field(default_factory=set)  # seeds out of the arm's reach: counted apart, not in k/n
    progress_final: Counter = field(default_factory=Counter)  # ok rows: value rounded to 0.01 cm -> rows
    walls: Counter = field(default_factory=Counter)  # ok rows: wall_s rounded to 0.1 s -> rows
    progress_final_sum: float = 0.0
    batch_sum: float = 0.0
    batch_n: int = 0
    seeds: dict = field(default_factory=dict)  # seed -> its counted row's part, packed (`pack`), in first-row order

    @property
    def episodes(self) -> int:
        """Planned seeds with a row: the denominator."""
        return self.counts.rows

    def outcome_of(self, seed) -> str | None:
        """The counted row's episode outcome (prereg.rundir.outcomes.episode_outcome), None before its row."""
        part = self.part_of(seed)
        return outcome_of_part(part) if part is not None else None

    def won_by_seed(self) -> dict:
        """seed -> whether its counted row is a success (`outcome_of(seed) == SUCCESS`), every counted seed at
        once: read off the packed parts without unpacking them (a crossed design's live read, per snapshot)."""
        code = _OUTCOME_CODES[SUCCESS]
        return {s: (p[0] == code) if type(p) is bytes else p[0] == SUCCESS for s, p in self.seeds.items()}

    def part_of(self, seed) -> tuple | None:
        """The counted row's part of a seed (RowsFold._add says what it holds), None before its row."""
        packed = self.seeds.get(seed)
        return None if packed is None else unpack(packed)

    def _take(self, part: tuple, sign: int) -> None:
        """Count one counted row's part in (1) or out again (-1: a later row of its seed replaced it)."""
        self.counts.apply(part, sign)
        pf, wall, mb = part[9], part[10], part[11]
        if pf is not None:
            _bump(self.progress_final, round(pf, 2), sign)
            self.progress_final_sum += sign * pf
        if wall is not None:
            _bump(self.walls, round(wall, 1), sign)
        if mb is not None:
            self.batch_sum += sign * mb
            self.batch_n += sign

    def _add_new(self, new: dict) -> None:
        """Count in the parts of seeds that had no row (one loop, sums in locals), and keep them packed."""
        if not new:
            return
        parts = new.values()
        self.counts.apply_many(parts)
        seeds, pf_counts, walls, packer = self.seeds, self.progress_final, self.walls, _PACKED.pack
        pf_sum = batch_sum = 0.0
        batch_n = 0
        for seed, part in new.items():
            pf, wall, mb = part[9], part[10], part[11]
            try:
                seeds[seed] = packer(_OUTCOME_CODES[part[0]], part[1], part[2], part[3], part[4], part[5], part[6],
                                     part[7], _EPISODE_CODES[part[8]], _NAN if pf is None else pf,
                                     _NAN if wall is None else wall, _NAN if mb is None else mb)
            except (struct.error, OverflowError):  # a count past 32 bits: kept as it is, only larger
                seeds[seed] = part
            if pf is not None:
                pf_counts[round(pf, 2)] += 1
                pf_sum += pf
            if wall is not None:
                walls[round(wall, 1)] += 1
            if mb is not None:
                batch_sum += mb
                batch_n += 1
        self.progress_final_sum += pf_sum
        self.batch_sum += batch_sum
        self.batch_n += batch_n


def _bump(counter: Counter, key, sign: int) -> None:
    n = counter[key] + sign
    if n:
        counter[key] = n
    else:
        del counter[key]


class RowsFold:
    """Rows folded in as they arrive (`add_many`), one `ArmTally` per arm of the `plan`.

    `every`: also note each arm's (episodes, successes, knock-aways, engaged) whenever the run's
    counted episodes reach a multiple of it (`milestones`): the Discord catch-up lists missed
    updates with the figures they would have had."""

    def __init__(self, plan: Plan | None = None, *, every: int | None = None):
        self.plan = plan or Plan()
        self.every = every
        self._planned = frozenset(self.plan.seeds) if self.plan.seeds is not None else None
        self.arms: dict = {key: ArmTally() for key in self.plan.keys}
        self.lines = 0  # rows read (every row, counted or not)
        self.foreign = 0  # rows of an arm this run does not have (a comparison run): read, not counted
        self.other_variants = 0  # a crossed design's rows of the variants this fold does not count
        self.longest_wall_s: float | None = None  # the longest episode read, error rows and replaced rows included
        self.milestones: dict[int, tuple] = {}

    @property
    def episodes(self) -> int:
        """Counted episodes over every arm: planned (arm, seed) pairs with a row."""
        return sum(t.episodes for t in self.arms.values())

    @property
    def duplicates(self) -> int:
        return sum(t.duplicates for t in self.arms.values())

    @property
    def unreachable(self) -> int:
        """Seeds out of the SO-101's reach, every arm together: counted apart from k/n."""
        return sum(len(t.unreachable) for t in self.arms.values())

    @property
    def out_of_plan(self) -> int:
        return self.foreign + sum(t.out_of_plan for t in self.arms.values())

    def tally(self, arm=ONE_ARM) -> ArmTally:
        return self.arms[arm]

    def median_wall_s(self) -> float | None:
        """The median episode wall of the counted ok rows, every arm together (the stall gate's yardstick)."""
        if len(self.arms) == 1:
            return counter_median(next(iter(self.arms.values())).walls)
        return counter_median(sum((t.walls for t in self.arms.values()), Counter()))

    def total(self) -> RowCounts:
        """The counts of every arm together (one arm's own, in a one-arm run)."""
        if len(self.arms) == 1:
            return next(iter(self.arms.values())).counts
        out = RowCounts()
        for t in self.arms.values():
            for name in ("rows", "ok", "errors", "successes", "knock_aways", "engaged", "quiet", "tipped",
                         "reset_strikes", "rows_with_reset_strikes", "predicts", "zero_fallbacks", "mask_violations"):
                setattr(out, name, getattr(out, name) + getattr(t.counts, name))
            for k, v in t.counts.by_outcome.items():
                out.by_outcome[k] += v
        return out

    def key_of(self, row: dict):
        """The tally a row goes to; None-like `_FOREIGN` for a comparison row naming no arm of the run."""
        if not self.plan.arms:
            return ONE_ARM
        arm = row.get("arm")
        return arm if arm in self.arms else _FOREIGN

    def add_many(self, rows, on_row=None) -> None:
        """Fold rows in, in the order they were written. `on_row(key, seed, row, part, replaced)`, when
        given, is told of each counted row (its part; `replaced`: it took the place of an earlier
        row of its seed). With `every`, the rows go in stretches that end where the next milestone can
        be reached at the earliest, so each milestone's figures are read off the counts themselves."""
        if not self.every:
            self._add(rows, on_row)
            return
        rows = rows if isinstance(rows, (list, tuple)) else list(rows)
        i = 0
        while i < len(rows):
            n = self.episodes
            step = self.every - n % self.every  # a stretch this long adds at most this many episodes
            self._add(rows[i:i + step], on_row)
            i += step
            n = self.episodes
            if n and n % self.every == 0 and n not in self.milestones:
                self.milestones[n] = tuple((k, t.episodes, t.counts.successes, t.counts.knock_aways, t.counts.engaged)
                                           for k, t in self.arms.items())

    def _add(self, rows, on_row) -> None:
        if self.plan.variant is not None:  # a crossed design: one variant's rows are counted, the rest read
            rows = rows if isinstance(rows, (list, tuple)) else list(rows)
            n = len(rows)
            rows = [r for r in rows if variant_of(r) == self.plan.variant]
            self.other_variants += n - len(rows)
            self.lines += n - len(rows)
        if self.plan.success_field != "success":  # the plan reads the env's own success: every count does
            rows = [read_as_success(r, self.plan.success_field) for r in rows]
        self._add_read(rows, on_row)

    def _add_read(self, rows, on_row) -> None:
        """One stretch of rows (`add_many`). A counted row's part is one flat tuple: its `contribution` to
        the counts (nine items, prereg.rundir.rows), then an ok row's progress_final_cm, wall_s and mean
        batch (finite numbers, else None; an error row's are None). Made here, in the loop, without a
        call per row: a 100k-row file is folded faster than it was counted before."""
        planned, tallies = self._planned, self.arms
        one = tallies.get(ONE_ARM) if not self.plan.arms else None
        new: dict = {key: {} for key in tallies}  # seeds with their first row in this batch: counted at its end
        lines = 0
        longest = self.longest_wall_s or 0.0
        for row in rows:
            lines += 1
            get = row.get
            w = get("wall_s")
            w = w if (type(w) is float and w - w == 0) or type(w) is int else None  # (x - x is NaN for NaN, inf)
            if w is not None and longest < w < 86400:
                longest = w
            if one is not None:
                key, tally = ONE_ARM, one
            else:
                key = self.key_of(row)
                if key is _FOREIGN:
                    self.foreign += 1
                    continue
                tally = tallies[key]
            seed = get("seed")
            if planned is not None and seed not in planned:
                tally.out_of_plan += 1
                continue
            if unreachable(row):  # counted apart: out of k/n, and out again if an earlier row was in
                tally.unreachable.add(seed)
                new[key].pop(seed, None)
                packed = tally.seeds.pop(seed, None)
                if packed is not None:
                    tally._take(unpack(packed), -1)
                continue
            c = classify(row)
            if c[0] == ERROR:
                part = (*contribution(row, c), None, None, None)
            else:
                pf, mb = get("progress_final_cm"), get("mean_batch")
                part = (*contribution(row, c), pf if (type(pf) is float and pf - pf == 0) or type(pf) is int else None,
                        w, mb if (type(mb) is float and mb - mb == 0) or type(mb) is int else None)
            fresh = new[key]
            old = fresh.get(seed)
            if old is not None:  # its first row came in this batch: the later one takes its place
                fresh[seed] = part
            else:
                packed = tally.seeds.get(seed)
                if packed is not None:
                    old = unpack(packed)
                    tally._take(old, -1)
                    tally.seeds[seed] = pack(part)
                    tally._take(part, 1)
                else:
                    fresh[seed] = part
            if old is not None:
                tally.duplicates += 1
            if on_row is not None:
                on_row(key, seed, row, part, old is not None)
        self.lines += lines
        self.longest_wall_s = float(longest) if longest else self.longest_wall_s
        for key, fresh in new.items():
            tallies[key]._add_new(fresh)


_FOREIGN = object()


# A part kept for every counted seed, packed: about 80 bytes a seed rather than 300 as a tuple of Python
# objects (a 100k-seed run). Outcomes by their index; a null number as NaN (never a finite row value).
_PACKED = struct.Struct("<BBBBiiiiBddd")
_OUTCOME_CODES = {o: i for i, o in enumerate(OUTCOMES)}
_EPISODE_CODES = {o: i for i, o in enumerate(EPISODE_OUTCOMES)}
_NAN = float("nan")


def pack(part: tuple) -> bytes | tuple:
    """A part as bytes (a tuple as it is when a count does not fit 32 bits: never lost, only larger)."""
    o, k, e, t, strikes, p, z, m, eo, pf, wall, mb = part
    try:
        return _PACKED.pack(_OUTCOME_CODES[o], k, e, t, strikes, p, z, m, _EPISODE_CODES[eo],
                            _NAN if pf is None else pf, _NAN if wall is None else wall, _NAN if mb is None else mb)
    except (struct.error, KeyError, OverflowError):
        return part


def unpack(packed: bytes | tuple) -> tuple:
    if isinstance(packed, tuple):
        return packed
    o, k, e, t, strikes, p, z, m, eo, pf, wall, mb = _PACKED.unpack(packed)
    return (OUTCOMES[o], bool(k), bool(e), bool(t), strikes, p, z, m, EPISODE_OUTCOMES[eo],
            None if pf != pf else pf, None if wall != wall else wall, None if mb != mb else mb)


def outcome_of_part(part: tuple) -> str:
    """The episode outcome of a counted row's part (prereg.rundir.outcomes.episode_outcome)."""
    return part[8]


def counter_median(counter: Counter) -> float | None:
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


def fold_rows(rows, plan: Plan | None = None, *, every: int | None = None) -> RowsFold:
    """A fold of a whole list of rows (a file read at once: the kill record, a test)."""
    fold = RowsFold(plan, every=every)
    fold.add_many(rows)
    return fold
