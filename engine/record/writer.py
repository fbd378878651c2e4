"""The run directory's record as the driver writes it: the manifest (and each resume's entry),
status.json, rows.json, the heartbeat and the pid, the rows file, and the reserve that leaves room
to record a failure on a full disk. The driver decides what to say (engine/run/driver.py); this
module alone decides where it goes and in which order the end is written. The files and their
fields are the contract's (prereg/rundir/, docs/run-directory.md)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Callable

from engine.record.config import RunConfig
from engine.record.errors import DriverError
from engine.record.manifest import manifest_record
from prereg import rundir as rd

RESERVE_BYTES = 256 * 1024  # freed on a full disk so that the final status.json and rows.json fit


class RunRecord:
    def __init__(self, cfg: RunConfig, run_dir: Path, argv: list[str], resume: bool, started_at: str):
        self.cfg, self.run_dir, self.argv, self.resume, self.started_at = cfg, Path(run_dir), argv, resume, started_at
        self._resume_noted = False  # a resume appends to the manifest once
        self.rows_writer: rd.RowWriter | None = None

    # -- the directory

    def check_writable(self) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            probe = self.run_dir / ".write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise DriverError(f"run directory {self.run_dir} is not writable ({exc.strerror}); "
                              f"choose another --run-dir") from None

    def open(self) -> rd.RowWriter:
        """The videos folder, the pid, the first heartbeat, the rows file opened for appending, and
        the reserve; the row writer."""
        (self.run_dir / rd.VIDEOS).mkdir(exist_ok=True)
        rd.write_pid(self.run_dir)
        rd.touch_heartbeat(self.run_dir)
        try:
            self.rows_writer = rd.RowWriter(self.run_dir / rd.ROWS)
        except rd.Unreadable as exc:
            raise DriverError(f"{self.run_dir / rd.ROWS} {exc.why}: rows cannot be written there; "
                              "remove it, or choose another --run-dir") from None
        try:  # room to record a failure if the disk fills up (freed by `write_end`)
            with open(self.run_dir / rd.RESERVE, "wb") as f:
                f.write(b"\0" * RESERVE_BYTES)
        except OSError:
            pass
        return self.rows_writer

    # -- the manifest

    def write_manifest(self, policy_resolved: dict | None, gpus: int) -> None:
        """What was asked for (and, once loaded, what the policy resolved to); a resume appends its
        entry (when, the command, the host) once instead."""
        path = self.run_dir / rd.MANIFEST
        if self.resume and path.exists():
            if self._resume_noted:
                return
            self._resume_noted = True
            manifest = rd.read_json(path) or {}
            manifest.setdefault("resumes", []).append({"at": rd.utc_now(), "argv": self.argv, "host": socket.gethostname()})
        else:
            manifest = manifest_record(self.cfg, policy_resolved=policy_resolved, gpus=gpus,
                                       argv=self.argv, started_at=self.started_at)
        rd.write_json_atomic(path, manifest)

    def merge_manifest(self, extra: dict) -> None:
        """What is known only later (the executor's description, the tripwires' record): on a resume,
        into its entry."""
        path = self.run_dir / rd.MANIFEST
        manifest = rd.read_json(path) or {}
        (manifest["resumes"][-1] if self.resume and manifest.get("resumes") else manifest).update(extra)
        rd.write_json_atomic(path, manifest)

    # -- status and the end

    def write_status(self, status: rd.Status) -> None:
        rd.write_json_atomic(self.run_dir / rd.STATUS, status.to_dict())

    def write_summary(self, summary: dict, rows: list[dict]) -> None:
        rd.write_json_atomic(self.run_dir / rd.ROWS_SUMMARY, {"summary": summary, "rows": rows})

    def write_end(self, failed: bool, write_status: Callable[[], None], write_summary: Callable[[], None],
                  say: Callable[[str], None]) -> None:
        """Record the end: rows.json, then the final state in status.json (a reader that sees the final
        state finds the summary there too); a failure writes its status first, its reason being what
        matters most when the disk is full. Each write is tried on its own; what cannot be written is
        said."""
        try:
            if self.rows_writer is not None:
                self.rows_writer.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            os.unlink(self.run_dir / rd.RESERVE)
        except OSError:
            pass
        status, summary = (rd.STATUS, write_status), (rd.ROWS_SUMMARY, write_summary)
        order = (status, summary) if failed else (summary, status)
        for what, write in (*order, (rd.HEARTBEAT, lambda: rd.touch_heartbeat(self.run_dir))):
            try:
                write()
            except Exception as exc:  # noqa: BLE001 - a failure being recorded must not hide the first one
                say(f"could not write {what} at the end: {type(exc).__name__}: {exc}")
