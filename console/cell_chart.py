"""The report's chart drawn in terminal cells, for terminals that get cells rather than pixels.

The report's chart.png is drawn for a screen: at half-block resolution (two pixels a cell,
plain tmux) its tick labels, legend and title become smudges. Here the same reads (the
report's own, `prereg.outputs.report.read_registration`) are drawn with text where text is needed
(the arm names in their chart colours, the y range, the seeds under the columns, the counts
in words) and eighth-blocks only for the bars: one panel per arm on a shared scale, its
successes (✓) and knock-aways (✗) marked under its columns, and the paired per-seed deltas
below, in seed order, coloured by which arm did better.

`cell_chart` is pure (reads in, a `rich.text.Text` out); `results_cell_chart` draws what the
report recorded in the run's results.json (`chart`: prereg/outputs/report.py `chart_record`), so the
console never computes the report a second time to draw it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text

from console.render import BAR_BLOCKS
from prereg.core.colors import KNOCK_COLOR, SUCCESS_COLOR, TIED_COLOR, arm_colors

UP = BAR_BLOCKS  # a bar growing up from the bottom of a cell, in eighths (the console's one set of them)
DOWN = ("", "▔", "▔", "▀", "▀", "▀", "█", "█", "█")  # hanging down from the top (Unicode has no 3/8..7/8 upper blocks)
LABEL_W = 9  # the y-axis labels: "+123.4 cm"


@dataclass(frozen=True)
class Columns:
    """The seeds under each column: one seed a column, or `per` consecutive seeds (their mean) when they do not fit."""

    groups: list[list[int]]
    per: int
    width: int  # cells per column

    @classmethod
    def fit(cls, seeds: list[int], room: int) -> Columns:
        room = max(1, room)
        if len(seeds) <= room:
            width = max(1, min(3, room // max(1, len(seeds))))
            return cls([[s] for s in seeds], 1, width)
        per = math.ceil(len(seeds) / room)
        return cls([seeds[i:i + per] for i in range(0, len(seeds), per)], per, 1)


@dataclass(frozen=True)
class ChartArm:
    """One arm's per-seed reads as the chart draws them (prereg.stats.reads.ArmReads has these fields)."""

    arm: str
    successes: int
    n: int
    knock_aways: int
    progress_final_mean: float | None
    progress_by_seed: dict
    success_seeds: list
    knock_seeds: list


@dataclass(frozen=True)
class ChartPaired:
    """A pairing's per-seed deltas (prereg.stats.reads.Paired has these fields)."""

    arm: str
    comparator: str
    shared_seeds: int
    delta_mean: float | None
    delta_ci: tuple[float, float] | None
    better: int
    tied: int
    worse: int
    deltas: dict
    tie_cm: float


def cell_chart(arms: list, paired: list, width: int, colors: dict[str, str] | None = None,
               height: int = 5) -> Text:
    """The per-seed progress of every arm (and each pairing's deltas) in `width` cells."""
    out = Text()
    seeds = sorted({s for a in arms for s in a.progress_by_seed} | {s for a in arms for s in a.success_seeds})
    if not seeds:
        out.append("no per-seed rows to chart yet", style="grey62")
        return out
    colors = {**arm_colors([a.arm for a in arms] + [p.comparator for p in paired]), **(colors or {})}
    cols = Columns.fit(seeds, width - LABEL_W - 2)
    lo, hi = _range(v for a in arms for v in a.progress_by_seed.values())
    out.append("progress_final_cm per seed", style="bold")
    out.append(_per_note(cols))
    for a in arms:
        out.append("\n")
        out.append("■ ", style=colors[a.arm])
        out.append(a.arm, style=f"bold {colors[a.arm]}")
        out.append(f"  {a.successes}/{a.n} successes, {a.knock_aways} knock-away{'' if a.knock_aways == 1 else 's'}")
        if a.progress_final_mean is not None:
            out.append(f", mean {a.progress_final_mean:+.2f} cm")
        values = [_mean([a.progress_by_seed.get(s) for s in g]) for g in cols.groups]
        _bars(out, values, [colors[a.arm]] * len(values), cols, lo, hi, height)
        _marks(out, cols, set(a.success_seeds), set(a.knock_seeds))
    _seed_axis(out, cols)
    for p in paired:
        _paired(out, p, colors, width)
    return out


def _paired(out: Text, p, colors: dict[str, str], width: int) -> None:
    seeds = sorted(p.deltas)
    if not seeds:
        return
    cols = Columns.fit(seeds, width - LABEL_W - 2)
    out.append("\n\n")
    out.append(f"paired delta {p.arm} − {p.comparator}", style="bold")
    out.append(f" on {p.shared_seeds} shared seeds")
    out.append(_per_note(cols))
    out.append("\n")
    if p.delta_mean is not None:
        out.append(f"mean {p.delta_mean:+.3f} cm")
    if p.delta_ci is not None:
        out.append(f", CI95 [{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]")
    out.append(";  ")
    out.append(f"{p.arm} better {p.better}", style=colors[p.arm])
    out.append(", ")
    out.append(f"tied {p.tied}", style=TIED_COLOR)
    out.append(", ")
    out.append(f"{p.comparator} better {p.worse}", style=colors[p.comparator])
    values = [_mean([p.deltas.get(s) for s in g]) for g in cols.groups]
    tint = [TIED_COLOR if v is None or abs(v) <= p.tie_cm else colors[p.arm] if v > 0 else colors[p.comparator]
            for v in values]
    lo, hi = _range(p.deltas.values())
    _bars(out, values, tint, cols, lo, hi, 4)
    _seed_axis(out, cols)


def _bars(out: Text, values: list[float | None], tint: list[str], cols: Columns, lo: float, hi: float,
          height: int) -> None:
    """Bars up from a zero axis for gains and down from it for losses, on a shared scale; the
    range labelled on the left. The axis is a row of its own, so every bar starts at a cell edge."""
    up = 0 if hi <= 0 else max(1, round(height * hi / (hi - lo))) if lo < 0 else height
    down = height - up if lo < 0 else 0
    if lo < 0 and down == 0:
        up, down = up - 1, 1
    for r in range(up):
        top, bottom = hi * (up - r) / up, hi * (up - r - 1) / up
        _row(out, f"{hi:+.1f} cm" if r == 0 else "", [_cell_up(v, bottom, top) for v in values], tint, cols)
    out.append("\n" + "0".rjust(LABEL_W) + " ┼" + "─" * (len(values) * cols.width), style="grey62")
    for r in range(down):
        top, bottom = lo * r / down, lo * (r + 1) / down
        _row(out, f"{lo:+.1f} cm" if r == down - 1 else "", [_cell_down(v, bottom, top) for v in values], tint, cols)


def _row(out: Text, label: str, cells: list[str], tint: list[str], cols: Columns) -> None:
    out.append("\n" + label.rjust(LABEL_W) + (" ┤" if label else " │"), style="grey62")
    for cell, color in zip(cells, tint):
        out.append(cell * cols.width, style=color)


def _cell_up(v: float | None, bottom: float, top: float) -> str:
    """A gain's cell between `bottom` and `top` (both >= 0): filled from below as far as the bar reaches."""
    if v is None or not v > bottom:
        return " "
    return UP[round(8 * (min(v, top) - bottom) / (top - bottom))]


def _cell_down(v: float | None, bottom: float, top: float) -> str:
    """A loss's cell between `bottom` and `top` (both <= 0): filled from above as far as the bar hangs."""
    if v is None or not v < top:
        return " "
    return DOWN[round(8 * (top - max(v, bottom)) / (top - bottom))] or " "


def _marks(out: Text, cols: Columns, successes: set[int], knocks: set[int]) -> None:
    out.append("\n" + " " * (LABEL_W + 2))
    for g in cols.groups:
        s, k = any(x in successes for x in g), any(x in knocks for x in g)
        out.append(("✓" if s else "✗" if k else " ").ljust(cols.width),
                   style=SUCCESS_COLOR if s else KNOCK_COLOR)


def _seed_axis(out: Text, cols: Columns) -> None:
    """Seed numbers under their columns, as many as fit without touching."""
    line = [" "] * (len(cols.groups) * cols.width)
    free = 0
    for i, g in enumerate(cols.groups):
        label, at = str(g[0]), i * cols.width
        if at >= free and at + len(label) <= len(line):
            line[at:at + len(label)] = label
            free = at + len(label) + 1
    out.append("\n" + "seed".rjust(LABEL_W) + "  " + "".join(line).rstrip(), style="grey62")


def _per_note(cols: Columns) -> str:
    return f"  (each column the mean of {cols.per} seeds)" if cols.per > 1 else ""


def _range(values) -> tuple[float, float]:
    """The plotted range: the values' span with zero in it, never empty."""
    vs = [v for v in values if v is not None and math.isfinite(v)]
    lo, hi = min(vs + [0.0]), max(vs + [0.0])
    if hi - lo < 1e-9:
        hi = lo + 1.0
    return lo, hi


def _mean(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None and math.isfinite(v)]
    return sum(vs) / len(vs) if vs else None


def results_cell_chart(results: dict | None, width: int) -> Text | None:
    """The cell chart of a run's report, from its results.json (`chart`); None when it has none (a
    report from before it was recorded) or it cannot be read."""
    chart = results.get("chart") if isinstance(results, dict) else None
    if not isinstance(chart, dict):
        return None
    try:
        arms = [ChartArm(a["arm"], a["successes"], a["n"], a["knock_aways"], a.get("progress_final_mean"),
                         {int(k): float(v) for k, v in a["progress_by_seed"].items() if v is not None},
                         list(a["success_seeds"]), list(a["knock_seeds"])) for a in chart["arms"]]
        p = chart.get("paired")
        paired = [] if not p else [ChartPaired(
            p["arm"], p["comparator"], p["shared_seeds"], p.get("delta_mean"),
            tuple(p["delta_ci"]) if p.get("delta_ci") else None, p["better"], p["tied"], p["worse"],
            {int(k): float(v) for k, v in p["deltas"].items()}, p["tie_cm"])]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    colors = chart.get("colors") if isinstance(chart.get("colors"), dict) else None
    return cell_chart(arms, paired, width, colors)
