"""The real read in results.md: the sentence, the intervals, the rectifier and what the sim adds, the
per-seed sim vs real table, and across arms SimplerEnv's Pearson r and MMRV. Words only; the numbers
are prereg/stats/real_read.py's."""

from __future__ import annotations

from prereg.core.untrusted import printable
from prereg.rundir.real import METRIC_SUCCESS
from prereg.stats.real_read import NO_HELP, CrossArm, RealRead


def _iv(iv: tuple[float, float] | None) -> str:
    return "—" if iv is None else f"[{iv[0]:.3f}, {iv[1]:.3f}]"


def real_markdown(read: RealRead) -> list[str]:
    conf = f"{1 - read.alpha:.0%}"
    out = [f"### Real trials: {read.arm}", "", f"**{printable(read.sentence())}**", "",
           f"Registered: {read.planned} real trials on sim seeds {', '.join(map(str, read.selected))} (in that order), "
           f"{read.metric}, {conf} intervals. Sim prediction f: {read.prediction_source}; N = {read.sim_n} sim seeds. "
           "Real trials are read apart from the sim rows, never pooled with them.", ""]
    if read.n:
        real = (f"{read.successes}/{read.n} = {read.mean_real:.3f}" if read.metric == METRIC_SUCCESS
                else f"{read.mean_real:.3f} over {read.n}")
        out += ["| read | estimate | interval |", "|---|---|---|", f"| real only | {real} | betting {_iv(read.betting_real)} |"]
        if read.metric == METRIC_SUCCESS:
            out += [f"| real only | | Wilson {_iv(read.wilson)} |", f"| real only | | Clopper-Pearson {_iv(read.clopper_pearson)} |"]
        if read.ppi_estimate is not None:
            out += [f"| prediction-powered (UniformPPI) | {read.ppi_estimate:.3f} | betting {_iv(read.ppi_betting)} |",
                    f"| prediction-powered, two-stage | | betting {_iv(read.ppi_two_stage)} |",
                    f"| prediction-powered, normal twin | | {_iv(read.ppi_normal)} |",
                    f"| rectifier E(Y - f) | {read.mean_real - read.mean_sim_paired:+.3f} | betting {_iv(read.rectifier)}: "
                    f"{read.verdict} |"]
        out.append("")
        if read.var_real is not None:
            corr = "undefined" if read.correlation is None else f"{read.correlation:.2f}"
            out.append(f"Correlation of real and sim on the paired seeds: {corr}; var(Y - f) {read.var_diff:.3f} against "
                       f"var(Y) {read.var_real:.3f}: " + ("the sim narrows the real read." if read.sim_helps else
                                                         f"{NO_HELP} (its interval is no narrower than real trials alone)."))
            out.append("")
    notes = []
    if read.owed:
        notes.append(f"owed: seeds {', '.join(map(str, read.owed))}")
    if read.voids:
        notes.append(f"{read.voids} void trial(s), not read (their seeds stay owed)")
    if read.repeats:
        notes.append(f"{read.repeats} later trial(s) on a seed already read: recorded, not read")
    if read.unscored:
        notes.append(f"{read.unscored} trial(s) without a progress, not read under the progress metric")
    if read.exploratory:
        notes.append(f"exploratory (not selected, never read): seeds {', '.join(map(str, read.exploratory))}")
    notes += [f"NOT the registered read: {printable(p)}" for p in read.problems]
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out += ["| seed | sim f | sim k/K | real | Y |", "|---|---|---|---|---|"]
    for p in read.pairs:
        f = "—" if p.f is None else f"{p.f:.2f}"
        kk = "—" if p.sim_k is None else f"{p.sim_successes}/{p.sim_k}"
        y = "—" if p.y is None else f"{p.y:g}"
        out.append(f"| {p.seed} | {f} | {kk} | {p.outcome or 'owed'} | {y} |")
    return out + [""]


def cross_arm_markdown(cross: CrossArm | None) -> list[str]:
    if cross is None:
        return []
    rows = [f"| {printable(a)} | {s:.3f} | {r:.3f} |" for a, s, r in zip(cross.arms, cross.sim, cross.real)]
    return ["## Sim against real across arms", "", cross.sentence() + ".", "", "| arm | sim | real |", "|---|---|---|",
            *rows, ""]
