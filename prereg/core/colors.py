"""Each arm's colour, the same in every chart of a registration (prereg/stats/chart.py's PNGs and the
console's cell chart), and the colours of the marks they share."""

from __future__ import annotations

COLORS = ("#3b6ea8", "#d08c2e", "#6a9f58", "#9a5fa8", "#b5494a", "#3a9a9a", "#8c6d3f", "#c05f9c")
SUCCESS_COLOR, KNOCK_COLOR, TIED_COLOR, MEAN_COLOR = "#1a9e3a", "#c23b22", "#9a9a9a", "#222222"


def arm_colors(names) -> dict[str, str]:
    """One colour per name, in the order given (a registration's arms, then any comparator runs)."""
    out: dict[str, str] = {}
    for name in names:
        if name not in out:
            out[name] = COLORS[len(out) % len(COLORS)]
    return out


def registration_colors(doc) -> dict[str, str]:
    """A registration's colours: its arms in document order, then its named comparator runs."""
    return arm_colors([a.name for a in doc.arms()]
                      + [c.name for sm in doc.sections for c in sm.reads.comparators if not c.arm])
