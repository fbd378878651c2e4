"""Comparison runs (prereg/stats/comparison.py): STEP read as its authors' package reads it, the paired
discordant e-process, the betting confidence sequence and the fixed-n batch test; type-I by
simulation (10,000 sequences per null case), power and expected seeds against the batch, and the
order-free read at 8 workers. The STEP policy for 100 seeds at alpha/2 = 0.025 is synthesised
by the package once per machine (about 5-10 s) and cached under XDG_CACHE_HOME."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from prereg.document.comparison_spec import SCENE_MAX_DISTANCE_CM, ComparisonSpec
from prereg.document.read import load
from prereg.rundir.rows import rows_by_seed
from prereg.stats.comparison import BETTER, EQUIVALENT, FUTILE, UNDECIDED, VOID, decide, sprt_design
from prereg.stats.comparison_engines import run_betting, run_step
from prereg.stats.operating import batch_seeds, pair_probs, run_sequences, simulate_deltas, simulate_success
from prereg.stats.step import step_oc

ALPHA = 0.05
SIMS = 10_000
N = 100
SE = math.sqrt(ALPHA * (1 - ALPHA) / SIMS)  # Monte Carlo error of a rejection rate at alpha
LAB_SD = (1.325 - 0.147) / 2 / 1.96 * math.sqrt(100)  # CI95 [+0.147, +1.325] on 100 seeds: SE 0.3005 -> SD 3.005 cm


def spec(**kw) -> ComparisonSpec:
    base = dict(arm_a="a", arm_b="b", metric="success", test="step", alpha=ALPHA, minimum_effect=0.15, max_seeds=N)
    base.update(kw)
    return ComparisonSpec(**base)


def rows(outcomes, progress=None) -> dict:
    out = {}
    for s, ok in enumerate(outcomes):
        r = {"seed": s, "success": bool(ok), "status": "ok",
             "progress_final_cm": None if progress is None else float(progress[s])}
        out[s] = r
    return out


# ---------------------------------------------------------------- STEP: the package, read right


def test_our_step_reader_is_the_packages_step_test_state_for_state():
    from sequentialized_barnard_tests import Decision as D
    from sequentialized_barnard_tests import Hypothesis, MirroredStepTest

    class Fixed:  # hands the package the same uniform our reader gets
        v = 0.0

        def random(self, k):
            return np.array([self.v])

    rng = np.random.default_rng(3)
    n = 200  # the package ships this policy (alpha 0.05), so no synthesis here
    for i in range(50):
        pa = rng.uniform(0.05, 0.95)
        pb = pa if i % 3 == 0 else rng.uniform(0.05, 0.95)
        a, b, u = rng.random(n) < pa, rng.random(n) < pb, rng.random(n)
        test = MirroredStepTest(Hypothesis.P0LessThanP1, n, 0.05)
        test.load_existing_policy()  # its constructor swallows an error and loads on the first step (which resets rng)
        fixed = Fixed()
        test.rng = fixed
        theirs = (0, 0)
        for t in range(n):
            fixed.v = u[t]
            r = test.step(int(a[t]), int(b[t]))
            if r.decision != D.FailToDecide:
                theirs = (1 if r.decision == D.AcceptAlternative else 2, t + 1)
                break
        code, when = run_step(a[None], b[None], 2 * 0.05, n, u=u[None])
        assert (int(code[0]), int(when[0])) == theirs, i


def test_step_exact_type_one_is_at_most_alpha_on_a_grid_of_rates():
    worst = max(sum(step_oc(N, ALPHA, p, p)[:2]) for p in np.linspace(0.01, 0.99, 15))
    assert worst <= ALPHA
    better, worse, en = step_oc(N, ALPHA, 0.01, 0.09)
    assert 0.6 < better < 0.7 and worse < 1e-5 and en < 85  # the lab notes' effect, 100 seeds


# ---------------------------------------------------------------- type-I by simulation, 10,000 sequences per null case


@pytest.mark.parametrize("p,rho", [(0.05, 0.0), (0.5, 0.0), (0.3, 0.5), (0.9, 0.3)])
def test_success_tests_keep_type_one_at_alpha(p, rho):
    rng = np.random.default_rng(int(p * 1000) + int(rho * 10))
    a, b = simulate_success(rng, SIMS, N, p, p, rho)
    for test in ("step", "savi", "fixed"):
        code, _ = run_sequences(spec(test=test, minimum_effect=None), N, a=a, b=b)
        rate = np.mean((code == 1) | (code == 2))
        assert rate <= ALPHA + 3 * SE, (test, p, rho, rate)


@pytest.mark.parametrize("sd", [3.0, 40.0])
def test_the_betting_sequence_keeps_type_one_at_alpha(sd):
    rng = np.random.default_rng(int(sd))
    bound = 10.0 if sd < 10 else SCENE_MAX_DISTANCE_CM  # a tight registered bound, and the scene's
    d = simulate_deltas(rng, SIMS, 200, 0.0, sd, bound)
    code, _ = run_betting(d, bound, ALPHA, None)
    assert np.mean(code > 0) <= ALPHA + 3 * SE
    # equivalence is not claimed when the true mean sits at the margin
    d = simulate_deltas(rng, SIMS, 200, 1.0, sd, bound)
    code, _ = run_betting(d, bound, ALPHA, 1.0)
    assert np.mean(code == 3) + np.mean(code == 2) <= ALPHA + 3 * SE


def _replay(s: ComparisonSpec, a, b, workers: int, rng):
    """Rows in completion order (a success ends its episode early), dispatched in plan order with A and B
    together to `workers` workers; the driver asks after every row. The first decision it gets."""
    events = []
    for arm, outs in (("a", a), ("b", b)):
        for seed, ok in enumerate(outs):
            events.append((arm, seed, 2.0 + rng.random() if ok else 10.0 + rng.random()))
    free = [0.0] * workers
    finished = []
    for arm, seed, dur in sorted(events, key=lambda e: (e[1], e[0])):
        w = int(np.argmin(free))
        free[w] += dur
        finished.append((free[w], arm, seed))
    ra, rb = {}, {}
    planned = list(range(len(a)))
    for _, arm, seed in sorted(finished):
        (ra if arm == "a" else rb)[seed] = {"seed": seed, "status": "ok", "success": bool((a if arm == "a" else b)[seed])}
        d = decide(s, ra, rb, planned)
        if d is not None:
            return d
    return None


@pytest.mark.parametrize("test,workers", [("sprt", 1), ("sprt", 8), ("sprt", 32), ("optimal", 8), ("savi", 8)])
def test_successes_finishing_early_do_not_move_the_decision(test, workers):
    """At 1, 8 and 32 workers the first decision the driver gets is the plan-order decision at the same
    seed, under no difference and under the design: so the plan-order type-I and power (exact, for sprt:
    tests/prereg/test_paired_sprt.py) hold whatever the completion order."""
    rng = np.random.default_rng(11 + workers)
    n = 75
    s = spec(test=test, max_seeds=n, assumed_rates=(0.3, 0.6))
    planned = list(range(n))
    outcomes = set()
    for i in range(16):
        pa, pb = (0.45, 0.45) if i % 2 else (0.3, 0.6)
        a, b = rng.random(n) < pa, rng.random(n) < pb
        first = _replay(s, a, b, workers, rng)
        ref = decide(s, rows(a), rows(b), planned)
        assert (first.outcome, first.at) == (ref.outcome, ref.at)
        outcomes.add(ref.outcome)
    assert BETTER in outcomes and len(outcomes) >= 2


# ---------------------------------------------------------------- power and expected seeds vs the batch


def test_lab_success_effect_step_against_the_batch():
    """9% vs 1% (the lab notes), arms independent: STEP at 100 seeds against the exact McNemar test."""
    rng = np.random.default_rng(5)
    a, b = simulate_success(rng, 4000, N, 0.01, 0.09)
    code, seeds = run_sequences(spec(minimum_effect=None), N, a=a, b=b)
    power = np.mean(code == 1)
    assert 0.60 < power < 0.70 and np.mean(code == 2) < 0.005
    bo, ao = pair_probs(0.01, 0.09)
    n_batch = batch_seeds(power, b_only=bo, a_only=ao)
    assert 85 < n_batch < 105
    # measured: E[seeds] about 80 against about 94 for the batch at the same power: 0.86, not the goal's 0.5
    assert 0.75 < seeds.mean() / n_batch < 0.95


def test_lab_progress_effect_the_scene_bound_is_too_wide_to_help():
    """+0.73 cm at SD 3.0 cm: the batch t test needs ~130 seeds for 80%; the betting sequence with the
    scene's bound (272 cm) decides nothing in 400 seeds. With a registered 10 cm bound it needs ~0.73 of the
    batch's seeds at its own 95% power, but ~1.17 at a matched 80% (scripts/comparison_figures.py)."""
    assert LAB_SD == pytest.approx(3.005, abs=0.001)
    assert 125 <= batch_seeds(0.8, delta=0.73, sd=LAB_SD) <= 140
    rng = np.random.default_rng(9)
    d = simulate_deltas(rng, 1000, 400, 0.73, LAB_SD, SCENE_MAX_DISTANCE_CM)
    code, _ = run_betting(d, SCENE_MAX_DISTANCE_CM, ALPHA, None)
    assert np.mean(code == 1) < 0.01
    d = simulate_deltas(rng, 1000, 400, 0.73, LAB_SD, 10.0)
    code, when = run_betting(d, 10.0, ALPHA, None)
    power, seeds = np.mean(code == 1), np.where(code > 0, when, 400).mean()
    assert power > 0.9  # measured 0.95: E[seeds] ~175 against ~240 for the batch at that power (0.73)
    assert 0.6 < seeds / batch_seeds(power, delta=0.73, sd=LAB_SD) < 0.85


# ---------------------------------------------------------------- decide(): the API the driver calls


def test_decide_reads_the_shared_prefix_and_says_why():
    s = spec(test="savi", max_seeds=40)
    planned = list(range(40))
    b = rows([1] * 40)
    a = rows([0] * 40)
    d = decide(s, a, b, planned)
    assert d.outcome == BETTER and d.at == 8 and d.stops_run and d.episodes_saved == 64
    assert "e-value" in d.text and "b 8/8 vs a 0/8" in d.text
    del a[3]  # a gap: only seeds 0-2 are read
    assert decide(s, a, b, planned) is None
    planned = list(range(100))
    a, b = rows([0] * 100), rows([1] * 100)
    for r in b.values():
        r["status"] = "error"  # an error row is a non-success, whatever it says
    d = decide(spec(test="savi"), a, b, planned)
    assert d.outcome == EQUIVALENT and "b 0/" in d.text


def test_decide_is_undecided_at_max_seeds_and_void_past_the_bound():
    s = spec(test="savi", max_seeds=10)
    planned = list(range(30))
    out = [1, 0] * 15
    assert decide(s, rows(out[:9]), rows(out[:9]), planned) is None
    d = decide(s, rows(out), rows(out[::-1]), planned)
    assert d.outcome == UNDECIDED and d.at == 10
    p = spec(metric="progress_final_cm", test="savi", minimum_effect=1.0, max_seeds=30, delta_bound_cm=5.0)
    prog = rows([0] * 30, progress=[0.0] * 30)
    prog_b = rows([0] * 30, progress=[0.5] * 5 + [9.0] + [0.5] * 24)
    d = decide(p, prog, prog_b, planned)
    assert d.outcome == VOID and d.at == 6 and not d.stops_run
    prog_b = rows([0] * 30, progress=[1.5] * 30)
    prog_b[2]["progress_final_cm"] = None  # skipped and counted
    d = decide(p, prog, prog_b, planned)
    assert d.outcome == BETTER and "skipped" in d.text
    assert rows_by_seed(list(prog.values()), planned) == prog


def test_step_and_fixed_decide_through_the_same_api():
    planned = list(range(N))
    a, b = rows([0] * N), rows([1] * N)
    d = decide(spec(), a, b, planned)
    assert d.outcome == BETTER and d.at < 15 and "STEP" in d.text
    d = decide(spec(test="fixed"), a, b, planned)
    assert d.outcome == BETTER and d.at == N and "McNemar" in d.text
    assert decide(spec(test="fixed"), rows([0] * 50), rows([1] * 50), planned) is None


def test_sprt_decides_through_the_same_api_and_says_why():
    s = spec(test="sprt", max_seeds=75, assumed_rates=(0.3, 0.6))
    d = sprt_design(s, 75)
    planned = list(range(75))
    got = decide(s, rows([0] * 75), rows([1] * 75), planned)
    assert got.outcome == BETTER and got.at == d.crit[0] and got.episodes_saved == 2 * (75 - d.crit[0])
    assert "discordant-pair SPRT designed at 0.3 vs 0.6" in got.text and got.values["llr_better"] >= d.h
    got = decide(s, rows([1] * 75), rows([1] * 75), planned)  # every seed concordant: no difference of 0.3
    assert got.outcome == FUTILE and got.at < 10 and got.stops_run and got.episodes_saved == 2 * (75 - got.at)
    assert "stopped for futility" in got.text and "nothing claimed" in got.text
    assert decide(s, rows([1] * 3), rows([1] * 3), planned) is None
    # a max seeds below what the design needs: the boundary alone (level alpha, no futility stop)
    short = spec(test="sprt", max_seeds=20, assumed_rates=(0.3, 0.6))
    assert sprt_design(short, 20).futility == -math.inf
    got = decide(short, rows([1] * 20), rows([1] * 20), list(range(20)))
    assert got.outcome == UNDECIDED and "no futility stop" in got.text
    json.dumps(got.as_dict(), allow_nan=False)  # status.json stays strict JSON (no -Infinity)


def test_savi_on_progress_reads_the_clipped_mean_and_says_so():
    s = spec(metric="progress_final_cm", test="savi", minimum_effect=1.0, max_seeds=200, clip_cm=5.0)
    planned = list(range(200))
    prog_a = rows([0] * 200, progress=[0.0] * 200)
    delta = [2.0] * 200
    delta[3] = -40.0  # a knock-away counts as -5 cm
    got = decide(s, prog_a, rows([0] * 200, progress=delta), planned)
    assert got.outcome == BETTER and got.values["clip_cm"] == 5.0
    assert "clipped to +/-5 cm" in got.text and "mean clipped delta" in got.text


# ---------------------------------------------------------------- the registration


DOC = """---
fontaine: fontaine-prereg/1
id: cmp
title: two arms
created: 2026-12-01
arms:
  - name: a
    policy: scripted
  - name: b
    policy: scripted
protocol:
  seeds: 0-99
  episode_seconds: 20
reads:
  primary: successes
gates:
  gpu_hours: 1
comparison:
  arms: [a, b]
  metric: success
  test: savi
  minimum_effect: 0.15
  max_seeds: 60
---
words
"""


def test_the_registration_is_carried_on_the_model_and_bad_fields_name_their_line(tmp_path):
    good = tmp_path / "cmp.md"
    good.write_text(DOC)
    doc = load(good)
    assert doc.ok, doc.problems
    c = doc.sections[0].comparison
    assert (c.arm_a, c.arm_b, c.test, c.max_seeds, c.alpha, c.line) == ("a", "b", "savi", 60, 0.05, 18)
    bad = tmp_path / "bad.md"
    bad.write_text(DOC.replace("[a, b]", "[a, c]").replace("test: savi", "test: step").replace(
        "metric: success", "metric: progress_final_cm").replace("max_seeds: 60", "max_seeds: 600"))
    probs = {p.field: (p.line, p.message) for p in load(bad).problems}
    assert probs["comparison.arms"][0] == 19 and "unknown arm" in probs["comparison.arms"][1]
    assert "test step compares success rates only" in probs["comparison.test"][1]
    assert "more than the 100 planned" in probs["comparison.max_seeds"][1]


def test_the_registration_of_sprt_and_of_progress_tests(tmp_path):
    """sprt needs assumed rates (its alternative); progress defaults to the paired t test; savi on progress
    needs a clip, which is its estimand; a clip is read only there."""
    def problems(text):
        p = tmp_path / "c.md"
        p.write_text(text)
        doc = load(p)
        return doc, {x.field: x.message for x in doc.problems}

    doc, probs = problems(DOC.replace("test: savi", "test: sprt"))
    assert "test sprt derives its alternative from assumed_rates" in probs["comparison.test"]
    doc, probs = problems(DOC.replace("test: savi", "test: sprt\n  assumed_rates: [0.2, 0.2]"))
    assert not probs and doc.sections[0].comparison.design_rates() == (0.2, 0.35)  # equal: p vs p + minimum_effect
    doc, probs = problems(DOC.replace("test: savi", "test: sprt\n  assumed_rates: [0.9, 0.9]"))
    assert "above 1" in probs["comparison.assumed_rates"]
    prog = DOC.replace("metric: success", "metric: progress_final_cm").replace("minimum_effect: 0.15", "minimum_effect: 1.0")
    doc, probs = problems(prog.replace("  test: savi\n", ""))
    assert not probs and doc.sections[0].comparison.test == "fixed"
    doc, probs = problems(prog)
    assert "needs clip_cm" in probs["comparison.test"] and "clipped" in probs["comparison.test"]
    doc, probs = problems(prog.replace("test: savi", "test: savi\n  clip_cm: 7.5"))
    c = doc.sections[0].comparison
    assert not probs and c.clip_cm == 7.5 and "clipped to +/-7.5 cm" in c.describe()
    doc, probs = problems(DOC.replace("test: savi", "test: savi\n  clip_cm: 7.5"))
    assert "only test savi on progress_final_cm reads a clip" in probs["comparison.clip_cm"]
    doc, probs = problems(prog.replace("test: savi", "test: savi\n  clip_cm: 300"))
    assert "must be a distance in cm in (0, 272.26]" in probs["comparison.clip_cm"]


def test_step_needs_at_least_ten_seeds_said_at_its_line(tmp_path):
    """The package synthesises no STEP policy below n_max 10 (a ValueError that was a launch's crash)."""
    for old, new in (("max_seeds: 60", "max_seeds: 4"), ("seeds: 0-99", "seeds: 0-3\n")):
        text = DOC.replace("test: savi", "test: step").replace(old, new)
        if "0-3" in new:
            text = text.replace("  max_seeds: 60\n", "")
        p = tmp_path / "step.md"
        p.write_text(text)
        (prob,) = [x for x in load(p).problems if x.field == "comparison.max_seeds"]
        assert "STEP is synthesised for at least 10 seeds" in prob.message and "savi" in prob.hint


def test_validate_prints_the_advice_for_every_test_the_plan_could_register(tmp_path, capsys):
    from prereg.outputs.cli import main

    p = tmp_path / "cmp.md"
    p.write_text(DOC.replace("max_seeds: 60", "max_seeds: 60\n  assumed_rates: [0.1, 0.5]"))
    assert main(["validate", str(p)]) == 0
    out = capsys.readouterr().out
    assert "comparison registered: a vs b on success: paired discordant-seed e-process" in out
    assert "no difference 0.1 vs 0.1 | assumed 0.1 -> 0.5 | minimum effect 0.1 -> 0.25" in out
    assert "the batch (exact McNemar, sized for it) needs" in out and "information floor (Wald's bound" in out
    rows = {line[4:].split()[0]: line for line in out.splitlines() if line.startswith(("  > ", "    ")) and "worst" in line}
    assert rows["savi"].startswith("  > savi (simulated)") and "worst 120" in rows["savi"]
    assert rows["sprt"].startswith("    sprt (exact)") and rows["fixed"].startswith("    fixed (exact)")
    assert rows["optimal"].startswith("    optimal (exact)")
    assert re.search(r"fixed \(exact\) +120\.0 \(", out)  # the batch at max seeds: 60 seeds x 2 episodes, whatever the truth
    # the optimum of any test claiming on the discordant walk, and each test's cost at the design against it
    line = next(x for x in out.splitlines() if x.startswith("  the optimum (the fewest expected seeds at the design"))
    optimum = float(re.search(r"\): ([\d.]+) seeds, [\d.]+ of the batch, ([\d.]+)x the floor", line).group(1))
    for test in ("sprt", "fixed"):
        cell = re.search(r"\| +([\d.]+) \(([\d.]+), ([\d.]+), ([\d.]+)\) \|", rows[test])
        assert float(cell.group(4)) == pytest.approx(float(cell.group(1)) / 2 / optimum, abs=0.02)  # both printed to 0.1
        assert float(cell.group(4)) >= 1.0  # no test spends less than the optimum at the design
    p.write_text(DOC.replace("metric: success", "metric: progress_final_cm").replace("  test: savi\n", "").replace(
        "minimum_effect: 0.15", "minimum_effect: 1.0\n  assumed_delta_cm: 0.73\n  delta_sd_cm: 3.0").replace(
        "seeds: 0-99", "seeds: 0-199").replace("max_seeds: 60", "max_seeds: 150"))
    assert main(["validate", str(p)]) == 0
    out = capsys.readouterr().out
    assert "a vs b on progress_final_cm: fixed-n batch test" in out and "the batch (paired t test, sized for it) needs 135 seeds" in out
    assert "  > fixed (exact)" in out and "    savi, e.g. clip_cm 7.5 (simulated)" in out
    assert "savi tests the mean of the deltas clipped to +/-its clip, not the mean" in out


def test_a_test_that_cannot_reach_its_power_is_refused_in_one_line_that_says_which_would(tmp_path, capsys):
    """validate exits 2 and freeze writes nothing: the SPRT at 9% vs 1% needs more than the batch's 123 seeds
    as its max seeds; the betting sequence on progress with a clip as wide as the scene never decides."""
    from prereg.outputs.cli import main

    text = DOC.replace("seeds: 0-99", "seeds: 0-199").replace("max_seeds: 60", "max_seeds: 123")
    sprt = tmp_path / "sprt.md"
    sprt.write_text(text.replace("test: savi", "test: sprt\n  assumed_rates: [0.01, 0.09]"))
    assert main(["validate", str(sprt)]) == 2
    # on a machine that has not kept the optimal test's design yet, a line saying it is designing comes first
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("(designing the optimal")]
    assert err[0] == (f"{sprt}:18: comparison.test: test sprt cannot reach power 0.8 at 0.01 -> 0.09 within max_seeds "
                      "123 (it reaches 0.737); test fixed does (0.804); test sprt with max_seeds >= 139")
    before = sprt.read_text()
    assert main(["freeze", str(sprt)]) == 2 and sprt.read_text() == before
    assert "not frozen, nothing written" in capsys.readouterr().err
    sprt.write_text(before.replace("max_seeds: 123", "max_seeds: 139"))
    assert main(["validate", str(sprt)]) == 0
    prog = tmp_path / "prog.md"
    prog.write_text(text.replace("metric: success", "metric: progress_final_cm").replace(
        "minimum_effect: 0.15", "minimum_effect: 1.0\n  assumed_delta_cm: 0.73\n  delta_sd_cm: 3.0\n  clip_cm: 272.26"))
    capsys.readouterr()
    assert main(["validate", str(prog)]) == 2
    (line, _) = capsys.readouterr().err.splitlines()
    assert "test savi cannot reach power 0.8 at +0.73 cm (SD 3 cm) within max_seeds 123 (it reaches 0.000)" in line
    assert line.endswith("test fixed with max_seeds >= 135")
