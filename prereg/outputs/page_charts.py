"""The results page's charts, inline SVG: the per-seed chart, the paired chart across arms, and a comparison
run's confidence band over seeds, each with a y axis of its own. The per-seed and paired plots keep a bar at least
6 px wide and scroll sideways on a phone; the band is as wide as the page leaves it, so its decision mark is always
in view. Legends stand under the plots. Every number drawn is the report's (prereg/outputs/page.py passes its reads in)."""

from __future__ import annotations

import math
from html import escape

from prereg.core.colors import COLORS, KNOCK_COLOR, MEAN_COLOR, SUCCESS_COLOR, TIED_COLOR
from prereg.outputs.page_html import Links
from prereg.rundir.outcomes import OUTCOME_LABELS
from prereg.rundir.rows import KNOCK_AWAY_CM
from prereg.stats.comparison import NOT_THE_TEST, UNDECIDED, band_is_the_test


class _Scale:
    """A vertical scale: values lo..hi (zero always in) onto pixels top..bottom, with round ticks."""

    def __init__(self, lo: float, hi: float, *, height: int = 240, pad: float = 0.08, top: int = 10):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        span = (hi - lo) or 1.0
        self.lo, self.hi = lo - pad * span, hi + pad * span
        self.top, self.bottom = top, top + height
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


def _frame(scale: _Scale, width: int | str, plot: str, label: str, name: str) -> str:
    """A chart: its y axis stays put (a narrow SVG of its own) beside the plot. A plot `width` pixels wide scrolls
    sideways inside its box on a phone; one of width "100%" (the band) is as wide as the page leaves it."""
    h = scale.bottom + 24
    axis = [f'<svg class="axis" width="48" height="{h}" role="presentation" aria-hidden="true">']
    grid = []
    for t in scale.ticks():
        yy = scale.y(t)
        axis.append(f'<text x="44" y="{yy + 4:.1f}" text-anchor="end">{_tick_text(t)}</text>')
        grid.append(f'<line x1="0" x2="{width}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eceef1" stroke-width="1"/>')
    axis.append("</svg>")
    box = "scroll" if isinstance(width, int) else "plot"
    return (f'<div class="chart" data-chart="{name}">' + "".join(axis) + f'<div class="{box}">'
            f'<svg width="{width}" height="{h}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
            + "".join(grid) + plot + "</svg></div></div>")


def _hline(v: float, scale: _Scale, width: int | str, color: str, w: float, dash: str = "") -> str:
    yy = scale.y(v)
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="0" x2="{width}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{color}" stroke-width="{w}"{d}/>'


def _pts(points) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _label_every(n: int, step: float) -> range:
    every = max(1, math.ceil(30 / step))
    return range(0, n, every)


def chart_section(series, colors: dict[str, str], links: Links) -> str:
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


def paired_chart(p, colors: dict[str, str], links: Links) -> str:
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
        g = (f'<g data-seed="{s}"><title>{escape(f"seed {s}: {p.arm} − {p.comparator} {d:+.2f} cm")}</title>'
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


# ---------------------------------------------------------------- a comparison run's band


def band_chart(c, colors: dict[str, str]) -> str:
    """B - A over the seeds of the shared plan prefix: the confidence-sequence band, its running mean,
    zero, the minimum effect (both signs) and the seed the decision fell on.

    The plot is as wide as the page leaves it (a phone's 390 px or a desktop's), never scrolled: the seeds
    are placed in percent of its width (the band and the mean in a stretched inner SVG, the lines and the
    text in percent, so text keeps its size), and the decision's words stand in a strip above the data."""
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
    scale = _Scale(lo_y, hi_y, pad=0.06, top=BAND_STRIP)
    h = scale.bottom + 24
    x = [BAND_MARGIN + (100 - 2 * BAND_MARGIN) * (i + 0.5) / n for i in range(n)]  # percent of the plot's width
    y = scale.y

    def clip(v):
        return min(max(v, scale.lo), scale.hi)
    band = [(x[i], y(clip(p.hi[i]))) for i in range(n) if p.hi[i] == p.hi[i]]
    band += [(x[i], y(clip(p.lo[i]))) for i in reversed(range(n)) if p.lo[i] == p.lo[i]]
    b_color = colors.get(spec.arm_b, COLORS[1])
    parts = [f'<svg x="0" y="0" width="100%" height="{h}" viewBox="0 0 100 {h}" preserveAspectRatio="none" '
             f'data-k="band">'
             f'<polygon points="{_pts(band)}" fill="{b_color}" fill-opacity="0.22" stroke="none"/>'
             f'<polyline points="{_pts([(x[i], y(clip(p.mean[i]))) for i in range(n)])}" fill="none" '
             f'stroke="{MEAN_COLOR}" stroke-width="2" vector-effect="non-scaling-stroke"/></svg>',
             _hline(0.0, scale, "100%", "#444", 1.2)]
    for e in (eff, -eff):
        if scale.lo <= e <= scale.hi:
            parts.append(_hline(e, scale, "100%", "#888", 1, dash="5 4"))
    decided = c.decided_at
    mark = ""
    if decided is not None and decided in p.at:
        i = p.at.index(decided)
        parts.append(f'<line x1="{x[i]:.2f}%" x2="{x[i]:.2f}%" y1="{BAND_STRIP - 8}" y2="{scale.bottom}" '
                     'stroke="#b7791f" stroke-width="2.5" data-k="decision_mark"/>')
        # the words above the data, on the side with room: from the line rightwards, leftwards, or centred on it
        frac = (i + 0.5) / n
        anchor, dx = ("start", 4) if frac < 0.3 else ("end", -4) if frac > 0.7 else ("middle", 0)
        said = f"undecided at {decided} (max seeds)" if c.outcome == UNDECIDED else f"decided at {decided}"
        parts.append(f'<text x="{x[i]:.2f}%" dx="{dx}" y="{BAND_STRIP - 12}" text-anchor="{anchor}" '
                     f'data-k="decided_at" data-v="{decided}">{said}</text>')
        mark = (f'<span><span class="swatch" style="background:#b7791f"></span>the decision ({escape(c.outcome or "")}), '
                f"at seed {decided} of the prefix</span>")
    for i in range(0, n, max(1, math.ceil(n / BAND_LABELS))):
        parts.append(f'<text x="{x[i]:.2f}%" y="{scale.bottom + 16}" text-anchor="middle">{p.at[i]}</text>')
    unit = "rate difference" if spec.metric == "success" else "cm"
    label = (f"{spec.arm_b} minus {spec.arm_a} per seed ({unit}) over the {n} seeds of the shared plan prefix: "
             f"{100 * (1 - spec.alpha):g}% confidence sequence, running mean, zero and the minimum effect")
    role = "anytime-valid, the test" if band_is_the_test(spec, c.outcome) else f"anytime-valid; {NOT_THE_TEST}"
    legend = (f'<div class="legend"><span><span class="swatch" style="background:{b_color};opacity:.35"></span>'
              f"{100 * (1 - spec.alpha):g}% confidence sequence ({role})</span>"
              f'<span><span class="swatch" style="background:{MEAN_COLOR}"></span>running mean</span>'
              f"<span>— 0 · - - ±minimum effect {eff:g}</span>{mark}</div>")
    return (f'<p class="small mute">{escape(spec.arm_b)} − {escape(spec.arm_a)} per seed ({unit}), seeds of the shared '
            f"plan prefix (both arms have a row)</p>"
            + _frame(scale, "100%", "".join(parts), label, "band") + legend)


BAND_STRIP = 30  # px above the band's data where the decision's words stand
BAND_MARGIN = 3.0  # percent of the plot's width left empty at each side (the seed labels' half widths)
BAND_LABELS = 9  # seed labels at most under the band: room for three digits each at a phone's 314 px
