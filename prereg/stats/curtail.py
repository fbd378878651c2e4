"""Curtailment: is a frozen decision rule already settled by the rows so far?

Pure (rows and rules in, answers out; the one function that reads files, `check_run`, only
reads run directories). A rule is *settled* when no completion of the remaining seeds can
change its verdict: every way the seeds still to run could turn out gives the same verdict
once every planned seed has its row. The answer is sound, never optimistic: a rule is
declared settled only when that is proved; it may stay "not settled" a little longer than
strictly needed (see the limits below).

How: each read a rule names gets the set of values it can still take at completion.

- counts that each remaining row moves by 0 or 1 (successes, engaged, knock_aways, quiet,
  error_rows): every whole number from the count now to the count now + remaining;
- success_rate and the Wilson / Clopper-Pearson bounds of the success rate: functions of the
  final success count k at n = planned, monotone in k, so the values at k now .. k now +
  remaining (the bounds computed with the report's own `prereg.stats.reads.proportion_ci`);
- n and n_planned: the planned count;
- counts a row can move by any amount (zero_fallbacks, predicts, reset_strikes,
  mask_violations): from the count now upward without limit; zero_fallback_rate: anything in
  [0, 1] (it may also stay undefined while no predict has been counted);
- means, medians and the paired comparator reads: anything (never settled early: no bound
  from the rows' physical range is claimed).

A clause `A op B` can be true (false) when some pair of possible values makes it so (order
comparisons need only the extremes; == and != look at the sets). A rule is a conjunction
(the grammar of docs/prereg.md); `settle_tree` also takes `or`. Clauses are combined as if
their reads moved independently, which can only leave a rule open longer (e.g.
`successes >= 3 and quiet >= 3` with 4 seeds left is impossible, but is not declared so):
that is the one place this is not exact.

Other arms a rule names are read from their runs beside this one (same frozen section, found
by manifest), with the same value sets; an arm with no run known yet can take any value, so a
rule on it is settled only when this arm's clauses settle it alone (`masked.zero_fallbacks ==
0 and reference.zero_fallbacks > 0` is false at the masked arm's first fallback), and the
answer says which arm is missing otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from prereg.document.rules import Clause, Rule

HOLDS, NOT_HOLDS, UNDETERMINED = "HOLDS", "does not hold", "undetermined"  # as prereg.stats.reads

STEP_READS = ("successes", "engaged", "knock_aways", "quiet", "error_rows")  # +0 or +1 per row
UNBOUNDED_READS = ("zero_fallbacks", "predicts", "reset_strikes", "mask_violations")  # +any per row
SUCCESS_READS = ("success_rate", "success_ci_low", "success_ci_high")  # monotone in final successes
PLANNED_READS = ("n", "n_planned")
# reads a simulated success rate drives (the savings table at validate/freeze time)
SIMULABLE_READS = ("successes",) + SUCCESS_READS + PLANNED_READS
CURTAILABLE_READS = STEP_READS + UNBOUNDED_READS + SUCCESS_READS + PLANNED_READS + ("zero_fallback_rate",)
INF = math.inf


# ---------------------------------------------------------------- value sets


@dataclass(frozen=True)
class Values:
    """The values a read can take at completion: [lo, hi], exactly `points` when known."""

    lo: float = -INF
    hi: float = INF
    points: tuple[float, ...] | None = None
    maybe_none: bool = False  # the read may be undefined at completion (the report says undetermined)

    @classmethod
    def exact(cls, v: float) -> "Values":
        return cls(v, v, (v,))

    @classmethod
    def of(cls, pts) -> "Values":
        pts = tuple(sorted(set(float(p) for p in pts)))
        return cls(pts[0], pts[-1], pts)


ANY = Values(maybe_none=False)
ANY_OR_NONE = Values(maybe_none=True)


@dataclass
class ArmState:
    """What is known of one arm: its counts now, rows done, seeds planned."""

    counts: dict[str, float]
    done: int
    planned: int
    interval: str = "both"  # the registered interval: which bound success_ci_* reads
    known: bool = True  # False: no run of this arm is known (any value)

    @property
    def remaining(self) -> int:
        return max(0, self.planned - self.done)


def state_from_reads(reads, interval: str = "both") -> ArmState:
    """An ArmState from `prereg.stats.reads.ArmReads` (the report's own counting of rows)."""
    counts = {k: getattr(reads, k) for k in STEP_READS + UNBOUNDED_READS}
    return ArmState(counts, reads.n, reads.n_planned if reads.n_planned is not None else reads.n, interval)


def state_from_rows(rows: list[dict], planned_seeds, interval: str = "both") -> ArmState:
    """The counts of exactly these rows against the plan (the caller chooses which rows count:
    the driver and the verdict engine pass the plan prefix, `prereg.stats.verdict.plan_prefix`)."""
    from prereg.stats.reads import arm_reads

    return state_from_reads(arm_reads("arm", rows, planned_seeds=list(planned_seeds), interval="none"), interval)


def prefix_state_of(rows: list[dict], planned_seeds, interval: str = "both") -> ArmState:
    """The counts of the plan prefix of `rows`: seed k counts once every seed before it in the plan has a row."""
    from prereg.rundir.rows import plan_prefix, rows_by_seed

    return state_from_rows(plan_prefix(planned_seeds, rows_by_seed(rows, planned_seeds)), planned_seeds, interval)


@lru_cache(maxsize=64)
def ci_table(n: int, method: str) -> tuple[tuple[float, float], ...]:
    """(low, high) of the 95% interval for k = 0..n successes of n, as the report computes them."""
    from prereg.stats.reads import CLOPPER_PEARSON, WILSON, proportion_ci

    m = WILSON if method == "wilson" else CLOPPER_PEARSON
    return tuple(proportion_ci(k, n, m) for k in range(n + 1))


def read_values(st: ArmState, read: str) -> Values:
    if not st.known:
        return ANY
    N, R = st.planned, st.remaining
    c = st.counts
    if read in STEP_READS:
        return Values.of(range(int(c[read]), int(c[read]) + R + 1))
    if read in UNBOUNDED_READS:
        return Values.exact(c[read]) if R == 0 else Values(c[read], INF)
    if read in PLANNED_READS:
        return Values.exact(N)
    if read in SUCCESS_READS:
        if N <= 0:
            return Values(maybe_none=True)
        ks = range(int(c["successes"]), int(c["successes"]) + R + 1)
        if read == "success_rate":
            return Values.of(k / N for k in ks)
        method = "wilson" if st.interval in ("wilson", "both") else "clopper-pearson"
        table = ci_table(N, method)
        return Values.of(table[k][0 if read == "success_ci_low" else 1] for k in ks)
    if read == "zero_fallback_rate":
        z, p = c["zero_fallbacks"], c["predicts"]
        if R == 0:
            return Values.exact(z / p) if p else Values(maybe_none=True, lo=INF, hi=-INF, points=())
        return Values(0.0, 1.0, None, maybe_none=not p)
    return ANY_OR_NONE  # means, medians, comparator reads


# ---------------------------------------------------------------- clauses and rules


def clause_truths(c: Clause, values: dict[str, ArmState]) -> tuple[set[bool], bool, bool]:
    """(the truth values the clause can take, may a read be undefined, is one surely undefined)."""
    a, b = _operand(c.left, values), _operand(c.right, values)
    never = (a.points == () and a.maybe_none) or (b.points == () and b.maybe_none)
    if never:
        return set(), True, True
    truths: set[bool] = set()
    op = c.op
    if op in (">=", ">", "<=", "<"):
        f = {">=": lambda x, y: x >= y, ">": lambda x, y: x > y,
             "<=": lambda x, y: x <= y, "<": lambda x, y: x < y}[op]
        for x in (a.lo, a.hi):
            for y in (b.lo, b.hi):
                truths.add(bool(f(x, y)))
    else:
        can_equal = _can_equal(a, b)
        can_differ = not (a.lo == a.hi == b.lo == b.hi)
        eq = {True} if can_equal else set()
        if can_differ:
            eq.add(False)
        truths = eq if op == "==" else {not t for t in eq}
    return truths, a.maybe_none or b.maybe_none, False


def _can_equal(a: Values, b: Values) -> bool:
    if a.points is not None and b.points is not None:
        return bool(set(a.points) & set(b.points))
    if a.points is not None:
        return any(b.lo <= x <= b.hi for x in a.points)
    if b.points is not None:
        return any(a.lo <= x <= a.hi for x in b.points)
    return max(a.lo, b.lo) <= min(a.hi, b.hi)


def _operand(o, values: dict[str, ArmState]) -> Values:
    if isinstance(o, float):
        return Values.exact(o)
    arm, read = o
    st = values.get(arm)
    return ANY if st is None else read_values(st, read)


@dataclass
class Settled:
    condition: str
    settled: bool
    verdict: str | None  # HOLDS | does not hold, when settled
    why: str

    def as_dict(self) -> dict:
        return {"condition": self.condition, "settled": self.settled, "verdict": self.verdict, "why": self.why}


def settle_tree(node, values: dict[str, ArmState]) -> tuple[set[bool], bool]:
    """A condition tree: a Clause, ("and", [nodes]) or ("or", [nodes]) -> (possible truths, may be undefined).

    An impossible clause (a read surely undefined) makes the whole condition undetermined."""
    if isinstance(node, Clause):
        t, maybe_none, never = clause_truths(node, values)
        return (set(), True) if never else (t, maybe_none)
    kind, kids = node
    parts = [settle_tree(k, values) for k in kids]
    maybe_none = any(m for _, m in parts)
    if any(not t for t, _ in parts):
        return set(), True
    if kind == "and":
        out = set()
        if all(True in t for t, _ in parts):
            out.add(True)
        if any(False in t for t, _ in parts):
            out.add(False)
    else:
        out = set()
        if any(True in t for t, _ in parts):
            out.add(True)
        if all(False in t for t, _ in parts):
            out.add(False)
    return out, maybe_none


def settle_rule(rule: Rule, values: dict[str, ArmState]) -> Settled:
    """Is the rule's verdict at completion already fixed? (`values`: {arm: ArmState}; a missing arm: any value)"""
    truths, maybe_none = settle_tree(("and", list(rule.clauses)), values)
    if len(truths) == 1 and not maybe_none:
        verdict = HOLDS if truths == {True} else NOT_HOLDS
        return Settled(rule.condition, True, verdict, _why_settled(rule, values, verdict))
    unknown = sorted(a for a in rule.arms() if a not in values or not values[a].known)
    if unknown:
        why = f"not settled: no run known for arm(s) {', '.join(unknown)}"
    elif not truths:
        why = "not settled: a read it names is undefined"
    elif any(isinstance(o, tuple) and o[1] not in CURTAILABLE_READS for c in rule.clauses for o in (c.left, c.right)):
        why = "not settled: it reads means or paired deltas, which are never settled early"
    else:
        why = "not settled: the remaining seeds can still change it"
    return Settled(rule.condition, False, None, why)


def _why_settled(rule: Rule, values: dict[str, ArmState], verdict: str) -> str:
    at = ", ".join(f"{a} {values[a].done}/{values[a].planned}" for a in sorted(rule.arms()) if a in values
                   and values[a].known)
    return f"{verdict} whatever the remaining seeds do ({at})"


def curtailable(rule: Rule, arm: str) -> bool:
    """Can this arm's rows alone settle the rule early? (every read it names is a count or a rate of this arm)"""
    return all(not isinstance(o, tuple) or (o[0] == arm and o[1] in CURTAILABLE_READS)
               for c in rule.clauses for o in (c.left, c.right))


# ---------------------------------------------------------------- a run, for the driver


@dataclass
class Plan:
    """The frozen rules a run of one arm is judged by, and what they need."""

    arm: str
    sha256: str
    seeds: tuple[int, ...]
    interval: str
    rules: list[Rule]
    other_arms: dict[str, tuple[str, tuple[int, ...], str]] = field(default_factory=dict)  # arm -> (sha, seeds, interval)
    keys: list[str] = field(default_factory=list)  # each rule's identity (prereg.stats.verdict.rule_key), as `rules`
    frozen: list[str] = field(default_factory=list)  # when each rule's section was frozen (its seal), as `rules`

    def registered_before(self, data_at: str | None) -> "Plan":
        """The rules frozen no later than the run's first row (`data_at`): a rule written once the data
        existed (an amendment frozen mid-run) is exploratory, and never stops the run."""
        from prereg.rundir.files import parse_utc

        t = parse_utc(data_at)
        if t is None:
            return self
        keep = [i for i, f in enumerate(self.frozen) if (parse_utc(f) or t) <= t]
        return Plan(self.arm, self.sha256, self.seeds, self.interval, [self.rules[i] for i in keep],
                    self.other_arms, [self.keys[i] for i in keep], [self.frozen[i] for i in keep])


@lru_cache(maxsize=16)
def _plan(path: str, arm: str, mtime: float) -> Plan | None:
    from prereg.document.read import load

    doc = load(path)
    found = doc.find_arm(arm)
    if found is None or found[1].protocol is None or not found[1].section.sealed:
        return None
    _, sm = found
    keyed = [(k, r) for k, r in doc.registered_rules() if arm in r.arms()]
    rules = [r for _, r in keyed]
    others = {}
    for r in rules:
        for a in r.arms() - {arm}:
            f = doc.find_arm(a)
            if f and f[1].section.sealed and f[1].protocol is not None:
                others[a] = (f[1].section.seal.sha256, tuple(f[1].protocol.seeds), f[1].reads.interval)
    frozen = [(doc.section_model(r.section).section.seal.attrs.get("frozen_at", "")) for r in rules]
    return Plan(arm, sm.section.seal.sha256, tuple(sm.protocol.seeds), sm.reads.interval, rules, others,
                [k for k, _ in keyed], frozen)


def load_plan(prereg: dict | None, arm: str) -> Plan | None:
    """The plan of a run launched from a frozen document (`manifest["prereg"]`), or None."""
    if not prereg or not prereg.get("path"):
        return None
    p = Path(prereg["path"])
    try:
        return _plan(str(p), arm, p.stat().st_mtime)
    except OSError:
        return None


def sibling_states(plan: Plan, run_dir: Path) -> dict[str, ArmState]:
    """Runs of the other arms the rules name, found beside `run_dir` (same frozen section by manifest)."""
    from prereg import rundir as rd
    from prereg.rundir.discovery import newest_registered_run

    out: dict[str, ArmState] = {}
    for a, (sha, seeds, interval) in plan.other_arms.items():
        d = newest_registered_run(Path(run_dir).resolve().parent, a, sha, exclude=Path(run_dir))
        if d is not None:  # a crossed design's sibling: its read variant's rows (rd.counted_rows)
            out[a] = prefix_state_of(rd.counted_rows(d).rows, seeds, interval)
    return out


def check_run(prereg: dict | None, arm: str, rows: list[dict], run_dir: Path) -> dict | None:
    """For the driver, after each row: what status.json says under "settled", or None (no rules).

    Every arm is read on its plan prefix (seed k counts once the seeds before it in the plan
    have rows), so neither the order in which episodes finish nor the number of workers can
    move the decision. Only rules frozen before the run's first row are read (`Plan.registered_before`).
    {"at": the prefix length, "total": planned, "all": every rule settled,
    "rules": [{key, condition, settled, verdict, why}...]}."""
    from prereg.rundir.files import first_row_at
    from prereg.rundir.rows import plan_prefix, rows_by_seed

    plan = load_plan(prereg, arm)
    plan = plan.registered_before(first_row_at(rows)) if plan is not None else None
    if plan is None or not plan.rules:
        return None
    states = sibling_states(plan, run_dir)
    prefix = plan_prefix(plan.seeds, rows_by_seed(rows, plan.seeds))

    def settle_at(m: int) -> list[Settled]:
        states[arm] = state_from_rows(prefix[:m], plan.seeds, plan.interval)
        return [settle_rule(r, states) for r in plan.rules]

    at, res = len(prefix), settle_at(len(prefix))
    # one row can lengthen the prefix by several seeds (seed 4 finishing after seed 5): the
    # decision is dated by the shortest prefix that settles it, as if rows came in plan order
    while at > 0 and all(s.settled for s in res):
        earlier = settle_at(at - 1)
        if not all(s.settled for s in earlier):
            break
        at, res = at - 1, earlier
    return {"at": at, "total": len(plan.seeds), "all": all(s.settled for s in res),
            "rules": [{"key": k, **s.as_dict()} for k, s in zip(plan.keys, res)]}


def decided_detail(settled: dict) -> str:
    """STOP's detail: which rules, at which episode, the verdicts."""
    verdicts = "; ".join(f"[{r['verdict']}] {r['condition']}" for r in settled["rules"])
    return f"rules settled at {settled['at']}/{settled['total']}: {verdicts}"


# ---------------------------------------------------------------- the report


def savings_note(status, reads) -> str | None:
    """'decided at 63/100 ...: 37 episodes not run, ~0.41 GPU-hours saved' for a run stopped by `decided`
    (`status`: the run's prereg.rundir.Status, or its status.json object, or None)."""
    from prereg import rundir as rd

    status = rd.Status.of(status)
    if status is None:
        return None
    stop, settled, seq = status.stop, status.settled, status.sequential
    if stop is None or stop.by != rd.BY_DECIDED or not isinstance(settled or seq, dict):
        return None
    if isinstance(seq, dict) and seq.get("text"):
        how, at, total = f"the registered sequential test ({seq['text']})", seq.get("at"), seq.get("total")
    else:
        how, at, total = "a registered curtailment (gates: decided: stop)", (settled or {}).get("at"), (settled or {}).get("total")
    n, planned = reads.n, reads.n_planned or total or reads.n
    left = max(0, planned - n)
    gpu, wall = status.gpu_hours, status.elapsed_s
    saved = ""
    if gpu is not None and gpu > 0 and n:
        saved = f", ~{gpu / n * left:.3f} GPU-hours saved at the {gpu / n:.4f} GPU-hours per episode measured"
    elif gpu is not None and n:
        saved = ", no GPU-hours at stake (no GPU held)"
    if wall is not None and n:
        saved += f" (~{wall / n * left / 60:.1f} min of wall)"
    return f"decided at {at}/{total} by {how}: {left} of {planned} episodes not run{saved}"


# ---------------------------------------------------------------- savings before spending


def simulate_expected_episodes(rules: list[Rule], arm: str, planned: int, p: float, *, interval: str = "both",
                               sims: int = 400, seed: int = 20260813) -> float:
    """Mean number of episodes run before every rule settles, each episode a success with chance p.

    The model of an episode: a success with probability p, independently (numpy, seeded);
    only rules over successes, their rate and its bounds are simulated (`SIMULABLE_READS`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    draws = rng.random((sims, planned)) < p
    stops = []
    memo: dict[int, dict[int, bool]] = {}
    for row in draws:
        k = 0
        stop_at = planned
        for i, s in enumerate(row, 1):
            k += int(s)
            hit = memo.setdefault(i, {}).get(k)
            if hit is None:
                counts = {r: 0 for r in STEP_READS + UNBOUNDED_READS}
                counts.update(successes=k, engaged=k, quiet=i - k)
                st = {arm: ArmState(counts, i, planned, interval)}
                hit = all(settle_rule(r, st).settled for r in rules)
                memo[i][k] = hit
            if hit:
                stop_at = i
                break
        stops.append(stop_at)
    return float(np.mean(stops))


SAVINGS_RATES = (0.01, 0.09, 0.3, 0.9)


def savings_table(doc) -> list[str]:
    """Lines for validate/freeze: per arm, the expected episodes under curtailment at a few success rates."""
    out = []
    for sm in doc.sections:
        if sm.protocol is None:
            continue
        planned = len(sm.protocol.seeds)
        stop = sm.gates.decided == "stop"
        if sm.gates.sequential and sm.arms:
            from prereg.stats.sequential import Sprt, oc_lines

            out += oc_lines(Sprt.from_dict(sm.gates.sequential), planned)
        for a in sm.arms:
            rules = [r for r in doc.rules() if a.name in r.arms()]
            if not rules:
                continue
            ok = [r for r in rules if curtailable(r, a.name)]
            sim = [r for r in ok if all(not isinstance(o, tuple) or o[1] in SIMULABLE_READS
                                        for c in r.clauses for o in (c.left, c.right))]
            registered = "registered" if stop else "NOT registered: information only"
            head = f"  arm {a.name} ({planned} seeds, curtailment {registered}):"
            if len(sim) < len(rules):
                others = [r.condition for r in rules if r not in sim]
                out.append(f"{head} rules {others} cannot be simulated from a success rate "
                           "(they read other arms, or events a success rate does not drive); the run stops only "
                           "when they settle too")
                if not sim:
                    continue
                head = "    at least:"
            exp = [f"p={p:g}: {simulate_expected_episodes(sim, a.name, planned, p, interval=sm.reads.interval):.1f}"
                   for p in SAVINGS_RATES]
            which = "its rules settle" if len(sim) == len(rules) else "those rules settle"
            out.append(f"{head} expected episodes until {which} of {planned}: " + ", ".join(exp))
    return out


def settled_text(status) -> str | None:
    """One line for the console and Discord: 'settled at 63/100: [HOLDS] ...', or how many rules are settled
    (`status`: the run's prereg.rundir.Status, or its status.json object, or None).

    status.json is someone else's file: a field of the wrong type is left out, never a crash."""
    s = _typed_status(status).settled
    rules = s.get("rules") if isinstance(s, dict) else None
    if not isinstance(rules, list) or not rules:
        return None
    rules = [r for r in rules if isinstance(r, dict)]
    at, total = _int_or_q(s.get("at")), _int_or_q(s.get("total"))
    if s.get("all") is True:
        return f"settled at {at}/{total}: " + "; ".join(
            f"[{r.get('verdict')}] {r.get('condition')}" for r in rules)
    done = [r for r in rules if r.get("settled") is True]
    return f"{len(done)} of {len(rules)} rules settled at {at}/{total}"


def _int_or_q(v) -> str:
    return str(v) if type(v) is int else "?"


def _typed_status(status):
    """A prereg.rundir.Status from a Status or a status.json object; an empty one from anything else."""
    from prereg import rundir as rd

    return rd.Status.of(status) if isinstance(status, (rd.Status, dict)) else rd.Status()


def pace_text(status) -> str | None:
    """The fair projection's inputs in one line, with the naive projection beside it (`status` as for settled_text)."""
    from prereg.rundir.gates import PaceInputs, per_episode_wall_s
    from prereg.rundir.rows import number

    p = _typed_status(status).pace
    inputs = PaceInputs.from_dict(p) if isinstance(p, dict) else None
    if inputs is None or number(p.get("startup_s")) is None:
        return None
    w = per_episode_wall_s(inputs)
    naive = number(p.get("naive_projected_wall_s"))
    return (f"start-up {inputs.startup_s:.0f} s + {inputs.total - inputs.done} left x "
            f"{'?' if w is None else f'{w:.1f}'} s / {inputs.lanes} lanes, {inputs.in_flight} in flight"
            + ("" if naive is None else f"; naive {naive / 60:.1f} min"))
