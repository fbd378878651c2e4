"""Comparison runs (issue 24): `fontaine-eval --prereg DOC --arms A,B` runs both arms of a registered
comparison in one run directory, interleaved by seed, and stops when the comparison decides.

The end-to-end tests launch the scripted oracle against itself at two skills (its seeded `grasp_miss`
knob): the shipped CPU example (prereg/examples/compare.md: 0.5 against 0.1) once, uninterrupted; the
other comparisons pit 0.9 against 0.1, which their registered tests decide in 8-10 seeds rather than
15-19 (about half the episodes). A run that several tests read is a module fixture, launched once.
The bad-input tests run nothing."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from tests.helpers import (
    REPO,
    decide_on_rows,
    launch_detached,
    read_rows,
    read_status,
    run_eval,
    run_eval_here,
    stable,
    wait_until,
)

COMPARE = REPO / "prereg" / "examples" / "compare.md"
DEMO = REPO / "prereg" / "examples" / "demo.md"
ARMS = ("--prereg", str(COMPARE), "--arms", "clumsy,steady")
DECIDED_AT = 19  # seeds 0-18: the 8th seed only steady wins (the discordant e-process reaches 2/alpha = 40)
SWAPPED_AT = 10  # SWAPPED (clumsy at grasp_miss 0.9): only steady wins on seeds 0-9 but 4 and 5 (draws 0.92, 0.97)


@pytest.mark.parametrize("argv, needle", [
    (["--arms", "a,b"], "--arms needs --prereg FILE"),
    ([*ARMS, "--ray-shards", "2"], "--ray-shards / --ray-gpus-per-shard / --ray-dashboard need --ray ADDRESS"),
    (["--prereg", str(COMPARE), "--arms", "clumsy"], "name two different arms"),
    (["--prereg", str(COMPARE), "--arms", "steady,steady"], "name two different arms"),
    ([*ARMS, "--arm", "steady"], "give --arm NAME (one arm) or --arms A,B"),
    ([*ARMS, "--workers", "3"], "--workers: the frozen pre-registration decides this"),
    (["--prereg", str(DEMO), "--arms", "scripted,tiny-flow"], "no frozen comparison of scripted and tiny-flow"),
    (["--prereg", str(COMPARE), "--arms", "clumsy,nimble"], "no arm 'nimble'"),
    (["--resume", "/nonexistent/run", "--arms", "clumsy,steady"], "the run's manifest decides this"),
])
def test_bad_comparison_launches_are_one_line_and_exit_2(argv, needle, capsys, tmp_path):
    assert main([*argv, "--run-dir", str(tmp_path / "r")] if "--resume" not in argv else argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


SWAPPED = """---
fontaine: fontaine-prereg/1
id: t-compare
title: a comparison whose B is the clumsy arm
created: 2026-12-01
arms:
  - name: steady
    policy: scripted
    grasp_miss: 0.1
  - name: clumsy
    policy: scripted
    grasp_miss: 0.9
protocol:
  seeds: 0-39
  episode_seconds: 20
  workers: 2
  video_draw: "seeds:0"
reads:
  primary: successes
gates:
  gpu_hours: 0.05
decision_rules:
  - if: clumsy.successes < steady.successes
    then: the clumsy arm is worse
comparison: {arms: [steady, clumsy], metric: success, test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 30}
---

Plain words.
"""


@pytest.fixture(scope="module")
def swapped_run(tmp_path_factory):
    """SWAPPED run once to its decision, uninterrupted: (its document, its run directory, fontaine-eval's
    output). Read by the test below, and the reference the stopped-and-resumed run must equal."""
    from prereg.document.seal import freeze

    base = tmp_path_factory.mktemp("swapped")
    doc = base / "swapped.md"
    doc.write_text(SWAPPED)
    freeze(doc)
    run_dir = base / "run"
    out = run_eval("--prereg", str(doc), "--arms", "clumsy,steady", "--run-dir", str(run_dir))  # registered order wins
    return doc, run_dir, out


@pytest.mark.slow
def test_a_comparison_run_interleaves_the_arms_and_stops_when_b_is_worse(swapped_run):
    _, run_dir, out = swapped_run
    assert out.returncode == 3, out.stdout + out.stderr
    assert "arms steady and clumsy interleaved by seed" in out.stdout and "30 seeds" in out.stdout  # max_seeds caps
    status = read_status(run_dir)
    assert status["stop"]["by"] == "decided" and status["comparison"]["outcome"] == "B worse"
    assert status["stop"]["detail"].startswith(f"(comparison) clumsy worse than steady at {SWAPPED_AT}/30 seeds")
    assert status["total"] == 60 and status["arms"] == ["steady", "clumsy"]
    rows = read_rows(run_dir)
    order = [(r["arm"], r["seed"]) for r in rows]
    # seed k of both arms is dispatched together; rows finish in any order (a success ends its episode early),
    # so what holds is that both arms ran seed 0 and neither arm got ahead by more than the 2 in flight
    assert {("steady", 0), ("clumsy", 0)} <= set(order)
    per_arm = {a: sum(1 for x, _ in order if x == a) for a in ("steady", "clumsy")}
    assert abs(per_arm["steady"] - per_arm["clumsy"]) <= 2, per_arm
    # issue 47: the episodes in flight at the decision are cancelled, never rows, owed nothing
    assert max(s for _, s in order) < 30 and _rows_after_the_stop(out.stdout) == 0
    cancelled = {tuple(j) for j in status.get("cancelled_seeds") or []}
    assert len(cancelled) <= 2 and not cancelled & set(order) and status["lost_seeds"] == []
    videos = sorted(p.name for p in (run_dir / "videos").iterdir())
    assert videos == ["rollout_clumsy_seed000.mp4", "rollout_steady_seed000.mp4"]  # one per arm, never overwritten
    assert {r["video"] for r in rows if r["seed"] == 0} == {f"videos/{v}" for v in videos}
    assert "arm steady: successes" in out.stdout and "comparison    clumsy worse than steady" in out.stdout


def _decision_on_the_draws(doc, n: int):
    """The first decision `decide` reads, in plan order, on the outcomes the oracle's skill fixes before
    anything runs: an arm succeeds on the seeds whose skill draw is at or above its grasp_miss (docs/prereg.md,
    "Arms of known skill": with no miss, every seed succeeds in 20 s). What an uninterrupted run stops on."""
    from engine.policies.scripted import skill_draw
    from prereg.document.read import load

    d = load(doc)
    (spec,) = [sm.comparison for sm in d.sections if sm.comparison is not None]
    miss = {a.name: a.grasp_miss or 0.0 for a in d.arms()}
    draws = [skill_draw(s) for s in range(n)]
    a, b = ([x >= miss[arm] for x in draws] for arm in (spec.arm_a, spec.arm_b))
    return next(dec for length in range(1, n + 1) if (dec := decide_on_rows(spec, a, b, length, n)) is not None)


@pytest.mark.slow
@pytest.mark.parametrize("test,words", [("sprt", "discordant-pair SPRT designed at 0.5 vs 0.9"),
                                        ("optimal", "discordant-pair test from the optimum designed at 0.5 vs 0.9")])
def test_a_registered_sprt_stops_a_real_run_when_b_is_worse_and_for_futility(tmp_path, test, words):
    """test: sprt (prereg/stats/paired_sprt.py) and test: optimal (paired_optimal.py) through the real driver:
    clumsy (grasp_miss 0.9) against steady (0.1) is decided "B worse" at the seed the test reads on the plan
    prefix of the oracle's known outcomes (9 and 8 of 40; clumsy at 0.5 took 16 and 15); two arms of the
    same skill share every seed's draw, so no seed is discordant and the run stops for futility within a
    few seeds, claiming nothing."""
    from prereg.document.seal import freeze

    sprt = f'test: {test}, assumed_rates: [0.9, 0.5], alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 40'
    text = (SWAPPED.replace("test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 30", sprt)
            .replace('video_draw: "seeds:0"', "video_draw: none"))
    doc = tmp_path / "sprt.md"
    doc.write_text(text)
    freeze(doc)
    run_dir = tmp_path / "run"
    out = run_eval("--prereg", str(doc), "--arms", "steady,clumsy", "--run-dir", str(run_dir))
    assert out.returncode == 3, out.stdout + out.stderr
    status = read_status(run_dir)
    assert status["comparison"]["outcome"] == "B worse" and status["stop"]["by"] == "decided"
    assert words in status["stop"]["detail"]
    expected = _decision_on_the_draws(doc, 40)
    assert (expected.outcome, status["comparison"]["at"]) == ("B worse", expected.at)
    same = tmp_path / "same.md"
    same.write_text(text.replace("grasp_miss: 0.9", "grasp_miss: 0.1"))
    freeze(same)
    run_dir = tmp_path / "run-same"
    out = run_eval("--prereg", str(same), "--arms", "steady,clumsy", "--run-dir", str(run_dir))
    assert out.returncode == 3, out.stdout + out.stderr
    status = read_status(run_dir)
    assert status["comparison"]["outcome"] == "futile" and status["comparison"]["at"] < 10
    assert "stopped for futility" in status["stop"]["detail"] and status["comparison"]["episodes_saved"] > 60


MIXED = """---
fontaine: fontaine-prereg/1
id: t-mixed
title: a model served in the driver against the oracle in the workers
created: 2026-12-01
arms:
  - name: oracle
    policy: scripted
  - name: tiny
    policy: molmoact2-discrete
    checkpoint: tiny
    revision: local
    decode: grammar-masked
    convmap: official
    dtype: fp32
protocol:
  seeds: 0-39
  episode_seconds: 2
  workers: 2
  video_draw: none
  record_predicts: true
reads:
  primary: successes
gates:
  gpu_hours: 0.05
decision_rules:
  - if: tiny.successes < oracle.successes
    then: the model is worse
comparison: {arms: [oracle, tiny], metric: success, test: savi, alpha: 0.05, power: 0.8, minimum_effect: 0.2, max_seeds: 3}
---

Plain words.
"""


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """MIXED run once to its end: (its run directory, fontaine-eval's output). Its 40 planned seeds are
    capped at 3 by max_seeds; nothing decides within 3 seeds. The model's decode is the grammar-masked one
    (0.18 s a tiny predict on these machines, the reference decode 1.24 s: a random model never ends its
    sequence), and the run is made in this process (tests.helpers.run_evals_here): what is read here is
    where each arm is served, not how a run is launched, and the tiny model's imports cost ~10 s a process."""
    from prereg.document.seal import freeze

    base = tmp_path_factory.mktemp("mixed")
    doc = base / "mixed.md"
    doc.write_text(MIXED)
    freeze(doc)
    run_dir = base / "run"
    return run_dir, run_eval_here("--prereg", str(doc), "--arms", "oracle,tiny", "--run-dir", str(run_dir), "--device", "cpu")


@pytest.mark.slow
def test_a_served_model_and_a_local_oracle_run_side_by_side(mixed_run):
    """One arm served in the driver (its predicts batched there), the other local to each worker."""
    run_dir, out = mixed_run
    assert out.returncode == 0, out.stdout + out.stderr
    rows = read_rows(run_dir)
    assert sorted((r["arm"], r["seed"]) for r in rows) == [(a, s) for a in ("oracle", "tiny") for s in range(3)]
    assert all(r["status"] == "ok" for r in rows)
    tiny = [r for r in rows if r["arm"] == "tiny"]
    assert all(r["predicts"] > 0 and r["mean_batch"] >= 1 for r in tiny)
    assert all(r["zero_fallbacks"] == 0 for r in rows if r["arm"] == "oracle")
    status = read_status(run_dir)
    assert status["predict_rounds"] > 0 and status["comparison"]["outcome"] == "undecided"
    resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
    assert resolved["oracle"]["served"] == "in each worker" and resolved["tiny"]["device"] == "cpu"
    trail = [json.loads(ln) for ln in (run_dir / "predicts.jsonl").read_text().splitlines()]
    assert len(trail) == sum(r["predicts"] for r in tiny) and {t["arm"] for t in trail} == {"tiny"}


@pytest.mark.slow
def test_a_comparison_that_runs_every_seed_undecided_is_done(mixed_run):
    """The decision read on the last pair of max_seeds (3 of the 40 planned) is "undecided at max seeds":
    nothing is left to stop, so the run ends done, exit 0. Read on the run above: the driver reads the
    comparison the same way wherever each arm's policy is served."""
    run_dir, out = mixed_run
    assert out.returncode == 0, out.stdout + out.stderr  # the plan ran to its end: done, not stopped
    status = read_status(run_dir)
    assert status["state"] == "done" and status["stop"] is None and (status["done"], status["total"]) == (6, 6)
    assert status["comparison"]["outcome"] == "undecided" and status["comparison"]["at"] == 3


def _rows_after_the_stop(log: str) -> int:
    """Progress lines the driver wrote after it asked for the stop (rows finish out of plan order,
    so a seed past the decision may have finished before it; after it, only those in flight)."""
    lines = log.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(("stopping at the episode boundary", "stopping now")))
    return sum(1 for ln in lines[at + 1:] if ln.startswith("["))


def _pairs(rows):
    return {(r["arm"], r["seed"]): r for r in rows}


@pytest.fixture(scope="module")
def shipped_run(tmp_path_factory):
    """The shipped CPU example run once, detached and uninterrupted, read by the test below."""
    run_dir = tmp_path_factory.mktemp("shipped") / "cmp"
    proc = launch_detached(run_dir, *ARMS)
    assert proc.wait(timeout=300) == 3, (run_dir / "driver.log").read_text()
    return run_dir


@pytest.mark.slow
def test_the_shipped_comparison_decides_before_its_max_seeds(shipped_run):
    run_dir = shipped_run
    status = read_status(run_dir)
    assert status["state"] == "stopped" and status["stop"]["by"] == "decided"
    assert status["stop"]["detail"].startswith("(comparison) steady better than clumsy at 19/60 seeds")
    c = status["comparison"]
    assert (c["outcome"], c["at"], c["max_seeds"]) == ("B better", DECIDED_AT, 60)
    assert c["episodes_saved"] == 2 * (60 - DECIDED_AT) and status["arms"] == ["clumsy", "steady"]
    rows = read_rows(run_dir)
    assert {r["arm"] for r in rows} == {"clumsy", "steady"} and all(r["status"] == "ok" for r in rows)
    by = _pairs(rows)
    assert all((arm, s) in by for arm in ("clumsy", "steady") for s in range(DECIDED_AT))
    assert _rows_after_the_stop((run_dir / "driver.log").read_text()) == 0  # in flight at the decision: cancelled
    assert status["done"] == len(rows) and status["total"] == 120
    # known skill: steady misses only where clumsy misses too (the arms share each seed's draw)
    for s in range(DECIDED_AT):
        assert not (by[("clumsy", s)]["success"] and not by[("steady", s)]["success"])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [(a["arm"], a["policy"]["grasp_miss"]) for a in manifest["arms"]] == [("clumsy", 0.5), ("steady", 0.1)]
    assert manifest["comparison"]["test"] == "savi" and manifest["arm"] == "clumsy-vs-steady"
    summary = json.loads((run_dir / "rows.json").read_text())["summary"]
    assert summary["comparison"]["outcome"] == "B better"
    assert summary["arms"]["steady"]["successes"] > summary["arms"]["clumsy"]["successes"]

    # a resume of a decided run says so and runs nothing more: no worker is started to run nothing
    out = run_eval("--resume", str(run_dir))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "stopping now, before any episode of this session: decided: (comparison)" in out.stdout
    assert len(read_rows(run_dir)) == len(rows)
    resumed = read_status(run_dir)
    assert resumed["stop"]["detail"] == status["stop"]["detail"] and resumed["executor"] is None


@pytest.mark.slow
def test_a_stopped_comparison_resumes_to_the_same_decision(tmp_path, swapped_run):
    """SWAPPED stopped by a STOP after two rows, then resumed: it reaches the uninterrupted run's decision
    at the same seed, with the same rows."""
    doc, ref, _ = swapped_run
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, "--prereg", str(doc), "--arms", "clumsy,steady")
    wait_until(lambda: len(read_rows(run_dir)) >= 2, timeout=180, what="two rows")
    (run_dir / "STOP").write_text(json.dumps({"by": "user", "detail": "a break"}))
    assert proc.wait(timeout=120) == 3
    first = read_status(run_dir)
    assert first["stop"]["by"] == "user" and first["comparison"] is None
    assert len(read_rows(run_dir)) < 2 * SWAPPED_AT
    out = run_eval("--resume", str(run_dir))
    assert out.returncode == 3, out.stdout + out.stderr
    status = read_status(run_dir)
    assert status["stop"]["by"] == "decided" and status["comparison"]["at"] == SWAPPED_AT
    assert status["stop"]["detail"] == read_status(ref)["stop"]["detail"]
    rows, ref_rows = _pairs(read_rows(run_dir)), _pairs(read_rows(ref))
    for key in ((arm, s) for arm in ("clumsy", "steady") for s in range(SWAPPED_AT)):
        assert stable(rows[key]) == stable(ref_rows[key]), key


def test_a_driver_that_designs_the_optimal_test_says_so_in_its_log_once(tmp_path, monkeypatch):
    """Before any episode the driver computes a designed test (seconds, silent: the console showed a run
    `starting` meanwhile): on a machine that has not kept the design, its log says so as it starts; a driver
    after it reads the kept design back and says nothing."""
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig, comparison_record
    from engine.run.decisions import PlanDecisions
    from prereg.document.comparison_spec import ComparisonSpec
    from prereg.stats import paired_optimal

    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path / "cache"))
    spec = ComparisonSpec("A", "B", "success", "optimal", minimum_effect=0.4, assumed_rates=(0.5, 0.9), max_seeds=30)
    arms = [{"arm": a, "policy": PolicySpec().as_dict()} for a in ("A", "B")]
    cfg = RunConfig(run_id="r", arm="A-vs-B", arms=arms, comparison=comparison_record(spec), policy=PolicySpec(),
                    seeds=list(range(30)))
    logs = []
    paired_optimal.make_walk_test.cache_clear()
    try:
        for _ in range(2):  # two drivers: the second in a new process (only the kept file remains)
            lines = []
            PlanDecisions(cfg, tmp_path, log=lines.append).prepare()
            logs.append(lines)
            paired_optimal.make_walk_test.cache_clear()
    finally:
        paired_optimal.make_walk_test.cache_clear()
    (said,) = logs[0]
    assert said.startswith("designing the optimal test for 0.5 -> 0.9 at power 0.8, alpha 0.05, max 30 seeds")
    assert str(tmp_path / "cache" / "designs") in said
    assert logs[1] == []
