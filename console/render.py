"""Rich text for the console's panels: pure functions of a run's snapshot and a clock.

Kept apart from the widgets so every number on screen comes from one place, and so the
same text can be checked without a terminal. Time is always passed in (`now`), never
read here: snapshot tests fix the clock.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from console.aggregate import ENGAGED, ERROR, KNOCK_AWAY, QUIET, SUCCESS, AggregateView
from console.runs import FINAL_STATES, RunInfo
from prereg import rundir as rd
from prereg.curtail import pace_text, settled_text
from prereg.gates import OK, PENDING, TRIPPED, WARN, GateReading, GateSpec, PaceInputs, evaluate_gates

OUTCOME_STYLE = {
    SUCCESS: "bold green",
    KNOCK_AWAY: "bold red",
    ENGAGED: "yellow",
    QUIET: "grey62",
    ERROR: "bold magenta",
    None: "grey30",  # no row yet
}
OUTCOME_GLYPH = {SUCCESS: "■", KNOCK_AWAY: "■", ENGAGED: "■", QUIET: "■", ERROR: "✖", None: "·"}
STATE_STYLE = {
    "starting": "cyan", "running": "bold cyan", "stopping": "bold yellow", "stopped": "yellow",
    "done": "green", "failed": "bold red", "died": "bold red reverse", "unknown": "grey50",
}
GATE_STYLE = {OK: "green", WARN: "bold yellow", TRIPPED: "bold white on red", PENDING: "grey50"}
GRID_MAX_SEEDS = 600
BAR_BLOCKS = " ▁▂▃▄▅▆▇█"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def fmt_age(age: float | None) -> str:
    return "—" if age is None else f"{fmt_duration(age)} ago"


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLE.get(state, ""))


def gate_spec(info: RunInfo) -> GateSpec:
    """The manifest's gates as the shared GateSpec (unknown keys ignored)."""
    gates = (info.manifest or {}).get("gates") or {}
    known = GateSpec.__dataclass_fields__
    kwargs = {k: v for k, v in gates.items() if k in known and v is not None}
    try:
        return GateSpec(**kwargs)
    except TypeError:
        return GateSpec()


def gate_readings(info: RunInfo, view: AggregateView, now: float) -> list[GateReading]:
    """The same pure evaluation the driver enforces, fed from the run directory."""
    status = info.status or {}
    walls = (view.median_wall_s,) if view.median_wall_s else ()
    return evaluate_gates(
        gate_spec(info),
        elapsed_s=float(status.get("elapsed_s") or 0.0),
        done=int(status.get("done") or view.rows),
        total=int(info.total or 0),
        gpu_hours=status.get("gpu_hours"),
        heartbeat_age_s=info.heartbeat_age(now),
        episode_walls_s=walls,
        live=info.live,
        pace=PaceInputs.from_dict(status.get("pace")),
        gpus=status.get("gpus"),
    )


def header_text(info: RunInfo, loading: bool, restart_reason: str) -> Text:
    t = Text()
    t.append(info.run_id, style="bold")
    t.append("  ")
    t.append_text(state_text(info.state))
    t.append(f"  arm {info.arm}")
    prereg = (info.manifest or {}).get("prereg")
    if isinstance(prereg, dict):
        t.append(f"  prereg {str(prereg.get('id'))[:60]} ({str(prereg.get('sha256') or '')[:10]})")
    elif info.manifest is not None:
        t.append("  no pre-registration", style="grey50")
    if info.stop is not None and info.recorded_state not in FINAL_STATES:
        t.append(f"\nSTOP requested by {info.stop.text()}"
                 " — waiting for the in-flight episodes to finish", style="yellow")
    reason = rd.status_reason_text(info.status)
    if reason and info.recorded_state in FINAL_STATES:
        t.append(f"\n{info.recorded_state}: {reason}", style="yellow" if info.recorded_state != "failed" else "red")
    if info.state == "died":
        t.append("\nThe run's process is gone without a final status: it died. Its rows so far are below;"
                 " driver.log says why. Resume with fontaine-eval --resume.", style="bold red")
    if info.missing:
        t.append(f"\nmissing: {', '.join(info.missing)}", style="yellow")
    for problem in info.problems:
        t.append(f"\nunreadable: {problem}", style="red")
    if loading:
        t.append("\nreading rows.jsonl…", style="italic grey62")
    if restart_reason:
        t.append(f"\nrows restarted: {restart_reason}", style="yellow")
    return t


def counts_table(view: AggregateView) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="grey70")
    t.add_column(justify="right")
    t.add_column()
    n = view.rows  # every episode with a row: an error row is a non-success (as in the report)
    pct = f"{100 * view.successes / n:.1f}%" if n else ""
    ci = view.success_ci
    ci_text = f"CI95 [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]%" if ci else ""
    t.add_row("successes", Text(f"{view.successes}/{n}", style="bold green"), f"{pct} {ci_text}".strip())
    t.add_row("knock-aways", Text(str(view.knock_aways), style="red" if view.knock_aways else ""), "final ≤ −1 cm")
    t.add_row("engaged/quiet", f"{view.engaged}/{view.quiet}", "progress > 1 cm")
    rate = f"{100 * view.zero_fallback_rate:.2f}% of {view.predicts} predicts" if view.zero_fallback_rate is not None else "no predicts"
    t.add_row("zero-fallbacks", Text(str(view.zero_fallbacks), style="yellow" if view.zero_fallbacks else ""), rate)
    strikes_style = "bold white on red" if view.reset_strikes else "green"
    t.add_row("reset strikes", Text(str(view.reset_strikes), style=strikes_style),
              "must be 0" if not view.reset_strikes else f"INVALID: {view.rows_with_reset_strikes} episodes")
    t.add_row("error rows", Text(str(view.errors), style="bold magenta" if view.errors else ""),
              _clip(view.error_messages[-1], 44) if view.error_messages else "")
    bad = view.recent_bad[-1] if view.recent_bad else None
    t.add_row("corrupt lines", Text(str(view.corrupt), style="bold red" if view.corrupt else ""),
              _clip(f"line {bad.line_no}: {bad.reason}", 44) if bad else "")
    med = "—" if view.progress_final_median is None else f"{view.progress_final_median:+.2f}"
    mean = "—" if view.progress_final_mean is None else f"{view.progress_final_mean:+.2f}"
    t.add_row("progress_final", f"{med} cm", f"median, mean {mean}; {view.tipped} tipped")
    if view.duplicate_seeds:
        t.add_row("duplicate seeds", Text(str(view.duplicate_seeds), style="yellow"), "rows for a seed seen before")
    return t


def pace_table(info: RunInfo, view: AggregateView, readings: list[GateReading], now: float) -> Table:
    status = info.status or {}
    t = Table.grid(padding=(0, 1))
    t.add_column(style="grey70")
    t.add_column()
    elapsed = status.get("elapsed_s")
    done, total = status.get("done"), info.total
    projected = status.get("projected_wall_s")
    t.add_row("elapsed", f"{fmt_duration(elapsed)}   done {done if done is not None else view.rows}/{total if total is not None else '?'}")
    by_name = {r.name: r for r in readings}
    pace = by_name.get("pace")
    proj_text = Text(fmt_duration(projected))
    if pace is not None:
        proj_text.append(f"  vs limit {pace.limit:g} h  ")
        proj_text.append(pace.state, style=GATE_STYLE[pace.state])
    t.add_row("projected", proj_text)
    if pace_text(status):
        t.add_row("", Text(_clip(pace_text(status), 72), style="grey50"))
    eta = (projected - elapsed) if isinstance(projected, (int, float)) and isinstance(elapsed, (int, float)) else None
    t.add_row("ETA", fmt_duration(eta) if info.recorded_state not in FINAL_STATES else "ended")
    gpu = by_name.get("gpu_hours")
    spent = status.get("gpu_hours")
    gpu_text = Text("—" if spent is None else f"{spent:.3f}")
    if gpu is not None:
        gpu_text.append(f" of {gpu.limit:g}  ")
        gpu_text.append(gpu.state, style=GATE_STYLE[gpu.state])
    if status.get("gpu_hours_source"):
        gpu_text.append(f"  ({_clip(str(status['gpu_hours_source']), 24)})", style="grey50")
    t.add_row("GPU-hours", gpu_text)
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
    if settled_text(status):
        t.add_row("decision", Text(_clip(settled_text(status), 72)))
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


def seed_grid_text(view: AggregateView, seeds: list | None, width: int) -> Text:
    """One coloured cell per seed, in seed order; seeds without a row yet are dots.

    Only the first GRID_MAX_SEEDS are drawn; set operations keep a 100k-seed run cheap to redraw.
    """
    order = list(seeds[:GRID_MAX_SEEDS]) if seeds else []
    extra = view.seed_outcomes.keys() - set(seeds) if seeds else set(view.seed_outcomes)
    if len(order) < GRID_MAX_SEEDS and extra:
        order += sorted(extra, key=_seed_key)[: GRID_MAX_SEEDS - len(order)]
    hidden = (len(seeds) if seeds else 0) + len(extra) - len(order)
    per_line = max(10, (max(width, 16) - 8) // 2 // 10 * 10)
    t = Text()
    for i, seed in enumerate(order):
        if i % per_line == 0:
            if i:
                t.append("\n")
            t.append(f"{str(seed):>5} ", style="grey50")
        outcome = view.seed_outcomes.get(seed)
        t.append(OUTCOME_GLYPH[outcome] + " ", style=OUTCOME_STYLE[outcome])
    if hidden > 0:
        t.append(f"\n… {hidden} more seeds (counted in the totals)", style="grey50")
    return t


def grid_legend() -> Text:
    t = Text()
    for outcome, label in ((SUCCESS, "success"), (KNOCK_AWAY, "knock"), (ENGAGED, "engaged"),
                           (QUIET, "quiet"), (ERROR, "error"), (None, "none")):
        t.append(OUTCOME_GLYPH[outcome], style=OUTCOME_STYLE[outcome])
        t.append(f"{label} ", style="grey62")
    return t


def histogram_text(view: AggregateView, height: int = 4) -> Text:
    """Vertical bars of progress_final_cm counts, 1 cm bins, with under/overflow at the ends."""
    bins = view.progress_final_hist
    peak = max((c for _, c in bins), default=0)
    t = Text()
    if not peak:
        return Text("no rows yet", style="grey50")
    for level in range(height, 0, -1):
        for label, count in bins:
            eighths = round(8 * height * count / peak) - 8 * (level - 1)
            glyph = BAR_BLOCKS[max(0, min(8, eighths))]
            style = "red" if label.startswith("<") or (label[0] == "-") else ("green" if label.startswith(">") else "cyan")
            if label == "+0":
                style = "grey62"
            t.append(glyph * 2, style=style)
        if level == height:
            t.append(f" {peak}", style="grey50")
        t.append("\n")
    axis = [" "] * (2 * len(bins) + 1)
    for label, pos in (("-10", 0), ("-5", 12), ("0", 22), ("+5", 32), ("+10", 42)):
        for j, ch in enumerate(label):
            if pos + j < len(axis):
                axis[pos + j] = ch
    t.append("".join(axis) + " cm", style="grey50")
    return t


def recent_row_cells(row: dict) -> tuple:
    from console.aggregate import row_outcome

    outcome = row_outcome(row)
    pf = row.get("progress_final_cm")
    zf, pr = row.get("zero_fallbacks"), row.get("predicts")
    wall = row.get("wall_s")
    note = row.get("error") or ("tipped" if row.get("tipped") else "")
    return (
        str(row.get("seed")),
        Text(outcome.replace("_", "-"), style=OUTCOME_STYLE[outcome]),
        "—" if not isinstance(pf, (int, float)) else f"{pf:+.2f}",
        "—" if zf is None else f"{zf}/{pr if pr is not None else '?'}",
        "—" if not isinstance(wall, (int, float)) else f"{wall:.1f}",
        str(row.get("worker", "")),
        Text(str(note)[:40], style="magenta" if row.get("error") else "grey62"),
    )


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _seed_key(seed) -> tuple:
    return (0, seed, "") if isinstance(seed, int) else (1, 0, str(seed))
