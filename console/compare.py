"""Arms side by side: one line per arm of a pre-registration, and paired per-seed deltas on the
seeds both arms have finished. Pure functions of aggregate snapshots (no Textual, no files).

The paired read is the one a pre-registration's comparator makes: on the shared seeds, how many
succeeded in one arm only (discordant pairs), and the difference in success rate with a 95%
interval for paired proportions (Newcombe's Wald form: d ± z·sqrt(b + c − (b − c)²/n) / n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from console.aggregate import SUCCESS, AggregateView


@dataclass(frozen=True)
class ArmLine:
    arm: str
    run_id: str
    state: str
    done: int | None
    total: int | None
    view: AggregateView


@dataclass(frozen=True)
class Paired:
    reference: str
    other: str
    shared: int  # seeds with a row in both arms (error rows excluded)
    both: int
    reference_only: int
    other_only: int
    neither: int

    @property
    def delta(self) -> float | None:
        """Success rate of `other` minus `reference` on the shared seeds."""
        return (self.other_only - self.reference_only) / self.shared if self.shared else None

    @property
    def ci(self) -> tuple[float, float] | None:
        n, b, c = self.shared, self.reference_only, self.other_only
        if not n:
            return None
        d = (c - b) / n
        half = 1.959964 * math.sqrt(max(0.0, b + c - (c - b) ** 2 / n)) / n
        return max(-1.0, d - half), min(1.0, d + half)


def paired(ref: ArmLine, other: ArmLine) -> Paired:
    a, b = ref.view.seed_outcomes, other.view.seed_outcomes
    shared = [s for s in a.keys() & b.keys() if a[s] != "error" and b[s] != "error"]
    both = ref_only = other_only = neither = 0
    for s in shared:
        x, y = a[s] == SUCCESS, b[s] == SUCCESS
        if x and y:
            both += 1
        elif x:
            ref_only += 1
        elif y:
            other_only += 1
        else:
            neither += 1
    return Paired(ref.arm, other.arm, len(shared), both, ref_only, other_only, neither)


def arm_cells(line: ArmLine) -> tuple[str, ...]:
    v = line.view
    ci = v.success_ci
    pct = f"{100 * v.successes / v.ok_rows:.1f}%" if v.ok_rows else "—"
    ci_text = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
    zf = f"{v.zero_fallbacks}" + (f" ({100 * v.zero_fallback_rate:.2f}%)" if v.zero_fallback_rate is not None else "")
    return (line.arm, line.state, f"{line.done if line.done is not None else v.rows}/{line.total if line.total is not None else '?'}",
            f"{v.successes}/{v.ok_rows} {pct}", ci_text, str(v.knock_aways), zf, line.run_id)


def paired_cells(p: Paired) -> tuple[str, ...]:
    delta = "—" if p.delta is None else f"{100 * p.delta:+.1f} pp".replace("-0.0 pp", "+0.0 pp")
    ci = p.ci
    ci_text = "" if ci is None else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    return (f"{p.other} vs {p.reference}", delta, ci_text, str(p.shared), str(p.both), str(p.reference_only),
            str(p.other_only), str(p.neither))
