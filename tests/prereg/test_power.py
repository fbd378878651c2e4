"""Power before spending (prereg/stats/power.py): every MDE against 10,000 simulated plans of the same test,
the parser's FILE:LINE messages for reads.power, and the block `validate` prints."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from prereg.document.read import parse
from prereg.outputs.cli import main
from prereg.stats import power
from tests.prereg.conftest import make_row
from tests.prereg.test_prereg_document import GOOD, line_of

PLANS = 10_000  # simulated plans per figure


def mc_ok(simulated: float, exact: float) -> bool:
    """Within 4 Monte Carlo standard errors of the exact power (a false alarm about 1 in 16,000)."""
    return abs(simulated - exact) <= 4 * math.sqrt(exact * (1 - exact) / PLANS)


# ---------------------------------------------------------------- the primary read


@pytest.mark.parametrize("n", [6, 20, 50, 100, 137, 300])
@pytest.mark.parametrize("p0", [0.01, 0.09, 0.3, 0.5, 0.77])
def test_binom_pvalues_are_binomtests(n, p0):
    ref = np.array([stats.binomtest(k, n, p0).pvalue for k in range(n + 1)])
    got = power.binom_pvalues(n, p0)
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-13)
    assert ((got <= 0.05) == (ref <= 0.05)).all()


@pytest.mark.parametrize("n, p0", [(100, 0.09), (100, 0.3), (40, 0.5)])
def test_rate_mde_is_the_first_rate_reaching_80_percent_and_simulation_agrees(n, p0):
    m = power.rate_mde(n, p0)
    rng = np.random.default_rng(20261201)
    for rate, sign in ((m.up, 1), (m.down, -1)):
        if rate is None:
            continue
        exact = float(power.binom_power(n, p0, rate)[0])
        assert exact >= 0.80
        assert float(power.binom_power(n, p0, rate - sign * power.RATE_STEP)[0]) < 0.80  # one step nearer p0 is not
        k = rng.binomial(n, rate, PLANS)
        p_of = {int(v): stats.binomtest(int(v), n, p0).pvalue for v in np.unique(k)}  # scipy's own test
        simulated = float(np.mean([p_of[int(v)] <= 0.05 for v in k]))
        assert 0.78 <= simulated <= 0.82 and mc_ok(simulated, exact), (rate, simulated, exact)
    assert m.up is not None and m.up > p0


def test_rate_mde_figures():
    m = power.rate_mde(100, 0.09)  # the figures docs/prereg.md quotes
    assert (m.up, m.down) == (0.189, 0.023)
    assert power.rate_mde(6, 0.5).down == pytest.approx(0.036)


# ---------------------------------------------------------------- two arms: the success difference


def test_wilson_and_newcombe_are_the_published_ones():
    for k, n in ((0, 10), (3, 10), (10, 10), (17, 100)):
        ci = stats.binomtest(k, n).proportion_ci(method="wilson")
        lo, hi = power.wilson(k, n)
        assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-12)
    lo, hi = power.newcombe_interval(56, 70, 48, 80)  # Newcombe (1998), Stat Med 17:873, method 10
    assert (round(float(lo), 4), round(float(hi), 4)) == (0.0524, 0.3339)
    k1, k2 = np.arange(31)[:, None], np.arange(31)[None, :]
    lo, hi = power.newcombe_interval(k1, 30, k2, 30)
    assert (((lo > 0) | (hi < 0)) == power.newcombe_rejects(k1, 30, k2, 30)).all()


@pytest.mark.parametrize("n, p0", [(100, 0.09), (100, 0.3), (50, 0.5)])
def test_difference_mde_is_the_first_rate_reaching_80_percent_and_simulation_agrees(n, p0):
    m = power.difference_mde(n, p0)
    rng = np.random.default_rng(20261202)
    for rate, sign in ((m.up, 1), (m.down, -1)):
        if rate is None:
            continue
        exact = float(power.difference_power(n, p0, rate)[0])
        assert exact >= 0.80
        assert float(power.difference_power(n, p0, rate - sign * power.RATE_STEP)[0]) < 0.80
        k_arm, k_comp = rng.binomial(n, rate, PLANS), rng.binomial(n, p0, PLANS)
        lo, hi = power.newcombe_interval(k_arm, n, k_comp, n)
        simulated = float(np.mean((lo > 0) | (hi < 0)))
        assert 0.78 <= simulated <= 0.82 and mc_ok(simulated, exact), (rate, simulated, exact)
    assert m.up is not None


# ---------------------------------------------------------------- two arms: the paired progress delta


@pytest.mark.parametrize("n, sd", [(100, 2.5), (20, 1.0)])
def test_delta_mde_matches_a_simulated_t_test(n, sd):
    mde = power.delta_mde(sd, n)
    assert power.delta_power(mde, sd, n) == pytest.approx(0.80, abs=1e-8)
    assert mde == pytest.approx(power.delta_mde_formula(sd, n), rel=0.02)  # the usual formula, near
    rng = np.random.default_rng(20261203)
    deltas = rng.normal(mde, sd, size=(PLANS, n))
    simulated = float(np.mean(stats.ttest_1samp(deltas, 0.0, axis=1).pvalue <= 0.05))
    assert 0.78 <= simulated <= 0.82 and mc_ok(simulated, 0.80), simulated


# ---------------------------------------------------------------- seeds needed


@pytest.mark.parametrize("p0, effect", [(0.09, 0.15), (0.2, 0.15), (0.5, 0.2), (0.01, 0.05), (0.9, 0.05)])
def test_seeds_needed_is_where_the_power_stays_at_80_percent(p0, effect):
    """The sawtooth: at p0 0.09 the exact test reaches 0.82 at 37 seeds, falls to 0.72 at 38 and below 0.8
    again at 42-45; the seeds needed are 46, from which every n keeps 80%. Checked against a scan from 1
    to four times the first crossing (the answer looks to twice it)."""
    for power_of, got in ((lambda n: power.binom_power(n, p0, p0 + effect)[0], power.rate_seeds(p0, p0 + effect)),
                          (lambda n: power.difference_power(n, p0, p0 + effect)[0], power.difference_seeds(p0, p0 + effect))):
        first = next(n for n in range(1, 2000) if power_of(n) >= 0.8)
        top = 4 * first if first < 150 else 2 * first  # the largest cases: scanned to twice the crossing
        pw = {n: float(power_of(n)) for n in range(1, top + 1)}
        stays = 1 + max(n for n in range(1, top + 1) if pw[n] < 0.8)
        assert (got.first, got.n) == (first, stays) and got.dips == tuple(n for n in range(first, stays) if pw[n] < 0.8)
    got = power.rate_seeds(0.09, 0.24)
    assert (got.first, got.n, got.dips) == (37, 46, (38, 39, 40, 42, 43, 44, 45))
    assert got.text() == "46 seeds (80% power from 46 on, checked to 74; 37 seeds reach it first but 38-40, 42-45 fall below)"


def test_seeds_needed_for_the_delta_and_beyond_the_cap():
    first = next(n for n in range(2, 999) if power.delta_power(1.0, 2.5, n) >= 0.8)
    assert power.delta_seeds(1.0, 2.5).n == first == 52 and power.delta_seeds(1.0, 2.5).text() == "52 seeds"
    assert power.seeds_needed(lambda n: 0.5, n_max=64).n is None
    assert power.seeds_needed(lambda n: 0.5, n_max=64).text() == "more than 5000 seeds"


# ---------------------------------------------------------------- the document's reads.power


def with_power(block: str, comparator: bool = True) -> str:
    extra = "  comparator: {arm: b, for: [a]}\n" if comparator else ""
    return GOOD.replace("  secondary: [engaged, knock_aways]\n", "  secondary: [engaged, knock_aways]\n" + extra + block)


GOOD_POWER = """  power:
    assumed_rates: {a: 0.2, b: 0.09}
    minimum_effect: {success_rate: 0.15, progress_cm: 1.0}
    delta_sd_cm: 2.5
"""


def test_power_block_parses():
    doc = parse(with_power(GOOD_POWER), "t.md")
    assert doc.problems == []
    plan = doc.sections[0].reads.power
    assert plan.rates == {"a": 0.2, "b": 0.09} and plan.default_rate is None
    assert (plan.min_success_effect, plan.min_progress_cm, plan.delta_sd_cm, plan.pilot) == (0.15, 1.0, 2.5, None)
    doc = parse(with_power("  power: {assumed_rates: 0.3, pilot: ../runs/p}\n"), "t.md")
    assert doc.problems == [] and doc.sections[0].reads.power.default_rate == 0.3
    assert parse(GOOD, "t.md").sections[0].reads.power is None  # optional


@pytest.mark.parametrize("block, needle, message", [
    ("  power: 0.2\n", "power: 0.2", "reads.power: must be a mapping"),
    ("  power:\n    assumed_rates: {a: 1.5}\n", "assumed_rates", "reads.power.assumed_rates.a: must be a rate in (0, 1), got 1.5"),
    ("  power:\n    assumed_rates: {zz: 0.1}\n", "assumed_rates", "reads.power.assumed_rates.zz: unknown arm 'zz'"),
    ("  power:\n    assumed_rates: high\n", "assumed_rates", "reads.power.assumed_rates: must be a rate in (0, 1) or a mapping"),
    ("  power:\n    minimum_effect: {success_rate: 0}\n", "minimum_effect",
     "reads.power.minimum_effect.success_rate: must be a rate difference in (0, 1), got 0"),
    ("  power:\n    minimum_effect: {cm: 1}\n", "minimum_effect", "reads.power.minimum_effect.cm: unknown effect 'cm'"),
    ("  power:\n    delta_sd_cm: -2\n", "delta_sd_cm", "reads.power.delta_sd_cm: must be a distance in cm > 0, got -2"),
    ("  power:\n    delta_sd_cm: 2\n    pilot: ../runs/p\n", "pilot:", "reads.power.pilot: give delta_sd_cm or pilot, not both"),
    ("  power:\n    sd: 2\n", "sd: 2", "reads.power.sd: unknown power field 'sd'"),
])
def test_bad_power_values_name_file_line_and_field(tmp_path, capsys, block, needle, message):
    p = tmp_path / "t.md"
    p.write_text(with_power(block))
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    line = line_of(p.read_text(), needle)
    assert f"{p}:{line}: {message}" in err, err


# ---------------------------------------------------------------- what validate prints


def validate(capsys, path) -> str:
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return out


def test_validate_prints_the_power_block(tmp_path, capsys):
    p = tmp_path / "t.md"
    p.write_text(with_power(GOOD_POWER))
    out = validate(capsys, p)
    block = out[out.index("power before spending"):]
    assert "Newcombe" in block and "independent" in block and "conservative" in block
    m = power.rate_mde(10, 0.2)
    assert f"arm a (10 seeds, assumed rate 0.2): detects a true rate >= {m.up:.3f}" in block
    assert f"+0.15 needs {power.rate_seeds(0.2, 0.35, through=10).text()}" in block
    d = power.difference_mde(10, 0.09)
    assert f"a vs b (10 seeds each), success difference (arms as independent: conservative) from b at 0.09: " \
           f"detects a at >= {d.up:.3f}" in block
    assert f"needs {power.difference_seeds(0.09, 0.24, through=10).text(' per arm')}" in block
    assert f"paired progress delta (SD 2.50 cm, registered): detects a mean delta of {power.delta_mde(2.5, 10):.2f} cm" in block
    assert "1 cm needs 52 seeds" in block
    assert "ILLUSTRATIVE" not in block
    assert main(["freeze", str(p)]) == 0
    out = capsys.readouterr().out
    assert "froze base" in out and block.strip() in out  # freeze prints the same block


def test_the_template_asks_for_assumed_rates(tmp_path, capsys):
    p = tmp_path / "x.md"
    assert main(["new", str(p)]) == 0
    p.write_text(p.read_text().replace("revision: PIN-ME", "revision: " + "3f" * 20))
    out = validate(capsys, p)
    assert "arm arm-a (100 seeds, assumed rate 0.1): detects a true rate >= 0.199" in out
    assert "+0.15 needs 49 seeds (80% power from 49 on, checked to 100; 44 seeds reach it first but 48 fall below)" in out


def test_validate_without_assumed_rates_is_illustrative(tmp_path, capsys):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    block = validate(capsys, p).split("power before spending", 1)[1]
    assert "no assumed success rates registered" in block
    assert "arms a, b (10 seeds each), no assumed rate, ILLUSTRATIVE: at 0.1 detects" in block


def test_a_pilot_gives_the_sd_or_one_line_saying_why_not(tmp_path, capsys, run_dir):
    p = tmp_path / "t.md"
    p.write_text(with_power("  power:\n    assumed_rates: 0.2\n    pilot: runs/pilot\n"))
    out = validate(capsys, p)
    assert "paired progress delta: not computed: pilot run" in out and "no such directory" in out
    d = run_dir("pilot", [])
    out = validate(capsys, p)
    assert "not computed: pilot run" in out and "0 seed(s) with a progress_final_cm in rows.jsonl (2 needed)" in out
    values = [0.0, 1.0, 3.0, -2.0, 5.0]
    rows = [make_row(s, progress_final_cm=v) for s, v in enumerate(values)] + [make_row(9, progress_final_cm=None)]
    (d / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn')
    sd = math.sqrt(2) * float(np.std(values, ddof=1))
    out = validate(capsys, p)
    assert f"paired progress delta (SD {sd:.2f} cm, sqrt(2) x one arm's per-seed SD over 5 seeds of the pilot" in out
    assert "arms taken as uncorrelated" in out
