"""The results page's crossed design (issue 48): each arm's variants table (k/n, rate and 95% interval per
variant, the one the decision reads and the camera variants read apart marked, the pooled rate with its
interval, the worst variant), a grid line per variant under the arm's grid, and in each seed's box its
episode on every variant (outcome, video). prereg/outputs/page.py and page_seeds.py place them.

The table states the report's story (prereg.stats.story.VariantStory, results.json's), each variant's
interval its cell's. The per-seed cells read each
variant's last row of each planned seed (prereg.rundir.rows.latest_rows, the one denominator).
"""

from __future__ import annotations

from html import escape

from prereg import rundir as rd
from prereg.rundir.outcomes import episode_outcome
from prereg.rundir.rows import latest_rows, read_as_success, read_rows, row_video, rows_of_variant
from prereg.stats.story import DECIDES, VariantStory


def _pct(v: float) -> str:
    return f"{v:.1%}"


def variants_section(stories) -> str:
    """The variants table of each arm whose story has them ('' when none: a run of one scene)."""
    told = [v for s in stories if s is not None for v in s.variants]
    if not told:
        return ""
    out = ['<section id="variants"><h2>Variants</h2><p class="small mute">Every seed ran on the scene as declared '
           "(base) and on each registered variant (a crossed design). The pooled rate is the unweighted mean of the "
           "pooled variants' rates over the seeds that have a row on each, its interval a design-effect Wilson "
           "interval (the variants of one seed are correlated); camera variants are read apart unless the plan pools "
           "them.</p>"]
    for v in told:
        out.append(_table(v))
    out.append("</section>")
    return "\n".join(out)


def _table(v: VariantStory) -> str:
    rows = []
    for c in v.cells:
        ci = c.interval  # the report's (prereg.stats.variants.VariantRead's Wilson interval)
        tag = v.tag(c)
        cls = ' class="decides"' if tag == DECIDES else ""
        rows.append(f'<tr data-variant="{escape(c.variant)}"{cls}>'
                    f"<th>{escape(c.variant)}</th><td data-k=\"k\">{c.successes}/{c.n}</td>"
                    f"<td data-k=\"rate\">{_pct(c.successes / c.n) if c.n else '—'}</td>"
                    f"<td data-k=\"ci\">{f'[{_pct(ci[0])}, {_pct(ci[1])}]' if ci else '—'}</td>"
                    f"<td class=\"mute\">{escape(tag)}</td></tr>")
    if v.pooled_rate is not None and v.pooled_interval is not None:
        lo, hi = v.pooled_interval
        rows.append(f'<tr class="pooled" data-variant="pooled"><th>pooled <span class="mute small">('
                    f'{escape(", ".join(v.pooled))})</span></th><td data-k="seeds">{v.pooled_seeds} seeds</td>'
                    f'<td data-k="rate">{_pct(v.pooled_rate)}</td><td data-k="ci">[{_pct(lo)}, {_pct(hi)}]</td>'
                    "<td class=\"mute\">unweighted mean</td></tr>")
    worst = f'<p class="small">worst variant: <strong data-k="worst">{escape(v.worst)}</strong></p>' if v.worst else ""
    return (f'<h3>{escape(v.arm)}</h3><table class="variants" data-arm="{escape(v.arm)}"><thead><tr><th>variant</th>'
            "<th>successes</th><th>rate</th><th>95% CI</th><th></th></tr></thead><tbody>" + "".join(rows)
            + f"</tbody></table><p class=\"small\" data-k=\"pooled\">{escape(v.pooled_words())}</p>{worst}")


class CrossedRows:
    """One arm's crossed design as its run directory holds it: each variant's counted row of each planned seed."""

    def __init__(self, manifest, by_variant: dict):
        self.manifest = manifest
        self.by_variant = by_variant  # variant -> {seed: its last row}, in the plan's order (`base` first)

    @property
    def counted_variant(self) -> str:
        """The variant whose episode a seed's cell shows first: the read one (base's under a pooled read)."""
        return self.manifest.counted_variant

    def outcome(self, variant: str, seed) -> str | None:
        row = self.by_variant.get(variant, {}).get(seed)
        return None if row is None else episode_outcome(read_as_success(row, self.manifest.success_field))

    @classmethod
    def of(cls, rep) -> "CrossedRows | None":
        """None for a run of one scene (or one whose manifest was not read)."""
        m = rep.snapshot.manifest if getattr(rep, "snapshot", None) is not None else None
        if m is None or not m.variants:
            return None
        rows = read_rows(rep.run_dir / rd.ROWS).rows
        if m.is_comparison:
            rows = [r for r in rows if r.get("arm") == rep.reads.arm]
        return cls(m, {v: latest_rows(rows_of_variant(rows, v), m.seeds).by_seed for v in m.variants})

    def label(self, variant: str) -> str:
        return f"{variant} ({DECIDES})" if variant in self.manifest.decision_variants else variant


def variant_episodes(crossed: CrossedRows, run_dir, seed, links, colors: dict, labels: dict) -> str:
    """A seed's box, its episode on every variant: the outcome, and the video where it was filmed."""
    items = []
    for v, by_seed in crossed.by_variant.items():
        row = by_seed.get(seed)
        o = crossed.outcome(v, seed)
        badge = (f'<span class="badge" style="background:{colors[o]};color:#111">{escape(labels.get(o, o))}</span>'
                 if o is not None else '<span class="mute">no row</span>')
        video = row_video(run_dir, row)
        film = (f'<video controls muted playsinline preload="none" src="{links.file(video)}"></video>'
                if video is not None else ('<span class="mute small">not filmed</span>' if row is not None else ""))
        items.append(f'<li data-variant="{escape(v)}"><strong>{escape(crossed.label(v))}</strong> {badge}{film}</li>')
    return ('<h4>Every variant</h4><ul class="variants">' + "".join(items) + "</ul>") if items else ""

