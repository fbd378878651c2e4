"""The real-trial contract (`real.jsonl`, schema 1) and the sim predictions it is paired with
(`sim_predictions.jsonl`): their fields and types, one writer and one tolerant reader each, and what a
trial and a prediction mean as a number (`trial_value`, `prediction_value`). Written once here; the
console's real session, `fontaine-prereg import-real`, the engine's jittered rollouts and the read
(prereg/stats/real_read.py) all import it.

A trial is one real episode on the rig, on one sim seed's initial condition: one JSON line, flushed
and fsynced as it is marked (`append_trial`), so nothing typed is lost and a crash loses at most the
line being written (read back as torn). Its outcome is one of `OUTCOMES`; a `void` trial (the rig
faulted, the scene was set wrong) carries its reason and is not read: its seed is still owed. A
trial's `progress` (optional) is the operator's share of the task done, in [0, 1].

A prediction is the sim side of a seed: `k` rollouts from the seed's initial condition jittered
within `jitter_cm`, `successes` of them succeeding, and their mean progress clipped to [0, 1].

A line that does not parse, or parses with a field of the wrong type, is a bad line (its line number
and why), never coerced. Free text (the operator, a void reason, a video path) is redacted of
secret shapes before it is written.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from prereg.core.safe_read import LINE_MAX_BYTES, ROWS_MAX_BYTES, Unreadable, read_lines
from prereg.core.untrusted import redacted
from prereg.rundir.files import REAL, SIM_PREDICTIONS, append_line, parse_utc
from prereg.rundir.rows import BadLine

REAL_SCHEMA = 1
PREDICTION_SCHEMA = 1

SUCCESS, FAILURE, KNOCK_AWAY, VOID = "success", "failure", "knock_away", "void"
OUTCOMES = (SUCCESS, FAILURE, KNOCK_AWAY, VOID)
# what a registered real read measures: the success indicator, or the progress share clipped to [0, 1]
METRIC_SUCCESS, METRIC_PROGRESS = "success", "progress"
METRICS = (METRIC_SUCCESS, METRIC_PROGRESS)

TRIAL_FIELDS: tuple[str, ...] = (
    "schema", "arm", "seed", "checkpoint_sha256", "selection_seed", "operator",
    "started_at", "ended_at", "outcome", "void_reason", "progress", "video", "source",
)
PREDICTION_FIELDS: tuple[str, ...] = ("schema", "arm", "seed", "k", "successes", "progress_mean", "jitter_cm")
TEXT_MAX = 200  # an operator's name, a void reason, a video path: one line each
SHA256_RE = re.compile(r"^(?:sha256:)?[0-9a-f]{64}$")


def _is_int(v) -> bool:
    return type(v) is int


def _is_num(v) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _text(v, name: str, *, required: bool) -> str | None:
    if v is None:
        return f"{name} is missing" if required else None
    if not isinstance(v, str):
        return f"{name} must be text, got {type(v).__name__}"
    if required and not v.strip():
        return f"{name} is empty"
    if len(v) > TEXT_MAX or "\n" in v or "\r" in v:
        return f"{name} must be one line of at most {TEXT_MAX} characters"
    return None


def _line_head_problem(obj: object, fields, schema: int, hint: str = "") -> str | None:
    """What every line of real.jsonl and sim_predictions.jsonl must be first: a JSON object of known
    fields at this schema (None when it is)."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        return f"unknown field(s) {', '.join(unknown)}{hint}"
    if obj.get("schema") != schema:
        return f"schema must be {schema}, got {obj.get('schema')!r}"
    return None


def trial_problem(obj: object) -> str | None:
    """Why `obj` is not a trial line of this schema (None when it is)."""
    head = _line_head_problem(obj, TRIAL_FIELDS, REAL_SCHEMA, f" (a trial has {', '.join(TRIAL_FIELDS)})")
    if head:
        return head
    if not _is_int(obj.get("seed")) or obj["seed"] < 0:
        return f"seed must be a whole number >= 0, got {obj.get('seed')!r}"
    for name, required in (("arm", True), ("operator", True), ("void_reason", False), ("video", False),
                           ("source", False)):
        why = _text(obj.get(name), name, required=required)
        if why:
            return why
    sha = obj.get("checkpoint_sha256")
    if not isinstance(sha, str) or not SHA256_RE.match(sha):
        return f"checkpoint_sha256 must be 64 hex digits (the checkpoint's pin), got {sha!r}"
    sel = obj.get("selection_seed")
    if sel is not None and not _is_int(sel):
        return f"selection_seed must be a whole number or null, got {sel!r}"
    outcome = obj.get("outcome")
    if outcome not in OUTCOMES:
        return f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}"
    if outcome == VOID and not (obj.get("void_reason") or "").strip():
        return "a void trial needs its void_reason (what went wrong on the rig)"
    if outcome != VOID and obj.get("void_reason") is not None:
        return f"void_reason is for a void trial only (outcome {outcome})"
    prog = obj.get("progress")
    if prog is not None and not (_is_num(prog) and 0.0 <= prog <= 1.0):
        return f"progress must be a number in [0, 1] or null, got {prog!r}"
    start, end = parse_utc(obj.get("started_at")), parse_utc(obj.get("ended_at"))
    if start is None or end is None:
        return ("started_at and ended_at must be ISO-8601 UTC times (2026-12-07T10:00:00Z), got "
                f"{obj.get('started_at')!r}, {obj.get('ended_at')!r}")
    if end < start:
        return f"ended_at {obj['ended_at']} is before started_at {obj['started_at']}"
    return None


@dataclass(frozen=True)
class Trial:
    """One real trial, as written to real.jsonl (`as_dict`) and read back (`from_dict`)."""

    arm: str
    seed: int
    checkpoint_sha256: str
    operator: str
    started_at: str
    ended_at: str
    outcome: str
    void_reason: str | None = None
    progress: float | None = None
    video: str | None = None
    selection_seed: int | None = None  # the plan's, when the trial was recorded: a change later is a provenance problem
    source: str | None = None  # "console", "import:<file name>"

    def as_dict(self) -> dict:
        out = {"schema": REAL_SCHEMA}
        for name in TRIAL_FIELDS[1:]:
            v = getattr(self, name)
            out[name] = redacted(v) if isinstance(v, str) and name in ("operator", "void_reason", "video", "source") else v
        return out

    @classmethod
    def make(cls, **fields) -> "Trial":
        """A trial checked against the schema: ValueError naming the field and what it must be."""
        if isinstance(fields.get("checkpoint_sha256"), str):
            fields["checkpoint_sha256"] = fields["checkpoint_sha256"].strip().lower()
        if type(fields.get("progress")) is int:
            fields["progress"] = float(fields["progress"])
        try:
            trial = cls(**fields)
        except TypeError as exc:
            raise ValueError(f"not a trial: {exc}") from None
        why = trial_problem(trial.as_dict())
        if why:
            raise ValueError(f"the trial of seed {fields.get('seed')!r} is not a trial: {why}")
        return trial

    @classmethod
    def from_dict(cls, d: dict) -> "Trial":
        return cls(**{k: d.get(k) for k in TRIAL_FIELDS[1:]})


def append_trial(run_dir: str | Path, trial: Trial) -> dict:
    """Append one trial to the run's real.jsonl, flushed and fsynced; the line written."""
    line = trial.as_dict()
    why = trial_problem(line)
    if why:
        raise ValueError(f"the trial of seed {trial.seed} is not a trial: {why}")
    append_line(Path(run_dir) / REAL, line)
    return line


@dataclass
class TrialsRead:
    trials: list[Trial] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    line_nos: list[int] = field(default_factory=list)
    problem: str | None = None  # the file is there but cannot be read: why
    recorded: bool = False  # real.jsonl exists


def _jsonl(path: Path, check) -> tuple[list[tuple[int, dict]], list[BadLine], str | None, bool]:
    out: list[tuple[int, dict]] = []
    bad: list[BadLine] = []
    try:
        for i, raw, length, ended in read_lines(path, ROWS_MAX_BYTES):
            if raw is None:
                bad.append(BadLine(i, "", f"a line of {length:,} bytes, more than {LINE_MAX_BYTES:,}", torn=not ended))
                continue
            if not raw.strip():
                continue
            text = raw.decode("utf-8", errors="replace")
            if not ended:
                bad.append(BadLine(i, text[:200], "torn last line (no newline: a write was cut short)", torn=True))
                continue
            try:
                obj = json.loads(text)
            except ValueError as exc:
                bad.append(BadLine(i, text[:200], f"not JSON ({exc})"))
                continue
            why = check(obj)
            if why:
                bad.append(BadLine(i, text[:200], why))
            else:
                out.append((i, obj))
    except FileNotFoundError:
        return [], [], None, False
    except Unreadable as exc:
        return [], [BadLine(0, "", f"{exc} (no line of it can be read)")], exc.why, True
    return out, bad, None, True


def read_trials(run_dir: str | Path, arm: str | None = None) -> TrialsRead:
    """Every trial of real.jsonl in order (of one arm when `arm` is given); bad lines apart."""
    lines, bad, problem, recorded = _jsonl(Path(run_dir) / REAL, trial_problem)
    got = [(i, d) for i, d in lines if arm is None or d["arm"] == arm]
    return TrialsRead([Trial.from_dict(d) for _, d in got], bad, [i for i, _ in got], problem, recorded)


def real_digest(run_dir: str | Path, lines: int | None = None) -> tuple[int, str]:
    """(lines, sha256) of the first `lines` whole lines of real.jsonl (all of them when None): what a
    report records, so a later read can tell an edit (the same lines, other bytes) from trials added."""
    h = hashlib.sha256()
    n = 0
    try:
        for _, raw, _, ended in read_lines(Path(run_dir) / REAL, ROWS_MAX_BYTES, line_max=ROWS_MAX_BYTES):
            if not ended or (lines is not None and n >= lines):
                break
            h.update(raw + b"\n")
            n += 1
    except (FileNotFoundError, Unreadable):
        pass
    return n, h.hexdigest()


def trial_value(trial: Trial, metric: str) -> float | None:
    """Y of a trial under the metric: 1/0 success (a knock-away is a failure), or its progress clipped
    to [0, 1]; None for a void trial, or a progress read of a trial without one."""
    if trial.outcome == VOID:
        return None
    if metric == METRIC_SUCCESS:
        return 1.0 if trial.outcome == SUCCESS else 0.0
    if trial.progress is None:
        return None
    return min(1.0, max(0.0, float(trial.progress)))


# ---------------------------------------------------------------- the sim side: sim_predictions.jsonl


def prediction_problem(obj: object) -> str | None:
    head = _line_head_problem(obj, PREDICTION_FIELDS, PREDICTION_SCHEMA)
    if head:
        return head
    why = _text(obj.get("arm"), "arm", required=True)
    if why:
        return why
    for name in ("seed", "k", "successes"):
        if not _is_int(obj.get(name)) or obj[name] < 0:
            return f"{name} must be a whole number >= 0, got {obj.get(name)!r}"
    if obj["k"] < 1 or obj["successes"] > obj["k"]:
        return f"successes {obj['successes']} of k {obj['k']} rollouts: k must be >= 1 and successes <= k"
    pm = obj.get("progress_mean")
    if pm is not None and not (_is_num(pm) and 0.0 <= pm <= 1.0):
        return f"progress_mean must be a number in [0, 1] or null, got {pm!r}"
    jit = obj.get("jitter_cm")
    if not (_is_num(jit) and jit >= 0):
        return f"jitter_cm must be a number >= 0, got {jit!r}"
    return None


@dataclass(frozen=True)
class Prediction:
    """The sim side of one seed: `successes` of `k` rollouts jittered within `jitter_cm`."""

    arm: str
    seed: int
    k: int
    successes: int
    jitter_cm: float
    progress_mean: float | None = None

    def as_dict(self) -> dict:
        return {"schema": PREDICTION_SCHEMA, "arm": self.arm, "seed": self.seed, "k": self.k,
                "successes": self.successes, "progress_mean": self.progress_mean, "jitter_cm": self.jitter_cm}


def append_prediction(run_dir: str | Path, prediction: Prediction) -> None:
    line = prediction.as_dict()
    why = prediction_problem(line)
    if why:
        raise ValueError(f"the prediction of seed {prediction.seed} is not one: {why}")
    append_line(Path(run_dir) / SIM_PREDICTIONS, line)


@dataclass
class PredictionsRead:
    by_seed: dict[int, Prediction] = field(default_factory=dict)  # the last line of each seed
    bad: list[BadLine] = field(default_factory=list)
    recorded: bool = False


def read_predictions(run_dir: str | Path, arm: str) -> PredictionsRead:
    lines, bad, _, recorded = _jsonl(Path(run_dir) / SIM_PREDICTIONS, prediction_problem)
    out = PredictionsRead(bad=bad, recorded=recorded)
    for _, d in lines:
        if d["arm"] == arm:
            out.by_seed[d["seed"]] = Prediction(d["arm"], d["seed"], d["k"], d["successes"], float(d["jitter_cm"]),
                                                d.get("progress_mean"))
    return out


def prediction_value(p: Prediction, metric: str) -> float | None:
    """f of a seed under the metric: the share of its k rollouts that succeed, or their mean progress."""
    if metric == METRIC_SUCCESS:
        return p.successes / p.k
    return None if p.progress_mean is None else min(1.0, max(0.0, float(p.progress_mean)))
