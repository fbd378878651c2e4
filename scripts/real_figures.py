"""docs/real-width.png and docs/real-saved.png: what the sim buys a real read, on synthetic paired data
(prereg/stats/real_sim.py: SureSim's appendix setup, N sim seeds with K = 20 rollouts each, n of them
drawn uniformly for real trials, the real rate about 0.5), and the coverage table in docs/real.md.

- real-width.png: the mean width of the 95% interval on the real success rate against n real trials,
  at several sim-real correlations rho: UniformPPI's betting interval (solid) and its normal twin
  (dashed) beside the real-only betting interval and Wilson (grey).
- real-saved.png: the real trials saved against a real-only betting interval of the same width: for
  each n, the n' real trials the real-only interval needs to be as narrow as UniformPPI's at n
  (interpolated on its width curve), as 1 - n / n'.
- the coverage of every interval, pooled over n (the table printed last).

    .venv/bin/python scripts/real_figures.py [--reps 40] [--big-n 700]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prereg.stats import real_math as rm  # noqa: E402
from prereg.stats.real_sim import World, paired_sample  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs"
ALPHA = 0.05
NS = (10, 20, 40, 60, 90, 120)
RHOS = (0.0, 0.6, 0.8, 0.95)
B = 2.5  # seeds differ a lot: the sim has something to predict


def widths(world: World, n: int, big_n: int, reps: int, rng) -> dict[str, tuple[float, float]]:
    w: dict[str, list[float]] = {}
    cover: dict[str, list[bool]] = {}
    corr = []
    for _ in range(reps):
        f, mask, y = paired_sample(world, rng, big_n, n)
        fp = f[mask]
        got = {"ppi_betting": rm.ppi_betting(y, fp, f, mask, ALPHA), "ppi_normal": rm.ppi_normal(y, fp, f, ALPHA)[1:],
               "ppi_two_stage": rm.ppi_two_stage(y, fp, f, ALPHA), "real_betting": rm.betting_interval(y, 0, 1, ALPHA),
               "wilson": rm.wilson(int(y.sum()), n, ALPHA)}
        for k, (lo, hi) in got.items():
            w.setdefault(k, []).append(hi - lo)
            cover.setdefault(k, []).append(lo <= world.theta <= hi)
        c = rm.correlation(y, fp)
        corr.append(np.nan if c is None else c)
    out = {k: (float(np.mean(v)), float(np.mean(cover[k]))) for k, v in w.items()}
    out["corr"] = (float(np.nanmean(corr)), 1.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--big-n", type=int, default=700)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261207)
    table = {rho: {n: widths(World(b=B, rho=rho), n, args.big_n, args.reps, rng) for n in NS} for rho in RHOS}

    fig, ax = plt.subplots(figsize=(7.2, 4.2), dpi=90)
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, len(RHOS)))
    ref = table[RHOS[0]]
    ax.plot(NS, [ref[n]["real_betting"][0] for n in NS], color="0.4", lw=2, label="real only, betting")
    ax.plot(NS, [ref[n]["wilson"][0] for n in NS], color="0.4", lw=1, ls=":", label="real only, Wilson")
    for rho, c in zip(RHOS, colours):
        corr = np.mean([table[rho][n]["corr"][0] for n in NS])
        ax.plot(NS, [table[rho][n]["ppi_betting"][0] for n in NS], color=c, lw=2,
                label=f"UniformPPI betting, rho {rho:g} (corr(Y, f) {corr:.2f})")
        ax.plot(NS, [table[rho][n]["ppi_normal"][0] for n in NS], color=c, lw=1, ls="--")
    ax.set_xlabel("real trials n")
    ax.set_ylabel("mean 95% interval width")
    ax.set_title(f"Interval on the real success rate, N = {args.big_n} sim seeds (dashed: normal twin)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(DOCS / "real-width.png")

    fig, ax = plt.subplots(figsize=(7.2, 3.6), dpi=90)
    real_w = np.array([ref[n]["real_betting"][0] for n in NS])  # decreasing in n
    for rho, c in zip(RHOS, colours):
        saved = []
        for n in NS:
            target = table[rho][n]["ppi_betting"][0]
            need = float(np.interp(-target, -real_w, NS, left=np.nan, right=np.nan))  # outside n 10-120: not drawn
            saved.append(np.nan if np.isnan(need) else 100 * (1 - n / need))
        ax.plot(NS, saved, color=c, lw=2, marker="o", label=f"rho {rho:g}")
    ax.axhline(0, color="0.3", lw=1)
    ax.set_xlabel("real trials n with the sim (UniformPPI, betting)")
    ax.set_ylabel("% real trials saved")
    ax.set_title("Real trials saved against a real-only betting interval of the same width", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(DOCS / "real-saved.png")

    print(f"coverage of 95% intervals ({args.reps * len(NS)} draws per row: {args.reps} at each n of {NS}, N = {args.big_n}):")
    print("| rho | corr(Y, f) | UniformPPI betting | two-stage | normal twin | real betting | Wilson |")
    print("|---|---|---|---|---|---|---|")
    for rho in RHOS:
        cells = [float(np.mean([table[rho][n][k][1] for n in NS])) for k in
                 ("ppi_betting", "ppi_two_stage", "ppi_normal", "real_betting", "wilson")]
        corr = np.mean([table[rho][n]["corr"][0] for n in NS])
        print(f"| {rho:g} | {corr:.2f} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print("widths at n = 60:", {rho: {k: round(v[0], 3) for k, v in table[rho][60].items()} for rho in RHOS})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
