"""A real session's state, apart from the screen that shows it (console/widgets/real_session.py): the plan's
registered real read for the run's arm, the selected seeds in the order to run them and which are owed
(prereg.stats.real_read.owed_seeds: the file decides, so reopening resumes at the next owed seed), the
setup the engine wrote for a seed (prereg.rundir.real_setup), and a mark written as one fsynced line of
real.jsonl (prereg.rundir.real.append_trial). Nothing here imports the engine.

The operator's name and, where the arm has no sha256 pin, the checkpoint's sha256 are asked once and
remembered beside the runs (`<runs>/.console/real-session.json`), shared by every console on the folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.errors import FontaineError
from prereg.rundir.files import write_json_atomic
from prereg.rundir.real import OUTCOMES, SHA256_RE, VOID, Trial, append_trial, read_trials
from prereg.rundir.real_setup import Setup, read_setup

SOURCE = "console"


class NoRealRead(FontaineError):
    """The run cannot have a real session: why, and what to do."""


def memory_file(runs_dir: Path) -> Path:
    return Path(runs_dir) / ".console" / "real-session.json"


def recall(runs_dir: Path) -> dict:
    """{operator, checkpoint_sha256} the last session remembered ({} when none)."""
    got = rd.read_json(memory_file(runs_dir)) or {}
    return {k: v for k, v in got.items() if k in ("operator", "checkpoint_sha256") and isinstance(v, str)}


def remember(runs_dir: Path, **values: str) -> None:
    path = memory_file(runs_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {**recall(runs_dir), **values})
    except OSError:
        pass  # a read-only runs folder: asked again next time


def sha_problem(text: str) -> str | None:
    """Why `text` is not a checkpoint's sha256 (None when it is)."""
    t = text.strip().lower()
    return None if SHA256_RE.match(t) else "a checkpoint's sha256 is 64 hex digits (sha256sum of the checkpoint file)"


@dataclass
class RealSession:
    """The registered real read of one arm of a run, and what the run's real.jsonl says of it."""

    run_dir: Path
    arm: str
    doc: object
    spec: object  # prereg.document.real_spec.RealSpec
    selected: tuple[int, ...]
    pin: str | None = None  # the arm's sha256 pin, when the plan freezes one
    owed: tuple[int, ...] = ()
    marks: dict[int, str] = field(default_factory=dict)  # seed -> the outcome of its last trial

    @classmethod
    def open(cls, prereg_path: str | Path | None, arm: str, run_dir: Path) -> "RealSession":
        from prereg.document.read import load
        from prereg.document.real_spec import real_spec_of, selected_seeds

        if not prereg_path:
            raise NoRealRead(f"{Path(run_dir).name} was not launched from a pre-registration: no real read is "
                             "registered for it (launch a plan with reads.real: docs/real.md)")
        try:
            doc = load(prereg_path)
        except (OSError, FontaineError) as exc:
            raise NoRealRead(f"{prereg_path} cannot be read ({exc}); put the run's plan back") from None
        got = real_spec_of(doc, arm)
        if got is None:
            raise NoRealRead(f"{Path(prereg_path).name} registers no real read for arm {arm} "
                             "(add reads.real to its section and freeze it: docs/real.md)")
        found = doc.find_arm(arm)
        revision = getattr(found[0], "revision", None) if found else None
        pin = revision.removeprefix("sha256:") if isinstance(revision, str) and revision.startswith("sha256:") else None
        session = cls(Path(run_dir), arm, doc, got[0], selected_seeds(doc, arm), pin)
        session.reload()
        return session

    def reload(self) -> None:
        """Owed seeds and marks as real.jsonl says now (another console, an import)."""
        from prereg.stats.real_read import owed_seeds

        self.owed = owed_seeds(self.doc, self.arm, self.run_dir)
        self.marks = {t.seed: t.outcome for t in read_trials(self.run_dir, self.arm).trials}

    @property
    def current(self) -> int | None:
        """The seed to set up next: the first owed one, in the selection's order."""
        return self.owed[0] if self.owed else None

    @property
    def done(self) -> int:
        return len(self.selected) - len(self.owed)

    def setup(self, seed: int) -> tuple[Setup | None, str | None]:
        return read_setup(self.run_dir, seed)

    def mark(self, seed: int, outcome: str, *, operator: str, checkpoint_sha256: str, started_at: str,
             ended_at: str, void_reason: str | None = None, progress: float | None = None,
             video: str | None = None) -> Trial:
        """One trial, checked and appended (fsynced) to real.jsonl; then the owed seeds read again.
        ValueError (the field and what it must be) when it is not a trial: nothing is written."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
        trial = Trial.make(arm=self.arm, seed=seed, checkpoint_sha256=checkpoint_sha256, operator=operator,
                           started_at=started_at, ended_at=ended_at, outcome=outcome,
                           void_reason=void_reason if outcome == VOID else None, progress=progress,
                           video=video or None, selection_seed=self.spec.selection_seed, source=SOURCE)
        append_trial(self.run_dir, trial)
        self.reload()
        return trial
