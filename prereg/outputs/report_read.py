"""Reading a registration's runs for the report: each arm's run read once (`arm_report`: rows, snapshot,
provenance, reads), the comparator pairings and the comparison reads shared by both arms of one run,
and the verdicts from the evidence (`judge_reports`). No text is written here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.errors import PreregError
from prereg.core.safe_read import why_not_a_folder
from prereg.core.vocabulary import ROWS_LEVELS
from prereg.core.words import plural
from prereg.document.launch import resolve_launch
from prereg.document.model import Comparator, Document
from prereg.outputs.provenance import manifest_problems
from prereg.rundir.discovery import newest_registered_run
from prereg.rundir.files import load_json_object, time_problems
from prereg.rundir.rows import RowsRead, read_as_success, read_rows
from prereg.rundir.runstate import snapshot_state
from prereg.rundir.status import status_reason_text
from prereg.stats import curtail
from prereg.stats.chart import paired_delta_chart
from prereg.stats.comparison_report import ComparisonRead, read_comparison, registered_comparison
from prereg.stats.operating import sized_batch_seeds
from prereg.stats.reads import ArmReads, Check, Paired, arm_reads, paired_reads
from prereg.stats.real_read import RealRead, edited_since, read_run_real
from prereg.stats.sequential import check_rows
from prereg.stats.sequential import record_problems as sequential_record_problems
from prereg.stats.variants import VariantsRead, read_variants
from prereg.stats.variants_decide import PooledRows, decision_reads, sequential_check
from prereg.stats.verdict import ArmEvidence, Judgement, evidence_from_reads, judge

UNREGISTERED_LINE = ("**UNREGISTERED REPORT**: rows read with --unregistered; runs not launched from this "
                     "registration are not registered results")


@dataclass
class ComparatorRead:
    comparator: Comparator
    paired: Paired | None
    reads: ArmReads | None  # the comparator's own reads, for the chart
    note: str = ""
    report: "ArmReport | None" = None  # the comparator arm's own report (its validity), when it is an arm
    evidence: ArmEvidence | None = None  # an external comparator run's evidence (a run named by path)
    registered: bool = True  # False: the pairing of a comparison run's arms (B - A), not a reads.comparator


@dataclass
class ArmReport:
    reads: ArmReads
    run_dir: Path
    section: str
    sha256: str
    comparators: list[ComparatorRead] = field(default_factory=list)
    chart: Path | None = None
    results_md: Path | None = None
    provenance: list[str] = field(default_factory=list)  # why this run is not a run of this arm ([] = it is)
    evidence: ArmEvidence | None = None  # what the verdict engine reads of this run (prereg/verdict.py)
    comparison: ComparisonRead | None = None  # the run is a comparison run: this arm is one of its two
    snapshot: rd.Snapshot | None = None  # the run directory's small files as this report read them (the page's provenance)
    page: Path | None = None  # RUN_DIR/results.html, once written
    rows_level: str | None = None  # how reproducible its rows are (prereg.core.vocabulary.ROWS_LEVELS), as recorded
    real: RealRead | None = None  # the registered real read of this arm's real trials (prereg/stats/real_read.py)
    variants: VariantsRead | None = None  # a crossed design: this arm's reads per variant and pooled (issue 48)

    @property
    def after_stop(self) -> str:
        """The label every fixed-n read of this arm carries when its comparison run stopped on the decision."""
        return self.comparison.stop_label() if self.comparison is not None else ""


def pair_comparison_arms(rep: ArmReport, reports: dict[str, ArmReport]) -> None:
    """B of a comparison run is paired with A of the same run (B - A, per seed), as the comparison reads
    them, unless a registered comparator already pairs them; the verdict engine reads only registered
    pairings (`ComparatorRead.registered`)."""
    c = rep.comparison
    if c is None or rep.reads.arm != c.spec.arm_b:
        return
    other = reports.get(c.spec.arm_a)
    if other is None or other.run_dir.resolve() != rep.run_dir.resolve():
        return
    if any(x.comparator.name == c.spec.arm_a for x in rep.comparators):
        return
    rep.comparators.append(ComparatorRead(Comparator(arm=c.spec.arm_a), paired_reads(rep.reads, other.reads, c.spec.arm_a),
                                          other.reads, "the comparison run's own pairing (same run, same seeds)",
                                          other, registered=False))


def arms_by_run(reports: dict[str, ArmReport]) -> dict[Path, list[str]]:
    """The reported arms grouped by run directory: one arm each, or a comparison run's two."""
    out: dict[Path, list[str]] = {}
    for arm, rep in reports.items():
        out.setdefault(rep.run_dir.resolve(), []).append(arm)
    return out


def comparison_reads(reports: dict[str, ArmReport]) -> list[ComparisonRead]:
    """The comparison of each comparison run among the reported arms, once per run."""
    seen: dict[Path, ComparisonRead] = {}
    for rep in reports.values():
        if rep.comparison is not None:
            seen.setdefault(rep.run_dir.resolve(), rep.comparison)
    return list(seen.values())


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "prereg"


def registration_results_name(doc: Document) -> str:
    """The registration's results file, beside the runs: `<prereg-id>.results.md`."""
    return f"{_safe(doc.prereg_id or doc.path.stem)}.results.md"


def paired_chart_name(doc: Document, arm: str, comparator: str) -> str:
    """The paired-delta chart of `arm` against `comparator`, beside the runs."""
    return f"{_safe(doc.prereg_id or doc.path.stem)}.paired.{_safe(arm)}-vs-{_safe(comparator)}.png"


# ---------------------------------------------------------------- reading runs


@dataclass
class RunRead:
    """One read of a run directory for one report: its rows.jsonl and its snapshot, and the comparison
    of a comparison run, read once for both of its arms (by the run's path as given and the arm's
    planned seeds, what `read_comparison` reads besides the rows and the status)."""

    rows: RowsRead  # the rows every read counts: in a crossed design, the read variant's only
    snapshot: rd.Snapshot
    comparisons: dict[tuple[Path, tuple], ComparisonRead] = field(default_factory=dict)
    every_variant: list[dict] = field(default_factory=list)  # a crossed design's rows of every variant (the Variants read)

    @property
    def variants(self) -> tuple[str, ...]:
        m = self.snapshot.manifest
        return m.variants if m is not None else ()


def load_run(run_dir: Path) -> RunRead:
    """A run directory as a report reads it: its snapshot, and its rows as every read counts them (the one
    place a crossed design's rows are narrowed to the variant the plan reads, `Manifest.counted_variant`:
    the k/n, the validity checks, the sequential tests, the comparison and the rules all read these)."""
    snap = rd.read_snapshot(run_dir)
    got = read_rows(run_dir / rd.ROWS)
    m = snap.manifest
    counted = m.counted_variant if m is not None else None
    return RunRead(got.of_variant(counted), snap, every_variant=got.rows if counted is not None else [])


def _read_run(run_dir: Path, runs_read: dict[Path, RunRead] | None) -> RunRead:
    """The run's rows and snapshot (`load_run`), from `runs_read` (by resolved directory) when this report
    already read them: a comparison run's two arms are one run."""
    if runs_read is None:
        return load_run(run_dir)
    key = run_dir.resolve()
    if key not in runs_read:
        runs_read[key] = load_run(run_dir)
    return runs_read[key]


def arm_report(doc: Document, arm: str, run_dir: Path, unregistered: bool = False, *,
                runs_read: dict[Path, RunRead] | None = None) -> ArmReport:
    p = str(doc.path)
    found = doc.find_arm(arm)
    if found is None:
        known = ", ".join(a.name for a in doc.arms())
        raise PreregError(f"{p}: no arm {arm!r} to report (arms: {known})")
    a, sm = found
    if not sm.section.sealed:
        raise PreregError(f"{p}:{a.line}: arm {arm!r} is in {sm.section.name}, which is not frozen; "
                          "it has no registered reads yet")
    if (why := why_not_a_folder(run_dir)) is not None:  # issue 43: a FIFO is not 'no such run directory'
        raise PreregError(f"{run_dir}: {'no such run directory' if why == 'does not exist' else why} (for arm {arm!r}); "
                          f"pass --run {arm}=RUN_DIR")
    run = _read_run(run_dir, runs_read)
    got, snap = run.rows, run.snapshot
    status = snap.status
    bad = [f"line {b.line_no}: {b.reason}" for b in got.bad]
    rows, seeds, comparison, spec, notes = got.rows, list(sm.protocol.seeds), None, None, []
    m = snap.manifest
    if m is not None and m.is_comparison and arm in m.arms:  # one of a comparison run's two arms
        rows = [r for r in got.rows if r.get("arm") == arm]
        spec = registered_comparison(doc, m.arms)
        if spec is not None:
            seeds = seeds[:spec.seeds_cap(len(seeds))]
            key = (run_dir, tuple(seeds))
            comparison = run.comparisons.get(key)
            if comparison is None:
                comparison = run.comparisons[key] = read_comparison(spec, run_dir, got.rows, status, seeds,
                                                                     sized_batch_seeds(spec, sm.reads.power),
                                                                     variants=run.variants, every_variant=run.every_variant,
                                                                     manifest=m)
        notes.append(f"one arm of comparison run {run_dir.name} ({' and '.join(m.arms)}, interleaved by seed): the "
                     f"rows whose arm is {arm}; the run's wall and GPU-hours are both arms'")
    pooled_rows = [read_as_success(r, sm.protocol.success_field) for r in arm_rows(run, arm)]  # every variant's
    state = snapshot_state(snap).shown  # the console's word for the run: died, not status.json's "running"
    rows = [read_as_success(r, sm.protocol.success_field) for r in rows]  # the success the plan reads
    reads = arm_reads(arm, rows, planned_seeds=seeds, validity=sm.reads.validity,
                      interval=sm.reads.interval, run_state=status, bad_lines=bad, state=state)
    sha = sm.section.seal.sha256
    problems = manifest_problems(run_dir, resolve_launch(doc.path, arm), notes, comparison=spec)
    if m is not None and m.is_comparison and arm in m.arms and spec is None:
        problems.insert(0, f"a comparison run of {' and '.join(m.arms)}, a comparison no frozen section registers")
    reads.notes += notes
    if comparison is not None:  # the driver's record against what the rows decide: a provenance problem
        reads.checks += [Check("record", None, None, False, why) for why in comparison.record_problems]
    reads.checks += [Check("record", None, None, False, why)
                     for why in sequential_record_problems(sm.gates.sequential, status, rows, seeds,
                                                           check=record_check(m, pooled_rows))]
    if not problems:
        reads.checks.insert(0, Check("provenance", None, None, True,
                                     f"launched from this registration ({sm.section.name}, sha256 {sha[:12]}), "
                                     "arm and settings as registered"))
    elif unregistered:
        reads.notes += [f"unregistered (read with --unregistered): {why}" for why in problems]
    else:
        reads.checks[:0] = [Check("provenance", None, None, False, why) for why in problems]
    if got.bad:
        reads.checks.append(Check("bad_lines", len(got.bad), 0, False,
                                  f"{len(got.bad)} line(s) of rows.jsonl are not valid rows (listed below)"))
    ended = status.updated_at if status is not None and status.state in rd.FINAL_STATES else None
    reads.checks += [Check("record", None, None, False, why)
                     for why in time_problems(arm_rows(run, arm) or rows, m.started_at if m is not None else None, ended)]
    if reads.n == 0 and state not in rd.LIVE_STATES:  # a refused or failed start is no evidence of anything
        why = status_reason_text(status)
        reads.checks.append(Check("episodes", 0, None, False, f"no episodes: the run is {state} with no row"
                                  + (f" ({why})" if why else "")))
    variants = _variants_read(run, arm, seeds, sm.protocol.success_field)
    if variants is not None:
        reads.notes.append(f"a crossed design over {plural(len(m.variants), 'variant')} ({', '.join(m.variants)}): "
                           f"{decision_reads(m.read_variant, variants.pooled)}; the Variants section reads them all")
    decided = curtail.savings_note(status, reads)
    if decided:
        reads.notes.append(decided)
    level = rows_level(m, arm)
    if level is not None:
        reads.notes.append(f"rows {level}: {ROWS_LEVELS[level]}")
    if not (run_dir / rd.ROWS).exists():
        if m is not None:  # the driver creates rows.jsonl before its first episode: this run's rows are gone
            reads.checks.append(Check("rows_file", None, None, False,
                                      f"{rd.ROWS} is missing: the rows this run wrote are gone (deleted or moved); "
                                      "restore the file, or run the arm again"))
        else:
            reads.notes.append("the run directory has no rows.jsonl")
    evidence = evidence_from_reads(reads, rows, planned=seeds, interval=sm.reads.interval, status=status, manifest=m,
                                   run_dir=run_dir, state=state, dated_by=arm_rows(run, arm) or None)
    evidence.pooled = PooledRows.of(m, pooled_rows)
    if evidence.resumes:
        reads.notes.append(f"resumed {len(evidence.resumes)} time(s), at {', '.join(evidence.resumes[:10])}: the rows "
                           "of every session are read together (a seed's last row wins)")
    return ArmReport(reads, run_dir, sm.section.name, sha, provenance=problems, evidence=evidence,
                     comparison=comparison, snapshot=snap, rows_level=level, real=real_of_run(doc, arm, run_dir, rows),
                     variants=variants)


def record_check(m: rd.Manifest | None, every_variant: list[dict]):
    """The code the driver's record of the sequential test is checked against: the rows' own test
    (prereg.stats.sequential.check_rows), or the pooled rate's on every variant's rows (variants_decide)."""
    if PooledRows.of(m, every_variant) is None:
        return check_rows

    def pooled(spec, _rows, planned):
        return sequential_check(spec, every_variant, m.config or {}, planned)

    return pooled


def arm_rows(run: RunRead, arm: str) -> list[dict]:
    """A crossed design's rows of every variant of this arm (a comparison run's: those whose arm is `arm`);
    [] for a run of the scene alone: what the Variants read and the record's times read."""
    m = run.snapshot.manifest
    if m is not None and m.is_comparison:
        return [r for r in run.every_variant if r.get("arm") == arm]
    return run.every_variant


def _variants_read(run: RunRead, arm: str, seeds: list[int], success_field: str) -> VariantsRead | None:
    """The arm's reads over a crossed design's variants (prereg.stats.variants.read_variants: per variant,
    pooled, camera variants apart, the worst, per seed), its planned seeds' rows of every variant; None
    for a run of the scene alone."""
    m = run.snapshot.manifest
    if m is None or not m.variants:
        return None
    rows = [read_as_success(r, success_field) for r in arm_rows(run, arm)]
    return read_variants(rows, seeds, m.variants, camera=m.camera_variants, pool_cameras=m.pool_cameras)


def real_of_run(doc: Document, arm: str, run_dir: Path, rows) -> RealRead | None:
    """The arm's real read, checked against what the last report of this run read of real.jsonl: an edit
    since is a provenance problem, and stays one (the earlier record is kept)."""
    before, _ = load_json_object(run_dir / rd.RESULTS_JSON)
    got = (before or {}).get("real")
    reported = got.get(arm, {}).get("recorded") if isinstance(got, dict) and isinstance(got.get(arm), dict) else None
    read = read_run_real(doc, arm, run_dir, rows, reported=reported)
    if read is not None and edited_since(run_dir, reported):
        read.recorded = tuple(reported)
    return read


def rows_level(m: rd.Manifest | None, arm: str) -> str | None:
    """How reproducible the run's rows are, as the engine recorded it for this arm (policy_resolved.rows:
    prereg.core.vocabulary.ROWS_LEVELS); None for a run that did not record it."""
    view = m.arm_view(arm) if m is not None and m.is_comparison else m
    resolved = view.policy_resolved if view is not None else None
    level = resolved.get("rows") if isinstance(resolved, dict) else None
    return level if level in ROWS_LEVELS else None


def comparator_read(doc: Document, rep: ArmReport, c: Comparator, reports: dict[str, ArmReport],
                     unregistered: bool = False) -> ComparatorRead:
    found_note = ""
    if c.arm:
        other = reports.get(c.arm) or _sibling_run(doc, c.arm, rep.run_dir.parent, unregistered)
        if other is None:
            return ComparatorRead(c, None, None, f"not paired: give the comparator's run too (--run {c.arm}=RUN_DIR; "
                                                 f"none launched from this registration was found in {rep.run_dir.parent})")
        if c.arm not in reports:
            found_note = f"comparator run found beside this one: {other.run_dir}"
        creads = other.reads
    else:
        run = Path(c.run)
        run = run if run.is_absolute() else doc.path.parent / run
        if not run.is_dir():
            return ComparatorRead(c, None, None, f"not paired: the comparator run {run} is not on this machine")
        ext_run = load_run(run)
        got, csnap = ext_run.rows, ext_run.snapshot
        creads = arm_reads(c.name, got.rows, run_state=csnap.status)
        bad = [f"{len(got.bad)} line(s) of its rows.jsonl are not valid rows"] if got.bad else []
        ext = evidence_from_reads(creads, got.rows, status=csnap.status, manifest=csnap.manifest,
                                  extra_problems=bad, external=True, run_dir=run)
    paired = paired_reads(rep.reads, creads, c.name)
    note = found_note
    if paired.shared_seeds == 0:
        note = "no shared seeds with a progress_final_cm value: nothing to pair"
    if paired.dropped_unpaired:
        note = (note + "; " if note else "") + (f"{plural(paired.dropped_unpaired, 'seed')} with rows on both sides "
                                                "not paired: an error row or no finite progress_final_cm on one side")
    return ComparatorRead(c, paired, creads, note, other if c.arm else None, None if c.arm else ext)


def _sibling_run(doc: Document, arm: str, runs_dir: Path, unregistered: bool = False) -> ArmReport | None:
    """The newest run of `arm` in `runs_dir` launched from this registration's frozen section, if any.

    The console reports one run at a time; this pairs it with its registered comparator arm
    without asking for the other run directory. Finished runs are preferred to unfinished ones.
    """
    found = doc.find_arm(arm)
    if found is None or not found[1].section.sealed or not runs_dir.is_dir():
        return None
    d = newest_registered_run(runs_dir, arm, found[1].section.seal.sha256)
    return arm_report(doc, arm, d, unregistered) if d is not None else None


def judge_reports(doc: Document, reports: dict[str, ArmReport]) -> Judgement:
    """Every registered rule and sequential test, through the one verdict engine (prereg/verdict.py).

    The evidence is every reported arm, the comparator arms found beside them, and external
    comparator runs; each arm carries its pairing with its registered comparator (the first
    `reads.comparator` that applies to it), which is what its `delta_*` reads mean."""
    evidence: dict[str, ArmEvidence] = {}
    for rep in reports.values():
        for c in rep.comparators:
            if c.report is not None and c.comparator.arm not in reports and c.report.evidence is not None:
                evidence.setdefault(c.comparator.arm, c.report.evidence)
            if c.evidence is not None:
                evidence.setdefault(c.comparator.name, c.evidence)
    evidence.update({a: r.evidence for a, r in reports.items() if r.evidence is not None})
    for arm, ev in list(evidence.items()):
        rep = reports.get(arm)
        first = next((c for c in rep.comparators if c.registered), None) if rep is not None else None
        if first is None and not ev.external:
            comps = doc.comparators_for(arm)
            ev.comparator = comps[0].name if comps else None
        elif first is not None:
            ev.comparator, ev.paired = first.comparator.name, first.paired
    return judge(doc, evidence)


def draw_paired_charts(doc: Document, reports: dict[str, ArmReport], folder: Path, colors: dict[str, str]) -> list[Path]:
    out = []
    for arm, rep in reports.items():
        for c in rep.comparators:
            if c.paired is None or not c.paired.shared_seeds:
                continue
            path = folder / paired_chart_name(doc, arm, c.comparator.name)
            out.append(paired_delta_chart(c.paired, path, colors=colors,
                                          title=f"{doc.prereg_id}: {arm} - {c.comparator.name}"))
    return out
