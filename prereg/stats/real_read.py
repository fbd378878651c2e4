"""The read of an arm's registered real trials: is it the policy or the sim?

`real_read(spec, arm, sim_seeds, trials, predictions, ...)` is pure: the registered trials (the first
non-void trial of each selected seed), their real k/n with Wilson and Clopper-Pearson, the
prediction-powered interval on the real mean (UniformPPI with a betting interval, its two-stage
variant, its normal twin), the rectifier interval on Y - f with the verdict (the sim is optimistic,
pessimistic or consistent with the rig at alpha), the correlation, var(Y - f) against var(Y) and
whether the sim helps, the per-seed table, and what keeps it from being the registered read:

- trials on unselected seeds are exploratory (shown, never read);
- a trial recorded under another selection seed, a trial before the read was frozen, real.jsonl
  edited after a report (its first lines changed), or trials on two checkpoints are provenance
  problems (the read is shown and said not to be the registered one);
- real trials are never pooled with sim rows: the sim side is the prediction f only.

`read_run_real(doc, arm, run_dir, reported=...)` gathers the inputs from a run directory; `owed_seeds`
says which selected seeds still need a trial, in order (cheap: the console's next set-up);
`cross_arm(reads)` is SimplerEnv's Pearson r and MMRV across arms (checkpoints) with real trials.
The math is prereg/stats/real_math.py's; the meaning of a trial and a prediction is
prereg/rundir/real.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from prereg.rundir import real as rr
from prereg.rundir.files import parse_utc
from prereg.rundir.outcomes import ERROR as ROW_ERROR
from prereg.rundir.outcomes import SUCCESS as ROW_SUCCESS
from prereg.rundir.outcomes import classify
from prereg.stats import real_math as rm

NO_HELP = "the sim does not help here"


@dataclass(frozen=True)
class SeedPair:
    """One selected seed: the sim prediction beside the real outcome (None: not run yet)."""

    seed: int
    f: float | None  # the sim prediction under the metric
    sim_k: int | None  # the rollouts behind it
    sim_successes: int | None
    outcome: str | None  # the real trial's outcome (rr.OUTCOMES), None while owed
    y: float | None  # its value under the metric
    operator: str | None = None
    video: str | None = None


@dataclass
class RealRead:
    arm: str
    metric: str
    alpha: float
    planned: int  # registered trials
    selected: tuple[int, ...]
    sim_n: int  # N: sim seeds with a prediction
    prediction_source: str  # what f is, in words
    pairs: list[SeedPair] = field(default_factory=list)
    n: int = 0  # trials read (non-void, selected, first per seed)
    successes: int = 0
    mean_real: float | None = None
    mean_sim_paired: float | None = None
    mean_sim_all: float | None = None
    wilson: tuple[float, float] | None = None
    clopper_pearson: tuple[float, float] | None = None
    betting_real: tuple[float, float] | None = None
    ppi_estimate: float | None = None
    ppi_betting: tuple[float, float] | None = None
    ppi_two_stage: tuple[float, float] | None = None
    ppi_normal: tuple[float, float] | None = None
    rectifier: tuple[float, float] | None = None
    verdict: str | None = None  # rm.OPTIMISTIC | PESSIMISTIC | CONSISTENT
    correlation: float | None = None
    var_diff: float | None = None
    var_real: float | None = None
    sim_helps: bool | None = None
    voids: int = 0
    repeats: int = 0  # later trials on a seed already read: recorded, not read
    unscored: int = 0  # trials without a progress under the progress metric: recorded, not read (the seed stays owed)
    exploratory: list[int] = field(default_factory=list)  # seeds tried that were not selected
    owed: list[int] = field(default_factory=list)  # selected seeds without a trial read yet
    problems: list[str] = field(default_factory=list)  # provenance: not the registered read
    recorded: tuple[int, str] = (0, "")  # real.jsonl's lines and sha256 when read (a later report checks them)

    @property
    def registered(self) -> bool:
        return not self.problems

    def verdict_words(self) -> str:
        if self.verdict is None:
            return "no real trial read yet"
        lo, hi = self.rectifier
        gap = f"real - sim {lo:+.2f} to {hi:+.2f} at {1 - self.alpha:.0%}"
        return {rm.OPTIMISTIC: f"the sim is optimistic about this arm ({gap})",
                rm.PESSIMISTIC: f"the sim is pessimistic about this arm ({gap})",
                rm.CONSISTENT: f"the sim is consistent with the rig ({gap})"}[self.verdict]

    def sentence(self) -> str:
        """The read in one sentence: whether the sim can be trusted for this policy."""
        if self.n == 0:
            return f"{self.arm} real: no trial read yet ({self.planned} registered)"
        real = (f"{self.successes}/{self.n} real successes" if self.metric == rr.METRIC_SUCCESS
                else f"real mean progress {self.mean_real:.2f} over {self.n}")
        ppi = (f", prediction-powered {self.ppi_estimate:.2f} [{self.ppi_betting[0]:.2f}, {self.ppi_betting[1]:.2f}]"
               if self.ppi_betting is not None and self.sim_helps else "")
        helps = "" if self.sim_helps is not False else f"; {NO_HELP}"
        out = f"{self.arm} real: {real}{ppi}; {self.verdict_words()}{helps}"
        if self.owed:
            out += f" ({len(self.owed)} of {self.planned} still owed)"
        if self.problems:
            out += " — NOT the registered read: " + "; ".join(self.problems)
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(sentence=self.sentence(), registered=self.registered)
        return d


def _first_reads(selected, trials, metric):
    """{seed: trial} the first non-void trial of each selected seed; voids, repeats, trials with no value under
    the metric, unselected seeds."""
    chosen: dict[int, rr.Trial] = {}
    voids = repeats = unscored = 0
    unselected: list[int] = []
    wanted = set(selected)
    for t in trials:
        if t.outcome == rr.VOID:
            voids += 1
        elif t.seed not in wanted:
            if t.seed not in unselected:
                unselected.append(t.seed)
        elif t.seed in chosen:
            repeats += 1
        elif rr.trial_value(t, metric) is None:
            unscored += 1
        else:
            chosen[t.seed] = t
    return chosen, voids, repeats, unscored, unselected


def real_read(spec, arm: str, sim_seeds: Sequence[int], trials: Sequence[rr.Trial],
              predictions: Mapping[int, float], *, prediction_k: Mapping[int, tuple[int, int]] | None = None,
              prediction_source: str = "", frozen_at: str = "", checkpoint_pin: str | None = None,
              edited: str | None = None) -> RealRead:
    """The read (see the module). `predictions` {seed: f} over the sim seeds (N: those present);
    `prediction_k` {seed: (successes, k)} for the table; `frozen_at` when reads.real was frozen;
    `checkpoint_pin` the arm's frozen sha256 pin, when it has one; `edited` why real.jsonl no
    longer holds what a report read (None: it does)."""
    from prereg.document.real_spec import read_order, select_seeds

    selected = select_seeds(sim_seeds, min(spec.trials, len(set(sim_seeds))), spec.selection_seed)
    out = RealRead(arm, spec.metric, spec.alpha, spec.trials, selected, sum(1 for s in set(sim_seeds) if s in predictions),
                   prediction_source)
    chosen, out.voids, out.repeats, out.unscored, out.exploratory = _first_reads(selected, trials, spec.metric)
    _provenance(out, spec, trials, frozen_at, checkpoint_pin, edited)
    for s in selected:
        t = chosen.get(s)
        sk = (prediction_k or {}).get(s)
        out.pairs.append(SeedPair(s, predictions.get(s), None if sk is None else sk[1], None if sk is None else sk[0],
                                  None if t is None else t.outcome, None if t is None else rr.trial_value(t, spec.metric),
                                  None if t is None else t.operator, None if t is None else t.video))
    out.owed = [p.seed for p in out.pairs if p.y is None]
    read = [p for p in out.pairs if p.y is not None]
    out.n = len(read)
    if not read:
        return out
    y = np.array([p.y for p in read])
    out.mean_real = float(y.mean())
    a = spec.alpha
    if spec.metric == rr.METRIC_SUCCESS:
        out.successes = int(y.sum())
        out.wilson, out.clopper_pearson = rm.wilson(out.successes, out.n, a), rm.clopper_pearson(out.successes, out.n, a)
    out.betting_real = rm.betting_interval(y, 0.0, 1.0, a)
    paired = [p for p in read if p.f is not None]
    if len(paired) < len(read):
        out.problems.append(f"{len(read) - len(paired)} read seed(s) have no sim prediction")
        return out
    yp, fp = np.array([p.y for p in paired]), np.array([p.f for p in paired])
    order = [s for s in read_order(sim_seeds, spec.selection_seed) if s in predictions]
    f_all = np.array([predictions[s] for s in order])
    by_seed = {p.seed: p for p in paired}
    mask = np.array([s in by_seed for s in order])
    y_in_order = np.array([by_seed[s].y for s in order if s in by_seed])
    f_in_order = np.array([by_seed[s].f for s in order if s in by_seed])
    out.mean_sim_paired, out.mean_sim_all = float(fp.mean()), float(f_all.mean())
    out.ppi_betting = rm.ppi_betting(y_in_order, f_in_order, f_all, mask, a)
    out.ppi_two_stage = rm.ppi_two_stage(yp, fp, f_all, a)
    est, lo, hi = rm.ppi_normal(yp, fp, f_all, a)
    out.ppi_estimate, out.ppi_normal = est, (max(0.0, lo), min(1.0, hi))
    out.rectifier = rm.rectifier(yp, fp, a)
    out.verdict = rm.rectifier_verdict(out.rectifier)
    out.correlation = rm.correlation(yp, fp)
    helps = rm.sim_helps(yp, fp, f_all)
    if helps is not None:
        out.sim_helps, out.var_diff, out.var_real = helps
    return out


def _provenance(out: RealRead, spec, trials, frozen_at: str, pin: str | None, edited: str | None) -> None:
    other = sorted({t.selection_seed for t in trials if t.selection_seed is not None and t.selection_seed != spec.selection_seed})
    if other:
        out.problems.append(f"trials were recorded under selection seed {', '.join(map(str, other))}, the plan now "
                            f"registers {spec.selection_seed}: the selection changed after the first trial")
    frozen = parse_utc(frozen_at)
    first = min((t for t in (parse_utc(x.started_at) for x in trials) if t is not None), default=None)
    if frozen is None:
        out.problems.append("the real read is not frozen (freeze the plan before the first real trial)")
    elif first is not None and first < frozen:
        out.problems.append(f"the first real trial ({first.isoformat()}) is before the real read was frozen ({frozen_at})")
    shas = sorted({t.checkpoint_sha256.removeprefix("sha256:") for t in trials})
    if len(shas) > 1:
        out.problems.append(f"trials on {len(shas)} checkpoints ({', '.join(s[:10] for s in shas)})")
    elif shas and pin and pin.startswith("sha256:") and shas[0] != pin.removeprefix("sha256:"):
        out.problems.append(f"trials on checkpoint {shas[0][:10]}, the arm is frozen at {pin[7:17]}")
    if edited:
        out.problems.append(edited)


def sim_row_predictions(rows: Sequence[dict]) -> dict[int, float]:
    """The fallback f when no jittered predictions were run: each seed's own sim row (K = 1, unjittered),
    success only; an error row predicts nothing, and a seed's last row stands."""
    out: dict[int, float] = {}
    for r in rows:
        outcome, _, _ = classify(r)
        if type(r.get("seed")) is int:
            if outcome == ROW_ERROR:
                out.pop(r["seed"], None)
            else:
                out[r["seed"]] = 1.0 if outcome == ROW_SUCCESS else 0.0
    return out


def edited_since(run_dir: str | Path, reported: object) -> str | None:
    """Why real.jsonl no longer holds what a report read (`reported`: results.json's real `recorded`
    [lines, sha256]); None when its first lines are unchanged (trials added since are fine)."""
    if not (isinstance(reported, (list, tuple)) and len(reported) == 2 and type(reported[0]) is int
            and isinstance(reported[1], str) and reported[0] > 0):
        return None
    lines, sha = rr.real_digest(run_dir, reported[0])
    if lines < reported[0] or sha != reported[1]:
        return f"real.jsonl was edited after a report read it (its first {reported[0]} lines changed)"
    return None


def read_run_real(doc, arm: str, run_dir: str | Path, rows: Sequence[dict] = (), *, reported: object = None) -> RealRead | None:
    """The registered real read of `arm` from its run directory (real.jsonl, sim_predictions.jsonl, the
    sim rows as fallback f); None when the plan registers none for the arm."""
    from prereg.document.real_spec import real_spec_of
    from prereg.stats.verdict import frozen_at

    got = real_spec_of(doc, arm)
    if got is None:
        return None
    spec, seeds = got
    _, sm = doc.find_arm(arm)
    section = sm.sources.get("reads.real", sm.section.name)
    trials = rr.read_trials(run_dir, arm)
    preds = rr.read_predictions(run_dir, arm)
    if preds.by_seed:
        f = {s: v for s, p in preds.by_seed.items() if (v := rr.prediction_value(p, spec.metric)) is not None}
        ks = {s: (p.successes, p.k) for s, p in preds.by_seed.items()}
        kset = sorted({p.k for p in preds.by_seed.values()})
        jit = sorted({p.jitter_cm for p in preds.by_seed.values()})
        source = f"{'/'.join(map(str, kset))} sim rollouts per seed jittered within ±{'/'.join(f'{j:g}' for j in jit)} cm"
        if kset != [spec.sim_k] or jit != [spec.jitter_cm]:
            source += f" (registered: {spec.sim_k} within ±{spec.jitter_cm:g} cm)"
    elif spec.metric == rr.METRIC_SUCCESS:
        f, ks = sim_row_predictions(rows), None
        source = (f"each seed's own sim row (1 rollout, not jittered): the registered {spec.sim_k} jittered "
                  "rollouts per seed were not run")
    else:
        f, ks, source = {}, None, "no sim predictions (sim_predictions.jsonl) for the progress metric"
    arm_pin = doc.find_arm(arm)[0].revision
    out = real_read(spec, arm, seeds, trials.trials, f, prediction_k=ks, prediction_source=source,
                    frozen_at=frozen_at(doc, section), checkpoint_pin=arm_pin, edited=edited_since(run_dir, reported))
    if trials.bad:
        out.problems.append(f"{len(trials.bad)} bad line(s) in real.jsonl (first: line {trials.bad[0].line_no}: "
                            f"{trials.bad[0].reason})")
    out.recorded = rr.real_digest(run_dir)
    return out


def owed_seeds(doc, arm: str, run_dir: str | Path) -> tuple[int, ...]:
    """The selected seeds of `arm` still without a trial read, in the order to run them (the console's
    "set this up next"): no statistics computed; () when the plan registers no real read for the arm."""
    from prereg.document.real_spec import real_spec_of, selected_seeds

    got = real_spec_of(doc, arm)
    if got is None:
        return ()
    chosen = selected_seeds(doc, arm)
    read, *_ = _first_reads(chosen, rr.read_trials(run_dir, arm).trials, got[0].metric)
    return tuple(s for s in chosen if s not in read)


@dataclass(frozen=True)
class CrossArm:
    arms: tuple[str, ...]
    sim: tuple[float, ...]
    real: tuple[float, ...]
    pearson: float | None
    mmrv: float

    def sentence(self) -> str:
        r = "undefined (a rate that does not vary)" if self.pearson is None else f"{self.pearson:.3f}"
        return f"sim vs real across {len(self.arms)} arms: Pearson r {r}, MMRV {self.mmrv:.3f} (SimplerEnv's definitions)"


def cross_arm(reads: Sequence[RealRead]) -> CrossArm | None:
    """Pearson r and MMRV between the sim and real means of the arms with real trials read (two or more)."""
    usable = [r for r in reads if r.n > 0 and r.mean_sim_all is not None]
    if len(usable) < 2:
        return None
    sim, real = [r.mean_sim_all for r in usable], [r.mean_real for r in usable]
    return CrossArm(tuple(r.arm for r in usable), tuple(sim), tuple(real), rm.pearson_r(sim, real), rm.mmrv(sim, real))
