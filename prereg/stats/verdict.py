"""The one verdict engine: every verdict Fontaine states is one function of the evidence.

`judge(doc, evidence)` is pure. Its input is the document and, for every arm a rule may read,
an `ArmEvidence`: that arm's reads (prereg.stats.reads), its rows by planned seed, whether its run is
live, every reason it is not VALID, its resumes, and its pairing with its registered
comparator. Its output is a `Judgement`: one verdict per registered decision rule, keyed by
(section, position in that section) -- never by condition text -- and one per registered
sequential test. The report, the console's compare view and the Discord results post (through
results.md) read verdicts from here. The driver's stops (prereg.stats.curtail.check_run,
prereg.stats.sequential.check_rows) use the same plan-prefix building blocks but not judge(): the
stop is theirs, the verdict on it is judge()'s.

How a rule is judged:

1. The arms it reads: the arms it names, and for every `ARM.delta_*` / `ARM.shared_seeds` /
   ... read, ARM's registered comparator (the first `reads.comparator` that applies to ARM).
2. Every reason one of them cannot bear a verdict is collected: no run, a run still live,
   INVALID (each failed check), no episodes. Any reason makes the rule `undetermined`, with
   every reason; a curtailed decision does not override it (the settled verdict is named
   beside the reasons).
3. Settled early? (prereg.stats.curtail) on each arm's *plan prefix*: the rows of the registered
   seeds in plan order up to the first seed without a row. Counting only the prefix makes
   the decision a function of the outcomes in plan order, so episodes that finish early
   because they succeed, and any number of parallel workers, cannot bias it. Settled and
   every arm VALID and ended: final; "decided at m/N by the registered curtailment" only where that
   curtailment ended the run early (a rule every planned seed was read for is decided by its rows).
4. Otherwise judged on the rows read: `provisional at n/N (HOLDS so far)` when an arm ended
   with fewer rows than planned (`undetermined` when a registered sequential stop ended it
   before this rule settled: the verdict at completion is not known), else HOLDS / does not
   hold with the values it was judged on.

The registered sequential test (prereg/stats/sequential.py) is read the same way: on the plan
prefix, the first crossing of a boundary; final only when the arm ends VALID. A registered
comparison (`ComparisonVerdict`) is decided from one comparison run's rows of both arms by the
code the driver ran (prereg.stats.comparison.decide), never from status.json's record of it, and
stands only when both arms can bear it.

Every verdict carries when its section was frozen and when the data it reads first existed (the
first row of each run it reads): one frozen after that is `exploratory`, never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from prereg import rundir as rd
from prereg.core.vocabulary import COMPARATOR_READS
from prereg.document.comparison_spec import ComparisonSpec
from prereg.document.model import Document
from prereg.document.rules import Rule
from prereg.rundir.files import first_row_at, parse_utc
from prereg.rundir.rows import plan_prefix, rows_by_seed
from prereg.stats import curtail
from prereg.stats.comparison import Decision, decide
from prereg.stats.reads import (
    EXPLORATORY,
    HOLDS,
    NOT_HOLDS,
    PROVISIONAL,
    UNDETERMINED,
    ArmReads,
    Paired,
    Verdict,
    evaluate_rule,
    exploratory_label,
)
from prereg.stats.sequential import SequentialDecision, Sprt, sequential_decision
from prereg.stats.variants_decide import PooledRows, pooled_comparison_decision, pooled_sequential_decision

FINAL = "final"  # a decision reached early by a registered curtailment or sequential test
COMPARISON_STOP, SEQUENTIAL_STOP = "(comparison)", "(sequential)"  # the driver's stop details start so

__all__ = ["ArmEvidence", "ComparisonVerdict", "Judgement", "SequentialDecision", "SequentialVerdict", "judge",
           "plan_prefix", "prefix_state", "rows_by_seed", "sequential_decision", "EXPLORATORY", "HOLDS", "NOT_HOLDS",
           "PROVISIONAL", "UNDETERMINED"]


# ---------------------------------------------------------------- evidence


@dataclass
class ArmEvidence:
    """What the engine knows of one arm's run (or of an external comparator run)."""

    arm: str
    reads: ArmReads
    by_seed: dict[int, dict]  # the planned seeds' rows, the last row of a seed
    planned: tuple[int, ...]
    interval: str = "both"
    problems: list[str] = field(default_factory=list)  # every reason it is not VALID ([] = VALID)
    state: str | None = None  # status.json's state
    stopped_by: str | None = None  # StopReason.by when the run was stopped (rd.BY_DECIDED for a registered stop)
    stop_detail: str = ""
    resumes: list[str] = field(default_factory=list)  # when each resume of the run began
    comparator: str | None = None  # its registered comparator's name (an arm, or an external run's label)
    paired: Paired | None = None  # the paired reads against that comparator
    external: bool = False  # a comparator run named by path, outside the registration's arms
    run_dir: Path | None = None
    first_row_at: str | None = None  # when its data first existed (prereg.rundir.files.first_row_at), None: not known
    comparison_of: tuple[str, ...] | None = None  # read as one arm of a comparison run of these arms
    pooled: PooledRows | None = None  # the plan decides on the pooled rate: this arm's rows of every variant

    @property
    def live(self) -> bool:
        return self.state in rd.LIVE_STATES

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def prefix(self) -> list[dict]:
        return plan_prefix(self.planned, self.by_seed)

    def blocked(self) -> list[str]:
        """Why a verdict cannot stand on this arm now (each reason), [] when it can."""
        r = self.reads
        out = []
        if self.live:
            out.append(f"the run is still {self.state} ({r.n}/{r.n_planned if r.n_planned is not None else '?'} episodes)")
        if self.problems:
            out.append("INVALID: " + "; ".join(self.problems))
        if r.n == 0 and not self.live:
            out.append("no episodes")
        return out


def evidence_from_reads(reads: ArmReads, rows: Iterable[dict], *, planned: Sequence[int] | None = None,
                        interval: str = "both", status: rd.Status | Mapping | None = None,
                        manifest: rd.Manifest | Mapping | None = None,
                        extra_problems: Sequence[str] = (), external: bool = False,
                        run_dir: Path | None = None, state: str | None = None,
                        dated_by: Iterable[dict] | None = None) -> ArmEvidence:
    """Evidence from an arm's reads and rows (the rows as read; planned None: every seed read, in order);
    `status` and `manifest` typed (prereg.rundir), or their files' objects; `state` the run's state as
    every reader shows it (prereg.rundir.runstate.snapshot_state: died, not status.json's "running"),
    else status.json's; `dated_by`: the rows that date the data when they are more than `rows` (a crossed
    design's every variant: a rule frozen after any variant's first row is frozen after the data)."""
    rows = list(rows)
    if planned is None:
        planned = sorted({r["seed"] for r in rows if isinstance(r, dict) and type(r.get("seed")) is int})
    plan = tuple(planned)
    by_seed = rows_by_seed(rows, plan)
    problems = list(extra_problems) + [c.text for c in reads.checks if not c.ok]
    status = rd.Status.of(status) if isinstance(status, (rd.Status, Mapping)) else None
    manifest = rd.Manifest.of(manifest) if isinstance(manifest, (rd.Manifest, Mapping)) else None
    stop = status.stop if status is not None else None
    resumes = [x["at"] for x in (manifest.resumes if manifest is not None else ()) if isinstance(x.get("at"), str)]
    comparison_of = (tuple(manifest.arms) if manifest is not None and manifest.is_comparison
                     and reads.arm in manifest.arms else None)
    return ArmEvidence(reads.arm, reads, by_seed, plan, interval, problems,
                       state or (status.state if status is not None else None),
                       stop.by if stop else None, stop.detail if stop else "", resumes, external=external,
                       run_dir=run_dir,
                       first_row_at=first_row_at(rows if dated_by is None else list(dated_by),
                                                 manifest.started_at if manifest is not None else None, *resumes),
                       comparison_of=comparison_of)


def prefix_state(ev: ArmEvidence) -> curtail.ArmState:
    """The arm's counts on its plan prefix, for curtailment."""
    return curtail.state_from_rows(ev.prefix, ev.planned, ev.interval)


# ---------------------------------------------------------------- when a rule was written


def frozen_at(doc: Document | None, section: str) -> str:
    """When `section` was frozen (its seal's time, to the second); '' when not known or not frozen."""
    sm = doc.section_model(section) if doc is not None else None
    seal = sm.section.seal if sm is not None else None
    return seal.attrs.get("frozen_at", "") if seal is not None else ""


def data_time(frozen: str, arms, evidence: Mapping[str, "ArmEvidence"]) -> tuple[str, str]:
    """(the earliest first row of the runs these arms are read from, 'ARM T' or '';
    why the registration came after the data, or '' when it did not or it is not known).

    Registered means frozen no later than the data: a section frozen after the first row of a run it
    reads (to the second, as seals and rows are stamped) was written with the data there to see."""
    firsts = sorted((t, a, ev.first_row_at) for a in arms for ev in (evidence.get(a),) if ev is not None
                    for t in (parse_utc(ev.first_row_at),) if t is not None)
    if not firsts:
        return "", ""
    t0, arm, text = firsts[0]
    when = parse_utc(frozen)
    late = f"frozen {frozen}, after the first row of {arm}'s run ({text})" if when is not None and when > t0 else ""
    return f"{arm} {text}", late


def _stop_kind(detail: str) -> str:
    if detail.startswith(COMPARISON_STOP):
        return "the registered comparison decided"
    if detail.startswith(SEQUENTIAL_STOP):
        return "the registered sequential test decided"
    return "its registered curtailment settled the rules it stops on"


# ---------------------------------------------------------------- the sequential test


@dataclass
class SequentialVerdict:
    key: str  # "<section>:sequential:<arm>"
    arm: str
    section: str
    decision: SequentialDecision | None
    verdict: str  # FINAL | PROVISIONAL | UNDETERMINED | EXPLORATORY ("no decision" is undetermined with its why)
    why: str
    frozen_at: str = ""
    data_at: str = ""
    on_rows: str = ""  # exploratory: the label it would carry had it been frozen before the data

    @property
    def label(self) -> str:
        if self.verdict == EXPLORATORY:
            return exploratory_label(self.why, self.on_rows)
        if self.verdict == FINAL and self.decision is not None:
            return f"final: {self.decision.decision} accepted at {self.decision.at}/{self.decision.total}"
        return f"{self.verdict} ({self.why})"

    def as_dict(self) -> dict:
        return {"key": self.key, "arm": self.arm, "section": self.section, "verdict": self.verdict,
                "label": self.label, "why": self.why, "frozen_at": self.frozen_at, "data_at": self.data_at,
                "exploratory": self.verdict == EXPLORATORY,
                "decision": self.decision.as_dict() if self.decision else None}


# ---------------------------------------------------------------- a registered comparison


@dataclass
class ComparisonVerdict:
    """A section's registered comparison, judged on one comparison run's rows of both arms.

    The decision is recomputed from the rows by the code the driver ran (prereg.stats.comparison.decide
    on the shared plan prefix); status.json's record of it is the run's provenance, checked beside it
    (prereg/stats/comparison_report.py), never the decision. It stands (`final`) only when both arms
    are read from that run and each can bear it (VALID, ended, with episodes); a run that ended before
    the comparison decided leaves it undetermined. An anytime-valid decision stands at whatever seed
    it fell, so the stop it caused is not "partial"."""

    key: str  # "<section>:comparison"
    section: str
    spec: ComparisonSpec
    run_dir: Path | None  # the comparison run it reads
    decision: Decision | None  # from the rows; None: no decision on them (or the arms are not one run's)
    verdict: str  # FINAL | UNDETERMINED | EXPLORATORY
    why: str = ""
    reasons: tuple[str, ...] = ()
    frozen_at: str = ""
    data_at: str = ""
    on_rows: str = ""

    @property
    def outcome(self) -> str:
        """What is stated: the decision's outcome when it stands, else the verdict (undetermined, exploratory)."""
        return self.decision.outcome if self.verdict == FINAL and self.decision is not None else self.verdict

    @property
    def rows_decide(self) -> str:
        return f"the rows decide: {self.decision.text}" if self.decision is not None else "no decision on the rows"

    @property
    def label(self) -> str:
        if self.verdict == FINAL and self.decision is not None:
            return self.decision.text  # it stands: the decision in words
        if self.verdict == EXPLORATORY:
            return exploratory_label(self.why, self.on_rows)
        return f"undetermined ({self.why})"

    def as_dict(self) -> dict:
        return {"key": self.key, "section": self.section, "arms": [self.spec.arm_a, self.spec.arm_b],
                "run_dir": str(self.run_dir) if self.run_dir else None, "verdict": self.verdict,
                "outcome": self.outcome, "label": self.label, "why": self.why, "reasons": list(self.reasons),
                "frozen_at": self.frozen_at, "data_at": self.data_at, "exploratory": self.verdict == EXPLORATORY,
                "rows_decide": ({**self.decision.as_dict(), "episodes_saved": self.decision.episodes_saved}
                                if self.decision is not None else None)}


def _comparison_verdicts(doc: Document, evidence: Mapping[str, ArmEvidence]) -> list[ComparisonVerdict]:
    """Each frozen section's comparison that a comparison run of its arms in this report reads."""
    out = []
    for sm in doc.sections:
        spec = sm.comparison
        if spec is None or not sm.section.sealed:
            continue
        pair = (spec.arm_a, spec.arm_b)
        evs = {a: evidence.get(a) for a in pair}
        from_run = [ev for ev in evs.values() if ev is not None and ev.run_dir is not None
                    and ev.comparison_of is not None and set(ev.comparison_of) == set(pair)]
        if not from_run:
            continue  # no comparison run of these arms in this report
        run = from_run[0].run_dir
        reasons: list[str] = []
        for a, ev in evs.items():
            if ev is None:
                reasons.append(f"{a}: no run of this arm in this report")
            elif ev not in from_run or ev.run_dir.resolve() != run.resolve():
                reasons.append(f"{a}: read from run {ev.run_dir.name if ev.run_dir else '?'}, not from the "
                               f"comparison run {run.name} (a comparison decides on one run's rows of both arms)")
            else:
                reasons += [f"{a}: {why}" for why in ev.blocked()]
        a_ev, b_ev = evs[spec.arm_a], evs[spec.arm_b]
        one_run = not any("not from the comparison run" in r or "no run of this arm" in r for r in reasons)
        d = _comparison_decision(spec, a_ev, b_ev) if one_run else None
        if d is None and one_run:
            reasons += [f"{a}: the run ended at {ev.reads.n}/{ev.reads.n_planned} ({ev.state or 'state unknown'}) "
                        "before the comparison decided: its decision at completion is not known"
                        for a, ev in evs.items() if ev.reads.stopped_early and not ev.live]
        key = f"{sm.section.name}:comparison"
        if reasons:
            tail = (f" (the rows decide: {d.text}; a decision stands only on arms that ended VALID)"
                    if d is not None else "")
            v = ComparisonVerdict(key, sm.section.name, spec, run, d, UNDETERMINED, "; ".join(reasons) + tail,
                                  tuple(reasons))
        elif d is None:
            n = len(plan_prefix(a_ev.planned, {s: r for s, r in a_ev.by_seed.items() if s in b_ev.by_seed}))
            why = f"no decision on the shared plan prefix ({n} of {len(a_ev.planned)} seeds)"
            v = ComparisonVerdict(key, sm.section.name, spec, run, None, UNDETERMINED, why, (why,))
        else:
            v = ComparisonVerdict(key, sm.section.name, spec, run, d, FINAL)
        v.frozen_at = frozen_at(doc, sm.section.name)
        v.data_at, late = data_time(v.frozen_at, pair, evidence)
        if late:
            v.on_rows, v.verdict, v.why = (v.label if v.verdict != FINAL else v.rows_decide), EXPLORATORY, late
        out.append(v)
    return out


def _comparison_decision(spec: ComparisonSpec, a_ev: ArmEvidence, b_ev: ArmEvidence) -> Decision | None:
    """The registered comparison on the arms' rows as the plan reads them: the pooled rates when it decides on
    them (`read_variant: pooled`), else the read variant's rows."""
    if a_ev.pooled is not None and b_ev.pooled is not None:
        return pooled_comparison_decision(spec, [*a_ev.pooled.rows, *b_ev.pooled.rows], a_ev.pooled.manifest,
                                          a_ev.planned)
    return decide(spec, a_ev.by_seed, b_ev.by_seed, a_ev.planned)


# ---------------------------------------------------------------- judging


@dataclass
class Judgement:
    verdicts: list[Verdict]
    sequential: list[SequentialVerdict]
    comparisons: list[ComparisonVerdict] = field(default_factory=list)

    def by_key(self) -> dict[str, Verdict]:
        return {v.key: v for v in self.verdicts}

    def comparison_of(self, spec: ComparisonSpec) -> ComparisonVerdict | None:
        return next((c for c in self.comparisons if c.spec == spec), None)


def arms_read(rule: Rule, evidence: Mapping[str, ArmEvidence], doc: Document | None = None) -> list[str]:
    """The arms a rule reads: those it names and the registered comparator of each arm whose paired reads it names."""
    out = set(rule.arms())
    for c in rule.clauses:
        for o in (c.left, c.right):
            if isinstance(o, tuple) and o[1] in COMPARATOR_READS:
                comp = _comparator_name(o[0], evidence, doc)
                if comp:
                    out.add(comp)
    return sorted(out)


def _comparator_name(arm: str, evidence: Mapping[str, ArmEvidence], doc: Document | None) -> str | None:
    ev = evidence.get(arm)
    if ev is not None and ev.comparator:
        return ev.comparator
    if doc is not None:
        comps = doc.comparators_for(arm)
        return comps[0].name if comps else None
    return None


def judge(doc: Document, evidence: Mapping[str, ArmEvidence]) -> Judgement:
    """Every registered rule, sequential test and comparison, judged on the evidence of every arm each reads."""
    sequential = _sequential_verdicts(doc, evidence)
    comparisons = _comparison_verdicts(doc, evidence)
    stops = _stop_texts(evidence, sequential, comparisons)
    verdicts = [judge_rule(doc, key, rule, evidence, stops=stops) for key, rule in doc.registered_rules()]
    pairs = [{sm.comparison.arm_a, sm.comparison.arm_b} for sm in doc.sections
             if sm.comparison is not None and sm.section.sealed]
    for v in verdicts:  # the plan decides these arms by its registered comparison: a rule over them is a read
        v.descriptive = any(set(v.rule.arms()) <= pair for pair in pairs)
    return Judgement(verdicts, sequential, comparisons)


def _stop_texts(evidence: Mapping[str, ArmEvidence], sequential: list[SequentialVerdict],
                comparisons: list[ComparisonVerdict]) -> dict[str, str]:
    """{arm: what its registered stop was, in words, whole}: the decision recomputed from the rows, never
    status.json's stop detail (a one-line record, cut at its length limit)."""
    out = {}
    for a, ev in evidence.items():
        if ev.stopped_by != rd.BY_DECIDED:
            continue
        how = _stop_kind(ev.stop_detail)
        if ev.stop_detail.startswith(COMPARISON_STOP):
            c = next((c for c in comparisons if a in (c.spec.arm_a, c.spec.arm_b)), None)
            if c is not None:
                how += f": {c.rows_decide}"
        elif ev.stop_detail.startswith(SEQUENTIAL_STOP):
            sv = next((x for x in sequential if x.arm == a and x.decision is not None), None)
            if sv is not None:
                how += f": {sv.decision.text}"
        out[a] = how
    return out


def judge_rule(doc: Document | None, key: str, rule: Rule, evidence: Mapping[str, ArmEvidence], *,
               stops: Mapping[str, str] | None = None) -> Verdict:
    """One rule's verdict; a rule whose section was frozen after the data it reads existed is exploratory."""
    v = _judge_on_rows(doc, key, rule, evidence, stops or {})
    v.frozen_at = frozen_at(doc, rule.section)
    v.data_at, late = data_time(v.frozen_at, v.arms, evidence)
    if late:
        v.on_rows, v.verdict, v.why = v.label, EXPLORATORY, late
    return v


def _judge_on_rows(doc: Document | None, key: str, rule: Rule, evidence: Mapping[str, ArmEvidence],
                   stops: Mapping[str, str]) -> Verdict:
    arms = arms_read(rule, evidence, doc)
    reasons: list[str] = []
    for a in arms:
        ev = evidence.get(a)
        if ev is None:
            reasons.append(f"{a}: no run of this arm in this report")
        else:
            reasons += [f"{a}: {why}" for why in ev.blocked()]
    values = {a: _values(ev) for a, ev in evidence.items()}
    states = {a: prefix_state(evidence[a]) for a in rule.arms() if a in evidence and not evidence[a].external}
    settled = curtail.settle_rule(rule, states)
    plain = evaluate_rule(rule, values)
    if settled.settled:
        at = _settled_at(rule, evidence, states)
        short = [a for a in rule.arms() if evidence[a].reads.stopped_early]
        registered = any(evidence[a].stopped_by == rd.BY_DECIDED for a in rule.arms())
        # "by curtailment" only where the registered curtailment ended the run early: a rule that every
        # planned seed was read for was decided by its rows, whenever it stopped being able to change
        how = ("" if not short else f"decided at {at} by the registered curtailment" if registered
               else f"settled at {at}: no completion of the plan could change it")
        if reasons:
            return _verdict(plain, key, arms, UNDETERMINED, "; ".join(reasons) + f" (settled {settled.verdict} at {at}, "
                            "but a decision never stands on an arm that cannot bear one)",
                            reasons=reasons, decided=how)
        # every planned row read: nothing was curtailed (the plan may not even register it), so the
        # detail says only when the verdict stopped being able to change ("settled at 1/6 by curtailment"
        # on a plan without curtailment read as if the run had been cut short)
        detail = (f"{settled.verdict} whatever the remaining seeds do; on the rows read: {plain.detail}" if short else
                  f"{plain.detail}; fixed from {at} on: no later row could change it")
        return _verdict(plain, key, arms, settled.verdict, "", detail=detail, decided=how, early=bool(short))
    cut = [a for a in arms if a in evidence and evidence[a].stopped_by == rd.BY_DECIDED
           and evidence[a].reads.stopped_early]
    why = ""
    if cut:
        ev = evidence[cut[0]]
        how = stops.get(cut[0]) or _stop_kind(ev.stop_detail)
        why = (f"a registered stop ended arm {', '.join(cut)} at {ev.reads.n}/{ev.reads.n_planned} before this rule "
               f"was settled ({how}); its verdict at completion is not known")
    if reasons:  # every reason: an INVALID arm that a registered stop also cut short says both
        every = reasons + ([why] if why else [])
        return _verdict(plain, key, arms, UNDETERMINED, "; ".join(every), reasons=every)
    if cut:
        return _verdict(plain, key, arms, UNDETERMINED, why, reasons=[why],
                        detail=f"on the rows read: {plain.detail}" if plain.detail else "")
    if plain.verdict == UNDETERMINED:
        return _verdict(plain, key, arms, UNDETERMINED, plain.why, reasons=[plain.why])
    partial = {a: f"at {evidence[a].reads.n}/{evidence[a].reads.n_planned}" for a in arms
               if evidence[a].reads.stopped_early}
    if partial:
        part = [f"{p} for {a}" if len(arms) > 1 else p for a, p in partial.items()]
        return _verdict(plain, key, arms, PROVISIONAL, f"{', '.join(part)} ({plain.verdict} so far)")
    return _verdict(plain, key, arms, plain.verdict, "")


def _verdict(plain: Verdict, key: str, arms: list[str], verdict: str, why: str, *, detail: str | None = None,
             reasons: list[str] | None = None, decided: str = "", early: bool = False) -> Verdict:
    return Verdict(plain.rule, verdict, plain.detail if detail is None else detail, why, key=key,
                   arms=tuple(arms), reasons=tuple(reasons or ()), decided=decided, early=early)


def _values(ev: ArmEvidence) -> dict:
    """The reads a rule may name of this arm; with a comparator run read, its paired reads too, even with
    no shared seed (then shared_seeds is 0 and the deltas, which need a pair, are not available)."""
    v = dict(ev.reads.values())
    if ev.paired is not None:
        v.update(ev.paired.values())
    return v


def _settled_at(rule: Rule, evidence: Mapping[str, ArmEvidence], states: dict) -> str:
    """'5/20' (the first plan prefix of a one-arm rule at which it settles), or each arm's prefix."""
    named = sorted(rule.arms())
    if len(named) != 1:
        return ", ".join(f"{a} {states[a].done}/{states[a].planned}" for a in named if a in states)
    a = named[0]
    ev = evidence[a]
    prefix = ev.prefix
    lo, hi = 0, len(prefix)  # settlement only narrows as rows come in: the first settled prefix, by bisection
    while lo < hi:
        mid = (lo + hi) // 2
        st = curtail.state_from_rows(prefix[:mid], ev.planned, ev.interval)
        if curtail.settle_rule(rule, {a: st}).settled:
            hi = mid
        else:
            lo = mid + 1
    return f"{lo}/{len(ev.planned)}"


def _sequential_verdicts(doc: Document, evidence: Mapping[str, ArmEvidence]) -> list[SequentialVerdict]:
    out = []
    for sm in doc.sections:
        spec = Sprt.from_dict(sm.gates.sequential) if sm.section.sealed else None
        if spec is None:
            continue
        for a in sm.arms:
            key = f"{sm.section.name}:sequential:{a.name}"
            ev = evidence.get(a.name)
            if ev is None:
                out.append(SequentialVerdict(key, a.name, sm.section.name, None, UNDETERMINED,
                                             "no run of this arm in this report"))
                continue
            d = (pooled_sequential_decision(spec, ev.pooled.rows, ev.pooled.manifest, ev.planned) if ev.pooled
                 else sequential_decision(spec, ev.planned, ev.by_seed))
            blocked = ev.blocked()
            if d is not None and not blocked:
                v = SequentialVerdict(key, a.name, sm.section.name, d, FINAL, d.text)
            elif d is not None:
                v = SequentialVerdict(key, a.name, sm.section.name, d, UNDETERMINED,
                                      "; ".join(blocked) + f" (the test reached {d.decision} at "
                                      f"{d.at}/{d.total}, but a decision never stands on such an arm)")
            else:
                n = len(ev.prefix)
                why = "; ".join(blocked) if blocked else (
                    f"no decision by the last planned seed ({n}/{len(ev.planned)})" if n == len(ev.planned)
                    else f"no boundary crossed in the first {n} seeds of the plan ({ev.reads.n} rows read)")
                v = SequentialVerdict(key, a.name, sm.section.name, None, UNDETERMINED, why)
            v.frozen_at = frozen_at(doc, sm.section.name)
            v.data_at, late = data_time(v.frozen_at, (a.name,), evidence)
            if late:
                v.on_rows, v.verdict, v.why = v.label, EXPLORATORY, late
            out.append(v)
    return out
