"""The report's chart in terminal cells: labels as text, bars as eighth-blocks, every line within its width."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from console.cell_chart import LABEL_W, Columns, cell_chart
from prereg.core.colors import arm_colors
from prereg.stats.reads import arm_reads, paired_reads
from tests.prereg.conftest import make_row


def reads(arm: str, progress: dict[int, float], successes=()):
    rows = [make_row(s, success=s in successes, progress_final_cm=v) for s, v in progress.items()]
    return arm_reads(arm, rows, planned_seeds=sorted(progress))


def lines(text) -> list[str]:
    return text.plain.split("\n")


def test_labels_are_text_and_bars_share_one_scale():
    a = reads("oracle", {0: 8.0, 1: 4.0, 2: -2.0}, successes={0})
    b = reads("tiny", {0: 2.0, 1: -3.0, 2: 0.0})
    text = cell_chart([a, b], [], 60)
    out = lines(text)
    assert "oracle  1/3 successes, 1 knock-away, mean +3.33 cm" in out[1]
    assert any(line.strip().startswith("+8.0 cm ┤") for line in out)  # the shared top: the largest gain of either arm
    assert any(line.strip().startswith("-3.0 cm ┤") for line in out)
    assert sum(line.strip().startswith("0 ┼") for line in out) == 2  # one zero axis per arm
    assert out[-1].split() == ["seed", "0", "1", "2"]
    assert "✓" in out[out.index(next(x for x in out if x.startswith("■ tiny"))) - 1]  # oracle's success under its bars
    colors = arm_colors(["oracle", "tiny"])
    assert {str(span.style) for span in text.spans if "█" in text.plain[span.start:span.end]} <= set(colors.values())


def test_a_full_gain_fills_every_row_above_the_axis_and_a_loss_hangs_below_it():
    a = reads("a", {0: 4.0, 1: -4.0})
    out = lines(cell_chart([a], [], 40, height=4))
    bars = [line[LABEL_W + 2:] for line in out[2:7]]  # 2 rows up, the axis, 2 rows down
    assert [row[:6] for row in bars] == ["███   ", "███   ", "──────", "   ███", "   ███"]


def test_seeds_that_do_not_fit_are_averaged_in_groups_and_said_so():
    a = reads("a", {s: float(s % 5) for s in range(300)})
    text = cell_chart([a], [], 80)
    assert "each column the mean of" in lines(text)[0]
    assert all(len(line) <= 80 for line in lines(text))
    assert Columns.fit(list(range(300)), 80 - LABEL_W - 2).per == 5


def test_the_paired_panel_colours_each_seed_by_the_arm_that_did_better():
    a = reads("a", {0: 5.0, 1: 0.0, 2: 1.0})
    b = reads("b", {0: 1.0, 1: 3.0, 2: 1.0})
    p = paired_reads(a, b)
    text = cell_chart([a, b], [p], 60)
    assert "paired delta a − b on 3 shared seeds" in text.plain
    assert "a better 1" in text.plain and "b better 1" in text.plain and "tied 1" in text.plain
    colors = arm_colors(["a", "b"])
    assert {str(s.style) for s in text.spans if text.plain[s.start:s.end] == f"a better {p.better}"} == {colors["a"]}


def test_no_rows_says_so():
    assert "no per-seed rows" in cell_chart([reads("a", {})], [], 60).plain


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 400), st.floats(-300, 300, allow_nan=False), min_size=1, max_size=120),
       st.integers(40, 220), st.integers(2, 8))
def test_every_line_fits_its_width(progress, width, height):
    a = reads("a", progress)
    b = reads("b", {s: -v / 2 for s, v in progress.items()})
    text = cell_chart([a, b], [paired_reads(a, b)], width, height=height)
    drawn = [line for line in lines(text) if line[:LABEL_W + 2].strip() in ("", "seed") or line[LABEL_W + 1] in "┤│┼"]
    assert drawn and all(len(line) <= width for line in drawn)  # the words above each panel wrap; the drawing never


def test_the_results_screen_draws_what_the_report_recorded_in_results_json():
    """`r` computed the report twice (the command, then again in-process for the cells); the report now
    records what its chart draws (results.json `chart`) and the screen draws that, through JSON."""
    import json

    from console.cell_chart import results_cell_chart
    from prereg.outputs.report import chart_record

    a = reads("steady", {0: 8.0, 1: 4.0, 2: -2.0, 3: 1.0, 4: 0.5, 5: 2.0}, successes={0, 5})
    b = reads("clumsy", {0: 2.0, 1: -3.0, 2: 0.0, 3: 0.2, 4: -1.5, 5: 1.0})
    p = paired_reads(a, b)
    colors = arm_colors(["steady", "clumsy"])
    recorded = json.loads(json.dumps({"chart": chart_record([a, b], p, colors)}))
    assert results_cell_chart(recorded, 70).plain == cell_chart([a, b], [p], 70, colors).plain
    assert results_cell_chart({"primary": {}}, 70) is None  # a report from before the record: no cells
