"""Draw docs/comparison-type1.png and docs/comparison-power.png (prereg/stats/operating.py) and print the numbers
docs/prereg.md quotes. Seeded; about a minute (STEP's 200-seed policy is synthesised once and cached)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from prereg.document.comparison_spec import SCENE_MAX_DISTANCE_CM, ComparisonSpec  # noqa: E402
from prereg.stats.comparison import run_betting  # noqa: E402
from prereg.stats.operating import batch_seeds, pair_probs, run_sequences, simulate_deltas, simulate_success  # noqa: E402
from prereg.stats.step import step_oc  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
ALPHA, N, SIMS = 0.05, 200, 10_000
LAB_SD = (1.325 - 0.147) / 2 / 1.96 * 10  # reproduces the lab notes' CI95 [+0.147, +1.325] on 100 seeds


def spec(**kw):
    base = dict(arm_a="a", arm_b="b", metric="success", test="step", alpha=ALPHA, minimum_effect=None, max_seeds=N)
    base.update(kw)
    return ComparisonSpec(**base)


def type_one():
    ps = [0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=90)
    grid = np.linspace(0.01, 0.99, 41)
    ax.plot(grid, [sum(step_oc(N, ALPHA, p, p)[:2]) for p in grid], "-", color="C0", label="STEP, exact (DP)")
    ax.plot(grid, [sum(step_oc(N, ALPHA, p, p, randomized=True)[:2]) for p in grid], ":", color="C0",
            label="STEP randomised (the package), exact")
    rng = np.random.default_rng(1)
    for rho, mark in ((0.0, "o"), (0.5, "^")):
        for k, test in enumerate(("step", "savi", "fixed")):
            rates = []
            for p in ps:
                a, b = simulate_success(rng, SIMS, N, p, p, rho)
                code, _ = run_sequences(spec(test=test), N, a=a, b=b)
                rates.append(np.mean(code > 0))
            print(f"type-I {test} rho {rho}: " + ", ".join(f"{p:g}: {r:.4f}" for p, r in zip(ps, rates)))
            ax.plot(ps, rates, mark, color=f"C{k}", mfc="none" if rho else f"C{k}",
                    label=f"{test}, simulated, {'correlated pairs (rho 0.5)' if rho else 'independent'}")
    d = simulate_deltas(rng, SIMS, N, 0.0, LAB_SD, 10.0)
    r = np.mean(run_betting(d, 10.0, ALPHA, None)[0] > 0)
    print(f"type-I betting progress (SD {LAB_SD:.3f}, bound 10 cm): {r:.4f}")
    ax.axhline(ALPHA, color="k", lw=0.8)
    ax.axhline(ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SIMS), color="k", lw=0.5, ls="--")
    ax.set(xlabel="success rate of both arms", ylabel="P(B better or B worse)", ylim=(0, 0.065),
           title=f"Type-I error, {N} seeds, alpha {ALPHA} (10,000 sequences per point)")
    ax.legend(fontsize=6, loc="lower center", ncol=2)
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-type1.png")


def at_power(code, when, n_cap, target=0.8):
    """The smallest truncation n at which P(B better by n) reaches target, and E[seeds] truncated there."""
    t = np.where(code > 0, when, n_cap + 1)
    for n in range(2, n_cap + 1):
        if np.mean((code == 1) & (t <= n)) >= target:
            return n, float(np.minimum(t, n).mean())
    return None, None


def power(target=0.8):
    """At the same alpha and power (80%): each sequential test truncated at the fewest seeds that give it 80%
    (STEP: its 200-seed policy truncated, which only lowers its type-I), E[seeds] there against the batch's n."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    rng = np.random.default_rng(2)
    pbs = [0.05, 0.07, 0.09, 0.12, 0.15, 0.2]
    for k, test in enumerate(("step", "savi")):
        ratios = []
        for pb in pbs:
            a, b = simulate_success(rng, 4000, N, 0.01, pb)
            code, _ = run_sequences(spec(test=test), N, a=a, b=b)
            when = np.where(code > 0, _, N)
            n_cap, en = at_power(code, when, N, target)
            bo, ao = pair_probs(0.01, pb)
            nb = batch_seeds(target, b_only=bo, a_only=ao)
            ratios.append(en / nb if en else np.nan)
            print(f"success 0.01 vs {pb}: batch {nb} seeds for {target:.0%}; {test} reaches it truncated at {n_cap}, "
                  f"E[seeds] {en if en is None else round(en, 1)} -> ratio {en / nb if en else float('nan'):.2f}")
        ax1.plot(pbs, ratios, "o-", color=f"C{k}", label=test)
    ax1.axhline(0.5, color="k", ls="--", lw=0.8, label="the goal (half)")
    ax1.axvline(0.09, color="grey", lw=0.5)
    ax1.set(xlabel="B's success rate (A's: 0.01, independent)", ylabel=f"E[seeds] / batch seeds, both at {target:.0%} power",
            ylim=(0, 1.4), title="Success (batch: exact McNemar)")
    ax1.legend(fontsize=7)
    deltas = [0.5, 0.73, 1.0, 1.5, 2.0]
    for k, bound in enumerate((5.0, 10.0, 20.0, SCENE_MAX_DISTANCE_CM)):
        ratios = []
        for dl in deltas:
            nb = batch_seeds(target, delta=dl, sd=LAB_SD)
            cap = 3 * nb
            d = simulate_deltas(rng, 2000, cap, dl, LAB_SD, bound)
            code, when = run_betting(d, bound, ALPHA, None)
            n_cap, en = at_power(code, when, cap, target)
            ratios.append(en / nb if en else np.nan)
            print(f"progress +{dl} cm, bound {bound:g}: batch {nb} seeds for {target:.0%}; betting reaches it at "
                  f"{n_cap}, E[seeds] {en if en is None else round(en, 1)} -> {en / nb if en else float('nan'):.2f}")
        ax2.plot(deltas, ratios, "o-", color=f"C{k}", label=f"bound +/-{bound:g} cm")
    ax2.axhline(0.5, color="k", ls="--", lw=0.8)
    ax2.axvline(0.73, color="grey", lw=0.5)
    ax2.set(xlabel=f"mean paired delta, cm (SD {LAB_SD:.2f}; clipped at the bound)", ylim=(0, 2.4),
            title="Progress (batch: paired t), betting sequence")
    ax2.legend(fontsize=7, title="scene's 272 cm: 80% never reached", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-power.png")


if __name__ == "__main__":
    import sys

    if "--power-only" not in sys.argv:
        type_one()
    power()
    for f in ("comparison-type1.png", "comparison-power.png"):
        print(f, (DOCS / f).stat().st_size // 1024, "KB")
