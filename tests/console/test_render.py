"""The panels' text: tripwire levels, stall, grid limits (pure functions of a snapshot and a clock)."""

import os

import psutil

from console.aggregate import GRID_MAX_SEEDS, RunAggregate
from console.grid import seed_grid_text
from console.render import (
    banner_text,
    fmt_duration,
    gate_readings,
    gate_spec,
    header_text,
    histogram_text,
)
from console.runs import read_run
from prereg import rundir as rd
from prereg.rundir.files import write_json_atomic
from tests.console.conftest import FIXED_TIME, make_row, make_run_dir


def view_of(rows):
    agg = RunAggregate()
    agg.add_many(rows)
    return agg.snapshot()


def live_pid():
    me = psutil.Process()
    return {"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time()}


def test_durations():
    assert [fmt_duration(x) for x in (None, 0, 59.6, 61, 3600 * 2 + 5)] == ["—", "0s", "1m00s", "1m01s", "2h00m05s"]


def test_gate_spec_takes_the_manifest_gates_and_ignores_unknown_keys(tmp_path):
    d = make_run_dir(tmp_path, "r", gates={"gpu_hours": 2.0, "pace_limit_hours": 3.0, "pace_after_episodes": 5,
                                           "stall_min_s": 30.0, "future_gate": 1})
    spec = gate_spec(read_run(d))
    assert (spec.gpu_hours, spec.pace_limit_hours, spec.pace_after_episodes, spec.stall_min_s) == (2.0, 3.0, 5, 30.0)


def test_banner_warns_before_and_shouts_when_tripped(tmp_path):
    rows = [make_row(s) for s in range(20)]
    ok = read_run(make_run_dir(tmp_path, "ok", state="running", done=20, total=100, elapsed_s=300, gpu_hours=0.1,
                               pid=live_pid()))
    text, level = banner_text(gate_readings(ok, view_of(rows), FIXED_TIME + 5), ok)
    assert (text, level) == (None, "")
    warn = read_run(make_run_dir(tmp_path, "warn", state="running", done=20, total=100, elapsed_s=300,
                                 gpu_hours=0.45, pid=live_pid()))
    text, level = banner_text(gate_readings(warn, view_of(rows), FIXED_TIME + 5), warn)
    assert level == "warn" and "gpu_hours" in text.plain
    tripped = read_run(make_run_dir(tmp_path, "tripped", state="running", done=20, total=100, elapsed_s=300,
                                    gpu_hours=0.6, pid=live_pid()))
    text, level = banner_text(gate_readings(tripped, view_of(rows), FIXED_TIME + 5), tripped)
    assert level == "tripped" and "GPU_HOURS TRIPPED" in text.plain and "next episode boundary" in text.plain


def test_an_old_heartbeat_of_a_live_run_is_a_stall(tmp_path):
    info = read_run(make_run_dir(tmp_path, "stalled", state="running", done=20, total=100, elapsed_s=300,
                                 pid=live_pid()))
    view = view_of([make_row(s) for s in range(20)])  # median wall 21 s: the stall limit is the 60 s floor
    text, level = banner_text(gate_readings(info, view, FIXED_TIME + 30), info)
    assert level == ""
    text, level = banner_text(gate_readings(info, view, FIXED_TIME + 3600), info)
    assert level == "tripped" and "STALL" in text.plain


def test_seed_grid_draws_a_bounded_number_of_cells():
    seeds = list(range(5000))
    view = view_of([make_row(s) for s in range(3000)])
    text = seed_grid_text(view, seeds, 48).plain
    assert text.count("■") == GRID_MAX_SEEDS and f"… {5000 - GRID_MAX_SEEDS} more seeds" in text
    small = seed_grid_text(view_of([make_row(s) for s in (0, 1)]), [0, 1, 2], 48).plain
    assert small.count("■") == 2 and small.count("·") == 1 and "more" not in small


def test_histogram_without_rows():
    assert histogram_text(view_of([])).plain == "no rows yet"


def test_the_pace_panel_says_when_the_decision_was_settled_and_what_the_projection_is_made_of(tmp_path):
    from rich.console import Console

    from console.render import pace_table
    from prereg import rundir as rd
    from prereg.rundir.files import write_json_atomic

    d = make_run_dir(tmp_path, "settled", state="running", done=70, total=100, elapsed_s=600, pid=live_pid(),
                     gates={"pace_limit_hours": 1.0, "pace_after_episodes": 10, "decided": "stop"})
    status = rd.read_json(d / rd.STATUS)
    status["settled"] = {"at": 63, "total": 100, "all": True,
                         "rules": [{"condition": "successes >= 20", "settled": True, "verdict": "does not hold"}]}
    status["pace"] = {"startup_s": 240.0, "rollout_s": 360.0, "done": 70, "in_flight": 4, "total": 100,
                      "episode_wall_s": 20.0, "lanes": 4, "naive_projected_wall_s": 857.1}
    write_json_atomic(d / rd.STATUS, status)
    info = read_run(d)
    view = view_of([make_row(s) for s in range(70)])
    console = Console(width=100, record=True)
    console.print(pace_table(info, view, gate_readings(info, view, FIXED_TIME + 5), FIXED_TIME + 5))
    text = console.export_text()
    assert "settled at 63/100: [does not hold] successes >= 20" in text
    assert "start-up 240 s + 30 left x 20.0 s / 4 lanes, 4 in flight" in text
    assert any(line.strip() == "naive 14.3 min" for line in text.splitlines()), text  # its own line, never split
    narrow = Console(width=44, record=True)  # the pace panel at 80 columns
    narrow.print(pace_table(info, view, gate_readings(info, view, FIXED_TIME + 5), FIXED_TIME + 5))
    assert any(line.strip() == "naive 14.3 min" for line in narrow.export_text().splitlines())


def test_histogram_range_comes_from_the_data():
    """The oracle's +13..+29 cm results get their own bars, not one unmarked overflow bin."""
    from console.render import fmt_signed

    rows = [make_row(s, progress_final_cm=13.0 + (s % 17)) for s in range(40)] + [make_row(100 + s) for s in range(10)]
    text = histogram_text(view_of(rows), width=60).plain
    assert "max +29.00" in text and "min -6.10" in text
    assert "+30 cm" in text  # the axis reaches the data's top edge
    assert "below" not in text and "above" not in text
    assert fmt_signed(-0.001) == "0.00" and fmt_signed(-0.004) == "0.00" and fmt_signed(-0.02) == "-0.02"


def test_histogram_marks_far_tails_with_their_counts_and_extremes():
    rows = [make_row(s) for s in range(200)] + [make_row(900, progress_final_cm=-250.0),
                                                make_row(901, progress_final_cm=880.5)]
    text = histogram_text(view_of(rows), width=50).plain
    assert "1 below" in text and "1 at/above" in text
    assert "min -250.00" in text and "max +880.50" in text


def test_no_minus_zero_anywhere_in_the_counts():
    from rich.console import Console

    from console.render import counts_table, recent_row_cells

    rows = [make_row(s, progress_final_cm=-0.001) for s in range(3)]
    console = Console(width=120, record=True, file=open(os.devnull, "w"))
    console.print(counts_table(view_of(rows)))
    assert "-0.00" not in console.export_text()
    assert recent_row_cells(rows[0])[2] == "0.00"


def test_gpu_hours_source_is_whole_on_its_own_line(tmp_path):
    from rich.console import Console

    from console.render import pace_table

    d = make_run_dir(tmp_path, "r", state="running", done=5, total=10)
    status = __import__("json").loads((d / "status.json").read_text())
    status["gpu_hours_source"] = "allocated (wall x 2 GPUs held)"
    (d / "status.json").write_text(__import__("json").dumps(status))
    info = read_run(d)
    view = view_of([make_row(s) for s in range(5)])
    for width in (38, 60, 100):
        console = Console(width=width, record=True, file=open(os.devnull, "w"))
        console.print(pace_table(info, view, gate_readings(info, view, FIXED_TIME + 5), FIXED_TIME + 5))
        text = " ".join(console.export_text().split())
        assert "allocated (wall x 2 GPUs held)" in text, (width, text)


def test_the_histograms_axis_signs_both_ends_as_the_panels_do():
    """The oracle's +13..+29 cm read `13 … +30 cm`: one end signed, the other not."""
    rows = [make_row(s, progress_final_cm=13.0 + (s % 17)) for s in range(40)]
    axis = histogram_text(view_of(rows), width=60).plain.splitlines()[4]
    assert axis.split()[0] == "+13" and axis.split()[-2:] == ["+30", "cm"], axis
    both = [make_row(s, progress_final_cm=-6.0 + s) for s in range(14)]
    axis = histogram_text(view_of(both), width=60).plain.splitlines()[4]
    assert axis.split() == ["-6", "0", "+8", "cm"], axis
    tails = [make_row(s) for s in range(200)] + [make_row(900, progress_final_cm=-250.0)]
    assert "1 below -" in histogram_text(view_of(tails), width=50).plain


def test_clip_lines_ends_a_cut_text_with_an_ellipsis_and_leaves_a_short_one_alone():
    from rich.console import Console
    from rich.style import Style
    from rich.text import Text

    from console.render import clip_lines

    short = Text("one line\nand another")
    assert clip_lines(short, 40, 3) is short
    text = Text("run-20260101  stopped  arm a-vs-b\n")
    text.append("stopped: decided: (comparison) b better than a at 12/60 seeds: b 12/12 vs a 4/12", style="yellow")
    text.append("\nmissing: pid.json", style="yellow")
    cut = clip_lines(text, 40, 3)
    lines = cut.plain.split("\n")
    assert len(lines) == 3 and all(len(line) <= 40 for line in lines)
    assert lines[0] == "run-20260101  stopped  arm a-vs-b"
    assert lines[2].endswith("…") and "missing" not in cut.plain  # there is more, and it says so
    assert cut.get_style_at_offset(Console(), len(cut) - 1) == Style.parse("yellow")  # the ellipsis in its line's colour
    full = Text("x" * 40 + "y" * 40 + "z" * 40 + "w" * 5)  # a line exactly as wide: the ellipsis takes its last cell
    assert clip_lines(full, 40, 3).plain.split("\n")[2] == "z" * 39 + "…"


def test_a_comparison_runs_histogram_draws_each_arm_on_one_axis():
    """Pooled, a comparison run's arms read as one policy with two modes: each arm gets its bars,
    named, over the same bins and the same scale, and the axis is drawn once."""
    from prereg.rundir.fold import Plan

    agg = RunAggregate(Plan(seeds=tuple(range(8)), arms=("clumsy", "steady")))
    agg.add_many([make_row(s, arm="clumsy", progress_final_cm=0.0) for s in range(8)]
                 + [make_row(s, arm="steady", progress_final_cm=15.0) for s in range(4)])
    lines = histogram_text(agg.snapshot(), width=50).plain.splitlines()
    # each arm's own count, on one scale: 8 fills three rows, 4 only the lower half
    assert lines[0] == "clumsy · tallest bar 8 episodes" and lines[4] == "steady · tallest bar 4 episodes"
    clumsy, steady = lines[1:4], lines[5:8]
    assert clumsy[0].strip() and not steady[0].strip()
    edge = len(clumsy[2].rstrip())  # clumsy's bar is the first bin (0 cm), steady's the last (+15 cm)
    assert clumsy[2].strip() and steady[2].rstrip()[:2].strip() == "" and len(steady[2].rstrip()) > edge
    assert sum("cm" in line for line in lines) == 2 and lines[-1].startswith("1 cm bins")  # one axis, one legend
    assert lines[-1].endswith("tallest bar 8 episodes")  # the scale, in words


def test_the_header_leads_with_the_reports_headline_and_says_when_the_run_moved_on(tmp_path):
    """The console renders the report's story (results.json), never a judgement of its own; a report made while
    the run was live reads differently from the run now, and the header says so."""
    from console.watcher import RunWatch
    from prereg.stats.story import ArmStory, Story

    d = make_run_dir(tmp_path, "told", state="done", done=6, total=6)
    watch = RunWatch(d)
    watch.refresh()
    assert watch.info.story is None and "report: " not in header_text(watch.info, False, "").plain
    story = Story("told", "running", "not judged yet", ("the run is still running",),
                  (ArmStory("scripted", "not judged yet", (), 2, 2, 6),), generated_at="2026-01-01T00:05:00Z")
    write_json_atomic(d / rd.RESULTS_JSON, {"story": story.as_dict()})
    watch.refresh()  # results.json is watched: a report made now shows without any other file changing
    lines = header_text(watch.info, False, "").plain.splitlines()
    assert f"report: {story.headline}" in lines
    assert "live: done (the report, 2026-01-01T00:05:00Z, read it running: report again for its verdict now)" in lines
