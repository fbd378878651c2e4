"""The figures behind two of the verdict engine's claims (docs/prereg.md), from the tests' own simulations.

    .venv/bin/python scripts/verdict_figures.py      # writes docs/sequential-order.png, docs/newcombe-coverage.png

1. Sequential decisions read the plan prefix: P(accept H1 | p0) of the registered SPRT stays at its
   exact level at any number of workers, while reading rows in completion order (successes end
   their episodes early) inflates it (tests/prereg/test_verdict.py simulates the same thing).
2. Newcombe's paired interval for a success difference covers at about its level where the Wald
   form the console used to show does not.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from prereg.stats.reads import newcombe_paired_ci  # noqa: E402
from prereg.stats.sequential import Sprt, oc  # noqa: E402
from tests.prereg.test_verdict import simulate  # noqa: E402


def sequential_order(out: Path, sims: int = 2000) -> None:
    import matplotlib.pyplot as plt

    spec, planned = Sprt(p0=0.1, p1=0.6, alpha=0.05, beta=0.1), 20
    exact = oc(spec, planned, spec.p0).accept_h1
    workers = [1, 2, 4, 8, 16, 32]
    rows = {}
    for engine in (True, False):
        rows[engine] = [simulate(spec, planned, spec.p0, w, sims, np.random.default_rng(100 + w), engine=engine)
                        for w in workers]
        print("plan prefix" if engine else "completion order", dict(zip(workers, rows[engine])))
    se = math.sqrt(exact * (1 - exact) / sims)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    ax.plot(workers, rows[False], "o-", color="#c0392b", label="rows in completion order (before)")
    ax.plot(workers, rows[True], "s-", color="#2471a3", label="plan prefix (the verdict engine)")
    ax.axhline(exact, color="black", lw=1, ls="--", label=f"exact level in plan order ({exact:.3f})")
    ax.fill_between(workers, exact - 2 * se, exact + 2 * se, color="grey", alpha=0.2, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(workers, [str(w) for w in workers])
    ax.set_xlabel("parallel workers")
    ax.set_ylabel("P(accept H1 | p = p0)")
    ax.set_title(f"SPRT p0 {spec.p0} vs p1 {spec.p1}, {planned} seeds; successes end early ({sims} runs each)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print("wrote", out)


def newcombe_coverage(out: Path, n: int = 30, sims: int = 2000) -> None:
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(11)
    pas = np.linspace(0.05, 0.95, 19)
    cov = {"newcombe": [], "wald": []}
    for pa in pas:
        pb, rho = max(0.02, pa - 0.15), 0.3
        both = pa * pb + rho * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
        both = min(both, pa, pb)
        cells = np.clip([both, pa - both, pb - both, 1 - pa - pb + both], 0, None)
        tables = rng.multinomial(n, cells / cells.sum(), size=sims)
        uniq, counts = np.unique(tables, axis=0, return_counts=True)
        truth = cells[1] / cells.sum() - cells[2] / cells.sum()
        hit_n = hit_w = 0
        for t, c in zip(uniq, counts):
            a, b, cc, d = map(int, t)
            lo, hi = newcombe_paired_ci(a, b, cc, d)
            hit_n += c * (lo <= truth <= hi)
            dd = (b - cc) / n
            half = 1.959964 * math.sqrt(max(0.0, b + cc - (b - cc) ** 2 / n)) / n
            hit_w += c * (dd - half <= truth <= dd + half)
        cov["newcombe"].append(hit_n / sims)
        cov["wald"].append(hit_w / sims)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    ax.plot(pas, cov["newcombe"], "s-", color="#2471a3", label="Newcombe paired score (now)")
    ax.plot(pas, cov["wald"], "o-", color="#c0392b", label="Wald paired (the console before)")
    ax.axhline(0.95, color="black", lw=1, ls="--")
    ax.set_ylim(0.6, 1.0)
    ax.set_xlabel("success rate of the first arm (the second 0.15 lower, correlation 0.3)")
    ax.set_ylabel("coverage of the 95% interval")
    ax.set_title(f"Paired success difference on {n} shared seeds ({sims} simulated tables each)", fontsize=9)
    ax.legend(fontsize=8, loc="lower center")
    fig.tight_layout()
    fig.savefig(out)
    print("wrote", out, "min coverage newcombe", min(cov["newcombe"]), "wald", min(cov["wald"]))


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    sequential_order(REPO / "docs" / "sequential-order.png")
    newcombe_coverage(REPO / "docs" / "newcombe-coverage.png")
