"""`fontaine-prereg report`: the frozen reads of finished (or stopped) runs, written down.

For each `ARM=RUN_DIR`: reads from RUN_DIR/rows.jsonl (through prereg.rows), RUN_DIR/results.md
and RUN_DIR/chart.png; then one dated results section appended to the pre-registration, owned
by the tool: re-reporting the same arms replaces that section and nothing else. The document
must verify first: results are only ever computed against an unmodified registration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg import curtail
from prereg.chart import per_seed_chart
from prereg.document import RESULTS_END, Comparator, Document, load_valid, parse
from prereg.errors import PreregError
from prereg.reads import ArmReads, Check, Paired, Verdict, arm_reads, evaluate_rule, paired_reads
from prereg.rows import read_rows
from prereg import rundir as rd
from prereg.rundir import utc_now
from prereg.seal import require_intact, verify_layout, write_lines

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


@dataclass
class ComparatorRead:
    comparator: Comparator
    paired: Paired | None
    reads: ArmReads | None  # the comparator's own reads, for the chart
    note: str = ""


@dataclass
class ArmReport:
    reads: ArmReads
    run_dir: Path
    section: str
    sha256: str
    comparators: list[ComparatorRead] = field(default_factory=list)
    chart: Path | None = None
    results_md: Path | None = None


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
            "appended": self.appended,
        }

    def summary_text(self) -> str:
        out = [f"{self.prereg_id} ({self.prereg_path}), report {self.generated_at}"]
        for name, r in self.arms.items():
            a = r.reads
            out.append(f"\n{name}  [{r.run_dir}]")
            out.append(f"  primary   {_primary_line(a).replace('**', '')}")
            out.append(f"  validity  {'VALID' if a.valid else 'INVALID'}: " + "; ".join(c.text for c in a.checks))
            out.append(f"  secondary engaged {a.engaged}, knock-aways {a.knock_aways}, quiet {a.quiet}, "
                       f"progress_final mean {_cm(a.progress_final_mean)} median {_cm(a.progress_final_median)}, "
                       f"success seeds {a.success_seeds}")
            for c in r.comparators:
                out.append(f"  vs {c.comparator.name}: " + (_paired_line(c.paired) if c.paired else c.note))
            out.append(f"  wrote     {r.results_md}, {r.chart}")
        if self.verdicts:
            out.append("\ndecision rules")
            for v in self.verdicts:
                out.append(f"  [{v.verdict}] if {v.rule.condition} -> {v.rule.action}\n      ({v.detail})")
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
                 now: str | None = None) -> Report:
    """Compute the reads of each arm's run, write results.md + chart.png, append the results section."""
    doc = load_valid(prereg_path)
    p = str(doc.path)
    require_intact(doc.layout, p,
                   not_frozen=f"and results are read only against a frozen pre-registration "
                              f"(`fontaine-prereg freeze {p}` before the launch)",
                   modified="Results are not computed against a modified registration: revert the change "
                            "(e.g. `git diff`)")
    if not runs:
        raise PreregError("no runs given: pass --run ARM=RUN_DIR for each arm to report")
    now = now or utc_now()
    reports: dict[str, ArmReport] = {}
    for arm, run_dir in runs.items():
        reports[arm] = _arm_report(doc, arm, Path(run_dir))
    for arm, rep in reports.items():
        rep.comparators = [_comparator_read(doc, rep, c, reports) for c in doc.comparators_for(arm)]
    verdicts = curtail.decided_verdicts(_verdicts(doc, reports), {a: r.run_dir for a, r in reports.items()})
    for arm, rep in reports.items():
        comp = next((c.reads for c in rep.comparators if c.reads is not None), None)
        series = [rep.reads] + ([comp] if comp else [])
        title = f"{doc.prereg_id}: " + " vs ".join(a.arm for a in series)
        rep.chart = per_seed_chart(series, rep.run_dir / rd.CHART, title)
        mine = [v for v in verdicts if arm in v.rule.arms()]
        md = [f"# Results: {arm}", "", f"Pre-registration `{doc.prereg_id}` ({doc.path}), report {now}.", ""]
        md += _arm_markdown(rep, chart_rel=rd.CHART) + [""] + _rules_markdown(mine)
        rep.results_md = rep.run_dir / rd.RESULTS
        rd.write_text_atomic(rep.results_md, "\n".join(md).rstrip("\n") + "\n")
    section = _section_markdown(doc, reports, verdicts, now)
    skipped = ""
    if append and _is_shipped_example(doc.path):
        append, skipped = False, (f"{doc.path} is a shipped example and stays as shipped; to keep results in the "
                                  "document, report against a copy (same frozen hash) in your own folder")
    if append:
        _append_section(doc, sorted(reports), section)
    return Report(doc.path, doc.prereg_id, now, reports, verdicts, "\n".join(section), append, skipped)


def _is_shipped_example(path: Path) -> bool:
    return path.resolve().parent == EXAMPLES_DIR


# ---------------------------------------------------------------- reading runs


def _arm_report(doc: Document, arm: str, run_dir: Path) -> ArmReport:
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
    got = read_rows(run_dir / rd.ROWS)
    status = rd.read_json(run_dir / rd.STATUS)
    manifest = rd.read_json(run_dir / rd.MANIFEST)
    bad = [f"line {b.line_no}: {b.reason}" for b in got.bad]
    reads = arm_reads(arm, got.rows, planned_seeds=list(sm.protocol.seeds), validity=sm.reads.validity,
                      interval=sm.reads.interval, run_state=status, bad_lines=bad)
    sha = sm.section.seal.sha256
    _manifest_checks(reads, manifest, sha, arm)
    decided = curtail.savings_note(status, reads)
    if decided:
        reads.notes.append(decided)
    if not (run_dir / rd.ROWS).exists():
        reads.notes.append("the run directory has no rows.jsonl")
    return ArmReport(reads, run_dir, sm.section.name, sha)


def _manifest_checks(reads: ArmReads, manifest: dict | None, sha: str, arm: str) -> None:
    if manifest is None:
        reads.notes.append("no readable manifest.json: the run's pre-registration hash cannot be checked")
        return
    pre = manifest.get("prereg") if isinstance(manifest.get("prereg"), dict) else {}
    recorded = pre.get("sha256") or manifest.get("prereg_sha256")
    if not recorded:
        reads.notes.append("the manifest records no pre-registration hash (launched without --prereg?)")
    else:
        ok = recorded == sha
        reads.checks.append(Check("prereg_sha256", None, None, ok,
                                  f"launched from this registration (sha256 {sha[:12]})" if ok else
                                  f"launched from a different registration text (manifest {str(recorded)[:12]}, "
                                  f"document {sha[:12]})"))
    m_arm = manifest.get("arm")
    if isinstance(m_arm, dict):
        m_arm = m_arm.get("name")
    if m_arm and m_arm != arm:
        reads.notes.append(f"the manifest names arm {m_arm!r}, reported as {arm!r}")


def _comparator_read(doc: Document, rep: ArmReport, c: Comparator, reports: dict[str, ArmReport]) -> ComparatorRead:
    found_note = ""
    if c.arm:
        other = reports.get(c.arm) or _sibling_run(doc, c.arm, rep.run_dir.parent)
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
        creads = arm_reads(c.name, got.rows, run_state=rd.read_json(run / rd.STATUS))
    paired = paired_reads(rep.reads, creads, c.name)
    note = found_note
    if paired.shared_seeds == 0:
        note = "no shared seeds with a progress_final_cm value: nothing to pair"
    return ComparatorRead(c, paired, creads, note)


def _sibling_run(doc: Document, arm: str, runs_dir: Path) -> ArmReport | None:
    """The newest run of `arm` in `runs_dir` launched from this registration's frozen section, if any.

    The console reports one run at a time; this pairs it with its registered comparator arm
    without asking for the other run directory. Finished runs are preferred to unfinished ones.
    """
    found = doc.find_arm(arm)
    if found is None or not found[1].section.sealed or not runs_dir.is_dir():
        return None
    sha = found[1].section.seal.sha256
    best = None
    for d in runs_dir.iterdir():
        man = rd.read_json(d / rd.MANIFEST) if d.is_dir() else None
        if not man or man.get("arm") != arm or not isinstance(man.get("prereg"), dict):
            continue
        if man["prereg"].get("sha256") != sha:
            continue
        done = (rd.read_json(d / rd.STATUS) or {}).get("state") == "done"
        key = (done, str(man.get("started_at") or ""), d.name)
        if best is None or key > best[0]:
            best = (key, d)
    return _arm_report(doc, arm, best[1]) if best else None


def _verdicts(doc: Document, reports: dict[str, ArmReport]) -> list[Verdict]:
    values: dict[str, dict] = {}
    for rep in reports.values():  # comparator arms found beside a reported run count too
        for c in rep.comparators:
            if c.comparator.arm and c.reads is not None and c.comparator.arm not in reports:
                values[c.comparator.arm] = dict(c.reads.values())
    for arm, rep in reports.items():
        if rep.reads.n == 0:
            values[arm] = {}  # no episodes: every rule on this arm is undetermined, never vacuously true
            continue
        v = dict(rep.reads.values())
        first = next((c.paired for c in rep.comparators if c.paired and c.paired.shared_seeds), None)
        if first:
            v.update(first.values())
        values[arm] = v
    return [evaluate_rule(r, values) for r in doc.rules() if r.arms() & set(reports)]


# ---------------------------------------------------------------- writing


def _section_markdown(doc: Document, reports: dict[str, ArmReport], verdicts: list[Verdict], now: str) -> list[str]:
    arms = sorted(reports)
    out = [f"<!-- fontaine:results begin arms={','.join(arms)} -->",
           f"## Results: {', '.join(arms)} ({now[:16].replace('T', ' ')}Z, fontaine-prereg report)", "",
           "_Written by `fontaine-prereg report`; reporting these arms again replaces this section. "
           "Write interpretation outside it._", ""]
    for arm in arms:
        rep = reports[arm]
        out += _arm_markdown(rep, chart_rel=str(rep.chart) if rep.chart else None) + [""]
    out += _rules_markdown(verdicts)
    out.append(RESULTS_END)
    return out


def _arm_markdown(rep: ArmReport, chart_rel: str | None) -> list[str]:
    a = rep.reads
    out = [f"### {a.arm}", "",
           f"Run `{rep.run_dir}`; registered in {rep.section} (sha256 `{rep.sha256[:12]}`).", "",
           f"- **Primary**: {_primary_line(a)}",
           f"- **Validity**: {'VALID' if a.valid else '**INVALID**'}: " + "; ".join(c.text for c in a.checks),
           f"- **Secondary** (record-only): engaged (progress_cm > 1) {a.engaged}; knock-aways "
           f"(progress_final_cm <= -1) {a.knock_aways}"
           + (f" at seeds {a.knock_seeds[:30]}" if a.knock_seeds and len(a.knock_seeds) <= 30 else "")
           + f"; quiet {a.quiet}; progress_final_cm mean {_cm(a.progress_final_mean)}, median "
           f"{_cm(a.progress_final_median)}; success seeds {a.success_seeds}; mask violations {a.mask_violations}"
           + (f"; first-action delta {a.first_action_delta_deg:.2f} deg" if a.first_action_delta_deg is not None else "")]
    for c in rep.comparators:
        out.append(f"- **Paired vs {c.comparator.name}**: " + (_paired_line(c.paired) if c.paired else c.note)
                   + (f" ({c.note})" if c.paired and c.note else ""))
    for n in a.notes:
        out.append(f"- Note: {n}")
    if a.bad_lines:
        out.append("- Unreadable rows: " + "; ".join(a.bad_lines[:5]))
    if chart_rel:
        out.append(f"- Chart: `{chart_rel}`")
    return out


def _rules_markdown(verdicts: list[Verdict]) -> list[str]:
    if not verdicts:
        return []
    out = ["### Decision rules", ""]
    for i, v in enumerate(verdicts, 1):
        out.append(f"{i}. **{v.verdict}**: if `{v.rule.condition}` ({v.rule.section}) then \u201c{v.rule.action}\u201d. "
                   f"Judged on: {v.detail}.")
    out.append("")
    return out


def _append_section(doc: Document, arms: list[str], section: list[str]) -> None:
    """Replace this tool's section for the same arms, or append one; frozen text is never touched."""
    key = f"arms={','.join(arms)}"
    lines = list(doc.layout.lines)
    block = next((b for b in doc.layout.results if b.key == key), None)
    if block is not None:
        lines[block.start:block.end + 1] = section
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
    return s


def _cm(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f} cm"
