"""Arms side by side, read through the verdict engine: the same counts, denominators, intervals,
paired reads and verdicts as `fontaine-prereg report`, never a second computation.

`compare_view(prereg_path, runs)` reads the newest run of each arm (`{arm: run_dir}`) with
`prereg.report.read_registration` (which writes nothing) and turns it into table cells:
successes over every episode with a row (an error row is a non-success) beside the registered
interval on the same denominator; validity with its first reason; each arm paired with its
registered comparator (progress delta with the report's paired bootstrap, and the success
difference with Newcombe's paired score interval); every registered rule's verdict by key.
It reads files: call it off the UI thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.errors import PreregError

ARM_COLUMNS = ("arm", "validity", "state", "done", "successes", "CI95 %", "knock-aways", "zero-fallbacks", "run")
PAIRED_COLUMNS = ("pair", "shared", "Δ progress cm", "CI95 (bootstrap)", "Δ success pp", "CI95 (Newcombe paired)",
                  "better/tied/worse")
INTERVAL_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}


@dataclass(frozen=True)
class CompareView:
    prereg_id: str
    arms: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (key, cells)
    paired: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    interval: str = ""
    error: str | None = None


def compare_view(prereg_id: str, prereg_path: str | Path | None, runs: dict[str, Path]) -> CompareView:
    """The compare view of a registration's newest runs, or the one line that says why there is none."""
    from prereg.document import load
    from prereg.report import read_registration

    if not prereg_path:
        return CompareView(prereg_id, error="the runs do not say where their pre-registration is (manifest prereg.path)")
    try:
        doc = load(prereg_path)
        known = {a.name for a in doc.arms()}
        runs = {a: d for a, d in runs.items() if a in known}
        doc, reports, judgement = read_registration(prereg_path, runs)
    except PreregError as exc:
        return CompareView(prereg_id, error=str(exc).splitlines()[0])
    arms = []
    interval = ""
    for a in doc.arms():
        rep = reports.get(a.name)
        if rep is None:
            arms.append((a.name, (a.name, "no run", "", "", "", "", "", "", "")))
            continue
        r = rep.reads
        name, ci = next(iter(r.intervals.items()), ("", None))
        interval = interval or INTERVAL_NAMES.get(name, name)
        state = r.run_state or "?"
        validity = "VALID" if r.valid else "INVALID: " + next(c.text for c in r.checks if not c.ok)
        rate = f" {100 * r.success_rate:.1f}%" if r.success_rate is not None else ""
        zf = f"{r.zero_fallbacks}" + (f" ({100 * r.zero_fallback_rate:.2f}%)" if r.zero_fallback_rate is not None else "")
        arms.append((a.name, (a.name, validity, state, f"{r.n}/{r.n_planned}", f"{r.successes}/{r.n}{rate}",
                              f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "", str(r.knock_aways), zf,
                              rep.run_dir.name)))
    paired = []
    for arm, rep in reports.items():
        c = next(iter(rep.comparators), None)
        if c is None:
            continue
        paired.append((arm, _paired_cells(arm, c)))
    verdicts = [f"[{v.label}] {v.key}: if {v.rule.condition}" for v in judgement.verdicts]
    verdicts += [f"[{s.label}] sequential test of arm {s.arm}" for s in judgement.sequential]
    return CompareView(doc.prereg_id or prereg_id, arms, paired, verdicts, interval)


def _paired_cells(arm: str, c) -> tuple[str, ...]:
    pair = f"{arm} vs {c.comparator.name}"
    p = c.paired
    if p is None or not p.shared_seeds:
        return (pair, "0", c.note[:60] or "nothing to pair", "", "", "", "")
    ci = f"[{p.delta_ci[0]:+.2f}, {p.delta_ci[1]:+.2f}]" if p.delta_ci else "not computed"
    ps = p.success
    sd = "—" if ps is None or ps.delta is None else f"{100 * ps.delta:+.1f}".replace("-0.0", "+0.0")
    sci = "" if ps is None or ps.ci is None else f"[{100 * ps.ci[0]:+.1f}, {100 * ps.ci[1]:+.1f}]"
    return (pair, str(p.shared_seeds), f"{p.delta_mean:+.2f}", ci, sd, sci, f"{p.better}/{p.tied}/{p.worse}")


def inputs_key(prereg_path: str | Path | None, runs: dict[str, Path]) -> tuple:
    """What the view is a function of, by file size and mtime: recompute only when one changes."""
    def stamp(p: Path) -> tuple:
        try:
            st = os.stat(p)
            return (st.st_size, st.st_mtime_ns)
        except OSError:
            return ()
    files = [Path(prereg_path)] if prereg_path else []
    for d in runs.values():
        files += [Path(d) / rd.ROWS, Path(d) / rd.STATUS, Path(d) / rd.MANIFEST]
    return (str(prereg_path), tuple(sorted(runs.items())), tuple(stamp(f) for f in files))
