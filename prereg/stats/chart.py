"""The charts of a report: per-seed progress by arm, and the paired per-seed deltas.

Drawn on a bare `matplotlib.figure.Figure` with the Agg canvas: no pyplot, no global backend
state, no display needed, safe in a worker thread of the console. Each arm keeps one colour
in every chart of a registration (`arm_colors`, in the registration's arm order), and every
marker has a legend entry.

A chart is drawn once per process for what it shows (`_drawn`): a process that builds reports over
the same rows again (`build_report` called from Python, a notebook, the test suite's hundreds of
reports) writes the PNG it drew before, byte for byte, without 0.3-0.5 s of matplotlib. Each
`fontaine-prereg report` is a process of its own and draws its charts once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from prereg.core.colors import COLORS, KNOCK_COLOR, MEAN_COLOR, SUCCESS_COLOR, TIED_COLOR, arm_colors
from prereg.rundir.rows import KNOCK_AWAY_CM
from prereg.stats.reads import ArmReads, Paired


def per_seed_chart(arms: list[ArmReads], path: str | Path, title: str = "", *,
                   colors: dict[str, str] | None = None, paired: Paired | None = None) -> Path:
    """A PNG with one bar series per arm; with `paired`, the paired-delta panel below it."""
    colors = colors or arm_colors(a.arm for a in arms)

    def draw() -> Figure:
        seeds = sorted({s for a in arms for s in a.progress_by_seed} | {s for a in arms for s in a.success_seeds})
        width_in = min(18.0, max(7.0, 0.16 * len(seeds) * max(1, len(arms)) + 2.0))
        fig = Figure(figsize=(width_in, 7.6 if paired is not None else 4.2), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(2 if paired is not None else 1, 1, 1)
        _per_seed(ax, arms, seeds, colors)
        ax.set_title(title or " vs ".join(a.arm for a in arms), fontsize=10)
        if paired is not None:
            _paired(fig.add_subplot(2, 1, 2), paired, colors)
        fig.tight_layout()  # room for the axis labels at any width
        return fig

    return _save(_drawn(("per_seed", arms, title, colors, paired), draw), path)


def paired_delta_chart(paired: Paired, path: str | Path, *, colors: dict[str, str] | None = None,
                       title: str = "") -> Path:
    """A PNG of the paired per-seed deltas alone (the registration's results file links one per pairing)."""
    colors = colors or arm_colors([paired.arm, paired.comparator])

    def draw() -> Figure:
        fig = Figure(figsize=(min(18.0, max(7.0, 0.12 * len(paired.deltas) + 3.0)), 4.2), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        _paired(ax, paired, colors)
        if title:
            ax.set_title(title, fontsize=10)
        fig.tight_layout()
        return fig

    return _save(_drawn(("paired_delta", paired, title, colors), draw), path)


def _per_seed(ax, arms: list[ArmReads], seeds: list[int], colors: dict[str, str]) -> None:
    index = {s: i for i, s in enumerate(seeds)}
    bar_w = 0.8 / max(1, len(arms))
    any_succ = any_knock = False
    for j, a in enumerate(arms):
        color = colors.get(a.arm, COLORS[j % len(COLORS)])
        off = (j - (len(arms) - 1) / 2) * bar_w
        xs = [index[s] + off for s in sorted(a.progress_by_seed)]
        ys = [a.progress_by_seed[s] for s in sorted(a.progress_by_seed)]
        ax.bar(xs, ys, width=bar_w, color=color, label=f"{a.arm} ({a.successes}/{a.n} successes)")
        succ = [s for s in a.success_seeds if s in index]
        ax.scatter([index[s] + off for s in succ], [a.progress_by_seed.get(s, 0.0) + 0.3 for s in succ],
                   marker="*", s=90, color=SUCCESS_COLOR, zorder=3)
        knocks = [s for s in a.knock_seeds if s in index]
        ax.scatter([index[s] + off for s in knocks], [a.progress_by_seed.get(s, 0.0) - 0.3 for s in knocks],
                   marker="v", s=36, color=KNOCK_COLOR, zorder=3)
        any_succ, any_knock = any_succ or bool(succ), any_knock or bool(knocks)
    ax.axhline(0.0, color="#444444", linewidth=0.8)
    ax.axhline(KNOCK_AWAY_CM, color=KNOCK_COLOR, linewidth=0.6, linestyle="--")
    ax.set_ylabel("progress_final_cm")
    ax.set_xlabel("seed")
    step = max(1, len(seeds) // 25)
    ax.set_xticks(range(0, len(seeds), step))
    ax.set_xticklabels([str(seeds[i]) for i in range(0, len(seeds), step)], fontsize=8)
    handles, labels = ax.get_legend_handles_labels()
    extra = [(Line2D([], [], marker="*", linestyle="", color=SUCCESS_COLOR, markersize=10), "success"),
             (Line2D([], [], marker="v", linestyle="", color=KNOCK_COLOR, markersize=7),
              f"knock-away (final <= {KNOCK_AWAY_CM:g} cm)"),
             (Line2D([], [], color=KNOCK_COLOR, linestyle="--", linewidth=0.6), f"{KNOCK_AWAY_CM:g} cm")]
    for h, lab in extra:
        handles.append(h)
        labels.append(lab)
    ax.legend(handles, labels, fontsize=8, **BESIDE)


def _paired(ax, p: Paired, colors: dict[str, str]) -> None:
    """Per-seed deltas (arm - comparator) sorted; the mean and its CI95 drawn; better/tied/worse counted."""
    items = sorted(p.deltas.items(), key=lambda kv: (kv[1], kv[0]))
    ys = [d for _, d in items]
    arm_c, cmp_c = colors.get(p.arm, COLORS[0]), colors.get(p.comparator, COLORS[1])
    bar_colors = [arm_c if d > p.tie_cm else cmp_c if d < -p.tie_cm else TIED_COLOR for d in ys]
    ax.bar(range(len(ys)), ys, width=0.85, color=bar_colors)
    handles = [Patch(color=arm_c, label=f"{p.arm} better: {p.better}"),
               Patch(color=TIED_COLOR, label=f"tied: {p.tied}"),
               Patch(color=cmp_c, label=f"{p.comparator} better: {p.worse}")]
    if p.delta_mean is not None:
        handles.append(ax.axhline(p.delta_mean, color=MEAN_COLOR, linewidth=1.2,
                                  label=f"mean {p.delta_mean:+.3f} cm"))
    if p.delta_ci is not None:
        handles.append(ax.axhspan(p.delta_ci[0], p.delta_ci[1], color=MEAN_COLOR, alpha=0.15,
                                  label=f"CI95 [{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]"))
    else:
        handles.append(Patch(color="none", label=f"no CI: {p.ci_method}"))
    ax.axhline(0.0, color="#444444", linewidth=0.8)
    ax.set_xticks(range(len(ys)))
    ax.set_xticklabels([str(s) for s, _ in items], fontsize=6 if len(ys) > 40 else 8, rotation=90 if len(ys) > 40 else 0)
    ax.set_xlabel("seed (sorted by delta)")
    ax.set_ylabel(f"delta progress_final_cm\n{p.arm} - {p.comparator}", fontsize=9)
    ax.set_title(f"paired per-seed delta on {p.shared_seeds} shared seeds", fontsize=10)
    ax.legend(handles=handles, fontsize=8, **BESIDE)


BESIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
"""A legend beside the plot, right of its top: never over a bar ("best" put it on the bars of a full plot)."""


_KEEP = 16  # charts kept per process (a PNG is 30-150 KB): a registration's arms and pairings, twice over
_DRAWN: OrderedDict[str, bytes] = OrderedDict()
_DRAWN_LOCK = threading.Lock()  # the console builds reports in worker threads


def _drawn(shown: tuple, draw) -> bytes:
    """The PNG of `draw()`, once per process for what it shows: `shown` holds every input the drawing
    reads (the reads are dataclasses, so their repr is every field), and its repr's sha256 is the key.
    The same inputs draw the same bytes (Agg, no timestamp), so a kept PNG is the one a redraw makes."""
    import io

    key = hashlib.sha256(repr(shown).encode()).hexdigest()
    with _DRAWN_LOCK:
        png = _DRAWN.get(key)
        if png is not None:
            _DRAWN.move_to_end(key)
            return png
    buf = io.BytesIO()
    draw().savefig(buf, format="png")
    png = buf.getvalue()
    with _DRAWN_LOCK:
        _DRAWN[key] = png
        while len(_DRAWN) > _KEEP:
            _DRAWN.popitem(last=False)
    return png


def _save(png: bytes, path: str | Path) -> Path:
    """The PNG written atomically: a FIFO named chart.png was opened for writing and waited on."""
    from prereg.rundir.files import write_bytes_atomic

    write_bytes_atomic(path, png)
    return Path(path)
