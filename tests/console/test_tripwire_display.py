"""A run stopped by its registered tripwires shows their table in the console and in the Discord
failure post (the record the driver writes: prereg.rundir.TRIPWIRES_FIELD)."""

from __future__ import annotations

import numpy as np

from console.notify.messages import due_posts
from console.notify.snapshot import read_snapshot
from console.render import header_text
from console.runs import RunInfo
from engine.policies.convmap.shim import PRESETS
from engine.policies.convmap.tripwires import coverage_tripwire, format_tripwires
from prereg import rundir as rd
from tests.console.fake_discord import HandMadeRun

# the scene's rig table and the release box (docs/convmap.md's measured figures)
RIG_Q01 = np.array([-43.8, -93.3, -23.8, 38.6, -51.7, 0.2])
RIG_Q99 = np.array([50.1, 23.6, 79.2, 95.0, 154.9, 35.1])
REL_Q01 = np.array([-41.91, 43.67, 38.39, 5.71, -63.45, 0.94])
REL_Q99 = np.array([48.29, 185.26, 173.14, 91.78, 42.94, 44.14])


def record(allow=()) -> dict:
    report = coverage_tripwire(PRESETS["official"], RIG_Q01, RIG_Q99, REL_Q01, REL_Q99, allow_span_limited=allow)
    table = "registered tripwires, arm A (molmoact2):\n" + format_tripwires([report])
    failed = [] if report.passed else ["coverage: wrist_roll 54% uncovered (span mismatch ...)"]
    arm = {"arm": "A", "policy": "molmoact2", "applies": True, "passed": report.passed, "failed": failed,
           "reports": {report.name: report.as_dict()}, "table": format_tripwires([report])}  # as engine/run/tripwires.py
    return {"passed": report.passed, "failed": failed, "table": table, "arms": [arm], "checked_at": "2026-12-01T10:00:00Z"}


def failed_run(tmp_path, rec: dict) -> HandMadeRun:
    run = HandMadeRun(tmp_path, total=20)
    reason = "tripwire " + "; ".join(rec["failed"]) if rec["failed"] else None
    run.status(rd.FAILED if rec["failed"] else rd.DONE, reason=reason)
    status = rd.read_json(run.dir / rd.STATUS)
    status[rd.TRIPWIRES_FIELD] = rec
    rd.write_json_atomic(run.dir / rd.STATUS, status)
    return run


def test_the_failure_post_gives_the_failing_tripwire_one_short_line_a_joint(tmp_path):
    """Read on a phone: every joint, the gripper too, on a line of its own (it was a 130-column code
    block a phone cut at 'wrist_flex …', before the gripper's row)."""
    run = failed_run(tmp_path, record())
    (post,) = [p for p in due_posts(read_snapshot(run.dir), {"launch"}) if p.kind == rd.FAILED]
    d = post.description
    assert "reason: tripwire coverage: wrist\\_roll 54% uncovered" in d  # markdown-escaped
    lines = d.splitlines()
    start = lines.index("registered tripwires (before the first episode):")
    assert lines[start + 1:] == [
        "**coverage** (arm A): failed",
        "shoulder\\_pan ok · 4% uncovered",
        "shoulder\\_lift ok · 0% uncovered",
        "elbow\\_flex ok · 0% uncovered",
        "wrist\\_flex ok · 6% uncovered",
        "wrist\\_roll **FAIL** · 54% uncovered",
        "  span mismatch: rig span 207 vs release 106 deg, no offset below 49%",
        "gripper ok · 2% uncovered",
    ]
    assert all(len(line) <= 72 for line in lines[start:]) and "```" not in d
    assert "note:" not in d  # the tables' notes stay in the manifest
    assert len(d) <= 1800


def test_a_first_action_tripwire_reads_each_joints_move_against_its_limit():
    from console.notify.wording import tripwire_joint_lines

    rows = [{"joint": "shoulder_pan", "delta_deg": 2.04, "limit_deg": 10.0, "status": "pass", "why": ""},
            {"joint": "wrist_roll", "delta_deg": 41.0, "limit_deg": 10.0, "status": "fail",
             "why": "CLAMP SIGNATURE: delta 41.0 ~ gap 40.8 from state to release edge; delta 41.0 > limit 10.0"},
            {"joint": "elbow_flex", "delta_deg": 12.5, "limit_deg": 10.0, "status": "fail", "why": "delta 12.5 > limit 10.0"},
            {"joint": "gripper", "delta_deg": 3.0, "limit_deg": 10.0, "status": "info", "why": ""},
            "not a row", {"joint": 3}]
    assert tripwire_joint_lines("first_action", rows) == [
        "shoulder\\_pan ok · first action moves 2.0° (limit 10.0°)",
        "wrist\\_roll **FAIL** · first action moves 41.0° (limit 10.0°)",
        "  CLAMP SIGNATURE: delta 41.0 \\~ gap 40.8 from state to release edge",  # escaped; its delta is above
        "elbow\\_flex **FAIL** · first action moves 12.5° (limit 10.0°)",
        "gripper not judged · first action moves 3.0° (limit 10.0°)"]


def test_a_record_without_per_joint_rows_gives_its_failures(tmp_path):
    rec = {**record(), "arms": []}  # an older record: the table and the one-line failures only
    run = failed_run(tmp_path, rec)
    (post,) = [p for p in due_posts(read_snapshot(run.dir), {"launch"}) if p.kind == rd.FAILED]
    assert post.description.endswith("registered tripwires (before the first episode):\n"
                                      "coverage: wrist\\_roll 54% uncovered (span mismatch ...)")


def test_a_failure_that_is_not_a_tripwire_posts_no_table(tmp_path):
    run = HandMadeRun(tmp_path, total=20).episodes(3)
    run.status(rd.FAILED, reason="worker 1 crashed")
    (post,) = [p for p in due_posts(read_snapshot(run.dir), {"launch"}) if p.kind == rd.FAILED]
    assert "```" not in post.description and "tripwire" not in post.description


def test_the_console_header_shows_the_table_of_a_run_the_tripwires_stopped(tmp_path):
    run = failed_run(tmp_path, record())
    info = RunInfo(run.run_id, run.dir, manifest=rd.read_json(run.dir / rd.MANIFEST),
                   status=rd.read_json(run.dir / rd.STATUS))
    text = header_text(info, False, "").plain
    assert "failed: tripwire coverage: wrist_roll 54% uncovered" in text
    assert "registered tripwires FAILED before the first episode" in text
    assert "tripwire coverage: FAIL" in text and "span mismatch" in text

    passed = failed_run(tmp_path / "ok", record(allow=["wrist_roll"]))
    info = RunInfo(passed.run_id, passed.dir, manifest=rd.read_json(passed.dir / rd.MANIFEST),
                   status=rd.read_json(passed.dir / rd.STATUS))
    text = header_text(info, False, "").plain
    assert "registered tripwires passed before the first episode" in text and "coverage: FAIL" not in text


def test_the_launch_post_names_the_registered_tripwires():
    from console.notify.wording import describe_gates
    from prereg.document.model import CoverageTripwire, Tripwires
    from prereg.rundir.status import GateSpec

    spec = GateSpec(gpu_hours=1.5, tripwires=Tripwires(CoverageTripwire(span_limited=("wrist_roll",))).as_dict())
    assert describe_gates(spec) == ("GPU-hours ≤ 1.5 · tripwires before the first episode: coverage <= 30% uncovered "
                                    "(span-limited allowed: wrist_roll)")
