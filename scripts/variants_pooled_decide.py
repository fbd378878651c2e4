"""The decisions on the pooled rate (prereg/stats/variants_decide.py, `read_variant: pooled`) against
reading base alone at the same design: the two tables in docs/prereg.md.

Crossed designs simulated with numpy (seeded): each seed run on every variant, variant v succeeding
with probability rates[v], one seed's variants correlated through a shared seed difficulty (Gaussian
copula, rho); a comparison run's two arms share half of it (rho_arms 0.5). Base alone: the one-arm
SPRT's exact operating characteristic at the base rate (prereg.stats.sequential.oc), and for a
comparison the registered test savi on the base column of the same simulated runs. Expected seeds
count seeds read: either way each seed runs every variant, so the episodes are seeds x variants.
With 4,000 runs a cell's Monte Carlo standard error is at most 0.008.

    .venv/bin/python scripts/variants_pooled_decide.py [--sims 4000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prereg.stats.sequential import Sprt, oc  # noqa: E402
from prereg.stats.variants_decide import comparison_oc, pooled_sequential_oc  # noqa: E402

SPRT = Sprt(0.3, 0.6, 0.05, 0.1)
SEEDS = 60
ONE_ARM = ((0.3, 0.3, 0.3, 0.3, 0.3), (0.45, 0.2, 0.3, 0.35, 0.2), (0.6, 0.6, 0.6, 0.6, 0.6),
           (0.45, 0.5, 0.6, 0.75, 0.7), (0.6, 0.3, 0.4, 0.5, 0.45))
RHOS = (0.0, 0.5, 0.9)
ALPHA, EFFECT, MAX_SEEDS = 0.05, 0.15, 100
PAIRS = (((0.5, 0.5, 0.5, 0.5), (0.5, 0.5, 0.5, 0.5)), ((0.1, 0.05, 0.1, 0.15), (0.1, 0.05, 0.1, 0.15)),
         ((0.4, 0.3, 0.5, 0.4), (0.6, 0.5, 0.7, 0.6)), ((0.5, 0.3, 0.4, 0.4), (0.5, 0.6, 0.7, 0.6)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=4000)
    args = ap.parse_args(argv)
    s = SPRT
    print(f"One arm: H0 p <= {s.p0:g} vs H1 p >= {s.p1:g}, alpha {s.alpha:g}, beta {s.beta:g}, {SEEDS} seeds. "
          "Each cell: P(accept H1) / P(accept H0) / expected seeds.\n")
    print("| variant rates (base first) | pooled | " + " | ".join(f"pooled, rho {r:g}" for r in RHOS)
          + " | base alone (SPRT) |")
    print("|---|---|" + "---|" * (len(RHOS) + 1))
    for rates in ONE_ARM:
        cells = []
        for rho in RHOS:
            r = pooled_sequential_oc(s, rates, rho, SEEDS, sims=args.sims, seed=7)
            cells.append(f"{r.accept_h1:.3f} / {r.accept_h0:.3f} / {r.expected_episodes:.1f}")
        b = oc(s, SEEDS, rates[0])
        cells.append(f"{b.accept_h1:.3f} / {b.accept_h0:.3f} / {b.expected_episodes:.1f}")
        print(f"| {', '.join(f'{p:g}' for p in rates)} | {sum(rates) / len(rates):.2f} | " + " | ".join(cells) + " |")
    print(f"\nComparison: alpha {ALPHA:g} two-sided, minimum effect {EFFECT:g}, {MAX_SEEDS} seeds, arms sharing half "
          "the seed's difficulty. Each cell: P(B better) / P(B worse) / P(equivalent) / expected seeds.\n")
    print("| rates A / rates B | " + " | ".join(f"rho {r:g}: pooled; base (savi)" for r in RHOS) + " |")
    print("|---|" + "---|" * len(RHOS))
    for ra, rb in PAIRS:
        cells = []
        for rho in RHOS:
            got = comparison_oc(ALPHA, EFFECT, ra, rb, MAX_SEEDS, rho, 0.5, sims=args.sims, seed=7)
            cells.append("; ".join(f"{g['better']:.3f} / {g['worse']:.3f} / {g['equivalent']:.3f} / "
                                   f"{g['expected_seeds']:.0f}" for g in got.values()))
        rates = f"{', '.join(f'{p:g}' for p in ra)} / {', '.join(f'{p:g}' for p in rb)}"
        print(f"| {rates} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
