"""A registered comparison of two arms, decided by an anytime-valid test on the plan prefix (pure).

The front matter (validated in prereg/document/, carried on `SectionModel.comparison`):

```yaml
comparison:
  arms: [release, finetuned]   # A (the baseline), B (the candidate): every delta is B - A, per seed
  metric: success              # success | progress_final_cm
  test: optimal                # optimal (the default) | sprt | step | savi | fixed (success); fixed (the default) | savi (progress)
  alpha: 0.05                  # P(any wrong claim) at most alpha, whenever the run is read (two-sided)
  power: 0.8                   # the power the batch comparison is sized for (validate/freeze's table)
  minimum_effect: 0.15         # a rate difference (success) or cm (progress): "equivalent" means |delta| < it
  max_seeds: 200               # the most seeds each arm runs; default: every planned seed
  # optional:
  assumed_rates: [0.01, 0.09]  # success: the plan's guess for A and B (validate/freeze's table)
  assumed_delta_cm: 0.73       # progress: the plan's guess of the mean paired delta ...
  delta_sd_cm: 3.0             # ... and of its SD across seeds
  delta_bound_cm: 272.26       # progress: |B - A| never exceeds this (default: the scene's, below)
  clip_cm: 7.5                 # progress, test savi (required): it tests the mean of the deltas clipped to +/- this
```

**The API the driver calls** (after every row, on the rows so far; nothing here reads a file):

    from prereg.stats.comparison import decide
    d = decide(spec, rows_a_by_seed, rows_b_by_seed, planned_seeds)   # Decision | None

`spec` is `doc.section_model(...).comparison` (a `ComparisonSpec`), the two dicts are
`prereg.rundir.rows.rows_by_seed(rows_of_arm, planned_seeds)`, `planned_seeds` the protocol's seeds in
plan order. `None`: no decision yet, keep going. Otherwise `d.outcome` is one of `BETTER` ("B
better"), `WORSE` ("B worse"), `EQUIVALENT` ("equivalent within the minimum effect"),
`FUTILE` (tests sprt and optimal only: stopped for futility, the design's difference is implausible, nothing
claimed), `UNDECIDED` (max seeds read and none of the above), or `VOID` (a progress delta broke the
registered bound: the anytime-valid guarantee no longer holds, the run goes on to the fixed-n
read). `d.stops_run` says whether the driver should stop (`StopReason(by="decided",
detail="(comparison) " + d.text)`), `d.text` is the evidence in words, `d.as_dict()` goes to
status.json. `path(spec, ...)` gives the per-seed confidence sequence / e-values the console
can draw.

**Order-free.** Only the contiguous plan prefix of seeds that *both* arms have a row for is
read (`prereg.rundir.rows.plan_prefix` on the pairs), truncated at `max_seeds`: successes end episodes
early, so reading rows in the order they finish would over-represent successes while a run is
in flight. On the prefix the decision is a function of the outcomes in plan order, however many
workers ran them. A success is `prereg.rundir.outcomes.classify(row)[0] == SUCCESS` (an error row is a
non-success); a pair without a finite `progress_final_cm` on either side is skipped for the
progress metric and counted in the text.

**The tests** (every claim below is checked by simulation in tests/prereg/test_comparison.py
and drawn by scripts/comparison_figures.py):

- `optimal` (success, the default): the deterministic walk test read from the optimum of
  prereg/stats/paired_optimal.py (the fewest expected seeds at the design of any test claiming on the
  discordant walk), exact level alpha at every null and correlation, then the sprt's futility stop with
  the largest threshold that keeps the registered power at the design (independent and nested arms).
- `sprt` (success): the truncated discordant-pair SPRT of prereg/stats/paired_sprt.py, designed
  at the registered rates (`ComparisonSpec.design_rates`), its boundary at an exact level alpha for
  every null and correlation, a non-binding futility stop that keeps the registered power at the
  design, truncated at max_seeds (tests/prereg/test_paired_sprt.py; exact by dynamic programming).
  No equivalence claim: a futility stop says the design's difference is implausible, and the
  betting confidence sequence for the rate difference is given with it.
- `step` (success): STEP (Snyder et al., RSS 2025) through its authors' package
  `sequentialized-barnard-tests`: its near-optimal rejection policy for n_max = max_seeds at
  alpha/2 per direction (the package's mirrored test in its "ranking" mode), read by
  `StepPolicy` exactly as the package's `StepTest.step` reads it (checked against it in the
  tests, uniform for uniform). STEP randomises on a thin band of boundary states; a decision
  read from rows must be reproducible, and a randomisation fixed in advance (a seed) gives a
  deterministic test whose level is no longer guaranteed (simulated: 0.0524 at p = 0.5 with
  one fixed seed), so Fontaine rejects only where the policy rejects for sure: on every sample
  path it decides no earlier than the randomised test would, so its type-I is at most STEP's
  (exact, by dynamic programming in `step_oc`: <= alpha on a grid of rates) and its power a
  little lower (the figures give both). STEP's null is two independent arms with equal rates;
  same-seed pairs are positively correlated, which the simulations show only lowers its type-I.
  Equivalence: the betting confidence sequence below on the per-seed success deltas in [-1, 1].
- `savi` (success): a paired test on the discordant seeds only (B succeeds and A fails, or the
  reverse): under "no difference" each discordant seed is a fair coin, and the e-process is
  the likelihood ratio mixed over a uniform prior on P(B wins | discordant) in (1/2, 1) (and
  its mirror), rejected at 2/alpha per direction (Ville's inequality). Valid under any
  correlation between the arms. Equivalence as for `step`.
- `savi` (progress_final_cm): the betting confidence sequence of Waudby-Smith & Ramdas (JRSS-B
  2024, the hedged capital process with predictable plug-in bets, Theorem 3) for the mean of
  the per-seed deltas CLIPPED to [-clip_cm, clip_cm] (registered; its estimand, said in every
  text): B better when it excludes every clipped mean <= 0, worse when every one >= 0,
  equivalent when it lies inside (-minimum_effect, minimum_effect). One (1 - alpha) sequence,
  so P(any wrong claim about the clipped mean) <= alpha. The clipped mean is not the mean: rare
  large losses (a knock-away) count as -clip_cm, so it can be positive when the mean is not.
- `fixed`: the batch test, read once at max_seeds: exact McNemar (binomial on the discordant
  seeds) or the paired t test, two-sided at alpha; equivalence when the (1 - alpha) t interval
  of the paired deltas lies inside (-minimum_effect, minimum_effect).

**The progress bound.** `SCENE_MAX_DISTANCE_CM` = 272.26 cm is the boat-on-disk scene's
`BoundsSpec.max_distance_m()` (engine/envs/spec.py; engine/envs/boat_on_disk.py: table x in
[-0.25, 0.65] m, y in [-0.4, 0.4] m; the room inside the walls x in [-1.3, 1.7] m, y in [-1.5,
1.5] m: the farthest table point from a room point, hypot(1.95, 1.9) = 2.7226 m), copied here
because prereg may not import engine. Both arms start a seed at the same boat-to-disk distance,
so the paired delta is dist_final_A - dist_final_B, each in [0, D]: |delta| <= D. A tighter
`delta_bound_cm` may be registered; a row that breaks it voids the anytime-valid read (VOID).
The bound is why savi on progress needs a clip: the bets may not lose more than the wealth, so
with D = 272 cm a +0.73 cm effect grows the wealth by about 0.73 / 544 per seed and decides
nothing in thousands of seeds (docs/prereg.md, "Comparison runs (anytime-valid)", has the figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from prereg.core.words import plural
from prereg.document.comparison_spec import DESIGNED_TESTS, SUCCESS_METRIC, ComparisonSpec
from prereg.stats import paired_optimal, paired_sprt
from prereg.stats.comparison_engines import betting_cs, betting_cs_path, discordant_log_e, run_betting, run_discordant, run_fixed, run_step

BETTER, WORSE, EQUIVALENT, UNDECIDED, VOID, FUTILE = (
    "B better", "B worse", "equivalent", "undecided", "void", "futile")
_CODES = {1: BETTER, 2: WORSE, 3: EQUIVALENT, paired_sprt.FUTILE: FUTILE}
DECIDED = (BETTER, WORSE, EQUIVALENT, FUTILE)  # the outcomes that stop a run before max seeds


# ---------------------------------------------------------------- deciding one comparison


@dataclass(frozen=True)
class Decision:
    outcome: str  # BETTER | WORSE | EQUIVALENT | FUTILE | UNDECIDED | VOID
    at: int  # seeds of the shared plan prefix read when it was decided
    max_seeds: int
    text: str  # the evidence in words
    spec: ComparisonSpec
    values: dict = field(default_factory=dict)

    @property
    def stops_run(self) -> bool:
        """The driver stops the run (`decided (comparison)`) on every outcome but VOID."""
        return self.outcome != VOID

    @property
    def episodes_saved(self) -> int:
        """Episodes not run against the batch (both arms to max_seeds)."""
        return 2 * (self.max_seeds - self.at) if self.outcome in DECIDED else 0

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "at": self.at, "max_seeds": self.max_seeds, "text": self.text,
                "comparison": self.spec.as_dict(), **self.values}


def shared_prefix(rows_a_by_seed: dict, rows_b_by_seed: dict, planned_seeds) -> list[tuple[dict, dict]]:
    """The (A, B) rows of the planned seeds in plan order, up to the first seed either arm lacks."""
    from prereg.rundir.rows import plan_prefix

    both = {s: (rows_a_by_seed[s], rows_b_by_seed[s]) for s in rows_a_by_seed if s in rows_b_by_seed}
    return plan_prefix(list(planned_seeds), both)


def _arrays(spec: ComparisonSpec, pairs):
    """Success booleans (a, b) or progress deltas (d, skipped, first bound break) of the pairs."""
    from prereg.rundir.outcomes import SUCCESS, classify

    if spec.metric == SUCCESS_METRIC:
        a = np.array([classify(ra)[0] == SUCCESS for ra, _ in pairs], dtype=bool)
        b = np.array([classify(rb)[0] == SUCCESS for _, rb in pairs], dtype=bool)
        return a, b
    kept = _progress_deltas(pairs)
    broken = next(((i, v) for i, v in kept if abs(v) > spec.delta_bound_cm), None)
    return np.array([v for _, v in kept], dtype=float), len(pairs) - len(kept), broken


def _progress_deltas(pairs) -> list[tuple[int, float]]:
    """(1-based prefix index, B - A progress_final_cm) of each pair read on both sides: a pair with
    an error row or no finite progress on either side has no delta (it is skipped and counted)."""
    from prereg.rundir.outcomes import is_error
    from prereg.rundir.rows import number

    out = []
    for i, (ra, rb) in enumerate(pairs, 1):
        pa = number(ra.get("progress_final_cm")) if not is_error(ra) else None
        pb = number(rb.get("progress_final_cm")) if not is_error(rb) else None
        if pa is not None and pb is not None:
            out.append((i, pb - pa))
    return out


def decide(spec: ComparisonSpec, rows_a_by_seed: dict, rows_b_by_seed: dict, planned_seeds) -> Decision | None:
    """The registered comparison read on the shared plan prefix; None while it has not decided.

    Pure and order-free: the same rows give the same answer whatever order they finished in."""
    planned = list(planned_seeds)
    cap = spec.seeds_cap(len(planned))
    pairs = shared_prefix(rows_a_by_seed, rows_b_by_seed, planned)[:cap]
    n = len(pairs)
    if n == 0:
        return None
    if spec.metric == SUCCESS_METRIC:
        a, b = _arrays(spec, pairs)
        A, B = a[None, :], b[None, :]
        if spec.test == "step":
            c1, t1 = run_step(A, B, spec.alpha, cap)
            c2, t2 = run_betting((B.astype(float) - A), 1.0, spec.alpha, spec.minimum_effect, directions=False)
            code, when = _earliest(c1, t1, c2, t2)
        elif spec.test == "savi":
            c1, t1 = run_discordant(A, B, spec.alpha)
            c2, t2 = run_betting((B.astype(float) - A), 1.0, spec.alpha, spec.minimum_effect, directions=False)
            code, when = _earliest(c1, t1, c2, t2)
        elif spec.test in DESIGNED_TESTS:
            code, when = paired_sprt.run(designed_test(spec, cap), A, B)
        else:
            code, when = run_fixed(A, B, spec.alpha, spec.minimum_effect, cap)
        code, when = int(code[0]), int(when[0])
        if code == 0 and n < cap:
            return None
        at = when if code else n
        return _success_decision(spec, a[:at], b[:at], _CODES.get(code, UNDECIDED), at, cap)
    d, skipped, broken = _arrays(spec, pairs)
    if broken is not None:
        i, v = broken
        return Decision(VOID, i, cap, f"{spec.arm_b} - {spec.arm_a} = {v:+.2f} cm at seed {planned[i - 1]} is outside the "
                        f"registered bound +/-{spec.delta_bound_cm:g} cm: no anytime-valid decision; the run goes on to "
                        "the fixed-n read", spec, {"bound_broken_at": i, "delta_cm": v})
    if d.size == 0:
        return None if n < cap else Decision(UNDECIDED, n, cap, "no pair with progress on both arms", spec)
    if spec.test == "fixed":
        code, when = run_fixed(d[None, :], None, spec.alpha, spec.minimum_effect, cap - skipped)
    else:
        d = clipped(spec, d)
        code, when = run_betting(d[None, :], progress_bound(spec), spec.alpha, spec.minimum_effect)
    code, when = int(code[0]), int(when[0])
    if code == 0 and n < cap:
        return None
    used = when if code else d.size
    # `at` counts seeds of the prefix (skipped pairs included) up to the deciding delta
    at = n if not code else _seed_index_of_delta(spec, pairs, used)
    return _progress_decision(spec, d[:used], _CODES.get(code, UNDECIDED), at, cap, skipped)


def sprt_design(spec: ComparisonSpec, n_max: int) -> paired_sprt.Design:
    """test sprt's design at the registered rates, alpha and power for n_max seeds (exact; memoised). Where
    the power cannot be reached within n_max (validate and freeze refuse that plan), the boundary alone:
    the same level alpha, no futility stop."""
    p_lo, p_hi = spec.design_rates()
    try:
        return paired_sprt.make_design(p_lo, p_hi, spec.alpha, spec.power, n_max)
    except paired_sprt.Unreachable:
        crit, h = paired_sprt.calibrate(paired_sprt.design_theta(p_lo, p_hi), n_max, spec.alpha)
        return paired_sprt.Design(p_lo, p_hi, spec.alpha, spec.power, n_max, crit, h, -math.inf)


def optimal_design(spec: ComparisonSpec, n_max: int):
    """test optimal's design at the registered rates, alpha and power for n_max seeds (exact; memoised):
    prereg/stats/paired_optimal.py. Where no walk test reaches the power within n_max (validate and freeze
    refuse that plan), the sprt's boundary alone: level alpha, no futility stop."""
    p_lo, p_hi = spec.design_rates()
    try:
        return paired_optimal.make_walk_test(p_lo, p_hi, spec.alpha, spec.power, n_max)
    except paired_sprt.Unreachable:
        return sprt_design(spec, n_max)


def designed_test(spec: ComparisonSpec, n_max: int):
    """The design of a test designed at the assumed rates (sprt, optimal): what paired_sprt.run and oc read."""
    return sprt_design(spec, n_max) if spec.test == "sprt" else optimal_design(spec, n_max)


def prepare(spec: ComparisonSpec, planned_seeds) -> None:
    """What `decide` computes once per process, computed now (the driver calls it before any episode): test
    sprt's or test optimal's exact design, seconds at a few hundred seeds."""
    if spec.test in DESIGNED_TESTS:
        designed_test(spec, spec.seeds_cap(len(list(planned_seeds))))


def progress_bound(spec: ComparisonSpec) -> float:
    """The bound of the deltas the betting sequence reads: the registered clip (savi), else delta_bound_cm."""
    return spec.clip_cm if spec.clip_cm is not None else spec.delta_bound_cm


def clipped(spec: ComparisonSpec, d: np.ndarray) -> np.ndarray:
    """The deltas as the anytime-valid progress test reads them: clipped to +/-clip_cm (its estimand)."""
    return np.clip(d, -spec.clip_cm, spec.clip_cm) if spec.clip_cm is not None else d


def _earliest(c1, t1, c2, t2):
    if c1[0] and (not c2[0] or t1[0] <= t2[0]):
        return c1, t1
    return c2, t2


def _seed_index_of_delta(spec, pairs, k: int) -> int:
    idx = _delta_seed_indices(pairs)
    return idx[k - 1] if 0 < k <= len(idx) else len(pairs)


def _success_decision(spec, a, b, outcome, at, cap) -> Decision:
    w, lo = int((b & ~a).sum()), int((a & ~b).sum())
    ka, kb = int(a.sum()), int(b.sum())
    cs = betting_cs(b.astype(float) - a, 1.0, spec.alpha)
    values = {"successes_a": ka, "successes_b": kb, "b_only": w, "a_only": lo,
              "cs": [round(cs[0], 4), round(cs[1], 4)]}
    if spec.test == "savi":
        up, down = float(discordant_log_e(w, lo)), float(discordant_log_e(lo, w))
        values["e_better"], values["e_worse"] = math.exp(up), math.exp(down)
        evidence = (f"e-value {math.exp(max(up, down)):.3g} for {spec.arm_b} {'better' if up >= down else 'worse'} "
                    f"(decides at {2 / spec.alpha:g})")
    elif spec.test == "step":
        evidence = f"STEP boundary at alpha/2 = {spec.alpha / 2:g} per direction, n_max {cap}"
    elif spec.test in DESIGNED_TESTS:
        evidence = _designed_evidence(designed_test(spec, cap), at, w, lo, values)
    else:
        evidence = "exact McNemar test, read once at max seeds"
    text = (f"{_label(outcome, spec)} at {at}/{cap} seeds: {spec.arm_b} {kb}/{at} vs {spec.arm_a} {ka}/{at} "
            f"({plural(w, 'seed')} only {spec.arm_b}, {lo} only {spec.arm_a}); {evidence}; "
            f"{100 * (1 - spec.alpha):g}% confidence sequence for the rate difference [{cs[0]:+.3f}, {cs[1]:+.3f}]"
            f"{band_note(spec, outcome)}")
    return Decision(outcome, at, cap, text, spec, values)


def _designed_evidence(d, at: int, w: int, lo: int, values: dict) -> str:
    """The state of test sprt or test optimal in words (and in `values`)."""
    if isinstance(d, paired_sprt.Design):
        return _sprt_evidence(d, at, w, lo, values)
    up, down = d.stats.futility_stats(at, w, lo)
    code = int(d.walk.codes(at, w, lo))
    values.update({"futility_better": round(float(up), 4), "futility_worse": round(float(down), 4),
                   "design": [d.p_lo, d.p_hi], "futility_g": d.futility if math.isfinite(d.futility) else None})
    k = min(w + lo, d.n_max)
    row = np.frombuffer(d.walk.actions[k], dtype=np.int8)
    ups = np.flatnonzero(row == paired_optimal.UP)
    bound = (f"B better from {int(ups.min())} of {k} discordant seeds" if ups.size else
             f"no claim at {k} discordant seeds")
    fut = (f"futility when LLR + kappa are both <= {d.futility:.3f}: now {float(up):.2f} / {float(down):.2f}"
           if d.futility > paired_sprt.G_MIN else "no futility stop (the registered power is out of reach)")
    state = {paired_sprt.BETTER: "claims B better", paired_sprt.WORSE: "claims B worse",
             paired_sprt.FUTILE: "stops claiming nothing", 0: "goes on"}[code]
    return (f"discordant-pair test from the optimum designed at {d.p_lo:g} vs {d.p_hi:g}: {w} wins, {lo} losses "
            f"({bound}); the walk {state}; {fut}")


def _sprt_evidence(d: paired_sprt.Design, at: int, w: int, lo: int, values: dict) -> str:
    """The SPRT's state in words (and in `values`): the discordant LLR against its boundary and the futility statistic."""
    up, down = d.futility_stats(at, w, lo)
    values.update({"llr_better": round(float(d.llr(w, lo)), 4), "llr_worse": round(float(d.llr(lo, w)), 4),
                   "futility_better": round(float(up), 4), "futility_worse": round(float(down), 4),
                   "design": [d.p_lo, d.p_hi], "boundary_h": round(d.h, 4) if math.isfinite(d.h) else None,
                   "futility_g": d.futility if math.isfinite(d.futility) else None})
    need = d.crit[min(lo, d.n_max)]
    bound = (f"B better at {d.h:.3f}: {need} seeds only B with {lo} only A" if need <= d.n_max
             else "no boundary within max seeds")
    fut = (f"futility when both are <= {d.futility:.3f}: now {float(up):.2f} / {float(down):.2f}"
           if d.futility > paired_sprt.G_MIN else "no futility stop (the registered power is out of reach)")
    return (f"discordant-pair SPRT designed at {d.p_lo:g} vs {d.p_hi:g}: log-likelihood ratio {float(d.llr(w, lo)):+.2f} "
            f"({bound}), {float(d.llr(lo, w)):+.2f} for B worse; {fut}")


def _progress_decision(spec, d, outcome, at, cap, skipped) -> Decision:
    bound = progress_bound(spec) if spec.test == "savi" else spec.delta_bound_cm
    cs = betting_cs(d, bound, spec.alpha)
    mean = float(d.mean()) if d.size else float("nan")
    values = {"delta_mean_cm": mean, "pairs": int(d.size), "skipped": skipped, "cs_cm": [round(cs[0], 3), round(cs[1], 3)]}
    if spec.clip_cm is not None:
        values["clip_cm"] = spec.clip_cm
    what = ("mean clipped delta" if spec.clip_cm is not None and spec.test == "savi" else "mean")
    how = (f"betting confidence sequence for {spec.estimand()}" if spec.test == "savi"
           else "paired t test, read once at max seeds")
    text = (f"{_label(outcome, spec)} at {at}/{cap} seeds: {what} {spec.arm_b} - {spec.arm_a} {mean:+.3f} cm over "
            f"{d.size} pairs{f' ({skipped} without progress on a side, skipped)' if skipped else ''}; {how}; "
            f"{100 * (1 - spec.alpha):g}% confidence sequence [{cs[0]:+.3f}, {cs[1]:+.3f}] cm "
            f"(|delta| <= {bound:g} cm){band_note(spec, outcome)}")
    return Decision(outcome, at, cap, text, spec, values)


NOT_THE_TEST = "descriptive, not the test"  # beside a band another procedure than the registered test decides by


def band_is_the_test(spec: ComparisonSpec, outcome: str | None = None) -> bool:
    """Whether the confidence sequence printed and drawn beside a comparison is the registered test itself:
    savi on progress decides by it, and an equivalence claim on success is read from it; every other
    decision is the test's own statistic (the discordant e-value, STEP, the SPRT, McNemar, the t test),
    so the band may still hold 0 at the seed the test decided, and it is labelled NOT_THE_TEST."""
    if spec.metric != SUCCESS_METRIC:
        return spec.test == "savi"
    return outcome == EQUIVALENT and spec.test in ("savi", "step")


def band_note(spec: ComparisonSpec, outcome: str | None = None) -> str:
    """' (descriptive, not the test)' after a band that is not the test, '' after one that is."""
    return "" if band_is_the_test(spec, outcome) else f" ({NOT_THE_TEST})"


def _label(outcome: str, spec: ComparisonSpec) -> str:
    unit = "" if spec.metric == SUCCESS_METRIC else " cm"
    return {BETTER: f"{spec.arm_b} better than {spec.arm_a}", WORSE: f"{spec.arm_b} worse than {spec.arm_a}",
            EQUIVALENT: f"{spec.arm_b} equivalent to {spec.arm_a} within {spec.minimum_effect:g}{unit}",
            FUTILE: "stopped for futility (no difference of the design's size; nothing claimed)",
            UNDECIDED: "undecided at max seeds"}.get(outcome, outcome)


# ---------------------------------------------------------------- the path over seeds (what the console draws)


@dataclass(frozen=True)
class ComparisonPath:
    """The comparison after each seed of the shared plan prefix: the running mean of the per-seed delta
    B - A, the confidence sequence around it (the same betting sequence `decide` reads for the band:
    success deltas in [-1, 1], progress deltas in [-delta_bound_cm, delta_bound_cm], or clipped to
    +/-clip_cm under savi, whose running mean is then the clipped one), and, for the
    discordant e-process, its two e-values. Point i is after `at[i]` seeds of the prefix."""

    spec: ComparisonSpec
    max_seeds: int
    seeds: tuple[int, ...] = ()  # the planned seed each point ends on
    at: tuple[int, ...] = ()  # seeds of the prefix read at each point (1-based; skipped pairs count)
    mean: tuple[float, ...] = ()
    lo: tuple[float, ...] = ()
    hi: tuple[float, ...] = ()
    e_better: tuple[float, ...] | None = None  # savi on success: the discordant e-process, per point
    e_worse: tuple[float, ...] | None = None
    successes: tuple[int, int] | None = None  # success: (A, B) on the whole prefix
    skipped: int = 0  # progress: pairs without progress on a side
    void_at: int | None = None  # progress: the prefix seed whose delta broke the registered bound (points stop before)
    discordant: tuple[int, int] | None = None  # success: (seeds only B, seeds only A) on the whole prefix

    @property
    def unit(self) -> str:
        return "" if self.spec.metric == SUCCESS_METRIC else " cm"

    @property
    def threshold(self) -> float:
        """The e-value (or capital) a direction must reach: 2/alpha (Ville, alpha/2 per direction)."""
        return 2 / self.spec.alpha

    def evidence_text(self) -> str:
        """The evidence now, in one line (what an update says while the comparison has not decided)."""
        spec = self.spec
        if not self.at:
            return f"no pair of {spec.arm_a} and {spec.arm_b} finished yet (max {self.max_seeds} seeds)"
        k = self.at[-1]
        level = f"{100 * (1 - spec.alpha):g}% confidence sequence"
        band = f"[{self.lo[-1]:+.3f}, {self.hi[-1]:+.3f}]{self.unit}"
        if spec.metric == SUCCESS_METRIC:
            ka, kb = self.successes or (0, 0)
            head = f"at {k}/{self.max_seeds} seeds: {spec.arm_b} {kb}/{k} vs {spec.arm_a} {ka}/{k}"
            if spec.test == "savi" and self.e_better is not None and self.e_worse is not None:
                up, down = self.e_better[-1], self.e_worse[-1]
                how = (f"e-value {max(up, down):.3g} for {spec.arm_b} {'better' if up >= down else 'worse'} "
                       f"(decides at {self.threshold:g})")
            elif spec.test == "step":
                how = f"STEP boundary at alpha/2 = {spec.alpha / 2:g} per direction, n_max {self.max_seeds}"
            elif spec.test in DESIGNED_TESTS and self.discordant is not None:
                how = _designed_evidence(designed_test(spec, self.max_seeds), k, *self.discordant, {})
            else:
                how = f"exact McNemar test, read once at {self.max_seeds} seeds"
            return f"{head}; {how}; {level} for the rate difference {band}{band_note(spec)}"
        what = "mean clipped delta" if spec.test == "savi" and spec.clip_cm is not None else "mean"
        head = f"at {k}/{self.max_seeds} seeds: {what} {spec.arm_b} - {spec.arm_a} {self.mean[-1]:+.3f} cm"
        if spec.test == "fixed":
            how = f"paired t test, read once at {self.max_seeds} seeds"
        else:
            how = (f"decides when the sequence for {spec.estimand()} excludes 0 (better/worse) or lies inside "
                   f"+/-{spec.minimum_effect:g} cm (equivalent)")
        skipped = f" ({self.skipped} pairs skipped: no progress on a side)" if self.skipped else ""
        return f"{head}{skipped}; {level} {band}{band_note(spec)}; {how}"


def path(spec: ComparisonSpec, rows_a_by_seed: dict, rows_b_by_seed: dict, planned_seeds) -> ComparisonPath:
    """The comparison over the shared plan prefix, point by point (the same rows `decide` reads)."""
    planned = list(planned_seeds)
    cap = spec.seeds_cap(len(planned))
    pairs = shared_prefix(rows_a_by_seed, rows_b_by_seed, planned)[:cap]
    if not pairs:
        return ComparisonPath(spec, cap)
    if spec.metric == SUCCESS_METRIC:
        a, b = _arrays(spec, pairs)
        d = b.astype(float) - a
        at = list(range(1, len(pairs) + 1))
        lo, hi = betting_cs_path(d, 1.0, spec.alpha)
        eb = ew = None
        if spec.test == "savi":
            w, ls = np.cumsum(b & ~a), np.cumsum(a & ~b)
            eb = tuple(float(v) for v in np.exp(discordant_log_e(w, ls)))
            ew = tuple(float(v) for v in np.exp(discordant_log_e(ls, w)))
        return ComparisonPath(spec, cap, tuple(planned[i - 1] for i in at), tuple(at),
                              tuple(float(v) for v in np.cumsum(d) / np.arange(1, d.size + 1)),
                              tuple(map(float, lo)), tuple(map(float, hi)), eb, ew, (int(a.sum()), int(b.sum())),
                              discordant=(int((b & ~a).sum()), int((a & ~b).sum())))
    d, skipped, broken = _arrays(spec, pairs)
    at = _delta_seed_indices(pairs)
    void_at = None
    if broken is not None:
        void_at = broken[0]
        keep = sum(1 for i in at if i < void_at)
        d, at = d[:keep], at[:keep]
    if spec.test == "savi":
        d = clipped(spec, d)
    lo, hi = betting_cs_path(d, progress_bound(spec) if spec.test == "savi" else spec.delta_bound_cm, spec.alpha)
    return ComparisonPath(spec, cap, tuple(planned[i - 1] for i in at), tuple(at),
                          tuple(float(v) for v in np.cumsum(d) / np.arange(1, d.size + 1)),
                          tuple(map(float, lo)), tuple(map(float, hi)), skipped=skipped, void_at=void_at)


def _delta_seed_indices(pairs) -> list[int]:
    """The 1-based prefix index of each pair that has a progress delta (both sides read)."""
    return [i for i, _ in _progress_deltas(pairs)]


def batch_episodes(max_seeds: int, per_seed: int = 1) -> int:
    """The batch comparison's episodes: both arms on every one of max_seeds seeds (`per_seed`: the episodes a
    seed costs an arm, 1 + its variants in a crossed design)."""
    return 2 * max_seeds * per_seed


def episodes_saved(max_seeds: int, episodes_run: int, per_seed: int = 1) -> int:
    """Episodes not run against the batch: max_seeds x 2 (x per_seed) minus the episodes the run did run (rows
    of either arm, in-flight ones that finished after the decision included)."""
    return max(0, batch_episodes(max_seeds, per_seed) - episodes_run)
