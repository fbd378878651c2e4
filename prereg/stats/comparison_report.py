"""A comparison run read by the report: one run directory, both arms, and the registered comparison.

`fontaine-eval --prereg DOC --arms A,B` writes both arms' rows into one directory (the manifest's
`arm` is "A-vs-B", its `arms` the two, every row carries its `arm`; status.json's `comparison` is
the driver's latest `prereg.stats.comparison.Decision`). The report reads such a directory as two arms
(prereg/outputs/: the rows split by their `arm`, each arm's provenance through
`prereg.rundir.Manifest.arm_view`) and, once, the comparison itself: what this module reads.

- `comparison_runs(doc, runs)`: `--run A=DIR` (or `--run A-vs-B=DIR`) for a comparison run names
  both of its arms; an arm given its own `--run` keeps it.
- `read_comparison(...)`: the decision, recomputed from the rows by the code the driver ran after
  every row (`decide`), with status.json's record of it beside (`record_problems`: any difference is
  a provenance problem of both arms, never the decision); whether the run stopped on it (then every
  fixed-n read of its arms is "read after an anytime-valid stop"), the episodes run, and the
  episodes saved against the batch (the batch validate sized for the registered power, else max_seeds, x 2
  minus the episodes run: in-flight episodes that finished after the decision count as run), and the
  path over seeds (`prereg.stats.comparison.path`)
  the console draws. Whether the decision stands (both arms VALID, ended, read from this run; the
  comparison frozen before the data) is the verdict engine's (`prereg.stats.verdict.ComparisonVerdict`),
  attached as `.verdict` by the report.

Pure but for reading the run directory's small files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.words import plural
from prereg.document.comparison_spec import ComparisonSpec
from prereg.document.model import Document
from prereg.rundir.rows import rows_of_variant, variant_of
from prereg.stats.comparison import UNDECIDED, VOID, ComparisonPath, batch_episodes, decide, episodes_saved, path
from prereg.stats.operating import sized_batch_seeds
from prereg.stats.variants_decide import pooled_comparison_decision, reads_pooled
from prereg.stats.verdict import COMPARISON_STOP, FINAL, ComparisonVerdict

AFTER_STOP = "read after an anytime-valid stop"


def comparison_runs(doc: Document, runs: dict[str, Path]) -> dict[str, Path]:
    """`runs` with each comparison run standing for both of its arms (an explicit `--run ARM=` wins);
    a key that names the run's label ("A-vs-B") rather than an arm is replaced by the two arms."""
    known = {a.name for a in doc.arms()}
    out = {k: Path(d) for k, d in runs.items() if k in known}
    for key, d in runs.items():
        m, _ = rd.read_manifest(d)  # only the manifest says a run is a comparison run
        if m is not None and m.is_comparison and (key in m.arms or key == m.arm):
            for arm in m.arms:
                out.setdefault(arm, Path(d))
        elif key not in known:
            out[key] = Path(d)  # not an arm: the report says so (no arm 'x' to report)
    return out


def registered_comparison(doc: Document, arms) -> ComparisonSpec | None:
    """The frozen comparison of these two arms (the latest sealed section's, as fontaine-eval --arms picks it)."""
    found = [sm.comparison for sm in doc.sections
             if sm.section.sealed and sm.comparison is not None
             and {sm.comparison.arm_a, sm.comparison.arm_b} == set(arms)]
    return found[-1] if found else None


@dataclass
class ComparisonRead:
    """The registered comparison of one comparison run, as the report states it."""

    spec: ComparisonSpec
    run_dir: Path
    decision: dict | None  # Decision.as_dict() (+ episodes_saved) decided from the rows by the driver's code; None: none
    record: dict | None  # status.json's `comparison`: the driver's record of its decision (provenance, not the decision)
    stopped_by_decision: bool  # the run stopped because the comparison decided (its reads: after an anytime-valid stop)
    state: str | None
    episodes_run: int  # rows of either arm, one per (arm, seed) (a crossed design: per (arm, variant, seed))
    max_seeds: int
    path: ComparisonPath
    record_problems: list[str] = field(default_factory=list)  # where the record and the rows disagree
    verdict: "ComparisonVerdict | None" = None  # the verdict engine's (prereg.stats.verdict), attached by the report
    sized_seeds: int | None = None  # the batch validate sized for the registered power (None: no design to size it)
    cancelled: int = 0  # episodes in flight at the decision, cancelled by the driver (status.json cancelled_seeds)
    per_seed: int = 1  # the episodes a seed costs an arm: 1, or 1 + its variants in a crossed design

    @property
    def recorded(self) -> bool:
        """The driver recorded a decision (status.json)."""
        return self.record is not None

    @property
    def batch_seeds(self) -> int:
        """The batch the savings are counted against: the one validate sized, else max seeds."""
        return batch_basis(self.sized_seeds, self.max_seeds)

    @property
    def batch(self) -> int:
        return batch_episodes(self.batch_seeds, self.per_seed)

    @property
    def saved(self) -> int:
        return episodes_saved(self.batch_seeds, self.episodes_run, self.per_seed)

    @property
    def outcome(self) -> str | None:
        """What is stated: the judged outcome (undetermined or exploratory when the decision cannot stand),
        or, before judging, what the rows decide."""
        if self.verdict is not None:
            return self.verdict.outcome
        return (self.decision or {}).get("outcome")

    @property
    def decided_at(self) -> int | None:
        at = (self.decision or {}).get("at")
        return at if type(at) is int and (self.decision or {}).get("outcome") not in (None, VOID) else None

    @property
    def title(self) -> str:
        return f"{self.spec.arm_a} vs {self.spec.arm_b}"  # the registered order, as the launch and the run name them

    def rows_text(self) -> str:
        """What the rows decide, in words (the driver's code on this run's rows)."""
        if self.decision is None:
            return f"no decision yet: {self.path.evidence_text()}"
        return str(self.decision.get("text") or self.decision.get("outcome"))

    def decision_text(self) -> str:
        """The decision as stated: the verdict engine's label once judged, else what the rows decide."""
        if self.verdict is None:
            return self.rows_text()
        if self.verdict.verdict != FINAL and self.decision is not None and self.verdict.decision is None:
            return f"{self.verdict.label}; this run's rows decide: {self.rows_text()}"
        return self.verdict.label

    def record_text(self) -> str:
        """The driver's record beside the decision: agreeing, absent, or each difference."""
        if self.record_problems:
            return "; ".join(self.record_problems)
        if self.record is None:
            return ("status.json records no decision (the driver recorded none)" if self.decision is not None
                    else "status.json records no decision, and the rows decide none")
        return "status.json records the same decision"

    def savings_text(self) -> str:
        """'33 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): 17 saved'."""
        return savings_words(self.episodes_run, self.sized_seeds, self.max_seeds, self.cancelled, self.per_seed)

    def stop_label(self) -> str:
        """Why every fixed-n read of this run's arms is labelled, or '' when the run did not stop on the decision."""
        if not self.stopped_by_decision:
            return ""
        at = self.decided_at
        return (f"{AFTER_STOP}: the run stopped when the registered comparison decided"
                + (f" at {at}/{self.max_seeds} seeds" if at else "")
                + "; the counts and intervals are the fixed-n ones on the episodes run, not anytime-valid "
                "(the comparison's decision is)")

    def lines(self) -> list[str]:
        """The comparison in words: the test, the decision, the driver's record, the savings (one item a line)."""
        out = [f"registered: {self.spec.describe()}, max {self.max_seeds} seeds per arm",
               f"decision: {self.decision_text()}",
               f"the driver's record: {self.record_text()}"]
        if (self.decision or {}).get("outcome") == UNDECIDED:
            out.append(f"no decision before max seeds: {self.savings_text()}")
        else:
            out.append(self.savings_text())
        if (self.decision or {}).get("outcome") == VOID:
            out.append("void: the anytime-valid read does not hold for this run; its fixed-n reads stand alone")
        return out

    def markdown(self) -> list[str]:
        out = [f"## Comparison: {self.title} (run `{self.run_dir.name}`)", ""]
        out += [f"- {line[0].upper()}{line[1:]}" for line in self.lines()]
        if self.stopped_by_decision:
            label = self.stop_label()
            out.append(f"- **{label[0].upper()}{label[1:]}**.")
        out.append("")
        return out

    def as_dict(self) -> dict:
        return {"arms": [self.spec.arm_a, self.spec.arm_b], "run_dir": str(self.run_dir),
                "registered": self.spec.as_dict(), "decision": self.decision, "record": self.record,
                "recorded": self.recorded, "record_problems": list(self.record_problems),
                "verdict": self.verdict.as_dict() if self.verdict is not None else None,
                "text": self.decision_text(), "outcome": self.outcome, "at": self.decided_at,
                "stopped_by_decision": self.stopped_by_decision, "after_anytime_valid_stop": self.stopped_by_decision,
                "episodes_run": self.episodes_run, "batch_episodes": self.batch, "episodes_saved": self.saved,
                "batch_sized": self.sized_seeds is not None, "savings_text": self.savings_text(),
                "max_seeds": self.max_seeds}


RECORD_KEYS = ("outcome", "at", "max_seeds", "successes_a", "successes_b", "b_only", "a_only", "pairs", "skipped",
               "delta_mean_cm")


def record_problems(record: dict | None, decision: dict | None) -> list[str]:
    """Where the driver's record of a comparison's decision (status.json) is not what its rows decide:
    each a provenance problem of both arms (the rows or the record changed after the run, or the
    record is another run's). No record is no problem: the rows decide."""
    if not isinstance(record, dict):
        return []
    if decision is None:
        return [f"status.json records the comparison's decision {_short_decision(record)}, but the rows decide "
                "none (rows.jsonl or status.json changed after the run?)"]
    diffs = []
    for k in RECORD_KEYS:
        have, want = record.get(k), decision.get(k)
        if k not in record and k not in decision:
            continue
        same = (isinstance(have, (int, float)) and isinstance(want, (int, float)) and not isinstance(have, bool)
                and math.isclose(have, want, rel_tol=0, abs_tol=1e-9)) or have == want
        if not same:
            diffs.append(f"{k} {have!r} (the rows: {want!r})")
    if not diffs:
        return []
    return [f"status.json's record of the comparison's decision is not what the rows decide: {', '.join(diffs)} "
            "(rows.jsonl or status.json changed after the run?)"]


def _short_decision(d: dict) -> str:
    return f"{d.get('outcome')!r} at {d.get('at')!r}/{d.get('max_seeds')!r}"


def batch_basis(sized_seeds: int | None, max_seeds: int) -> int:
    """The seeds of the batch a comparison's cost is counted against: the batch validate sized for the registered
    power at the design (never more than max seeds), else max seeds (no design registered to size one)."""
    return min(sized_seeds, max_seeds) if sized_seeds else max_seeds


def savings_words(run: int, sized_seeds: int | None, max_seeds: int, cancelled: int = 0, per_seed: int = 1) -> str:
    """A comparison's cost against the batch, in words, the same on every surface; `cancelled`: the episodes
    in flight at the decision, cancelled by the driver (never rows, not run); `per_seed`: the episodes a seed
    costs an arm (a crossed design: 1 + its variants)."""
    seeds = batch_basis(sized_seeds, max_seeds)
    batch = batch_episodes(seeds, per_seed)
    arms = "2 arms" + (f" x (1 + {plural(per_seed - 1, 'variant')})" if per_seed > 1 else "")
    if not sized_seeds:
        base = f"max seeds, {seeds} x {arms}: no design registered to size a batch"
    elif sized_seeds > max_seeds:
        base = f"max seeds, {seeds} x {arms}, under the {sized_seeds} seeds validate sized for the registered power"
    else:
        base = f"the {seeds} seeds x {arms} validate sized for the registered power"
    over = run - batch
    flight = f"; {cancelled} in flight at the decision cancelled" if cancelled else ""
    return (f"{run} episodes run against the batch's {batch} ({base}): "
            + (f"{batch - run} saved" if over <= 0 else f"{over} more than the batch") + flight)


def read_comparison(spec: ComparisonSpec, run_dir: Path, rows: list[dict], status: rd.Status | dict | None,
                    planned_seeds, sized_seeds: int | None = None, *, variants: tuple[str, ...] = (),
                    every_variant: list[dict] | None = None, manifest: rd.Manifest | None = None) -> ComparisonRead:
    """The comparison of a comparison run: its rows (both arms; a crossed design's read variant's), its
    status.json (typed), the arms' plan; a crossed design's `variants` (Manifest.variants) and its rows of
    every variant, what the episodes run and the batch count.

    The decision is `decide` on the rows, the code the driver ran after every row; status.json's record
    is read beside it and any difference listed (`record_problems`). A plan that decides on the pooled rate
    (`manifest`'s read_variant `pooled`) decides on the rows of every variant
    (prereg.stats.variants_decide.pooled_comparison_decision, what the driver's `comparison_check` runs)."""
    planned = list(planned_seeds)
    cap = spec.seeds_cap(len(planned))
    a, b = spec.by_seed(rows, planned)
    status = rd.Status.of(status) or rd.Status()
    record = status.comparison if isinstance(status.comparison, dict) else None
    pooled = every_variant is not None and reads_pooled(manifest)
    d = pooled_comparison_decision(spec, every_variant, manifest, planned) if pooled else decide(spec, a, b, planned)
    decision = None if d is None else {**d.as_dict(), "episodes_saved": d.episodes_saved}
    stop = status.stop
    stopped = bool(stop is not None and stop.by == rd.BY_DECIDED and stop.detail.startswith(COMPARISON_STOP))
    run = run_episodes(every_variant if variants and every_variant is not None else rows, (spec.arm_a, spec.arm_b))
    return ComparisonRead(spec, Path(run_dir), decision, record, stopped, status.state, run, cap,
                          path(spec, a, b, planned), record_problems(record, decision), sized_seeds=sized_seeds,
                          cancelled=len(status.cancelled_seeds or []), per_seed=len(variants) or 1)


def run_episodes(rows, arms) -> int:
    """The episodes a comparison run ran: one per (arm, variant, seed) with a row, of its two arms."""
    return len({(r.get("arm"), variant_of(r), r.get("seed")) for r in rows if r.get("arm") in arms})


def live_evidence(manifest: rd.Manifest | dict | None, status: rd.Status | dict | None, rows: list[dict]) -> str | None:
    """One line of a comparison run's evidence now (what a Discord update carries): the driver's latest
    decision (status.json `comparison`'s text), or, before one, the evidence so far read from the rows
    (`ComparisonPath.evidence_text`); None when the run is not a comparison run."""
    m = rd.Manifest.of(manifest) or rd.Manifest()
    if not m.is_comparison:
        return None
    recorded = (rd.Status.of(status) or rd.Status()).comparison
    if isinstance(recorded, dict) and isinstance(recorded.get("text"), str):
        return recorded["text"]
    try:
        spec = ComparisonSpec.from_record(m.comparison or {})
        seeds = list(m.seeds or ())
        a, b = spec.by_seed(rows_of_variant(rows, m.counted_variant), seeds)  # a crossed design: the read variant
        return "no decision yet: " + path(spec, a, b, seeds).evidence_text()
    except (TypeError, ValueError, KeyError):
        return "no decision yet (the manifest's comparison cannot be read)"


def savings(manifest: rd.Manifest | dict | None, status: rd.Status | dict | None,
            rows: list[dict]) -> str | None:
    """A comparison run's cost against the batch in words (`savings_words`), from its own files (before or
    without a report: the batch sized from the registered comparison's own assumed rates), or None when it
    is not a comparison run or has no decision."""
    m = rd.Manifest.of(manifest) or rd.Manifest()
    typed = rd.Status.of(status) or rd.Status()
    recorded = typed.comparison
    if not m.is_comparison or not isinstance(recorded, dict) or not isinstance(recorded.get("text"), str):
        return None
    max_seeds = recorded.get("max_seeds")
    if type(max_seeds) is not int:
        return None
    try:
        sized = sized_batch_seeds(ComparisonSpec.from_record(m.comparison or {}))
    except (TypeError, ValueError, KeyError):
        sized = None
    return savings_words(run_episodes(rows, m.arms), sized, max_seeds, len(typed.cancelled_seeds or []),
                         len(m.variants) or 1)
