"""The model a machine reads from a pre-registration: arms, protocol, reads, gates, rules, per section."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg.core.errors import Problem
from prereg.core.vocabulary import COVERAGE_MAX_UNCOVERED, FIRST_ACTION_MAX_DEG, RIG_TABLE_EPISODE_SECONDS, RIG_TABLE_SEEDS
from prereg.document.comparison_spec import ComparisonSpec
from prereg.document.layout import Layout, Section
from prereg.document.real_spec import RealSpec
from prereg.document.rules import Rule, rule_key
from prereg.rundir.status import GateSpec


@dataclass(frozen=True)
class Arm:
    name: str
    section: str  # "base" | "amendment-N": the frozen section that declares it
    line: int
    policy: str
    checkpoint: str | None = None
    revision: str | None = None
    fast_revision: str | None = None  # molmoact2-discrete: the release FAST tokenizer's commit
    decode: str | None = None
    convmap: str | None = None
    convmap_overrides: tuple[str, ...] = ()
    norm_tag: str | None = None
    dtype: str | None = None
    workers: int | None = None  # None: the protocol's
    flow_steps: int | None = None
    task: str | None = None
    env: str | None = None  # the scene and task (engine.envs name or env file); None: the protocol's
    env_sha256: str | None = None  # its content hash as frozen
    grasp_miss: float | None = None  # the scripted oracle's skill knob (engine/policies/scripted.py)
    grasp_drop: float | None = None  # ... and its drop knob (let go after the lift)
    features: tuple[str, ...] = ()  # lerobot: FEATURE=SOURCE, a checkpoint input fed by another sim input


@dataclass(frozen=True)
class CoverageTripwire:
    """`gates.tripwires.coverage`: the mapped rig range must sit inside the release box.

    `span_limited`: joints whose rig span is wider than the release's (no offset gets under the
    limit) that may warn instead of fail; a joint listed that is not span-limited still fails."""

    max_uncovered: float = COVERAGE_MAX_UNCOVERED
    span_limited: tuple[str, ...] = ()
    rig_seeds: tuple[int, ...] = RIG_TABLE_SEEDS  # the scripted oracle's rollouts on the run's scene
    rig_episode_seconds: float = RIG_TABLE_EPISODE_SECONDS


@dataclass(frozen=True)
class FirstActionTripwire:
    """`gates.tripwires.first_action`: mean |first action - state| at the reset pose, per arm joint,
    against max(2 x anchor, 5 deg) with an anchor, else `max_deg`."""

    seeds: tuple[int, ...] | None = None  # None: the first FIRST_ACTION_SEEDS of the protocol's
    anchor_deg: tuple[float, ...] | None = None  # one per joint (JOINT_NAMES order)
    max_deg: float = FIRST_ACTION_MAX_DEG


@dataclass(frozen=True)
class Tripwires:
    """`gates.tripwires`: the shim's tripwires a plan registers; each is optional."""

    coverage: CoverageTripwire | None = None
    first_action: FirstActionTripwire | None = None

    def as_dict(self) -> dict:
        """The JSON form the gates (and so the manifest) carry: `tripwires_from_dict` reads it back."""
        out: dict = {}
        if self.coverage is not None:
            c = self.coverage
            out["coverage"] = {"max_uncovered": c.max_uncovered, "span_limited": list(c.span_limited),
                               "rig_seeds": list(c.rig_seeds), "rig_episode_seconds": c.rig_episode_seconds}
        if self.first_action is not None:
            f = self.first_action
            out["first_action"] = {"seeds": None if f.seeds is None else list(f.seeds),
                                   "anchor_deg": None if f.anchor_deg is None else list(f.anchor_deg),
                                   "max_deg": f.max_deg}
        return out


def tripwires_from_dict(d: object) -> Tripwires | None:
    """The registered tripwires from their JSON form (a manifest's gates); None when none are registered.
    Written by `Tripwires.as_dict` from a validated plan: a field of the wrong type keeps its default."""
    if not isinstance(d, dict) or not d:
        return None

    def nums(v, kind=float):
        return tuple(kind(x) for x in v) if isinstance(v, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) else None

    cov, first = d.get("coverage"), d.get("first_action")
    coverage = first_action = None
    if isinstance(cov, dict):
        coverage = CoverageTripwire(
            max_uncovered=float(cov["max_uncovered"]) if isinstance(cov.get("max_uncovered"), (int, float)) else COVERAGE_MAX_UNCOVERED,
            span_limited=tuple(str(j) for j in cov.get("span_limited") or () if isinstance(j, str)),
            rig_seeds=nums(cov.get("rig_seeds"), int) or RIG_TABLE_SEEDS,
            rig_episode_seconds=float(cov["rig_episode_seconds"]) if isinstance(cov.get("rig_episode_seconds"), (int, float))
            else RIG_TABLE_EPISODE_SECONDS)
    if isinstance(first, dict):
        first_action = FirstActionTripwire(
            seeds=nums(first.get("seeds"), int), anchor_deg=nums(first.get("anchor_deg")),
            max_deg=float(first["max_deg"]) if isinstance(first.get("max_deg"), (int, float)) else FIRST_ACTION_MAX_DEG)
    if coverage is None and first_action is None:
        return None
    return Tripwires(coverage, first_action)


def seeds_text(seeds) -> str:
    """A plan's seeds in words: 'seeds 0-99 (100)', or the first twelve and the count."""
    s = list(seeds)
    if s and s == list(range(s[0], s[0] + len(s))):
        return f"seeds {s[0]}-{s[-1]} ({len(s)})"
    return f"seeds {','.join(map(str, s[:12]))}{'...' if len(s) > 12 else ''} ({len(s)})"


def describe_tripwires(d: object) -> str | None:
    """The registered tripwires in one line (show, the launch dialog, the launch post); None when none."""
    plan = tripwires_from_dict(d)
    if plan is None:
        return None
    bits = []
    if plan.coverage is not None:
        c = plan.coverage
        bits.append(f"coverage <= {c.max_uncovered:.0%} uncovered"
                    + (f" (span-limited allowed: {', '.join(c.span_limited)})" if c.span_limited else ""))
    if plan.first_action is not None:
        f = plan.first_action
        anchor = None if f.anchor_deg is None else sorted(set(f.anchor_deg))
        bits.append("first action vs state " + (
            f"(anchor {anchor[0]:g} deg)" if anchor and len(anchor) == 1 else
            "(anchor per joint)" if anchor else f"(<= {f.max_deg:g} deg)"))
    return "tripwires before the first episode: " + ", ".join(bits)


@dataclass(frozen=True)
class Protocol:
    seeds: tuple[int, ...]
    episode_seconds: float
    workers: int = 1
    video_draw: str = "0"  # prereg.core.video_draw's written form; "0" when the protocol does not say
    record_predicts: bool = False  # write predicts.jsonl (engine/record/predict_trail.py)
    pass_env: tuple[str, ...] = ()  # environment variables the workers get by name (engine/process/environ.py)
    env: str | None = None  # the scene and task every arm runs (None: boat-on-disk, the engine's default)
    env_sha256: str | None = None  # its content hash as frozen: a run on a changed env is INVALID
    success_field: str = "success"  # what the reads count as a success (prereg.rundir.rows.SUCCESS_FIELDS)
    # a crossed design (issue 48): the registered visual variants every seed also runs on (names, in order;
    # `base` always runs), those declared inline (name -> declaration, as an env file's `variants:` entry),
    # the variant the decision reads and whether the pooled read averages camera variants too
    variants: tuple[str, ...] = ()
    variant_declarations: dict = field(default_factory=dict, compare=False, hash=False)
    read_variant: str = "base"
    pool_cameras: bool = False


@dataclass(frozen=True)
class Validity:
    reset_strikes_max: int = 0
    zero_fallback_rate_max: float | None = None
    error_rows_max: int = 0


@dataclass(frozen=True)
class Comparator:
    """What an arm's per-seed deltas are paired against: another arm, or a run directory."""

    arm: str | None = None
    run: str | None = None  # relative to the document's folder
    label: str = ""
    for_arms: tuple[str, ...] | None = None  # None: every arm of the section but itself
    line: int | None = None

    @property
    def name(self) -> str:
        return self.arm or self.label or Path(self.run or "comparator").name


@dataclass(frozen=True)
class PowerPlan:
    """`reads.power`: what the plan assumes, so validate/freeze can say what its seeds can detect (prereg/stats/power.py).

    Information only: nothing at run or report time reads it."""

    arm_rates: tuple[tuple[str, float], ...] = ()  # assumed success rate per arm
    default_rate: float | None = None  # one assumed rate for every arm
    min_success_effect: float | None = None  # the rate difference worth detecting (absolute, e.g. 0.15)
    min_progress_cm: float | None = None  # the paired progress_final_cm delta worth detecting, cm
    delta_sd_cm: float | None = None  # SD of the per-seed paired progress_final_cm delta, cm
    pilot: str | None = None  # or a pilot run directory to estimate it from, relative to the document
    line: int | None = None

    @property
    def rates(self) -> dict[str, float]:
        return dict(self.arm_rates)


@dataclass(frozen=True)
class Reads:
    primary: str = "successes"
    interval: str = "both"
    validity: Validity = Validity()
    secondary: tuple[str, ...] = ()
    comparators: tuple[Comparator, ...] = ()
    power: PowerPlan | None = None  # optional; None: the plan assumes nothing (validate shows illustrative figures)
    real: RealSpec | None = None  # reads.real: registered real trials and their prediction-powered read (real_spec.py)


@dataclass
class SectionModel:
    section: Section
    title: str
    arms: list[Arm]
    protocol: Protocol | None
    gates: GateSpec
    gates_raw: dict
    reads: Reads
    rules: list[Rule]
    comparison: ComparisonSpec | None = None  # `comparison:` (prereg/document/comparison_spec.py), this section's own
    # where each protocol/gates/reads key in force comes from: "gates.decided" -> "base". An amendment's
    # keys merge one by one over the section before it (docs/prereg.md): a key it does not set is inherited
    sources: dict[str, str] = field(default_factory=dict)

    def inherited(self, part: str) -> dict[str, str]:
        """{key: section} of `part` ('protocol', 'gates', 'reads') this section takes from an earlier one."""
        return {k.split(".", 1)[1]: src for k, src in self.sources.items()
                if k.startswith(part + ".") and src != self.section.name}


@dataclass
class Document:
    path: Path
    text: str
    layout: Layout
    prereg_id: str = ""
    title: str = ""
    created: str = ""
    sections: list[SectionModel] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def arms(self) -> list[Arm]:
        return [a for s in self.sections for a in s.arms]

    def find_arm(self, name: str) -> tuple[Arm, SectionModel] | None:
        for s in self.sections:
            for a in s.arms:
                if a.name == name:
                    return a, s
        return None

    def section_model(self, name: str) -> SectionModel | None:
        return next((s for s in self.sections if s.section.name == name), None)

    def comparators_for(self, arm: str) -> list[Comparator]:
        found = self.find_arm(arm)
        if not found:
            return []
        _, sm = found
        out = []
        for c in sm.reads.comparators:
            if c.arm == arm:
                continue
            if c.for_arms is None or arm in c.for_arms:
                out.append(c)
        return out

    def rules(self) -> list[Rule]:
        return [r for s in self.sections for r in s.rules]

    def registered_rules(self) -> list[tuple[str, Rule]]:
        """(key, rule) for the decision rules of the frozen sections, in order (a draft registers nothing).
        The key (`rule_key`) is a rule's identity everywhere: its text may repeat across sections."""
        return [(rule_key(sm.section.name, i), r) for sm in self.sections if sm.section.sealed
                for i, r in enumerate(sm.rules)]
