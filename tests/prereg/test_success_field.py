"""Issue 45: a plan that reads the env's own success (`protocol: success_field: env_success`) is read that way on
every live surface: the fold (the console's counts, the Discord posts, the kill record), the driver's status,
summary and decisions, not only the report."""

from __future__ import annotations

import json

from engine.cli.main import main
from engine.policies.factory import PolicySpec
from engine.record.config import RunConfig
from engine.record.summary import summarize
from prereg.document.seal import freeze
from prereg.rundir.fold import Plan, fold_rows
from prereg.rundir.manifest import Manifest
from tests.engine.test_pins import plan


def _row(seed, success, env_success):
    return {"seed": seed, "status": "ok", "success": success, "env_success": env_success, "progress_final_cm": 1.0,
            "progress_cm": 5.0}


ROWS = [_row(0, False, True), _row(1, True, True), _row(2, False, False)]


def test_the_fold_counts_the_success_the_plan_reads():
    assert fold_rows(ROWS, Plan((0, 1, 2))).total().successes == 1
    assert fold_rows(ROWS, Plan((0, 1, 2), success_field="env_success")).total().successes == 2
    m = Manifest.from_dict({"seeds": [0, 1, 2], "config": {"success_field": "env_success"}})
    assert m.success_field == "env_success" and Plan.of(m).success_field == "env_success"
    assert Manifest.from_dict({"seeds": [0]}).success_field == "success"  # a run from before it: Fontaine's


def test_the_drivers_summary_counts_it_too():
    cfg = RunConfig(run_id="r", arm="a", policy=PolicySpec(kind="scripted"), seeds=[0, 1, 2], success_field="env_success")
    s = summarize(ROWS, cfg)
    assert s["successes"] == 2 and s["success_seeds"] == [0, 1]


def test_a_frozen_plans_success_field_reaches_the_run(tmp_path):
    doc = tmp_path / "plan.md"
    doc.write_text(plan("a\n    policy: scripted", "  success_field: env_success\n", seconds=0.2))
    freeze(doc)
    run_dir = tmp_path / "r"
    assert main(["--prereg", str(doc), "--arm", "a", "--run-dir", str(run_dir)]) == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["success_field"] == "env_success"
    rows = [json.loads(ln) for ln in (run_dir / "rows.jsonl").read_text().splitlines()]
    status = json.loads((run_dir / "status.json").read_text())
    assert status["successes"] == sum(r["env_success"] is True for r in rows)
