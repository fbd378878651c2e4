"""docs/power.png: power against effect for a 100-seed plan, exact (prereg/stats/power.py) vs simulated.

Three panels, one per test `validate` reports: the exact binomial test of one arm's rate
(assumed 0.1), Newcombe's difference test against a comparator at 0.1 (arms independent), and
the paired t test on progress_final_cm deltas at an SD of 2.5 cm; a fourth draws the sawtooth of
power against seeds (0.24 against an assumed 0.09) and the seeds `validate` says it needs. Lines: the exact power;
points: the share of 10,000 simulated plans (numpy seeded) that reject, with 95% Monte Carlo
bars; the dotted line marks the minimum detectable effect at 80% power.

    .venv/bin/python scripts/power_figure.py [--out docs/power.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prereg.stats import power  # noqa: E402

N = 100
P0 = 0.1
SD = 2.5
PLANS = 10_000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "power.png"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261201)
    fig, axes = plt.subplots(1, 4, figsize=(14.5, 3.4), dpi=90)

    # the primary read: one arm's rate against its assumed 0.1
    ax = axes[0]
    rates = np.linspace(0.0, 0.3, 301)[1:]
    ax.plot(rates, power.binom_power(N, P0, rates), color="C0", lw=1.5, label="exact")
    p_of = power.binom_pvalues(N, P0)
    pts = np.round(np.arange(0.02, 0.30, 0.02), 3)
    sim = [float(np.mean(p_of[rng.binomial(N, r, PLANS)] <= power.ALPHA)) for r in pts]
    _points(ax, pts, sim)
    m = power.rate_mde(N, P0)
    _mde(ax, [m.up, m.down])
    ax.set_title(f"success rate vs assumed {P0:g}\nexact binomial test", fontsize=9)
    ax.set_xlabel("true success rate")

    # the success difference: an arm against a comparator at 0.1
    ax = axes[1]
    rates = np.linspace(0.0, 0.4, 201)[1:]
    ax.plot(rates, power.difference_power(N, P0, rates), color="C0", lw=1.5, label="exact")
    pts = np.round(np.arange(0.02, 0.40, 0.03), 3)
    sim = []
    for r in pts:
        lo, hi = power.newcombe_interval(rng.binomial(N, r, PLANS), N, rng.binomial(N, P0, PLANS), N)
        sim.append(float(np.mean((lo > 0) | (hi < 0))))
    _points(ax, pts, sim)
    m = power.difference_mde(N, P0)
    _mde(ax, [m.up, m.down])
    ax.set_title(f"success difference, comparator at {P0:g}\nNewcombe interval excludes 0 (independent arms)", fontsize=9)
    ax.set_xlabel("the arm's true success rate")

    # the paired progress delta
    ax = axes[2]
    deltas = np.linspace(0, 1.4, 141)
    ax.plot(deltas, [power.delta_power(d, SD, N) for d in deltas], color="C0", lw=1.5, label="exact (noncentral t)")
    pts = np.round(np.arange(0.1, 1.4, 0.15), 3)
    sim = [float(np.mean(stats.ttest_1samp(rng.normal(d, SD, (PLANS, N)), 0.0, axis=1).pvalue <= power.ALPHA)) for d in pts]
    _points(ax, pts, sim)
    _mde(ax, [power.delta_mde(SD, N)])
    ax.set_title(f"paired progress delta, SD {SD:g} cm\npaired t test", fontsize=9)
    ax.set_xlabel("true mean delta (cm)")

    # the sawtooth: power against seeds, and where it stays at 80%
    ax = axes[3]
    ns = np.arange(10, 91)
    ax.plot(ns, [float(power.binom_power(int(n), 0.09, 0.24)[0]) for n in ns], "-o", ms=2, color="C0", lw=1,
            label="exact, 0.24 against 0.09")
    need = power.rate_seeds(0.09, 0.24)
    ax.axvline(need.first, color="C3", ls=":", lw=1.2)
    ax.annotate(f"first 80%: {need.first}", (need.first, 0.3), fontsize=7, color="C3", rotation=90, ha="right")
    ax.axvline(need.n, color="C2", ls="--", lw=1.2)
    ax.annotate(f"stays >= 80%: {need.n}", (need.n, 0.3), fontsize=7, color="C2", rotation=90, ha="left")
    ax.set_title("seeds needed without the sawtooth\nexact binomial test", fontsize=9)
    ax.set_xlabel("seeds")
    for ax in axes:
        ax.axhline(power.POWER, color="0.6", lw=0.8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.25)
        ax.tick_params(labelsize=8)
    axes[0].set_ylabel(f"power ({N} seeds, alpha {power.ALPHA:g}, two-sided)")
    axes[2].legend(fontsize=7, loc="upper left")
    axes[3].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Power before spending: a {N}-seed plan; lines exact, points {PLANS:,} simulated plans each", fontsize=10)
    fig.tight_layout()
    out = Path(args.out)
    fig.savefig(out, dpi=90)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")
    return 0


def _points(ax, x, sim) -> None:
    sim = np.asarray(sim)
    err = 1.96 * np.sqrt(sim * (1 - sim) / PLANS)
    ax.errorbar(x, sim, yerr=err, fmt="o", ms=3, color="C3", elinewidth=1, label=f"simulated ({PLANS:,} plans)")


def _mde(ax, xs) -> None:
    for x in xs:
        if x is not None:
            ax.axvline(x, color="C2", ls=":", lw=1.2)
            ax.annotate(f"MDE {x:.3g}", (x, 0.05), fontsize=7, color="C2", rotation=90, ha="right")


if __name__ == "__main__":
    sys.exit(main())
