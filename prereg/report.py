"""`fontaine-prereg report`: the frozen reads of finished (or stopped) runs, written down.

For each `ARM=RUN_DIR`: reads from RUN_DIR/rows.jsonl (through prereg.rows), RUN_DIR/results.md
and RUN_DIR/chart.png (with the paired-delta panel when the arm has a comparator); the
registration's results file beside the runs (`<prereg-id>.results.md`: every registered arm,
every rule, every pairing, with one paired-delta chart per pairing); and one dated results
section appended to the pre-registration, owned by the tool: re-reporting the same arms
replaces that section and nothing else. The document must verify first: results are only
ever computed against an unmodified registration.

An arm is VALID only with provenance (prereg.provenance: its manifest names this frozen
section's hash, the arm and the registered settings) and rows that pass the registered
validity checks. Rows from elsewhere are read only with `unregistered=True`
(`--unregistered`), which labels every output unregistered in its first line and never
appends to the pre-registration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg import curtail
from prereg import rundir as rd
from prereg.chart import paired_delta_chart, per_seed_chart
from prereg.colors import registration_colors
from prereg.comparison_report import ComparisonRead, comparison_runs, read_comparison, registered_comparison
from prereg.document import load_valid, parse
from prereg.errors import PreregError
from prereg.launch import resolve_launch
from prereg.layout import REPLACED_MARK, RESULTS_END, results_begin
from prereg.model import Comparator, Document
from prereg.provenance import manifest_problems
from prereg.reads import (
    MIN_PAIRED_SEEDS,
    ArmReads,
    Check,
    Paired,
    Verdict,
    arm_reads,
    paired_reads,
)
from prereg.rows import EPISODE_OUTCOMES, OUTCOME_LABELS, OUTCOME_RULES, RowsRead, read_rows
from prereg.rundir import utc_now
from prereg.runs_discovery import newest_registered_run
from prereg.seal import require_intact, verify_layout, write_lines
from prereg.verdict import ArmEvidence, Judgement, SequentialVerdict, evidence_from_reads, judge

UNREGISTERED_LINE = ("**UNREGISTERED REPORT**: rows read with --unregistered; runs not launched from this "
                     "registration are not registered results")

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


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

    @property
    def after_stop(self) -> str:
        """The label every fixed-n read of this arm carries when its comparison run stopped on the decision."""
        return self.comparison.stop_label() if self.comparison is not None else ""


@dataclass
class Report:
    prereg_path: Path
    prereg_id: str
    generated_at: str
    arms: dict[str, ArmReport]
    verdicts: list[Verdict]
    section_markdown: str
    appended: bool
    not_appended_because: str = ""
    unregistered: bool = False
    registration_md: Path | None = None
    paired_charts: list[Path] = field(default_factory=list)
    sequential: list[SequentialVerdict] = field(default_factory=list)

    @property
    def comparisons(self) -> list[ComparisonRead]:
        return comparison_reads(self.arms)

    def as_dict(self) -> dict:
        return {
            "prereg_path": str(self.prereg_path), "prereg_id": self.prereg_id, "generated_at": self.generated_at,
            "arms": {
                name: {
                    "run_dir": str(r.run_dir), "section": r.section, "prereg_sha256": r.sha256,
                    "reads": r.reads.as_dict(),
                    "comparators": [{"name": c.comparator.name, "note": c.note,
                                     "paired": c.paired.as_dict() if c.paired else None} for c in r.comparators],
                    "chart": str(r.chart) if r.chart else None,
                    "results_md": str(r.results_md) if r.results_md else None,
                } for name, r in self.arms.items()
            },
            "decision_rules": [v.as_dict() for v in self.verdicts],
            "sequential_tests": [s.as_dict() for s in self.sequential],
            "comparisons": [c.as_dict() for c in self.comparisons],
            "appended": self.appended,
            "unregistered": self.unregistered,
            "registration_results": str(self.registration_md) if self.registration_md else None,
        }

    def summary_text(self) -> str:
        out = [UNREGISTERED_LINE.replace("**", "")] if self.unregistered else []
        out.append(f"{self.prereg_id} ({self.prereg_path}), report {self.generated_at}")
        for name, r in self.arms.items():
            a = r.reads
            out.append(f"\n{name}  [{r.run_dir}]")
            out.append(f"  primary   {_primary_line(a).replace('**', '')}")
            if r.after_stop:
                out.append(f"  label     {r.after_stop}")
            out.append(f"  validity  {_validity_head(a)}")
            out += [f"    - {t}" for t in _validity_lines(a)]
            out.append(f"  secondary engaged {a.engaged}, knock-aways {a.knock_aways}, quiet {a.quiet}, "
                       f"progress_final mean {_cm(a.progress_final_mean)} median {_cm(a.progress_final_median)}, "
                       f"success seeds {a.success_seeds}")
            if a.outcomes:
                out.append(f"  outcomes  {_outcomes_line(a.outcomes)}")
            for c in r.comparators:
                out.append(f"  vs {c.comparator.name}: " + (_paired_line(c.paired) if c.paired else c.note))
            out.append(f"  wrote     {r.results_md}, {r.chart}")
        for c in self.comparisons:
            out.append(f"\ncomparison {c.title}  [{c.run_dir}]")
            out += [f"  {line}" for line in c.lines()]
        if self.verdicts:
            out.append("\ndecision rules")
            for v in self.verdicts:
                out.append(f"  [{v.label}] if {v.rule.condition} -> {v.rule.action}  ({v.key})"
                           + (f"\n      ({v.detail})" if v.detail else ""))
        for s in self.sequential:
            out.append(f"  [{s.label}] sequential test of arm {s.arm} ({s.section})"
                       + (f"\n      ({s.decision.text})" if s.decision else ""))
        if self.registration_md:
            out.append(f"\nregistration results: {self.registration_md}")
        if self.appended:
            out.append(f"\nappended the results section to {self.prereg_path}")
        else:
            out.append(f"\ndid not touch {self.prereg_path}" + (f": {self.not_appended_because}"
                                                                 if self.not_appended_because else ""))
        return "\n".join(out)


def parse_run_args(items: list[str]) -> dict[str, Path]:
    """['arm=runs/x', ...] -> {arm: Path}; a malformed or repeated item is bad input."""
    out: dict[str, Path] = {}
    for item in items:
        arm, eq, d = item.partition("=")
        if not eq or not arm or not d:
            raise PreregError(f"--run {item!r}: expected ARM=RUN_DIR, e.g. --run tiny-masked=runs/demo-tiny-masked")
        if arm in out:
            raise PreregError(f"--run: arm {arm!r} given twice")
        out[arm] = Path(d)
    return out


def build_report(prereg_path: str | Path, runs: dict[str, str | Path], *, append: bool = True,
                 now: str | None = None, unregistered: bool = False) -> Report:
    """Compute the reads of each arm's run, write results.md + chart.png per run, the registration's
    results file beside the runs, and append the results section (never with `unregistered`)."""
    if not runs:
        raise PreregError("no runs given: pass --run ARM=RUN_DIR for each arm to report")
    doc, reports, judgement = read_registration(prereg_path, runs, unregistered=unregistered)
    verdicts = judgement.verdicts
    now = now or utc_now()
    colors = registration_colors(doc)
    head = [UNREGISTERED_LINE, ""] if unregistered else []
    for arms in _arms_by_run(reports).values():
        _write_run_files(doc, [reports[a] for a in arms], judgement, now, colors, head, unregistered)
    folder = _runs_folder([r.run_dir for r in reports.values()])
    charts = _paired_charts(doc, reports, folder, colors)
    reg_md = folder / registration_results_name(doc)
    reg_lines = _registration_markdown(doc, reports, judgement, now, charts, folder, unregistered)
    rd.write_text_atomic(reg_md, "\n".join(reg_lines).rstrip("\n") + "\n")
    section = _section_markdown(doc, reports, judgement, now, reg_md)
    skipped = ""
    if append and unregistered:
        append, skipped = False, "an unregistered report is never appended to the pre-registration"
    foreign = sorted(a for a, r in reports.items() if r.provenance)
    if append and foreign and not unregistered:
        append, skipped = False, (f"the run of {', '.join(foreign)} is not a run of this registration "
                                  f"({reports[foreign[0]].provenance[0]}); only its own runs are appended. The "
                                  "results files beside the runs say why")
    if append and _is_shipped_example(doc.path):
        append, skipped = False, (f"{doc.path} is a shipped example and stays as shipped; to keep results in the "
                                  "document, report against a copy (same frozen hash) in your own folder")
    if append:
        _append_section(doc, sorted(reports), section, now)
    return Report(doc.path, doc.prereg_id, now, reports, verdicts, "\n".join(section), append, skipped,
                  unregistered, reg_md, charts, judgement.sequential)


def read_registration(prereg_path: str | Path, runs: dict[str, str | Path], *,
                      unregistered: bool = False) -> tuple[Document, dict[str, ArmReport], Judgement]:
    """The reads and verdicts of these runs against their frozen registration, writing nothing.

    What the report writes down and what the console's compare view shows: one computation."""
    doc = load_valid(prereg_path)
    p = str(doc.path)
    runs = comparison_runs(doc, runs)  # a comparison run's directory stands for both of its arms
    require_intact(doc.layout, p,
                   not_frozen=f"and results are read only against a frozen pre-registration "
                              f"(`fontaine-prereg freeze {p}` before the launch)",
                   modified="Results are not computed against a modified registration: revert the change "
                            "(e.g. `git diff`)")
    reports: dict[str, ArmReport] = {}
    runs_read: dict[Path, _RunRead] = {}  # a comparison run stands for two arms: read once
    for arm, run_dir in runs.items():
        reports[arm] = _arm_report(doc, arm, Path(run_dir), unregistered, runs_read=runs_read)
    for arm, rep in reports.items():
        rep.comparators = [_comparator_read(doc, rep, c, reports, unregistered) for c in doc.comparators_for(arm)]
        _pair_comparison_arms(rep, reports)
    return doc, reports, _judge(doc, reports)


def _pair_comparison_arms(rep: ArmReport, reports: dict[str, ArmReport]) -> None:
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


def _arms_by_run(reports: dict[str, ArmReport]) -> dict[Path, list[str]]:
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


def _write_run_files(doc: Document, reps: list[ArmReport], judgement: Judgement, now: str, colors: dict,
                     head: list[str], unregistered: bool) -> None:
    """results.md, results.json and chart.png of one run directory: one arm's, or a comparison run's
    two arms together (one chart of both, paired B - A; one results file that states the decision)."""
    rep = reps[0]
    run_dir = rep.run_dir
    if len(reps) == 1:
        cr = next((c for c in rep.comparators if c.reads is not None), None)
        series = [rep.reads] + ([cr.reads] if cr else [])
    else:
        cr = next((c for r in reps for c in r.comparators if not c.registered and c.reads is not None), None)
        series = [r.reads for r in reps]
        if cr is not None:  # A first, B second: the chart's paired panel is B - A
            series.sort(key=lambda a: a.arm != cr.comparator.name)
    title = f"{doc.prereg_id}: " + " vs ".join(a.arm for a in series)
    paired = cr.paired if cr and cr.paired and cr.paired.shared_seeds else None
    chart = per_seed_chart(series, run_dir / rd.CHART, title, colors=colors, paired=paired)
    name = " and ".join(r.reads.arm for r in reps)
    md = head + [f"# Results: {name}" + (" (one comparison run)" if len(reps) > 1 else ""), "",
                 f"Pre-registration `{doc.prereg_id}` ({doc.path}), report {now}.", ""]
    comparisons = comparison_reads({r.reads.arm: r for r in reps})
    for c in comparisons:
        md += c.markdown()
    for r in reps:
        r.chart, r.results_md = chart, run_dir / rd.RESULTS
        md += _arm_markdown(r, chart_rel=rd.CHART) + [""]
    md += _rules_markdown(judgement)  # every registered rule
    rd.write_text_atomic(run_dir / rd.RESULTS, "\n".join(md).rstrip("\n") + "\n")
    if len(reps) == 1:
        doc_json = _results_json(doc, rep, judgement, now, unregistered)
    else:
        doc_json = _comparison_results_json(doc, reps, comparisons, judgement, now, unregistered)
    rd.write_json_atomic(run_dir / rd.RESULTS_JSON, doc_json)


def _arm_json(r: ArmReads) -> dict:
    return {"valid": r.valid, "invalid_because": [c.text for c in r.checks if not c.ok],
            "primary": {"successes": r.successes, "n": r.n, "n_planned": r.n_planned, "text": r.primary_text(),
                        "intervals": {k: list(v) for k, v in r.intervals.items()}},
            "knock_aways": r.knock_aways, "engaged": r.engaged}


def _results_json(doc: Document, rep: ArmReport, judgement: Judgement, now: str, unregistered: bool) -> dict:
    """results.json: what a machine reads of this run's report (the Discord results post)."""
    r = rep.reads
    return {"prereg_id": doc.prereg_id, "arm": r.arm, "generated_at": now, "unregistered": unregistered,
            **_arm_json(r),
            "verdicts": [v.as_dict() for v in judgement.verdicts],
            "sequential_tests": [s.as_dict() for s in judgement.sequential]}


def _comparison_results_json(doc: Document, reps: list[ArmReport], comparisons: list[ComparisonRead],
                             judgement: Judgement, now: str, unregistered: bool) -> dict:
    """results.json of a comparison run: each arm's reads under `arms` (labelled when read after an
    anytime-valid stop) and the comparison's decision and savings under `comparison`."""
    c = comparisons[0] if comparisons else None
    return {"prereg_id": doc.prereg_id, "arm": "-vs-".join(r.reads.arm for r in reps) if c is None else c.spec.label,
            "generated_at": now, "unregistered": unregistered, "valid": all(r.reads.valid for r in reps),
            "arms": {r.reads.arm: {**_arm_json(r.reads), "label": r.after_stop} for r in reps},
            "comparison": c.as_dict() if c is not None else None,
            "verdicts": [v.as_dict() for v in judgement.verdicts],
            "sequential_tests": [s.as_dict() for s in judgement.sequential]}


def _runs_folder(dirs: list[Path]) -> Path:
    """Where the registration's results go: the folder that holds the runs (their common parent)."""
    parents = {d.resolve().parent for d in dirs}
    if len(parents) == 1:
        return parents.pop()
    import os
    return Path(os.path.commonpath([str(p) for p in parents]))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "prereg"


def registration_results_name(doc: Document) -> str:
    """The registration's results file, beside the runs: `<prereg-id>.results.md`."""
    return f"{_safe(doc.prereg_id or doc.path.stem)}.results.md"


def paired_chart_name(doc: Document, arm: str, comparator: str) -> str:
    """The paired-delta chart of `arm` against `comparator`, beside the runs."""
    return f"{_safe(doc.prereg_id or doc.path.stem)}.paired.{_safe(arm)}-vs-{_safe(comparator)}.png"


def registration_files(doc: Document, runs: dict[str, Path]) -> list[Path]:
    """The files a report of these runs (arm -> run directory) wrote beside them, those that exist:
    the registration's results file and each arm's paired charts (what `fontaine-prereg publish` shares)."""
    folder = _runs_folder([Path(d) for d in runs.values()])
    names = [registration_results_name(doc)]
    names += [paired_chart_name(doc, arm, c.name) for arm in runs for c in doc.comparators_for(arm)]
    return [folder / n for n in names if (folder / n).is_file()]


def _is_shipped_example(path: Path) -> bool:
    return path.resolve().parent == EXAMPLES_DIR


# ---------------------------------------------------------------- reading runs


@dataclass
class _RunRead:
    """One read of a run directory for one report: its rows.jsonl and its snapshot, and the comparison
    of a comparison run, read once for both of its arms (by the run's path as given and the arm's
    planned seeds, what `read_comparison` reads besides the rows and the status)."""

    rows: RowsRead
    snapshot: rd.Snapshot
    comparisons: dict[tuple[Path, tuple], ComparisonRead] = field(default_factory=dict)


def _read_run(run_dir: Path, runs_read: dict[Path, _RunRead] | None) -> _RunRead:
    """The run's rows and snapshot, from `runs_read` (by resolved directory) when this report already
    read them: a comparison run's two arms are one run."""
    if runs_read is None:
        return _RunRead(read_rows(run_dir / rd.ROWS), rd.read_snapshot(run_dir))
    key = run_dir.resolve()
    if key not in runs_read:
        runs_read[key] = _RunRead(read_rows(run_dir / rd.ROWS), rd.read_snapshot(run_dir))
    return runs_read[key]


def _arm_report(doc: Document, arm: str, run_dir: Path, unregistered: bool = False, *,
                runs_read: dict[Path, _RunRead] | None = None) -> ArmReport:
    p = str(doc.path)
    found = doc.find_arm(arm)
    if found is None:
        known = ", ".join(a.name for a in doc.arms())
        raise PreregError(f"{p}: no arm {arm!r} to report (arms: {known})")
    a, sm = found
    if not sm.section.sealed:
        raise PreregError(f"{p}:{a.line}: arm {arm!r} is in {sm.section.name}, which is not frozen; "
                          "it has no registered reads yet")
    if not run_dir.is_dir():
        raise PreregError(f"{run_dir}: no such run directory (for arm {arm!r}); pass --run {arm}=RUN_DIR")
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
                comparison = run.comparisons[key] = read_comparison(spec, run_dir, got.rows, status, seeds)
        notes.append(f"one arm of comparison run {run_dir.name} ({' and '.join(m.arms)}, interleaved by seed): the "
                     f"rows whose arm is {arm}; the run's wall and GPU-hours are both arms'")
    reads = arm_reads(arm, rows, planned_seeds=seeds, validity=sm.reads.validity,
                      interval=sm.reads.interval, run_state=status, bad_lines=bad)
    sha = sm.section.seal.sha256
    problems = manifest_problems(run_dir, resolve_launch(doc.path, arm), notes, comparison=spec)
    if m is not None and m.is_comparison and arm in m.arms and spec is None:
        problems.insert(0, f"a comparison run of {' and '.join(m.arms)}, a comparison no frozen section registers")
    reads.notes += notes
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
    decided = curtail.savings_note(status, reads)
    if decided:
        reads.notes.append(decided)
    if not (run_dir / rd.ROWS).exists():
        if m is not None:  # the driver creates rows.jsonl before its first episode: this run's rows are gone
            reads.checks.append(Check("rows_file", None, None, False,
                                      f"{rd.ROWS} is missing: the rows this run wrote are gone (deleted or moved); "
                                      "restore the file, or run the arm again"))
        else:
            reads.notes.append("the run directory has no rows.jsonl")
    evidence = evidence_from_reads(reads, rows, planned=seeds, interval=sm.reads.interval,
                                   status=status, manifest=m, run_dir=run_dir)
    if evidence.resumes:
        reads.notes.append(f"resumed {len(evidence.resumes)} time(s), at {', '.join(evidence.resumes[:10])}: the rows "
                           "of every session are read together (a seed's last row wins)")
    return ArmReport(reads, run_dir, sm.section.name, sha, provenance=problems, evidence=evidence,
                     comparison=comparison)


def _comparator_read(doc: Document, rep: ArmReport, c: Comparator, reports: dict[str, ArmReport],
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
        got = read_rows(run / rd.ROWS)
        csnap = rd.read_snapshot(run)
        creads = arm_reads(c.name, got.rows, run_state=csnap.status)
        bad = [f"{len(got.bad)} line(s) of its rows.jsonl are not valid rows"] if got.bad else []
        ext = evidence_from_reads(creads, got.rows, status=csnap.status, manifest=csnap.manifest,
                                  extra_problems=bad, external=True, run_dir=run)
    paired = paired_reads(rep.reads, creads, c.name)
    note = found_note
    if paired.shared_seeds == 0:
        note = "no shared seeds with a progress_final_cm value: nothing to pair"
    if paired.dropped_unpaired:
        note = (note + "; " if note else "") + (f"{paired.dropped_unpaired} seed(s) with rows on both sides were not "
                                                "paired: no finite progress_final_cm on one side")
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
    return _arm_report(doc, arm, d, unregistered) if d is not None else None


def _judge(doc: Document, reports: dict[str, ArmReport]) -> Judgement:
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


def _paired_charts(doc: Document, reports: dict[str, ArmReport], folder: Path, colors: dict[str, str]) -> list[Path]:
    out = []
    for arm, rep in reports.items():
        for c in rep.comparators:
            if c.paired is None or not c.paired.shared_seeds:
                continue
            path = folder / paired_chart_name(doc, arm, c.comparator.name)
            out.append(paired_delta_chart(c.paired, path, colors=colors,
                                          title=f"{doc.prereg_id}: {arm} - {c.comparator.name}"))
    return out


# ---------------------------------------------------------------- writing


def _section_markdown(doc: Document, reports: dict[str, ArmReport], judgement: Judgement, now: str,
                      reg_md: Path | None = None) -> list[str]:
    arms = sorted(reports)
    out = [results_begin(f"arms={','.join(arms)}"),
           f"## Results: {', '.join(arms)} ({now[:16].replace('T', ' ')}Z, fontaine-prereg report)", "",
           "_Written by `fontaine-prereg report`; reporting these arms again replaces this section. "
           "Write interpretation outside it._", ""]
    if reg_md is not None:
        out += [f"The registration's results file: `{reg_md}`.", ""]
    for c in comparison_reads(reports):
        out += [line.replace("## Comparison", "### Comparison", 1) for line in c.markdown()]
    for arm in arms:
        rep = reports[arm]
        out += _arm_markdown(rep, chart_rel=str(rep.chart) if rep.chart else None) + [""]
    out += _rules_markdown(judgement)
    out.append(RESULTS_END)
    return out


def _arm_markdown(rep: ArmReport, chart_rel: str | None, *, in_registration: bool = False) -> list[str]:
    a = rep.reads
    out = [f"### {a.arm}", "",
           f"Run `{rep.run_dir}`; registered in {rep.section} (sha256 `{rep.sha256[:12]}`).", "",
           f"- **Primary**: {_primary_line(a)}"]
    if rep.after_stop:
        out.append(f"  - **{rep.after_stop[0].upper()}{rep.after_stop[1:]}**.")
    out.append(f"- **Validity**: {_validity_head(a, md=True)}")
    out += [f"  - {t}" for t in _validity_lines(a)]
    out.append(f"- **Secondary** (record-only): engaged (progress_cm > 1) {a.engaged}; knock-aways "
               f"(progress_final_cm <= -1) {a.knock_aways}"
               + (f" at seeds {a.knock_seeds[:30]}" if a.knock_seeds and len(a.knock_seeds) <= 30 else "")
               + f"; quiet {a.quiet}; progress_final_cm mean {_cm(a.progress_final_mean)}, median "
               f"{_cm(a.progress_final_median)}; success seeds {a.success_seeds}; mask violations {a.mask_violations}"
               + (f"; first-action delta {a.first_action_delta_deg:.2f} deg" if a.first_action_delta_deg is not None else ""))
    out.append(f"- **Reads as the lab notes made them**: {_seed_reads_line(a)}")
    if a.outcomes:
        out.append("- **Outcomes** (one per episode, prereg.rows.episode_outcome): " + _outcomes_line(a.outcomes))
    for c in rep.comparators:
        out.append(f"- **Paired vs {c.comparator.name}**: " + (_paired_line(c.paired) if c.paired else c.note)
                   + (f" ({c.note})" if c.paired and c.note else ""))
        if c.reads is not None:
            moves = outcome_transitions(c.reads, a)
            if moves:
                out.append(f"  - outcome moves from {c.comparator.name} to {a.arm}: "
                           + "; ".join(_transition_text(m) for m in moves))
    if a.dropped:
        out.append("- **Dropped values** (null or not finite, left out of the reads that need them): "
                   + ", ".join(f"{k} {v}" for k, v in sorted(a.dropped.items())))
    for n in a.notes:
        out.append(f"- Note: {n}")
    if a.bad_lines:
        out.append(f"- Unreadable rows ({len(a.bad_lines)}): " + "; ".join(a.bad_lines[:5])
                   + ("; ..." if len(a.bad_lines) > 5 else ""))
    if a.dist_by_second_mean and not in_registration:
        out.append("- Boat-to-disk distance by second: the table in the registration's results file")
    if chart_rel:
        out.append(f"- Chart: `{chart_rel}`")
    return out


def _outcomes_line(outcomes: dict[str, int]) -> str:
    return " · ".join(f"{OUTCOME_LABELS[o]} {n}" for o, n in outcomes.items() if n) or "no rows"


def outcome_transitions(before: ArmReads, after: ArmReads) -> list[tuple[str, str, list[int]]]:
    """(outcome in `before`, outcome in `after`, seeds) for the seeds both arms have whose episode
    outcome differs, most seeds first: which seeds went from "carried not placed" to "success"."""
    moves: dict[tuple[str, str], list[int]] = {}
    for seed, was in before.outcome_by_seed.items():
        now = after.outcome_by_seed.get(seed)
        if now is not None and now != was:
            moves.setdefault((was, now), []).append(seed)
    order = {o: i for i, o in enumerate(EPISODE_OUTCOMES)}
    return sorted(((a, b, sorted(s)) for (a, b), s in moves.items()),
                  key=lambda m: (-len(m[2]), order[m[0]], order[m[1]]))


def _transition_text(move: tuple[str, str, list[int]]) -> str:
    was, now, seeds = move
    shown = ", ".join(map(str, seeds[:20])) + (", ..." if len(seeds) > 20 else "")
    return f"{OUTCOME_LABELS[was]} → {OUTCOME_LABELS[now]} {len(seeds)} (seeds {shown})"


def _outcomes_table(shown: dict[str, ArmReport]) -> list[str]:
    """Arms x episode outcomes: how each arm's episodes ended, in the classifier's order."""
    arms = [(name, rep.reads) for name, rep in shown.items() if rep.reads.outcomes]
    if not arms:
        return []
    used = [o for o in EPISODE_OUTCOMES if any(r.outcomes.get(o) for _, r in arms)]
    out = ["## Outcomes", "",
           "One outcome per episode (prereg.rows.episode_outcome; the first that holds, left to right).", "",
           "| arm | " + " | ".join(OUTCOME_LABELS[o] for o in used) + " |",
           "| --- | " + " | ".join("---" for _ in used) + " |"]
    for name, r in arms:
        out.append(f"| {name} | " + " | ".join(str(r.outcomes.get(o, 0)) for o in used) + " |")
    out += ["", *(f"- {OUTCOME_LABELS[o]}: {OUTCOME_RULES[o]}" for o in used if o in OUTCOME_RULES), ""]
    return out


def _validity_head(a: ArmReads, md: bool = False) -> str:
    if a.valid:
        return "VALID"
    failed = sum(not c.ok for c in a.checks)
    return ("**INVALID**" if md else "INVALID") + f" ({failed} reason{'s' if failed != 1 else ''})"


def _validity_lines(a: ArmReads) -> list[str]:
    """One line per check: the failing ones first, each a reason on its own line."""
    return [("FAIL " if not c.ok else "ok   ") + c.text for c in sorted(a.checks, key=lambda c: c.ok)]


def _seed_reads_line(a: ArmReads) -> str:
    bits = []
    if a.worst_knock_cm is not None:
        bits.append(f"worst knock-away {a.worst_knock_cm:+.2f} cm at seed {a.worst_knock_seed}")
    else:
        bits.append("no knock-away")
    if a.success_tick_median is not None:
        lo, hi = a.success_tick_range
        bits.append(f"success ticks median {a.success_tick_median:g} (range {lo}-{hi})")
    bits.append(f"tipped {a.tipped}")
    spend = []
    if a.elapsed_s is not None:
        spend.append(f"wall {a.elapsed_s / 60:.1f} min")
    if a.wall_s_episodes is not None:
        spend.append(f"episode walls {a.wall_s_episodes / 60:.1f} min summed")
    if a.gpu_hours is not None:
        spend.append(f"{a.gpu_hours:.3f} GPU-h")
    if a.mean_batch is not None:
        spend.append(f"mean batch {a.mean_batch:.2f}")
    spend.append(f"{a.predicts:,} predicts")
    bits.append("spend " + ", ".join(spend))
    if a.mask_per_predict is not None:
        bits.append(f"mask interventions {a.mask_violations} ({a.mask_per_predict:.3f} per predict)")
    return "; ".join(bits)


def _rules_markdown(judgement: Judgement) -> list[str]:
    verdicts, seq = judgement.verdicts, judgement.sequential
    if not verdicts and not seq:
        return []
    out = ["### Decision rules", ""]
    for i, v in enumerate(verdicts, 1):
        reads = f"; reads {', '.join(v.arms)}" if v.arms else ""
        out.append(f"{i}. **{v.label}**: if `{v.rule.condition}` ({v.key}{reads}) then \u201c{v.rule.action}\u201d."
                   + (f" Judged on: {v.detail}." if v.detail else ""))
    for s in seq:
        out.append(f"- **{s.label}**: the registered sequential test of arm {s.arm} ({s.section})"
                   + (f": {s.decision.text}." if s.decision else "."))
    out.append("")
    return out


def _registration_markdown(doc: Document, reports: dict[str, ArmReport], judgement: Judgement, now: str,
                           charts: list[Path], folder: Path, unregistered: bool) -> list[str]:
    """The whole registration in one file: every arm, every rule, every pairing, the distance table."""
    out = [UNREGISTERED_LINE, ""] if unregistered else []
    out += [f"# Results: {doc.prereg_id or doc.path.stem}", "",
            f"Pre-registration `{doc.path}`, report {now} (`fontaine-prereg report`). This file is rewritten "
            "by every report of this registration from the runs given to it.", "",
            "## Arms", "",
            "| arm | section | run | validity | successes | engaged | knock-aways | quiet | error rows | "
            "progress_final mean | completion |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    found = {c.comparator.arm: c.report for r in reports.values() for c in r.comparators if c.report is not None}
    shown: dict[str, ArmReport] = {**found, **reports}
    for a in doc.arms():
        sec = doc.find_arm(a.name)[1].section
        rep = shown.get(a.name)
        if not sec.sealed:
            out.append(f"| {a.name} | {sec.name} | | not frozen: no registered reads | | | | | | | |")
        elif rep is None:
            out.append(f"| {a.name} | {sec.name} | no run in this report | | | | | | | | |")
        else:
            r = rep.reads
            out.append(f"| {a.name} | {rep.section} | `{rep.run_dir.name}` | {_validity_head(r)} | "
                       f"{r.successes}/{r.n} | {r.engaged} | {r.knock_aways} | {r.quiet} | {r.error_rows} | "
                       f"{_cm(r.progress_final_mean)} | {r.completion} |")
    out.append("")
    for c in comparison_reads(reports):
        out += c.markdown()
    for rep in shown.values():
        out += _arm_markdown(rep, chart_rel=str(rep.chart) if rep.chart else None, in_registration=True) + [""]
    out += _outcomes_table(shown)
    out += _pairings_markdown(reports, charts, folder)
    out += _distance_table(shown)
    out += _rules_markdown(judgement)
    return out


def _pairings_markdown(reports: dict[str, ArmReport], charts: list[Path], folder: Path) -> list[str]:
    rows = [(arm, c) for arm, rep in reports.items() for c in rep.comparators]
    if not rows:
        return []
    out = ["## Paired comparisons", "",
           f"Per-seed delta of progress_final_cm on the seeds both have; paired bootstrap CI95 "
           f"(computed from {MIN_PAIRED_SEEDS} or more shared seeds only).", ""]
    for arm, c in rows:
        out.append(f"- **{arm} - {c.comparator.name}**: " + (_paired_line(c.paired) if c.paired else c.note)
                   + (f" ({c.note})" if c.paired and c.note else ""))
        if c.reads is not None:
            out += [f"  - {c.comparator.name} → {arm}: {_transition_text(m)}"
                    for m in outcome_transitions(c.reads, reports[arm].reads)]
    out.append("")
    for ch in charts:
        rel = ch.relative_to(folder) if ch.is_relative_to(folder) else ch
        out.append(f"![{ch.stem}]({rel})")
    out.append("")
    return out


def _distance_table(shown: dict[str, ArmReport]) -> list[str]:
    """Mean boat-to-disk distance (cm) at 1 s intervals, per arm, as the seeds' amendment read it."""
    arms = [(name, rep.reads) for name, rep in shown.items() if rep.reads.dist_by_second_mean]
    if not arms:
        return ["## Boat-to-disk distance by second", "",
                "No row of these runs carries `dist_by_second_cm` (runs before the engine wrote it).", ""]
    seconds = max(len(r.dist_by_second_mean) for _, r in arms)
    out = ["## Boat-to-disk distance by second", "",
           "Mean XY distance from the boat to the disk centre (cm) at t = 0, 1, 2, ... s over the ok rows that "
           "reached that second (n in brackets; an episode that ends on success stops contributing).", "",
           "| t (s) | " + " | ".join(n for n, _ in arms) + " |",
           "| --- | " + " | ".join("---" for _ in arms) + " |"]
    for i in range(seconds):
        cells = []
        for _, r in arms:
            m = r.dist_by_second_mean[i] if i < len(r.dist_by_second_mean) else None
            n = r.dist_by_second_n[i] if i < len(r.dist_by_second_n) else 0
            cells.append("" if m is None else f"{m:.2f} ({n})")
        out.append(f"| {i} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _append_section(doc: Document, arms: list[str], section: list[str], now: str) -> None:
    """Replace this tool's section for the same arms, or append one; frozen text is never touched.

    A replaced report that said something else is kept below the new one (folded), with the
    sha256 of its text and when it was replaced; one reported again unchanged is not repeated."""
    key = f"arms={','.join(arms)}"
    lines = list(doc.layout.lines)
    block = next((b for b in doc.layout.results if b.key == key), None)
    if block is not None:
        lines[block.start:block.end + 1] = _with_history(section, lines[block.start:block.end + 1], now)
    else:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += [""] + section
    after = parse("\n".join(lines) + "\n", doc.path)
    ver = verify_layout(after.layout)
    if not ver.ok or after.problems:
        raise PreregError(f"{doc.path}: writing the results section here would touch a frozen part "
                          "(a results block inside a frozen section?); not written")
    write_lines(doc.path, lines)


def _with_history(section: list[str], old: list[str], now: str) -> list[str]:
    """The new section, then the report it replaces (if it differs) and the ones that one replaced."""
    import hashlib

    body = old[1:-1]  # without the begin and end markers
    cut = body.index(REPLACED_MARK) if REPLACED_MARK in body else len(body)
    old_current, history = body[:cut], body[cut + 1:]
    while history and (not history[0].strip() or history[0].startswith("_Earlier reports")):
        history = history[1:]
    new_current = section[1:-1]
    while old_current and not old_current[-1].strip():
        old_current = old_current[:-1]
    while new_current and not new_current[-1].strip():
        new_current = new_current[:-1]
    if [x.rstrip() for x in old_current] == [x.rstrip() for x in new_current]:
        entries = history
    else:
        digest = hashlib.sha256("\n".join(old_current).encode()).hexdigest()
        head = next((x.lstrip("# ").strip() for x in old_current if x.startswith("## ")), "an earlier report")
        entries = [f"<details><summary>Replaced at {now[:16].replace('T', ' ')}Z: {head} "
                   f"(sha256 {digest[:16]})</summary>", "", *old_current, "", "</details>", "", *history]
    if not entries:
        return section
    return [section[0], *new_current, "", REPLACED_MARK,
            "_Earlier reports of these arms, replaced by the one above (newest first):_", "", *entries, section[-1]]


def _primary_line(a: ArmReads) -> str:
    s = f"successes **{a.primary_text()}**"
    if a.success_rate is not None:
        s += f" ({a.success_rate:.1%})"
    names = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}
    for k, (lo, hi) in a.intervals.items():
        s += f"; {names[k]} 95% [{lo:.1%}, {hi:.1%}]"
    if a.stopped_early:
        s += " (labelled: n is the episodes achieved, not the planned count)"
    return s


def _paired_line(p: Paired) -> str:
    if not p.shared_seeds:
        return "no shared seeds: nothing to pair"
    ci = f"CI95 [{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]" if p.delta_ci else "no CI"
    s = (f"progress_final_cm delta ({p.arm} - {p.comparator}) on {p.shared_seeds} shared seeds: "
         f"mean {p.delta_mean:+.3f} cm, {ci} ({p.ci_method}); better/tied/worse {p.better}/{p.tied}/{p.worse}; "
         f"successes {p.arm_successes} vs {p.comparator_successes}, success seeds in both {p.success_overlap}, "
         f"only {p.arm} {p.success_only_arm}, only {p.comparator} {p.success_only_comparator}")
    if p.only_arm or p.only_comparator:
        s += f"; not shared: {len(p.only_arm)} seeds only {p.arm}, {len(p.only_comparator)} only {p.comparator}"
    ps = p.success
    if ps is not None and ps.shared and ps.ci is not None:
        s += (f"; success difference {100 * ps.delta:+.1f} pp on {ps.shared} seeds, [{100 * ps.ci[0]:+.1f}, "
              f"{100 * ps.ci[1]:+.1f}] ({ps.method})")
    return s


def _cm(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f} cm"
