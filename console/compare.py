"""Arms side by side, read through the verdict engine: the same counts, denominators, intervals,
paired reads and verdicts as `fontaine-prereg report`, never a second computation.

`compare_view(prereg_path, runs)` reads the newest run of each arm (`{arm: run_dir}`) with
`prereg.outputs.report.read_registration` (which writes nothing) and turns it into table cells:
successes over each planned seed's last row (the read model's denominator; an error row is a
non-success) beside the registered interval on the same denominator; validity with its first reason; each arm paired with its
registered comparator (progress delta with the report's paired bootstrap, and the success
difference with Newcombe's paired score interval); every registered rule's verdict by key.
It reads files: call it off the UI thread.

A comparison run (`fontaine-eval --arms A,B`, issue 24) stands for both of its arms, and the view
carries its comparison (`ComparisonPanel`): the paired delta B - A over the seeds of the shared plan
prefix with its confidence-sequence band (`prereg.stats.comparison.path`, the statistics `decide` reads:
nothing is computed twice), where the decision fell, and the evidence in words. `band_chart` draws
it in cells (pure: the screen calls it with its own width).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text

from prereg import rundir as rd
from prereg.core.errors import PreregError
from prereg.document.comparison_spec import SUCCESS_METRIC
from prereg.stats.comparison import ComparisonPath

ARM_COLUMNS = ("arm", "validity", "state", "done", "successes", "CI95 %", "knock-aways", "zero-fallbacks", "run")
PAIRED_COLUMNS = ("pair", "shared", "Δ progress cm", "CI95 (bootstrap)", "Δ success pp", "CI95 (Newcombe paired)",
                  "better/tied/worse")
INTERVAL_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}


@dataclass(frozen=True)
class CompareView:
    prereg_id: str
    arms: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (key, cells)
    paired: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    interval: str = ""
    error: str | None = None
    comparison: "ComparisonPanel | None" = None
    invalid: list[str] = field(default_factory=list)  # why each INVALID arm is, every failed check, in words


@dataclass(frozen=True)
class ComparisonPanel:
    """A comparison run's comparison, as the view shows it."""

    run: str  # the run directory's name
    title: str  # "B vs A on success: <test>, alpha ..., max N seeds per arm"
    path: ComparisonPath
    decided_at: int | None  # the prefix seed the decision fell on (None: no decision, or void)
    words: tuple[str, ...]  # the evidence in words, one line each


def focused_runs(runs: dict[str, Path], focus: Path | None) -> dict[str, Path]:
    """The newest run of each arm, with a comparison run the view was opened on standing for both of its arms."""
    out = dict(runs)
    if focus is None:
        return out
    m, _ = rd.read_manifest(focus)  # only the manifest: this runs every refresh, before the nothing-changed check
    if m is not None and m.is_comparison:
        out = {k: v for k, v in out.items() if Path(v) != Path(focus)}
        out.update({arm: Path(focus) for arm in m.arms})
    return out


def compare_view(prereg_id: str, prereg_path: str | Path | None, runs: dict[str, Path]) -> CompareView:
    """The compare view of a registration's newest runs, or the one line that says why there is none."""
    from prereg.document.read import load
    from prereg.outputs.report import read_registration

    if not prereg_path:
        return CompareView(prereg_id, error="the runs do not say where their pre-registration is (manifest prereg.path)")
    from prereg.stats.comparison_report import comparison_runs

    try:
        doc = load(prereg_path)
        known = {a.name for a in doc.arms()}
        runs = {a: d for a, d in comparison_runs(doc, runs).items() if a in known}  # a comparison run: both arms
        doc, reports, judgement = read_registration(prereg_path, runs)
    except PreregError as exc:
        return CompareView(prereg_id, error=str(exc).splitlines()[0])
    arms, invalid = [], []
    interval = ""
    for a in doc.arms():
        rep = reports.get(a.name)
        if rep is None:
            arms.append((a.name, (a.name, "no run", "", "", "", "", "", "", "")))
            continue
        r = rep.reads
        name, ci = next(iter(r.intervals.items()), ("", None))
        interval = interval or INTERVAL_NAMES.get(name, name)
        state = r.run_state or "?"
        validity = "VALID" if r.valid else "INVALID"
        invalid += invalid_lines(a.name, r)
        rate = f" {100 * r.success_rate:.1f}%" if r.success_rate is not None else ""
        zf = f"{r.zero_fallbacks}" + (f" ({100 * r.zero_fallback_rate:.2f}%)" if r.zero_fallback_rate is not None else "")
        arms.append((a.name, (a.name, validity, state, f"{r.n}/{r.n_planned}", f"{r.successes}/{r.n}{rate}",
                              f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "", str(r.knock_aways), zf,
                              rep.run_dir.name)))
    paired = []
    for arm, rep in reports.items():
        c = next(iter(rep.comparators), None)
        if c is None:
            continue
        paired.append((arm, _paired_cells(arm, c)))
    verdicts = [f"[{v.label}] {v.key}: if {v.rule.condition}" for v in judgement.verdicts]
    verdicts += [f"[{s.label}] sequential test of arm {s.arm}" for s in judgement.sequential]
    return CompareView(doc.prereg_id or prereg_id, arms, paired, verdicts, interval,
                       comparison=_panel(reports), invalid=invalid)


BAD_LINES_SHOWN = 5


def invalid_lines(arm: str, reads) -> list[str]:
    """An INVALID arm's failed checks, one line each, then the rows.jsonl lines that are not rows
    (the check says "listed below": they are, here). The validity column says only INVALID: its
    first reason, in the table, cut the table's last columns off at 80x24."""
    out = [f"{arm}: {c.text}" for c in reads.checks if not c.ok]
    bad = list(reads.bad_lines)
    if bad:
        out += [f"  {line}" for line in bad[:BAD_LINES_SHOWN]]
        if len(bad) > BAD_LINES_SHOWN:
            out.append(f"  … {len(bad) - BAD_LINES_SHOWN} more")
    return out


def _panel(reports) -> ComparisonPanel | None:
    from prereg.outputs.report_read import comparison_reads

    found = comparison_reads(reports)
    if not found:
        return None
    c = found[0]
    words = [f"decision: {c.decision_text()}" if c.decision is not None else f"no decision yet: {c.path.evidence_text()}"]
    if c.decision is not None and c.path.at and c.path.at[-1] != c.decided_at:
        words.append(f"rows since (read, not deciding): {c.path.evidence_text()}")
    if c.decision is not None:
        words.append(c.savings_text())
    if c.path.void_at is not None:
        words.append(f"void: a delta broke the registered bound at prefix seed {c.path.void_at}; the band stops before it")
    if c.stopped_by_decision:
        words.append(f"the arms' counts above are {c.stop_label()}")
    title = f"{c.spec.describe()}, max {c.max_seeds} seeds per arm"
    return ComparisonPanel(c.run_dir.name, title, c.path, c.decided_at, tuple(words))


BAND, MEAN, DECISION, ZERO, EFFECT = "░", "━", "│", "─", "┈"
BAND_STYLE, MEAN_STYLE, DECISION_STYLE, AXIS_STYLE = "steel_blue", "bold white", "bold yellow", "grey50"


def band_chart(path: ComparisonPath, decided_at: int | None, width: int, height: int) -> Text:
    """The paired delta B - A over the seeds of the shared prefix: the confidence-sequence band (░), its
    running mean (━), zero (─), the minimum effect (┈, both signs) and the seed the decision fell on (│),
    `width` x `height` cells for the plot plus an axis column on the left and two lines under it."""
    out = Text()
    n = len(path.at)
    if n == 0:
        return Text("no pair finished yet: nothing to draw", style=AXIS_STYLE)
    width, height = max(8, width), max(3, height)
    eff = path.spec.minimum_effect
    if path.spec.metric == SUCCESS_METRIC:
        ymin, ymax = -1.0, 1.0
    else:  # the band starts at +/- the registered bound: scale to the later seeds, clip the first ones
        tail = slice(min(n - 1, n // 4), n)
        vals = [v for v in (*path.lo[tail], *path.hi[tail], *path.mean) if v == v] + [0.0, eff, -eff]
        ymin, ymax = min(vals), max(vals)
        pad = 0.08 * (ymax - ymin or 1.0)
        ymin, ymax = ymin - pad, ymax + pad
    step = (ymax - ymin) / height

    def row_of(v: float) -> int:
        return min(height - 1, max(0, int((ymax - v) / step)))

    cols = [min(n - 1, round(c * (n - 1) / (width - 1))) if width > 1 else n - 1 for c in range(width)]
    mark = None if decided_at is None or not (1 <= decided_at <= path.at[-1]) else next(
        (c for c in range(width) if path.at[cols[c]] >= decided_at), width - 1)
    zero, effs = row_of(0.0), {row_of(eff), row_of(-eff)}
    label_w = 8
    for r in range(height):
        y_hi, y_lo = ymax - r * step, ymax - (r + 1) * step
        label = f"{y_hi:+.2f}" if r == 0 else f"{y_lo:+.2f}" if r == height - 1 else "0" if r == zero else ""
        out.append(f"{label:>{label_w - 1}} ", style=AXIS_STYLE)
        for c in range(width):
            i = cols[c]
            lo, hi, m = path.lo[i], path.hi[i], path.mean[i]
            if row_of(m) == r:
                out.append(MEAN, style=MEAN_STYLE)
            elif mark == c:
                out.append(DECISION, style=DECISION_STYLE)
            elif lo == lo and hi == hi and lo <= y_hi and hi >= y_lo:
                out.append(BAND, style=BAND_STYLE)
            elif r == zero:
                out.append(ZERO, style=AXIS_STYLE)
            elif r in effs:
                out.append(EFFECT, style=AXIS_STYLE)
            else:
                out.append(" ")
        out.append("\n")
    first, last = str(path.at[0]), str(path.at[-1])
    axis = first + " " * max(1, width - len(first) - len(last)) + last
    out.append(" " * label_w + axis + "\n", style=AXIS_STYLE)
    if mark is None:
        out.append(" " * label_w + "seeds of the shared plan prefix (both arms have a row)", style=AXIS_STYLE)
        return out
    under = " " * mark + "▲"
    for said in (f"decided at seed {decided_at} of the prefix", f"decided at {decided_at}"):
        if mark + 2 + len(said) <= width:  # the words to the right of the mark, else to its left: never wrapped
            under = " " * mark + "▲ " + said
            break
        if mark >= len(said) + 1:
            under = " " * (mark - len(said) - 1) + said + " ▲"
            break
    out.append(" " * label_w + under, style=DECISION_STYLE)
    return out


def band_legend(path: ComparisonPath, width: int = 1000) -> str:
    """The band's glyphs in words, in lines of at most `width` cells that break only between entries
    (wrapped as prose it split an entry from its words: "│ the" / "decision")."""
    spec = path.spec
    unit = "rate difference" if spec.metric == SUCCESS_METRIC else "cm"
    entries = [f"{spec.arm_b} - {spec.arm_a} per seed ({unit}):",
               f"{BAND} {100 * (1 - spec.alpha):g}% confidence sequence (anytime-valid, running intersection)",
               f"{MEAN} running mean", f"{ZERO} 0", f"{EFFECT} ±minimum effect {spec.minimum_effect:g}",
               f"{DECISION} the decision"]
    lines = [entries[0]]
    for entry in entries[1:]:
        if len(lines[-1]) + 2 + len(entry) <= width:
            lines[-1] += ("  " if lines[-1] != entries[0] else " ") + entry
        else:
            lines.append(entry)
    return "\n".join(lines)


def _paired_cells(arm: str, c) -> tuple[str, ...]:
    pair = f"{arm} vs {c.comparator.name}"
    p = c.paired
    if p is None or not p.shared_seeds:
        return (pair, "0", c.note[:60] or "nothing to pair", "", "", "", "")
    ci = f"[{p.delta_ci[0]:+.2f}, {p.delta_ci[1]:+.2f}]" if p.delta_ci else "not computed"
    ps = p.success
    sd = "—" if ps is None or ps.delta is None else f"{100 * ps.delta:+.1f}".replace("-0.0", "+0.0")
    sci = "" if ps is None or ps.ci is None else f"[{100 * ps.ci[0]:+.1f}, {100 * ps.ci[1]:+.1f}]"
    return (pair, str(p.shared_seeds), f"{p.delta_mean:+.2f}", ci, sd, sci, f"{p.better}/{p.tied}/{p.worse}")


def inputs_key(prereg_path: str | Path | None, runs: dict[str, Path]) -> tuple:
    """What the view is a function of, by file size and mtime: recompute only when one changes."""
    def stamp(p: Path) -> tuple:
        try:
            st = os.stat(p)
            return (st.st_size, st.st_mtime_ns)
        except OSError:
            return ()
    files = [Path(prereg_path)] if prereg_path else []
    for d in runs.values():
        files += [Path(d) / rd.ROWS, Path(d) / rd.STATUS, Path(d) / rd.MANIFEST]
    return (str(prereg_path), tuple(sorted(runs.items())), tuple(stamp(f) for f in files))
