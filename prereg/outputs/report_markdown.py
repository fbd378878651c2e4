"""Writing the report: results.md per run, the registration's results file, and the results section
appended to the document (a section that replaces an older one keeps it below with its hash and time)."""

from __future__ import annotations

from pathlib import Path

from prereg.core.errors import PreregError
from prereg.core.words import plural
from prereg.document.layout import REPLACED_MARK, RESULTS_END, parse_layout, results_begin
from prereg.document.model import Document
from prereg.document.read import parse
from prereg.document.seal import verify_layout, write_lines
from prereg.outputs.report_read import UNREGISTERED_LINE, ArmReport, comparison_reads
from prereg.rundir.outcomes import EPISODE_OUTCOMES, OUTCOME_LABELS, OUTCOME_RULES
from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM
from prereg.stats.reads import DESCRIPTIVE_READ, MIN_PAIRED_SEEDS, ArmReads, Paired
from prereg.stats.story import Story
from prereg.stats.verdict import Judgement

# ---------------------------------------------------------------- writing

# the seeds' further reads (worst knock-away, success ticks, tipped, spend, mask), as results.md, the page
# and the Discord post that quotes results.md head them: plain words, for a reader on a phone
OTHER_READS = "Other reads"


def section_markdown(doc: Document, reports: dict[str, ArmReport], judgement: Judgement, now: str,
                      reg_md: Path | None = None) -> list[str]:
    arms = sorted(reports)
    out = [results_begin(f"arms={','.join(arms)}", at=now, rules=",".join(answered(reports, judgement))),
           f"## Results: {', '.join(arms)} ({now[:16].replace('T', ' ')}Z, fontaine-prereg report)", "",
           "_Written by `fontaine-prereg report`; reporting these arms again replaces this section, and a later "
           "report that answers any of its questions (an arm, a rule) marks it superseded. "
           "Write interpretation outside it._", ""]
    if reg_md is not None:
        out += [f"The registration's results file: `{reg_md}`.", ""]
    for c in comparison_reads(reports):
        out += [line.replace("## Comparison", "### Comparison", 1) for line in c.markdown()]
    for arm in arms:
        rep = reports[arm]
        out += arm_markdown(rep, chart_rel=str(rep.chart) if rep.chart else None) + [""]
    out += rules_markdown(judgement)
    out.append(RESULTS_END)
    return out


def answered(reports: dict[str, ArmReport], judgement: Judgement) -> list[str]:
    """The questions a report answers besides its arms' reads: each rule, sequential test and comparison
    every arm of which it read (a rule missing an arm's run is not answered here, only listed)."""
    shown = set(reports) | {c.comparator.arm for r in reports.values() for c in r.comparators if c.report is not None}
    keys = [v.key for v in judgement.verdicts if set(v.arms) <= shown]
    keys += [s.key for s in judgement.sequential if s.arm in reports]
    keys += [c.key for c in judgement.comparisons]
    return keys


def arm_markdown(rep: ArmReport, chart_rel: str | None, *, in_registration: bool = False) -> list[str]:
    a = rep.reads
    out = [f"### {a.arm}", "",
           f"Run `{rep.run_dir}`; registered in {rep.section} (sha256 `{rep.sha256[:12]}`).", "",
           f"- **Primary**: {primary_line(a)}"]
    if rep.after_stop:
        out.append(f"  - **{rep.after_stop[0].upper()}{rep.after_stop[1:]}**.")
    out.append(f"- **Validity**: {validity_head(a, md=True)}")
    out += [f"  - {t}" for t in validity_lines(a)]
    out.append(f"- **Secondary** (record-only): engaged (progress_cm > {ENGAGED_CM:g}) {a.engaged}; knock-aways "
               f"(progress_final_cm <= {KNOCK_AWAY_CM:g}) {a.knock_aways}"
               + (f" at seeds {a.knock_seeds[:30]}" if a.knock_seeds and len(a.knock_seeds) <= 30 else "")
               + f"; quiet {a.quiet}; progress_final_cm mean {cm_text(a.progress_final_mean)}, median "
               f"{cm_text(a.progress_final_median)}; success seeds {a.success_seeds}; mask violations {a.mask_violations}"
               + (f"; first-action delta {a.first_action_delta_deg:.2f} deg" if a.first_action_delta_deg is not None else ""))
    out.append(f"- **{OTHER_READS}**: {seed_reads_line(a)}")
    if a.outcomes:
        out.append("- **Outcomes** (one per episode, the first that holds): " + outcomes_line(a.outcomes))
    for c in rep.comparators:
        out.append(f"- **Paired vs {c.comparator.name}**: " + (paired_line(c.paired) if c.paired else c.note)
                   + (f" ({c.note})" if c.paired and c.note else ""))
        if c.reads is not None:
            moves = outcome_transitions(c.reads, a)
            if moves:
                out.append(f"  - outcome moves from {c.comparator.name} to {a.arm}: "
                           + "; ".join(transition_text(m) for m in moves))
    if a.dropped:
        out.append("- **Dropped values** (null or not finite, left out of the reads that need them): "
                   + ", ".join(f"{k} {v}" for k, v in sorted(a.dropped.items())))
    for n in a.notes:
        out.append(f"- Note: {n}")
    if a.bad_lines:
        out.append(f"- Unreadable rows ({len(a.bad_lines)}): " + "; ".join(a.bad_lines[:5])
                   + ("; ..." if len(a.bad_lines) > 5 else ""))
    if a.dist_by_second_mean and not in_registration:
        out.append("- Boat-to-disk distance by second: the table in the registration's results file")
    if chart_rel:
        out.append(f"- Chart: `{chart_rel}`")
    return out


def outcomes_line(outcomes: dict[str, int]) -> str:
    return " · ".join(f"{OUTCOME_LABELS[o]} {n}" for o, n in outcomes.items() if n) or "no rows"


def outcome_transitions(before: ArmReads, after: ArmReads) -> list[tuple[str, str, list[int]]]:
    """(outcome in `before`, outcome in `after`, seeds) for the seeds both arms have whose episode
    outcome differs, most seeds first: which seeds went from "carried not placed" to "success"."""
    moves: dict[tuple[str, str], list[int]] = {}
    for seed, was in before.outcome_by_seed.items():
        now = after.outcome_by_seed.get(seed)
        if now is not None and now != was:
            moves.setdefault((was, now), []).append(seed)
    order = {o: i for i, o in enumerate(EPISODE_OUTCOMES)}
    return sorted(((a, b, sorted(s)) for (a, b), s in moves.items()),
                  key=lambda m: (-len(m[2]), order[m[0]], order[m[1]]))


def transition_text(move: tuple[str, str, list[int]]) -> str:
    was, now, seeds = move
    shown = ", ".join(map(str, seeds[:20])) + (", ..." if len(seeds) > 20 else "")
    return f"{OUTCOME_LABELS[was]} → {OUTCOME_LABELS[now]} {len(seeds)} (seeds {shown})"


def _outcomes_table(shown: dict[str, ArmReport]) -> list[str]:
    """Arms x episode outcomes: how each arm's episodes ended, in the classifier's order."""
    arms = [(name, rep.reads) for name, rep in shown.items() if rep.reads.outcomes]
    if not arms:
        return []
    used = [o for o in EPISODE_OUTCOMES if any(r.outcomes.get(o) for _, r in arms)]
    out = ["## Outcomes", "",
           "One outcome per episode (the first that holds, left to right).", "",
           "| arm | " + " | ".join(OUTCOME_LABELS[o] for o in used) + " |",
           "| --- | " + " | ".join("---" for _ in used) + " |"]
    for name, r in arms:
        out.append(f"| {name} | " + " | ".join(str(r.outcomes.get(o, 0)) for o in used) + " |")
    out += ["", *(f"- {OUTCOME_LABELS[o]}: {OUTCOME_RULES[o]}" for o in used if o in OUTCOME_RULES), ""]
    return out


def validity_head(a: ArmReads, md: bool = False) -> str:
    if a.valid:
        return "VALID"
    failed = sum(not c.ok for c in a.checks)
    return ("**INVALID**" if md else "INVALID") + f" ({failed} reason{'s' if failed != 1 else ''})"


def validity_lines(a: ArmReads) -> list[str]:
    """One line per check: the failing ones first, each a reason on its own line."""
    return [("FAIL " if not c.ok else "ok   ") + c.text for c in sorted(a.checks, key=lambda c: c.ok)]


def seed_reads_line(a: ArmReads) -> str:
    bits = []
    if a.worst_knock_cm is not None:
        bits.append(f"worst knock-away {a.worst_knock_cm:+.2f} cm at seed {a.worst_knock_seed}")
    else:
        bits.append("no knock-away")
    if a.success_tick_median is not None:
        lo, hi = a.success_tick_range
        bits.append(f"success ticks median {a.success_tick_median:g} (range {lo}-{hi})")
    bits.append(f"tipped {a.tipped}")
    spend = []
    if a.elapsed_s is not None:
        spend.append(f"wall {a.elapsed_s / 60:.1f} min")
    if a.wall_s_episodes is not None:
        spend.append(f"episode walls {a.wall_s_episodes / 60:.1f} min summed")
    if a.gpu_hours is not None:
        spend.append(f"{a.gpu_hours:.3f} GPU-h")
    per_call = f" ({a.mean_batch:.2f} per policy call)" if a.mean_batch is not None else ""
    spend.append(f"{a.predicts:,} predicts{per_call}")
    bits.append("spend " + ", ".join(spend))
    if a.mask_per_predict is not None:
        bits.append(f"mask interventions {a.mask_violations} ({a.mask_per_predict:.3f} per predict)")
    return "; ".join(bits)


HEADLINE = "Headline"  # the section every results.md starts with: the run's story (prereg/stats/story.py)


def story_markdown(story: Story) -> list[str]:
    """The run's story, first in results.md: the headline (state · validity · the plan's decision), then what
    it rests on: each arm's count and validity, the cost, every reason it is not VALID, the descriptive reads."""
    return [f"## {HEADLINE}", "", f"**{story.headline}**", "", *(f"- {words}" for _kind, words in story.basis()), ""]


def variants_markdown(story: Story) -> list[str]:
    """A crossed design's Variants section (issue 48), from the story: per arm a table of each variant's k/n
    and 95% interval (what decides, the camera variants read apart, the worst), the pooled rate, the seeds by
    how many variants succeed; a comparison run's pooled paired read after, descriptive."""
    if not story.variants:
        return []
    out = ["## Variants", "", "Every seed ran on the scene as declared (`base`) and on each registered variant. "
           f"{story.variants[0].reads_words()}; the pooled rate is the unweighted mean of "
           "the pooled variants' rates, its interval the crossed design's (docs/prereg.md).", ""]
    for v in story.variants:
        out += [f"### {v.arm}", "", "| variant | k/n | 95% CI | note |", "| --- | --- | --- | --- |"]
        for c in v.cells:
            ci = f"{c.interval[0]:.2f}-{c.interval[1]:.2f}" if c.interval else "-"
            out.append(f"| {_cell(c.variant)} | {c.successes}/{c.n} | {ci} | {v.note(c)} |")
        out += ["", f"- {v.pooled_words()}"] + ([f"- {v.seeds_words()}"] if v.seeds_words() else []) + [""]
    out += [f"- {p.sentence()}" for p in story.variants_paired]
    return out + ([""] if story.variants_paired else [])


def _cell(text: str) -> str:
    """A table cell's text: a `|` in a name does not split the row."""
    return text.replace("|", "\\|")


def rules_markdown(judgement: Judgement) -> list[str]:
    verdicts, seq = judgement.verdicts, judgement.sequential
    if not verdicts and not seq:
        return []
    out = ["### Decision rules", ""]
    for i, v in enumerate(verdicts, 1):
        reads = f"; reads {', '.join(v.arms)}" if v.arms else ""
        out.append(f"{i}. **{v.label}**: if `{v.rule.condition}` ({v.key}{reads}) then \u201c{v.rule.action}\u201d."
                   + (f" Judged on: {v.detail}." if v.detail else "") + (f" _{DESCRIPTIVE_READ[0].upper()}"
                                                                         f"{DESCRIPTIVE_READ[1:]}._" if v.descriptive else ""))
    for s in seq:
        out.append(f"- **{s.label}**: the registered sequential test of arm {s.arm} ({s.section})"
                   + (f": {s.decision.text}." if s.decision else "."))
    out.append("")
    return out


def registration_markdown(doc: Document, reports: dict[str, ArmReport], judgement: Judgement, now: str,
                           charts: list[Path], folder: Path, unregistered: bool,
                           stories: list[Story] = ()) -> list[str]:
    """The whole registration in one file: each run's headline, every arm, every rule, every pairing, the
    distance table."""
    out = [UNREGISTERED_LINE, ""] if unregistered else []
    out += [f"# Results: {doc.prereg_id or doc.path.stem}", "",
            f"Pre-registration `{doc.path}`, report {now} (`fontaine-prereg report`). This file is rewritten "
            "by every report of this registration from the runs given to it.", ""]
    if stories:
        out += [f"## {HEADLINE}s", ""]
        for s in stories:  # a crossed design's pooled reads under its run (its results.md has the Variants table)
            out += [f"- Run `{s.run}`: **{s.headline}**", *(f"  - variants {v.arm}: {v.pooled_words()}" for v in s.variants),
                    *(f"  - variants {p.sentence()}" for p in s.variants_paired)]
        out.append("")
    out += [
            "## Arms", "",
            "| arm | section | run | validity | successes | engaged | knock-aways | quiet | error rows | "
            "progress_final mean | completion |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    found = {c.comparator.arm: c.report for r in reports.values() for c in r.comparators if c.report is not None}
    shown: dict[str, ArmReport] = {**found, **reports}
    for a in doc.arms():
        sec = doc.find_arm(a.name)[1].section
        rep = shown.get(a.name)
        if not sec.sealed:
            out.append(f"| {a.name} | {sec.name} | | not frozen: no registered reads | | | | | | | |")
        elif rep is None:
            out.append(f"| {a.name} | {sec.name} | no run in this report | | | | | | | | |")
        else:
            r = rep.reads
            out.append(f"| {a.name} | {rep.section} | `{rep.run_dir.name}` | {validity_head(r)} | "
                       f"{r.successes}/{r.n} | {r.engaged} | {r.knock_aways} | {r.quiet} | {r.error_rows} | "
                       f"{cm_text(r.progress_final_mean)} | {r.completion} |")
    out.append("")
    for c in comparison_reads(reports):
        out += c.markdown()
    for rep in shown.values():
        out += arm_markdown(rep, chart_rel=str(rep.chart) if rep.chart else None, in_registration=True) + [""]
    out += _outcomes_table(shown)
    out += _pairings_markdown(reports, charts, folder)
    out += _distance_table(shown)
    out += rules_markdown(judgement)
    return out


def _pairings_markdown(reports: dict[str, ArmReport], charts: list[Path], folder: Path) -> list[str]:
    rows = [(arm, c) for arm, rep in reports.items() for c in rep.comparators]
    if not rows:
        return []
    out = ["## Paired comparisons", "",
           f"Per-seed delta of progress_final_cm on the seeds both have; paired bootstrap CI95 "
           f"(computed from {MIN_PAIRED_SEEDS} or more shared seeds only).", ""]
    for arm, c in rows:
        out.append(f"- **{arm} - {c.comparator.name}**: " + (paired_line(c.paired) if c.paired else c.note)
                   + (f" ({c.note})" if c.paired and c.note else ""))
        if c.reads is not None:
            out += [f"  - {c.comparator.name} → {arm}: {transition_text(m)}"
                    for m in outcome_transitions(c.reads, reports[arm].reads)]
    out.append("")
    for ch in charts:
        rel = ch.relative_to(folder) if ch.is_relative_to(folder) else ch
        out.append(f"![{ch.stem}]({rel})")
    out.append("")
    return out


def _distance_table(shown: dict[str, ArmReport]) -> list[str]:
    """Mean boat-to-disk distance (cm) at 1 s intervals, per arm, as the seeds' amendment read it."""
    arms = [(name, rep.reads) for name, rep in shown.items() if rep.reads.dist_by_second_mean]
    if not arms:
        return ["## Boat-to-disk distance by second", "",
                "No row of these runs carries `dist_by_second_cm` (runs before the engine wrote it).", ""]
    seconds = max(len(r.dist_by_second_mean) for _, r in arms)
    out = ["## Boat-to-disk distance by second", "",
           "Mean XY distance from the boat to the disk centre (cm) at t = 0, 1, 2, ... s over the ok rows that "
           "reached that second (n in brackets; an episode that ends on success stops contributing).", "",
           "| t (s) | " + " | ".join(n for n, _ in arms) + " |",
           "| --- | " + " | ".join("---" for _ in arms) + " |"]
    for i in range(seconds):
        cells = []
        for _, r in arms:
            m = r.dist_by_second_mean[i] if i < len(r.dist_by_second_mean) else None
            n = r.dist_by_second_n[i] if i < len(r.dist_by_second_n) else 0
            cells.append("" if m is None else f"{m:.2f} ({n})")
        out.append(f"| {i} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def append_section(doc: Document, arms: list[str], section: list[str], now: str) -> None:
    """Replace this tool's section for the same arms, or append one; frozen text is never touched.

    A replaced report that said something else is kept below the new one (folded), with the
    sha256 of its text and when it was replaced; one reported again unchanged is not repeated.
    Every other live section that answers one of the same questions (an arm it reports, a rule,
    sequential test or comparison it judged on all the arms it reads) is marked superseded by this
    one, with when and by which: one live answer per question."""
    key = f"arms={','.join(arms)}"
    lines = list(doc.layout.lines)
    new = next(iter(parse_layout("\n".join(section) + "\n").results), None)
    questions = set(arms) | (new.rules if new is not None else set())
    for b in sorted(doc.layout.results, key=lambda b: -b.start):  # bottom first: the lines above stay put
        if b.key == key:
            lines[b.start:b.end + 1] = _with_history(section, lines[b.start:b.end + 1], now)
        elif not b.superseded and (b.arms | b.rules) & questions:
            lines[b.start:b.start + 1] = _superseded(b, key, now)
    if not any(b.key == key for b in doc.layout.results):
        while lines and not lines[-1].strip():
            lines.pop()
        lines += [""] + section
    after = parse("\n".join(lines) + "\n", doc.path)
    ver = verify_layout(after.layout)
    if not ver.ok or after.problems:
        raise PreregError(f"{doc.path}: writing the results section here would touch a frozen part "
                          "(a results block inside a frozen section?); not written")
    write_lines(doc.path, lines)


def _superseded(block, by: str, now: str) -> list[str]:
    """A live block's begin line marked superseded (superseded=, by=) and the line that says so."""
    arms = ", ".join(sorted(a for a in by.removeprefix("arms=").split(",") if a))
    marked = results_begin(block.key, **{**block.attrs, "superseded": now, "by": by})
    return [marked, "", f"> **Superseded** at {now[:16].replace('T', ' ')}Z by the results section for {arms}: "
            "the reads and verdicts below are no longer the live answer to the questions that report answers again "
            "(kept as they were reported).", ""]


def _with_history(section: list[str], old: list[str], now: str) -> list[str]:
    """The new section, then the report it replaces (if it differs) and the ones that one replaced."""
    import hashlib

    body = old[1:-1]  # without the begin and end markers
    cut = body.index(REPLACED_MARK) if REPLACED_MARK in body else len(body)
    old_current, history = body[:cut], body[cut + 1:]
    while history and (not history[0].strip() or history[0].startswith("_Earlier reports")):
        history = history[1:]
    new_current = section[1:-1]
    while old_current and not old_current[-1].strip():
        old_current = old_current[:-1]
    while new_current and not new_current[-1].strip():
        new_current = new_current[:-1]
    if [x.rstrip() for x in old_current] == [x.rstrip() for x in new_current]:
        entries = history
    else:
        digest = hashlib.sha256("\n".join(old_current).encode()).hexdigest()
        head = next((x.lstrip("# ").strip() for x in old_current if x.startswith("## ")), "an earlier report")
        entries = [f"<details><summary>Replaced at {now[:16].replace('T', ' ')}Z: {head} "
                   f"(sha256 {digest[:16]})</summary>", "", *old_current, "", "</details>", "", *history]
    if not entries:
        return section
    return [section[0], *new_current, "", REPLACED_MARK,
            "_Earlier reports of these arms, replaced by the one above (newest first):_", "", *entries, section[-1]]


def primary_line(a: ArmReads) -> str:
    s = f"successes **{a.primary_text()}**"
    if a.success_rate is not None:
        s += f" ({a.success_rate:.1%})"
    names = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}
    for k, (lo, hi) in a.intervals.items():
        s += f"; {names[k]} 95% [{lo:.1%}, {hi:.1%}]"
    if a.stopped_early:
        s += " (labelled: n is the episodes achieved, not the planned count)"
    return s


def paired_line(p: Paired) -> str:
    if not p.shared_seeds:
        return "no shared seeds: nothing to pair"
    ci = f"CI95 [{p.delta_ci[0]:+.3f}, {p.delta_ci[1]:+.3f}]" if p.delta_ci else "no CI"
    s = (f"progress_final_cm delta ({p.arm} - {p.comparator}) on {p.shared_seeds} shared seeds: "
         f"mean {p.delta_mean:+.3f} cm, {ci} ({p.ci_method}); better/tied/worse {p.better}/{p.tied}/{p.worse}; "
         f"successes {p.arm_successes} vs {p.comparator_successes}, success seeds in both {p.success_overlap}, "
         f"only {p.arm} {p.success_only_arm}, only {p.comparator} {p.success_only_comparator}")
    if p.only_arm or p.only_comparator:
        s += f"; not shared: {plural(len(p.only_arm), 'seed')} only {p.arm}, {len(p.only_comparator)} only {p.comparator}"
    ps = p.success
    if ps is not None and ps.shared and ps.ci is not None:
        s += (f"; success difference {100 * ps.delta:+.1f} pp on {ps.shared} seeds, [{100 * ps.ci[0]:+.1f}, "
              f"{100 * ps.ci[1]:+.1f}] ({ps.method})")
    return s


def cm_text(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f} cm"
