"""The registered comparison as the document states it: `comparison: {arms: [A, B], metric, test, alpha,
power, minimum_effect, max_seeds, ...}` parsed into a `ComparisonSpec` with every problem positioned.
The tests themselves, the decision and the path over seeds are prereg/stats/comparison.py's."""

from __future__ import annotations

import math
from dataclasses import dataclass

METRICS = ("success", "progress_final_cm")
TESTS = ("step", "savi", "sprt", "fixed")
SUCCESS_METRIC, PROGRESS_METRIC = METRICS
KEYS = ("arms", "metric", "test", "alpha", "power", "minimum_effect", "max_seeds",
        "assumed_rates", "assumed_delta_cm", "delta_sd_cm", "delta_bound_cm", "clip_cm")
SCENE_MAX_DISTANCE_CM = 272.26  # boat-on-disk: engine/envs BoundsSpec.max_distance_m() = 2.7226 m (see above)
STEP_MAX_SEEDS = 500  # STEP's policy is synthesised per n_max (44 s at 200 on one core, about n^3)
STEP_MIN_SEEDS = 10  # the package synthesises no policy for n_max < 10 (ValueError: "Invalid n_max")
STEP_PACKAGE = "sequentialized-barnard-tests"


# ---------------------------------------------------------------- the registered comparison


@dataclass(frozen=True)
class ComparisonSpec:
    arm_a: str
    arm_b: str
    metric: str
    test: str
    alpha: float = 0.05
    power: float = 0.8
    minimum_effect: float = 0.1
    max_seeds: int | None = None  # None: every planned seed
    assumed_rates: tuple[float, float] | None = None
    assumed_delta_cm: float | None = None
    delta_sd_cm: float | None = None
    delta_bound_cm: float = SCENE_MAX_DISTANCE_CM
    clip_cm: float | None = None  # progress, test savi: the estimand is the mean of the deltas clipped to +/- it
    line: int | None = None

    def seeds_cap(self, planned: int) -> int:
        return planned if self.max_seeds is None else min(self.max_seeds, planned)

    def describe(self) -> str:
        unit = "" if self.metric == SUCCESS_METRIC else " cm"
        what = {"step": "STEP (Snyder et al. 2025, via sequentialized-barnard-tests)",
                "savi": ("paired discordant-seed e-process" if self.metric == SUCCESS_METRIC
                         else f"betting confidence sequence for {self.estimand()}"),
                "sprt": (f"discordant-pair SPRT designed at {self.design_rates()[0]:g} vs {self.design_rates()[1]:g}"
                         if self.design_rates() else "discordant-pair SPRT"),
                "fixed": "fixed-n batch test"}[self.test]
        return (f"{self.arm_a} vs {self.arm_b} on {self.metric}: {what}, alpha {self.alpha:g} (two-sided), "
                f"minimum effect {self.minimum_effect:g}{unit}")

    def estimand(self) -> str:
        """What the registered test is about, in words."""
        if self.metric == SUCCESS_METRIC:
            return f"the success-rate difference {self.arm_b} - {self.arm_a}"
        if self.test == "savi" and self.clip_cm is not None:
            return f"the mean of the per-seed deltas {self.arm_b} - {self.arm_a} clipped to +/-{self.clip_cm:g} cm"
        return f"the mean per-seed delta {self.arm_b} - {self.arm_a} (cm)"

    def design_rates(self) -> tuple[float, float] | None:
        """test: sprt's design (p_lo, p_hi), p_lo < p_hi: the assumed rates, lower first; equal assumed
        rates p get (p, p + minimum_effect). None without assumed rates (parse refuses that for sprt)."""
        if self.metric != SUCCESS_METRIC or self.assumed_rates is None:
            return None
        lo, hi = sorted(self.assumed_rates)
        if hi == lo:
            hi = lo + self.minimum_effect
        return (lo, hi) if hi < 1 else None

    @property
    def label(self) -> str:
        """The run's arm label, as `fontaine-eval --arms` names a comparison run ("A-vs-B")."""
        return comparison_label(self.arm_a, self.arm_b)

    def by_seed(self, rows: list[dict], planned_seeds) -> tuple[dict, dict]:
        """A comparison run's rows as `decide` reads them: A's and B's, each by planned seed (rows_by_seed)."""
        from prereg.rundir.rows import rows_by_seed

        return tuple(rows_by_seed([r for r in rows if r.get("arm") == arm], planned_seeds)
                     for arm in (self.arm_a, self.arm_b))

    @classmethod
    def from_record(cls, d: dict) -> "ComparisonSpec":
        """The spec back from its record in a run's manifest/config (engine.record.config.comparison_record);
        a record that is not one raises (TypeError, ValueError, KeyError)."""
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "line"}
        if known.get("assumed_rates") is not None:
            known["assumed_rates"] = tuple(known["assumed_rates"])
        return cls(**known)

    def as_dict(self) -> dict:
        return {"arms": [self.arm_a, self.arm_b], "metric": self.metric, "test": self.test, "alpha": self.alpha,
                "power": self.power, "minimum_effect": self.minimum_effect, "max_seeds": self.max_seeds,
                "delta_bound_cm": self.delta_bound_cm,
                **({"clip_cm": self.clip_cm} if self.clip_cm is not None else {}),
                **({"assumed_rates": list(self.assumed_rates)} if self.test == "sprt" and self.assumed_rates else {})}


def comparison_label(arm_a: str, arm_b: str) -> str:
    """How a comparison run of arms A and B is labelled in its manifest, status and run id: "A-vs-B"."""
    return f"{arm_a}-vs-{arm_b}"


def _num(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def parse(raw, known_arms=None, planned_seeds: int | None = None) -> tuple[ComparisonSpec | None, list]:
    """(spec, problems) for a `comparison:` mapping; each problem is (subpath tuple, message, hint)."""
    hint = "{arms: [A, B], metric: success, test: step, alpha: 0.05, power: 0.8, minimum_effect: 0.15, max_seeds: 200}"
    if not isinstance(raw, dict):
        return None, [((), "must be a mapping (" + ", ".join(KEYS[:7]) + ")", hint)]
    out: list = []

    def err(key, msg, why=""):
        out.append(((key,) if key else (), msg, why))

    for k in raw:
        if k not in KEYS:
            err(k, f"unknown comparison field '{k}'", "known: " + ", ".join(KEYS))
    arms = raw.get("arms")
    if not (isinstance(arms, list) and len(arms) == 2 and all(isinstance(a, str) for a in arms)):
        err("arms", f"must be a list of two arm names [A, B], got {arms!r}", "B is compared with A: deltas are B - A")
        arms = None
    elif arms[0] == arms[1]:
        err("arms", f"compares arm {arms[0]!r} with itself", "name two different arms")
        arms = None
    elif known_arms is not None:
        bad = [a for a in arms if a not in known_arms]
        if bad:
            err("arms", f"unknown arm(s) {bad}", "known arms: " + ", ".join(sorted(known_arms)))
            arms = None
    metric = raw.get("metric")
    if metric not in METRICS:
        err("metric", f"must be one of {', '.join(METRICS)}, got {metric!r}")
    test = raw.get("test", "fixed" if metric == PROGRESS_METRIC else None)  # progress: the paired t test by default
    if test not in TESTS:
        err("test", f"must be one of {', '.join(TESTS)}, got {test!r}",
            "sprt: the discordant-pair SPRT (success, near the information floor); step: STEP (success); "
            "savi: anytime-valid paired test; fixed: the batch test at max_seeds (progress's default)")
    elif test in ("step", "sprt") and metric == PROGRESS_METRIC:
        err("test", f"test {test} compares success rates only",
            "progress_final_cm: test fixed (the paired t test, the default), or savi with a registered clip_cm")
    kw: dict = {}
    for key, lo, hi, default in (("alpha", 0.0, 0.5, 0.05), ("power", 0.5, 1.0, 0.8)):
        v = raw.get(key, default)
        if not (_num(v) and lo < v < hi):
            err(key, f"must be a number in ({lo:g}, {hi:g}), got {v!r}")
        else:
            kw[key] = float(v)
    bound = raw.get("delta_bound_cm", SCENE_MAX_DISTANCE_CM)
    if not (_num(bound) and bound > 0):
        err("delta_bound_cm", f"must be a distance in cm > 0, got {bound!r}",
            f"default {SCENE_MAX_DISTANCE_CM} cm: the scene's largest distance (floor and walls)")
        bound = SCENE_MAX_DISTANCE_CM
    kw["delta_bound_cm"] = float(bound)
    eff = raw.get("minimum_effect")
    if eff is None:
        err("minimum_effect", "missing", "a rate difference (0.15) for success, cm (1.0) for progress_final_cm")
    elif metric == SUCCESS_METRIC and not (_num(eff) and 0 < eff < 1):
        err("minimum_effect", f"must be a rate difference in (0, 1), got {eff!r}", "absolute: 0.15 is 15 points")
    elif metric == PROGRESS_METRIC and not (_num(eff) and 0 < eff < bound):
        err("minimum_effect", f"must be a distance in cm in (0, {bound:g}), got {eff!r}")
    elif _num(eff):
        kw["minimum_effect"] = float(eff)
    ms = raw.get("max_seeds")
    if ms is not None:
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 2:
            err("max_seeds", f"must be a whole number >= 2, got {ms!r}")
        elif planned_seeds is not None and ms > planned_seeds:
            err("max_seeds", f"{ms} is more than the {planned_seeds} planned seeds", "at most the protocol's seeds")
        elif test == "step" and ms > STEP_MAX_SEEDS:
            err("max_seeds", f"STEP is synthesised for at most {STEP_MAX_SEEDS} seeds, got {ms}")
        elif test == "step" and ms < STEP_MIN_SEEDS:
            err("max_seeds", f"STEP is synthesised for at least {STEP_MIN_SEEDS} seeds, got {ms}",
                "raise max_seeds, or use test: savi")
        else:
            kw["max_seeds"] = ms
    elif test == "step" and planned_seeds is not None and planned_seeds > STEP_MAX_SEEDS:
        err("max_seeds", f"STEP is synthesised for at most {STEP_MAX_SEEDS} seeds; the plan has {planned_seeds}",
            "set max_seeds")
    elif test == "step" and planned_seeds is not None and planned_seeds < STEP_MIN_SEEDS:
        err("max_seeds", f"STEP is synthesised for at least {STEP_MIN_SEEDS} seeds; the plan has {planned_seeds}",
            "plan more seeds, or use test: savi")
    rates = raw.get("assumed_rates")
    if rates is not None:
        if not (isinstance(rates, list) and len(rates) == 2 and all(_num(r) and 0 < r < 1 for r in rates)):
            err("assumed_rates", f"must be two rates in (0, 1) [A, B], got {rates!r}")
        else:
            kw["assumed_rates"] = (float(rates[0]), float(rates[1]))
    if test == "sprt" and metric == SUCCESS_METRIC and "assumed_rates" not in kw and rates is None:
        err("test", "test sprt derives its alternative from assumed_rates: register them [A, B]",
            "the rates the plan expects, e.g. assumed_rates: [0.01, 0.09]; equal rates p design p vs p + minimum_effect")
    elif test == "sprt" and "assumed_rates" in kw and "minimum_effect" in kw:
        lo, hi = sorted(kw["assumed_rates"])
        if lo == hi and lo + kw["minimum_effect"] >= 1:
            err("assumed_rates", f"equal assumed rates {lo:g} design {lo:g} vs {lo:g} + minimum_effect, above 1",
                "assume two different rates, or a smaller minimum_effect")
    clip = raw.get("clip_cm")
    if clip is not None:
        if metric != PROGRESS_METRIC or test != "savi":
            err("clip_cm", "only test savi on progress_final_cm reads a clip",
                "the anytime-valid progress test: its estimand is the mean of the deltas clipped to +/-clip_cm")
        elif not (_num(clip) and 0 < clip <= bound):
            err("clip_cm", f"must be a distance in cm in (0, {bound:g}], got {clip!r}")
        else:
            kw["clip_cm"] = float(clip)
    elif test == "savi" and metric == PROGRESS_METRIC:
        err("test", "the anytime-valid progress test needs clip_cm: it tests the mean of the deltas clipped to "
            "+/-clip_cm, not the mean delta",
            "register clip_cm (e.g. 7.5) and say so as the estimand, or use test: fixed (the paired t test on the mean "
            "delta, the default)")
    for key, positive in (("assumed_delta_cm", False), ("delta_sd_cm", True)):
        v = raw.get(key)
        if v is not None:
            if not (_num(v) and (v > 0 or not positive)):
                err(key, f"must be a number of cm{' > 0' if positive else ''}, got {v!r}")
            else:
                kw[key] = float(v)
    if out or arms is None:
        return None, out
    return ComparisonSpec(arm_a=arms[0], arm_b=arms[1], metric=metric, test=test, **kw), out
