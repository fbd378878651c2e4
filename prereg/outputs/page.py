"""results.html: a report as a page, for a person who wants to look rather than read (often on a phone).

`fontaine-prereg report` writes one beside each run's results.md (`RUN_DIR/results.html`) and one
for the registration beside its results file (`<prereg-id>.results.html`), from the objects that
write results.md and results.json (prereg/outputs/report_read.py's ArmReport, the verdict engine's Judgement,
the comparison's ComparisonRead): every number on the page is one of theirs, formatted, never
computed again. The page holds, in order: the question and the plan as frozen, each verdict with
its reason, a comparison run's decision and its confidence band over seeds (SVG, the decision
marked), every arm's reads with their intervals, the per-seed chart (SVG), the per-seed grid
(each cell opens that seed's video and its row in words), the outcomes and the pairs across arms,
and the provenance (pins, hashes, timeline).

Self-contained: one HTML file with its style, its charts (inline SVG) and a few lines of script
inline; a Content-Security-Policy in the page forbids anything from another host (and any script
but its own), so a broken promise shows as a console error in the browser test. Videos and the
run's files are linked relatively, so the folder works from disk, from a static server and from a
Hugging Face Space. Everything works without the script (a seed opens by its anchor, `:target`);
the script pauses a video whose seed is closed and adds Escape and the arrow keys.

This module writes the two pages and their sections in words; the frame they share (style, script,
links, what a page links, for a Space) is prereg/outputs/page_html.py, the inline SVG charts
prereg/outputs/page_charts.py, the grid of seeds and each seed's box prereg/outputs/page_seeds.py.
"""

from __future__ import annotations

import dataclasses
import re
from html import escape
from pathlib import Path

from prereg import rundir as rd
from prereg.core.colors import COLORS
from prereg.document.model import seeds_text
from prereg.outputs.page_charts import band_chart, chart_section, paired_chart
from prereg.outputs.page_html import Links, document, header, rel
from prereg.outputs.page_seeds import grids, seed_boxes
from prereg.outputs.page_variants import variants_section
from prereg.outputs.report_markdown import (
    HEADLINE,
    OTHER_READS,
    cm_text,
    outcome_transitions,
    paired_line,
    seed_reads_line,
    transition_text,
    validity_lines,
)
from prereg.outputs.report_read import comparison_reads
from prereg.rundir.outcomes import EPISODE_OUTCOMES, OUTCOME_LABELS, OUTCOME_RULES
from prereg.stats.reads import DESCRIPTIVE_READ
from prereg.stats.story import INVALID, PENDING, SEP, VALID, Story

PAGE = rd.RESULTS_HTML  # beside results.md in a run directory


# ---------------------------------------------------------------- the two pages


def run_page(doc, reps, judgement, now: str, colors: dict[str, str], *, unregistered: bool,
             registration: Path | None, story: Story | None = None) -> str:
    """RUN_DIR/results.html: one run's report (one arm, or a comparison run's two), beside its results.md."""
    run_dir = reps[0].run_dir
    here = run_dir.resolve()
    pages = {r.reads.arm: here / PAGE for r in reps}
    for r in reps:  # a comparator arm's seeds open on its own run's page
        for c in r.comparators:
            if c.report is not None and c.comparator.arm not in pages:
                pages[c.comparator.arm] = c.report.run_dir.resolve() / PAGE
    links = Links(here / PAGE, pages)
    names = " and ".join(r.reads.arm for r in reps)
    nav = [(rel(registration, here), "the registration's page (every arm)")] if registration is not None else []
    series = _series(reps)
    body = [header(doc, f"{names}" + (" (one comparison run)" if len(reps) > 1 else ""), now, unregistered, nav),
            story_section(story) if story is not None else "",
            variants_section([story]),
            _question(doc),
            _verdicts(judgement),
            *(_comparison(c, colors) for c in comparison_reads({r.reads.arm: r for r in reps})),
            _reads(doc, reps, colors),
            chart_section(series, colors, links),
            grids(reps, colors, links),
            _outcomes(reps, colors),
            _pairs(reps, colors, links),
            _distance(reps),
            _provenance(doc, reps, links, now),
            seed_boxes(reps, links)]
    return document(f"Results: {names} · {doc.prereg_id}", body)


def registration_page(doc, reports: dict, judgement, now: str, colors: dict[str, str], path: Path, *,
                      unregistered: bool, stories: list[Story] = ()) -> str:
    """<prereg-id>.results.html beside the runs: every arm of the registration, every rule, every pairing."""
    path = Path(path).resolve()
    here = path.parent
    found = {c.comparator.arm: c.report for r in reports.values() for c in r.comparators if c.report is not None}
    shown = {**found, **reports}  # comparator arms found beside the reported runs, as the results file shows them
    reps = [shown[a.name] for a in doc.arms() if a.name in shown]
    links = Links(path, {r.reads.arm: path for r in reps})
    runs = {}
    for r in reps:
        runs.setdefault(r.run_dir.resolve(), []).append(r.reads.arm)
    nav = [(rel(d / PAGE, here), f"run {d.name} ({' and '.join(arms)})") for d, arms in runs.items()]
    body = [header(doc, doc.prereg_id or doc.path.stem, now, unregistered, nav),
            *(story_section(s, run=True) for s in stories),
            variants_section(stories),
            _question(doc),
            _verdicts(judgement),
            *(_comparison(c, colors) for c in comparison_reads(reports)),
            _reads(doc, reps, colors, registration=True),
            chart_section([r.reads for r in reps], colors, links),
            grids(reps, colors, links),
            _outcomes(reps, colors),
            _pairs(list(reports.values()), colors, links),
            _distance(reps),
            _provenance(doc, reps, links, now),
            seed_boxes(reps, links)]
    return document(f"Results: {doc.prereg_id} · {doc.title}", body)


def registration_page_name(results_md_name: str) -> str:
    """`<prereg-id>.results.html` beside `<prereg-id>.results.md`."""
    return results_md_name.removesuffix(".md") + ".html"


# ---------------------------------------------------------------- the run's story, first


VALIDITY_BADGE = {VALID: "holds", INVALID: "fails", PENDING: "undetermined"}
BASIS_ATTRS = {"arm": ' data-k="arm"', "cost": ' data-k="cost"', "invalid": ' class="why"', "decision": ' class="why"',
               "descriptive": ' class="why" data-k="descriptive"', "real": ' data-k="real"',
               "variants": ' data-k="variants"'}  # Story.basis's kinds, marked


def story_section(story: Story, run: bool = False) -> str:
    """The headline (state · validity · the plan's decision) and what it rests on, as results.md says them
    (`run`: on the registration's page, one a run, named)."""
    parts = [f'<span data-k="state">{escape(story.state)}</span>',
             f'<span class="badge {VALIDITY_BADGE[story.validity]}" data-k="validity">{escape(story.validity)}</span>',
             f'<strong data-k="verdict">{escape(story.verdict)}</strong>']
    items = [f"<li{BASIS_ATTRS[kind]}>{escape(words)}</li>" for kind, words in story.basis()]
    title = f"{HEADLINE}: run {escape(story.run)}" if run else HEADLINE
    return (f'<section class="{HEADLINE.lower()}"><h2>{title}</h2><p class="headline" data-k="headline" '
            f'data-v="{escape(story.headline)}">' + escape(SEP).join(parts) + "</p>"
            + (f'<ul class="story">{"".join(items)}</ul>' if items else "") + "</section>")


# ---------------------------------------------------------------- the question and the plan


def _question(doc) -> str:
    out = ['<section id="question">', f"<h2>The question</h2><p><strong>{escape(doc.title)}</strong></p>"]
    lines = doc.layout.lines
    for sm in doc.sections:
        sec = sm.section
        if not sec.sealed:
            continue
        start = (sec.yaml_end + 1) if sec.yaml_end is not None else sec.start + 1
        words = _words(lines[start:sec.end])
        head = "The registration in plain words" if sec.number == 0 else f"Amendment {sec.number}: {sm.title}"
        out.append(f"<details{' open' if sec.number == 0 else ''}><summary>{escape(head)}</summary>"
                   f'<div class="words">{words}</div></details>')
    out.append("<details><summary>The plan as frozen</summary>" + _plan(doc) + "</details>")
    out.append("</section>")
    return "\n".join(out)


def _words(lines: list[str]) -> str:
    """The frozen prose, as paragraphs: headings, bullets and `code` kept; nothing else interpreted."""
    out, para = [], []

    def flush():
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()

    for raw in lines:
        s = raw.strip()
        if s.startswith("---") and not para:
            continue
        if not s:
            flush()
        elif s.startswith("#"):
            flush()
            out.append(f"<h3>{_inline(s.lstrip('#').strip())}</h3>")
        elif s.startswith(("- ", "* ")):
            flush()
            out.append(f"<p>• {_inline(s[2:])}</p>")
        elif s.startswith("<!--"):
            flush()
        else:
            para.append(s)
    flush()
    return "\n".join(out)


def _inline(text: str) -> str:
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for p in parts:
        if len(p) > 1 and p.startswith("`") and p.endswith("`"):
            out.append(f"<code>{escape(p[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escape(p)))
    return "".join(out)


def _plan(doc) -> str:
    rows = []
    for sm in doc.sections:
        sec = sm.section
        if not sec.sealed:
            continue
        seal = sec.seal.attrs
        rows.append((escape(sec.name), f"frozen {escape(seal.get('frozen_at', '?'))}, sha256 <code>{escape(sec.seal.sha256[:16])}</code>, "
                                    f"tool <code>{escape(seal.get('tool_commit', '?')[:12])}</code>"))
        for a in sm.arms:
            bits = [f"{f.name}={getattr(a, f.name)!s}" for f in dataclasses.fields(a)
                    if f.name not in ("name", "section", "line") and getattr(a, f.name) not in (None, (), "")]
            rows.append((f"arm {escape(a.name)}", f"<code>{escape(' '.join(bits))}</code>"))
        p = sm.protocol
        if p is not None:
            rows.append(("protocol", escape(f"{seeds_text(p.seeds)}, {p.episode_seconds:g} s episodes, "
                                            f"{p.workers} workers, video_draw {p.video_draw}"
                                            + (f", env {p.env}" if p.env else ""))))
        v = sm.reads.validity
        rows.append(("reads", escape(f"primary {sm.reads.primary}, interval {sm.reads.interval}; valid when reset "
                                     f"strikes <= {v.reset_strikes_max}, error rows <= {v.error_rows_max}"
                                     + (f", zero-fallback rate <= {v.zero_fallback_rate_max:g}"
                                        if v.zero_fallback_rate_max is not None else ""))))
        for c in sm.reads.comparators:
            rows.append(("comparator", escape(f"{c.name} for {', '.join(c.for_arms) if c.for_arms else 'every other arm'}")))
        if sm.gates_raw:
            rows.append(("gates", "<code>" + escape(_flat(sm.gates_raw)) + "</code>"))
        if sm.comparison is not None:
            rows.append(("comparison", escape(sm.comparison.describe())))
        for r in sm.rules:
            rows.append(("rule", f"if <code>{escape(r.condition)}</code> then “{escape(r.action)}”"))
    return '<dl class="plan small">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _flat(d, prefix: str = "") -> str:
    if isinstance(d, dict):
        return "; ".join(_flat(v, f"{prefix}{k}.") for k, v in d.items())
    return f"{prefix.rstrip('.')}={d}"


# ---------------------------------------------------------------- verdicts


def _badge_class(label: str) -> str:
    if label.startswith("HOLDS"):
        return "holds"
    if label.startswith("does not hold"):
        return "fails"
    if label.startswith("provisional"):
        return "provisional"
    return "undetermined"


def _verdicts(judgement) -> str:
    if not judgement.verdicts and not judgement.sequential:
        return ('<section id="verdicts"><h2>Verdicts</h2><p class="mute">The registration names no decision rule.</p>'
                "</section>")
    out = ['<section id="verdicts"><h2>Verdicts</h2><ol class="verdicts">']
    for v in judgement.verdicts:
        word = v.label.split(" (")[0]
        why = [f"judged on: {v.detail}"] if v.detail else []
        why += [f"{r}" for r in v.reasons if r not in v.label]
        out.append(f'<li data-key="{escape(v.key)}"><span class="badge {_badge_class(v.label)}">{escape(word)}</span> '
                   f'<span data-k="label" hidden>{escape(v.label)}</span>'
                   f"if <code>{escape(v.rule.condition)}</code> then “{escape(v.rule.action)}” "
                   f'<span class="mute small">({escape(v.key)}{"; reads " + escape(", ".join(v.arms)) if v.arms else ""})</span>'
                   + (f'<p class="why">{escape(v.label)}</p>' if v.label != word else "")
                   + (f'<p class="why" data-k="descriptive">{escape(DESCRIPTIVE_READ)}</p>' if v.descriptive else "")
                   + "".join(f'<p class="why">{escape(w)}</p>' for w in why) + "</li>")
    for s in judgement.sequential:
        out.append(f'<li data-key="{escape(s.key)}"><span class="badge {_badge_class(s.label.replace("final", "HOLDS"))}">'
                   f"{escape(s.label.split(' (')[0])}</span> the registered sequential test of arm {escape(s.arm)} "
                   f"({escape(s.section)})" + (f'<p class="why">{escape(s.decision.text)}</p>' if s.decision else "")
                   + (f'<p class="why">{escape(s.why)}</p>' if s.why else "") + "</li>")
    out.append("</ol></section>")
    return "\n".join(out)


# ---------------------------------------------------------------- a comparison run


def _comparison(c, colors: dict[str, str]) -> str:
    out = [f'<section class="comparison" data-run="{escape(c.run_dir.name)}">',
           f"<h2>Comparison: {escape(c.title)}</h2>",
           f'<p class="small">{escape(c.spec.describe())}, max {c.max_seeds} seeds per arm</p>',
           f'<p><strong data-k="decision">{escape(c.decision_text())}</strong></p>',
           f'<p class="small" data-k="record">The driver\'s record: {escape(c.record_text())}</p>',
           f'<p data-k="savings">{escape(c.savings_text())}</p>']
    if c.stopped_by_decision:
        out.append(f'<p class="banner" data-k="after_stop">{escape(c.stop_label())}</p>')
    out.append(band_chart(c, colors))
    out.append("</section>")
    return "\n".join(out)


# ---------------------------------------------------------------- reads


def _pct(v: float) -> str:
    return f"{v:.1%}"


INTERVAL_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}


def _reads(doc, reps, colors: dict[str, str], *, registration: bool = False) -> str:
    """The reads as a table with an arm a column and a read a row (two or three arms fit a phone's width; more
    scroll sideways beside the reads' names), then each arm's completion in words under it."""
    out = ['<section id="reads"><h2>Reads</h2>']
    kinds = sorted({k for r in reps for k in r.reads.intervals}, key=lambda k: list(INTERVAL_NAMES).index(k))
    shown = {r.reads.arm for r in reps}

    def successes(a) -> str:
        return (f'<span data-k="successes">{a.successes}</span> / <span data-k="n">{a.n}</span>'
                + (f' <span class="mute planned">(of <span data-k="n_planned">{a.n_planned}</span> planned)</span>'
                   if a.stopped_early else ""))

    def interval(k):
        return lambda a: (f"[{_pct(a.intervals[k][0])}, {_pct(a.intervals[k][1])}]" if a.intervals.get(k) else "")

    def zero_fallbacks(a) -> str:
        return escape(f"{a.zero_fallbacks}" + (f" ({a.zero_fallback_rate:.2%})" if a.zero_fallback_rate is not None
                                               else ""))

    rows = [("successes", None, successes),
            ("rate", "rate", lambda a: _pct(a.success_rate) if a.success_rate is not None else "n/a"),
            *((f"{INTERVAL_NAMES[k]} 95%", f"interval-{k}", interval(k)) for k in kinds),
            ("engaged", "engaged", lambda a: f"{a.engaged}"),
            ("knock-aways", "knock_aways", lambda a: f"{a.knock_aways}"),
            ("quiet", "quiet", lambda a: f"{a.quiet}"),
            ("error rows", "error_rows", lambda a: f"{a.error_rows}"),
            ("zero-fallbacks", "zero_fallbacks", zero_fallbacks),
            ("progress_final mean", "progress_final_mean", lambda a: cm_text(a.progress_final_mean)),
            ("progress_final median", "progress_final_median", lambda a: cm_text(a.progress_final_median))]
    arms = [r.reads for r in reps]
    missing = []
    if registration:
        for arm in doc.arms():
            if arm.name not in shown:
                sec = doc.find_arm(arm.name)[1].section
                missing.append((arm.name, "not frozen: no registered reads" if not sec.sealed else "no run in this report"))
    head = ("<tr><th>arm</th>" + "".join(
        f'<th data-arm="{escape(a.arm)}"><span class="swatch" style="background:{colors.get(a.arm, COLORS[0])}"></span>'
        f"{escape(a.arm)}</th>" for a in arms) + "".join(f'<th data-arm="{escape(m)}">{escape(m)}</th>' for m, _ in missing)
        + "</tr>")
    body = ["<tr><th>validity</th>" + "".join(
        f'<td data-arm="{escape(a.arm)}" data-k="valid" data-v="{str(a.valid).lower()}" '
        f'class="{"valid" if a.valid else "invalid"}">{"VALID" if a.valid else "INVALID"}</td>' for a in arms)
        + "".join(f'<td data-arm="{escape(m)}" rowspan="{len(rows) + 1}" class="mute">{escape(why)}</td>'
                  for m, why in missing) + "</tr>"]
    for name, k, cell in rows:
        key = f' data-k="{k}"' if k else ""
        body.append(f"<tr><th>{escape(name)}</th>" + "".join(
            f'<td class="num" data-arm="{escape(a.arm)}"{key}>{cell(a)}</td>' for a in arms) + "</tr>")
    out.append(f'<div class="scroll"><table class="sticky reads"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
               "</table></div>")
    out.append('<ul class="small completion">' + "".join(
        f'<li data-arm="{escape(a.arm)}"><strong>{escape(a.arm)}</strong>: <span data-k="completion">'
        f"{escape(a.completion)}</span></li>" for a in arms) + "</ul>")
    out.append('<p class="small mute">Successes over every episode with a row (an error row is a non-success); '
               "the intervals are for the success rate.</p>")
    for r in reps:
        a = r.reads
        items = [f"<li><strong>Primary</strong>: successes {escape(a.primary_text())}</li>"]
        if r.after_stop:
            items.append(f"<li><strong>{escape(r.after_stop[0].upper() + r.after_stop[1:])}</strong></li>")
        items.append("<li><strong>Validity</strong>: " + ("VALID" if a.valid else "INVALID") + "<ul>"
                     + "".join(f"<li>{escape(t)}</li>" for t in validity_lines(a)) + "</ul></li>")
        items.append(f"<li><strong>Secondary</strong> (record-only): engaged {a.engaged}; knock-aways {a.knock_aways}; "
                     f"quiet {a.quiet}; success seeds {escape(str(a.success_seeds))}; mask violations {a.mask_violations}</li>")
        items.append(f"<li><strong>{OTHER_READS}</strong>: {escape(seed_reads_line(a))}</li>")
        if a.dropped:
            items.append("<li><strong>Dropped values</strong> (null or not finite): "
                         + escape(", ".join(f"{k} {v}" for k, v in sorted(a.dropped.items()))) + "</li>")
        items += [f"<li>Note: {escape(n)}</li>" for n in a.notes]
        if a.bad_lines:
            items.append(f"<li>Unreadable rows ({len(a.bad_lines)}): " + escape("; ".join(a.bad_lines[:5])) + "</li>")
        open_ = " open" if not a.valid else ""
        out.append(f"<details{open_}><summary>{escape(a.arm)}: every read, validity check and note</summary><ul>"
                   + "".join(items) + "</ul></details>")
    out.append("</section>")
    return "\n".join(out)


# ---------------------------------------------------------------- the arms of the per-seed chart (page_charts.py draws it)


def _series(reps) -> list:
    """The arms a run's chart draws: its own (A first in a comparison run) and its comparator's, as chart.png."""
    if len(reps) == 1:
        cr = next((c for c in reps[0].comparators if c.reads is not None), None)
        return [reps[0].reads] + ([cr.reads] if cr else [])
    cr = next((c for r in reps for c in r.comparators if not c.registered and c.reads is not None), None)
    series = [r.reads for r in reps]
    if cr is not None:
        series.sort(key=lambda a: a.arm != cr.comparator.name)
    return series


# ---------------------------------------------------------------- outcomes, pairs, distance


def _outcomes(reps, colors: dict[str, str]) -> str:
    arms = [r.reads for r in reps if r.reads.outcomes]
    if not arms:
        return ""
    used = [o for o in EPISODE_OUTCOMES if any(a.outcomes.get(o) for a in arms)]
    head = "".join(f"<th>{escape(OUTCOME_LABELS[o])}</th>" for o in used)
    body = "".join(f'<tr data-arm="{escape(a.arm)}"><th><span class="swatch" style="background:'
                   f'{colors.get(a.arm, COLORS[0])}"></span>{escape(a.arm)}</th>'
                   + "".join(f'<td class="num" data-k="{o}">{a.outcomes.get(o, 0)}</td>' for o in used) + "</tr>"
                   for a in arms)
    rules = "".join(f"<li><strong>{escape(OUTCOME_LABELS[o])}</strong>: {escape(OUTCOME_RULES[o])}</li>"
                    for o in used if o in OUTCOME_RULES)
    return ('<section id="outcomes"><h2>Outcomes</h2><p class="small mute">One outcome per episode, the first that '
            "holds, left to right.</p>"
            f'<div class="scroll"><table><thead><tr><th>arm</th>{head}</tr></thead><tbody>{body}</tbody></table></div>'
            f'<details><summary class="small">What each outcome means</summary><ul class="small">{rules}</ul></details>'
            "</section>")


def _pairs(reps, colors: dict[str, str], links: Links) -> str:
    rows = [(r, c) for r in reps for c in r.comparators]
    if not rows:
        return ""
    out = ['<section id="pairs"><h2>Pairs across arms</h2><p class="small mute">Per-seed delta of progress_final_cm '
           "on the seeds both arms have, with its paired bootstrap CI95, and the paired success difference.</p>"]
    for r, c in rows:
        arm = r.reads.arm
        p = c.paired
        out.append(f'<h3 data-pair="{escape(arm)}-{escape(c.comparator.name)}">{escape(arm)} − '
                   f"{escape(c.comparator.name)}</h3>")
        if p is None or not p.shared_seeds:
            out.append(f'<p class="mute">{escape(c.note or "no shared seeds: nothing to pair")}</p>')
            continue
        cells = [("shared seeds", str(p.shared_seeds), "shared_seeds"),
                 ("mean delta", f"{p.delta_mean:+.3f} cm", "delta_mean"),
                 ("CI95", f"[{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]" if p.delta_ci else p.ci_method, "delta_ci"),
                 ("better / tied / worse", f"{p.better} / {p.tied} / {p.worse}", "btw"),
                 ("successes", f"{p.arm_successes} vs {p.comparator_successes}", "successes")]
        ps = p.success
        if ps is not None and ps.shared and ps.delta is not None:
            ci = f" [{100 * ps.ci[0]:+.1f}, {100 * ps.ci[1]:+.1f}]" if ps.ci is not None else ""
            cells.append(("success difference", f"{100 * ps.delta:+.1f} pp{ci}", "success_delta"))
        out.append('<div class="scroll"><table><tbody>' + "".join(
            f'<tr><th>{escape(k)}</th><td class="num" data-k="{d}">{escape(v)}</td></tr>' for k, v, d in cells)
            + "</tbody></table></div>")
        out.append(f'<p class="small mute">{escape(paired_line(p))}' + (f" ({escape(c.note)})" if c.note else "") + "</p>")
        out.append(paired_chart(p, colors, links))
        if c.reads is not None:
            moves = outcome_transitions(c.reads, r.reads)
            if moves:
                out.append("<ul class=small>" + "".join(
                    f"<li>{escape(c.comparator.name)} → {escape(arm)}: {escape(transition_text(m))}</li>" for m in moves)
                    + "</ul>")
    out.append("</section>")
    return "\n".join(out)


def _distance(reps) -> str:
    arms = [r.reads for r in reps if r.reads.dist_by_second_mean]
    if not arms:
        return ""
    seconds = max(len(a.dist_by_second_mean) for a in arms)
    body = []
    for i in range(seconds):
        cells = []
        for a in arms:
            m = a.dist_by_second_mean[i] if i < len(a.dist_by_second_mean) else None
            n = a.dist_by_second_n[i] if i < len(a.dist_by_second_n) else 0
            cells.append(f'<td class="num">{"" if m is None else f"{m:.2f} <span class=mute>({n})</span>"}</td>')
        body.append(f'<tr><td class="num">{i}</td>' + "".join(cells) + "</tr>")
    return ('<section id="distance"><details><summary><strong>Boat-to-disk distance by second</strong> (mean cm over '
            "the ok rows that reached it; n in brackets)</summary>"
            '<div class="scroll"><table><thead><tr><th>t (s)</th>' + "".join(f"<th>{escape(a.arm)}</th>" for a in arms)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div></details></section>")


# ---------------------------------------------------------------- provenance


def _provenance(doc, reps, links: Links, now: str) -> str:
    out = ['<section id="provenance"><h2>Provenance</h2>']
    seen = set()
    for r in reps:
        key = r.run_dir.resolve()
        if key in seen:
            continue
        seen.add(key)
        arms = [x.reads.arm for x in reps if x.run_dir.resolve() == key]
        snap = r.snapshot
        m = snap.manifest if snap is not None else None
        st = snap.status if snap is not None else None
        raw = m.raw if m is not None else {}
        rows = [("run", f"<code>{escape(r.run_dir.name)}</code> ({escape(' and '.join(arms))})"),
                ("registered in", f"{escape(r.section)}, sha256 <code>{escape(r.sha256)}</code>"),
                ("provenance", "launched from this registration, arm and settings as registered" if not r.provenance
                 else "<span class=invalid>NOT a run of this registration</span>: "
                 + escape("; ".join(r.provenance)))]
        if m is not None:
            if isinstance(raw.get("git_commit"), str):
                rows.append(("tool commit", f"<code>{escape(raw['git_commit'])}</code>"))
            resolved = m.policy_resolved or {}
            by_arm = resolved if m.is_comparison else {arms[0]: resolved}
            for arm, pr in by_arm.items():
                if isinstance(pr, dict):
                    pins = {k: pr.get(k) for k in ("policy", "revision", "pin", "weights_sha256", "config_sha256",
                                                   "processor_sha256", "checkpoint") if pr.get(k) is not None}
                    if pins:
                        rows.append((f"policy {escape(str(arm))}", "<code>" + escape(
                            " ".join(f"{k}={_no_path(v)}" for k, v in pins.items())) + "</code>"))
            if isinstance(m.env, dict):
                rows.append(("env", escape(f"{m.env.get('name', '?')}") + (
                    f", sha256 <code>{escape(str(m.env['sha256']))}</code>" if m.env.get("sha256") else "")))
            versions = raw.get("versions")
            if isinstance(versions, dict) and versions:
                rows.append(("versions", "<code>" + escape(" ".join(f"{k}={v}" for k, v in versions.items())) + "</code>"))
        timeline = []
        if m is not None and m.started_at:
            timeline.append(f"started {m.started_at}")
        if m is not None:
            timeline += [f"resumed {x.get('at')}" for x in m.resumes if isinstance(x, dict) and x.get("at")]
        if st is not None:
            timeline.append(f"{st.state or '?'} (last written {st.updated_at or '?'})")
            if st.stop is not None:
                timeline.append(f"stopped by {st.stop.by}: {st.stop.detail}")
        timeline.append(f"reported {now}")
        rows.append(("timeline", escape(" → ".join(timeline))))
        files = [(n, r.run_dir / n) for n in (rd.RESULTS, rd.RESULTS_JSON, rd.ROWS, rd.MANIFEST, rd.STATUS, rd.CHART)]
        rows.append(("files", " · ".join(f'<a href="{links.file(p)}">{escape(n)}</a>' for n, p in files if p.is_file())))
        out.append('<div class="scroll"><table class="small"><tbody>' + "".join(
            f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</tbody></table></div>")
    out.append("</section>")
    return "\n".join(out)


def _no_path(v) -> str:
    """A pin as the page shows it: a local checkpoint folder by its name only (no local absolute path)."""
    s = str(v)
    return Path(s).name if s.startswith("/") else s

