"""The console survives any bytes in a run directory: a hostile run shows what is wrong with it,
and every other run keeps updating."""

from __future__ import annotations

import json

from console.watcher import Watcher
from prereg import rundir as rd
from tests.console.conftest import make_app, make_row, make_run_dir, plain, wait_for


def _hostile_runs(runs_dir):
    """Four run directories nobody's driver would write."""
    wrong = make_run_dir(runs_dir, "a-wrong-types", total=8, done=2, extra_lines=[
        json.dumps({**make_row(2), "seed": [1, 2]}),
        json.dumps({**make_row(3), "seed": {"x": 1}}),
        json.dumps({**make_row(4), "success": "yes", "status": 5, "progress_final_cm": "far", "knock_away": []}),
        json.dumps({**make_row(5), "reset_strikes": "many", "predicts": {"a": 1}, "zero_fallbacks": None}),
        "\0\0\0" + json.dumps(make_row(6)),
        '{"seed": 7, "pad": "' + "x" * 10_000_000 + '"}',
    ])
    rows_dir = make_run_dir(runs_dir, "b-rows-is-a-directory", total=4, done=0, rows=[])
    (rows_dir / rd.ROWS).unlink()
    (rows_dir / rd.ROWS).mkdir()
    bad_status = make_run_dir(runs_dir, "c-bad-status", total=4, done=1)
    (bad_status / rd.STATUS).write_text(json.dumps({"state": [1], "done": "x", "total": {}, "reason": 7}))
    (bad_status / rd.MANIFEST).write_text(json.dumps({"run_id": ["x"], "arm": 5, "seeds": "all", "gates": [1],
                                                      "prereg": {"id": {"a": 1}, "sha256": 3}}))
    nul = make_run_dir(runs_dir, "d-nul-bytes", total=4, done=1)
    (nul / rd.STATUS).write_bytes(b"\0" * 64)
    (nul / rd.STOP).write_bytes(b"\xff\xfe\0")
    (nul / rd.PID).write_text(json.dumps({"pid": "me", "create_time": "then"}))
    return [wrong, rows_dir, bad_status, nul]


def test_the_watcher_polls_hostile_runs_without_raising(runs_dir):
    hostile = _hostile_runs(runs_dir)
    updates = []
    w = Watcher(runs_dir, updates.append, on_error=lambda text: updates.append(text))
    for path in hostile:
        w.select(path)
        while w.poll_once():
            pass
    assert not [u for u in updates if isinstance(u, str)], "the watcher thread reported an unexpected error"
    states = {s.run_id: s.state for s in updates[-1].runs}
    assert states["c-bad-status"] == "unreadable"
    assert states["d-nul-bytes"] == "unreadable"
    wrong = w.watches[hostile[0].resolve()]
    view = wrong.agg.snapshot()
    assert not wrong.info.problems and view.rows == 3 and view.corrupt == 5  # 2 good + the 10 MB line; 5 bad
    bad = {b.line_no: b.reason for b in view.recent_bad}
    assert sorted(bad) == [3, 4, 5, 6, 7] and "seed" in bad[3] and "seed" in bad[4], bad  # each with its line and why
    rows_dir = w.watches[hostile[1].resolve()]
    assert any("rows.jsonl: is a directory, not a regular file" in p for p in rows_dir.info.problems)
    w.stop()


async def test_a_hostile_run_never_stops_the_others_from_updating(runs_dir):
    _hostile_runs(runs_dir)
    good = make_run_dir(runs_dir, "z-good", total=30, done=0, state="running", rows=[])
    app = make_app(runs_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == "z-good",
                       what="the good run selected")
        for n in (3, 7):
            with open(good / rd.ROWS, "a") as f:
                for s in range(app.detail.view.rows, n):
                    f.write(json.dumps(make_row(s)) + "\n")
            await wait_for(pilot, lambda n=n: app.detail.view.rows == n, what=f"{n} rows of the good run shown")
        await wait_for(pilot, lambda: "1/7" in plain(app.screen.query_one("#counts")), what="the counts panel drawn")
        states = {s.run_id: s.state for s in app.runs}
        assert states["c-bad-status"] == "unreadable" and states["d-nul-bytes"] == "unreadable"
        assert states["z-good"] == "running"


def test_runs_whose_files_are_fifos_or_loops_are_listed_as_unreadable_with_why(runs_dir):
    """A FIFO opened for a blocking read would hang the watcher's thread (and empty the runs list)."""
    import os

    fifo_status = make_run_dir(runs_dir, "e-fifo-status", total=4, done=1)
    (fifo_status / rd.STATUS).unlink()
    os.mkfifo(fifo_status / rd.STATUS)
    fifo_manifest = make_run_dir(runs_dir, "f-fifo-manifest", total=4, done=1)
    (fifo_manifest / rd.MANIFEST).unlink()
    os.mkfifo(fifo_manifest / rd.MANIFEST)
    os.mkfifo(fifo_manifest / rd.STOP)
    loops = make_run_dir(runs_dir, "g-loops", total=4, done=1)
    for name in (rd.STATUS, rd.ROWS):
        (loops / name).unlink()
        os.symlink(name, loops / name)
    good = make_run_dir(runs_dir, "z-good", total=4, done=2)
    updates = []
    w = Watcher(runs_dir, updates.append, on_error=lambda text: updates.append(text))
    for path in (fifo_status, fifo_manifest, loops, good):
        w.select(path)
        while w.poll_once():
            pass
    assert not [u for u in updates if isinstance(u, str)], "the watcher thread reported an unexpected error"
    states = {s.run_id: s.state for s in updates[-1].runs}
    assert set(states) >= {"e-fifo-status", "f-fifo-manifest", "g-loops", "z-good"}
    assert states["e-fifo-status"] == "unreadable" and states["g-loops"] == "unreadable"
    info = {p.name: w.watches[p.resolve()].info for p in (fifo_status, fifo_manifest, loops)}
    assert any("status.json: is a FIFO" in p for p in info["e-fifo-status"].problems)
    assert any("manifest.json: is a FIFO" in p for p in info["f-fifo-manifest"].problems)
    assert "FIFO" in info["f-fifo-manifest"].stop.detail
    assert any("status.json: a symbolic link loop" in p for p in info["g-loops"].problems)
    assert any("rows.jsonl: a symbolic link loop" in p for p in info["g-loops"].problems)
    assert states["z-good"] == "done"
    w.stop()


WRONG_STATUS = [
    {"elapsed_s": "x"}, {"done": "x", "total": [1]}, {"gpu_hours": "x", "gpus": "2"},
    {"projected_wall_s": "inf", "eta_s": {}}, {"elapsed_s": float("nan"), "projected_wall_s": 1e308},
    {"pace": {"startup_s": "x", "rollout_s": 1.0, "done": 1, "in_flight": 0, "total": 4, "episode_wall_s": 1.0,
              "lanes": 1, "naive_projected_wall_s": "y"}},
    {"pace": {"startup_s": 1.0, "rollout_s": 1.0, "done": True, "in_flight": 0, "total": "4", "episode_wall_s": None,
              "lanes": 1, "naive_projected_wall_s": "y"}},
    {"settled": {"rules": [1, "x"], "all": True}}, {"settled": {"rules": [{"settled": True}], "all": False, "at": []}},
    {"reason": 7, "stop": {"by": 5, "detail": ["x"]}},
]


def test_wrong_typed_status_and_gates_are_shown_as_unknown_never_a_crash(runs_dir):
    from rich.console import Console

    from console.aggregate import RunAggregate
    from console.render import gate_readings, gate_spec, header_text, pace_table
    from console.runs import read_run
    from prereg.rundir.status import GateSpec

    agg = RunAggregate()
    agg.add_many([make_row(s) for s in range(2)])
    view = agg.snapshot()
    for i, fields in enumerate(WRONG_STATUS):
        d = make_run_dir(runs_dir, f"w{i}", total=4, done=2, state="running",
                         gates={"gpu_hours": "x", "pace_limit_hours": [1], "pace_after_episodes": "ten",
                                "stall_min_s": float("nan"), "warn_fraction": True})
        status = json.loads((d / rd.STATUS).read_text())
        (d / rd.STATUS).write_text(json.dumps({**status, **fields}))
        info = read_run(d)
        assert gate_spec(info) == GateSpec()  # every wrong-typed gate left at its default
        readings = gate_readings(info, view, 1e9)
        console = Console(width=100, record=True)
        console.print(pace_table(info, view, readings, 1e9))
        console.print(header_text(info, False, ""))
        text = console.export_text()
        if "elapsed_s" in fields:
            assert text.split()[:2] == ["elapsed", "—"], text


async def test_the_app_shows_a_run_with_a_wrong_typed_status(runs_dir):
    d = make_run_dir(runs_dir, "z-wrong-status", total=4, done=2, state="running")
    status = json.loads((d / rd.STATUS).read_text())
    (d / rd.STATUS).write_text(json.dumps({**status, "elapsed_s": "x", "gpu_hours": "x", "done": "x"}))
    app = make_app(runs_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_for(pilot, lambda: app.detail is not None and app.detail.info.path.name == "z-wrong-status",
                       what="the run selected")
        await wait_for(pilot, lambda: "elapsed" in plain(app.screen.query_one("#pace")), what="the pace panel drawn")
        assert "—" in plain(app.screen.query_one("#pace"))


def test_a_wrong_typed_field_is_shown_as_unreadable_by_the_console_and_the_notifier(runs_dir):
    """Not only `state`: a field of the wrong type is named with why (the field alone would show '—')."""
    from console.notify.messages import progress_lines
    from console.notify.snapshot import read_snapshot as notifier_snapshot
    from console.render import header_text
    from console.runs import read_run

    d = make_run_dir(runs_dir, "z-wrong-fields", total=4, done=2, state="running")
    status = json.loads((d / rd.STATUS).read_text())
    (d / rd.STATUS).write_text(json.dumps({**status, "elapsed_s": "x", "done": "many"}))
    info = read_run(d)
    assert info.state == rd.RUNNING and info.done is None  # the state stands; the field reads unknown ...
    assert "status.json: elapsed_s is str 'x', not int or float" in info.problems  # ... and why
    assert "status.json: done is str 'many', not int" in info.problems
    text = header_text(info, False, "").plain
    assert "unreadable: status.json: elapsed_s is str 'x'" in text and "unreadable: status.json: done is str 'many'" in text
    lines = progress_lines(notifier_snapshot(d))
    assert any(line.startswith("unreadable: status.json: elapsed\\_s is str 'x'") for line in lines), lines
    assert any("done is str 'many'" in line for line in lines), lines
    clean = make_run_dir(runs_dir, "z-clean", total=4, done=2, state="running")
    assert read_run(clean).problems == [] and not any("unreadable" in x for x in progress_lines(notifier_snapshot(clean)))
