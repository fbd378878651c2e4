"""`fontaine-prereg report`: the frozen reads of finished (or stopped) runs, written down.

For each `ARM=RUN_DIR`: reads from RUN_DIR/rows.jsonl (through prereg.rundir.rows), RUN_DIR/results.md
and RUN_DIR/chart.png (with the paired-delta panel when the arm has a comparator); the
registration's results file beside the runs (`<prereg-id>.results.md`: every registered arm,
every rule, every pairing, with one paired-delta chart per pairing); and one dated results
section appended to the pre-registration, owned by the tool: re-reporting the same arms
replaces that section and nothing else. The document must verify first: results are only
ever computed against an unmodified registration.

An arm is VALID only with provenance (prereg.outputs.provenance: its manifest names this frozen
section's hash, the arm and the registered settings) and rows that pass the registered
validity checks. Rows from elsewhere are read only with `unregistered=True`
(`--unregistered`), which labels every output unregistered in its first line and never
appends to the pre-registration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.colors import registration_colors
from prereg.core.errors import PreregError
from prereg.core.untrusted import printable
from prereg.document.model import Document
from prereg.document.read import load_valid
from prereg.document.seal import require_intact
from prereg.outputs.page import PAGE, registration_page, registration_page_name, run_page
from prereg.outputs.report_markdown import (
    append_section,
    arm_markdown,
    cm_text,
    outcomes_line,
    paired_line,
    primary_line,
    registration_markdown,
    rules_markdown,
    section_markdown,
    story_markdown,
    validity_head,
    validity_lines,
    variants_markdown,
)
from prereg.outputs.report_read import (
    UNREGISTERED_LINE,
    ArmReport,
    RunRead,
    arm_report,
    arms_by_run,
    comparator_read,
    comparison_reads,
    draw_paired_charts,
    judge_reports,
    pair_comparison_arms,
    paired_chart_name,
    registration_results_name,
)
from prereg.outputs.report_real import cross_arm_markdown, real_markdown
from prereg.rundir.files import utc_now, write_json_atomic, write_text_atomic
from prereg.stats.chart import per_seed_chart
from prereg.stats.comparison_report import ComparisonRead, comparison_runs
from prereg.stats.reads import ArmReads, Verdict
from prereg.stats.real_read import cross_arm
from prereg.stats.story import Story, VariantStory, build_story
from prereg.stats.variants_compare import pooled_difference
from prereg.stats.verdict import Judgement, SequentialVerdict

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


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
    registration_page: Path | None = None  # <prereg-id>.results.html beside the registration's results file
    stories: list[Story] = field(default_factory=list)  # each run directory's story (prereg/stats/story.py)

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
                    "page": str(r.page) if r.page else None,
                } for name, r in self.arms.items()
            },
            "decision_rules": [v.as_dict() for v in self.verdicts],
            "sequential_tests": [s.as_dict() for s in self.sequential],
            "comparisons": [c.as_dict() for c in self.comparisons],
            "appended": self.appended,
            "unregistered": self.unregistered,
            "registration_results": str(self.registration_md) if self.registration_md else None,
            "registration_page": str(self.registration_page) if self.registration_page else None,
        }

    def summary_text(self) -> str:
        out = [UNREGISTERED_LINE.replace("**", "")] if self.unregistered else []
        out.append(f"{self.prereg_id} ({self.prereg_path}), report {self.generated_at}")
        for story in self.stories:
            out.append(f"\nrun {story.run}: {story.headline}")
            out += [f"  variants  {v.arm}: {v.pooled_words()}" for v in story.variants]
            out += [f"  variants  {p.sentence()}" for p in story.variants_paired]
        for name, r in self.arms.items():
            a = r.reads
            out.append(f"\n{name}  [{r.run_dir}]")
            out.append(f"  primary   {primary_line(a).replace('**', '')}")
            if r.after_stop:
                out.append(f"  label     {r.after_stop}")
            out.append(f"  validity  {validity_head(a)}")
            out += [f"    - {t}" for t in validity_lines(a)]
            out.append(f"  secondary engaged {a.engaged}, knock-aways {a.knock_aways}, quiet {a.quiet}, "
                       f"progress_final mean {cm_text(a.progress_final_mean)} median {cm_text(a.progress_final_median)}, "
                       f"success seeds {a.success_seeds}")
            if a.outcomes:
                out.append(f"  outcomes  {outcomes_line(a.outcomes)}")
            for c in r.comparators:
                out.append(f"  vs {c.comparator.name}: " + (paired_line(c.paired) if c.paired else c.note))
            out.append(f"  wrote     {r.results_md}, {r.chart}" + (f", {r.page}" if r.page else ""))
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
        if self.registration_page:
            out.append(f"registration page:    {self.registration_page}")
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
    folder = runs_folder([r.run_dir for r in reports.values()])
    reg_md = folder / registration_results_name(doc)
    reg_page = folder / registration_page_name(reg_md.name)
    stories = [_write_run_files(doc, [reports[a] for a in arms], judgement, now, colors, head, unregistered, reg_page)
               for arms in arms_by_run(reports).values()]
    charts = draw_paired_charts(doc, reports, folder, colors)
    reg_lines = registration_markdown(doc, reports, judgement, now, charts, folder, unregistered, stories)
    reg_lines += cross_arm_markdown(cross_arm([r.real for r in reports.values() if r.real is not None]))
    write_shown(reg_md, "\n".join(reg_lines).rstrip("\n") + "\n")
    write_shown(reg_page, registration_page(doc, reports, judgement, now, colors, reg_page, stories=stories,
                                                     unregistered=unregistered))
    section = [printable(line) for line in section_markdown(doc, reports, judgement, now, reg_md)]
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
        append_section(doc, sorted(reports), section, now)
    return Report(doc.path, doc.prereg_id, now, reports, verdicts, "\n".join(section), append, skipped,
                  unregistered, reg_md, charts, judgement.sequential, reg_page, stories)


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
    runs_read: dict[Path, RunRead] = {}  # a comparison run stands for two arms: read once
    for arm, run_dir in runs.items():
        reports[arm] = arm_report(doc, arm, Path(run_dir), unregistered, runs_read=runs_read)
    for arm, rep in reports.items():
        rep.comparators = [comparator_read(doc, rep, c, reports, unregistered) for c in doc.comparators_for(arm)]
        pair_comparison_arms(rep, reports)
    judgement = judge_reports(doc, reports)
    for c in comparison_reads(reports):  # whether its decision stands is the verdict engine's
        c.verdict = judgement.comparison_of(c.spec)
    return doc, reports, judgement


def _write_run_files(doc: Document, reps: list[ArmReport], judgement: Judgement, now: str, colors: dict,
                     head: list[str], unregistered: bool, reg_page: Path) -> Story:
    """results.md, results.json, chart.png and results.html of one run directory: one arm's, or a comparison
    run's two arms together (one chart of both, paired B - A; one results file that states the decision),
    each leading with the run's story (its headline); the story."""
    rep = reps[0]
    order = [a.name for a in doc.arms()]
    reps = sorted(reps, key=lambda r: order.index(r.reads.arm) if r.reads.arm in order else len(order))
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
    story = build_story(run_dir.name, {r.reads.arm: r.evidence for r in reps}, judgement, comparisons, generated_at=now,
                        real=[r.real for r in reps], **variant_stories(reps, comparisons))
    md += story_markdown(story)
    md += variants_markdown(story)
    for c in comparisons:
        md += c.markdown()
    for r in reps:
        r.chart, r.results_md = chart, run_dir / rd.RESULTS
        md += arm_markdown(r, chart_rel=rd.CHART) + [""]
        md += real_markdown(r.real) if r.real is not None else []
    md += rules_markdown(judgement)  # every registered rule
    write_shown(run_dir / rd.RESULTS, "\n".join(md).rstrip("\n") + "\n")
    if len(reps) == 1:
        doc_json = _results_json(doc, rep, judgement, now, unregistered)
    else:
        doc_json = _comparison_results_json(doc, reps, comparisons, judgement, now, unregistered)
    doc_json["chart"] = chart_record(series, paired, colors)  # what the console draws in cells
    doc_json["story"] = story.as_dict()  # what every surface leads with
    doc_json["real"] = {r.reads.arm: r.real.as_dict() for r in reps if r.real is not None}  # recorded: a later edit shows
    write_json_atomic(run_dir / rd.RESULTS_JSON, doc_json)
    page = run_dir / PAGE  # the same objects as a page, written last: it links the files above
    write_shown(page, run_page(doc, reps, judgement, now, colors, unregistered=unregistered,
                                        registration=reg_page, story=story))
    for r in reps:
        r.page = page
    return story


def variant_stories(reps: list[ArmReport], comparisons: list[ComparisonRead]) -> dict:
    """build_story's `variants` (each arm's VariantStory, in the run's order) and `variants_paired` (a comparison
    run's pooled paired read, B - A as its arms are registered) of a crossed design; empty for a run of the
    scene alone."""
    m = reps[0].snapshot.manifest if reps[0].snapshot is not None else None
    if m is None or not m.variants:
        return {}
    reads = {r.reads.arm: r.variants for r in reps if r.variants is not None}
    paired = [pooled_difference(c.spec.arm_a, reads[c.spec.arm_a], c.spec.arm_b, reads[c.spec.arm_b])
              for c in comparisons if c.spec.arm_a in reads and c.spec.arm_b in reads]
    return {"variants": [VariantStory.of(arm, read, m.read_variant) for arm, read in reads.items()],
            "variants_paired": paired}


def write_shown(path: Path, text: str) -> None:
    """A report's text file (results.md, results.html, the registration's), every secret's shape redacted and
    every control character shown as an escape (prereg.core.untrusted.printable): `cat results.md` or a page
    never acts on an ESC or BEL a title, an arm name or a reason brought in."""
    write_text_atomic(path, printable(text))


def chart_record(series: list[ArmReads], paired, colors: dict) -> dict:
    """results.json's `chart`: what chart.png draws, as numbers (each arm's per-seed progress, its
    successes and knock-aways, the paired deltas), so a reader draws it without computing the report
    again (the console's results screen, in a terminal drawn in cells)."""
    return {
        "arms": [{"arm": a.arm, "successes": a.successes, "n": a.n, "knock_aways": a.knock_aways,
                  "progress_final_mean": a.progress_final_mean,
                  "progress_by_seed": {str(k): v for k, v in a.progress_by_seed.items()},
                  "success_seeds": list(a.success_seeds), "knock_seeds": list(a.knock_seeds)} for a in series],
        "paired": paired.as_dict() if paired is not None else None,
        "colors": {a.arm: colors[a.arm] for a in series if a.arm in colors},
    }


def _arm_json(r: ArmReads) -> dict:
    return {"valid": r.valid, "invalid_because": [c.text for c in r.checks if not c.ok],
            "primary": {"successes": r.successes, "n": r.n, "n_planned": r.n_planned, "text": r.primary_text(),
                        "intervals": {k: list(v) for k, v in r.intervals.items()}},
            "knock_aways": r.knock_aways, "engaged": r.engaged}


def _results_json(doc: Document, rep: ArmReport, judgement: Judgement, now: str, unregistered: bool) -> dict:
    """results.json: what a machine reads of this run's report (the Discord results post)."""
    r = rep.reads
    return {"prereg_id": doc.prereg_id, "arm": r.arm, "generated_at": now, "unregistered": unregistered,
            **_arm_json(r), "rows_level": rep.rows_level,
            "verdicts": [v.as_dict() for v in judgement.verdicts],
            "sequential_tests": [s.as_dict() for s in judgement.sequential]}


def _comparison_results_json(doc: Document, reps: list[ArmReport], comparisons: list[ComparisonRead],
                             judgement: Judgement, now: str, unregistered: bool) -> dict:
    """results.json of a comparison run: each arm's reads under `arms` (labelled when read after an
    anytime-valid stop) and the comparison's decision and savings under `comparison`."""
    c = comparisons[0] if comparisons else None
    return {"prereg_id": doc.prereg_id, "arm": "-vs-".join(r.reads.arm for r in reps) if c is None else c.spec.label,
            "generated_at": now, "unregistered": unregistered, "valid": all(r.reads.valid for r in reps),
            "arms": {r.reads.arm: {**_arm_json(r.reads), "label": r.after_stop, "rows_level": r.rows_level} for r in reps},
            "comparison": c.as_dict() if c is not None else None,
            "verdicts": [v.as_dict() for v in judgement.verdicts],
            "sequential_tests": [s.as_dict() for s in judgement.sequential]}


def runs_folder(dirs: list[Path]) -> Path:
    """Where the registration's results go: the folder that holds the runs (their common parent)."""
    parents = {d.resolve().parent for d in dirs}
    if len(parents) == 1:
        return parents.pop()
    import os
    return Path(os.path.commonpath([str(p) for p in parents]))


def registration_files(doc: Document, runs: dict[str, Path]) -> list[Path]:
    """The files a report of these runs (arm -> run directory) wrote beside them, those that exist:
    the registration's results file and each arm's paired charts (what `fontaine-prereg publish` shares)."""
    folder = runs_folder([Path(d) for d in runs.values()])
    names = [registration_results_name(doc)]
    names += [paired_chart_name(doc, arm, c.name) for arm in runs for c in doc.comparators_for(arm)]
    return [folder / n for n in names if (folder / n).is_file()]


def _is_shipped_example(path: Path) -> bool:
    return path.resolve().parent == EXAMPLES_DIR
