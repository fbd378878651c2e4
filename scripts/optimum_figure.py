"""Draw docs/comparison-optimum.png and print the table docs/prereg.md quotes: at 9% vs 1%, 30% vs 10%, 50% vs
30% and 60% vs 30% (two-sided alpha 0.05, power 0.8, max seeds 1.5x the batch's), the expected seeds at the
design of Wald's floor, the optimum of any test claiming on the discordant walk (prereg/stats/paired_optimal.py),
test optimal (the default), the sprt, and the best deterministic walk test found (no futility stop), each as a
ratio to the batch, to the floor and to the optimum; what each spends at no difference (A's rate); and the
spread of the randomised optimum's realisations. All exact (dynamic programming); a few minutes on one core.

    .venv/bin/python scripts/optimum_figure.py [--table-only]
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prereg.stats import paired_optimal as O  # noqa: E402
from prereg.stats import paired_sprt as P  # noqa: E402
from prereg.stats.operating import batch_seeds, pair_probs  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
ALPHA, POWER, CAP = 0.05, 0.8, 1.5
EFFECTS = ((0.01, 0.09), (0.1, 0.3), (0.3, 0.5), (0.3, 0.6))
GOAL = 1.15  # issue 47: within 1.15x the floor, or within 2% of the optimum


def row(p_lo: float, p_hi: float) -> dict:
    bo, ao = pair_probs(p_lo, p_hi)
    nb = batch_seeds(POWER, b_only=bo, a_only=ao, alpha=ALPHA)
    n = int(round(CAP * nb))
    floor = P.floor_seeds(bo, ao, ALPHA, POWER)
    opt = O.optimum(p_lo, p_hi, ALPHA, POWER, n)
    best = O.make_optimal(p_lo, p_hi, ALPHA, POWER, n)
    sprt = P.make_design(p_lo, p_hi, ALPHA, POWER, n)
    test = O.make_walk_test(p_lo, p_hi, ALPHA, POWER, n)
    at = P.oc(test, bo, ao)
    null = (p_lo * (1 - p_lo),) * 2  # no difference at A's rate, arms independent
    real = opt.realisations()
    return {"effect": f"{p_hi:.0%} vs {p_lo:.0%}", "batch": nb, "n": n, "floor": floor, "optimum": opt.value,
            "best": best.expected_seeds, "best_power": best.achieved_power, "best_type1": best.type1,
            "sprt": P.oc(sprt, bo, ao).expected_seeds, "sprt_power": P.oc(sprt, bo, ao).better,
            "sprt_null": P.oc(sprt, *null).expected_seeds, "best_null": P.oc(best, *null).expected_seeds,
            "optimal": at.expected_seeds, "optimal_power": (at.better, P.oc(test, p_hi - p_lo, 0.0).better),
            "optimal_null": P.oc(test, *null).expected_seeds,
            "optimal_type1": sum(x for x in (P.oc(test, 0.5, 0.5).better, P.oc(test, 0.5, 0.5).worse)),
            "randomised": len(opt.randomised), "real_type1": (min(r[2] for r in real), max(r[2] for r in real)),
            "real_power": (min(r[1] for r in real), max(r[1] for r in real))}


def table(rows: list[dict]) -> list[str]:
    out = ["| at the design (E[seeds] / batch; x floor; x optimum) | " + " | ".join(
        f"{r['effect']} (batch {r['batch']}, max {r['n']})" for r in rows) + " |", "|---" * (len(rows) + 1) + "|"]
    out.append("| information floor (Wald) | " + " | ".join(f"{r['floor'] / r['batch']:.3f}" for r in rows) + " |")
    out.append("| **optimum** (any test claiming on the discordant walk) | " + " | ".join(
        f"**{r['optimum'] / r['batch']:.3f}; {r['optimum'] / r['floor']:.2f}x**" for r in rows) + " |")
    out.append("| **test optimal** (power, nested; worst type-I) | " + " | ".join(
        f"**{r['optimal'] / r['batch']:.3f}; {r['optimal'] / r['floor']:.2f}x; {r['optimal'] / r['optimum']:.2f}x** "
        f"({r['optimal_power'][0]:.3f}, {r['optimal_power'][1]:.3f}; {r['optimal_type1']:.4f})" for r in rows) + " |")
    out.append("| best deterministic walk test, no futility stop (power; type-I) | " + " | ".join(
        f"{r['best'] / r['batch']:.3f}; {r['best'] / r['floor']:.2f}x; {r['best'] / r['optimum']:.2f}x "
        f"({r['best_power']:.3f}; {r['best_type1']:.4f})" for r in rows) + " |")
    out.append("| sprt (power) | " + " | ".join(
        f"{r['sprt'] / r['batch']:.3f}; {r['sprt'] / r['floor']:.2f}x; {r['sprt'] / r['optimum']:.2f}x "
        f"({r['sprt_power']:.3f})" for r in rows) + " |")
    out.append("| at no difference, A's rate: optimal / sprt / walk test | " + " | ".join(
        f"{r['optimal_null'] / r['batch']:.2f} / {r['sprt_null'] / r['batch']:.2f} / {r['best_null'] / r['batch']:.2f}"
        for r in rows) + " |")
    out.append("| the randomised optimum once its uniforms are fixed: type-I; power | " + " | ".join(
        f"{r['real_type1'][0]:.4f}-{r['real_type1'][1]:.4f}; {r['real_power'][0]:.3f}-{r['real_power'][1]:.3f}"
        for r in rows) + " |")
    return out


def figure(rows: list[dict]) -> None:
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    x = np.arange(len(rows))
    bars = (("floor", "information floor (Wald)", "0.7"), ("optimum", "optimum (randomised walk test)", "C2"),
            ("optimal", "test optimal (the default)", "C0"), ("sprt", "sprt", "C3"))
    for i, (key, label, colour) in enumerate(bars):
        ax.bar(x + (i - 1.5) * 0.2, [r[key] / r["batch"] for r in rows], 0.2, label=label, color=colour)
    for j, r in enumerate(rows):
        ax.plot([j - 0.4, j + 0.4], [GOAL * r["floor"] / r["batch"]] * 2, "k--", lw=1.0,
                label="1.15x the floor" if j == 0 else None)
    ax.set_xticks(x, [f"{r['effect']}\nbatch {r['batch']}, max {r['n']}" for r in rows], fontsize=8)
    ax.set_ylabel("E[seeds] at the design / the batch's seeds")
    ax.set_ylim(0, 1.0)
    of = [r["optimum"] / r["floor"] for r in rows]
    tf = [r["optimal"] / r["floor"] for r in rows]
    sf = [r["sprt"] / r["floor"] for r in rows]
    ax.set_title(f"Alpha {ALPHA:g}, power {POWER:g}: the optimum {min(of):.2f}-{max(of):.2f}x the floor, test optimal "
                 f"{min(tf):.2f}-{max(tf):.2f}x, the sprt {min(sf):.2f}-{max(sf):.2f}x", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-optimum.png", dpi=110)


def main() -> None:
    rows = [row(lo, hi) for lo, hi in EFFECTS]
    print("\n".join(table(rows)))
    if "--table-only" not in sys.argv:
        figure(rows)
        print(f"wrote {DOCS / 'comparison-optimum.png'}")


if __name__ == "__main__":
    main()
