"""What the notifier reads of a run to word its posts: one moment of its run directory (`RunSnapshot`).

The small files through the contract's one read (`rd.read_snapshot`, typed, never blocking); the
rows as the run's read model folds them (prereg/rundir/fold.py: per arm, the last row of each
planned seed, so a copied line never counts twice), handed in by the notifier's book of the run,
which follows rows.jsonl incrementally; what the run is now (state, live, done, total) by the rules
every reader shares (prereg/rundir/runstate.py); and the report's files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from prereg import rundir as rd
from prereg.core.safe_read import CHART_MAX_BYTES, Unreadable, read_regular
from prereg.rundir.discovery import GONE, UNKNOWN, liveness
from prereg.rundir.files import mtime_age_s
from prereg.rundir.fold import ONE_ARM, Plan, RowsFold, fold_rows
from prereg.rundir.outcomes import ERROR, RowCounts
from prereg.rundir.real import read_trials
from prereg.rundir.rows import read_rows
from prereg.rundir.runstate import STARTING_GRACE_S, RunState, ShowsState, episodes_done, planned_total, young
from prereg.rundir.status import GateSpec
from prereg.stats.variants import Crossed
from prereg.stats.variants_live import live_stories

EVERY_EPISODES = 10  # an update every this many episodes: the fold notes each arm's figures there (the catch-up)
RESULTS_MD_MAX_BYTES = 4 * 1024 * 1024  # results.md: the report's words (the post shortens them to a few lines)


@dataclass(frozen=True)
class RunSnapshot(ShowsState):
    """What the run directory says at one moment: the contract's one read (`rd.read_snapshot`, typed
    and never blocking) with the rows' fold and the report's files. `manifest` and `status` are typed
    (every field None when the file is missing or cannot be read: `present` says which were read);
    `problems` names what could not be read (a file, or a field of the wrong type). `rows` keeps a
    comparison run's counted rows (its comparison's evidence reads them); [] in a one-arm run."""

    run_dir: Path
    manifest: rd.Manifest
    status: rd.Status
    fold: RowsFold
    results_md: str | None
    results_json: dict | None
    chart_png: bytes | None
    heartbeat_age_s: float | None
    status_age_s: float | None  # how long ago status.json last changed
    now: float
    present: tuple[str, ...] = ()  # which of manifest.json and status.json were read
    problems: tuple[str, ...] = ()  # 'status.json: elapsed_s is str 'x', not int or float', 'manifest.json: is a FIFO ...'
    liveness: str = UNKNOWN  # the driver's process (prereg.rundir.discovery)
    young: bool = False  # no process recorded yet, written within STARTING_GRACE_S
    rows: tuple = ()
    real: tuple = ()  # real.jsonl's trials (prereg.rundir.real.Trial), in order: the real-trial posts read them
    variants: tuple = ()  # a crossed design's live reads, one prereg.stats.story.VariantStory per arm

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.status.run_id or self.run_dir.name

    @property
    def run_state(self) -> RunState:
        return RunState.of(self.status if rd.STATUS in self.present else None, self.liveness,
                           unreadable=bool(self.problems), young=self.young)

    @property
    def done(self) -> int:
        """Episodes with a row by the one denominator (the last row of each planned seed)."""
        return episodes_done(self.status, self.fold.episodes) or 0

    @property
    def total(self) -> int:
        return planned_total(self.status, self.manifest) or 0

    @property
    def arms(self) -> tuple[str, ...]:
        """A comparison run's two arms, A then B; () for a one-arm run."""
        return tuple(self.manifest.arms) if self.manifest.is_comparison else ()

    @property
    def arm_label(self) -> str:
        """The run's arm in words: 'clumsy vs steady' for a comparison run."""
        if self.arms:
            return " vs ".join(self.arms)
        return self.manifest.arm or self.status.arm or "?"

    @property
    def elapsed_s(self) -> float | None:
        return self.status.elapsed_s

    @property
    def gpu_hours(self) -> float | None:
        return self.status.gpu_hours

    def gate_spec(self) -> GateSpec:
        return self.manifest.gates

    def counts(self, arm=ONE_ARM) -> RowCounts:
        """One arm's counts (a one-arm run: its own); `all_counts` for every arm's together."""
        return self.fold.tally(arm).counts

    def all_counts(self) -> RowCounts:
        return self.fold.total()


def read_snapshot(run_dir: Path, *, now: float | None = None, fold: RowsFold | None = None,
                  rows: tuple = (), every: int = EVERY_EPISODES, contract: rd.Snapshot | None = None,
                  variants: tuple = ()) -> RunSnapshot:
    """Read the run directory. `fold`: the rows as the notifier's book has followed them, `variants` its
    crossed design's reads; without a fold, rows.jsonl is read whole and folded here, each variant apart
    (a test, a one-off look). `contract`: its small files, when the caller has just read them."""
    run_dir = Path(run_dir)
    now = time.time() if now is None else now
    results = run_dir / rd.RESULTS
    contract = contract or rd.read_snapshot(run_dir)
    status = contract.status
    alive = UNKNOWN
    if status is None or not status.final:
        alive = liveness(contract.pid)
        if alive == GONE:  # a driver that wrote its final state and exited since: its last word, not `died`
            contract = rd.read_snapshot(run_dir)
    if fold is None:
        plan = Plan.of(contract.manifest)
        all_rows = read_rows(run_dir / rd.ROWS).rows
        fold = fold_rows(all_rows, plan, every=every)
        if plan.arms:
            rows = tuple(r for r in all_rows if r.get("arm") in plan.arms)
        crossed = Crossed.of(contract.manifest)
        if crossed is not None:
            variants = live_stories(crossed, {v: fold_rows(all_rows, p) for v, p in crossed.plans(plan).items()})
    return RunSnapshot(
        run_dir=run_dir,
        manifest=contract.manifest or rd.Manifest(),
        status=contract.status or rd.Status(),
        fold=fold,
        results_md=read_text(results),
        results_json=read_json_object(run_dir / rd.RESULTS_JSON) if results.exists() else None,
        chart_png=read_chart(run_dir / rd.CHART) if results.exists() else None,
        heartbeat_age_s=mtime_age_s(run_dir / rd.HEARTBEAT, now),
        status_age_s=mtime_age_s(run_dir / rd.STATUS, now),
        now=now,
        present=tuple(name for name, doc in ((rd.MANIFEST, contract.manifest), (rd.STATUS, contract.status)) if doc is not None),
        problems=(*[line for line in contract.unreadable_lines if line.startswith((rd.MANIFEST, rd.STATUS))], *contract.problems),
        liveness=alive,
        young=alive == UNKNOWN and young(run_dir, STARTING_GRACE_S),
        rows=tuple(rows),
        real=tuple(read_trials(run_dir).trials) if (run_dir / rd.REAL).exists() else (),
        variants=tuple(variants),
    )


@dataclass(frozen=True)
class Tally:
    successes: int = 0
    knock_aways: int = 0
    engaged: int = 0
    zero_fallbacks: int = 0
    predicts: int = 0
    reset_strikes: int = 0
    errors: int = 0
    episodes: int = 0
    outcomes: tuple[tuple[str, int], ...] = ()  # (episode outcome, rows), the ones seen, errors apart


def tally(c: RowCounts) -> Tally:
    """What a post says of counts (prereg.rundir.outcomes.RowCounts, the fold's: the same as the console and the report)."""
    outcomes = tuple((o, n) for o, n in c.by_outcome.items() if n and o != ERROR)
    return Tally(c.successes, c.knock_aways, c.engaged, c.zero_fallbacks, c.predicts, c.reset_strikes, c.errors,
                 c.rows, outcomes)


def read_json_object(path: Path) -> dict:
    """A JSON file's object, or {} when it is missing, unreadable or not an object."""
    return rd.read_json(path) or {}


def read_text(path: Path) -> str | None:
    """results.md, bounded and never blocking (a FIFO there is no text, not a hang)."""
    try:
        return read_regular(path, RESULTS_MD_MAX_BYTES).decode("utf-8", errors="replace")
    except (OSError, Unreadable):  # missing; a FIFO, a directory, a loop, too big
        return None


def read_chart(path: Path) -> bytes | None:
    try:
        return read_regular(path, CHART_MAX_BYTES)
    except (OSError, Unreadable):
        return None
