"""The compare view of a comparison run (issue 24): both arms from the one run directory, the paired delta
with its confidence-sequence band over seeds, the seed the decision fell on, and the evidence in words."""

from __future__ import annotations

import json

from console.compare import BAND, DECISION, MEAN, band_chart, compare_view, focused_runs
from console.widgets.compare_screen import CompareScreen
from prereg.document.comparison_spec import ComparisonSpec
from prereg.rundir.rows import rows_by_seed
from prereg.stats.comparison import ComparisonPath, decide
from tests.comparison_run import compare_doc, comparison_rows, comparison_spec, make_comparison_run, row
from tests.console.conftest import make_app, open_compare, plain, wait_for

A_WINS = [s < 4 for s in range(12)]  # the 8th seed only steady wins (seed 11) decides "B better" at 12/60
B_WINS = [True] * 12


def test_the_view_of_a_comparison_run_carries_both_arms_and_its_band(tmp_path):
    doc = compare_doc(tmp_path)
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows(A_WINS, B_WINS) + [row("clumsy", 12, False)])
    view = compare_view("demo-compare", str(doc), {"clumsy-vs-steady": run})
    assert view.error is None and [a for a, _ in view.arms] == ["clumsy", "steady"]
    cells = dict(view.arms)
    assert cells["clumsy"][4].startswith("4/13") and cells["steady"][4].startswith("12/12")
    (key, pair), = view.paired
    assert key == "steady" and pair[0] == "steady vs clumsy" and pair[1] == "12"  # its delta: steady - clumsy
    c = view.comparison
    assert c.decided_at == 12 and c.path.at[-1] == 12 and c.run == "cmp"
    assert c.words[0].startswith("decision: steady better than clumsy at 12/60 seeds")
    assert "25 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): 25 saved" in c.words


def test_a_comparison_run_opened_from_the_list_wins_over_older_runs_of_its_arms(tmp_path):
    doc = compare_doc(tmp_path)
    run = make_comparison_run(doc, tmp_path / "runs" / "cmp", comparison_rows(A_WINS, B_WINS))
    older = tmp_path / "runs" / "old-clumsy"
    assert focused_runs({"clumsy": older, "clumsy-vs-steady": run}, run) == {"clumsy": run, "steady": run}
    assert focused_runs({"clumsy": older}, None) == {"clumsy": older}


def test_the_band_chart_marks_the_decision_and_draws_the_sequence():
    spec = ComparisonSpec("a", "b", "success", "savi", minimum_effect=0.2, max_seeds=60)
    a = {s: row("a", s, s < 4) for s in range(14)}
    b = {s: row("b", s, True) for s in range(14)}
    from prereg.stats.comparison import path

    p = path(spec, rows_by_seed(list(a.values()), range(60)), rows_by_seed(list(b.values()), range(60)), range(60))
    d = decide(spec, a, b, range(60))
    lines = band_chart(p, d.at, 40, 8).plain.splitlines()
    assert len(lines) == 8 + 2 and all(len(x) == 8 + 40 for x in lines[:8])
    plot = [x[8:] for x in lines[:8]]
    marked = {x.index(DECISION) for x in plot if DECISION in x}
    assert len(marked) == 1  # one column: the first whose prefix reaches the deciding seed
    col = marked.pop()
    assert col == next(c for c in range(40) if p.at[min(13, round(c * 13 / 39))] >= 12)
    assert all(x[-1] in (BAND, MEAN) for x in plot[:4]) and any(MEAN in x for x in plot)
    assert lines[0].startswith("  +1.00") and lines[7].startswith("  -1.00")
    assert lines[9].strip() == "decided at 12 ▲" and lines[9].index("▲") == 8 + col  # the long words fit neither side
    wide = band_chart(p, d.at, 100, 8).plain.splitlines()[9]
    assert wide.strip() == "decided at seed 12 of the prefix ▲" and len(wide) <= 8 + 100
    assert band_chart(ComparisonPath(spec, 60), None, 40, 8).plain == "no pair finished yet: nothing to draw"


def _write_status(run, **kw):
    status = json.loads((run / "status.json").read_text())
    status.update(kw)
    (run / "status.json").write_text(json.dumps(status))


async def test_the_compare_screen_draws_the_band_and_marks_the_decision_live(runs_dir, tmp_path):
    doc = compare_doc(tmp_path)
    run = make_comparison_run(doc, runs_dir / "demo-compare-clumsy-vs-steady-20261201-150000",
                              comparison_rows(A_WINS[:6], B_WINS[:6]), state="running")
    _write_status(run, state="running", stop=None, reason=None)
    app = make_app(runs_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        screen, arms = await open_compare(pilot, app, run.name, what="both arms from the one run")
        assert str(arms.get_cell("steady", "successes")).startswith("6/6")
        band, evidence = screen.query_one("#band"), screen.query_one("#evidence")
        await wait_for(pilot, lambda: band.display and BAND in plain(band), what="the band")
        assert "no decision yet: at 6/60 seeds: steady 6/6 vs clumsy 4/6; e-value" in plain(evidence)
        assert DECISION not in plain(band)
        assert plain(screen.query_one("#comparison-title")).startswith("Comparison run demo-compare-clumsy-vs-steady")
        # the run goes on and decides: rows and the driver's decision arrive, the view follows
        rows = comparison_rows(A_WINS, B_WINS)
        (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        spec = comparison_spec(doc)
        by = {n: rows_by_seed([r for r in rows if r["arm"] == n], range(60)) for n in ("clumsy", "steady")}
        d = decide(spec, by["clumsy"], by["steady"], range(60))
        _write_status(run, state="stopping", comparison={**d.as_dict(), "episodes_saved": d.episodes_saved})
        await wait_for(pilot, lambda: "decided at seed 12 of the prefix" in plain(band), what="the decision marked")
        assert DECISION in plain(band)
        text = plain(evidence)
        assert "decision: undetermined (clumsy: the run is still stopping" in text  # a live run bears no decision
        assert "the rows decide: steady better than clumsy at 12/60" in text and "e-value" in text
        assert "24 episodes run against the batch's 50 (the 25 seeds x 2 arms validate sized for the registered power): 26 saved" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))


async def test_a_one_arm_registration_shows_no_band(runs_dir, tmp_path):
    from tests.console.conftest import make_row
    from tests.console.test_compare import registered_runs

    flow = [make_row(s, arm="flow", success=True, progress_final_cm=1.0) for s in range(3)]
    _, runs = registered_runs(runs_dir, tmp_path, flow_rows=flow, discrete_rows=flow)
    app = make_app(runs_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None)
        assert not app.screen.query_one("#band").display and not app.screen.query_one("#evidence").display


def test_the_report_of_a_comparison_run_reads_its_own_arms_not_older_runs_of_them(tmp_path):
    from console import runs
    from console.run_actions import report_runs
    from tests.prereg.conftest import launched_manifest

    doc = compare_doc(tmp_path)
    runs_dir = tmp_path / "runs"
    old = runs_dir / "demo-compare-clumsy-20261201-140000"
    old.mkdir(parents=True)
    (old / "manifest.json").write_text(json.dumps(launched_manifest(doc, "clumsy", run_id=old.name)))
    (old / "status.json").write_text(json.dumps({"schema": 1, "state": "done", "done": 0, "total": 60}))
    (old / "rows.jsonl").write_text("")
    run = make_comparison_run(doc, runs_dir / "demo-compare-clumsy-vs-steady-20261201-150000",
                              comparison_rows(A_WINS, B_WINS))
    assert report_runs(runs.read_run(run), runs_dir) == [("clumsy-vs-steady", run)]
    assert dict(report_runs(runs.read_run(old), runs_dir)) == {"clumsy": old, "clumsy-vs-steady": run}


def test_the_bands_legend_breaks_between_entries_never_inside_one():
    """Wrapped as prose at 80 columns it split an entry from its words: "│ the" / "decision"."""
    from console.compare import band_legend

    p = ComparisonPath(ComparisonSpec("a", "b", "success", "savi", minimum_effect=0.2, max_seeds=60), 60)
    for width in (40, 76, 118, 500):
        lines = band_legend(p, width).splitlines()
        assert all(len(line) <= width for line in lines if "confidence sequence" not in line), (width, lines)
        assert any(line.endswith(f"{DECISION} the decision") for line in lines)
        assert lines[0].startswith("b - a per seed (rate difference):")
    assert len(band_legend(p, 500).splitlines()) == 1
