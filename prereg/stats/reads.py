"""The frozen reads, computed from rows: primary, validity, secondary, paired comparator, rules.

Pure: rows in (as `prereg.rundir.rows.read_rows` gives them), numbers out; an arm reads the last
row of each planned seed (`prereg.rundir.rows.latest_rows`, the denominator every reader uses). The
intervals and the bootstrap are fixed functions with fixed arguments (Wilson's: prereg.core.wilson,
equal to scipy's; `CLOPPER_PEARSON`, `BOOTSTRAP_*`: scipy's own) so that anyone can recompute a read
and get the same number.
"""

from __future__ import annotations

import math
import operator
import statistics
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from prereg import rundir as rd
from prereg.core.wilson import wilson_interval
from prereg.document.model import Validity
from prereg.document.rules import Clause, Rule
from prereg.rundir.outcomes import ERROR, SUCCESS, RowCounts, episode_outcome
from prereg.rundir.rows import latest_rows, number, unreachable

CONFIDENCE = 0.95
WILSON, CLOPPER_PEARSON = "wilson", "exact"  # scipy's method names (Clopper-Pearson is "exact")
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_METHOD = "BCa"
BOOTSTRAP_SEED = 20260813  # fixed: the same rows give the same CI on every machine
TIE_CM = 1e-9
MIN_PAIRED_SEEDS = 5  # fewer shared seeds than this: no paired CI is computed (the mean and counts are shown)


# ---------------------------------------------------------------- per-arm reads


@dataclass
class Check:
    name: str
    value: float | int | None
    limit: float | int | None
    ok: bool
    text: str


@dataclass
class ArmReads:
    arm: str
    n_planned: int | None
    n: int  # episodes with a row (errored episodes included: they count as non-successes)
    successes: int
    success_rate: float | None
    intervals: dict[str, tuple[float, float]]  # "wilson" / "clopper-pearson" -> (low, high)
    completion: str  # "complete", or why fewer rows than planned (stopped early, still running)
    reset_strikes: int
    reset_strike_episodes: list[int]
    zero_fallbacks: int
    predicts: int
    zero_fallback_rate: float | None
    mask_violations: int
    error_rows: int
    error_seeds: list[int]
    engaged: int
    knock_aways: int
    quiet: int
    progress_final_mean: float | None
    progress_final_median: float | None
    success_seeds: list[int]
    first_action_delta_deg: float | None
    missing_seeds: list[int] = field(default_factory=list)
    unreachable_seeds: list[int] = field(default_factory=list)  # rows with reachable false: not in n nor n_planned
    extra_seeds: list[int] = field(default_factory=list)
    duplicate_seeds: list[int] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    progress_by_seed: dict[int, float] = field(default_factory=dict)
    knock_seeds: list[int] = field(default_factory=list)
    # values a read needed and a row did not give (null, NaN, infinite), by field: counted, never hidden
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_seeds: list[int] = field(default_factory=list)  # ok rows without a finite progress_final_cm
    # the reads the seeds' lab notes made, all from rows (and the spend from status.json)
    tipped: int = 0
    worst_knock_cm: float | None = None
    worst_knock_seed: int | None = None
    success_tick_median: float | None = None
    success_tick_range: tuple[int, int] | None = None
    wall_s_episodes: float | None = None  # sum of the episodes' wall_s
    elapsed_s: float | None = None  # the run's wall (status.json)
    gpu_hours: float | None = None  # status.json
    mean_batch: float | None = None  # predict-weighted mean of the rows' mean_batch
    mask_per_predict: float | None = None
    dist_by_second_mean: list[float | None] = field(default_factory=list)  # mean boat-to-disk cm at t = i s
    dist_by_second_n: list[int] = field(default_factory=list)  # rows that reached second i
    run_state: str | None = None  # status.json's state (running runs are never judged)
    outcomes: dict[str, int] = field(default_factory=dict)  # prereg.rundir.outcomes.episode_outcome -> seeds
    outcome_by_seed: dict[int, str] = field(default_factory=dict)
    # the row each read was made from (a seed's last), for the page's per-seed rows; not in as_dict
    rows_by_seed: dict[int, dict] = field(default_factory=dict, repr=False, compare=False)

    @property
    def stopped_early(self) -> bool:
        return self.n_planned is not None and self.n < self.n_planned

    @property
    def valid(self) -> bool:
        return all(c.ok for c in self.checks)

    def primary_text(self) -> str:
        apart = f" ({len(self.unreachable_seeds)} unreachable seeds excluded)" if self.unreachable_seeds else ""
        if self.stopped_early:
            return f"{self.successes} / {self.n} achieved (of {self.n_planned} planned; {self.completion}){apart}"
        return f"{self.successes} / {self.n}{apart}"

    def values(self) -> dict[str, float | None]:
        """The reads a decision rule may name."""
        return {
            "successes": self.successes, "n": self.n, "n_planned": self.n_planned,
            "unreachable": len(self.unreachable_seeds),
            "success_rate": self.success_rate,
            "success_ci_low": self._ci(0), "success_ci_high": self._ci(1),
            "reset_strikes": self.reset_strikes, "zero_fallbacks": self.zero_fallbacks,
            "zero_fallback_rate": self.zero_fallback_rate, "predicts": self.predicts,
            "error_rows": self.error_rows, "mask_violations": self.mask_violations,
            "engaged": self.engaged, "knock_aways": self.knock_aways, "quiet": self.quiet,
            "progress_final_mean": self.progress_final_mean, "progress_final_median": self.progress_final_median,
            "tipped": self.tipped, "worst_knock_cm": self.worst_knock_cm,
            "success_tick_median": self.success_tick_median, "mask_per_predict": self.mask_per_predict,
            "gpu_hours": self.gpu_hours, "mean_batch": self.mean_batch,
        }

    def _ci(self, i: int) -> float | None:
        iv = self.intervals.get("wilson") or self.intervals.get("clopper-pearson")
        return iv[i] if iv else None

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("rows_by_seed")
        d["progress_by_seed"] = {str(k): v for k, v in self.progress_by_seed.items()}
        d["outcome_by_seed"] = {str(k): v for k, v in self.outcome_by_seed.items()}
        d["valid"] = self.valid
        d["stopped_early"] = self.stopped_early
        return d


def proportion_ci(k: int, n: int, method: str) -> tuple[float, float] | None:
    """The interval of k successes in n at 95% (Wilson's is prereg.core.wilson's, the one the console
    shows; Clopper-Pearson's is scipy.stats.binomtest's); None when there is nothing to estimate."""
    if n <= 0:
        return None
    if method == WILSON:
        return wilson_interval(k, n, CONFIDENCE)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method=method)
    return float(ci.low), float(ci.high)


def arm_reads(
    arm: str,
    rows: list[dict],
    *,
    planned_seeds: list[int] | tuple[int, ...] | None = None,
    validity: Validity | None = None,
    interval: str = "both",
    run_state: rd.Status | dict | None = None,
    bad_lines: list[str] = (),
    state: str | None = None,
) -> ArmReads:
    """Every read of one arm's rows. `run_state` is the run's status.json, typed (prereg.rundir.Status) or
    its object (for the stop label, the wall and the GPU-hours); `state`, the run's state as every reader
    shows it (prereg.rundir.runstate: a run whose process is gone without a final state has died), else
    status.json's."""
    validity = validity or Validity()
    latest = latest_rows(rows, planned_seeds)  # the one denominator: the last row of each planned seed
    by_seed, dups, extra, missing = latest.by_seed, list(latest.duplicates), list(latest.out_of_plan), list(latest.missing)
    out_of_reach = sorted(s for s, r in by_seed.items() if unreachable(r))  # counted apart: not in k/n
    by_seed = {s: r for s, r in by_seed.items() if s not in out_of_reach}
    reachable_planned = None if planned_seeds is None else [s for s in planned_seeds if s not in out_of_reach]
    seeds = sorted(by_seed)
    rs = [by_seed[s] for s in seeds]
    classes: list = []
    counts = RowCounts()
    counts.add_many(rs, classes)
    cls = dict(zip(seeds, classes))
    n = len(rs)
    succ_seeds = [s for s in seeds if cls[s][0] == SUCCESS]
    k = len(succ_seeds)
    intervals = {}
    methods = {"wilson": WILSON, "clopper-pearson": CLOPPER_PEARSON}
    for name, m in methods.items():
        if interval in (name, "both"):
            ci = proportion_ci(k, n, m)
            if ci:
                intervals[name] = ci
    errors = [s for s in seeds if cls[s][0] == ERROR]
    ok_seeds = [s for s in seeds if cls[s][0] != ERROR]
    dropped: dict[str, int] = {}

    def values_of(key: str, seeds_=ok_seeds) -> dict[int, float]:
        got = {s: number(by_seed[s].get(key)) for s in seeds_}
        lost = sum(v is None for v in got.values())
        if lost:
            dropped[key] = lost
        return {s: v for s, v in got.items() if v is not None}

    pf = values_of("progress_final_cm")
    pf_dropped = [s for s in ok_seeds if s not in pf]
    knock_seeds = sorted(s for s in ok_seeds if cls[s][1])
    fad = []
    for s in ok_seeds:
        v = by_seed[s].get("first_action_delta_deg")
        v = statistics.fmean(v) if type(v) is list and v and all(map(math.isfinite, v)) else number(v)
        if v is not None:
            fad.append(v)
    worst = min(((pf[s], s) for s in knock_seeds if s in pf), default=None)
    ticks = sorted(by_seed[s]["success_tick"] for s in succ_seeds if type(by_seed[s].get("success_tick")) is int)
    walls = values_of("wall_s", seeds)
    batch_w = [(number(by_seed[s].get("mean_batch")), by_seed[s].get("predicts")) for s in seeds]
    batch_w = [(b, p) for b, p in batch_w if b is not None and type(p) is int and p > 0]
    run_state = rd.Status.of(run_state)
    state, state_word = run_state or rd.Status(), state
    by_second = _by_second([by_seed[s].get("dist_by_second_cm") for s in ok_seeds])
    reads = ArmReads(
        arm=arm, n_planned=len(reachable_planned) if planned_seeds is not None else None, n=n,
        successes=k, unreachable_seeds=out_of_reach,
        success_rate=k / n if n else None, intervals=intervals,
        completion=_completion(n, reachable_planned, run_state, state_word),
        reset_strikes=counts.reset_strikes,
        reset_strike_episodes=[s for s in seeds if type(by_seed[s].get("reset_strikes")) is int
                               and by_seed[s]["reset_strikes"] > 0],
        zero_fallbacks=counts.zero_fallbacks, predicts=counts.predicts, zero_fallback_rate=counts.zero_fallback_rate,
        mask_violations=counts.mask_violations,
        error_rows=counts.errors, error_seeds=errors,
        engaged=counts.engaged, knock_aways=counts.knock_aways, quiet=counts.quiet,
        progress_final_mean=statistics.fmean(pf.values()) if pf else None,
        progress_final_median=statistics.median(pf.values()) if pf else None,
        success_seeds=succ_seeds, first_action_delta_deg=statistics.fmean(fad) if fad else None,
        missing_seeds=missing, extra_seeds=extra, duplicate_seeds=sorted(set(dups)), bad_lines=list(bad_lines),
        progress_by_seed=pf, knock_seeds=knock_seeds, dropped=dropped, dropped_seeds=pf_dropped,
        tipped=counts.tipped,
        worst_knock_cm=worst[0] if worst else None, worst_knock_seed=worst[1] if worst else None,
        success_tick_median=float(statistics.median(ticks)) if ticks else None,
        success_tick_range=(ticks[0], ticks[-1]) if ticks else None,
        wall_s_episodes=round(sum(walls.values()), 3) if walls else None,
        elapsed_s=state.elapsed_s, gpu_hours=state.gpu_hours,
        mean_batch=(sum(b * p for b, p in batch_w) / sum(p for _, p in batch_w)) if batch_w else None,
        mask_per_predict=counts.mask_violations / counts.predicts if counts.predicts else None,
        dist_by_second_mean=by_second[0], dist_by_second_n=by_second[1],
        run_state=state_word or state.state,
        outcomes=dict(counts.by_outcome),
        outcome_by_seed={s: episode_outcome(by_seed[s], cls[s]) for s in seeds},
        rows_by_seed={s: by_seed[s] for s in seeds},
    )
    reads.checks = _validity_checks(reads, validity)
    unknown = sum(1 for r in rs if r.get("reset_strikes") is None)
    if unknown:
        reads.notes.append(f"{unknown} row(s) do not say their reset strikes (null)")
    if out_of_reach:
        reads.notes.append(f"{len(out_of_reach)} seed(s) out of the SO-101's reach (reachable: false) were counted "
                           f"apart, not in {k}/{n}: {out_of_reach[:20]}")
    if extra:
        reads.notes.append(f"rows for seeds outside the registered list were left out: {extra[:20]}")
    if dups:
        reads.notes.append(f"seeds with more than one row (the last was read): {sorted(set(dups))[:20]}")
    if bad_lines:
        reads.notes.append(f"{len(bad_lines)} line(s) of rows.jsonl could not be read and were set aside")
    if "progress_final_cm" in dropped:
        reads.notes.append(f"{dropped['progress_final_cm']} ok row(s) have no finite progress_final_cm: left out "
                           "of its mean, median and the pairing")
    return reads


def _by_second(lists: list) -> tuple[list[float | None], list[int]]:
    """Mean of the rows' boat-to-disk distance at t = 0, 1, 2, ... s (rows that reached that second)."""
    sums: list[float] = []
    ns: list[int] = []
    for v in lists:
        if type(v) is not list:
            continue
        for i, d in enumerate(v):
            if i >= len(sums):
                sums.append(0.0)
                ns.append(0)
            d = number(d)
            if d is not None:
                sums[i] += d
                ns[i] += 1
    return [s / n if n else None for s, n in zip(sums, ns)], ns


def _completion(n: int, planned, run_state: rd.Status | None, shown: str | None = None) -> str:
    if planned is None or n >= len(planned):
        return "complete"
    state = shown or (run_state.state if run_state is not None else None)
    if state == rd.DIED:
        return "the run died (its process is gone without a final state; fontaine-eval --resume goes on)"
    reason = run_state.reason_text if run_state is not None else ""
    why = f": {reason}" if reason else ""
    stop = run_state.stop if run_state is not None else None
    if state == rd.STOPPED and stop is not None and stop.by == rd.BY_DECIDED:
        return "stopped early: the plan's registered decision was reached"  # what it decided is the headline's
    if state == rd.STOPPED:
        return f"stopped early{why}"
    if state == rd.FAILED:
        return f"run failed{why}"
    if state in rd.LIVE_STATES:
        return f"partial: the run is still {state}"
    return "incomplete" + (f" (run state {state!r})" if state else " (no status.json)")


def _validity_checks(r: ArmReads, v: Validity) -> list[Check]:
    out = [
        Check("reset_strikes", r.reset_strikes, v.reset_strikes_max, r.reset_strikes <= v.reset_strikes_max,
              f"reset strikes {r.reset_strikes} (must be <= {v.reset_strikes_max})"),
        Check("error_rows", r.error_rows, v.error_rows_max, r.error_rows <= v.error_rows_max,
              f"error rows {r.error_rows} (must be <= {v.error_rows_max})"
              + (f", seeds {r.error_seeds[:20]}" if r.error_seeds else "")),
    ]
    rate = r.zero_fallback_rate
    zf = f"zero-fallbacks {r.zero_fallbacks} / {r.predicts} predicts" + (f" ({rate:.2%})" if rate is not None else "")
    if v.zero_fallback_rate_max is not None:
        ok = rate is None or rate <= v.zero_fallback_rate_max
        out.append(Check("zero_fallback_rate", rate, v.zero_fallback_rate_max, ok,
                         f"{zf} (must be <= {v.zero_fallback_rate_max:.2%})"))
    else:
        out.append(Check("zero_fallback_rate", rate, None, True, f"{zf} (recorded)"))
    return out


# ---------------------------------------------------------------- the paired comparator


@dataclass
class PairedSuccess:
    """Successes on the seeds both arms have a row for (an error row is a non-success, as in the primary)."""

    shared: int
    both: int
    only_arm: int
    only_comparator: int
    neither: int
    delta: float | None  # arm - comparator success rate on the shared seeds
    ci: tuple[float, float] | None
    method: str = "Newcombe's paired score interval (1998, method 10), 95%"


def seeds_with_rows(a: "ArmReads") -> set[int]:
    """The planned seeds that have a row (ok or error)."""
    return set(a.progress_by_seed) | set(a.dropped_seeds) | set(a.error_seeds)


def paired_success(a: "ArmReads", b: "ArmReads") -> PairedSuccess:
    shared = seeds_with_rows(a) & seeds_with_rows(b)
    sa, sb = set(a.success_seeds) & shared, set(b.success_seeds) & shared
    both, only_a, only_b = len(sa & sb), len(sa - sb), len(sb - sa)
    neither = len(shared) - both - only_a - only_b
    n = len(shared)
    return PairedSuccess(n, both, only_a, only_b, neither, (only_a - only_b) / n if n else None,
                         newcombe_paired_ci(both, only_a, only_b, neither))


def newcombe_paired_ci(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, float] | None:
    """95% interval for p_a - p_b from paired outcomes: Newcombe's score method (Stat Med 1998, method 10).

    Built from each margin's Wilson interval (scipy, `proportion_ci`) and the phi correlation
    of the 2x2 table (0 when a margin is empty). Unlike the Wald form it never collapses: when
    every pair disagrees one way it is [-1, -1 + w], not [-1, -1]."""
    n = both + only_a + only_b + neither
    if n <= 0:
        return None
    pa, pb = (both + only_a) / n, (both + only_b) / n
    la, ua = proportion_ci(both + only_a, n, WILSON)
    lb, ub = proportion_ci(both + only_b, n, WILSON)
    den = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(den) if den else 0.0
    d = pa - pb
    lo = d - math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    hi = d + math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    return max(-1.0, lo), min(1.0, hi)


@dataclass
class Paired:
    arm: str
    comparator: str
    shared_seeds: int
    only_arm: list[int]
    only_comparator: list[int]
    delta_mean: float | None  # arm - comparator, progress_final_cm
    delta_ci: tuple[float, float] | None
    ci_method: str
    better: int
    tied: int
    worse: int
    success_overlap: list[int]
    success_only_arm: list[int]
    success_only_comparator: list[int]
    arm_successes: int = 0
    comparator_successes: int = 0
    deltas: dict[int, float] = field(default_factory=dict)  # seed -> arm - comparator
    tie_cm: float = TIE_CM
    # seeds with a row on both sides where either side has no finite progress_final_cm: not paired, counted
    dropped_unpaired: int = 0
    success: PairedSuccess | None = None  # the paired success difference on the seeds both have a row for

    def values(self) -> dict[str, float | None]:
        return {
            "delta_mean": self.delta_mean,
            "delta_ci_low": self.delta_ci[0] if self.delta_ci else None,
            "delta_ci_high": self.delta_ci[1] if self.delta_ci else None,
            "better": self.better, "tied": self.tied, "worse": self.worse,
            "shared_seeds": self.shared_seeds, "success_overlap": len(self.success_overlap),
        }

    def as_dict(self) -> dict:
        d = asdict(self)
        d["deltas"] = {str(k): v for k, v in self.deltas.items()}
        return d


def paired_reads(a: ArmReads, b: ArmReads, comparator_name: str | None = None) -> Paired:
    """Per-seed deltas a - b of progress_final_cm on the seeds both have, with a paired bootstrap CI95."""
    shared = sorted(set(a.progress_by_seed) & set(b.progress_by_seed))
    x = np.array([a.progress_by_seed[s] for s in shared], dtype=float)
    y = np.array([b.progress_by_seed[s] for s in shared], dtype=float)
    d = x - y
    if len(shared) >= MIN_PAIRED_SEEDS:
        ci, method = paired_bootstrap_ci(x, y)
    else:
        ci, method = None, (f"not computed: {len(shared)} shared seeds, fewer than the minimum of {MIN_PAIRED_SEEDS}")
    # a seed is the arm's alone when the comparator has no row on it at all; a seed both have a row on (an
    # error row, or no finite progress on a side) is not paired, and counted once, as such
    rows_a, rows_b = seeds_with_rows(a), seeds_with_rows(b)
    dropped_unpaired = len((rows_a & rows_b) - set(shared))
    sa, sb = set(a.success_seeds), set(b.success_seeds)
    return Paired(
        arm=a.arm, comparator=comparator_name or b.arm, shared_seeds=len(shared),
        only_arm=sorted(rows_a - rows_b),
        only_comparator=sorted(rows_b - rows_a),
        delta_mean=float(d.mean()) if len(d) else None, delta_ci=ci, ci_method=method,
        better=int((d > TIE_CM).sum()), tied=int((np.abs(d) <= TIE_CM).sum()), worse=int((d < -TIE_CM).sum()),
        success_overlap=sorted(sa & sb), success_only_arm=sorted(sa - sb), success_only_comparator=sorted(sb - sa),
        arm_successes=a.successes, comparator_successes=b.successes,
        deltas={s: float(v) for s, v in zip(shared, d)}, dropped_unpaired=dropped_unpaired,
        success=paired_success(a, b),
    )


def _mean_delta(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def paired_bootstrap_ci(x, y) -> tuple[tuple[float, float] | None, str]:
    """scipy.stats.bootstrap, paired, of mean(x - y); [d, d] when every delta is d (never NaN).

    BCa is undefined when the resamples are degenerate; then the percentile interval of the
    same resamples' distribution is reported, and the method says so.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    d = x - y
    if d.size == 0:
        return None, "no shared seeds"
    if np.ptp(d) <= TIE_CM:
        v = float(d.mean())
        return (v, v), "every delta equal: the interval is that delta"
    for method in (BOOTSTRAP_METHOD, "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.bootstrap((x, y), _mean_delta, paired=True, vectorized=True,
                                  n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=CONFIDENCE,
                                  method=method, rng=np.random.default_rng(BOOTSTRAP_SEED))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return (lo, hi), f"paired bootstrap {method}, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}"
    return None, "the bootstrap gave no finite interval"


# ---------------------------------------------------------------- decision rules

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}
HOLDS, NOT_HOLDS, UNDETERMINED, PROVISIONAL = "HOLDS", "does not hold", "undetermined", "provisional"
EXPLORATORY = "exploratory"  # a rule frozen after the data it reads existed: never a verdict
EXPLORATORY_HEAD = "exploratory (frozen after the data existed)"
# a rule over the arms of a registered comparison: shown, but the plan decides by the comparison's test
DESCRIPTIVE_READ = "a descriptive read: the plan decides by its registered comparison"


def exploratory_label(why: str, on_rows: str) -> str:
    """How a rule, test or comparison registered after its data is shown everywhere: never as a verdict."""
    return f"{EXPLORATORY_HEAD[:-1]}: {why}; on the rows: {on_rows})"


@dataclass
class Verdict:
    rule: Rule
    verdict: str  # HOLDS | does not hold | undetermined | provisional (never a bare HOLDS on an incomplete run)
    detail: str  # the values the condition was judged on, or what was missing
    why: str = ""  # undetermined: why; provisional: "at 60/100" and what it reads so far
    key: str = ""  # the rule's identity: "<section>#<n>" (prereg.stats.verdict.rule_key), never its text
    arms: tuple[str, ...] = ()  # every arm it read: those it names and their registered comparators
    reasons: tuple[str, ...] = ()  # undetermined: every reason, one each
    decided: str = ""  # "decided at 5/20 by the registered curtailment": settled before every planned seed ran
    early: bool = False  # decided before every planned seed of an arm it reads had a row: final all the same
    frozen_at: str = ""  # when the rule's section was frozen (its seal)
    data_at: str = ""  # the first row of the runs it reads: "ARM T" (the earliest), "" when not known
    on_rows: str = ""  # exploratory: the label it would carry had it been frozen before the data
    descriptive: bool = False  # its arms are a registered comparison's: the comparison decides, this is a read

    @property
    def label(self) -> str:
        """How every report shows it: 'HOLDS', 'undetermined (why)', 'provisional at 60/100 (HOLDS so far)',
        'HOLDS (final: decided at 5/20 by the registered curtailment)', 'exploratory (frozen after the data existed; ...)'."""
        if self.verdict == EXPLORATORY:
            return exploratory_label(self.why, self.on_rows)
        if self.verdict in (UNDETERMINED, PROVISIONAL):
            return f"{self.verdict} ({self.why})" if self.verdict == UNDETERMINED else f"provisional {self.why}"
        return f"{self.verdict} (final: {self.decided})" if self.early and self.decided else self.verdict

    def as_dict(self) -> dict:
        return {"key": self.key, "condition": self.rule.condition, "action": self.rule.action,
                "section": self.rule.section, "arms": list(self.arms), "verdict": self.verdict, "label": self.label,
                "why": self.why, "reasons": list(self.reasons), "decided": self.decided, "early": self.early,
                "detail": self.detail, "frozen_at": self.frozen_at, "data_at": self.data_at,
                "exploratory": self.verdict == EXPLORATORY, "on_rows": self.on_rows,
                "descriptive": self.descriptive}


def evaluate_rule(rule: Rule, values: dict[str, dict[str, float | None]], *,
                  blocked: dict[str, str] | None = None, partial: dict[str, str] | None = None) -> Verdict:
    """Judge a rule on {arm: {read: value}}.

    `blocked` {arm: why} makes any rule naming that arm undetermined (an INVALID arm, a run
    still going, no run); `partial` {arm: "at 60/100"} makes a judged rule provisional (the
    run ended before every registered seed had a row). A read that is missing makes it
    undetermined too.
    """
    arms = sorted(rule.arms())
    why = [f"{a}: {blocked[a]}" for a in arms if blocked and a in blocked]
    if why:
        return Verdict(rule, UNDETERMINED, "", "; ".join(why))
    parts, results = [], []
    for c in rule.clauses:
        left, lt = _value(c.left, values)
        right, rt = _value(c.right, values)
        if left is None or right is None:
            missing = lt if left is None else rt
            return Verdict(rule, UNDETERMINED, "", f"{missing} is not available in this report")
        if isinstance(left, float) and math.isnan(left) or isinstance(right, float) and math.isnan(right):
            return Verdict(rule, UNDETERMINED, "", f"{lt if math.isnan(left) else rt} is not a number")
        ok = OPS[c.op](left, right)
        results.append(ok)
        ls, rs = _fmt_pair(left, right)
        parts.append(f"{lt} = {ls} {c.op} {rs if isinstance(c.right, float) else f'{rt} = {rs}'}"
                     f" ({'true' if ok else 'false'})")
    verdict = HOLDS if all(results) else NOT_HOLDS
    detail = "; ".join(parts)
    part = [f"{partial[a]} for {a}" if len(arms) > 1 else partial[a] for a in arms if partial and a in partial]
    if part:
        return Verdict(rule, PROVISIONAL, detail, f"{', '.join(part)} ({verdict} so far)")
    return Verdict(rule, verdict, detail)


def _value(op, values) -> tuple[float | None, str]:
    if isinstance(op, float):
        return op, _fmt(op)
    arm, read = op
    label = f"{arm}.{read}"
    v = values.get(arm, {}).get(read)
    return (float(v) if v is not None else None), label


def _fmt(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.4g}"


def _fmt_pair(a: float, b: float) -> tuple[str, str]:
    """Both sides with enough significant digits that different values never read the same
    (0.16231 vs 0.16234 is shown as such, not as '0.1623 < 0.1623')."""
    if a == b or float(a).is_integer() and float(b).is_integer():
        return _fmt(a), _fmt(b)
    for digits in range(4, 18):
        sa, sb = (_fmt(v) if float(v).is_integer() else f"{v:.{digits}g}" for v in (a, b))
        if sa != sb:
            return sa, sb
    return repr(a), repr(b)


def clause_text(c: Clause) -> str:
    def t(o):
        return _fmt(o) if isinstance(o, float) else f"{o[0]}.{o[1]}"
    return f"{t(c.left)} {c.op} {t(c.right)}"
