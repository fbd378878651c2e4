"""A chart is drawn once per process for what it shows (prereg.stats.chart._drawn): a report rebuilt over
the same rows writes the very bytes a fresh drawing makes, and any change to what it shows draws anew."""

from __future__ import annotations

import dataclasses

from prereg.outputs.report import build_report
from prereg.stats import chart
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

NOW = "2026-12-01T15:00:00Z"


def _reads(tmp_path):
    doc = compare_doc(tmp_path)
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows([s % 3 != 0 for s in range(12)], [True] * 12))
    rep = build_report(doc, {"clumsy": run}, append=False, now=NOW)
    return rep.arms["clumsy"].reads, rep.arms["steady"].reads, rep.arms["steady"].comparators[0].paired


def test_a_kept_chart_is_the_bytes_a_fresh_drawing_makes_and_any_change_redraws(tmp_path, monkeypatch):
    a, b, paired = _reads(tmp_path)
    drawn = []
    real = chart.Figure

    def counted(*args, **kw):
        drawn.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(chart, "Figure", counted)
    monkeypatch.setattr(chart, "_DRAWN", type(chart._DRAWN)())

    first = chart.per_seed_chart([a, b], tmp_path / "one.png", "t", paired=paired).read_bytes()
    again = chart.per_seed_chart([a, b], tmp_path / "two.png", "t", paired=paired).read_bytes()
    assert len(drawn) == 1 and again == first  # kept: nothing redrawn, the same file written

    chart._DRAWN.clear()
    assert chart.per_seed_chart([a, b], tmp_path / "fresh.png", "t", paired=paired).read_bytes() == first
    assert len(drawn) == 2  # a redraw from nothing makes the same bytes: the kept PNG is what it would draw

    moved = dataclasses.replace(a, progress_by_seed={**a.progress_by_seed, 0: a.progress_by_seed[0] + 1.0})
    for changed in (dict(arms=[moved, b]), dict(title="other"), dict(paired=None), dict(colors={"clumsy": "#000000", "steady": "#ffffff"})):
        args = dict(arms=[a, b], title="t", paired=paired) | changed
        out = chart.per_seed_chart(args.pop("arms"), tmp_path / "c.png", args.pop("title"), **args).read_bytes()
        assert out != first, changed
    assert len(drawn) == 6

    d1 = chart.paired_delta_chart(paired, tmp_path / "d1.png").read_bytes()
    d2 = chart.paired_delta_chart(paired, tmp_path / "d2.png").read_bytes()
    assert d1 == d2 and len(drawn) == 7


def test_only_the_last_charts_are_kept(tmp_path, monkeypatch):
    a, b, paired = _reads(tmp_path)
    monkeypatch.setattr(chart, "_DRAWN", type(chart._DRAWN)())
    monkeypatch.setattr(chart, "_KEEP", 3)  # the rule, not the number: 19 drawings at 16 were 6 s of the suite
    for i in range(chart._KEEP + 3):
        chart.per_seed_chart([a, b], tmp_path / "x.png", f"title {i}")
    assert len(chart._DRAWN) == chart._KEEP
