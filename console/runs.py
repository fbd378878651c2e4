"""Runs as the console sees them: run directories, their processes, and run control.

Everything here goes through the run directory contract (prereg/rundir/, docs/run-directory.md) and the
`fontaine-eval` command line; the console never imports the engine. A run's state is
what `status.json` says, corrected by what the process table says: a run whose process
is gone without a final state has died; a run with a STOP file and no final state is
stopping (the rules every reader shares: prereg/rundir/runstate.py). Finding runs and their
liveness (the process create time compared with the one in `pid.json`, so a reused pid is never
mistaken for the run, and never signalled) are prereg/rundir/discovery.py's, shared with the
Discord notifier.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.argcheck import module_argv
from prereg.core.errors import UsageError
from prereg.core.safe_read import resolved
from prereg.core.webhook_env import without_webhooks
from prereg.rundir.discovery import (  # noqa: F401 - re-exported: the console's names for them
    ALIVE,
    GONE,
    UNKNOWN,
    discover_runs,
    liveness,
    run_process,
    run_sort_key,
)
from prereg.rundir.files import load_json_object, utc_iso
from prereg.rundir.lock import lock_holder
from prereg.rundir.runstate import RunState, ShowsState, episodes_done, planned_total
from prereg.stats.story import Story


@dataclass
class RunInfo(ShowsState):
    """One run directory, read once (small files only; rows are the tailer's job)."""

    run_id: str
    path: Path
    manifest: rd.Manifest | None = None  # typed (a manifest.json object given here is read as one)
    status: rd.Status | None = None  # typed (likewise)
    pid: dict | None = None
    stop: rd.StopReason | None = None  # the STOP request, when present
    heartbeat_mtime: float | None = None
    rows_size: int | None = None
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable files and fields, with why
    liveness: str = UNKNOWN
    launched_arm: str | None = None  # the arm this console launched, until manifest.json names it
    counted: int | None = None  # episodes with a row by the one denominator, once rows.jsonl is read to its end
    story: Story | None = None  # the report's story (results.json), when the run has been reported

    def __post_init__(self) -> None:
        self.manifest = rd.Manifest.of(self.manifest)
        self.status = rd.Status.of(self.status)

    @property
    def recorded_state(self) -> str | None:
        st = self.status.state if self.status is not None else None
        return st if st in rd.STATES else None

    @property
    def run_state(self) -> RunState:
        """The run by the rules every reader shares (prereg/rundir/runstate.py)."""
        return RunState.of(self.status, self.liveness, stop_requested=self.stop is not None, unreadable=bool(self.problems))

    @property
    def arm(self) -> str:
        arm = self.manifest.arm if self.manifest is not None else None
        return arm or self.launched_arm or "?"

    @property
    def done(self) -> int | None:
        return episodes_done(self.status, self.counted)

    @property
    def total(self) -> int | None:
        return planned_total(self.status, self.manifest)

    @property
    def prereg(self) -> rd.PreregRef | None:
        """The frozen section the run was launched from (manifest.json's `prereg`), if it says."""
        return self.manifest.prereg if self.manifest is not None else None

    @property
    def prereg_path(self) -> str | None:
        return self.prereg.path if self.prereg is not None else None

    @property
    def seeds(self) -> tuple[int, ...] | None:
        """The manifest's seeds (None: no manifest, or its seeds cannot be read)."""
        return self.manifest.seeds if self.manifest is not None else None

    @property
    def started_at(self) -> str | None:
        """When the run started (UTC, ISO): the manifest's start, else when its driver's pid.json was
        written. The runs list sorts a hand-named run directory by it (run_sort_key)."""
        at = self.manifest.started_at if self.manifest is not None else None
        launched = (self.pid or {}).get("launched_at")
        return at or (launched if isinstance(launched, str) else None)

    def heartbeat_age(self, now: float) -> float | None:
        return None if self.heartbeat_mtime is None else max(0.0, now - self.heartbeat_mtime)


def read_run(path: str | Path) -> RunInfo:
    """Read a run directory's small files through the contract's one snapshot (`rd.read_snapshot`):
    never raises and never blocks for a bad or missing file."""
    path = Path(path)
    snap = rd.read_snapshot(path)
    info = RunInfo(run_id=path.name, path=path)
    info.manifest, info.status = snap.manifest, snap.status
    info.pid = snap.pid
    info.missing = list(snap.missing)
    # what cannot be read: a file, or a field of the wrong type ('status.json: elapsed_s is str 'x', ...')
    info.problems = snap.unreadable_lines + list(snap.problems)
    if snap.manifest is not None and snap.manifest.run_id:
        info.run_id = snap.manifest.run_id
    info.heartbeat_mtime = snap.heartbeat_mtime
    info.rows_size = snap.rows_size
    info.stop = snap.stop
    info.liveness = liveness(info.pid)
    info.story = read_story(path)
    return info


def read_story(run_dir: Path) -> Story | None:
    """The report's story of the run (results.json's `story`), None before a report or from an older one."""
    res, _why = load_json_object(run_dir / rd.RESULTS_JSON)  # None, and why, when missing or unreadable
    return Story.from_dict(res.get("story")) if isinstance(res, dict) else None


# -- run control ------------------------------------------------------------------

def prereg_launch_argv(prereg_file: str | Path, arm: str, run_dir: str | Path) -> list[str]:
    """`fontaine-eval --prereg FILE --arm NAME`, or `--arms A,B` for a comparison run (the launch dialog's
    "A,B": an arm name never holds a comma), as an argv list."""
    which = "--arms" if "," in arm else "--arm"
    return module_argv("engine.cli", "--prereg", str(prereg_file), which, arm, "--run-dir", str(run_dir))


def resume_argv(run_dir: str | Path) -> list[str]:
    """`fontaine-eval --resume DIR`: skip seeds with an ok row, run the rest (the manifest decides the rest)."""
    return module_argv("engine.cli", "--resume", str(run_dir))


ARCHIVE = ".archive"  # RUNS/.archive/<run_id>: out of the list (dot folders are not runs), never deleted


def archive_run(run_dir: str | Path) -> Path:
    """Move a run directory into RUNS/.archive/ (a rename on the same file system). Refuses a
    directory whose lock is held (a driver writes it); the caller checks the run has ended."""
    run_dir = Path(run_dir)
    holder = lock_holder(run_dir)
    if holder is not None:
        raise RunBusy(f"{run_dir} is being written by process {holder.get('pid', '?')}: not archived")
    dest_root = run_dir.parent / ARCHIVE
    dest_root.mkdir(exist_ok=True)
    dest = dest_root / run_dir.name
    n = 1
    while dest.exists():  # an earlier run archived under the same name: keep both
        n += 1
        dest = dest_root / f"{run_dir.name}.{n}"
    os.rename(run_dir, dest)
    return dest


def scripted_launch_argv(run_dir: str | Path, *, num_seeds: int, episode_seconds: float, workers: int, seed: int = 0) -> list[str]:
    return module_argv("engine.cli", "--policy", "scripted", "--seed", str(seed),
                       "--num-seeds", str(num_seeds), "--episode-seconds", f"{episode_seconds:g}",
                       "--workers", str(workers), "--run-dir", str(run_dir))


class RunBusy(UsageError, OSError):
    """The run directory's lock is held: another driver writes it (an OSError too: callers catch those)."""


def launch_detached(argv: list[str], run_dir: str | Path, cwd: str | Path | None = None) -> subprocess.Popen:
    """Start a run in its own session (the pane's SIGHUP does not reach it), output to driver.log.

    The caller keeps the Popen and calls poll() on it, so the child is reaped when it ends
    (an unreaped child stays a zombie, which liveness reads as gone).
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    holder = lock_holder(run_dir)
    if holder is not None:  # the driver would refuse too; say it here, before a second process starts
        raise RunBusy(f"{run_dir} is being written by process {holder.get('pid', '?')}; "
                      "wait for it to end or stop it first")
    with open(run_dir / rd.LOG, "ab") as log:
        return subprocess.Popen(
            argv, start_new_session=True, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, close_fds=True, cwd=cwd, env=run_env(),
        )


def run_env(environ=None) -> dict:
    """The console's environment minus the Discord webhook: a run never posts (the detached
    notifier does), so the secret stays out of the driver, its workers and its Ray shards.
    Tokens a run may need (HF_TOKEN for a checkpoint, RAY_AUTH_TOKEN for a cluster) stay."""
    return without_webhooks(environ)  # by name (…WEBHOOK…) or by value (a Discord webhook URL)


def request_stop(run_dir: str | Path, who: str, detail: str, now: float | None = None) -> Path:
    """Write STOP (a user's request): the driver finishes in-flight episodes, starts no new one, exits `stopped`."""
    at = utc_iso(time.time() if now is None else now)
    return rd.write_stop(run_dir, rd.StopReason(rd.BY_USER, detail, who=who, at=at), only_if_absent=False)


def shown_path(path: Path) -> str:
    """A path as a person would type it: relative to the working directory when under it (a symlink loop,
    which Path.resolve raises on, is shown as given: `resolved`)."""
    try:
        return str(resolved(path).relative_to(resolved(Path.cwd())))
    except ValueError:
        return str(path)
