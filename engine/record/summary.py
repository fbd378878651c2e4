"""What the driver says of a run in words: a progress line per row, and the summary at the end.

Counted by the run's read model (prereg/rundir/fold.py: the last row of each planned seed, the one
classifier's counts), so the driver's summary, the console, the Discord posts and the report agree.
"""

from __future__ import annotations

import errno
from collections import Counter
from pathlib import Path

from engine.record.config import RunConfig, RunResult
from prereg.core.errors import FontaineError
from prereg.core.untrusted import redacted
from prereg.rundir.fold import Plan, counter_median, fold_rows
from prereg.rundir.outcomes import ERROR, SUCCESS, classify
from prereg.rundir.rows import BASE_VARIANT


def summarize(rows: list[dict], cfg: RunConfig | None = None, *, planned_seeds=None, success_field: str | None = None,
              variant: str | None = None) -> dict:
    """The run's counts by the read model (prereg/rundir/fold.py): each arm's planned seeds, the last row
    of each (a resumed seed's latest), classified by `prereg.rundir.rows` (the one classifier: any status
    but "ok" is an error row, never a success; knock-away/engaged from the distances), so the driver's
    summary, the console, the Discord post and the report agree. `planned_seeds` (else the config's):
    the plan; without either, every seed counts. A crossed design counts one variant's rows: `variant`,
    else the config's read variant (and `variants` says each variant's own counts)."""
    planned = planned_seeds if planned_seeds is not None else (cfg.seeds if cfg is not None else None)
    arms = cfg.arm_names() if cfg is not None else None
    crossed = cfg is not None and bool(cfg.variants)
    read = variant or (cfg.counted_variant if cfg is not None else None)
    fold = fold_rows(rows, Plan(tuple(planned) if planned is not None else None, tuple(arms) if arms else None,
                                success_field or (cfg.success_field if cfg is not None else "success"), read))
    c = fold.total()
    tallies = list(fold.arms.values())
    finals = sum((t.progress_final for t in tallies), Counter())  # ok rows' progress_final_cm, to 0.01 cm
    n_finals = sum(finals.values())
    median = counter_median(finals)
    out = {
        "episodes": c.rows,
        "ok": c.ok,
        "errors": c.errors,
        "total_seeds": len(cfg.seeds) * len(cfg.arms or [None]) if cfg else None,
        "rows_read": fold.lines,
        "repeated": fold.duplicates,  # rows a later row of their seed replaced (the last counts)
        "out_of_plan": fold.out_of_plan,
        "successes": c.successes,
        "success_seeds": sorted(s for t in tallies for s in t.seeds if t.part_of(s)[0] == SUCCESS),
        "knock_aways": c.knock_aways,
        "engaged": c.engaged,
        "quiet": c.quiet,
        "tipped": c.tipped,
        "reset_strikes": c.reset_strikes,
        "predicts": c.predicts,
        "zero_fallbacks": c.zero_fallbacks,
        "mask_violations": c.mask_violations,
        "mean_progress_final_cm": round(sum(t.progress_final_sum for t in tallies) / n_finals, 3) if n_finals else None,
        "median_progress_final_cm": round(median, 3) if median is not None else None,
    }
    if crossed and variant is None:  # the run's summary: the read variant's counts, and each variant's beside them
        out["read_variant"] = cfg.read_variant
        out["counted_variant"] = cfg.counted_variant  # base's counts under a pooled read
        out["variants"] = {v: {k: s[k] for k in ("episodes", "ok", "errors", "successes")}
                           for v in (BASE_VARIANT, *cfg.variants)
                           for s in (summarize(rows, cfg, variant=v),)}
        out["episodes_run"] = sum(x["episodes"] for x in out["variants"].values())
    return out


def format_summary(result: RunResult, run_dir: Path) -> str:
    s = result.summary
    n = s["episodes"]  # every row counts, error rows included (as in the console and the report)
    lines = [
        f"run {run_dir}  state {result.state}" + (f"  ({result.reason})" if result.reason else ""),
        f"  episodes      {s['episodes']} of {s['total_seeds']}  ({s['errors']} error rows)"
        + (f"  {s['repeated']} rows repeat a seed (the last counts)" if s.get("repeated") else ""),
        f"  successes     {s['successes']}/{n}" + _seed_note(s["success_seeds"], n),
        f"  knock-aways   {s['knock_aways']}/{n}    engaged {s['engaged']}/{n}    reset strikes {s['reset_strikes']}",
        f"  progress_final_cm  mean {_fmt(s['mean_progress_final_cm'])}  median {_fmt(s['median_progress_final_cm'])}",
        f"  predicts      {s['predicts']}  zero-fallbacks {s['zero_fallbacks']}  mask interventions {s['mask_violations']}"
        + (f"  mean batch {s['mean_batch']} over {s['predict_rounds']} rounds" if s.get("mean_batch") else ""),
        f"  wall          {s['elapsed_s']:.1f} s   GPU-hours {s['gpu_hours']:.4f}",
    ]
    if s.get("lost_seeds"):
        lines.append(f"  not run (aborted in flight): {s['lost_seeds']}")
    if s.get("variants"):
        counted = s.get("counted_variant") or s["read_variant"]
        whose = "its" if counted == s["read_variant"] else f"{counted}'s; the decision reads the pooled rate"
        lines[1:1] = [f"  read variant  {s['read_variant']} (the counts below are {whose}; every seed also ran "
                      f"{len(s['variants']) - 1} registered variant{'s' if len(s['variants']) != 2 else ''}, "
                      f"{s['episodes_run']} episodes in all)"]
        for v, c in s["variants"].items():
            lines.append(f"  variant {v}: successes {c['successes']}/{c['episodes']}  errors {c['errors']}")
    for arm, a in (s.get("arms") or {}).items():
        lines.append(f"  arm {arm}: successes {a['successes']}/{a['episodes']}  "
                     f"progress_final_cm mean {_fmt(a['mean_progress_final_cm'])}  errors {a['errors']}")
    if s.get("arms"):
        c = s.get("comparison")
        lines.append(f"  comparison    {c['text'] if c else 'no decision'}")
    return "\n".join(lines)


def _seed_note(success_seeds: list[int], n: int) -> str:
    """Name the rarer outcome's seeds: the successes when few, else the seeds that failed."""
    if not success_seeds:
        return ""
    if len(success_seeds) <= 12:
        return f"  seeds {success_seeds}"
    if len(success_seeds) == n:
        return "  (every seed)"
    return f"  ({n - len(success_seeds)} without success)"


def progress_line(row: dict, done: int, total: int, eta_s: float | None, arm: str | None = None,
                  variant: str | None = None) -> str:
    head = f"[{done}/{total}] seed {row['seed']:>4}" + (f" {arm}" if arm else "") + (f" [{variant}]" if variant else "")
    eta = "" if eta_s is None else f"  ETA {eta_s / 60:.1f} min"
    kind, _, _ = classify(row)
    if kind == ERROR:
        return f"{head}  ERROR  {row.get('error')}{eta}"
    outcome = f"success@{row['success_tick']}" if kind == SUCCESS else kind.replace("_", "-")
    return (f"{head}  {outcome:<16} progress_final {_fmt(row.get('progress_final_cm'))} cm  "
            f"wall {row.get('wall_s') or 0:.1f} s{eta}")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def failure_reason(exc: BaseException, run_dir: Path) -> str:
    """One line for status.json and the terminal: a full disk and a deleted run directory by name."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"disk full: {e.filename or run_dir}"
        e = e.__cause__ or e.__context__
    if not run_dir.is_dir():
        return f"run directory deleted: {run_dir}"
    if isinstance(exc, FontaineError):
        return exc.one_line()
    return redacted(f"driver crashed: {type(exc).__name__}: {exc}")  # a message may quote a token or a webhook URL
