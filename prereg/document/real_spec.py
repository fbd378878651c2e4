"""The registered real read as a plan states it, `reads.real`, and the seeds it selects.

    reads:
      real: {trials: 60, alpha: 0.05, metric: success, selection_seed: 20261207, sim_k: 20, jitter_cm: 1.0,
             arms: [arm-a]}

`trials` real trials (n) on seeds drawn uniformly at random from the protocol's sim seeds (N) by the
`selection_seed`; each paired seed's sim prediction f is the share of `sim_k` rollouts, jittered within
`jitter_cm` of its initial condition, that succeed (or their mean progress, `metric: progress`); read at
`alpha` (prereg/stats/real_read.py). `arms` (optional) names the arms that get real trials (default:
every arm the section reads). Frozen with the section it is written in, before the first real trial:
a trial recorded before the freeze, on an unselected seed, or under another selection seed is not the
registered read (docs/real.md).

The selection is the protocol's seeds ordered by sha256("fontaine-real:<selection_seed>:<seed>"),
the first `trials` of them, in that order (the order the operator runs them): uniform over the
seeds, the same for every arm (so arms pair on the same initial conditions), and the same on every
machine and Python version, forever.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from prereg.rundir.real import METRIC_SUCCESS, METRICS

KEYS = ("trials", "alpha", "metric", "selection_seed", "sim_k", "jitter_cm", "arms")
HINT = "{trials: 60, alpha: 0.05, metric: success, selection_seed: 20261207, sim_k: 20, jitter_cm: 1.0}"
SIM_K_MAX = 1000
JITTER_CM_MAX = 10.0
SELECTION_TAG, ORDER_TAG = "fontaine-real", "fontaine-real-order"


@dataclass(frozen=True)
class RealSpec:
    trials: int
    selection_seed: int
    alpha: float = 0.05
    metric: str = METRIC_SUCCESS
    sim_k: int = 20
    jitter_cm: float = 1.0
    arms: tuple[str, ...] | None = None  # None: every arm the section reads
    line: int | None = None

    def covers(self, arm: str) -> bool:
        return self.arms is None or arm in self.arms

    def describe(self) -> str:
        what = "success" if self.metric == METRIC_SUCCESS else "progress clipped to [0, 1]"
        return (f"{self.trials} real trials on sim seeds drawn by selection seed {self.selection_seed}, {what}, "
                f"alpha {self.alpha:g}; sim prediction: {self.sim_k} rollouts jittered within ±{self.jitter_cm:g} cm")

    def as_dict(self) -> dict:
        return {"trials": self.trials, "alpha": self.alpha, "metric": self.metric, "selection_seed": self.selection_seed,
                "sim_k": self.sim_k, "jitter_cm": self.jitter_cm, "arms": None if self.arms is None else list(self.arms)}


def _key(tag: str, selection_seed: int, seed: int) -> bytes:
    return hashlib.sha256(f"{tag}:{selection_seed}:{seed}".encode()).digest()


def select_seeds(seeds, n: int, selection_seed: int) -> tuple[int, ...]:
    """The `n` seeds of `seeds` that get a real trial, in the order to run them (see the module)."""
    uniq = sorted(set(int(s) for s in seeds))
    if not 1 <= n <= len(uniq):
        raise ValueError(f"cannot select {n} real trials from {len(uniq)} sim seeds (1 <= trials <= seeds)")
    return tuple(sorted(uniq, key=lambda s: _key(SELECTION_TAG, selection_seed, s))[:n])


def read_order(seeds, selection_seed: int) -> tuple[int, ...]:
    """Every seed in an order drawn by the selection seed, independent of the selection: the order the
    prediction-powered betting interval reads the seeds in (prereg/stats/real_math.py)."""
    return tuple(sorted(set(int(s) for s in seeds), key=lambda s: _key(ORDER_TAG, selection_seed, s)))


def _whole(v) -> bool:
    return type(v) is int


def _num(v) -> bool:
    return type(v) in (int, float)


def parse(raw, known: set[str]) -> tuple[RealSpec | None, list[tuple[tuple, str, str]]]:
    """`reads.real` into a spec; problems as (sub-path, message, hint), none when the spec is built."""
    if not isinstance(raw, dict):
        return None, [((), "must be a mapping", HINT)]
    probs: list[tuple[tuple, str, str]] = []
    for k in raw:
        if k not in KEYS:
            probs.append(((k,), f"unknown real-read field '{k}'", "known: " + ", ".join(KEYS)))
    kw: dict = {}
    n = raw.get("trials")
    if not (_whole(n) and n >= 2):
        probs.append((("trials",), f"must be a whole number of real trials >= 2, got {n!r}", HINT))
    else:
        kw["trials"] = n
    sel = raw.get("selection_seed")
    if not (_whole(sel) and sel >= 0):
        probs.append((("selection_seed",), f"must be a whole number >= 0, got {sel!r}",
                      "draw it once (e.g. today's date, 20261207) and freeze it before the first real trial"))
    else:
        kw["selection_seed"] = sel
    if "alpha" in raw:
        a = raw["alpha"]
        if not (_num(a) and 0 < a <= 0.5):
            probs.append((("alpha",), f"must be a number in (0, 0.5], got {a!r}", "0.05 for 95% intervals"))
        else:
            kw["alpha"] = float(a)
    if "metric" in raw:
        if raw["metric"] not in METRICS:
            probs.append((("metric",), f"unknown metric {raw['metric']!r}", "one of " + ", ".join(METRICS)))
        else:
            kw["metric"] = raw["metric"]
    if "sim_k" in raw:
        k = raw["sim_k"]
        if not (_whole(k) and 1 <= k <= SIM_K_MAX):
            probs.append((("sim_k",), f"must be a whole number of sim rollouts per seed in 1..{SIM_K_MAX}, got {k!r}",
                          "20, as SureSim"))
        else:
            kw["sim_k"] = k
    if "jitter_cm" in raw:
        j = raw["jitter_cm"]
        if not (_num(j) and 0 <= j <= JITTER_CM_MAX):
            probs.append((("jitter_cm",), f"must be a number of cm in [0, {JITTER_CM_MAX:g}], got {j!r}", "1.0, as SureSim"))
        else:
            kw["jitter_cm"] = float(j)
    if "arms" in raw:
        arms = raw["arms"]
        if not (isinstance(arms, list) and arms and all(isinstance(a, str) for a in arms)):
            probs.append((("arms",), "must be a list of arm names", "arms: [arm-a]"))
        else:
            for i, a in enumerate(arms):
                if a not in known:
                    probs.append((("arms", i), f"unknown arm {a!r}", "known arms: " + ", ".join(sorted(known))))
            kw["arms"] = tuple(arms)
    if probs:
        return None, probs
    return RealSpec(**kw), []


def real_spec_of(doc, arm: str) -> tuple[RealSpec, tuple[int, ...]] | None:
    """(the registered real read of `arm`, the protocol's sim seeds) in `doc`; None when the arm's
    section registers none for it (or the arm is unknown)."""
    found = doc.find_arm(arm)
    if found is None:
        return None
    _, sm = found
    spec = sm.reads.real
    if spec is None or not spec.covers(arm) or sm.protocol is None:
        return None
    return spec, tuple(sm.protocol.seeds)


def selected_seeds(doc, arm: str) -> tuple[int, ...]:
    """The seeds `arm` gets real trials on, in the order to run them; () when none is registered."""
    got = real_spec_of(doc, arm)
    if got is None:
        return ()
    spec, seeds = got
    return select_seeds(seeds, min(spec.trials, len(set(seeds))), spec.selection_seed)
