"""Asking a run to stop, and why it stopped: the STOP file (`write_stop`, `read_stop`), the structured
`StopReason` (who asked: user, gate, signal, decided, error, kill) and its one-line text."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from prereg.core.safe_read import STOP_MAX_BYTES, Unreadable, read_regular
from prereg.core.untrusted import redacted, secret_in
from prereg.rundir.files import STOP, utc_now, write_json_atomic

# -- stopping: the STOP request and the structured stop reason --------------------------
BY_USER, BY_GATE, BY_SIGNAL, BY_DECIDED, BY_ERROR = "user", "gate", "signal", "decided", "error"
BY_KILL = "kill"  # the console killed a driver that could not write its end; the console wrote it (console/kill.py)
STOP_BY = (BY_USER, BY_GATE, BY_SIGNAL, BY_DECIDED, BY_ERROR, BY_KILL)


@dataclass(frozen=True)
class StopReason:
    """Why a run stopped (or was asked to): who, which gate if a gate, and the detail in words."""

    by: str  # one of STOP_BY
    detail: str = ""
    gate: str | None = None  # the gate's name when by == "gate" (gpu_hours, pace, ...)
    who: str | None = None  # the person or program that asked, when known
    at: str | None = None

    def as_dict(self) -> dict:
        """The reason as the STOP file and status.json hold it: every text redacted (one more time: a
        reason built in code may quote what a user typed)."""
        return {k: redacted(v) if isinstance(v, str) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: object) -> "StopReason | None":
        if not isinstance(d, dict):
            return None
        by = d.get("by")
        by = by if isinstance(by, str) and by in STOP_BY else BY_USER  # an older or hand-written STOP: a person asked
        gate = one_line(d["gate"], 40) if isinstance(d.get("gate"), str) else None
        detail = d.get("detail", d.get("reason", ""))
        detail = one_line(detail if isinstance(detail, str) else json.dumps(detail) if detail is not None else "")
        who = one_line(d["who"], 80) if isinstance(d.get("who"), str) else None
        at = one_line(d["at"], 40) if isinstance(d.get("at"), str) else None
        return cls(by=by, detail=detail, gate=gate or None, who=who or None, at=at or None)

    def text(self) -> str:
        """One line for people: 'gate pace: projected wall 1.3 h > 1.0 h', 'user (ana): stop key'."""
        head = f"gate {self.gate}" if self.by == BY_GATE and self.gate else self.by
        if self.who and self.by != BY_GATE:
            head += f" ({self.who})"
        return f"{head}: {self.detail}" if self.detail else head


STOP_DETAIL_MAX = 200  # characters of a stop reason's detail: it becomes status.json's one-line reason


def one_line(text: str, limit: int = STOP_DETAIL_MAX) -> str:
    """`text` as one printable line of at most `limit` characters: control, format and separator
    characters (newlines, escapes, bidi overrides, NULs) become spaces or '?', runs of spaces one,
    and a secret's shape (a webhook URL, a token: prereg.core.untrusted) is redacted, since the
    line is copied into status.json, rows.json, the terminal and the Discord stop post."""
    out = []
    for ch in redacted(text[: limit * 4]):
        if ch.isprintable():
            out.append(ch)
        elif ch.isspace():
            out.append(" ")
        else:
            out.append("?")
    line = " ".join("".join(out).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def write_stop(run_dir: str | Path, reason: StopReason, *, only_if_absent: bool = True) -> Path:
    """Ask the run's driver to stop at the next episode boundary (atomically; a first request wins)."""
    path = Path(run_dir) / STOP
    if only_if_absent and path.exists():
        return path
    if reason.at is None:
        reason = StopReason(reason.by, reason.detail, reason.gate, reason.who, utc_now())
    write_json_atomic(path, reason.as_dict())
    return path


EMPTY_STOP_DETAIL = "STOP file present"  # a `touch STOP`, or a STOP read while its writer had written nothing yet


def read_stop(run_dir: str | Path) -> StopReason | None:
    """The STOP request, if any. A STOP that is not our JSON (a person's `touch`) still stops,
    and so does one that cannot be read (a FIFO, a directory, a symlink loop): it is never
    opened for a blocking read, and the reason says what it is."""
    p = Path(run_dir) / STOP
    try:
        data = read_regular(p, STOP_MAX_BYTES)
    except FileNotFoundError:
        return None
    except Unreadable as exc:
        return StopReason(BY_USER, f"STOP present (unreadable: {exc.why})")
    except OSError as exc:
        return StopReason(BY_USER, f"STOP present (unreadable: {exc.strerror or exc})")
    text = data.decode("utf-8", errors="replace").strip()
    if not one_line(text):
        return StopReason(BY_USER, EMPTY_STOP_DETAIL)
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return StopReason(BY_USER, one_line(text))  # a person's words (or any bytes): one printable line
    return StopReason.from_dict(obj) or StopReason(BY_USER, one_line(text))


def scrub_stop_file(run_dir: str | Path, reason: StopReason) -> bool:
    """Once a STOP is acted on: a STOP whose words hold a secret's shape (`printf 'stop %s' "$HF_TOKEN" >
    STOP`) is rewritten as its reason, redacted, so no secret lingers in the run directory. True when it was."""
    p = Path(run_dir) / STOP
    try:
        data = read_regular(p, STOP_MAX_BYTES)
    except (OSError, Unreadable):
        return False
    if secret_in(data) is None:
        return False
    write_stop(run_dir, reason, only_if_absent=False)
    return True
