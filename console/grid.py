"""The per-seed grid as text: one coloured cell per seed, in plan order (console/widgets/panels.py
SeedGrid draws it and moves its cursor). A comparison run's grid has a line per arm for each stretch
of seeds, so seed k of both arms sits in one column; at most GRID_MAX_SEEDS cells are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from console.aggregate import GRID_MAX_SEEDS, AggregateView
from console.render import OUTCOME_GLYPH, OUTCOME_STYLE, clip_text
from prereg.rundir.outcomes import CARRIED, DROPPED, ERROR, KNOCK_AWAY, OFF_TABLE, PLACED_TIPPED, QUIET, SUCCESS, TOUCHED

GRID_LEGEND = ((SUCCESS, "success"), (PLACED_TIPPED, "tipped"), (CARRIED, "carried"), (DROPPED, "dropped"),
               (OFF_TABLE, "off-table"), (KNOCK_AWAY, "knock"), (TOUCHED, "touched"), (QUIET, "quiet"),
               (ERROR, "error"), (None, "none"))


def grid_order(view: AggregateView, seeds: list | None) -> tuple[list, int]:
    """The seeds the grid draws, in order (the manifest's; a run without one: those with a row), and
    how many are left out. Only the first GRID_MAX_SEEDS are drawn (per arm: their half each, in a
    comparison run): a 100k-seed run is as cheap to redraw as a small one. Rows of seeds outside the
    plan are not counted (the counts panel says how many), so they have no cell."""
    arms = view.arms if view.comparison else ()
    most = GRID_MAX_SEEDS // max(1, len(arms))
    if seeds:
        order = list(seeds[:most])
        return order, len(seeds) - len(order)
    seen = set().union(*(a.seed_outcomes.keys() for a in arms)) if arms else set(view.seed_outcomes)
    order = sorted(seen, key=_seed_key)[:most]
    with_rows = max([a.episodes for a in view.arms] or [len(seen)])
    return order, max(0, with_rows - len(order))


GRID_LABEL_W = 6  # "12345 " before each line of cells; each cell is 2 columns
GRID_ARM_W = 8  # a comparison run's lines start with their arm, clipped to this


@dataclass(frozen=True)
class GridLayout:
    """The grid's lines, each (label, keys): a one-arm run's seeds in order; a comparison run's, one
    line per arm for each stretch of seeds, so seed k of both arms sits in one column. A key is a
    seed, or (arm, seed) in a comparison run."""

    lines: tuple[tuple[str, tuple], ...]
    label_w: int
    hidden: int

    @property
    def keys(self) -> list:
        return [k for _, keys in self.lines for k in keys]


def grid_layout(view: AggregateView, seeds: list | None, width: int) -> GridLayout:
    order, hidden = grid_order(view, seeds)
    arms = [a.arm for a in view.arms] if view.comparison else []
    arm_w = min(GRID_ARM_W, max((len(a) for a in arms), default=0))
    label_w = GRID_LABEL_W + (arm_w + 1 if arms else 0)
    per = grid_per_line(width, label_w)
    lines = []
    for i in range(0, len(order), per):
        chunk = order[i:i + per]
        if arms:
            lines += [(f"{clip_text(a, arm_w):<{arm_w}} {str(chunk[0]):>5} ", tuple((a, s) for s in chunk)) for a in arms]
        else:
            lines.append((f"{str(chunk[0]):>5} ", tuple(chunk)))
    return GridLayout(tuple(lines), label_w, hidden)


def grid_per_line(width: int, label_w: int = GRID_LABEL_W) -> int:
    return max(10, (max(width, 16) - label_w - 2) // 2 // 10 * 10)


def grid_outcome(view: AggregateView, key) -> str | None:
    """The outcome a cell shows: the counted row's (None: no row yet)."""
    if isinstance(key, tuple):
        arm = next((a for a in view.arms if a.arm == key[0]), None)
        return arm.seed_outcomes.get(key[1]) if arm is not None else None
    return view.seed_outcomes.get(key)


def seed_grid_text(view: AggregateView, seeds: list | None, width: int, cursor: tuple[int, int] | None = None,
                   layout: GridLayout | None = None) -> Text:
    """One coloured cell per seed (per arm and seed, a comparison run), in seed order; seeds without
    a row yet are dots. The cell at `cursor` (line, column of the layout) is drawn reversed."""
    layout = layout or grid_layout(view, seeds, width)
    t = Text()
    for y, (label, keys) in enumerate(layout.lines):
        if y:
            t.append("\n")
        t.append(label, style="grey50")
        run: list[str] = []  # cells of one style in a row become one span: a 600-cell grid is cheap to paint
        run_style = None
        for x, key in enumerate(keys):
            outcome = grid_outcome(view, key)
            style = OUTCOME_STYLE[outcome]
            if cursor == (y, x):
                if run:
                    t.append("".join(run), style=run_style)
                    run = []
                t.append(OUTCOME_GLYPH[outcome], style=style + " reverse")
                t.append(" ")
                continue
            if style != run_style and run:
                t.append("".join(run), style=run_style)
                run = []
            run_style = style
            run.append(OUTCOME_GLYPH[outcome] + " ")
        if run:
            t.append("".join(run), style=run_style)
    if layout.hidden > 0:
        t.append(f"\n… {layout.hidden} more seeds (counted in the totals)", style="grey50")
    return t


def grid_legend() -> Text:
    t = Text()
    for outcome, label in GRID_LEGEND:
        t.append(OUTCOME_GLYPH[outcome], style=OUTCOME_STYLE[outcome])
        t.append(f"{label} ", style="grey62")
    t.rstrip()
    return t


def _seed_key(seed) -> tuple:
    return (0, seed, "") if isinstance(seed, int) else (1, 0, str(seed))
