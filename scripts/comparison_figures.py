"""Draw docs/comparison-type1.png, docs/comparison-power.png and docs/comparison-oc.png (prereg/stats/comparison.py,
prereg/stats/paired_sprt.py) and print the numbers and the table docs/prereg.md quotes. Seeded; a few minutes on
one core (STEP's 200-seed policy is synthesised once and cached).

    .venv/bin/python scripts/comparison_figures.py [--table-only]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from prereg.document.comparison_spec import SCENE_MAX_DISTANCE_CM, ComparisonSpec  # noqa: E402
from prereg.stats import paired_sprt as P  # noqa: E402
from prereg.stats.comparison_engines import discordant_log_e, run_betting  # noqa: E402
from prereg.stats.operating import (  # noqa: E402
    batch_seeds,
    floor_seeds_normal,
    mcnemar_power,
    pair_probs,
    run_sequences,
    simulate_deltas,
    simulate_success,
)
from prereg.stats.step import step_oc  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
ALPHA, POWER, N, SIMS = 0.05, 0.8, 200, 10_000
LAB_SD = (1.325 - 0.147) / 2 / 1.96 * 10  # reproduces the lab notes' CI95 [+0.147, +1.325] on 100 seeds
DESIGNS = ((0.01, 0.09), (0.3, 0.6))  # the lab notes' 9% vs 1%, and 60% vs 30%
SPRT_CAP = 1.5  # the SPRT's max seeds, as a multiple of the batch's seeds (the figures' and the table's)


def spec(**kw) -> ComparisonSpec:
    base = dict(arm_a="a", arm_b="b", metric="success", test="step", alpha=ALPHA, minimum_effect=None, max_seeds=N)
    base.update(kw)
    return ComparisonSpec(**base)


def savi_boundary(n: int) -> P.Boundary:
    """The discordant e-process of test savi as a walk boundary: B better at the fewest wins whose e-value
    reaches 2/alpha (its equivalence read, the betting sequence, left out: exact for its directions)."""
    w, lo = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    hit = discordant_log_e(w, lo) >= math.log(2 / ALPHA)
    return P.Boundary(tuple(int(x) for x in np.where(hit.any(0), hit.argmax(0), n + 1)), n)


def batch_for(pa: float, pb: float) -> int:
    bo, ao = pair_probs(pa, pb)
    return batch_seeds(POWER, b_only=bo, a_only=ao, alpha=ALPHA)


def sprt_for(pa: float, pb: float) -> P.Design:
    return P.make_design(pa, pb, ALPHA, POWER, int(round(SPRT_CAP * batch_for(pa, pb))))


def step_at_power(pa: float, pb: float):
    """STEP's 200-seed policy truncated at the fewest seeds that give it 80% at (pa, pb): (n, (better, worse, E))."""
    return truncated_at_power(lambda n: step_oc(N, ALPHA, pa, pb, n), N)


def savi_at_power(bo: float, ao: float, n_hi: int) -> int | None:
    """The fewest max seeds at which the discordant e-process reaches 80% at the pair law (bo, ao)."""
    return truncated_at_power(lambda n: (P.oc(savi_boundary(n), bo, ao).better,), n_hi)[0]


def truncated_at_power(oc_at, n_hi: int):
    """The fewest seeds n at which the test truncated there reaches POWER at the design: (n, oc at n)."""
    lo, hi = 2, n_hi
    if oc_at(hi)[0] < POWER:
        return None, None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if oc_at(mid)[0] >= POWER:
            hi = mid
        else:
            lo = mid
    return hi, oc_at(hi)


# ---------------------------------------------------------------- the table docs/prereg.md quotes


def table() -> None:
    """Expected seeds / batch seeds at two-sided alpha 0.05 and 80% power: every test sized to 80% at the design
    (STEP and savi truncated at the fewest seeds that give it; the SPRT with max seeds 1.5 x the batch's)."""
    print(f"| test | {' | '.join(f'{pb:.0%} vs {pa:.0%} (batch {batch_for(pa, pb)})' for pa, pb in DESIGNS)} |"
          " no difference (A's rate; the mid rate) | 1.5x the effect | worst case |")
    rows: dict[str, list[str]] = {"information floor": [], "STEP": [], "savi": [], "sprt": [], "fixed": []}
    for pa, pb in DESIGNS:
        nb = batch_for(pa, pb)
        bo, ao = pair_probs(pa, pb)
        mid = (pa + pb) / 2
        big = pa + 1.5 * (pb - pa)
        laws = {"design": (bo, ao), "null": pair_probs(pa, pa), "mid": pair_probs(mid, mid), "big": pair_probs(pa, big)}
        fl = P.floor_seeds(bo, ao, ALPHA, POWER)
        rows["information floor"].append(
            (f"{fl / nb:.2f}", f"{P.floor_seeds_null(laws['null'][0], bo, ao, ALPHA, POWER) / nb:.2f}; "
             f"{P.floor_seeds_null(laws['mid'][0], bo, ao, ALPHA, POWER) / nb:.2f}",
             f"{P.floor_seeds(*laws['big'], ALPHA, POWER) / nb:.2f}", ""))
        n80, _ = step_at_power(pa, pb)
        st = {k: step_oc(N, ALPHA, x, y, n80) for k, (x, y) in
              {"design": (pa, pb), "null": (pa, pa), "mid": (mid, mid), "big": (pa, big)}.items()}
        rows["STEP"].append((f"{st['design'][2] / nb:.2f}", f"{st['null'][2] / nb:.2f}; {st['mid'][2] / nb:.2f}",
                             f"{st['big'][2] / nb:.2f} (power {st['big'][0]:.2f})", f"{n80 / nb:.2f} ({n80})"))
        n80 = savi_at_power(bo, ao, 3 * nb)
        sv = {k: P.oc(savi_boundary(n80), *law) for k, law in laws.items()}
        rows["savi"].append((f"{sv['design'].expected_seeds / nb:.2f}",
                             f"{sv['null'].expected_seeds / nb:.2f}; {sv['mid'].expected_seeds / nb:.2f}",
                             f"{sv['big'].expected_seeds / nb:.2f} (power {sv['big'].better:.2f})",
                             f"{n80 / nb:.2f} ({n80})"))
        d = sprt_for(pa, pb)
        sp = {k: P.oc(d, *law) for k, law in laws.items()}
        rows["sprt"].append((f"{sp['design'].expected_seeds / nb:.2f}",
                             f"{sp['null'].expected_seeds / nb:.2f}; {sp['mid'].expected_seeds / nb:.2f}",
                             f"{sp['big'].expected_seeds / nb:.2f} (power {sp['big'].better:.2f})",
                             f"{d.n_max / nb:.2f} ({d.n_max})"))
        rows["fixed"].append(("1.00", "1.00; 1.00", f"1.00 (power {mcnemar_power(nb, *laws['big'], ALPHA):.2f})",
                              f"1.00 ({nb})"))
        print(f"  {pb:g} vs {pa:g}: sprt {d.describe()}; power {sp['design'].better:.3f} "
              f"(nested arms {P.oc(d, *d.nested).better:.3f}), worst type-I {P.walk_type1(np.array(d.crit), d.n_max):.4f}")
    for name, cells in rows.items():
        design = " | ".join(c[0] for c in cells)
        print(f"| {name} | {design} | " + " / ".join(c[1] for c in cells) + " | "
              + " / ".join(c[2] for c in cells) + " | " + " / ".join(c[3] for c in cells) + " |")


# ---------------------------------------------------------------- type-I


def type_one() -> None:
    ps = [0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9]
    fig, ax = plt.subplots(figsize=(8.0, 5.2), dpi=90)
    grid = np.linspace(0.01, 0.99, 41)
    ax.plot(grid, [sum(step_oc(N, ALPHA, p, p)[:2]) for p in grid], "-", color="C0", label="STEP, exact (DP)")
    ax.plot(grid, [sum(step_oc(N, ALPHA, p, p, randomized=True)[:2]) for p in grid], ":", color="C0",
            label="STEP randomised (the package), exact")
    d = P.make_design(0.01, 0.09, ALPHA, POWER, N)
    for rho, ls in ((0.0, "-"), (0.5, "--")):
        ax.plot(grid, [sum(_rates(P.oc(d, *pair_probs(p, p, rho)))) for p in grid], ls, color="C3",
                label=f"sprt (9% vs 1%, {N} seeds), exact, {'correlated pairs (rho 0.5)' if rho else 'independent'}")
    worst = P.walk_type1(np.array(d.crit), N)
    ax.axhline(worst, color="C3", lw=0.8, ls="-.", label=f"sprt at the worst null (every seed discordant): {worst:.4f}")
    sv = savi_boundary(N)
    ax.plot(grid, [sum(_rates(P.oc(sv, *pair_probs(p, p)))) for p in grid], "-", color="C1", label="savi, exact")
    rng = np.random.default_rng(1)
    for rho, mark in ((0.0, "o"), (0.5, "^")):
        for k, test in ((0, "step"), (1, "savi"), (2, "fixed"), (3, "sprt")):
            rates = []
            for p in ps:
                a, b = simulate_success(rng, SIMS, N, p, p, rho)
                code, _ = run_sequences(spec(test=test, assumed_rates=(0.01, 0.09)), N, a=a, b=b)
                rates.append(np.mean((code == 1) | (code == 2)))
            print(f"type-I {test} rho {rho}: " + ", ".join(f"{p:g}: {r:.4f}" for p, r in zip(ps, rates)))
            ax.plot(ps, rates, mark, color=f"C{k}", mfc="none" if rho else f"C{k}", ms=4,
                    label=f"{test}, simulated, {'rho 0.5' if rho else 'independent'}")
    dd = simulate_deltas(rng, SIMS, N, 0.0, LAB_SD, SCENE_MAX_DISTANCE_CM)
    r = np.mean(run_betting(np.clip(dd, -7.5, 7.5), 7.5, ALPHA, None)[0] > 0)
    print(f"type-I betting progress (SD {LAB_SD:.3f}, clip 7.5 cm): {r:.4f}")
    ax.axhline(ALPHA, color="k", lw=0.8)
    ax.axhline(ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SIMS), color="k", lw=0.5, ls="--")
    ax.set(xlabel="success rate of both arms", ylabel="P(B better or B worse)", ylim=(0, 0.065),
           title=f"Type-I error, {N} seeds, alpha {ALPHA}: lines exact, points 10,000 sequences")
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3)
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-type1.png")


def _rates(o) -> tuple[float, float]:
    return o.better, o.worse


# ---------------------------------------------------------------- E[seeds] / batch at 80% power, with the floor


def at_power(code, when, n_cap, target=POWER):
    """The smallest truncation n at which P(B better by n) reaches target, and E[seeds] truncated there."""
    t = np.where(code > 0, when, n_cap + 1)
    for n in range(2, n_cap + 1):
        if np.mean((code == 1) & (t <= n)) >= target:
            return n, float(np.minimum(t, n).mean())
    return None, None


def power() -> None:
    """Each test sized to 80% at each effect: E[seeds] there over the batch's seeds for 80%, with Wald's floor."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.0), dpi=90)
    for ax, (pa, pbs) in zip(axes[:2], ((0.01, [0.05, 0.07, 0.09, 0.12, 0.15, 0.2]),
                                        (0.3, [0.45, 0.5, 0.55, 0.6, 0.65, 0.7]))):
        curves: dict[str, list[float]] = {"STEP (exact)": [], "savi (exact)": [], "sprt (exact)": [],
                                          "information floor": []}
        for pb in pbs:
            nb = batch_for(pa, pb)
            bo, ao = pair_probs(pa, pb)
            n80, oc = step_at_power(pa, pb)
            curves["STEP (exact)"].append(oc[2] / nb if n80 else np.nan)
            n80 = savi_at_power(bo, ao, 4 * nb)
            curves["savi (exact)"].append(P.oc(savi_boundary(n80), bo, ao).expected_seeds / nb)
            d = sprt_for(pa, pb)
            curves["sprt (exact)"].append(P.oc(d, bo, ao).expected_seeds / nb)
            curves["information floor"].append(P.floor_seeds(bo, ao, ALPHA, POWER) / nb)
            print(f"success {pa} vs {pb}: batch {nb}; " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in curves.items()))
        for k, (name, ys) in enumerate(curves.items()):
            style = dict(color="k", ls="--", lw=1.2) if name == "information floor" else dict(color=f"C{k}", marker="o")
            ax.plot(pbs, ys, label=name, **style)
        ax.axhline(1.0, color="grey", lw=0.6)
        ax.axvline(0.09 if pa == 0.01 else 0.6, color="grey", lw=0.5)
        ax.set(xlabel=f"B's success rate (A's: {pa:g}, independent)", ylim=(0, 1.3),
               title=f"success, A at {pa:g}")
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"E[seeds] / batch seeds, both at {POWER:.0%} power")
    fig.suptitle("Each test sized for 80% power at each effect; the batch is exact McNemar (success) or the paired "
                 "t test (progress); exact by DP unless simulated", fontsize=9)
    ax = axes[2]
    rng = np.random.default_rng(2)
    deltas = [0.5, 0.73, 1.0, 1.5, 2.0]
    for k, clip in enumerate((5.0, 7.5, 10.0, SCENE_MAX_DISTANCE_CM)):
        ratios = []
        for dl in deltas:
            nb = batch_seeds(POWER, delta=dl, sd=LAB_SD)
            cap = 3 * nb
            d = simulate_deltas(rng, 2000, cap, dl, LAB_SD, SCENE_MAX_DISTANCE_CM)
            code, when = run_betting(np.clip(d, -clip, clip), clip, ALPHA, None)
            n_cap, en = at_power(code, when, cap)
            ratios.append(en / nb if en else np.nan)
            print(f"progress +{dl} cm, clip {clip:g}: batch {nb}; betting at 80% truncated at {n_cap}, "
                  f"E[seeds] {en if en is None else round(en, 1)} -> {en / nb if en else float('nan'):.2f}")
        ax.plot(deltas, ratios, "o-", color=f"C{k}", label=f"savi, clip +/-{clip:g} cm (simulated)")
    ax.plot(deltas, [floor_seeds_normal(dl, LAB_SD, ALPHA, POWER) / batch_seeds(POWER, delta=dl, sd=LAB_SD)
                     for dl in deltas], "k--", lw=1.2, label="information floor")
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.axvline(0.73, color="grey", lw=0.5)
    ax.set(xlabel=f"mean paired delta, cm (SD {LAB_SD:.2f})", ylim=(0, 1.8),
           title="progress (batch: paired t)")
    ax.legend(fontsize=7, title="scene's 272 cm: 80% never reached", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-power.png")


# ---------------------------------------------------------------- the registered design over a grid of true effects


def oc_grid() -> None:
    """The SPRT designed at 9% vs 1% and at 60% vs 30% (max seeds 1.5 x the batch's): its power and E[seeds] /
    batch seeds as B's true rate varies, exact (lines) and simulated (points, 4,000 sequences each), with the
    batch's power at its seeds and the floor for a test with the SPRT's power at each truth."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), dpi=90, sharex="col")
    rng = np.random.default_rng(3)
    for col, (pa, pb) in enumerate(DESIGNS):
        d = sprt_for(pa, pb)
        nb = batch_for(pa, pb)
        grid = np.linspace(max(0.0, pa - (pb - pa)), min(0.99, pa + 2.2 * (pb - pa)), 31)
        grid = grid[grid > 0]
        for rho, ls in ((0.0, "-"), (0.5, "--")):
            ocs = [P.oc(d, *pair_probs(pa, x, rho)) for x in grid]
            axes[0, col].plot(grid, [o.better for o in ocs], ls, color="C3",
                              label=f"sprt P(B better), exact{', rho 0.5' if rho else ''}")
            axes[1, col].plot(grid, [o.expected_seeds / nb for o in ocs], ls, color="C3",
                              label=f"sprt E[seeds] / batch, exact{', rho 0.5' if rho else ''}")
        axes[0, col].plot(grid, [mcnemar_power(nb, *pair_probs(pa, x), ALPHA) for x in grid], color="k", lw=0.8,
                          label=f"batch ({nb} seeds) P(B better), exact")
        floors = []
        for x in grid:
            o = P.oc(d, *pair_probs(pa, x))
            if x > pa:
                floors.append(P.floor_seeds(*pair_probs(pa, x), ALPHA, o.better) / nb if o.better > ALPHA / 2 else np.nan)
            elif x < pa:
                floors.append(np.nan)
            else:
                floors.append(P.floor_seeds_null(pair_probs(pa, pa)[0], *d.independent, ALPHA, POWER) / nb)
        axes[1, col].plot(grid, floors, "k--", lw=1.0, label="information floor (at the sprt's power there)")
        pts = grid[::5]
        sims = 4000
        pw, en = [], []
        for x in pts:
            a, b = simulate_success(rng, sims, d.n_max, pa, x)
            code, when = P.run(d, a, b)
            pw.append(np.mean(code == P.BETTER))
            en.append(np.where(code > 0, when, d.n_max).mean() / nb)
        axes[0, col].plot(pts, pw, "o", color="C3", ms=4, label=f"simulated ({sims:,})")
        axes[1, col].plot(pts, en, "o", color="C3", ms=4, label=f"simulated ({sims:,})")
        for ax in axes[:, col]:
            ax.axvline(pb, color="grey", lw=0.5)
            ax.axvline(pa + 1.5 * (pb - pa), color="grey", lw=0.5, ls=":")
            ax.axvline(pa, color="grey", lw=0.5)
            ax.grid(alpha=0.25)
        axes[0, col].axhline(POWER, color="grey", lw=0.6)
        axes[1, col].axhline(1.0, color="grey", lw=0.6)
        axes[0, col].set_title(f"sprt designed at {pb:g} vs {pa:g}, max {d.n_max} seeds (batch {nb})", fontsize=9)
        axes[1, col].set(xlabel=f"B's true success rate (A's: {pa:g})", ylim=(0, 1.6))
        axes[0, col].legend(fontsize=6)
        axes[1, col].legend(fontsize=6)
        big = P.oc(d, *pair_probs(pa, pa + 1.5 * (pb - pa)))
        print(f"oc {pb} vs {pa}: at 1.5x the effect power {big.better:.3f}, E {big.expected_seeds / nb:.3f} of the batch")
    axes[0, 0].set_ylabel("P(B better)")
    axes[1, 0].set_ylabel("E[seeds] / batch seeds")
    fig.tight_layout()
    fig.savefig(DOCS / "comparison-oc.png")


if __name__ == "__main__":
    table()
    if "--table-only" not in sys.argv:
        oc_grid()
        power()
        type_one()
        for f in ("comparison-type1.png", "comparison-power.png", "comparison-oc.png"):
            print(f, (DOCS / f).stat().st_size // 1024, "KB")
