"""`fontaine-prereg import-real`: real trials recorded elsewhere (a spreadsheet, `lerobot-record` sessions
marked by hand) into a run's real.jsonl, under the same contract as the console's real session.

    fontaine-prereg import-real plan.md --arm arm-a --run runs/<id> trials.csv [--operator NAME]
        [--checkpoint-sha256 SHA] [--dry-run]

The file is CSV (a header row) or JSON lines, one trial a row: `seed`, `outcome` (success, failure,
knock_away or void; or a `success` column of true/false/1/0), `void_reason` (for a void), and
optionally `progress` (0-1), `operator`, `started_at`, `ended_at` (ISO-8601 UTC), `video`,
`checkpoint_sha256`. `--operator` and `--checkpoint-sha256` fill a column the file lacks. All or
nothing: every problem is listed as FILE:LINE: field: message and nothing is written (exit 2). A trial
already in real.jsonl (the same seed, start time and operator) is not written twice, so importing a
file again adds only its new rows. A seed the plan did not select is written but read as exploratory.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from prereg.core.errors import PreregError
from prereg.core.safe_read import Unreadable, read_regular
from prereg.document.read import load_valid
from prereg.document.real_spec import real_spec_of, selected_seeds
from prereg.rundir.manifest import read_manifest
from prereg.rundir.real import OUTCOMES, TRIAL_FIELDS, VOID, Trial, append_trial, read_trials

IMPORT_MAX_BYTES = 64 * 1024 * 1024
COLUMNS = tuple(f for f in TRIAL_FIELDS if f not in ("schema", "arm", "selection_seed", "source")) + ("success",)
TRUE, FALSE = ("true", "1", "yes", "y"), ("false", "0", "no", "n")


@dataclass
class Imported:
    written: list[Trial] = field(default_factory=list)
    already: int = 0  # rows already in real.jsonl
    unselected: list[int] = field(default_factory=list)
    owed: list[int] = field(default_factory=list)  # selected seeds still without a trial after the import

    def summary(self, arm: str, run_dir: Path, dry_run: bool) -> str:
        verb = "would write" if dry_run else "wrote"
        lines = [f"{verb} {len(self.written)} trial(s) of {arm} to {run_dir.name}/real.jsonl"
                 + (f"; {self.already} already there" if self.already else "")]
        if self.unselected:
            lines.append(f"note: seed(s) {', '.join(map(str, self.unselected))} were not selected by the plan: "
                         "read as exploratory, never as the registered read")
        lines.append(f"{len(self.owed)} selected seed(s) still owed" + (f": {', '.join(map(str, self.owed[:12]))}"
                                                                         f"{' ...' if len(self.owed) > 12 else ''}"
                                                                         if self.owed else ""))
        return "\n".join(lines)


def _records(path: Path) -> list[tuple[int, dict]]:
    try:
        text = read_regular(path, IMPORT_MAX_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise PreregError(f"{path}: no such file (the CSV or JSON-lines file of trials to import)") from None
    except Unreadable as exc:
        raise PreregError(f"{path}: cannot be read: {exc.why}") from None
    except UnicodeDecodeError as exc:
        raise PreregError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise PreregError(f"{path}:{i}: not JSON ({exc})", []) from None
            if not isinstance(obj, dict):
                raise PreregError(f"{path}:{i}: a line must be a JSON object of one trial's fields")
            out.append((i, obj))
        return out
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise PreregError(f"{path}: empty, or no header row (the CSV's first row names its columns: seed,outcome,...)")
    unknown = [c for c in reader.fieldnames if c not in COLUMNS]
    if unknown:
        raise PreregError(f"{path}:1: unknown column(s) {', '.join(map(repr, unknown))} (known: {', '.join(COLUMNS)})")
    return [(i + 2, {k: v for k, v in row.items() if v not in (None, "")}) for i, row in enumerate(reader)]


def _field(raw: dict, name: str, kind, problems: list[str], where: str):
    v = raw.get(name)
    if v is None or kind is str:
        return v
    if isinstance(v, str):
        try:
            return kind(v.strip())
        except ValueError:
            problems.append(f"{where}: {name}: {v!r} is not a {'whole number' if kind is int else 'number'}")
            return None
    return v


def _trial(raw: dict, where: str, arm: str, defaults: dict, selection_seed: int, source: str,
           problems: list[str]) -> Trial | None:
    unknown = [k for k in raw if k not in COLUMNS]
    if unknown:
        problems.append(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(COLUMNS)})")
        return None
    n = len(problems)
    seed = _field(raw, "seed", int, problems, where)
    progress = _field(raw, "progress", float, problems, where)
    outcome = raw.get("outcome")
    if outcome is None and "success" in raw:
        s = str(raw["success"]).strip().lower()
        outcome = "success" if s in TRUE else "failure" if s in FALSE else None
        if outcome is None:
            problems.append(f"{where}: success: {raw['success']!r} is not true/false")
    if isinstance(outcome, str):
        outcome = outcome.strip().lower().replace("-", "_")
    if outcome not in OUTCOMES:
        problems.append(f"{where}: outcome: {raw.get('outcome')!r} is not one of {', '.join(OUTCOMES)}")
    if len(problems) > n:
        return None
    fields = {"arm": arm, "seed": seed, "outcome": outcome, "progress": progress, "selection_seed": selection_seed,
              "source": source, "void_reason": raw.get("void_reason") if outcome == VOID else raw.get("void_reason") or None}
    for name in ("operator", "started_at", "ended_at", "video", "checkpoint_sha256"):
        fields[name] = raw.get(name, defaults.get(name))
    if fields["started_at"] is None or fields["ended_at"] is None:
        problems.append(f"{where}: started_at/ended_at: missing (when the trial ran, ISO-8601 UTC: 2026-12-07T10:00:00Z)")
        return None
    try:
        return Trial.make(**fields)
    except ValueError as exc:
        problems.append(f"{where}: {str(exc).split(': ', 1)[-1]}")
        return None


def import_real(doc_path: str | Path, arm: str, run_dir: str | Path, file: str | Path, *, operator: str | None = None,
                checkpoint_sha256: str | None = None, dry_run: bool = False) -> Imported:
    """Check every row of `file`, then append the new ones to `run_dir`'s real.jsonl (see the module)."""
    doc = load_valid(doc_path)
    got = real_spec_of(doc, arm)
    if got is None:
        raise PreregError(f"{doc.path}: arm {arm!r} registers no real read (reads.real, docs/real.md): "
                          "register one in an amendment and freeze it before recording real trials")
    spec, _ = got
    run = Path(run_dir)
    man, why = read_manifest(run)
    if man is None:
        raise PreregError(f"{run}: not a run directory ({why}): give the sim run of arm {arm} the trials pair with")
    if man.arm != arm and arm not in man.arms:
        raise PreregError(f"{run}: a run of arm {man.arm!r}, not {arm!r}: give the run of {arm}")
    path = Path(file)
    defaults = {"operator": operator, "checkpoint_sha256": checkpoint_sha256}
    problems: list[str] = []
    trials = [t for i, raw in _records(path)
              if (t := _trial(raw, f"{path}:{i}", arm, defaults, spec.selection_seed, f"import:{path.name}"[:200],
                              problems)) is not None]
    if problems:
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise PreregError(f"{path}: {len(problems)} problem(s), nothing imported:\n" + "\n".join(problems[:20]) + more
                          + "\nfix the rows named above and import again")
    existing = read_trials(run, arm)
    if existing.problem:
        raise PreregError(f"{run}: real.jsonl cannot be read ({existing.problem}): nothing imported")
    seen = {(t.seed, t.started_at, t.operator) for t in existing.trials}
    out = Imported()
    chosen = set(selected_seeds(doc, arm))
    for t in trials:
        key = (t.seed, t.started_at, t.operator)
        if key in seen:
            out.already += 1
            continue
        seen.add(key)
        out.written.append(t)
        if t.seed not in chosen and t.seed not in out.unselected:
            out.unselected.append(t.seed)
    if not dry_run:
        for t in out.written:
            append_trial(run, t)
    done = {t.seed for t in (*existing.trials, *out.written) if t.outcome != VOID}
    out.owed = [s for s in selected_seeds(doc, arm) if s not in done]
    return out
