"""The achievable optimum of a paired success comparison (prereg/stats/paired_optimal.py): the clock that turns
walk steps into seeds, the dual bound attained by its randomised witness and above Wald's floor, the shipped
sprt's cost against it, and the best deterministic walk test, exact and checked against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prereg.stats import paired_optimal as O
from prereg.stats import paired_sprt as P
from prereg.stats.operating import batch_seeds, pair_probs
from tests.helpers import decide_on_rows

ALPHA, POWER = 0.05, 0.8
SIMS = 20_000


def _design(p_lo: float, p_hi: float) -> tuple[float, float, int, int]:
    """(b, a, the batch's seeds, max seeds 1.5x the batch: the docs' choice)."""
    bo, ao = pair_probs(p_lo, p_hi)
    nb = batch_seeds(POWER, b_only=bo, a_only=ao, alpha=ALPHA)
    return bo, ao, nb, int(round(1.5 * nb))


def test_the_clock_turns_walk_steps_into_seeds_as_simulation_does():
    """dlt[k] summed is E[min(tau_k, n)], reach[k] = P(tau_k <= n): tau_k the seed of the k-th discordant one."""
    n, q = 40, 0.3
    dlt, reach = O.clock(n, q)
    rng = np.random.default_rng(3)
    disc = rng.random((SIMS, n)) < q
    count = np.cumsum(disc, axis=1)
    for k in (1, 5, 12, 20):
        hit = count >= k
        tau = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, n + 1)
        se = math.sqrt(n * n / 4 / SIMS)
        assert abs(np.minimum(tau, n).mean() - dlt[:k].sum()) < 4 * se
        assert abs((tau <= n).mean() - reach[k]) < 4 * math.sqrt(0.25 / SIMS)
    assert reach[0] == 1.0 and dlt[n] == pytest.approx(0.0, abs=1e-12)


def _lagrangian_step_by_step(theta, n, lam0, lam1, dlt, reach):
    """The backward induction written a step at a time (the posteriors of step k from its own logs): what
    O._lagrangian computes for all steps at once."""
    V, acts = None, [None] * (n + 1)
    for k in range(n, -1, -1):
        w = np.arange(k + 1)
        la = w * math.log(theta) + (k - w) * math.log1p(-theta)
        lb = w * math.log1p(-theta) + (k - w) * math.log(theta)
        lc = np.full(k + 1, math.log(2 * lam0) - k * math.log(2))
        top = np.maximum(np.maximum(la, lb), lc)
        A, B, C = np.exp(la - top), np.exp(lb - top), np.exp(lc - top)
        s = A + B + C
        A, B, C = A / s, B / s, C / s
        opts = [np.zeros(k + 1), C - lam1 * A * reach[k], C - lam1 * B * reach[k]]
        if k < n:
            r1 = A * theta + B * (1 - theta) + C / 2
            opts.append(dlt[k] * (A + B) + r1 * V[1:] + (1 - r1) * V[:-1])
        stacked = np.stack(opts)
        acts[k] = stacked.argmin(axis=0).astype(np.int8)
        V = stacked.min(axis=0)
    return float(V[0]) * (1 + lam0), acts


def test_the_induction_at_once_is_the_step_by_step_one_bit_for_bit():
    """O._lagrangian (every step's posteriors at once) gives the step-by-step value and actions exactly, so a
    design kept in the cache before it was vectorised reads back the same."""
    rng = np.random.default_rng(49)
    for _ in range(40):
        n, theta, q = int(rng.integers(0, 140)), float(rng.uniform(0.55, 0.98)), float(rng.uniform(0.05, 0.9))
        dlt, reach = O.clock(n, q)
        lam0, lam1 = float(np.exp(rng.uniform(-5, 8))), float(np.exp(rng.uniform(-3, 8)))
        value, acts = O._lagrangian(theta, n, lam0, lam1, dlt, reach)
        ref_value, ref_acts = _lagrangian_step_by_step(theta, n, lam0, lam1, dlt, reach)
        assert value == ref_value and all(np.array_equal(a, b) for a, b in zip(acts, ref_acts, strict=True))


def test_the_optimum_is_attained_above_the_floor_and_below_every_walk_test():
    """60% vs 30%, 75 seeds: the randomised witness meets both constraints with equality at exactly the dual's
    value; weak duality holds at other multipliers; Wald's floor is below it and the sprt above it."""
    bo, ao, nb, n = _design(0.3, 0.6)
    opt = O.optimum(0.3, 0.6, ALPHA, POWER, n)
    power, type1, expected = opt.witness()
    assert power == pytest.approx(POWER, abs=1e-6) and type1 == pytest.approx(ALPHA, abs=1e-6)
    assert expected == pytest.approx(opt.value, rel=1e-6)
    theta, dlt, reach = O._law(0.3, 0.6, n)
    for x in ((3.0, 2.0), (6.0, 5.0), (opt.log_multipliers[0] + 0.3, opt.log_multipliers[1] - 0.2)):
        assert O._dual(theta, n, x, ALPHA, POWER, dlt, reach) <= opt.value + 1e-9
    floor = P.floor_seeds(bo, ao, ALPHA, POWER)
    sprt = P.oc(P.make_design(0.3, 0.6, ALPHA, POWER, n), bo, ao).expected_seeds
    assert floor < opt.value < sprt
    assert opt.value / floor < 1.05 and sprt / opt.value > 1.05  # docs/prereg.md: 1.04x the floor; the sprt 1.10x it


def test_a_design_no_walk_test_can_power_is_refused():
    with pytest.raises(P.Unreachable):
        O.optimum(0.3, 0.6, ALPHA, POWER, 8)


@pytest.fixture(scope="module")
def best():
    return O.make_optimal(0.2, 0.6, ALPHA, POWER, _design(0.2, 0.6)[3])


def test_the_best_deterministic_walk_test_holds_alpha_and_the_power_exactly(best):
    """Its own DP, the (seed, wins, losses) DP of paired_sprt.oc and the fair walk agree; level and power hold;
    it costs at least the optimum."""
    bo, ao, _nb, n = _design(0.2, 0.6)
    assert best.type1 <= ALPHA and best.achieved_power >= POWER
    o = P.oc(best, bo, ao)
    assert o.better == pytest.approx(best.achieved_power, abs=1e-9)
    assert o.expected_seeds == pytest.approx(best.expected_seeds, abs=1e-9)
    worst = P.oc(best, 0.5, 0.5)  # the worst null: every seed discordant, a fair coin
    assert worst.better + worst.worse == pytest.approx(best.type1, abs=1e-9)
    assert best.expected_seeds >= O.optimum(0.2, 0.6, ALPHA, POWER, n).value - 1e-9


@pytest.mark.parametrize("law", ["design", "worst null", "independent null", "nested"])
def test_the_best_deterministic_walk_test_by_simulation(best, law):
    """20,000 simulated comparisons read by paired_sprt.run agree with the exact operating characteristic."""
    _bo, _ao, _nb, n = _design(0.2, 0.6)
    rng = np.random.default_rng({"design": 1, "worst null": 2, "independent null": 3, "nested": 4}[law])
    u = rng.random((SIMS, n))
    if law == "design":
        a, b = u < 0.2, rng.random((SIMS, n)) < 0.6
    elif law == "worst null":
        a = u < 0.5
        b = ~a
    elif law == "independent null":
        a, b = u < 0.4, rng.random((SIMS, n)) < 0.4
    else:
        a, b = u < 0.2, u < 0.6  # B succeeds on every seed A does
    pb_only = float((b & ~a).mean())
    exact = P.oc(best, *{"design": pair_probs(0.2, 0.6), "worst null": (0.5, 0.5),
                         "independent null": (0.24, 0.24), "nested": (0.4, 0.0)}[law])
    assert abs(pb_only - {"design": 0.48, "worst null": 0.5, "independent null": 0.24, "nested": 0.4}[law]) < 0.01
    code, seed = P.run(best, a, b)
    seeds = np.where(code > 0, seed, n)
    for got, want in (((code == 1).mean(), exact.better), ((code == 2).mean(), exact.worse)):
        assert abs(got - want) < 4 * math.sqrt(max(want * (1 - want), 1e-4) / SIMS)
    assert abs(seeds.mean() - exact.expected_seeds) < 4 * seeds.std() / math.sqrt(SIMS) + 1e-9
    if law in ("worst null", "independent null"):
        assert exact.better + exact.worse <= ALPHA
    else:
        assert exact.better >= POWER


# ---------------------------------------------------------------- test: optimal, the registered test


@pytest.mark.parametrize("rates", [(0.01, 0.09), (0.1, 0.3)])
def test_test_optimal_meets_issue_47s_goal_and_beats_the_sprt_at_the_design(rates):
    """Within 1.15x Wald's floor at the design, cheaper than the sprt there, power >= 0.8 with independent and
    nested arms, exact type-I <= alpha at the worst null (every seed discordant) - all exact."""
    bo, ao, _nb, n = _design(*rates)
    d = O.make_walk_test(*rates, ALPHA, POWER, n)
    design = P.oc(d, bo, ao)
    assert design.expected_seeds <= 1.15 * P.floor_seeds(bo, ao, ALPHA, POWER)
    assert design.expected_seeds < P.oc(P.make_design(*rates, ALPHA, POWER, n), bo, ao).expected_seeds
    assert design.better >= POWER and P.oc(d, rates[1] - rates[0], 0.0).better >= POWER
    worst = P.oc(d, 0.5, 0.5)
    assert worst.better + worst.worse <= ALPHA and d.futility > P.G_MIN


@pytest.mark.parametrize("law", ["design", "independent null", "correlated null", "nested"])
def test_test_optimal_by_simulation(law):
    """20,000 simulated comparisons at 30% vs 10% (106 seeds) read by paired_sprt.run agree with the exact
    operating characteristic, the futility stop on the seed count included; the level holds at the nulls."""
    n = _design(0.1, 0.3)[3]
    d = O.make_walk_test(0.1, 0.3, ALPHA, POWER, n)
    rng = np.random.default_rng({"design": 5, "independent null": 6, "correlated null": 7, "nested": 8}[law])
    u = rng.random((SIMS, n))
    v = rng.random((SIMS, n))
    pa, pb, rho = {"design": (0.1, 0.3, 0.0), "independent null": (0.2, 0.2, 0.0), "correlated null": (0.2, 0.2, 0.5),
                   "nested": (0.1, 0.3, 1.0)}[law]
    a, b = u < pa, np.where(rng.random((SIMS, n)) < rho, u, v) < pb
    code, seed = P.run(d, a, b)
    exact = P.oc(d, *pair_probs(pa, pb, rho))
    for got, want in (((code == 1).mean(), exact.better), ((code == 2).mean(), exact.worse),
                      ((code == 4).mean(), exact.futile)):
        assert abs(got - want) < 4 * math.sqrt(max(want * (1 - want), 1e-4) / SIMS)
    seeds = np.where(code > 0, seed, n)
    assert abs(seeds.mean() - exact.expected_seeds) < 4 * seeds.std() / math.sqrt(SIMS)
    if "null" in law:
        assert exact.better + exact.worse <= ALPHA
    else:
        assert exact.better >= POWER


def test_decide_on_rows_is_test_optimal_on_random_sequences():
    """decide() with test optimal on random row sequences (design, no difference, mirrored; random lengths)
    gives paired_sprt.run's code and seed on the same outcomes: the rows decide what the DP describes."""
    from prereg.document.comparison_spec import ComparisonSpec
    from prereg.stats.comparison import _CODES, UNDECIDED, optimal_design

    n = _design(0.1, 0.3)[3]
    spec = ComparisonSpec(arm_a="a", arm_b="b", metric="success", test="optimal", alpha=ALPHA, power=POWER,
                          minimum_effect=0.15, max_seeds=n, assumed_rates=(0.1, 0.3))
    d = optimal_design(spec, n)
    assert isinstance(d, O.WalkTest)
    rng = np.random.default_rng(470)
    seen = set()
    for i in range(60):
        pa, pb = ((0.1, 0.3), (0.2, 0.2), (0.3, 0.1))[i % 3]
        a, b = rng.random(n) < pa, rng.random(n) < pb
        length = int(rng.integers(1, n + 1))
        code, when = P.run(d, a[None, :length], b[None, :length])
        got = decide_on_rows(spec, a, b, length, n)
        if int(code[0]) == 0:
            assert got is None if length < n else (got.outcome, got.at) == (UNDECIDED, n)
        else:
            assert (got.outcome, got.at) == (_CODES[int(code[0])], int(when[0]))
            assert "discordant-pair test from the optimum designed at 0.1 vs 0.3" in got.text
        seen.add(None if got is None else got.outcome)
    assert len(seen) >= 3


def test_a_success_comparison_that_names_no_test_registers_optimal():
    """New plans get the cheaper test; a plan that registered `test: sprt` still reads as the sprt."""
    from prereg.document.comparison_spec import parse

    raw = {"arms": ["a", "b"], "metric": "success", "minimum_effect": 0.15, "assumed_rates": [0.01, 0.09]}
    spec, problems = parse(raw)
    assert problems == [] and spec.test == "optimal" and spec.as_dict()["assumed_rates"] == [0.01, 0.09]
    assert "discordant-pair test from the optimum designed at 0.01 vs 0.09" in spec.describe()
    spec, problems = parse({**raw, "test": "sprt"})
    assert problems == [] and spec.test == "sprt"
    spec, problems = parse({k: v for k, v in raw.items() if k != "assumed_rates"})
    assert spec is None and "test optimal derives its alternative from assumed_rates" in problems[0][1]


def test_a_walk_tests_design_is_kept_once_per_machine_and_read_back_the_same(tmp_path, monkeypatch):
    """make_walk_test keeps its design in $FONTAINE_CACHE/designs (the driver, validate and the report each
    spent 10 s recomputing it at 40 seeds): the kept one decides as the computed one at every state, and a
    damaged or foreign file is computed again, never read as a design."""
    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path))
    args = (0.5, 0.9, 0.05, 0.8, 30)
    computed = O._compute_walk_test(*args)
    O._write_walk_test(O._design_path(args), args, computed)
    (kept,) = (tmp_path / "designs").iterdir()
    read = O._read_walk_test(kept, args)
    assert read is not None and read.futility == computed.futility and read.walk == computed.walk
    t, w, ls = np.meshgrid(np.arange(31), np.arange(31), np.arange(31), indexing="ij")
    assert np.array_equal(read.codes(t, w, ls), computed.codes(t, w, ls))
    assert O._read_walk_test(kept, (0.5, 0.9, 0.05, 0.8, 31)) is None  # another design's arguments
    text = kept.read_text()
    for damaged in (text[:40], text.replace('"0', '"9', 1), "[]", ""):
        kept.write_text(damaged)
        assert O._read_walk_test(kept, args) is None
    O.make_walk_test.cache_clear()
    try:
        assert O.make_walk_test(*args).walk == computed.walk  # computed again over the damaged file...
        assert O._read_walk_test(kept, args) is not None  # ...and kept whole
    finally:
        O.make_walk_test.cache_clear()


def test_a_fresh_machines_first_validate_says_it_is_designing_then_reads_the_design_back(tmp_path, monkeypatch,
                                                                                          capsys):
    """The first `fontaine-prereg validate` of a new comparison plan computes the optimal test's design (6-12 s
    at 60 seeds on these machines) and said nothing meanwhile: it says so on stderr as it starts, once; the
    next validate reads the kept design back, silent, and stdout (the answer) is the same both times."""
    from prereg.outputs.cli import main
    from tests.helpers import REPO

    monkeypatch.setenv("FONTAINE_CACHE", str(tmp_path / "cache"))
    plan = tmp_path / "compare.md"
    text = (REPO / "prereg" / "examples" / "compare.md").read_text()
    plan.write_text(text.replace("seeds: 0-59", "seeds: 0-29").replace("max_seeds: 60", "max_seeds: 30")
                    .replace("test: savi", "test: optimal"))  # savi cannot reach the power within 30 seeds
    O.make_walk_test.cache_clear()
    try:
        outs = []
        for _ in range(2):
            assert main(["validate", str(plan)]) == 0
            outs.append(capsys.readouterr())
            O.make_walk_test.cache_clear()  # a new process: only the kept file remains
    finally:
        O.make_walk_test.cache_clear()
    first, second = outs
    assert first.err.count("designing the optimal test") == 1, first.err
    assert "0.5 -> 0.9 at power 0.8, alpha 0.05, max 30 seeds" in first.err
    assert str(tmp_path / "cache" / "designs") in first.err
    assert second.err == "" and second.out == first.out and ": valid (demo-compare" in first.out
