"""Real trials: the real.jsonl record (fsynced lines, read tolerantly), a plan's registered real read
(reads.real, the deterministic selection), the read of a run's trials with its validity and
provenance, and `fontaine-prereg import-real` (all or nothing, clear errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prereg import rundir as rd
from prereg.document.read import load
from prereg.document.real_spec import read_order, select_seeds, selected_seeds
from prereg.document.seal import amend, freeze
from prereg.outputs.cli import main as prereg_main
from prereg.rundir.real import (
    Prediction,
    Trial,
    append_prediction,
    append_trial,
    read_predictions,
    read_trials,
    real_digest,
    trial_value,
)
from prereg.stats.real_read import NO_HELP, cross_arm, owed_seeds, read_run_real
from tests.prereg.conftest import make_row

SHA = "a" * 64
PLAN = """---
fontaine: fontaine-prereg/1
id: real-demo
title: "The oracle on the rig: real trials paired with sim seeds"
created: 2026-12-07
arms:
  - name: oracle
    policy: scripted
  - name: clumsy
    policy: scripted
    grasp_miss: 0.5
protocol:
  seeds: 0-39
  episode_seconds: 20
reads:
  primary: successes
  real: {trials: 10, alpha: 0.1, metric: success, selection_seed: 20261207, sim_k: 20, jitter_cm: 1.0}
gates:
  gpu_hours: 0.1
---

The oracle on the rig, 10 real trials on seeds the selection seed draws.
"""


def _trial(seed: int, outcome: str = "success", **kw) -> Trial:
    base = dict(arm="oracle", seed=seed, checkpoint_sha256=SHA, operator="ana", started_at="2026-12-08T10:00:00Z",
                ended_at="2026-12-08T10:01:00Z", outcome=outcome, selection_seed=20261207, source="console")
    base.update(kw)
    return Trial.make(**base)


@pytest.fixture
def plan(tmp_path) -> Path:
    p = tmp_path / "real.md"
    p.write_text(PLAN)
    freeze(p, now="2026-12-07T12:00:00Z", commit="0" * 40)
    return p


@pytest.fixture
def oracle_run(tmp_path, plan) -> Path:
    d = tmp_path / "runs" / "oracle-1"
    d.mkdir(parents=True)
    (d / rd.MANIFEST).write_text(json.dumps({"run_id": "oracle-1", "arm": "oracle"}))
    (d / rd.ROWS).write_text("".join(json.dumps(make_row(s, success=s % 4 != 0)) + "\n" for s in range(40)))
    return d


# ---------------------------------------------------------------- the record


def test_a_trial_is_one_fsynced_line_read_back_as_written(tmp_path):
    t = _trial(3, "void", void_reason="the boat slipped off the disk while placing it")
    line = append_trial(tmp_path, t)
    append_trial(tmp_path, _trial(4, "knock_away", progress=0.2, video="videos/real_seed004.mp4"))
    got = read_trials(tmp_path)
    assert got.recorded and not got.bad and [x.seed for x in got.trials] == [3, 4]
    assert got.trials[0] == t and line["schema"] == 1 and json.loads((tmp_path / rd.REAL).read_text().splitlines()[0]) == line
    assert trial_value(got.trials[0], "success") is None  # a void is not read
    assert trial_value(got.trials[1], "success") == 0.0 and trial_value(got.trials[1], "progress") == 0.2


@pytest.mark.parametrize("change, words", [
    ({"outcome": "maybe"}, "outcome must be one of success, failure, knock_away, void"),
    ({"outcome": "void"}, "needs its void_reason"),
    ({"void_reason": "x"}, "for a void trial only"),
    ({"progress": 1.5}, "progress must be a number in [0, 1]"),
    ({"checkpoint_sha256": "main"}, "checkpoint_sha256 must be 64 hex digits"),
    ({"ended_at": "2026-12-08T09:00:00Z"}, "is before started_at"),
    ({"started_at": "yesterday"}, "ISO-8601"),
    ({"operator": ""}, "operator is empty"),
    ({"seed": -1}, "seed must be a whole number >= 0"),
])
def test_a_bad_trial_is_refused_naming_the_field(change, words):
    with pytest.raises(ValueError) as exc:
        _trial(**{"seed": 1, **change})
    assert words in str(exc.value)


def test_torn_and_bad_lines_are_set_apart_never_coerced(tmp_path):
    append_trial(tmp_path, _trial(1))
    with open(tmp_path / rd.REAL, "a") as f:
        f.write('{"schema": 1, "seed": "2"}\n')
        f.write('{"schema": 1, "arm": "oracle", "se')
    got = read_trials(tmp_path)
    assert [t.seed for t in got.trials] == [1]
    assert [b.line_no for b in got.bad] == [2, 3] and got.bad[1].torn
    assert "seed must be a whole number" in got.bad[0].reason


def test_a_secret_typed_as_an_operator_is_redacted(tmp_path):
    append_trial(tmp_path, _trial(1, operator="ana HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123"))
    assert "hf_abcdefghij" not in (tmp_path / rd.REAL).read_text()


def test_predictions_round_trip_and_refuse_more_successes_than_rollouts(tmp_path):
    append_prediction(tmp_path, Prediction("oracle", 5, 20, 17, 1.0, 0.8))
    assert read_predictions(tmp_path, "oracle").by_seed[5].successes == 17
    with pytest.raises(ValueError, match="successes <= k"):
        append_prediction(tmp_path, Prediction("oracle", 6, 20, 21, 1.0))


# ---------------------------------------------------------------- the registration and its selection


def test_the_selection_is_uniform_deterministic_and_the_same_for_every_arm(plan):
    doc = load(plan)
    assert not doc.problems
    chosen = selected_seeds(doc, "oracle")
    assert len(chosen) == 10 and len(set(chosen)) == 10 and set(chosen) <= set(range(40))
    assert chosen == selected_seeds(doc, "clumsy") == select_seeds(range(40), 10, 20261207)
    assert select_seeds(range(40), 10, 1) != chosen
    assert sorted(read_order(range(40), 20261207)) == list(range(40))
    # uniform: over many selection seeds each seed is drawn about n/N of the time
    counts = [0] * 40
    for s in range(2000):
        for x in select_seeds(range(40), 10, s):
            counts[x] += 1
    assert all(abs(c / 2000 - 0.25) < 0.05 for c in counts)


@pytest.mark.parametrize("real, field, words", [
    ("{trials: 1, selection_seed: 3}", "reads.real.trials", "must be a whole number of real trials >= 2"),
    ("{trials: 50, selection_seed: 3}", "reads.real.trials", "50 real trials but the protocol has 40 sim seeds"),
    ("{trials: 5}", "reads.real.selection_seed", "must be a whole number >= 0"),
    ("{trials: 5, selection_seed: 3, metric: speed}", "reads.real.metric", "unknown metric 'speed'"),
    ("{trials: 5, selection_seed: 3, arms: [ghost]}", "reads.real.arms[0]", "unknown arm 'ghost'"),
    ("{trials: 5, selection_seed: 3, sim_k: 0}", "reads.real.sim_k", "1..1000"),
    ("{trials: 5, selection_seed: 3, colour: red}", "reads.real.colour", "unknown real-read field"),
])
def test_a_bad_registration_names_its_field_and_line(tmp_path, real, field, words):
    p = tmp_path / "bad.md"
    p.write_text(PLAN.replace("{trials: 10, alpha: 0.1, metric: success, selection_seed: 20261207, sim_k: 20, jitter_cm: 1.0}",
                              real))
    probs = load(p).problems
    assert any(pr.field == field and words in pr.message and pr.line == 17 for pr in probs), probs


# ---------------------------------------------------------------- the read


def _record(run: Path, plan: Path, outcomes: dict[int, str], **kw) -> None:
    for s, o in outcomes.items():
        append_trial(run, _trial(s, o, **kw))


def test_the_read_pairs_each_selected_seed_with_its_sim_prediction(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    for s in range(40):
        append_prediction(oracle_run, Prediction("oracle", s, 20, 19 if s in chosen[:8] else 2, 1.0))
    _record(oracle_run, plan, {s: "success" if i < 8 else "failure" for i, s in enumerate(chosen)})
    read = read_run_real(doc, "oracle", oracle_run)
    assert read.registered, read.problems
    assert (read.successes, read.n) == (8, 10) and not read.owed
    assert [p.seed for p in read.pairs] == list(chosen) and read.pairs[0].sim_k == 20 and read.pairs[0].f == 0.95
    assert read.wilson[0] < 0.8 < read.wilson[1] and read.clopper_pearson[0] < read.wilson[0]
    assert read.ppi_betting[0] <= read.ppi_estimate <= read.ppi_betting[1]
    assert read.verdict == "consistent" and read.correlation > 0.9 and read.sim_helps
    assert "8/10 real successes" in read.sentence() and "consistent with the rig" in read.sentence()
    assert "20 sim rollouts per seed jittered within ±1 cm" in read.prediction_source


def test_without_jittered_predictions_the_sim_row_stands_in_and_says_so(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    _record(oracle_run, plan, {s: "failure" for s in chosen})
    rows = [json.loads(x) for x in (oracle_run / rd.ROWS).read_text().splitlines()]
    read = read_run_real(doc, "oracle", oracle_run, rows)
    assert "not jittered" in read.prediction_source and "the registered 20" in read.prediction_source
    assert read.verdict == "optimistic" and "the sim is optimistic" in read.sentence()
    assert read.sim_helps is False and NO_HELP in read.sentence()  # real never succeeds: nothing to explain


def test_unselected_void_and_repeated_trials_are_kept_apart(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    other = next(s for s in range(40) if s not in chosen)
    append_trial(oracle_run, _trial(chosen[0], "void", void_reason="the gripper cable caught"))
    _record(oracle_run, plan, {chosen[0]: "success", chosen[1]: "failure", other: "success"})
    append_trial(oracle_run, _trial(chosen[1], "success", started_at="2026-12-08T11:00:00Z", ended_at="2026-12-08T11:01:00Z"))
    read = read_run_real(doc, "oracle", oracle_run)
    assert read.exploratory == [other] and read.voids == 1 and read.repeats == 1
    assert (read.successes, read.n) == (1, 2) and read.owed == list(chosen[2:])
    assert owed_seeds(doc, "oracle", oracle_run) == chosen[2:] and owed_seeds(doc, "nobody", oracle_run) == ()
    assert "8 of 10 still owed" in read.sentence()


def test_provenance_problems_say_the_read_is_not_the_registered_one(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    _record(oracle_run, plan, {chosen[0]: "success"}, selection_seed=7)
    _record(oracle_run, plan, {chosen[1]: "success"}, started_at="2026-12-01T10:00:00Z")
    read = read_run_real(doc, "oracle", oracle_run)
    assert not read.registered
    text = " ".join(read.problems)
    assert "selection seed 7" in text and "selection changed after the first trial" in text
    assert "before the real read was frozen" in text
    assert "NOT the registered read" in read.sentence()


def test_real_jsonl_edited_after_a_report_is_a_provenance_problem(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    rows = [json.loads(x) for x in (oracle_run / rd.ROWS).read_text().splitlines()]
    _record(oracle_run, plan, {chosen[0]: "failure", chosen[1]: "failure"})
    reported = list(real_digest(oracle_run))
    append_trial(oracle_run, _trial(chosen[2]))  # trials added after the report: fine
    assert read_run_real(doc, "oracle", oracle_run, rows, reported=reported).registered
    text = (oracle_run / rd.REAL).read_text()
    (oracle_run / rd.REAL).write_text(text.replace('"failure"', '"success"', 1))
    read = read_run_real(doc, "oracle", oracle_run, rows, reported=reported)
    assert any("edited after a report" in p for p in read.problems)


def test_an_arm_without_a_registered_read_has_none(tmp_path):
    p = tmp_path / "plain.md"
    p.write_text(PLAN.replace("  real: {trials: 10, alpha: 0.1, metric: success, selection_seed: 20261207, sim_k: 20, "
                              "jitter_cm: 1.0}\n", ""))
    assert selected_seeds(load(p), "oracle") == () and read_run_real(load(p), "oracle", tmp_path) is None


def test_across_arms_pearson_and_mmrv_need_two_arms_with_trials(plan, oracle_run):
    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    _record(oracle_run, plan, {s: "success" for s in chosen})
    rows = [json.loads(x) for x in (oracle_run / rd.ROWS).read_text().splitlines()]
    one = read_run_real(doc, "oracle", oracle_run, rows)
    assert cross_arm([one]) is None
    worse = read_run_real(doc, "oracle", oracle_run, rows)
    worse.arm, worse.mean_real, worse.mean_sim_all = "clumsy", 0.3, 0.5
    got = cross_arm([one, worse])
    assert got.mmrv == 0.0 and got.pearson == pytest.approx(1.0) and "MMRV 0.000" in got.sentence()


# ---------------------------------------------------------------- import-real


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text("seed,outcome,void_reason,progress,started_at,ended_at\n" + "\n".join(rows) + "\n")
    return path


def test_import_writes_every_row_once_and_says_what_is_owed(plan, oracle_run, tmp_path, capsys):
    chosen = selected_seeds(load(plan), "oracle")
    f = _csv(tmp_path / "session.csv", [f"{chosen[0]},success,,0.9,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z",
                                         f"{chosen[1]},void,arm e-stopped,,2026-12-08T10:02:00Z,2026-12-08T10:03:00Z"])
    args = ["import-real", str(plan), str(f), "--arm", "oracle", "--run", str(oracle_run), "--operator", "ana",
            "--checkpoint-sha256", SHA]
    assert prereg_main(args) == 0
    out = capsys.readouterr().out
    assert "wrote 2 trial(s) of oracle" in out and "9 selected seed(s) still owed" in out
    assert prereg_main(args) == 0 and "wrote 0 trial(s)" in capsys.readouterr().out
    got = read_trials(oracle_run)
    assert [t.outcome for t in got.trials] == ["success", "void"]
    assert got.trials[0].source == "import:session.csv" and got.trials[0].selection_seed == 20261207


def test_import_is_all_or_nothing_with_every_problem_by_line(plan, oracle_run, tmp_path, capsys):
    f = _csv(tmp_path / "bad.csv", ["1,success,,,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z",
                                     "x,success,,,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z",
                                     "3,maybe,,,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z",
                                     "4,void,,,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z"])
    rc = prereg_main(["import-real", str(plan), str(f), "--arm", "oracle", "--run", str(oracle_run),
                      "--operator", "ana", "--checkpoint-sha256", SHA])
    err = capsys.readouterr().err
    assert rc == 2 and "3 problem(s), nothing imported" in err
    assert "bad.csv:3: seed: 'x' is not a whole number" in err and "bad.csv:4: outcome: 'maybe'" in err
    assert "bad.csv:5: a void trial needs its void_reason" in err
    assert not (oracle_run / rd.REAL).exists()


def test_import_refuses_an_arm_without_a_read_a_wrong_run_and_a_missing_column(plan, oracle_run, tmp_path, capsys):
    f = _csv(tmp_path / "ok.csv", ["1,success,,,2026-12-08T10:00:00Z,2026-12-08T10:01:00Z"])
    assert prereg_main(["import-real", str(plan), str(f), "--arm", "oracle", "--run", str(oracle_run)]) == 2
    assert "operator is missing" in capsys.readouterr().err
    assert prereg_main(["import-real", str(plan), str(f), "--arm", "clumsy", "--run", str(oracle_run),
                        "--operator", "a", "--checkpoint-sha256", SHA]) == 2
    assert "a run of arm 'oracle', not 'clumsy'" in capsys.readouterr().err
    (tmp_path / "odd.csv").write_text("seed,result\n1,ok\n")
    assert prereg_main(["import-real", str(plan), str(tmp_path / "odd.csv"), "--arm", "oracle", "--run",
                        str(oracle_run)]) == 2
    assert "unknown column(s) 'result'" in capsys.readouterr().err


def test_import_reads_json_lines_with_a_success_column(plan, oracle_run, tmp_path):
    f = tmp_path / "lerobot.jsonl"
    f.write_text(json.dumps({"seed": 2, "success": "true", "operator": "bo", "checkpoint_sha256": SHA,
                             "started_at": "2026-12-08T10:00:00Z", "ended_at": "2026-12-08T10:00:30Z"}) + "\n")
    assert prereg_main(["import-real", str(plan), str(f), "--arm", "oracle", "--run", str(oracle_run)]) == 0
    assert read_trials(oracle_run).trials[0].outcome == "success"


def test_an_amendment_registers_real_trials_for_the_arms_it_adds_only(plan):
    before = selected_seeds(load(plan), "oracle")
    amend(plan, why="a steadier oracle, drawn again", data={
        "arms": [{"name": "steady", "policy": "scripted", "grasp_miss": 0.1}],
        "reads": {"real": {"trials": 5, "alpha": 0.1, "selection_seed": 99}}})
    freeze(plan, now="2026-12-09T00:00:00Z", commit="0" * 40)
    doc = load(plan)
    assert not doc.problems
    assert selected_seeds(doc, "oracle") == before  # the base arms keep the read frozen with them
    assert selected_seeds(doc, "steady") == select_seeds(range(40), 5, 99)


# ---------------------------------------------------------------- the report


def test_the_report_states_the_real_read_in_results_md_json_and_the_story(plan, oracle_run, tmp_path):
    from prereg.outputs.report import build_report
    from prereg.stats.story import Story

    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    for s in range(40):
        append_prediction(oracle_run, Prediction("oracle", s, 20, 20, 1.0))
    _record(oracle_run, plan, {s: "failure" for s in chosen})
    (oracle_run / rd.STATUS).write_text(json.dumps({"state": "done", "updated_at": "2026-12-07T13:00:00Z"}))
    build_report(plan, {"oracle": oracle_run}, append=False, unregistered=True)
    md = (oracle_run / rd.RESULTS).read_text()
    assert "### Real trials: oracle" in md and "0/10 real successes" in md and "the sim is optimistic" in md
    assert f"| {chosen[0]} | 1.00 | 20/20 | failure | 0 |" in md
    res = json.loads((oracle_run / rd.RESULTS_JSON).read_text())
    assert res["real"]["oracle"]["verdict"] == "optimistic" and res["real"]["oracle"]["recorded"][0] == 10
    story = Story.from_dict(res["story"])
    assert (story.arms[0].successes, story.arms[0].n) == (30, 40)  # the sim read: its rows only, never the real trials
    story = Story.from_dict(res["story"])
    assert story.real[0].verdict == "optimistic" and ("real", "Real trials: " + story.real[0].sentence) in story.basis()
    assert "Real trials: oracle real: 0/10" in (oracle_run / "results.html").read_text()
    # an edit of the trials the report read is caught by the next report, and stays caught
    text = (oracle_run / rd.REAL).read_text()
    (oracle_run / rd.REAL).write_text(text.replace('"failure"', '"success"', 1))
    for _ in range(2):
        build_report(plan, {"oracle": oracle_run}, append=False, unregistered=True)
        res = json.loads((oracle_run / rd.RESULTS_JSON).read_text())
        assert "edited after a report" in res["real"]["oracle"]["sentence"]


def test_validate_prints_the_registered_read_and_its_seeds_in_order(plan, capsys):
    assert prereg_main(["validate", str(plan)]) == 0
    out = capsys.readouterr().out
    chosen = selected_seeds(load(plan), "oracle")
    assert "real trials of oracle: 10 real trials on sim seeds drawn by selection seed 20261207" in out
    assert "seeds in order: " + ", ".join(map(str, chosen)) in out


def test_a_progress_read_pairs_the_operators_share_with_the_sims_mean_progress(tmp_path):
    p = tmp_path / "progress.md"
    p.write_text(PLAN.replace("metric: success", "metric: progress"))
    freeze(p, now="2026-12-07T12:00:00Z", commit="0" * 40)
    run = tmp_path / "run"
    run.mkdir()
    doc = load(p)
    chosen = selected_seeds(doc, "oracle")
    for s in range(40):
        append_prediction(run, Prediction("oracle", s, 20, 10, 1.0, 0.5))
    for i, s in enumerate(chosen):
        append_trial(run, _trial(s, "failure", progress=0.5 + (0.05 if i % 2 else -0.05)))
    read = read_run_real(doc, "oracle", run)
    assert read.registered and read.n == 10 and read.mean_real == pytest.approx(0.5)
    assert read.wilson is None and read.verdict == "consistent" and read.pairs[0].f == 0.5
    assert "real mean progress 0.50 over 10" in read.sentence()
    # a trial without a progress cannot be read under the progress metric: counted apart, its seed stays owed
    other = tmp_path / "run2"
    other.mkdir()
    append_trial(other, _trial(chosen[0], "success"))
    again = read_run_real(doc, "oracle", other)
    assert again.unscored == 1 and again.n == 0 and chosen[0] in again.owed


def test_the_registrations_results_give_pearson_and_mmrv_across_arms_with_trials(plan, oracle_run, tmp_path):
    from prereg.outputs.report import build_report

    doc = load(plan)
    chosen = selected_seeds(doc, "oracle")
    clumsy = tmp_path / "runs" / "clumsy-1"
    clumsy.mkdir()
    (clumsy / rd.MANIFEST).write_text(json.dumps({"run_id": "clumsy-1", "arm": "clumsy"}))
    (clumsy / rd.ROWS).write_text("".join(json.dumps(make_row(s, success=s % 2 == 0)) + "\n" for s in range(40)))
    for run, arm, wins in ((oracle_run, "oracle", 9), (clumsy, "clumsy", 4)):
        (run / rd.STATUS).write_text(json.dumps({"state": "done", "updated_at": "2026-12-07T13:00:00Z"}))
        for i, s in enumerate(chosen):
            append_trial(run, _trial(s, "success" if i < wins else "failure", arm=arm))
    rep = build_report(plan, {"oracle": oracle_run, "clumsy": clumsy}, append=False, unregistered=True)
    text = rep.registration_md.read_text()
    assert "## Sim against real across arms" in text and "MMRV 0.000" in text
    assert "| oracle | 0.750 | 0.900 |" in text and "| clumsy | 0.500 | 0.400 |" in text
