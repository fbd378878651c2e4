"""The model a machine reads from a pre-registration: arms, protocol, reads, gates, rules, per section."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg.comparison import ComparisonSpec
from prereg.errors import Problem
from prereg.gates import GateSpec
from prereg.layout import Layout, Section
from prereg.rules import Rule, rule_key


@dataclass(frozen=True)
class Arm:
    name: str
    section: str  # "base" | "amendment-N": the frozen section that declares it
    line: int
    policy: str
    checkpoint: str | None = None
    revision: str | None = None
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


@dataclass(frozen=True)
class Protocol:
    seeds: tuple[int, ...]
    episode_seconds: float
    workers: int = 1
    video_draw: str = "0"  # prereg.video_draw's written form; "0" when the protocol does not say
    record_predicts: bool = False  # write predicts.jsonl (engine/predict_trail.py)
    env: str | None = None  # the scene and task every arm runs (None: boat-on-disk, the engine's default)
    env_sha256: str | None = None  # its content hash as frozen: a run on a changed env is INVALID


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
    """`reads.power`: what the plan assumes, so validate/freeze can say what its seeds can detect (prereg/power.py).

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
    comparison: ComparisonSpec | None = None  # `comparison:` (prereg/comparison.py), this section's own


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
