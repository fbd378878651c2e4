"""The per-seed chart: progress_final_cm by seed, successes and knock-aways marked.

Drawn on a bare `matplotlib.figure.Figure` with the Agg canvas: no pyplot, no global backend
state, no display needed, safe in a worker thread of the console.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from prereg.reads import ArmReads
from prereg.rows import KNOCK_AWAY_CM

COLORS = ("#3b6ea8", "#d08c2e", "#6a9f58", "#9a5fa8")


def per_seed_chart(arms: list[ArmReads], path: str | Path, title: str = "") -> Path:
    """Write a PNG with one bar series per arm (two or more arms are drawn side by side)."""
    seeds = sorted({s for a in arms for s in a.progress_by_seed} | {s for a in arms for s in a.success_seeds})
    width_in = min(18.0, max(6.0, 0.16 * len(seeds) * max(1, len(arms)) + 2.0))
    fig = Figure(figsize=(width_in, 4.2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    index = {s: i for i, s in enumerate(seeds)}
    bar_w = 0.8 / max(1, len(arms))
    for j, a in enumerate(arms):
        color = COLORS[j % len(COLORS)]
        off = (j - (len(arms) - 1) / 2) * bar_w
        xs = [index[s] + off for s in sorted(a.progress_by_seed)]
        ys = [a.progress_by_seed[s] for s in sorted(a.progress_by_seed)]
        ax.bar(xs, ys, width=bar_w, color=color, label=f"{a.arm} ({a.successes}/{a.n})")
        succ = [s for s in a.success_seeds if s in index]
        ax.scatter([index[s] + off for s in succ], [a.progress_by_seed.get(s, 0.0) + 0.3 for s in succ],
                   marker="*", s=90, color="#1a9e3a", zorder=3, label="success" if j == 0 else None)
        knocks = [s for s in a.knock_seeds if s in index]
        ax.scatter([index[s] + off for s in knocks], [a.progress_by_seed.get(s, 0.0) - 0.3 for s in knocks],
                   marker="v", s=36, color="#c23b22", zorder=3, label="knock-away" if j == 0 else None)
    ax.axhline(0.0, color="#444444", linewidth=0.8)
    ax.axhline(KNOCK_AWAY_CM, color="#c23b22", linewidth=0.6, linestyle="--")
    ax.set_ylabel("progress_final_cm")
    ax.set_xlabel("seed")
    step = max(1, len(seeds) // 25)
    ax.set_xticks(range(0, len(seeds), step))
    ax.set_xticklabels([str(seeds[i]) for i in range(0, len(seeds), step)], fontsize=8)
    ax.set_title(title or " vs ".join(a.arm for a in arms), fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()  # room for the axis labels at any width
    out = Path(path)
    fig.savefig(out, format="png")
    return out
