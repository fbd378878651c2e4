"""A registration's timeline: when each section was frozen, when its runs were launched and wrote
their first row, when it was reported; and which sections were frozen after data they are read
against existed (their rules are exploratory against those runs, prereg.stats.verdict.data_time).

What `fontaine-prereg show` prints. The times are the ones the tool wrote: seals (`frozen_at`),
manifests (`started_at`, `resumes`), rows (`finished_at`), results.json (`generated_at`) and the
document's results blocks (`at=`). Runs are this registration's by manifest (a frozen section's hash).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from prereg import rundir as rd
from prereg.core.vocabulary import COMPARATOR_READS
from prereg.document.model import Document
from prereg.rundir.discovery import discover_runs
from prereg.rundir.files import first_row_at, parse_utc
from prereg.rundir.rows import read_rows

NEVER = datetime.max.replace(tzinfo=timezone.utc)  # an event without a time sorts last


@dataclass(frozen=True)
class Event:
    at: str  # as written; "" when not known
    what: str
    warn: bool = False  # a section frozen after data it is read against

    def line(self) -> str:
        return f"{self.at or '(no time)':<22} {'!! ' if self.warn else ''}{self.what}"


@dataclass(frozen=True)
class RunTimes:
    run_dir: Path
    arms: tuple[str, ...]  # the arm, or a comparison run's two
    section: str
    started_at: str | None
    first_row_at: str | None


def registration_runs(doc: Document, runs_dirs) -> list[RunTimes]:
    """The runs in `runs_dirs` launched from one of this document's frozen sections (by manifest hash)."""
    sections = {sm.section.seal.sha256: sm.section.name for sm in doc.sections if sm.section.sealed}
    out = []
    for folder in runs_dirs:
        for d in discover_runs(folder):
            m, _ = rd.read_manifest(d)
            if m is None or m.prereg is None or m.prereg.sha256 not in sections:
                continue
            rows = read_rows(d / rd.ROWS).rows
            arms = tuple(m.arms) if m.is_comparison else (m.arm or "?",)
            out.append(RunTimes(d, arms, sections[m.prereg.sha256], m.started_at, first_row_at(rows)))
    return out


def timeline(doc: Document, runs_dirs=()) -> list[Event]:
    """Every dated event of the registration, in time order (undated ones last)."""
    runs = registration_runs(doc, runs_dirs)
    events = []
    for sm in doc.sections:
        sec = sm.section
        name = sec.name + (f" ({sm.title})" if sec.number and sm.title else "")
        if not sec.sealed:
            events.append(Event("", f"{name} open: a draft, not frozen (registers nothing)"))
            continue
        at = sec.seal.attrs.get("frozen_at", "")
        events.append(Event(at, f"froze {name}, sha256 {sec.seal.sha256[:12]}"))
        for why in _after_data(doc, sm, runs):
            events.append(Event(at, why, warn=True))
    for r in runs:
        arms = " and ".join(r.arms)
        events.append(Event(r.started_at or "", f"launched {arms} from {r.section}: run {r.run_dir.name}"))
        m, _ = rd.read_manifest(r.run_dir)
        events += [Event(x["at"], f"resumed run {r.run_dir.name}") for x in (m.resumes if m else ())
                   if isinstance(x.get("at"), str)]
        if r.first_row_at:
            events.append(Event(r.first_row_at, f"first row of run {r.run_dir.name} ({arms})"))
        res = rd.read_json(r.run_dir / rd.RESULTS_JSON)
        if isinstance(res, dict) and isinstance(res.get("generated_at"), str):
            events.append(Event(res["generated_at"], f"reported run {r.run_dir.name} (results.json)"))
    for b in doc.layout.results:
        arms = ", ".join(sorted(b.arms))
        state = (f"; superseded at {b.attrs['superseded']} by the section for "
                 f"{', '.join(sorted(a for a in b.attrs.get('by', '').removeprefix('arms=').split(',') if a))}"
                 if b.superseded else "; live")
        events.append(Event(b.attrs.get("at", ""), f"results section for {arms} appended (line {b.start + 1}{state})"))
    return sorted(events, key=lambda e: parse_utc(e.at) or NEVER)


def _after_data(doc: Document, sm, runs: list[RunTimes]) -> list[str]:
    """Why this section's rules are exploratory against runs that had rows before it was frozen."""
    frozen = parse_utc(sm.section.seal.attrs.get("frozen_at", ""))
    if frozen is None:
        return []
    named = {a for r in sm.rules for a in r.arms()}
    named |= {c.name for r in sm.rules for c_ in r.clauses for o in (c_.left, c_.right)  # comparators read
              if isinstance(o, tuple) and o[1] in COMPARATOR_READS for c in doc.comparators_for(o[0])[:1]}
    named |= {sm.comparison.arm_a, sm.comparison.arm_b} if sm.comparison else set()
    out = []
    for r in runs:
        t = parse_utc(r.first_row_at)
        hit = sorted(set(named) & set(r.arms))
        if t is not None and hit and frozen > t:
            out.append(f"{sm.section.name} was frozen after the first row of run {r.run_dir.name} "
                       f"({r.first_row_at}): its rules on {', '.join(hit)} are exploratory against that run")
    return out
