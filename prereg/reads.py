"""The frozen reads, computed from rows: primary, validity, secondary, paired comparator, rules.

Pure: rows in (as `prereg.rows.read_rows` gives them), numbers out. The intervals and the
bootstrap are scipy's own functions with fixed arguments (`WILSON`, `CLOPPER_PEARSON`,
`BOOTSTRAP_*`) so that anyone can recompute a read and get the same number.
"""

from __future__ import annotations

import math
import operator
import statistics
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from prereg.document import Clause, Rule, Validity
from prereg.rows import ENGAGED_CM, KNOCK_AWAY_CM

CONFIDENCE = 0.95
WILSON, CLOPPER_PEARSON = "wilson", "exact"  # scipy's method names (Clopper-Pearson is "exact")
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_METHOD = "BCa"
BOOTSTRAP_SEED = 20260813  # fixed: the same rows give the same CI on every machine
TIE_CM = 1e-9


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
    extra_seeds: list[int] = field(default_factory=list)
    duplicate_seeds: list[int] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    progress_by_seed: dict[int, float] = field(default_factory=dict)
    knock_seeds: list[int] = field(default_factory=list)

    @property
    def stopped_early(self) -> bool:
        return self.n_planned is not None and self.n < self.n_planned

    @property
    def valid(self) -> bool:
        return all(c.ok for c in self.checks)

    def primary_text(self) -> str:
        if self.stopped_early:
            return f"{self.successes} / {self.n} achieved (of {self.n_planned} planned; {self.completion})"
        return f"{self.successes} / {self.n}"

    def values(self) -> dict[str, float | None]:
        """The reads a decision rule may name."""
        return {
            "successes": self.successes, "n": self.n, "n_planned": self.n_planned,
            "success_rate": self.success_rate,
            "success_ci_low": self._ci(0), "success_ci_high": self._ci(1),
            "reset_strikes": self.reset_strikes, "zero_fallbacks": self.zero_fallbacks,
            "zero_fallback_rate": self.zero_fallback_rate, "predicts": self.predicts,
            "error_rows": self.error_rows, "mask_violations": self.mask_violations,
            "engaged": self.engaged, "knock_aways": self.knock_aways, "quiet": self.quiet,
            "progress_final_mean": self.progress_final_mean, "progress_final_median": self.progress_final_median,
        }

    def _ci(self, i: int) -> float | None:
        iv = self.intervals.get("wilson") or self.intervals.get("clopper-pearson")
        return iv[i] if iv else None

    def as_dict(self) -> dict:
        d = asdict(self)
        d["progress_by_seed"] = {str(k): v for k, v in self.progress_by_seed.items()}
        d["valid"] = self.valid
        d["stopped_early"] = self.stopped_early
        return d


def proportion_ci(k: int, n: int, method: str) -> tuple[float, float] | None:
    """scipy.stats.binomtest(k, n).proportion_ci at 95%; None when there is nothing to estimate."""
    if n <= 0:
        return None
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method=method)
    return float(ci.low), float(ci.high)


def arm_reads(
    arm: str,
    rows: list[dict],
    *,
    planned_seeds: list[int] | tuple[int, ...] | None = None,
    validity: Validity | None = None,
    interval: str = "both",
    run_state: dict | None = None,
    bad_lines: list[str] = (),
) -> ArmReads:
    """Every read of one arm's rows. `run_state` is the run's status.json (for the stop label)."""
    validity = validity or Validity()
    by_seed: dict[int, dict] = {}
    dups = []
    for r in rows:
        seed = _int(r.get("seed"))
        if seed is None:
            continue
        if seed in by_seed:
            dups.append(seed)
        by_seed[seed] = r  # the last row of a seed wins (a resumed run may repeat one)
    extra, missing = [], []
    if planned_seeds is not None:
        plan = set(planned_seeds)
        extra = sorted(s for s in by_seed if s not in plan)
        for s in extra:
            del by_seed[s]
        missing = sorted(plan - set(by_seed))
    seeds = sorted(by_seed)
    rs = [by_seed[s] for s in seeds]
    n = len(rs)
    succ_seeds = [s for s in seeds if by_seed[s].get("success") is True]
    k = len(succ_seeds)
    intervals = {}
    methods = {"wilson": WILSON, "clopper-pearson": CLOPPER_PEARSON}
    for name, m in methods.items():
        if interval in (name, "both"):
            ci = proportion_ci(k, n, m)
            if ci:
                intervals[name] = ci
    errors = [s for s in seeds if by_seed[s].get("status") == "error"]
    strikes = [(s, _int(by_seed[s].get("reset_strikes"))) for s in seeds]
    strike_total = sum(v for _, v in strikes if v)
    zf = sum(_int(r.get("zero_fallbacks")) or 0 for r in rs)
    predicts = sum(_int(r.get("predicts")) or 0 for r in rs)
    pf = {s: float(by_seed[s]["progress_final_cm"]) for s in seeds if _num(by_seed[s].get("progress_final_cm"))}
    engaged_seeds = {s for s in seeds if _engaged(by_seed[s])}
    knock_seeds = {s for s in seeds if _knock(by_seed[s])}
    quiet = [s for s in seeds if s not in errors and s not in succ_seeds
             and s not in engaged_seeds and s not in knock_seeds]
    fad = [float(r["first_action_delta_deg"]) for r in rs if _num(r.get("first_action_delta_deg"))]
    reads = ArmReads(
        arm=arm, n_planned=len(planned_seeds) if planned_seeds is not None else None, n=n, successes=k,
        success_rate=k / n if n else None, intervals=intervals,
        completion=_completion(n, planned_seeds, run_state),
        reset_strikes=strike_total, reset_strike_episodes=[s for s, v in strikes if v],
        zero_fallbacks=zf, predicts=predicts, zero_fallback_rate=zf / predicts if predicts else None,
        mask_violations=sum(_int(r.get("mask_violations")) or 0 for r in rs),
        error_rows=len(errors), error_seeds=errors,
        engaged=len(engaged_seeds), knock_aways=len(knock_seeds), quiet=len(quiet),
        progress_final_mean=statistics.fmean(pf.values()) if pf else None,
        progress_final_median=statistics.median(pf.values()) if pf else None,
        success_seeds=succ_seeds, first_action_delta_deg=statistics.fmean(fad) if fad else None,
        missing_seeds=missing, extra_seeds=extra, duplicate_seeds=sorted(set(dups)), bad_lines=list(bad_lines),
        progress_by_seed=pf, knock_seeds=sorted(knock_seeds),
    )
    reads.checks = _validity_checks(reads, validity)
    unknown = sum(1 for _, v in strikes if v is None)
    if unknown:
        reads.notes.append(f"{unknown} row(s) do not say their reset strikes (null)")
    if extra:
        reads.notes.append(f"rows for seeds outside the registered list were left out: {extra[:20]}")
    if dups:
        reads.notes.append(f"seeds with more than one row (the last was read): {sorted(set(dups))[:20]}")
    if bad_lines:
        reads.notes.append(f"{len(bad_lines)} line(s) of rows.jsonl could not be read and were set aside")
    return reads


def _completion(n: int, planned, run_state: dict | None) -> str:
    if planned is None or n >= len(planned):
        return "complete"
    state = (run_state or {}).get("state")
    reason = (run_state or {}).get("reason") or (run_state or {}).get("stop_reason")
    why = f": {reason}" if reason else ""
    if state == "stopped":
        return f"stopped early{why}"
    if state == "failed":
        return f"run failed{why}"
    if state in ("starting", "running", "stopping"):
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


def _engaged(row: dict) -> bool:
    v = row.get("progress_cm")
    return float(v) > ENGAGED_CM if _num(v) else bool(row.get("engaged"))


def _knock(row: dict) -> bool:
    v = row.get("progress_final_cm")
    return float(v) <= KNOCK_AWAY_CM if _num(v) else bool(row.get("knock_away"))


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- the paired comparator


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

    def values(self) -> dict[str, float | None]:
        return {
            "delta_mean": self.delta_mean,
            "delta_ci_low": self.delta_ci[0] if self.delta_ci else None,
            "delta_ci_high": self.delta_ci[1] if self.delta_ci else None,
            "better": self.better, "tied": self.tied, "worse": self.worse,
            "shared_seeds": self.shared_seeds, "success_overlap": len(self.success_overlap),
        }

    def as_dict(self) -> dict:
        return asdict(self)


def paired_reads(a: ArmReads, b: ArmReads, comparator_name: str | None = None) -> Paired:
    """Per-seed deltas a - b of progress_final_cm on the seeds both have, with a paired bootstrap CI95."""
    shared = sorted(set(a.progress_by_seed) & set(b.progress_by_seed))
    x = np.array([a.progress_by_seed[s] for s in shared], dtype=float)
    y = np.array([b.progress_by_seed[s] for s in shared], dtype=float)
    d = x - y
    ci, method = paired_bootstrap_ci(x, y)
    sa, sb = set(a.success_seeds), set(b.success_seeds)
    return Paired(
        arm=a.arm, comparator=comparator_name or b.arm, shared_seeds=len(shared),
        only_arm=sorted(set(a.progress_by_seed) - set(shared)),
        only_comparator=sorted(set(b.progress_by_seed) - set(shared)),
        delta_mean=float(d.mean()) if len(d) else None, delta_ci=ci, ci_method=method,
        better=int((d > TIE_CM).sum()), tied=int((np.abs(d) <= TIE_CM).sum()), worse=int((d < -TIE_CM).sum()),
        success_overlap=sorted(sa & sb), success_only_arm=sorted(sa - sb), success_only_comparator=sorted(sb - sa),
        arm_successes=a.successes, comparator_successes=b.successes,
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
HOLDS, NOT_HOLDS, UNDETERMINED = "HOLDS", "does not hold", "undetermined"


@dataclass
class Verdict:
    rule: Rule
    verdict: str  # HOLDS | does not hold | undetermined
    detail: str  # the values the condition was judged on, or what was missing

    def as_dict(self) -> dict:
        return {"condition": self.rule.condition, "action": self.rule.action, "section": self.rule.section,
                "verdict": self.verdict, "detail": self.detail}


def evaluate_rule(rule: Rule, values: dict[str, dict[str, float | None]]) -> Verdict:
    """Judge a rule on {arm: {read: value}}; a read that is missing makes it undetermined."""
    parts, results = [], []
    for c in rule.clauses:
        left, lt = _value(c.left, values)
        right, rt = _value(c.right, values)
        if left is None or right is None:
            missing = lt if left is None else rt
            return Verdict(rule, UNDETERMINED, f"{missing} is not available in this report")
        ok = OPS[c.op](left, right)
        results.append(ok)
        parts.append(f"{lt} = {_fmt(left)} {c.op} {_fmt(right) if isinstance(c.right, float) else f'{rt} = {_fmt(right)}'}"
                     f" ({'true' if ok else 'false'})")
    return Verdict(rule, HOLDS if all(results) else NOT_HOLDS, "; ".join(parts))


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


def clause_text(c: Clause) -> str:
    def t(o):
        return _fmt(o) if isinstance(o, float) else f"{o[0]}.{o[1]}"
    return f"{t(c.left)} {c.op} {t(c.right)}"
