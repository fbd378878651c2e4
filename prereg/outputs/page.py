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
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import math
import os
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from prereg import rundir as rd
from prereg.core.colors import COLORS, KNOCK_COLOR, MEAN_COLOR, SUCCESS_COLOR, TIED_COLOR
from prereg.document.model import seeds_text
from prereg.outputs.report_markdown import (
    OTHER_READS,
    cm_text,
    outcome_transitions,
    paired_line,
    seed_reads_line,
    transition_text,
    validity_lines,
)
from prereg.outputs.report_read import comparison_reads
from prereg.rundir.row_words import fmt_value, row_in_words
from prereg.rundir.rows import (
    CARRIED,
    DROPPED,
    EPISODE_OUTCOMES,
    ERROR,
    KNOCK_AWAY,
    KNOCK_AWAY_CM,
    OFF_TABLE,
    OUTCOME_LABELS,
    OUTCOME_RULES,
    PLACED_TIPPED,
    QUIET,
    SUCCESS,
    TOUCHED,
    row_video,
)
from prereg.stats.comparison import UNDECIDED

PAGE = rd.RESULTS_HTML  # beside results.md in a run directory
NO_ROW = "no_row"
OUTCOME_COLORS = {  # the grid's cells, as the console's grid colours them (console/render.py)
    SUCCESS: SUCCESS_COLOR, PLACED_TIPPED: "#63b86f", CARRIED: "#1f9bb5", DROPPED: "#4a6fd1",
    OFF_TABLE: "#7a1010", KNOCK_AWAY: KNOCK_COLOR, TOUCHED: "#d9b400", QUIET: "#b9b9b9",
    ERROR: "#b0289a", NO_ROW: "#f2f2f2",
}
FONT = "system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"  # the reader's own fonts: nothing is fetched

SCRIPT = """\
addEventListener('hashchange',function(){document.querySelectorAll('.seed video').forEach(function(v){\
if(!v.closest('.seed:target'))v.pause()})});
addEventListener('keydown',function(e){var t=document.querySelector('.seed:target');if(!t)return;\
var go={Escape:t.dataset.back,ArrowRight:t.dataset.next,ArrowLeft:t.dataset.prev}[e.key];\
if(go){location.hash=go;e.preventDefault()}});"""

STYLE = """\
:root{--fg:#1d1d1f;--mute:#5d6066;--line:#d9dbe0;--bg:#fff;--soft:#f5f6f8}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 FONT;color:var(--fg);background:var(--bg)}
main{max-width:1100px;margin:0 auto;padding:12px 14px 60px}
h1{font-size:1.35rem;margin:.4rem 0}h2{font-size:1.12rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:1rem 0 .3rem}
code{font:13px/1.3 ui-monospace,Menlo,Consolas,monospace;background:var(--soft);padding:0 3px;border-radius:3px;\
overflow-wrap:anywhere}
.mute{color:var(--mute)}.small{font-size:.85rem}
.banner{background:#fff3cd;border:1px solid #e0c46c;padding:8px;margin:8px 0;font-weight:600}
nav a{margin-right:.8rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);white-space:nowrap}
table.sticky th:first-child{position:sticky;left:0;z-index:1}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-weight:600;font-size:.85rem;color:#fff}
.holds{background:#1a7f37}.fails{background:#b42318}.undetermined{background:#6e7781}.provisional{background:#9a6700}
.valid{color:#1a7f37;font-weight:600}.invalid{color:#b42318;font-weight:600}
ol.verdicts{padding-left:1.3rem}ol.verdicts li{margin:.5rem 0}
.why{margin:.15rem 0 0;font-size:.88rem;color:var(--mute)}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;vertical-align:-1px;margin-right:4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85rem;margin:.3rem 0}
.chart{display:flex;align-items:flex-start;margin:.3rem 0}
.chart .axis{flex:none;background:var(--bg)}
.chart .scroll{flex:1 1 auto}
.chart svg text{font:12px FONT;fill:var(--fg)}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(44px,1fr));gap:4px;margin:.4rem 0}
.cell{display:block;text-align:center;padding:9px 0;border-radius:4px;color:#111;text-decoration:none;\
font-weight:600;font-size:.85rem;border:1px solid rgba(0,0,0,.12)}
.cell.dark{color:#fff}.cell.film::after{content:" \\25B6";font-size:.65rem}
.seed{display:none;position:fixed;inset:0;z-index:10;background:rgba(20,22,26,.6);overflow-y:auto}
.seed:target{display:block}
.seed .box{background:var(--bg);max-width:980px;margin:2vh auto;padding:10px 14px 18px;border-radius:6px}
.seed .bar{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:baseline}
.seed .bar .close{margin-left:auto;font-weight:600}
.seed table.row{width:100%}.seed table.row td:last-child{overflow-wrap:anywhere;min-width:40%}
.seed video{width:100%;max-height:60vh;background:#000;display:block;margin:.4rem 0}
details{margin:.4rem 0}summary{cursor:pointer}
.words p{margin:.4rem 0}
dl.plan{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.3rem 0}
dl.plan dt{color:var(--mute)}dl.plan dd{margin:0}
@media (max-width:600px){body{font-size:14px}th,td{padding:3px 5px}.seed .box{margin:0;min-height:100%;border-radius:0}}
""".replace("FONT", FONT)


# ---------------------------------------------------------------- the two pages


def run_page(doc, reps, judgement, now: str, colors: dict[str, str], *, unregistered: bool,
             registration: Path | None) -> str:
    """RUN_DIR/results.html: one run's report (one arm, or a comparison run's two), beside its results.md."""
    run_dir = reps[0].run_dir
    here = run_dir.resolve()
    pages = {r.reads.arm: here / PAGE for r in reps}
    for r in reps:  # a comparator arm's seeds open on its own run's page
        for c in r.comparators:
            if c.report is not None and c.comparator.arm not in pages:
                pages[c.comparator.arm] = c.report.run_dir.resolve() / PAGE
    links = _Links(here / PAGE, pages)
    names = " and ".join(r.reads.arm for r in reps)
    nav = [(_rel(registration, here), "the registration's page (every arm)")] if registration is not None else []
    series = _series(reps)
    body = [_header(doc, f"{names}" + (" (one comparison run)" if len(reps) > 1 else ""), now, unregistered, nav),
            _question(doc),
            _verdicts(judgement),
            *(_comparison(c, colors) for c in comparison_reads({r.reads.arm: r for r in reps})),
            _reads(doc, reps, colors),
            _chart_section(series, colors, links),
            _grids(reps, colors, links),
            _outcomes(reps, colors),
            _pairs(reps, colors, links),
            _distance(reps),
            _provenance(doc, reps, links, now),
            _seed_boxes(reps, links)]
    return _document(f"Results: {names} · {doc.prereg_id}", body)


def registration_page(doc, reports: dict, judgement, now: str, colors: dict[str, str], path: Path, *,
                      unregistered: bool) -> str:
    """<prereg-id>.results.html beside the runs: every arm of the registration, every rule, every pairing."""
    path = Path(path).resolve()
    here = path.parent
    found = {c.comparator.arm: c.report for r in reports.values() for c in r.comparators if c.report is not None}
    shown = {**found, **reports}  # comparator arms found beside the reported runs, as the results file shows them
    reps = [shown[a.name] for a in doc.arms() if a.name in shown]
    links = _Links(path, {r.reads.arm: path for r in reps})
    runs = {}
    for r in reps:
        runs.setdefault(r.run_dir.resolve(), []).append(r.reads.arm)
    nav = [(_rel(d / PAGE, here), f"run {d.name} ({' and '.join(arms)})") for d, arms in runs.items()]
    body = [_header(doc, doc.prereg_id or doc.path.stem, now, unregistered, nav),
            _question(doc),
            _verdicts(judgement),
            *(_comparison(c, colors) for c in comparison_reads(reports)),
            _reads(doc, reps, colors, registration=True),
            _chart_section([r.reads for r in reps], colors, links),
            _grids(reps, colors, links),
            _outcomes(reps, colors),
            _pairs(list(reports.values()), colors, links),
            _distance(reps),
            _provenance(doc, reps, links, now),
            _seed_boxes(reps, links)]
    return _document(f"Results: {doc.prereg_id} · {doc.title}", body)


def registration_page_name(results_md_name: str) -> str:
    """`<prereg-id>.results.html` beside `<prereg-id>.results.md`."""
    return results_md_name.removesuffix(".md") + ".html"


# ---------------------------------------------------------------- links


@dataclasses.dataclass
class _Links:
    """Where the page is and where each arm's seeds open (the page that holds its grid)."""

    page: Path  # this page's file (resolved)
    grid_page: dict[str, Path]  # arm -> the page (file, resolved) holding its grid

    @property
    def here(self) -> Path:
        return self.page.parent

    def seed(self, arm: str, seed: int) -> str | None:
        page = self.grid_page.get(arm)
        if page is None:
            return None
        anchor = "#" + seed_id(arm, seed)
        return anchor if page == self.page else _rel(page, self.here) + anchor

    def file(self, path: Path) -> str:
        return _rel(path, self.here)


def _rel(path: Path, here: Path) -> str:
    """A relative URL from the folder `here` to `path`: what works from disk, a server and a Space alike."""
    return quote(Path(os.path.relpath(Path(path).resolve(), here)).as_posix(), safe="/")


def seed_id(arm: str, seed: int) -> str:
    """The anchor of an arm's seed on the page that holds its grid (`#seed-<arm>-<seed>`)."""
    return f"seed-{_slug(arm)}-{seed}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"


# ---------------------------------------------------------------- the frame


def _document(title: str, body: list[str]) -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; media-src 'self'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="generator" content="fontaine-prereg report">',
        '<link rel="icon" href="data:,">',  # no favicon request (a 404 on a static server)
        f"<title>{escape(title)}</title>", f"<style>\n{STYLE}</style>", "</head>", "<body>", "<main>",
        *[b for b in body if b], "</main>", f"<script>{SCRIPT}</script>", "</body>", "</html>", ""])


def _header(doc, name: str, now: str, unregistered: bool, nav: list[tuple[str, str]]) -> str:
    out = []
    if unregistered:
        out.append('<p class="banner">UNREGISTERED REPORT: rows read with --unregistered; runs not launched from '
                   "this registration are not registered results</p>")
    out.append(f"<h1>Results: {escape(name)}</h1>")
    out.append(f'<p class="mute small">Pre-registration <code>{escape(doc.prereg_id)}</code> '
               f"({escape(doc.path.name)}) · report {escape(now)} · <code>fontaine-prereg report</code></p>")
    if nav:
        out.append("<nav class=small>" + "".join(f'<a href="{h}">{escape(t)}</a>' for h, t in nav) + "</nav>")
    return "<header>" + "\n".join(out) + "</header>"


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
        rows.append((f"{sec.name}", f"frozen {seal.get('frozen_at', '?')}, sha256 <code>{escape(sec.seal.sha256[:16])}</code>, "
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
    out.append(_band_chart(c, colors))
    out.append("</section>")
    return "\n".join(out)


def _band_chart(c, colors: dict[str, str]) -> str:
    """B - A over the seeds of the shared plan prefix: the confidence-sequence band, its running mean,
    zero, the minimum effect (both signs) and the seed the decision fell on."""
    p = c.path
    n = len(p.at)
    if n == 0:
        return '<p class="mute">No pair has finished: no band to draw.</p>'
    spec = p.spec
    eff = spec.minimum_effect
    if spec.metric == "success":
        lo_y, hi_y = -1.0, 1.0
    else:  # the band starts at +/- the registered bound: scale to the later seeds, clip the first ones
        tail = slice(min(n - 1, n // 4), n)
        vals = [v for v in (*p.lo[tail], *p.hi[tail], *p.mean) if v == v] + [0.0, eff, -eff]
        lo_y, hi_y = min(vals), max(vals)
    scale = _Scale(lo_y, hi_y, pad=0.06)
    step = max(4.0, min(60.0, 880.0 / n))
    width = max(320, int(step * n) + 24)
    x = [12 + step * i + step / 2 for i in range(n)]
    y = scale.y
    def clip(v):
        return min(max(v, scale.lo), scale.hi)
    band = [(x[i], y(clip(p.hi[i]))) for i in range(n) if p.hi[i] == p.hi[i]]
    band += [(x[i], y(clip(p.lo[i]))) for i in reversed(range(n)) if p.lo[i] == p.lo[i]]
    b_color = colors.get(spec.arm_b, COLORS[1])
    parts = [f'<polygon points="{_pts(band)}" fill="{b_color}" fill-opacity="0.22" stroke="none"/>',
             f'<polyline points="{_pts([(x[i], y(clip(p.mean[i]))) for i in range(n)])}" fill="none" '
             f'stroke="{MEAN_COLOR}" stroke-width="2"/>',
             _hline(0.0, scale, width, "#444", 1.2)]
    for e in (eff, -eff):
        if scale.lo <= e <= scale.hi:
            parts.append(_hline(e, scale, width, "#888", 1, dash="5 4"))
    decided = c.decided_at
    mark = ""
    if decided is not None and decided in p.at:
        i = p.at.index(decided)
        parts.append(f'<line x1="{x[i]:.1f}" x2="{x[i]:.1f}" y1="{scale.top}" y2="{scale.bottom}" stroke="#b7791f" '
                     'stroke-width="2.5"/>')
        anchor = "end" if x[i] > width * 0.6 else "start"
        dx = -6 if anchor == "end" else 6
        said = f"undecided at {decided} (max seeds)" if c.outcome == UNDECIDED else f"decided at {decided}"
        parts.append(f'<text x="{x[i] + dx:.1f}" y="{scale.top + 12}" text-anchor="{anchor}" data-k="decided_at" '
                     f'data-v="{decided}">{said}</text>')
        mark = (f'<span><span class="swatch" style="background:#b7791f"></span>the decision ({escape(c.outcome or "")}), '
                f"at seed {decided} of the prefix</span>")
    for i in _label_every(n, step):
        parts.append(f'<text x="{x[i]:.1f}" y="{scale.bottom + 16}" text-anchor="middle">{p.at[i]}</text>')
    unit = "rate difference" if spec.metric == "success" else "cm"
    label = (f"{spec.arm_b} minus {spec.arm_a} per seed ({unit}) over the {n} seeds of the shared plan prefix: "
             f"{100 * (1 - spec.alpha):g}% confidence sequence, running mean, zero and the minimum effect")
    legend = (f'<div class="legend"><span><span class="swatch" style="background:{b_color};opacity:.35"></span>'
              f"{100 * (1 - spec.alpha):g}% confidence sequence (anytime-valid)</span>"
              f'<span><span class="swatch" style="background:{MEAN_COLOR}"></span>running mean</span>'
              f"<span>— 0 · - - ±minimum effect {eff:g}</span>{mark}</div>")
    return (f'<p class="small mute">{escape(spec.arm_b)} − {escape(spec.arm_a)} per seed ({unit}), seeds of the shared '
            f"plan prefix (both arms have a row)</p>"
            + _frame(scale, width, "".join(parts), label, "band") + legend)


# ---------------------------------------------------------------- reads


def _pct(v: float) -> str:
    return f"{v:.1%}"


INTERVAL_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}


def _reads(doc, reps, colors: dict[str, str], *, registration: bool = False) -> str:
    out = ['<section id="reads"><h2>Reads</h2>']
    kinds = sorted({k for r in reps for k in r.reads.intervals}, key=lambda k: list(INTERVAL_NAMES).index(k))
    head = ["arm", "validity", "successes", "rate", *(f"{INTERVAL_NAMES[k]} 95%" for k in kinds), "engaged",
            "knock-aways", "quiet", "error rows", "zero-fallbacks", "progress_final mean", "median", "completion"]
    rows = []
    shown = {r.reads.arm for r in reps}
    for r in reps:
        a = r.reads
        color = colors.get(a.arm, COLORS[0])
        zf = f"{a.zero_fallbacks}" + (f" ({a.zero_fallback_rate:.2%})" if a.zero_fallback_rate is not None else "")
        cells = [f'<th><span class="swatch" style="background:{color}"></span>{escape(a.arm)}</th>',
                 f'<td data-k="valid" data-v="{str(a.valid).lower()}" class="{"valid" if a.valid else "invalid"}">'
                 f'{"VALID" if a.valid else "INVALID"}</td>',
                 f'<td class="num"><span data-k="successes">{a.successes}</span> / <span data-k="n">{a.n}</span>'
                 + (f' <span class="mute">(of <span data-k="n_planned">{a.n_planned}</span> planned)</span>'
                    if a.stopped_early else "") + "</td>",
                 f'<td class="num" data-k="rate">{_pct(a.success_rate) if a.success_rate is not None else "n/a"}</td>']
        for k in kinds:
            iv = a.intervals.get(k)
            cells.append(f'<td class="num" data-k="interval-{k}">' + (f"[{_pct(iv[0])}, {_pct(iv[1])}]" if iv else "")
                         + "</td>")
        cells += [f'<td class="num" data-k="engaged">{a.engaged}</td>',
                  f'<td class="num" data-k="knock_aways">{a.knock_aways}</td>',
                  f'<td class="num" data-k="quiet">{a.quiet}</td>',
                  f'<td class="num" data-k="error_rows">{a.error_rows}</td>',
                  f'<td class="num" data-k="zero_fallbacks">{escape(zf)}</td>',
                  f'<td class="num" data-k="progress_final_mean">{cm_text(a.progress_final_mean)}</td>',
                  f'<td class="num" data-k="progress_final_median">{cm_text(a.progress_final_median)}</td>',
                  f'<td data-k="completion">{escape(a.completion)}</td>']
        rows.append(f'<tr data-arm="{escape(a.arm)}">' + "".join(cells) + "</tr>")
    if registration:
        for arm in doc.arms():
            if arm.name in shown:
                continue
            sec = doc.find_arm(arm.name)[1].section
            why = "not frozen: no registered reads" if not sec.sealed else "no run in this report"
            rows.append(f'<tr data-arm="{escape(arm.name)}"><th>{escape(arm.name)}</th>'
                        f'<td colspan="{len(head) - 1}" class="mute">{why}</td></tr>')
    out.append('<div class="scroll"><table class="sticky"><thead><tr>' + "".join(f"<th>{escape(h)}</th>" for h in head)
               + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
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


# ---------------------------------------------------------------- charts (inline SVG)


class _Scale:
    """A vertical scale: values lo..hi (zero always in) onto pixels top..bottom, with round ticks."""

    def __init__(self, lo: float, hi: float, *, height: int = 240, pad: float = 0.08):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        span = (hi - lo) or 1.0
        self.lo, self.hi = lo - pad * span, hi + pad * span
        self.top, self.bottom = 10, 10 + height
        self.height = height

    def y(self, v: float) -> float:
        return self.top + (self.hi - v) / (self.hi - self.lo) * self.height

    def ticks(self) -> list[float]:
        span = self.hi - self.lo
        raw = span / 5
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
        first = math.ceil(self.lo / step) * step
        out, v = [], first
        while v <= self.hi + 1e-9:
            out.append(round(v, 10))
            v += step
        return out


def _tick_text(v: float) -> str:
    return "0" if abs(v) < 1e-12 else f"{v:+g}"


def _frame(scale: _Scale, width: int, plot: str, label: str, name: str) -> str:
    """A chart: its y axis stays put (a narrow SVG of its own) while the plot scrolls sideways on a phone."""
    h = scale.bottom + 24
    axis = [f'<svg class="axis" width="48" height="{h}" role="presentation" aria-hidden="true">']
    grid = []
    for t in scale.ticks():
        yy = scale.y(t)
        axis.append(f'<text x="44" y="{yy + 4:.1f}" text-anchor="end">{_tick_text(t)}</text>')
        grid.append(f'<line x1="0" x2="{width}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eceef1" stroke-width="1"/>')
    axis.append("</svg>")
    return (f'<div class="chart" data-chart="{name}">' + "".join(axis) + '<div class="scroll">'
            f'<svg width="{width}" height="{h}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
            + "".join(grid) + plot + "</svg></div></div>")


def _hline(v: float, scale: _Scale, width: int, color: str, w: float, dash: str = "") -> str:
    yy = scale.y(v)
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="0" x2="{width}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{color}" stroke-width="{w}"{d}/>'


def _pts(points) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _label_every(n: int, step: float) -> range:
    every = max(1, math.ceil(30 / step))
    return range(0, n, every)


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


def _chart_section(series, colors: dict[str, str], links: _Links) -> str:
    seeds = sorted({s for a in series for s in a.progress_by_seed} | {s for a in series for s in a.success_seeds})
    if not seeds:
        return '<section id="chart"><h2>Per seed</h2><p class="mute">No row has a progress_final_cm value.</p></section>'
    vals = [v for a in series for v in a.progress_by_seed.values()]
    scale = _Scale(min(vals + [KNOCK_AWAY_CM]), max(vals + [0.0]))
    k = len(series)
    gw = max(6.0 * k + 4, min(56.0, 880.0 / len(seeds)))
    bw = (gw * 0.8) / k
    width = int(gw * len(seeds)) + 8
    parts = [_hline(KNOCK_AWAY_CM, scale, width, KNOCK_COLOR, 1, dash="4 3")]
    for j, a in enumerate(series):
        color = colors.get(a.arm, COLORS[j % len(COLORS)])
        succ, knocks = set(a.success_seeds), set(a.knock_seeds)
        for i, s in enumerate(seeds):
            if s not in a.progress_by_seed:
                continue
            v = a.progress_by_seed[s]
            x = 4 + gw * i + gw * 0.1 + bw * j
            y0, y1 = sorted((scale.y(0.0), scale.y(v)))
            what = OUTCOME_LABELS.get(a.outcome_by_seed.get(s, ""), "")
            tip = f"{a.arm} · seed {s}: {v:+.2f} cm" + (f" · {what}" if what else "")
            mark = ""
            cx = x + bw / 2
            if s in succ:
                cy = scale.y(max(v, 0.0)) - 6
                mark = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{max(2.5, min(5, bw / 2)):.1f}" fill="{SUCCESS_COLOR}"/>'
            elif s in knocks:
                cy = scale.y(min(v, 0.0)) + 4
                r = max(3.0, min(5.0, bw / 2))
                mark = f'<polygon points="{_pts([(cx - r, cy), (cx + r, cy), (cx, cy + 1.6 * r)])}" fill="{KNOCK_COLOR}"/>'
            bar = (f'<rect x="{x:.1f}" y="{y0:.1f}" width="{max(bw - 0.6, 1):.1f}" height="{max(y1 - y0, 1):.1f}" '
                   f'fill="{color}"/>{mark}')
            href = links.seed(a.arm, s)
            g = f'<g data-arm="{escape(a.arm)}" data-seed="{s}" data-v="{v!r}"><title>{escape(tip)}</title>{bar}</g>'
            parts.append(f'<a href="{href}">{g}</a>' if href else g)
    parts.append(_hline(0.0, scale, width, "#444", 1))
    for i in _label_every(len(seeds), gw):
        parts.append(f'<text x="{4 + gw * i + gw / 2:.1f}" y="{scale.bottom + 16}" text-anchor="middle">{seeds[i]}</text>')
    label = (f"progress_final_cm by seed, {', '.join(a.arm for a in series)}: successes marked with a green dot, "
             f"knock-aways with a red triangle, {KNOCK_AWAY_CM:g} cm dashed")
    legend = "".join(f'<span><span class="swatch" style="background:{colors.get(a.arm, COLORS[j % len(COLORS)])}">'
                     f"</span>{escape(a.arm)} ({a.successes}/{a.n} successes)</span>" for j, a in enumerate(series))
    legend += (f'<span><span class="swatch" style="background:{SUCCESS_COLOR};border-radius:50%"></span>success</span>'
               f'<span><span class="swatch" style="background:{KNOCK_COLOR}"></span>knock-away '
               f"(final ≤ {KNOCK_AWAY_CM:g} cm, dashed)</span>")
    return ('<section id="chart"><h2>Per seed</h2><p class="small mute">progress_final_cm (progress kept at the end, '
            "cm) by seed; a bar opens its seed.</p>" + _frame(scale, width, "".join(parts), label, "per-seed")
            + f'<div class="legend">{legend}</div><p class="small mute">seed</p></section>')


def _paired_chart(p, colors: dict[str, str], links: _Links) -> str:
    items = sorted(p.deltas.items(), key=lambda kv: (kv[1], kv[0]))
    if not items:
        return ""
    vals = [d for _, d in items] + ([*p.delta_ci] if p.delta_ci else [])
    scale = _Scale(min(vals), max(vals), height=180)
    step = max(5.0, min(28.0, 880.0 / len(items)))
    width = int(step * len(items)) + 8
    arm_c, cmp_c = colors.get(p.arm, COLORS[0]), colors.get(p.comparator, COLORS[1])
    parts = []
    if p.delta_ci is not None:
        y0, y1 = scale.y(p.delta_ci[1]), scale.y(p.delta_ci[0])
        parts.append(f'<rect x="0" y="{y0:.1f}" width="{width}" height="{max(y1 - y0, 1):.1f}" fill="{MEAN_COLOR}" '
                     'fill-opacity="0.12"/>')
    for i, (s, d) in enumerate(items):
        color = arm_c if d > p.tie_cm else cmp_c if d < -p.tie_cm else TIED_COLOR
        y0, y1 = sorted((scale.y(0.0), scale.y(d)))
        g = (f'<g data-seed="{s}"><title>seed {s}: {p.arm} − {p.comparator} {d:+.2f} cm</title>'
             f'<rect x="{4 + step * i + step * 0.1:.1f}" y="{y0:.1f}" width="{step * 0.8:.1f}" height="{max(y1 - y0, 1):.1f}" '
             f'fill="{color}"/></g>')
        href = links.seed(p.arm, s)
        parts.append(f'<a href="{href}">{g}</a>' if href else g)
    parts.append(_hline(0.0, scale, width, "#444", 1))
    if p.delta_mean is not None:
        parts.append(_hline(p.delta_mean, scale, width, MEAN_COLOR, 1.6))
    label = f"paired per-seed delta of progress_final_cm, {p.arm} minus {p.comparator}, sorted"
    legend = (f'<div class="legend"><span><span class="swatch" style="background:{arm_c}"></span>{escape(p.arm)} better: '
              f'{p.better}</span><span><span class="swatch" style="background:{TIED_COLOR}"></span>tied: {p.tied}</span>'
              f'<span><span class="swatch" style="background:{cmp_c}"></span>{escape(p.comparator)} better: {p.worse}</span>'
              + (f"<span>— mean {p.delta_mean:+.3f} cm</span>" if p.delta_mean is not None else "")
              + (f'<span><span class="swatch" style="background:{MEAN_COLOR};opacity:.25"></span>CI95 '
                 f"[{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]</span>" if p.delta_ci else "") + "</div>")
    return _frame(scale, width, "".join(parts), label, "paired") + legend


# ---------------------------------------------------------------- the grid and each seed


def _grid_seeds(a) -> list[int]:
    return sorted(set(a.outcome_by_seed) | set(a.missing_seeds))


def _grids(reps, colors: dict[str, str], links: _Links) -> str:
    out = ['<section id="seeds"><h2>Every seed</h2><p class="small mute">One cell per registered seed, coloured by how '
           "its episode ended; ▶ marks a filmed one. A cell opens the seed: its video (front and wrist cameras side by "
           "side) and its row in words.</p>"]
    used = set()
    for r in reps:
        a = r.reads
        cells = []
        for s in _grid_seeds(a):
            o = a.outcome_by_seed.get(s, NO_ROW)
            used.add(o)
            row = a.rows_by_seed.get(s)
            film = row_video(r.run_dir, row) is not None
            cls = "cell" + (" dark" if o in (SUCCESS, OFF_TABLE, KNOCK_AWAY, ERROR, CARRIED, DROPPED) else "") + (
                " film" if film else "")
            what = OUTCOME_LABELS.get(o, "no row")
            cells.append(f'<a class="{cls}" style="background:{OUTCOME_COLORS[o]}" href="{links.seed(a.arm, s)}" '
                         f'data-seed="{s}" data-outcome="{o}" title="seed {s}: {escape(what)}">{s}</a>')
        out.append(f'<h3 id="grid-{_slug(a.arm)}"><span class="swatch" style="background:{colors.get(a.arm, COLORS[0])}">'
                   f"</span>{escape(a.arm)} <span class=\"mute small\">run {escape(r.run_dir.name)}</span></h3>"
                   f'<div class="grid" data-arm="{escape(a.arm)}">' + "".join(cells) + "</div>")
    legend = "".join(f'<span><span class="swatch" style="background:{OUTCOME_COLORS[o]}"></span>'
                     f"{escape(OUTCOME_LABELS.get(o, 'no row'))}</span>" for o in (*EPISODE_OUTCOMES, NO_ROW) if o in used)
    out.append(f'<div class="legend">{legend}</div></section>')
    return "\n".join(out)


def _seed_boxes(reps, links: _Links) -> str:
    out = []
    for r in reps:
        a = r.reads
        seeds = _grid_seeds(a)
        for i, s in enumerate(seeds):
            row = a.rows_by_seed.get(s)
            o = a.outcome_by_seed.get(s, NO_ROW)
            sid = seed_id(a.arm, s)
            prev = seed_id(a.arm, seeds[i - 1]) if i > 0 else ""
            nxt = seed_id(a.arm, seeds[i + 1]) if i + 1 < len(seeds) else ""
            back = f"grid-{_slug(a.arm)}"
            bar = [f"<strong>{escape(a.arm)} · seed {s}</strong>",
                   f'<span class="badge" style="background:{OUTCOME_COLORS[o]};color:#111">'
                   f"{escape(OUTCOME_LABELS.get(o, 'no row'))}</span>"]
            if prev:
                bar.append(f'<a href="#{prev}">← seed {seeds[i - 1]}</a>')
            if nxt:
                bar.append(f'<a href="#{nxt}">seed {seeds[i + 1]} →</a>')
            bar.append(f'<a class="close" href="#{back}">close ✕</a>')
            body = [f'<p class="small">{escape(_seed_facts(row))}</p>'] if row is not None else []
            video = row_video(r.run_dir, row)
            if video is not None:
                body.append(f'<video controls muted playsinline preload="none" src="{links.file(video)}"></video>'
                            '<p class="small mute">front camera | wrist camera</p>')
            elif row is None:
                body.append('<p class="mute">No row: this seed has not run (or its episode was not recorded).</p>')
            else:
                body.append('<p class="mute">Not filmed (the plan\'s video_draw chose other episodes, or the file is '
                            "gone).</p>")
            if row is not None:
                body.append('<table class="small row"><thead><tr><th>field: what it means</th><th>value</th></tr></thead>'
                            "<tbody>" + "".join(f'<tr data-field="{escape(k)}"><td><code>{escape(k)}</code>'
                                                f'<div class="mute">{escape(w)}</div></td><td>{escape(v)}</td></tr>'
                                                for k, v, w in row_in_words(row))
                            + "</tbody></table>")
            out.append(f'<section class="seed" id="{sid}" data-arm="{escape(a.arm)}" data-seed="{s}" data-back="{back}" '
                       f'data-prev="{prev}" data-next="{nxt}"><div class="box"><div class="bar">' + " ".join(bar)
                       + "</div>" + "".join(body) + "</div></section>")
    return "\n".join(out)


def _seed_facts(row: dict) -> str:
    """The few fields a glance at a seed wants first, in the row's own words (the table below has them all)."""
    bits = [f"{label} {fmt_value(key, row.get(key))}" for key, label in SEED_FACTS if key in row]
    if type(row.get("zero_fallbacks")) is int and type(row.get("predicts")) is int:
        bits.append(f"zero-fallbacks {row['zero_fallbacks']}/{row['predicts']}")
    return " · ".join(bits)


SEED_FACTS = (("progress_final_cm", "progress kept"), ("progress_cm", "best progress"), ("ticks", "ticks"),
              ("wall_s", "wall"))


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


def _pairs(reps, colors: dict[str, str], links: _Links) -> str:
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
        out.append(_paired_chart(p, colors, links))
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


def _provenance(doc, reps, links: _Links, now: str) -> str:
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


# ---------------------------------------------------------------- what a page uses (for a Space)


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and ((k == "href" and tag in ("a", "link")) or (k in ("src", "poster") and tag in _MEDIA)):
                self.refs.append(v)


_MEDIA = ("video", "audio", "source", "img", "script", "iframe", "embed", "track")


def linked_files(page: Path, root: Path) -> tuple[list[Path], list[str]]:
    """The local files `page` uses (its links and media), following every page it links, each inside `root`;
    and, one line each, the references that leave `root`, name another host, or name a missing file."""
    root = root.resolve()
    todo, seen, files, problems = [page.resolve()], set(), [], []
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        files.append(p)
        if p.suffix != ".html":
            continue
        parser = _Refs()
        parser.feed(p.read_text(encoding="utf-8"))
        for ref in parser.refs:
            parts = urlsplit(ref)
            if ref.startswith("#") or parts.scheme == "data":
                continue
            if parts.scheme or parts.netloc:
                problems.append(f"{p.name} links {ref} on another host")
                continue
            target = (p.parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(root):
                problems.append(f"{p.name} links {unquote(parts.path)}, outside {root.name}/")
            elif not target.is_file():
                problems.append(f"{p.name} links {unquote(parts.path)}, which is not there")
            else:
                todo.append(target)
    return sorted(files), problems


def space_index(title: str, registrations: list[tuple[str, str]], now: str) -> str:
    """The Space's front page: each registration's page on it (path in the Space, its id), newest publish first."""
    items = "".join(f'<li><a href="{quote(path, safe="/")}">{escape(label)}</a> <span class="mute small">'
                    f"{escape(path)}</span></li>" for path, label in registrations)
    body = [f"<header><h1>{escape(title)}</h1><p class=\"mute small\">Pre-registered evaluations reported by "
            f"<code>fontaine-prereg</code>; updated {escape(now)}.</p></header>",
            f'<section><h2>Registrations</h2><ul class="index">{items or "<li>none yet</li>"}</ul></section>']
    return _document(title, body)
