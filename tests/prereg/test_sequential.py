"""The registered sequential test (prereg/stats/sequential.py) against simulated truth: its error rates
stay within Wald's bounds, and the exact operating characteristic matches many simulated runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prereg.document.check_plan import sequential_problems
from prereg.stats.sequential import H0, H1, Sprt, check_rows, oc, oc_lines

SPECS = [Sprt(0.05, 0.2, 0.05, 0.1), Sprt(0.01, 0.09, 0.05, 0.2), Sprt(0.3, 0.5, 0.1, 0.1)]


def simulate(s: Sprt, planned: int, p: float, sims: int = 4000, seed: int = 7):
    """(P(accept H1), P(accept H0), mean episodes) over `sims` simulated runs, vectorised."""
    rng = np.random.default_rng(seed)
    x = rng.random((sims, planned)) < p
    k = np.cumsum(x, axis=1)
    n = np.arange(1, planned + 1)
    llr = k * math.log(s.p1 / s.p0) + (n - k) * math.log((1 - s.p1) / (1 - s.p0))
    hit_hi, hit_lo = llr >= s.upper, llr <= s.lower
    first_hi = np.where(hit_hi.any(1), hit_hi.argmax(1), planned)
    first_lo = np.where(hit_lo.any(1), hit_lo.argmax(1), planned)
    h1 = first_hi < first_lo
    h0 = first_lo < first_hi
    episodes = np.minimum(np.minimum(first_hi, first_lo) + 1, planned)
    return h1.mean(), h0.mean(), episodes.mean()


@pytest.mark.parametrize("s", SPECS)
@pytest.mark.parametrize("planned", [30, 100])
def test_error_rates_stay_within_walds_bounds_exactly_and_in_simulation(s, planned):
    at_p0, at_p1 = oc(s, planned, s.p0), oc(s, planned, s.p1)
    assert at_p0.accept_h1 <= s.alpha / (1 - s.beta)
    assert at_p1.accept_h0 <= s.beta / (1 - s.alpha)
    sims = 4000
    for p, want in ((s.p0, at_p0), (s.p1, at_p1)):
        h1, h0, mean_n = simulate(s, planned, p, sims)
        for got, exact in ((h1, want.accept_h1), (h0, want.accept_h0)):
            sigma = math.sqrt(max(exact * (1 - exact), 1e-4) / sims)
            assert abs(got - exact) < 5 * sigma, (p, got, exact)
        assert abs(mean_n - want.expected_episodes) < 0.05 * want.expected_episodes + 0.5
    h1_false, _, _ = simulate(s, planned, s.p0, sims, seed=11)
    _, h0_false, _ = simulate(s, planned, s.p1, sims, seed=12)
    assert h1_false <= s.alpha / (1 - s.beta) + 3 * math.sqrt(s.alpha / sims)
    assert h0_false <= s.beta / (1 - s.alpha) + 3 * math.sqrt(s.beta / sims)


def test_the_oc_probabilities_add_up_and_the_table_is_printed():
    s = SPECS[0]
    for p in (0.0001, 0.05, 0.12, 0.2, 0.6):
        r = oc(s, 100, p)
        assert r.accept_h1 + r.accept_h0 + r.undecided == pytest.approx(1.0)
        assert 1 <= r.expected_episodes <= 100
    lines = oc_lines(s, 100)
    assert "Wald SPRT H0 p <= 0.05 vs H1 p >= 0.2" in lines[0] and len(lines) == 2 + 5


def test_the_driver_check_decides_from_rows():
    s = SPECS[0]
    rows = [{"seed": i, "success": True, "status": "ok"} for i in range(3)]
    d = check_rows(s.as_dict(), rows, range(100))
    assert d["decision"] == H1 and d["at"] == 3  # 3 log(4) = 4.16 >= log(0.9 / 0.05) = 2.89
    assert check_rows(s.as_dict(), rows[:2], range(100)) is None
    fails = [{"seed": i, "success": False, "status": "ok"} for i in range(60)]
    d0 = check_rows(s.as_dict(), fails, range(100))
    assert d0 is not None and d0["decision"] == H0 and d0["at"] <= 60
    assert check_rows(None, rows, range(100)) is None


def test_the_driver_check_counts_errors_as_failures_and_reads_the_plan_prefix():
    s = SPECS[0]
    errors = [{"seed": i, "success": True, "status": "error"} for i in range(3)]
    assert check_rows(s.as_dict(), errors, range(100)) is None  # an error row is never a success
    later = [{"seed": i, "success": True, "status": "ok"} for i in (1, 2, 3)]
    assert check_rows(s.as_dict(), later, range(100)) is None  # seed 0 not in yet: nothing counts
    d = check_rows(s.as_dict(), later + [{"seed": 0, "success": True, "status": "ok"}], range(100))
    assert d["decision"] == H1 and d["at"] == 3  # the first crossing in plan order, not completion order


def test_registration_is_validated():
    assert sequential_problems({"p0": 0.05, "p1": 0.2, "alpha": 0.05, "beta": 0.1}) == []
    assert [f for f, _ in sequential_problems({"p0": 0.3, "p1": 0.2, "alpha": 0.05, "beta": 0.1})] == ["p1"]
    assert [f for f, _ in sequential_problems({"p0": 0.05, "p1": 0.2, "alpha": 0.7, "beta": 0.1, "gamma": 1})] == ["gamma", "alpha"]


def test_the_document_registers_the_sequential_test_and_names_a_bad_field(demo):
    from prereg.document.read import parse

    good = demo.read_text().replace("gates:\n", "gates:\n  sequential: {p0: 0.05, p1: 0.2, alpha: 0.05, beta: 0.1}\n", 1)
    doc = parse(good, demo)
    assert not [p for p in doc.problems if p.field.startswith("gates")]
    assert doc.sections[0].gates.sequential == {"p0": 0.05, "p1": 0.2, "alpha": 0.05, "beta": 0.1}
    bad = parse(good.replace("p1: 0.2", "p1: 0.01"), demo)
    assert [p.field for p in bad.problems if p.field.startswith("gates")] == ["gates.sequential.p1"]
