"""Rich text for the console's panels: pure functions of a run's snapshot and a clock.

Kept apart from the widgets so every number on screen comes from one place, and so the
same text can be checked without a terminal. Time is always passed in (`now`), never
read here: snapshot tests fix the clock.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from console.aggregate import AggregateView
from console.runs import RunInfo
from prereg import rundir as rd
from prereg.core.words import plural
from prereg.rundir.files import FINAL_STATES
from prereg.rundir.gates import OK, PENDING, TRIPPED, WARN, GateReading, PaceInputs, evaluate_gates
from prereg.rundir.manifest import tripwire_table
from prereg.rundir.outcomes import (
    CARRIED,
    DROPPED,
    ENGAGED,
    ERROR,
    HOLD_UNFINISHED,
    KNOCK_AWAY,
    OFF_TABLE,
    OUTCOME_LABELS,
    PLACED_TIPPED,
    QUIET,
    SUCCESS,
    TOUCHED,
    episode_outcome,
)
from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM, number, variant_of
from prereg.rundir.status import GateSpec, gpu_hours_source, status_reason_text
from prereg.stats.curtail import pace_text, settled_text
from prereg.stats.story import INVALID, VALID
from prereg.stats.story import PENDING as NOT_JUDGED  # gates have a PENDING of their own

OUTCOME_STYLE = {
    SUCCESS: "bold green",
    HOLD_UNFINISHED: "green",  # on the target when the episode ended, its hold cut short
    PLACED_TIPPED: "green",
    CARRIED: "bold cyan",
    DROPPED: "blue",
    OFF_TABLE: "bold red reverse",
    KNOCK_AWAY: "bold red",
    ENGAGED: "yellow",  # classify's word (the latest rows); the grid says touched
    TOUCHED: "yellow",
    QUIET: "grey62",
    ERROR: "bold magenta",
    None: "grey30",  # no row yet
}
OUTCOME_GLYPH = {**dict.fromkeys(OUTCOME_STYLE, "■"), OFF_TABLE: "▼", ERROR: "✖", None: "·"}
STATE_STYLE = {
    rd.STARTING: "cyan", rd.RUNNING: "bold cyan", rd.STOPPING: "bold yellow", rd.STOPPED: "yellow",
    rd.DONE: "green", rd.FAILED: "bold red", rd.DIED: "bold red reverse", rd.UNKNOWN: "grey50",
}
GATE_STYLE = {OK: "green", WARN: "bold yellow", TRIPPED: "bold white on red", PENDING: "grey50"}
VALIDITY_STYLE = {VALID: "green", INVALID: "bold red", NOT_JUDGED: "grey62"}
BAR_BLOCKS = " ▁▂▃▄▅▆▇█"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


AGE_STEP_S = 5  # heartbeat ages are shown in 5 s steps: a fresh heartbeat reads "<5s ago" and the
# panels are not redrawn every second (the stall gate is a minute or more; this hides nothing)


def age_step(age: float | None) -> int | None:
    """The age as shown: whole AGE_STEP_S steps (0 = fresher than one step)."""
    return None if age is None else int(max(0.0, age) // AGE_STEP_S) * AGE_STEP_S


def fmt_age(age: float | None) -> str:
    step = age_step(age)
    if step is None:
        return "—"
    return f"<{AGE_STEP_S}s ago" if step == 0 else f"{fmt_duration(step)} ago"


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLE.get(state, ""))


def gate_spec(info: RunInfo) -> GateSpec:
    """The manifest's gates as the shared GateSpec (unknown keys and wrong-typed values ignored)."""
    return info.manifest.gates if info.manifest is not None else GateSpec()


def gate_readings(info: RunInfo, view: AggregateView, now: float) -> list[GateReading]:
    """The same pure evaluation the driver enforces, fed from the run directory (a field of the
    wrong type in status.json reads as unknown)."""
    status = _status(info)
    walls = (view.median_wall_s,) if view.median_wall_s else ()
    done = info.done
    return evaluate_gates(
        gate_spec(info),
        elapsed_s=_amount(status.elapsed_s) or 0.0,
        done=done if done is not None else view.rows,
        total=int(info.total or 0),
        gpu_hours=_amount(status.gpu_hours),
        heartbeat_age_s=info.heartbeat_age(now),
        episode_walls_s=walls,
        live=info.live,
        pace=PaceInputs.from_dict(status.pace),
        gpus=_amount(status.gpus),
        starting=info.recorded_state == rd.STARTING,
    )


def _status(info: RunInfo) -> rd.Status:
    """The run's typed status.json (every field None when there is none)."""
    return info.status if info.status is not None else rd.Status()


def _amount(v: float | None) -> float | None:
    """A number from status.json (typed: never a string, a bool, NaN) that is plausible, else None (unknown)."""
    x = number(v)
    return x if x is not None and 0 <= x < 1e12 else None


def _guarded_text(fn, status: rd.Status) -> str | None:
    """A one-line text from status.json made elsewhere (prereg/stats/curtail.py): None when a field of
    the wrong type makes it fail, rather than the panel."""
    try:
        text = fn(status)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError):
        return None
    return text if isinstance(text, str) else None


def header_text(info: RunInfo, loading: bool, restart_reason: str) -> Text:
    t = Text()
    t.append(info.run_id, style="bold")
    t.append("  ")
    t.append_text(state_text(info.state))
    t.append(f"  arm {info.arm}")
    prereg = info.manifest.prereg if info.manifest is not None else None
    if prereg is not None:
        t.append(f"  prereg {str(prereg.id)[:60]} ({str(prereg.sha256 or '')[:10]})")
    elif info.manifest is not None:
        t.append("  no pre-registration", style="grey50")
    if info.stop is not None and info.recorded_state not in FINAL_STATES:
        t.append(f"\nSTOP requested by {info.stop.text()}"
                 " — waiting for the in-flight episodes to finish", style="yellow")
    reason = status_reason_text(info.status)
    if reason and info.recorded_state in FINAL_STATES:
        t.append(f"\n{info.recorded_state}: {reason}", style="yellow" if info.recorded_state != rd.FAILED else "red")
    t.append_text(tripwires_text(info))
    if info.state == rd.DIED:
        t.append("\nThe run's process is gone without a final status: it died. Its rows so far are below;"
                 " driver.log says why. Resume with fontaine-eval --resume.", style="bold red")
    if info.missing and info.state == rd.STARTING and info.live:
        t.append(f"\nstarting: the driver has not written {', '.join(info.missing)} yet", style="grey62")
    elif info.missing:
        t.append(f"\nmissing: {', '.join(info.missing)}", style="yellow")
    for problem in info.problems:
        t.append(f"\nunreadable: {problem}", style="red")
    story = info.story
    if story is not None:  # the report's judgement, as results.md, the page and the posts state it
        t.append("\nreport: ", style="bold")
        t.append(story.headline, style=VALIDITY_STYLE.get(story.validity, ""))
        if story.state != info.state:
            t.append(f"\nlive: {info.state} (the report, {story.generated_at}, read it {story.state}: "
                     "report again for its verdict now)", style="yellow")
    if loading:
        t.append("\nreading rows.jsonl…", style="italic grey62")
    if restart_reason:
        t.append(f"\nrows restarted: {restart_reason}", style="yellow")
    return t


def tripwires_text(info: RunInfo) -> Text:
    """The plan's registered tripwires (gates.tripwires): their per-joint tables when they failed (the
    run stopped before its first episode), one line when they passed, nothing when none ran."""
    passed, table = tripwire_table(info.status, info.manifest)
    t = Text()
    if passed is True:
        t.append("\nregistered tripwires passed before the first episode", style="green")
    elif passed is False:
        t.append("\nregistered tripwires FAILED before the first episode (nothing was spent):", style="bold red")
        for line in table.splitlines():
            bad = " fail " in f" {line} " or line.rstrip().endswith("FAIL")
            t.append("\n" + line, style="red" if bad else "grey70")
    return t


def counts_table(view: AggregateView) -> Table:
    """The counts panel: every count over the run's episodes by the one denominator (the last row of
    each planned seed); a comparison run's arms side by side."""
    if view.comparison:
        return arms_counts_table(view)
    t = Table.grid(padding=(0, 1))
    t.add_column(style="grey70")
    t.add_column(justify="right")
    t.add_column()
    n = view.rows  # every episode with a row: an error row is a non-success (as in the report)
    t.add_row("successes", Text(f"{view.successes}/{n}", style="bold green"), _rate_text(view.successes, n, view.success_ci))
    knock = f"final ≤ {KNOCK_AWAY_CM:g} cm".replace("-", "−")  # the threshold from the row contract, in prose
    t.add_row("knock-aways", Text(str(view.knock_aways), style="red" if view.knock_aways else ""), knock)
    t.add_row("engaged/quiet", f"{view.engaged}/{view.quiet}", f"progress > {ENGAGED_CM:g} cm")
    rate = f"{100 * view.zero_fallback_rate:.2f}% of {view.predicts} predicts" if view.zero_fallback_rate is not None else "no predicts"
    t.add_row("zero-fallbacks", Text(str(view.zero_fallbacks), style="yellow" if view.zero_fallbacks else ""), rate)
    strikes_style = "bold white on red" if view.reset_strikes else "green"
    t.add_row("reset strikes", Text(str(view.reset_strikes), style=strikes_style),
              "must be 0" if not view.reset_strikes else f"INVALID: {view.rows_with_reset_strikes} episodes")
    t.add_row("error rows", Text(str(view.errors), style="bold magenta" if view.errors else ""),
              clip_text(view.error_messages[-1], 44) if view.error_messages else "")
    _read_rows(t, view, 1)
    med = "—" if view.progress_final_median is None else fmt_signed(view.progress_final_median)
    mean = "—" if view.progress_final_mean is None else fmt_signed(view.progress_final_mean)
    t.add_row("progress_final", f"{med} cm", f"median, mean {mean}; {view.tipped} tipped")
    return t


def arms_counts_table(view: AggregateView) -> Table:
    """A comparison run's counts, one column per arm (each over its own episodes), then what the run read.
    Each arm's rate beside its count and its interval on a line of its own, three columns apart: as one
    cell, right-aligned one column apart, the arms' intervals ran together ('[14, 61]% 100% CI95 [76, 100]%')."""
    t = Table.grid(padding=(0, 3))
    t.add_column(style="grey70")
    for _ in view.arms:
        t.add_column(justify="right")
    t.add_row("", *(Text(clip_text(a.arm or "", 22), style="bold") for a in view.arms))

    def row(label: str, cell) -> None:
        t.add_row(label, *(cell(a) for a in view.arms))

    row("successes", lambda a: Text.assemble((f"{a.counts.successes}/{a.episodes}", "bold green"),
                                             (f" {100 * a.counts.successes / a.episodes:.0f}%" if a.episodes else "",
                                              "grey62")))
    row("  CI95 %", lambda a: Text(f"[{100 * a.success_ci[0]:.0f}, {100 * a.success_ci[1]:.0f}]" if a.success_ci
                                   else "", style="grey62"))
    row("knock-aways", lambda a: Text(str(a.counts.knock_aways), style="red" if a.counts.knock_aways else ""))
    row("engaged/quiet", lambda a: f"{a.counts.engaged}/{a.counts.quiet}")
    row("zero-fallbacks", lambda a: Text(str(a.counts.zero_fallbacks), style="yellow" if a.counts.zero_fallbacks else ""))
    row("reset strikes", lambda a: Text(str(a.counts.reset_strikes),
                                        style="bold white on red" if a.counts.reset_strikes else "green"))
    row("error rows", lambda a: Text(str(a.counts.errors), style="bold magenta" if a.counts.errors else ""))
    row("progress_final", lambda a: "—" if a.progress_final_median is None else f"{fmt_signed(a.progress_final_median)} cm")
    if view.error_messages:
        t.add_row("last error", Text(clip_text(view.error_messages[-1], 44), style="magenta"))
    _read_rows(t, view, len(view.arms))
    return t


def _rate_text(k: int, n: int, ci: tuple[float, float] | None) -> str:
    """'19.0% CI95 [12.5, 27.8]%' (Wilson's interval)."""
    pct = f"{100 * k / n:.1f}%" if n else ""
    ci_text = f"CI95 [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]%" if ci else ""
    return f"{pct} {ci_text}".strip()


def _read_rows(t: Table, view: AggregateView, cols: int) -> None:
    """The lines of rows.jsonl beside the counts: those that could not be read, the rows a later row
    of their seed replaced (the last counts), and rows of seeds outside the plan (not counted). The
    note goes in the third column (a comparison run's second arm's)."""
    bad = view.recent_bad[-1] if view.recent_bad else None
    lines = [("corrupt lines", view.corrupt, "bold red", clip_text(f"line {bad.line_no}: {bad.reason}", 44) if bad else "")]
    if view.duplicate_seeds:
        lines.append(("repeated seeds", view.duplicate_seeds, "yellow", "rows for a seed seen before: its last row counts"))
    if view.out_of_plan:
        lines.append(("out of plan", view.out_of_plan, "yellow", "rows of seeds not planned: not counted"))
    if view.unreachable:
        lines.append(("unreachable", view.unreachable, "yellow", "seeds out of the arm's reach: not in k/n"))
    for label, n, style, note in lines:
        t.add_row(label, Text(str(n), style=style if n else ""), Text(note, style="grey62" if cols > 1 else ""))


def run_elapsed(info: RunInfo, now: float) -> float | None:
    """status.json's elapsed_s; for a live run, at least the time since its process started (pid.json's
    create time): the driver writes elapsed_s between episodes, so a run loading its model showed 0s."""
    elapsed = _amount(_status(info).elapsed_s)
    started = _amount((info.pid or {}).get("create_time"))
    if info.live and started is not None and now > started:
        elapsed = max(elapsed or 0.0, now - started)
    return elapsed


def pace_table(info: RunInfo, view: AggregateView, readings: list[GateReading], now: float) -> Table:
    status = _status(info)
    t = Table.grid(padding=(0, 1))
    t.add_column(style="grey70")
    t.add_column()
    elapsed = run_elapsed(info, now)
    done, total = info.done, info.total
    projected = _amount(status.projected_wall_s)
    t.add_row("elapsed", f"{fmt_duration(elapsed)}   done {done if done is not None else view.rows}/{total if total is not None else '?'}")
    by_name = {r.name: r for r in readings}
    pace = by_name.get("pace")
    proj_text = Text(fmt_duration(projected))
    if pace is not None:
        proj_text.append(f"  vs limit {pace.limit:g} h  ")
        proj_text.append(pace.state, style=GATE_STYLE[pace.state])
    t.add_row("projected", proj_text)
    pace_line = _guarded_text(pace_text, status)
    if pace_line:
        # a clause a line: wrapped at a narrow panel's edge, "naive 0.3 min" lost its unit to the next line
        t.add_row("", Text("\n".join(clip_text(c, 72) for c in pace_line.split("; ")), style="grey50"))
    eta = (projected - elapsed) if projected is not None and elapsed is not None else None
    t.add_row("ETA", fmt_duration(eta) if info.recorded_state not in FINAL_STATES else "ended")
    gpu = by_name.get("gpu_hours")
    spent = _amount(status.gpu_hours)
    gpu_text = Text("—" if spent is None else f"{spent:.3f}")
    if gpu is not None:
        gpu_text.append(f" of {gpu.limit:g}  ")
        gpu_text.append(gpu.state, style=GATE_STYLE[gpu.state])
    t.add_row("GPU-hours", gpu_text)
    source = gpu_hours_source(status)
    if source:  # its own line, wrapped rather than cut: it says what the number is
        t.add_row("  source", Text(source[:120], style="grey50"))
    hb = Text(fmt_age(info.heartbeat_age(now)))
    stall = by_name.get("stall")
    if stall is not None:
        hb.append(f"  stall beyond {fmt_duration(stall.limit)}  ")
        hb.append("STALLED" if stall.state == TRIPPED else stall.state, style=GATE_STYLE[stall.state])
    elif not info.live:
        hb.append("  (not live)", style="grey50")
    t.add_row("heartbeat", hb)
    wall = "—" if view.median_wall_s is None else f"{view.median_wall_s:.1f} s"
    batch = "" if view.mean_batch is None else f", mean batch {view.mean_batch:.1f}"
    t.add_row("episode wall", f"{wall} median{batch}")
    if info.story is not None:  # the report's decision, never the driver's record beside it
        t.add_row("decision", Text(clip_text(f"report: {info.story.verdict}", 72)))
    elif gate_spec(info).decided == "stop":  # the registered curtailment's progress; unregistered, it decides nothing
        decision = _guarded_text(settled_text, status)
        if decision:
            t.add_row("decision", Text(clip_text(decision, 72)))
    return t


def banner_text(readings: list[GateReading], info: RunInfo) -> tuple[Text | None, str]:
    """(text, level) for the tripwire banner: level 'tripped', 'warn' or '' (hidden)."""
    tripped = [r for r in readings if r.state == TRIPPED]
    if tripped:
        t = Text()
        for r in tripped:
            t.append(f" TRIPWIRE {r.name.upper()} TRIPPED: {r.message} ", style="bold")
        t.append("— the driver stops the run at the next episode boundary (STOP)." if info.live
                 else "— recorded for this run.")
        return t, "tripped"
    warned = [r for r in readings if r.state == WARN]
    if warned:
        return Text("  ".join(f"warning: {r.name}: {r.message}" for r in warned)), "warn"
    return None, ""


HIST_BIN_WIDTHS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
HIST_MAX_BIN_CM = 5.0  # wider bins than this would hide the shape: clip to the bulk and mark the tails


def fmt_signed(value: float, digits: int = 2) -> str:
    """`+1.25`, `-0.40`, and `0.00` for anything that rounds to zero (never `-0.00`)."""
    text = f"{value:+.{digits}f}"
    return f"{0.0:.{digits}f}" if float(text) == 0 else text


def _quantile(counts, q: float) -> float:
    total = sum(c for _, c in counts)
    rank, seen = q * (total - 1), 0
    for value, c in counts:
        seen += c
        if seen > rank:
            return value
    return counts[-1][0]


def histogram_plan(counts: tuple[tuple[float, int], ...], max_bins: int) -> dict:
    """Bins from the data: the range of the values, cut at multiples of a round bin width so 0 is
    an edge. When even 5 cm bins cannot hold the whole range, the bulk (1st..99th percentile) is
    binned and the tails go to marked underflow/overflow bins that carry their counts and extremes."""
    import math

    lo, hi = counts[0][0], counts[-1][0]
    max_bins = max(4, max_bins)

    def edges(a: float, b: float, w: float) -> tuple[float, float, int]:
        start, stop = math.floor(a / w) * w + 0.0, (math.floor(b / w) + 1) * w + 0.0  # + 0.0: never -0
        return start, stop, int(round((stop - start) / w))

    for w in (w for w in HIST_BIN_WIDTHS if w <= HIST_MAX_BIN_CM):  # wider bins hide the shape: tails instead
        start, stop, n = edges(lo, hi, w)
        if n <= max_bins:
            return {"start": start, "width": w, "n": n, "under": 0, "over": 0, "min": lo, "max": hi}
    a, b = _quantile(counts, 0.01), _quantile(counts, 0.99)
    for w in HIST_BIN_WIDTHS:
        start, stop, n = edges(a, b, w)
        if n <= max_bins - 2 or w == HIST_BIN_WIDTHS[-1]:
            break
    n = min(n, max_bins - 2)
    stop = start + n * w
    under = sum(c for v, c in counts if v < start)
    over = sum(c for v, c in counts if v >= stop)
    return {"start": start, "width": w, "n": n, "under": under, "over": over, "min": lo, "max": hi}


def axis_label(cm: float) -> str:
    """An axis mark as the panels write progress: signed (`-10`, `+30`), `0` unsigned; the left
    end read `13` beside a right end of `+30`."""
    return "0" if cm == 0 else f"{cm:+g}"


def _hist_columns(counts, plan: dict) -> list[tuple[int, str]]:
    """(count, style) a bar, in the plan's bins: the under and over bars at the ends when the plan has them."""
    start, w, n = plan["start"], plan["width"], plan["n"]
    bins = [0] * n
    under = over = 0
    for value, c in counts:
        i = int((value - start) // w)
        if 0 <= i < n:
            bins[i] += c
        elif i < 0:
            under += c
        else:
            over += c
    cols: list[tuple[int, str]] = []
    if plan["under"]:
        cols.append((under, "bold magenta"))
    for i, c in enumerate(bins):
        left = start + i * w
        cols.append((c, "grey62" if left <= 0 < left + w else ("red" if left < 0 else "cyan")))
    if plan["over"]:
        cols.append((over, "bold magenta"))
    return cols


def _hist_bars(t: Text, cols: list[tuple[int, str]], peak: int, height: int) -> None:
    """`height` rows of eighth-blocks, two cells a bar (the tallest bar's count is said under the axis)."""
    for level in range(height, 0, -1):
        for count, style in cols:
            eighths = round(8 * height * count / peak) - 8 * (level - 1) if count else 0
            if count and level == 1:
                eighths = max(eighths, 1)  # a bin with any row shows
            t.append(BAR_BLOCKS[max(0, min(8, eighths))] * 2, style=style)
        t.append("\n")


def histogram_text(view: AggregateView, height: int = 4, width: int = 50) -> Text:
    """Vertical bars of progress_final_cm counts over the range of the data (see histogram_plan). A
    comparison run's arms each get their bars, named, over one axis and one scale (pooled, the arms
    read as one: 'steady' at +15 cm and 'clumsy' at 0 looked like one policy's two modes)."""
    counts = view.progress_final_counts
    if not counts:
        return Text("no rows yet", style="grey50")
    plan = histogram_plan(counts, (width - 8) // 2)
    series = [(a.arm, _hist_columns(a.progress_final_counts, plan)) for a in view.arms] if view.comparison else [
        (None, _hist_columns(counts, plan))]
    peak = max(c for _, cols in series for c, _ in cols) or 1
    t = Text()
    for arm, cols in series:
        if arm is not None:  # its own tallest bar beside its name: the arms share one scale
            t.append(f"{arm[:width - 30]}", style="bold")
            t.append(f" · tallest bar {plural(max(c for c, _ in cols), 'episode')}\n", style="grey50")
        _hist_bars(t, cols, peak, height if arm is None else max(2, height - 1))
    start, w, n = plan["start"], plan["width"], plan["n"]
    cols = series[0][1]
    axis = [" "] * (2 * len(cols) + 8)
    first = 2 if plan["under"] else 0
    marks = [(first, axis_label(start)), (first + 2 * n, axis_label(start + n * w))]
    if start < 0 < start + n * w:
        marks.insert(1, (first + int(round(2 * (0 - start) / w)), "0"))
    taken = -1
    for pos, label in marks:
        pos = max(pos, taken + 1)
        if pos + len(label) > len(axis):
            continue
        for j, ch in enumerate(label):
            axis[pos + j] = ch
        taken = pos + len(label)
    t.append("".join(axis).rstrip() + " cm", style="grey50")
    # what the tallest bar counts, in words under the axis (a bare '40' at the top right read as an axis value)
    t.append(f"\n{w:g} cm bins · min {fmt_signed(plan['min'])} · max {fmt_signed(plan['max'])} · tallest bar "
             f"{plural(peak, 'episode')}", style="grey50")
    if plan["under"] or plan["over"]:
        tails = []
        if plan["under"]:
            tails.append(f"{plan['under']} below {axis_label(start)} (left bar)")
        if plan["over"]:
            tails.append(f"{plan['over']} at/above {axis_label(start + n * w)} (right bar)")
        t.append("\n" + "; ".join(tails), style="magenta")
    return t


def recent_row_cells(row: dict, with_arm: bool = False, with_variant: bool = False) -> tuple:
    outcome = episode_outcome(row)  # the grid's, the seed view's and the report's word for this episode
    pf = row.get("progress_final_cm")
    zf, pr = row.get("zero_fallbacks"), row.get("predicts")
    wall = row.get("wall_s")
    # the error first; else what the episode noted (a video not written, say), and whether the boat tipped
    note = row.get("error") or "; ".join(n for n in ("tipped" if row.get("tipped") else "", row.get("note") or "") if n)
    arm = (str(row.get("arm") or "?")[:16],) if with_arm else ()
    variant = (variant_of(row)[:12],) if with_variant else ()  # a crossed design: each seed runs on every variant
    return (
        *arm,
        str(row.get("seed")),
        *variant,
        Text(OUTCOME_LABELS[outcome], style=OUTCOME_STYLE[outcome]),
        "—" if not isinstance(pf, (int, float)) or pf != pf else fmt_signed(pf),
        "—" if zf is None else f"{zf}/{pr if pr is not None else '?'}",
        "—" if not isinstance(wall, (int, float)) else f"{wall:.1f}",
        "" if row.get("worker") is None else str(row.get("worker")),
        Text(str(note)[:200], style="magenta" if row.get("error") else "grey62"),
    )


RECENT_COLUMNS = ("seed", "outcome", "prog_final", "zf/predicts", "wall_s", "worker", "note")
RECENT_RIGHT = {"prog_final", "zf/predicts", "wall_s"}  # numbers line up on the right


def recent_rows_text(rows: list[dict], width: int, with_arm: bool = False, with_variant: bool = False) -> Text:
    """The latest rows as a log: a header, then one line per row, newest at the bottom, in columns
    as wide as what they hold; each line is cut to `width` (the note, last, goes first). A comparison
    run's rows start with their arm; a crossed design's name their variant after the seed."""
    columns = (("arm",) if with_arm else ()) + RECENT_COLUMNS[:1] + (("variant",) if with_variant else ()) + RECENT_COLUMNS[1:]
    cells = [recent_row_cells(row, with_arm, with_variant) for row in rows]
    widths = [max([len(label)] + [len(str(c[i])) for c in cells]) for i, label in enumerate(columns)]
    lines = [Text(" ".join(_pad(label, widths[i], label in RECENT_RIGHT) for i, label in enumerate(columns)),
                  style="bold")]
    for row_cells in cells:
        line = Text()
        for i, (label, cell) in enumerate(zip(columns, row_cells)):
            if i:
                line.append(" ")
            line.append(_pad(str(cell), widths[i], label in RECENT_RIGHT), style=cell.style if isinstance(cell, Text) else "")
        lines.append(line)
    for line in lines:
        line.rstrip()
        line.truncate(max(1, width), overflow="ellipsis")
    return Text("\n").join(lines)


def _pad(text: str, width: int, right: bool) -> str:
    return text.rjust(width) if right else text.ljust(width)


def clip_text(text: str, width: int) -> str:
    """`text` cut to `width` with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def clip_lines(text: Text, width: int, lines: int) -> Text:
    """`text` wrapped to `width`; when it takes more than `lines` lines, its first `lines`, the last
    ending in an ellipsis: a box of fixed height cut the rest off with no sign that there was more."""
    from io import StringIO

    from rich.console import Console

    if width < 2:
        return text
    wrapped = text.wrap(Console(width=width, file=StringIO()), width)
    if len(wrapped) <= lines:
        return text
    kept = list(wrapped)[:lines]
    for line in kept:
        line.rstrip()
    last = kept[-1]
    last.truncate(width - 1)
    last.append("…", style=last.spans[-1].style if last.spans else "")
    return Text("\n").join(kept)
