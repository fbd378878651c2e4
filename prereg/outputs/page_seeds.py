"""The results page's seeds: the grid of every registered seed, one cell per seed coloured by how its episode
ended (as the console's grid colours it), and each seed's box that a cell opens: its video (front and wrist
cameras) and its row in words. prereg/outputs/page.py places both on the page."""

from __future__ import annotations

from html import escape

from prereg.core.colors import COLORS, KNOCK_COLOR, SUCCESS_COLOR
from prereg.outputs.page_html import Links, seed_id, slug
from prereg.outputs.page_variants import CrossedRows, variant_episodes
from prereg.rundir.outcomes import (
    CARRIED,
    DROPPED,
    EPISODE_OUTCOMES,
    ERROR,
    HOLD_UNFINISHED,
    KNOCK_AWAY,
    OFF_TABLE,
    OUTCOME_LABELS,
    PLACED_TIPPED,
    QUIET,
    SUCCESS,
    TOUCHED,
)
from prereg.rundir.row_words import fmt_value, row_in_words
from prereg.rundir.rows import row_video

NO_ROW = "no_row"


OUTCOME_COLORS = {  # the grid's cells, as the console's grid colours them (console/render.py)
    SUCCESS: SUCCESS_COLOR, HOLD_UNFINISHED: "#8fd19a", PLACED_TIPPED: "#63b86f", CARRIED: "#1f9bb5", DROPPED: "#4a6fd1",
    OFF_TABLE: "#7a1010", KNOCK_AWAY: KNOCK_COLOR, TOUCHED: "#d9b400", QUIET: "#b9b9b9",
    ERROR: "#b0289a", NO_ROW: "#f2f2f2",
}


def _grid_seeds(a) -> list[int]:
    return sorted(set(a.outcome_by_seed) | set(a.missing_seeds))


def grids(reps, colors: dict[str, str], links: Links) -> str:
    out = ['<section id="seeds"><h2>Every seed</h2><p class="small mute">One cell per registered seed, coloured by how '
           "its episode ended; ▶ marks a filmed one. A cell opens the seed: its video (front and wrist cameras side by "
           "side) and its row in words.</p>"]
    used = set()
    for r in reps:
        a = r.reads
        crossed = CrossedRows.of(r)
        cells = []
        for s in _grid_seeds(a):
            o = a.outcome_by_seed.get(s, NO_ROW)
            used.add(o)
            row = a.rows_by_seed.get(s)
            cells.append(_cell(a.arm, s, o, row_video(r.run_dir, row) is not None, links))
        out.append(f'<h3 id="grid-{slug(a.arm)}"><span class="swatch" style="background:{colors.get(a.arm, COLORS[0])}">'
                   f"</span>{escape(a.arm)} <span class=\"mute small\">run {escape(r.run_dir.name)}</span></h3>"
                   + (f'<p class="small mute">{escape(crossed.label(crossed.counted_variant))}</p>' if crossed else "")
                   + f'<div class="grid" data-arm="{escape(a.arm)}">' + "".join(cells) + "</div>")
        for v, by_seed in (crossed.by_variant.items() if crossed else ()):  # a crossed design: a line per variant
            if v == crossed.counted_variant:
                continue
            line = []
            for s in _grid_seeds(a):
                o = crossed.outcome(v, s) or NO_ROW
                used.add(o)
                line.append(_cell(a.arm, s, o, row_video(r.run_dir, by_seed.get(s)) is not None, links))
            out.append(f'<p class="small mute">{escape(v)}</p><div class="grid" data-arm="{escape(a.arm)}" '
                       f'data-variant="{escape(v)}">' + "".join(line) + "</div>")
    legend = "".join(f'<span><span class="swatch" style="background:{OUTCOME_COLORS[o]}"></span>'
                     f"{escape(OUTCOME_LABELS.get(o, 'no row'))}</span>" for o in (*EPISODE_OUTCOMES, NO_ROW) if o in used)
    out.append(f'<div class="legend">{legend}</div></section>')
    return "\n".join(out)


def _cell(arm: str, s: int, o: str, film: bool, links: Links) -> str:
    """A seed's cell, coloured by how its episode ended; it opens the seed's box."""
    cls = "cell" + (" dark" if o in (SUCCESS, OFF_TABLE, KNOCK_AWAY, ERROR, CARRIED, DROPPED) else "") + (
        " film" if film else "")
    what = OUTCOME_LABELS.get(o, "no row")
    return (f'<a class="{cls}" style="background:{OUTCOME_COLORS[o]}" href="{links.seed(arm, s)}" '
            f'data-seed="{s}" data-outcome="{o}" title="seed {s}: {escape(what)}">{s}</a>')


def seed_boxes(reps, links: Links) -> str:
    out = []
    for r in reps:
        a = r.reads
        crossed = CrossedRows.of(r)
        seeds = _grid_seeds(a)
        for i, s in enumerate(seeds):
            row = a.rows_by_seed.get(s)
            if crossed is not None:  # the episode the decision reads: the read variant's
                row = crossed.by_variant[crossed.counted_variant].get(s, row)
            o = a.outcome_by_seed.get(s, NO_ROW)
            sid = seed_id(a.arm, s)
            prev = seed_id(a.arm, seeds[i - 1]) if i > 0 else ""
            nxt = seed_id(a.arm, seeds[i + 1]) if i + 1 < len(seeds) else ""
            back = f"grid-{slug(a.arm)}"
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
            if crossed is not None:  # its episode on every variant, each with its video
                body.append(variant_episodes(crossed, r.run_dir, s, links, OUTCOME_COLORS, OUTCOME_LABELS))
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
