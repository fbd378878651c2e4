"""One outcome per episode (prereg.rundir.outcomes.episode_outcome): each of the eight from a row's physics
fields, schema-1 rows by classify's order, the counts, and the report's table and outcome moves."""

from __future__ import annotations

import json

import pytest

from prereg.outputs.report import build_report
from prereg.outputs.report_markdown import outcome_transitions
from prereg.rundir.outcomes import (
    CARRIED,
    DROPPED,
    EPISODE_OUTCOMES,
    ERROR,
    KNOCK_AWAY,
    OFF_TABLE,
    OUTCOME_LABELS,
    PLACED_TIPPED,
    QUIET,
    SUCCESS,
    TOUCHED,
    classify,
    count_rows,
    episode_outcome,
)
from tests.prereg.conftest import make_row

NOW = "2026-05-01T12:00:00Z"
GRASP = dict(grasped=True, grasp_tick=90, lift_max_mm=45.0, touched=True, off_table=False)


@pytest.mark.parametrize("fields, outcome", [
    (dict(status="error", error="boom", success=True), ERROR),
    (dict(success=True, **GRASP, released=True, carried_cm=20.0), SUCCESS),
    (dict(off_table=True, touched=True, progress_final_cm=-30.0), OFF_TABLE),
    (dict(**GRASP, released=True, carried_cm=15.0, tipped=True, dist_final_cm=1.0), PLACED_TIPPED),
    (dict(**GRASP, released=True, carried_cm=15.0, tipped=False, dist_final_cm=12.0), CARRIED),
    (dict(**GRASP, released=False, carried_cm=0.5), CARRIED),  # still held at the end
    (dict(**GRASP, released=True, carried_cm=0.4, tipped=True, dist_final_cm=14.0), DROPPED),
    (dict(grasped=False, touched=True, off_table=False, progress_final_cm=-3.0), KNOCK_AWAY),
    (dict(grasped=False, touched=True, off_table=False, progress_cm=0.2), TOUCHED),
    (dict(grasped=False, touched=False, off_table=False), QUIET),
])
def test_each_outcome_from_the_row(fields, outcome):
    row = make_row(7, **fields)
    assert episode_outcome(row) == outcome
    assert episode_outcome(row, classify(row)) == outcome
    assert outcome in EPISODE_OUTCOMES and OUTCOME_LABELS[outcome]


def test_a_schema_1_row_keeps_classify_order():
    """No grasp fields, no touched, no off_table: success > knock-away > engaged (touched) > quiet,
    and a boat that fell below the table (the row's boat_z_mm) is off the table."""
    def old(**kw):
        row = make_row(1, **kw)
        for k in ("grasped_lifted", "grasped_squeezed", "grasp_tick", "lift_max_mm", "carried_cm", "released", "touched",
                  "off_table", "reachable"):
            row.pop(k)
        row["schema"] = 1
        return row

    assert episode_outcome(old(success=True, progress_final_cm=-5.0)) == SUCCESS
    assert episode_outcome(old(progress_final_cm=-5.0, progress_cm=3.0)) == KNOCK_AWAY
    assert episode_outcome(old(progress_cm=3.0)) == TOUCHED
    assert episode_outcome(old()) == QUIET
    assert episode_outcome(old(progress_final_cm=-1078.7, boat_z_mm=-471000.0)) == OFF_TABLE
    assert episode_outcome(old(boat_z_mm=2.0, progress_final_cm=-2.0)) == KNOCK_AWAY


def test_counts_by_outcome_cover_every_row():
    rows = [make_row(0, success=True), make_row(1, status="error"), make_row(2, **GRASP, released=False),
            make_row(3, off_table=True)]
    c = count_rows(rows)
    assert sum(c.by_outcome.values()) == c.rows == 4
    assert c.by_outcome[SUCCESS] == c.by_outcome[ERROR] == c.by_outcome[CARRIED] == c.by_outcome[OFF_TABLE] == 1


def test_the_report_tables_outcomes_and_pairs_them_across_arms(demo, run_dir):
    carried = dict(**GRASP, released=True, carried_cm=12.0, dist_final_cm=8.0)
    ref = run_dir("ref", [make_row(s, predicts=20, **(carried if s < 4 else {})) for s in range(6)],
                  status={"state": "done"}, launched=(demo, "tiny-reference"))
    masked = run_dir("masked", [make_row(s, predicts=20, success=s < 3, **carried) for s in range(6)],
                     status={"state": "done"}, launched=(demo, "tiny-masked"))
    rep = build_report(demo, {"tiny-reference": ref, "tiny-masked": masked}, now=NOW)
    m = rep.arms["tiny-masked"]
    assert m.reads.outcomes[SUCCESS] == 3 and m.reads.outcomes[CARRIED] == 3
    (c,) = m.comparators
    moves = outcome_transitions(c.reads, m.reads)
    assert (CARRIED, SUCCESS, [0, 1, 2]) in moves and (QUIET, CARRIED, [4, 5]) in moves
    text = rep.registration_md.read_text()
    assert "## Outcomes" in text and "| arm | success | carried not placed | quiet |" in text
    assert "| tiny-masked | 3 | 3 | 0 |" in text and "| tiny-reference | 0 | 4 | 2 |" in text
    assert "carried not placed → success 3 (seeds 0, 1, 2)" in text
    assert "carried not placed → success 3 (seeds 0, 1, 2)" in (masked / "results.md").read_text()
    assert "outcomes  success 3 · carried not placed 3" in rep.summary_text()


def test_a_run_written_before_the_grasp_fields_reports_valid_with_its_counts_and_outcomes(demo, run_dir):
    """A whole run of schema-1 rows (no grasp fields, no touched, no off_table) and a manifest from
    before envs (no `env`): VALID, the counts as before, and each outcome derivable without grasps."""
    def old(seed, **kw):
        row = make_row(seed, **kw)
        for k in ("grasped_lifted", "grasped_squeezed", "grasp_tick", "lift_max_mm", "carried_cm", "released", "touched",
                  "off_table", "reachable"):
            del row[k]
        row["schema"] = 1
        return row

    rows = [old(0, success=True, progress_cm=9.0, progress_final_cm=9.0, boat_z_mm=0.0),
            old(1, success=True, progress_cm=7.5, progress_final_cm=7.0, boat_z_mm=0.0),
            old(2, progress_cm=0.4, progress_final_cm=-4.0, knock_away=True, boat_z_mm=0.0),
            old(3, progress_cm=3.0, progress_final_cm=2.5, engaged=True, boat_z_mm=0.0),
            old(4, progress_final_cm=-1078.7, knock_away=True, boat_z_mm=-471000.0),  # fell forever, no floor then
            old(5, boat_z_mm=0.0)]
    d = run_dir("old", rows, status={"state": "done"}, launched=(demo, "scripted"))
    assert "env" not in json.loads((d / "manifest.json").read_text())
    assert "grasped" not in (d / "rows.jsonl").read_text()
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads
    assert r.valid, [c.text for c in r.checks if not c.ok]
    assert (r.n, r.successes, r.knock_aways, r.engaged, r.quiet, r.error_rows) == (6, 2, 2, 3, 1, 0)
    assert r.outcome_by_seed == {0: SUCCESS, 1: SUCCESS, 2: KNOCK_AWAY, 3: TOUCHED, 4: OFF_TABLE, 5: QUIET}
    assert {o: n for o, n in r.outcomes.items() if n} == {SUCCESS: 2, OFF_TABLE: 1, KNOCK_AWAY: 1, TOUCHED: 1,
                                                          QUIET: 1}
    text = (d / "results.md").read_text()
    assert "- **Validity**: VALID" in text and "- **Primary**: " in text
    assert "success 2 · off the table 1 · knocked away 1 · touched 1 · quiet 1" in text
    assert {v.rule.condition: v.verdict for v in rep.verdicts}["scripted.successes >= 1"] == "HOLDS"


def test_a_hold_the_episode_cut_short_is_placed_hold_unfinished():
    from prereg.rundir.outcomes import HOLD_UNFINISHED

    placed = dict(**GRASP, released=True, carried_cm=15.0, tipped=False, dist_final_cm=0.2, success_streak=9)
    assert episode_outcome(make_row(7, **placed)) == HOLD_UNFINISHED
    assert episode_outcome(make_row(7, **{**placed, "success_streak": 0})) == CARRIED  # not on it at the end
    assert episode_outcome(make_row(7, **{**placed, "success": True})) == SUCCESS
    assert episode_outcome(make_row(7, **{**placed, "status": "error"})) == ERROR
    assert OUTCOME_LABELS[HOLD_UNFINISHED] == "placed, hold unfinished"
