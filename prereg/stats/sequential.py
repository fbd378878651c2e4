"""A registered sequential test of the success rate: Wald's SPRT, truncated at the planned seeds.

Pure. `gates: {sequential: {p0: 0.05, p1: 0.2, alpha: 0.05, beta: 0.1}}` registers, before
any episode, the test of H0: p <= p0 against H1: p >= p1 on the arm's successes (an error row
is a non-success, as in the report). After k successes in n episodes the log-likelihood ratio
is k log(p1/p0) + (n - k) log((1 - p1)/(1 - p0)); the run stops with reason `decided
(sequential)` when it reaches log((1 - beta)/alpha) (H1 accepted) or falls to
log(beta/(1 - alpha)) (H0 accepted). If neither happens by the last planned seed the test
makes no decision and the frozen rules are read as usual.

Error rates, stated honestly: Wald's boundaries guarantee P(accept H1 | p0) <= alpha / (1 -
beta) and P(accept H0 | p1) <= beta / (1 - alpha) (truncation only lowers both, since it turns
some decisions into none); the exact operating characteristic (`oc`) gives the actual rates for
the planned number of seeds, computed by dynamic programming over (episodes, successes) with
scipy's binomial probabilities, and is printed at validate/freeze time. tests/prereg/
test_sequential.py checks both against many simulated runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

H1, H0 = "H1", "H0"


@dataclass(frozen=True)
class Sprt:
    p0: float
    p1: float
    alpha: float
    beta: float

    @classmethod
    def from_dict(cls, d) -> "Sprt | None":
        if not isinstance(d, dict):
            return None
        try:
            return cls(float(d["p0"]), float(d["p1"]), float(d["alpha"]), float(d["beta"]))
        except (KeyError, TypeError, ValueError):
            return None

    def as_dict(self) -> dict:
        return {"p0": self.p0, "p1": self.p1, "alpha": self.alpha, "beta": self.beta}

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    def llr(self, k: int, n: int) -> float:
        return k * math.log(self.p1 / self.p0) + (n - k) * math.log((1 - self.p1) / (1 - self.p0))

    def decision(self, k: int, n: int) -> str | None:
        v = self.llr(k, n)
        if v >= self.upper:
            return H1
        if v <= self.lower:
            return H0
        return None

    def text(self, decision: str, k: int, n: int, planned: int) -> str:
        what = f"p >= {self.p1:g}" if decision == H1 else f"p <= {self.p0:g}"
        return (f"sequential test (Wald SPRT, H0 p <= {self.p0:g} vs H1 p >= {self.p1:g}, alpha {self.alpha:g}, "
                f"beta {self.beta:g}): {decision} accepted ({what}) at {n}/{planned} with {k} successes "
                f"(LLR {self.llr(k, n):.2f}, bounds {self.lower:.2f} / {self.upper:.2f})")


@dataclass(frozen=True)
class OC:
    p: float
    accept_h1: float
    accept_h0: float
    undecided: float
    expected_episodes: float


def oc(s: Sprt, planned: int, p: float) -> OC:
    """The exact operating characteristic at true rate p, truncated at `planned` episodes."""
    from scipy import stats

    alive = np.zeros(planned + 1)  # P(still running after n episodes with k successes)
    alive[0] = 1.0
    a1 = a0 = 0.0
    expected = 0.0
    step = stats.binom.pmf([0, 1], 1, p)  # [P(failure), P(success)]
    for n in range(1, planned + 1):
        expected += alive.sum()  # the n-th episode runs when the test is still undecided
        nxt = np.zeros_like(alive)
        nxt[:n] += alive[:n] * step[0]
        nxt[1:n + 1] += alive[:n] * step[1]
        for k in range(n + 1):
            if nxt[k] == 0.0:
                continue
            d = s.decision(k, n)
            if d == H1:
                a1 += nxt[k]
                nxt[k] = 0.0
            elif d == H0:
                a0 += nxt[k]
                nxt[k] = 0.0
        alive = nxt
    return OC(p, a1, a0, float(alive.sum()), expected)


def oc_lines(s: Sprt, planned: int) -> list[str]:
    """The table printed at validate/freeze time."""
    ps = sorted({0.0001, s.p0, (s.p0 + s.p1) / 2, s.p1, min(0.999, 2 * s.p1)})
    out = [f"  sequential test registered: Wald SPRT H0 p <= {s.p0:g} vs H1 p >= {s.p1:g}, alpha {s.alpha:g}, "
           f"beta {s.beta:g}, truncated at {planned} (Wald bounds: false H1 <= {s.alpha / (1 - s.beta):.3f}, "
           f"false H0 <= {s.beta / (1 - s.alpha):.3f})",
           "    true p    P(accept H1)  P(accept H0)  P(no decision)  expected episodes"]
    for p in ps:
        r = oc(s, planned, p)
        out.append(f"    {p:<9.4g} {r.accept_h1:>12.4f}  {r.accept_h0:>12.4f}  {r.undecided:>14.4f}  {r.expected_episodes:>17.1f}")
    return out


@dataclass(frozen=True)
class SequentialDecision:
    decision: str  # H1 | H0
    at: int  # episodes of the plan prefix read when the boundary was crossed
    total: int
    successes: int
    llr: float
    text: str

    def as_dict(self) -> dict:
        return {"decision": self.decision, "at": self.at, "total": self.total, "successes": self.successes,
                "llr": round(self.llr, 4), "text": self.text}


def sequential_decision(spec, planned, by_seed) -> SequentialDecision | None:
    """The registered SPRT on the plan prefix (`prereg.rundir.rows.plan_prefix`): the first crossing of a
    boundary, or None. An episode is a success only when `prereg.rundir.outcomes.classify` says so (an
    error row is a non-success, whatever its `success` field says)."""
    from prereg.rundir.outcomes import SUCCESS, classify
    from prereg.rundir.rows import plan_prefix

    s = spec if isinstance(spec, Sprt) else Sprt.from_dict(spec)
    if s is None:
        return None
    k = 0
    for n, row in enumerate(plan_prefix(planned, by_seed), 1):
        k += classify(row)[0] == SUCCESS
        d = s.decision(k, n)
        if d is not None:
            return SequentialDecision(d, n, len(planned), k, s.llr(k, n), s.text(d, k, n, len(planned)))
    return None


def check_rows(spec: dict | None, rows: list[dict], planned_seeds) -> dict | None:
    """For the driver: {"decision", "at", "text", ...} once the registered test decides, else None.

    Read on the plan prefix: seed k counts once every seed before it in the plan has its row,
    and an error row is a non-success. The order in which episodes finish cannot move it."""
    from prereg.rundir.rows import rows_by_seed

    s = Sprt.from_dict(spec)
    if s is None:
        return None
    seeds = list(planned_seeds)
    d = sequential_decision(s, seeds, rows_by_seed(rows, seeds))
    return None if d is None else {**d.as_dict(), **s.as_dict()}


def record_problems(spec: dict | None, status, rows: list[dict], planned_seeds, check=check_rows) -> list[str]:
    """Where the driver's record of the registered test's decision (status.json `sequential`) is not what
    the rows decide by the same code (`check(spec, rows, planned_seeds)`: `check_rows`, or for a plan that
    decides on the pooled rate prereg.stats.variants_decide's): each a provenance problem of the arm, never
    the decision (the verdict engine decides from the rows). No record is no problem."""
    from prereg import rundir as rd

    st = rd.Status.of(status) if isinstance(status, (rd.Status, dict)) else None
    record = st.sequential if st is not None else None
    if not isinstance(record, dict) or Sprt.from_dict(spec) is None:
        return []
    rows_say = check(spec, rows, planned_seeds)
    if rows_say is None:
        return [f"status.json records the sequential test's decision {record.get('decision')!r} at "
                f"{record.get('at')!r}, but the rows decide none (rows.jsonl or status.json changed after the run?)"]
    diffs = [f"{k} {record.get(k)!r} (the rows: {rows_say.get(k)!r})" for k in ("decision", "at", "total", "successes")
             if record.get(k) != rows_say.get(k)]
    return [f"status.json's record of the sequential test is not what the rows decide: {', '.join(diffs)} "
            "(rows.jsonl or status.json changed after the run?)"] if diffs else []
