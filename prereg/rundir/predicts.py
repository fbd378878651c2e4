"""Reading predicts.jsonl, the predict trail (engine/record/predict_trail.py writes it; docs/run-directory.md).

One reader for the console's seed view and the tests: regular files only, bounded in size,
a line that is not a JSON object counted as bad (a torn last line from a killed run is one)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.safe_read import Unreadable, read_regular

PREDICTS_MAX_BYTES = 256 * 1024 * 1024  # 100 seeds x 100 predicts x ~2 KB is 20 MB


@dataclass
class Trail:
    lines: list[dict] = field(default_factory=list)
    recorded: bool = False  # predicts.jsonl exists in the run directory
    more: int = 0  # lines of the seed beyond `limit`
    bad: int = 0  # lines that are not a JSON object
    problem: str = ""  # why the file could not be read at all


def read_predicts(run_dir: str | Path, seed: int | None = None, *, limit: int | None = None,
                  arm: str | None = None) -> Trail:
    """The lines of one seed (every line when `seed` is None; of one arm's, a comparison run), at most
    `limit` of them kept."""
    trail = Trail()
    try:
        data = read_regular(Path(run_dir) / rd.PREDICTS, PREDICTS_MAX_BYTES)
    except FileNotFoundError:
        return trail
    except (Unreadable, OSError) as exc:
        trail.recorded, trail.problem = True, str(exc)
        return trail
    trail.recorded = True
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            trail.bad += 1
            continue
        if not isinstance(obj, dict):
            trail.bad += 1
        elif (seed is None or obj.get("seed") == seed) and (arm is None or obj.get("arm") == arm):
            if limit is None or len(trail.lines) < limit:
                trail.lines.append(obj)
            else:
                trail.more += 1
    return trail
