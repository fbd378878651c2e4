"""The compare view reads through the verdict engine: the report's counts, intervals, pairing and verdicts, live."""

import json
from pathlib import Path

from console.compare import PAIRED_COLUMNS, compare_view
from console.widgets.compare_screen import CompareScreen
from console.widgets.dialogs import HelpScreen
from prereg.document.seal import freeze
from prereg.outputs.report import build_report
from tests.console.conftest import ViewCells, make_app, make_row, make_run_dir, open_compare, wait_for
from tests.prereg.conftest import launched_manifest

DOC = """---
fontaine: fontaine-prereg/1
id: flow-vs-discrete
title: "discrete against flow"
created: 2026-12-01
arms:
  - name: flow
    policy: scripted
  - name: discrete
    policy: scripted
protocol:
  seeds: 0-9
  episode_seconds: 10
  workers: 2
reads:
  primary: successes
  interval: wilson
  validity: {reset_strikes_max: 0, error_rows_max: 0}
  comparator: {arm: flow, for: [discrete]}
gates:
  gpu_hours: 1
decision_rules:
  - if: discrete.delta_mean > 0
    then: discrete moves the boat further
---

# discrete against flow
"""


def registered_runs(runs_dir: Path, tmp: Path, *, flow_rows, discrete_rows, discrete_state="running"):
    """A frozen registration and one launched run of each arm (manifests as fontaine-eval writes them)."""
    doc = tmp / "fvd.md"
    doc.write_text(DOC)
    freeze(doc, now="2025-12-01T00:00:00Z", commit="0" * 40)  # before the runs' rows (2026-01-01): registered
    out = {}
    for arm, rows, state, stamp in (("flow", flow_rows, "done", "000000"), ("discrete", discrete_rows, discrete_state,
                                                                            "010000")):
        d = make_run_dir(runs_dir, f"fvd-{arm}-20260101-{stamp}", arm=arm, total=10, done=len(rows), state=state,
                         rows=rows)
        man = {**json.loads((d / "manifest.json").read_text()), **launched_manifest(doc, arm, run_id=d.name)}
        (d / "manifest.json").write_text(json.dumps(man))
        out[arm] = d
    return doc, out


def test_the_view_shows_what_the_report_computes(tmp_path):
    flow = [make_row(s, arm="flow", success=s < 3, progress_final_cm=1.0) for s in range(9)]
    flow.append(make_row(9, arm="flow", status="error", success=True))
    disc = [make_row(s, arm="discrete", success=s < 6, progress_final_cm=2.0 + s / 10) for s in range(10)]
    doc, runs = registered_runs(tmp_path / "runs", tmp_path, flow_rows=flow, discrete_rows=disc, discrete_state="done")
    view = compare_view("flow-vs-discrete", str(doc), runs)
    rep = build_report(doc, runs, append=False, now="2026-12-01T09:00:00Z")
    arms = dict(view.arms)
    f = rep.arms["flow"].reads
    assert arms["flow"][4] == f"3/10 {100 * f.success_rate:.1f}%"  # the error row counts, as in the report
    lo, hi = f.intervals["wilson"]
    assert arms["flow"][5] == f"[{100 * lo:.1f}, {100 * hi:.1f}]"  # the interval on the same denominator
    assert arms["flow"][1] == "INVALID" and arms["discrete"][1] == "VALID"
    assert view.invalid[0].startswith("flow: error rows 1") and len(view.invalid) == 1  # why, under the table
    (key, cells), = view.paired
    p = rep.arms["discrete"].comparators[0].paired
    assert key == "discrete" and cells[0] == "discrete vs flow" and cells[1] == str(p.shared_seeds)
    assert cells[2] == f"{p.delta_mean:+.2f}" and cells[3] == f"[{p.delta_ci[0]:+.2f}, {p.delta_ci[1]:+.2f}]"
    assert cells[4] == f"{100 * p.success.delta:+.1f}"  # Newcombe's paired interval beside it
    assert view.verdicts[0].startswith("[undetermined (flow: INVALID: error rows 1") and "base#1" in view.verdicts[0]
    assert rep.verdicts[0].label in view.verdicts[0]



def test_the_paired_success_interval_does_not_collapse_and_stray_rows_are_not_counted(tmp_path):
    from console.compare import PAIRED_COLUMNS

    # every pair disagrees one way: flow succeeds on seeds 0-9, discrete fails on all of them
    flow = [make_row(3, arm="flow", success=False, progress_final_cm=0.0)]  # superseded: a seed's last row wins
    flow += [make_row(s, arm="flow", success=True, progress_final_cm=5.0) for s in range(10)]
    flow.append(make_row(42, arm="flow", success=True, progress_final_cm=5.0))  # not a planned seed (0-9)
    disc = [make_row(s, arm="discrete", success=False, progress_final_cm=1.0) for s in range(10)]
    disc += [make_row(4, arm="discrete", success=False, progress_final_cm=1.0),  # a duplicate
             make_row(42, arm="discrete", success=True, progress_final_cm=9.0)]  # out of plan: would pair as a tie
    doc, runs = registered_runs(tmp_path / "runs", tmp_path, flow_rows=flow, discrete_rows=disc, discrete_state="done")
    view = compare_view("flow-vs-discrete", str(doc), runs)
    arms = dict(view.arms)
    assert arms["flow"][3:5] == ("10/10", "10/10 100.0%") and arms["discrete"][3:5] == ("10/10", "0/10 0.0%")
    assert arms["flow"][1] == arms["discrete"][1] == "VALID"
    (key, cells), = view.paired
    assert PAIRED_COLUMNS[4:6] == ("Δ success pp", "CI95 (Newcombe paired)")
    assert cells[1] == "10" and cells[6] == "0/0/10"  # 10 planned pairs, seed 42 left out
    # the Wald form's variance is 0 here ([-100.0, -100.0]); Newcombe's paired interval (method 10, phi = 0)
    # is -1 + sqrt(2 * (1 - 0.7225)^2) = -0.608 at its top, 0.7225 being Wilson's lower bound for 10/10
    assert cells[4:6] == ("-100.0", "[-100.0, -60.8]")
    rep = build_report(doc, runs, append=False, now="2026-12-01T09:00:00Z")
    ps = rep.arms["discrete"].comparators[0].paired.success
    assert (ps.shared, ps.both, ps.only_arm, ps.only_comparator, ps.neither) == (10, 0, 0, 10, 0)  # as the report

def test_a_modified_registration_is_said_not_shown(tmp_path):
    doc, runs = registered_runs(tmp_path / "runs", tmp_path, flow_rows=[make_row(0)], discrete_rows=[make_row(0)])
    doc.write_text(doc.read_text().replace("gpu_hours: 1", "gpu_hours: 2"))
    view = compare_view("flow-vs-discrete", str(doc), runs)
    assert view.arms == [] and "modified" in view.error


async def test_compare_view_follows_new_rows(runs_dir, tmp_path):
    flow = [make_row(s, arm="flow", success=s % 2 == 0, progress_final_cm=1.0) for s in range(10)]
    disc = [make_row(s, arm="discrete", success=True, progress_final_cm=3.0 + s) for s in range(4)]
    _, runs = registered_runs(runs_dir, tmp_path, flow_rows=flow, discrete_rows=disc)
    app = make_app(runs_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.runs) == 2 and app.detail is not None)
        screen, arms = await open_compare(pilot, app, runs["discrete"].name, what="two arms")  # the newest is selected
        assert str(arms.get_cell("discrete", "successes")).startswith("4/4")
        assert str(arms.get_cell("discrete", "state")) == "running"
        paired_table = ViewCells(screen, "paired", PAIRED_COLUMNS)
        await wait_for(pilot, lambda: paired_table.row_count == 1)
        assert str(paired_table.get_cell("discrete", "shared")) == "4"
        assert "the run is still running" in screen.view.verdicts[0]
        with open(runs["discrete"] / "rows.jsonl", "a") as f:  # live: a new row shows without leaving the view
            f.write(json.dumps(make_row(4, arm="discrete", success=True, progress_final_cm=7.0)) + "\n")
        await wait_for(pilot, lambda: str(arms.get_cell("discrete", "successes")).startswith("5/5"), what="the row",
                       state=lambda: (screen.updates, screen._key, screen.view.arms[1]))
        await wait_for(pilot, lambda: str(paired_table.get_cell("discrete", "shared")) == "5")
        await pilot.press("question_mark")  # the help over the compare view, and back to it
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help over the compare view")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="back at the compare view")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))


async def test_at_80x24_every_column_shows_and_an_invalid_arm_says_why_with_its_bad_lines(runs_dir, tmp_path, monkeypatch):
    """The table cut its last columns at 80x24; an INVALID arm's reason said "(listed below)" and
    nothing was listed; `c` showed bare headers for 10-20 s on a busy machine, with no word of why."""
    import threading

    from console import compare as compare_mod
    from console.widgets import compare_screen
    from tests.console.conftest import plain

    flow = [make_row(s, arm="flow", progress_final_cm=1.0) for s in range(9)] + [make_row(9, arm="flow", status="error")]
    disc = [make_row(s, arm="discrete", progress_final_cm=2.0) for s in range(10)]
    _, runs = registered_runs(runs_dir, tmp_path, flow_rows=flow, discrete_rows=disc, discrete_state="done")
    with open(runs["flow"] / "rows.jsonl", "a") as f:
        f.write("{torn\n")
    release = threading.Event()

    def held_view(*args, **kwargs):  # the runs read slowly, as on a busy machine
        release.wait(30)
        return compare_mod.compare_view(*args, **kwargs)

    monkeypatch.setattr(compare_screen, "compare_view", held_view)
    app = make_app(runs_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.runs) == 2 and app.detail is not None)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert screen.query_one("#reading").display and "reading the arms' runs" in plain(screen.query_one("#reading"))
        release.set()
        await wait_for(pilot, lambda: screen.view is not None and screen.query_one("#arms").display)
        assert not screen.query_one("#reading").display
        why = plain(screen.query_one("#invalid"))
        assert why.startswith("Why INVALID:") and "flow: error rows 1" in why, why
        assert "line(s) of rows.jsonl are not valid rows (listed below)" in why and "  line 11: " in why, why
        await wait_for(pilot, lambda: screen.query_one("#arms").size.width > 0)
        shown = " ".join(strip.text for strip in screen._compositor.render_strips())
        for word in ("arm", "validity", "state", "done", "successes", "CI95", "knock-", "aways", "zero-", "fallbacks",
                     "fvd-flow-20260101-000000", "INVALID"):
            assert word in shown, (word, shown)
