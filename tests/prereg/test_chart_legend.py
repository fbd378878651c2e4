"""chart.png's legends stand beside the plots, never over a bar (issue 42: "legends cover bars"): measured on
the drawn figure, each legend's box against every bar's, on a comparison whose bars fill the whole plot."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from prereg.core.colors import arm_colors
from prereg.outputs.report import build_report
from prereg.stats.chart import _paired, _per_seed
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

NOW = "2026-12-01T15:00:00Z"


def test_no_legend_covers_a_bar(tmp_path):
    doc = compare_doc(tmp_path)
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows([s % 3 != 0 for s in range(30)], [True] * 30))
    rep = build_report(doc, {"clumsy": run}, append=False, now=NOW)
    a, b = rep.arms["clumsy"].reads, rep.arms["steady"].reads
    paired = rep.arms["steady"].comparators[0].paired
    colors = arm_colors(["clumsy", "steady"])
    fig = Figure(figsize=(10, 7.6), dpi=100)
    FigureCanvasAgg(fig)
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    _per_seed(top, [a, b], sorted(a.progress_by_seed), colors)
    _paired(bottom, paired, colors)
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (top, bottom):
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle) and p.get_height()]
        assert len(bars) >= 10
        assert not [bar for bar in bars if bar.overlaps(legend)], ax.get_title()
        assert legend.x0 >= ax.get_window_extent(renderer).x1  # beside the plot, right of it
        assert legend.x1 <= fig.bbox.x1  # and inside the picture
