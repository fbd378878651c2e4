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
