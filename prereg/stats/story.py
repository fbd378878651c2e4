"""One run's story, judged once: its state, its validity and the plan's decision, for every surface.

The report builds a `Story` per run directory from the verdict engine's evidence and judgement
(prereg/stats/verdict.py) and records it in results.json (`story`); results.md, the terminal's
summary, results.html, the Discord results post and the console render it and derive nothing of
their own, so one run reads the same everywhere, in the same words:

    done · VALID · steady better than clumsy (the registered comparison, decided at 12/60 seeds)

- **state**: the run's state as every reader shows it (prereg/rundir/runstate.py: a run whose process
  is gone without a final state has `died`, never "still running").
- **validity**: `VALID`, `INVALID` (each reason, arm by arm), or `not judged yet` while the run is live.
- **decision**: what the plan decides by. A comparison run's registered comparison; else each
  registered sequential test and decision rule that reads this run's arms. A rule beside a
  registered comparison of its arms is a *descriptive read*: shown, said to be one, never the
  headline. The words are the verdict engine's labels (HOLDS, does not hold, provisional,
  undetermined, exploratory; a comparison's outcome in its arms' names).
- **cost** (a comparison): the episodes run against the batch validate sized
  (prereg.stats.comparison_report.savings_words).
- **real** (an arm with registered real trials): the real read in one sentence, whether the sim can be
  trusted for this policy (prereg/stats/real_read.py); never part of the headline's validity, never
  pooled with the sim rows.

`Story.from_dict(results_json["story"])` reads it back (a surface renders a report it did not make).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from prereg import rundir as rd
from prereg.core.words import plural
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ
from prereg.stats.comparison import UNDECIDED
from prereg.stats.reads import DESCRIPTIVE_READ as DESCRIPTIVE
from prereg.stats.reads import EXPLORATORY, HOLDS, NOT_HOLDS, PROVISIONAL, UNDETERMINED
from prereg.stats.variants_compare import PooledDifference
from prereg.stats.verdict import FINAL

VALID, INVALID, PENDING = "VALID", "INVALID", "not judged yet"
VALIDITIES = (VALID, INVALID, PENDING)
COMPARISON, SEQUENTIAL, RULE = "comparison", "sequential test", "rule"
SEP = " · "  # between the headline's three parts, on every surface
MAX_SHOWN = 3  # decisions named in a headline; the rest are counted ("+2 more")


@dataclass(frozen=True)
class ArmStory:
    """One arm's part: its count and whether it can bear a verdict."""

    arm: str
    validity: str
    reasons: tuple[str, ...]
    successes: int
    n: int
    planned: int | None
    knock_aways: int = 0
    engaged: int = 0
    pooled: str = ""  # read_variant pooled: the pooled read the decision reads (VariantStory.pooled_words); k/n is base's

    def count_words(self, planned: bool = True) -> str:
        """'4/6 successes (of 10 planned)' (`planned`: with the plan's count when it differs); a plan that decides
        on the pooled rate leads with it, base's k/n after."""
        of = f" (of {self.planned} planned)" if planned and self.planned is not None and self.planned != self.n else ""
        if self.pooled:
            return f"{self.pooled}, what the decision reads (base {self.successes}/{self.n} successes{of})"
        return f"{self.successes}/{self.n} successes{of}"

    def line(self) -> str:
        return (f"{self.arm}: {self.count_words()}, {plural(self.knock_aways, 'knock-away')}, "
                f"{self.engaged} engaged · {self.validity}")


@dataclass(frozen=True)
class RealStory:
    """One arm's real read as every surface states it."""

    arm: str
    sentence: str  # RealRead.sentence(): real k/n, the prediction-powered interval, the rectifier verdict
    verdict: str | None  # optimistic | pessimistic | consistent | None (no trial read yet)
    registered: bool  # False: a provenance problem (named in the sentence)
    n: int
    planned: int


DECIDES, CAMERA_APART = "decides", "camera, apart"  # a variant's marks (VariantStory.tag)


@dataclass(frozen=True)
class VariantCell:
    """One variant's count in a crossed design (issue 48)."""

    variant: str
    successes: int
    n: int
    camera: bool = False  # it moves a camera: read apart unless the plan pools it
    interval: tuple[float, float] | None = None  # its 95% Wilson interval (prereg.stats.variants.VariantRead)


@dataclass(frozen=True)
class VariantStory:
    """One arm's reads over registered visual variants (prereg.stats.variants.VariantsRead), as every
    surface states them: per variant k/n, the pooled rate (the unweighted mean of the pooled variants'
    rates) with its interval, the variants read apart and the worst."""

    arm: str
    cells: tuple[VariantCell, ...]
    read_variant: str  # the variant the plan's decision reads
    pooled: tuple[str, ...] = ()
    pooled_rate: float | None = None
    pooled_interval: tuple[float, float] | None = None
    pooled_seeds: int = 0
    worst: str | None = None
    seeds_by_successes: tuple[int, ...] = ()  # index j: seeds on which j pooled variants succeeded

    @classmethod
    def of(cls, arm: str, read, read_variant: str) -> "VariantStory":
        """From a prereg.stats.variants.VariantsRead."""
        return cls(arm, tuple(VariantCell(v.variant, v.successes, v.n, v.camera, v.interval) for v in read.per_variant),
                   read_variant, tuple(read.pooled), read.pooled_rate, read.pooled_interval, read.pooled_seeds, read.worst,
                   tuple(read.successes_histogram()) if read.per_seed else ())

    def decides(self, variant: str) -> bool:
        """Whether the plan's decision reads `variant`: the read one, or each pooled one under a pooled read."""
        return variant in self.pooled if self.read_variant == POOLED_READ else variant == self.read_variant

    def note(self, c: VariantCell) -> str:
        """What a variant's row of the table says besides its count: decides, camera (read apart), worst."""
        tags = ["decides"] if c.variant == self.read_variant else []
        if self.read_variant == POOLED_READ and c.variant in self.pooled:
            tags.append("pooled")
        if c.camera:
            tags.append("camera, read apart" if c.variant not in self.pooled else "camera, pooled")
        if c.variant == self.worst:
            tags.append("worst")
        return ", ".join(tags)

    def seeds_words(self) -> str:
        """'seeds by variants succeeding: 0/3: 2, 1/3: 5, 2/3: 6, 3/3: 7' ('' before a seed has every pooled variant)."""
        m = len(self.seeds_by_successes) - 1
        return ("seeds by variants succeeding: " + ", ".join(f"{j}/{m}: {c}" for j, c in enumerate(self.seeds_by_successes))
                if self.seeds_by_successes else "")

    def pooled_words(self) -> str:
        """'pooled 0.62 (95% CI 0.50-0.73) over 4 variants, 20 seeds' (or that nothing is pooled yet)."""
        if self.pooled_rate is None or self.pooled_interval is None:
            return "pooled: no seed has a row on every pooled variant yet"
        lo, hi = self.pooled_interval
        tag = " (decides)" if self.read_variant == POOLED_READ else ""
        return (f"pooled {self.pooled_rate:.2f}{tag} (95% CI {lo:.2f}-{hi:.2f}) over "
                f"{plural(len(self.pooled), 'variant')}, {plural(self.pooled_seeds, 'seed')}")

    def reads_words(self) -> str:
        """What the decision and the counts read, for the Variants section's head."""
        if self.read_variant == POOLED_READ:
            return (f"The registered sequential test and comparison decide on the pooled rate; the counts above and "
                    f"every decision rule read `{BASE_VARIANT}` only")
        return f"The decision, the counts above and every rule read `{self.read_variant}` only"

    def tag(self, cell: VariantCell) -> str:
        """What a variant's count is marked with wherever it is shown: 'decides' (the variant the decision
        reads), 'camera, apart' (a camera variant the pooled rate leaves out), else ''."""
        if cell.variant == self.read_variant:
            return DECIDES
        return CAMERA_APART if cell.camera and cell.variant not in self.pooled else ""

    def sentence(self) -> str:
        """The arm's variant reads in one line: each variant's k/n (the one the decision reads marked),
        the pooled rate, the worst variant."""
        cells = []
        for c in self.cells:
            tag = self.tag(c)
            cells.append(f"{c.variant} {c.successes}/{c.n}{f' ({tag})' if tag else ''}")
        worst = f"; worst {self.worst}" if self.worst else ""
        return f"{self.arm}: {', '.join(cells)}; {self.pooled_words()}{worst}"


@dataclass(frozen=True)
class Ruling:
    """A registered judgement as it is stated: its word, what it judges, and whether the plan decides by it."""

    key: str
    kind: str  # COMPARISON | SEQUENTIAL | RULE
    word: str  # the verdict engine's word (HOLDS, does not hold, ...; a comparison: its outcome in words)
    label: str  # the verdict engine's whole label (why, how it was decided)
    subject: str  # what it judges, in words
    decides: bool = True  # False: a descriptive read beside the registered comparison
    action: str = ""  # a rule's "then"

    @property
    def said(self) -> str:
        """Its word and subject: 'HOLDS: if scripted.successes >= 1', 'steady better than clumsy (the registered ...)'."""
        return f"{self.word} ({self.subject})" if self.kind == COMPARISON else f"{self.word}: {self.subject}"

    @property
    def why(self) -> str:
        """What its label says besides its word ('(final: decided at 5/20 ...)', an undetermined's reasons)."""
        extra = self.label[len(self.word):] if self.label.startswith(self.word) else f" {self.label}"
        return extra.strip(" :")

    def line(self) -> str:
        """The ruling for a list under the headline: a decision with its why; a descriptive read, its word and
        subject, and that it is one (its why is in the decision rules' list)."""
        if not self.decides:
            return f"{self.said} ({DESCRIPTIVE})"
        return self.said + (f" {self.why}" if self.why and self.kind != COMPARISON else "")


@dataclass(frozen=True)
class Story:
    run: str
    state: str
    validity: str
    reasons: tuple[str, ...] = ()
    arms: tuple[ArmStory, ...] = ()
    rulings: tuple[Ruling, ...] = ()
    cost: str = ""
    generated_at: str = ""
    real: tuple[RealStory, ...] = ()
    variants: tuple[VariantStory, ...] = ()  # a crossed design's reads per arm (issue 48)
    variants_paired: tuple[PooledDifference, ...] = ()  # a crossed comparison run's pooled paired read (descriptive)

    @property
    def decisions(self) -> tuple[Ruling, ...]:
        return tuple(r for r in self.rulings if r.decides)

    @property
    def descriptive(self) -> tuple[Ruling, ...]:
        return tuple(r for r in self.rulings if not r.decides)

    @property
    def verdict(self) -> str:
        """The plan's decision in words: each deciding ruling's word and subject (the first MAX_SHOWN)."""
        ds = self.decisions
        if not ds:
            return "no registered decision reads this run"
        shown = [r.said for r in ds[:MAX_SHOWN]]
        more = f" (+{len(ds) - MAX_SHOWN} more)" if len(ds) > MAX_SHOWN else ""
        return "; ".join(shown) + more

    def basis(self) -> list[tuple[str, str]]:
        """What the headline rests on, (kind, words) a line, in the order results.md and the page list them:
        each arm's count and validity ("arm"), the cost ("cost"), every reason it is not VALID ("invalid"),
        each decision's why ("decision"), each descriptive read ("descriptive") and each arm's real read ("real")."""
        out = [("arm", a.line()) for a in self.arms]
        if self.cost:
            out.append(("cost", f"Cost: {self.cost}"))
        if self.validity == INVALID:
            out += [("invalid", f"Not VALID: {why}") for why in self.reasons]
        out += [("decision", f"Decision: {r.line()}") for r in self.decisions if r.why and r.kind != COMPARISON]
        out += [("descriptive", f"Descriptive: {r.line()}") for r in self.descriptive]
        out += [("real", f"Real trials: {r.sentence}") for r in self.real]
        out += [("variants", f"Variants: {v.sentence()}") for v in self.variants]
        out += [("variants", f"Variants: {p.sentence()}") for p in self.variants_paired]
        return out

    @property
    def headline(self) -> str:
        """'<state> · <validity> · <the plan's decision>': the one line every surface leads with."""
        return SEP.join((self.state, self.validity, self.verdict))

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(headline=self.headline, verdict=self.verdict)
        return d

    @classmethod
    def from_dict(cls, d: object) -> "Story | None":
        """A story recorded in results.json, or None when it is not one (an older report, an edited file)."""
        if not isinstance(d, dict):
            return None
        try:
            arms = tuple(ArmStory(str(a["arm"]), str(a["validity"]), tuple(map(str, a.get("reasons") or ())),
                                  int(a["successes"]), int(a["n"]),
                                  a["planned"] if type(a.get("planned")) is int else None,
                                  int(a.get("knock_aways") or 0), int(a.get("engaged") or 0), str(a.get("pooled") or ""))
                         for a in d.get("arms") or ())
            rulings = tuple(Ruling(str(r["key"]), str(r["kind"]), str(r["word"]), str(r.get("label") or ""),
                                   str(r["subject"]), r.get("decides") is not False, str(r.get("action") or ""))
                            for r in d.get("rulings") or ())
            real = tuple(RealStory(str(r["arm"]), str(r["sentence"]), r.get("verdict") if isinstance(r.get("verdict"), str)
                                   else None, r.get("registered") is True, int(r.get("n") or 0), int(r.get("planned") or 0))
                         for r in d.get("real") or ())
            variants = tuple(_variant_story(v) for v in d.get("variants") or ())
            paired = tuple(PooledDifference.from_dict(p) for p in d.get("variants_paired") or ())
            story = cls(str(d["run"]), str(d["state"]), str(d["validity"]), tuple(map(str, d.get("reasons") or ())),
                        arms, rulings, str(d.get("cost") or ""), str(d.get("generated_at") or ""), real, variants, paired)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return story if story.validity in VALIDITIES else None


def _variant_story(v: dict) -> VariantStory:
    cells = tuple(VariantCell(str(c["variant"]), int(c["successes"]), int(c["n"]), c.get("camera") is True,
                              _pair(c.get("interval"))) for c in v.get("cells") or ())
    return VariantStory(str(v["arm"]), cells, str(v["read_variant"]), tuple(map(str, v.get("pooled") or ())),
                        float(v["pooled_rate"]) if v.get("pooled_rate") is not None else None,
                        _pair(v.get("pooled_interval")),
                        int(v.get("pooled_seeds") or 0), v.get("worst") if isinstance(v.get("worst"), str) else None,
                        tuple(int(x) for x in v.get("seeds_by_successes") or ()))


def _pair(ci) -> tuple[float, float] | None:
    return (float(ci[0]), float(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None


# ---------------------------------------------------------------- building it


def validity_of(evidence) -> tuple[str, tuple[str, ...]]:
    """(VALID | INVALID | not judged yet, every reason) of one arm's evidence (prereg.stats.verdict.ArmEvidence)."""
    if evidence.live:
        return PENDING, (f"the run is still {evidence.state}",)
    return (VALID, ()) if not evidence.problems else (INVALID, tuple(evidence.problems))


def build_story(run: str, evidence: dict, judgement, comparisons=(), *, generated_at: str = "", real=(),
                variants=(), variants_paired=()) -> Story:
    """The story of one run directory: `evidence` {arm: ArmEvidence} of its arms in the registration's
    order, the report's `judgement` (prereg.stats.verdict.Judgement), its comparison reads
    (prereg.stats.comparison_report.ComparisonRead, the verdict attached), its arms' real reads
    (prereg.stats.real_read.RealRead) and, in a crossed design, its arms' variant reads (VariantStory) and
    a comparison run's pooled paired read (prereg.stats.variants_compare.PooledDifference)."""
    arms = list(evidence)
    states = {ev.state for ev in evidence.values()}
    state = next(iter(states)) if len(states) == 1 else ", ".join(f"{a} {ev.state}" for a, ev in evidence.items())
    parts = []
    for a, ev in evidence.items():
        v, why = validity_of(ev)
        r = ev.reads
        pooled = next((vs.pooled_words() for vs in variants if vs.arm == a and vs.read_variant == POOLED_READ), "")
        parts.append(ArmStory(a, v, why, r.successes, r.n, r.n_planned, r.knock_aways, r.engaged, pooled))
    words = [p.validity for p in parts]
    validity = PENDING if PENDING in words else INVALID if INVALID in words else VALID
    reasons = tuple(f"{p.arm}: {why}" if len(parts) > 1 else why for p in parts for why in p.reasons)
    rulings: list[Ruling] = []
    cost = ""
    for c in comparisons:
        v = c.verdict
        if v is None or not {v.spec.arm_a, v.spec.arm_b} <= set(arms):
            continue
        stands = v.verdict == FINAL and v.decision is not None
        word = v.decision.text.split(" at ", 1)[0] if stands else v.verdict
        how = "the registered comparison"
        if stands and c.decided_at:
            how += (f", at max seeds ({c.decided_at}/{c.max_seeds})" if v.decision.outcome == UNDECIDED
                    else f", decided at {c.decided_at}/{c.max_seeds} seeds")
        rulings.append(Ruling(v.key, COMPARISON, word, c.decision_text(), how))
        cost = c.savings_text()
    for s in judgement.sequential:
        if s.arm in arms:
            rulings.append(Ruling(s.key, SEQUENTIAL, _word(s.verdict, s.label), s.label,
                                  f"the registered sequential test of arm {s.arm}"))
    for v in judgement.verdicts:
        named = set(v.rule.arms())
        if not named & set(arms):
            continue  # another run's rule
        rulings.append(Ruling(v.key, RULE, _word(v.verdict, v.label), v.label, f"if {v.rule.condition}",
                              decides=not v.descriptive, action=v.rule.action))
    reals = tuple(RealStory(r.arm, r.sentence(), r.verdict, r.registered, r.n, r.planned) for r in real if r is not None)
    return Story(run, state or rd.UNKNOWN, validity, reasons, tuple(parts), tuple(rulings), cost, generated_at, reals,
                 tuple(variants), tuple(variants_paired))


def _word(verdict: str, label: str) -> str:
    """A ruling's word: the verdict engine's own (HOLDS, does not hold, provisional, undetermined, exploratory),
    else its label's head ('final: H1 accepted at 2/20')."""
    if verdict in (HOLDS, NOT_HOLDS, PROVISIONAL, UNDETERMINED, EXPLORATORY) or not label:
        return verdict
    return label.split(" (", 1)[0]


__all__ = ["ArmStory", "RealStory", "Ruling", "Story", "VariantCell", "VariantStory",
           "build_story", "validity_of", "VALID", "INVALID", "PENDING", "DESCRIPTIVE",
           "SEP"]
