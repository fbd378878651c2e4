"""The row contract (`rows.jsonl`, schema 1) and a tolerant reader shared by every part.

A row is one finished episode. Unknown values are null, never omitted. A line that does not
parse (a torn last line after a crash, a hand edit) is reported with its line number and set
aside; it is never parsed as data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = 1

ROW_FIELDS: tuple[str, ...] = (
    "schema", "run_id", "arm", "seed", "worker",
    "success", "success_tick",
    "ticks", "episode_seconds",
    "dist_initial_cm", "dist_final_cm", "dist_min_cm",
    "progress_cm", "progress_final_cm",
    "knock_away", "engaged",
    "upright_final", "boat_z_mm", "tipped",
    "reset_strikes",
    "predicts", "zero_fallbacks", "mask_violations", "mean_batch",
    "first_action_delta_deg",
    "wall_s", "started_at", "finished_at",
    "video",
    "status", "error", "note",
)

KNOCK_AWAY_CM = -1.0  # progress_final_cm at or below this is a knock-away
ENGAGED_CM = 1.0  # progress_cm above this is engagement


@dataclass
class BadLine:
    line_no: int  # 1-based
    text: str
    reason: str
    torn: bool = False  # the last line, without its newline: a write cut short


@dataclass
class RowsRead:
    rows: list[dict] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)


def complete_row(partial: dict) -> dict:
    """Order a row's fields by the schema, with null for every field not given."""
    row = {k: partial.get(k) for k in ROW_FIELDS}
    row["schema"] = SCHEMA
    extra = {k: v for k, v in partial.items() if k not in row}
    row.update(extra)
    return row


def missing_fields(row: dict) -> list[str]:
    return [k for k in ROW_FIELDS if k not in row]


def parse_line(text: str, line_no: int) -> tuple[dict | None, BadLine | None]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, BadLine(line_no, text[:200], f"not JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(obj, dict):
        return None, BadLine(line_no, text[:200], "not a JSON object")
    if "seed" not in obj:
        return None, BadLine(line_no, text[:200], "no 'seed' field")
    return obj, None


def read_rows(path: str | Path) -> RowsRead:
    """Read a whole rows.jsonl (missing file = no rows)."""
    out = RowsRead()
    p = Path(path)
    if not p.exists():
        return out
    data = p.read_bytes()
    lines = data.split(b"\n")
    torn_tail = data and not data.endswith(b"\n")
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = i == len(lines)
        text = raw.decode("utf-8", errors="replace")
        if is_last and torn_tail:
            out.bad.append(BadLine(i, text[:200], "torn last line (no newline: a write was cut short)", torn=True))
            continue
        row, bad = parse_line(text, i)
        if bad is not None:
            out.bad.append(bad)
        else:
            out.rows.append(row)
    return out
