"""Deterministic run directories for tests, snapshots, benchmarks and a demo without a driver.

They follow the run-directory contract exactly (prereg/rundir/), so the console can be
built and checked before the driver exists and without a simulator.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from prereg import rundir as rd
from prereg.rundir.files import write_json_atomic
from prereg.rundir.rows import complete_row

FIXED_TIME = 1_780_000_000.0  # 2026-05-28T20:26:40Z, the clock of snapshot tests


def make_row(seed: int, *, run_id: str = "demo-scripted-20260101-000000", arm: str = "scripted", **over) -> dict:
    """A schema-1 row whose outcome is a deterministic function of the seed."""
    kind = seed % 10
    progress_final = {0: 4.5, 1: -2.3, 2: 0.0, 3: 1.7, 4: 0.0, 5: -6.1, 6: 2.2, 7: 0.0, 8: 0.4, 9: 11.0}[kind]
    progress = max(progress_final, {2: 0.3, 4: 0.0, 7: 1.4}.get(kind, progress_final))
    row = {
        "run_id": run_id, "arm": arm, "seed": seed, "worker": seed % 4,
        "success": kind in (0, 9), "success_tick": 600 + seed if kind in (0, 9) else None,
        "ticks": 900, "episode_seconds": 30.0,
        "dist_initial_cm": 10.0, "dist_final_cm": 10.0 - progress_final, "dist_min_cm": 10.0 - progress,
        "progress_cm": progress, "progress_final_cm": progress_final,
        "knock_away": progress_final <= -1.0, "engaged": progress > 1.0,
        "upright_final": 0.99, "boat_z_mm": 12.0, "tipped": kind == 5,
        "reset_strikes": 0, "predicts": 30, "zero_fallbacks": 1 if kind == 3 else 0,
        "mask_violations": 0, "mean_batch": 4.0, "first_action_delta_deg": 2.5,
        "wall_s": 20.0 + (seed % 3), "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:20Z",
        "video": None, "status": "ok", "error": None,
    }
    row.update(over)
    return complete_row(row)


def make_run_dir(
    runs_dir: Path,
    run_id: str,
    *,
    arm: str = "scripted",
    total: int = 20,
    done: int = 20,
    state: str = "done",
    elapsed_s: float = 400.0,
    gpu_hours: float | None = 0.1,
    gates: dict | None = None,
    prereg: dict | None = None,
    pid: dict | None = None,
    mtime: float | None = FIXED_TIME,
    rows: list[dict] | None = None,
    extra_lines: list[str] = (),
) -> Path:
    """A complete run directory; pass None for pieces that should be missing."""
    d = Path(runs_dir) / run_id
    d.mkdir(parents=True, exist_ok=True)
    manifest = {
        "run_id": run_id, "prereg": prereg, "arm": arm, "policy": "scripted",
        "seeds": list(range(total)), "episode_seconds": 30.0, "workers": 4,
        "gates": gates if gates is not None else {"gpu_hours": 0.5, "pace_limit_hours": 1.0, "pace_after_episodes": 10},
        "started_at": "2026-01-01T00:00:00Z",
    }
    write_json_atomic(d / rd.MANIFEST, manifest)
    write_json_atomic(d / rd.STATUS, {
        "state": state, "done": done, "total": total, "elapsed_s": elapsed_s,
        "projected_wall_s": elapsed_s * total / done if done else None,
        "gpu_hours": gpu_hours, "gpu_hours_source": "allocated", "reason": None,
        "updated_at": "2026-01-01T00:10:00Z", "errors": 0,
    })
    if pid is not None:
        write_json_atomic(d / rd.PID, pid)
    rows = rows if rows is not None else [make_row(s, run_id=run_id, arm=arm) for s in range(done)]
    with open(d / rd.ROWS, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
        for line in extra_lines:
            f.write(line + "\n")
    (d / rd.HEARTBEAT).touch()
    if mtime is not None:
        for name in os.listdir(d):
            os.utime(d / name, (mtime, mtime))
    return d
