"""What the notifier keeps on disk: each run's ledger of confirmed posts, the in-flight marker,
and the notifier's own folder under the runs folder with its lock.

The ledger, RUN_DIR/posts.jsonl (prereg.rundir.POSTS), gets one line per post only after Discord
confirmed it (with the message id, and `covers` for the missed milestones a catch-up listed),
flushed and fsynced, so a restarted notifier rebuilds what is owed from the run directory and
the ledger: nothing is posted twice and missed posts are caught up. A dead webhook is a
`webhook_gone` line naming the posts owed.

Crash window. discord.py's Webhook.send takes no nonce, so Discord cannot deduplicate a re-sent
webhook message. Before each send, RUN_DIR/posts.inflight.json names the post being sent; it is
removed once the ledger line is on disk. A notifier that finds it for a post not in the ledger
sends that post again, marked as a possible repeat (a rare repeat beats a lost post).

The notifier's folder, RUNS/.notifier/ (a dot folder, so never taken for a run): `lock` (an
exclusive flock held for the notifier's life, prereg.rundir's FileLock: one notifier per runs
folder), `status.json` (what the console shows), `notifier.log`, `requests/` (test posts asked
for by the console).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from prereg import rundir as rd
from prereg.core.safe_read import JSON_MAX_BYTES, ROWS_MAX_BYTES, Unreadable, check_regular, read_regular
from prereg.rundir.files import append_line, typed_field, utc_now, write_json_atomic
from prereg.rundir.fold import Plan, RowsFold
from prereg.rundir.lock import FileLock, Locked, lock_holder_at
from prereg.rundir.tail import RowsTailer
from prereg.stats.variants import Crossed, feed_variants
from prereg.stats.variants_live import live_stories

log = logging.getLogger(__name__)

LEDGER = rd.POSTS
INFLIGHT = rd.NOTIFY_INFLIGHT

HOME = ".notifier"  # under the runs folder; a dot folder, so never taken for a run
LOCK = "lock"
STATUS = rd.NOTIFIER_STATUS
LOG = "notifier.log"
REQUESTS = "requests"
LEDGER_MAX_BYTES = 64 * 1024 * 1024  # a post is a line of ~200 bytes: far above any run's ledger


def home(runs_dir: Path | str) -> Path:
    return Path(runs_dir) / HOME


STATUS_SCHEMA = 1
_NUM = (int, float)


@dataclass(frozen=True)
class NotifierDoc:
    """RUNS/.notifier/status.json as a type: the notifier writes `to_dict()`, the console reads
    `from_dict` (every field type-checked: a wrong type reads as None or empty and is named in
    `problems`, never a crash)."""

    schema: int | None = None
    pid: int | None = None
    create_time: float | None = None
    started_at: str | None = None
    updated_at: str | None = None
    state: str | None = None
    error: str | None = None
    line: str | None = None
    pending: int | None = None
    sent: int | None = None
    target: str | None = None
    fingerprint: str | None = None  # of the webhook URL it serves, never the URL
    live_runs: int | None = None
    grace_s: float | None = None
    tests: dict[str, dict] = field(default_factory=dict)  # test request id -> outcome (sent / dropped, why)
    tests_queued: tuple[str, ...] = ()
    closing: str | None = None
    exited: str | None = None
    exited_at: str | None = None
    problems: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: object) -> "NotifierDoc":
        where = f"{HOME}/{STATUS}"
        if not isinstance(d, Mapping):
            return cls(problems=(f"{where}: not a JSON object",) if d is not None else ())
        probs: list[str] = []
        kw = {name: typed_field(d, name, kinds, probs, where) for name, kinds in _DOC_FIELDS.items()}
        tests = typed_field(d, "tests", (dict,), probs, where) or {}
        kw["tests"] = {k: v for k, v in tests.items() if isinstance(k, str) and isinstance(v, dict)}
        queued = typed_field(d, "tests_queued", (list,), probs, where) or []
        kw["tests_queued"] = tuple(q for q in queued if isinstance(q, str))
        return cls(**kw, problems=tuple(probs))

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "problems"}
        out["tests_queued"] = list(self.tests_queued)
        return out


_DOC_FIELDS = {
    "schema": (int,), "pid": (int,), "create_time": _NUM, "started_at": (str,), "updated_at": (str,), "state": (str,),
    "error": (str,), "line": (str,), "pending": (int,), "sent": (int,), "target": (str,), "fingerprint": (str,),
    "live_runs": (int,), "grace_s": _NUM, "closing": (str,), "exited": (str,), "exited_at": (str,),
}


# --- the lock: one notifier per runs folder ----------------------------------------------------


NotifierLocked = Locked


class NotifierLock(FileLock):
    """An exclusive flock on DIR/.notifier/lock, held for the notifier's life (the same lock as a
    run directory's); released by the kernel however the process ends."""

    def __init__(self, runs_dir: Path):
        super().__init__(home(runs_dir) / LOCK)


def lock_held(runs_dir: Path) -> bool:
    return lock_holder_at(home(runs_dir) / LOCK) is not None


# --- the ledger ---------------------------------------------------------------------------------


def read_ledger_keys(run_dir: Path) -> set[str]:
    """Keys of the posts Discord confirmed for this run (a torn last line is ignored)."""
    keys = set()
    for obj in read_ledger(run_dir):
        if obj.get("key"):
            keys.add(str(obj["key"]))
            if isinstance(obj.get("covers"), list):  # a catch-up listed these missed milestones
                keys.update(str(k) for k in obj["covers"])
    return keys


def read_ledger(run_dir: Path) -> list[dict]:
    """The ledger's lines, in the order the posts were confirmed."""
    out = []
    for line in _ledger_lines(run_dir):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _ledger_lines(run_dir: Path) -> list[str]:
    """posts.jsonl's lines, read bounded and only from a regular file: a FIFO is never opened
    for a blocking read (none when it is missing or cannot be read)."""
    try:
        data = read_regular(Path(run_dir) / LEDGER, LEDGER_MAX_BYTES)
    except (OSError, Unreadable):
        return []
    return data.decode("utf-8", errors="replace").splitlines()


# each file a post is read from (or, the ledger, written to), with the most a reader takes of it
POSTED_FROM = ((rd.MANIFEST, JSON_MAX_BYTES), (rd.STATUS, JSON_MAX_BYTES), (rd.ROWS, ROWS_MAX_BYTES),
               (LEDGER, LEDGER_MAX_BYTES))


def unreadable_files(run_dir: Path) -> list[str]:
    """One line per file a post of this run is read from or recorded in that is there but cannot
    be read ('status.json: is a FIFO (named pipe), not a regular file', a directory, a symlink
    loop, too large); [] when each can be read or is not there yet. A stat each, never an open."""
    out = []
    for name, max_bytes in POSTED_FROM:
        try:
            check_regular(Path(run_dir) / name, max_bytes)
        except FileNotFoundError:
            continue
        except Unreadable as exc:
            out.append(f"{name}: {exc.why}")
    return out


def append_ledger(run_dir: Path, entry: dict) -> None:
    """One line, flushed and fsynced: the post exists in Discord and must not be sent again."""
    append_line(Path(run_dir) / LEDGER, dict(sorted(entry.items())))


def mark_in_flight(run_dir: Path, key: str, kind: str) -> None:
    """Name the post about to be sent (raises OSError when it cannot be written: do not send)."""
    write_json_atomic(run_dir / INFLIGHT, {"key": key, "kind": kind, "at": utc_now("milliseconds")})


def record_post(run_dir: Path, key: str, kind: str, episodes: int, message_id: int, covers: tuple[str, ...] = ()) -> None:
    """The ledger line, then the in-flight marker goes. If the ledger cannot be written the
    marker stays, so a restarted notifier re-sends this post marked as a possible repeat."""
    try:
        entry = {"kind": kind, "key": key, "episodes": episodes,
                 "message_id": str(message_id), "at": utc_now("milliseconds")}
        if covers:
            entry["covers"] = list(covers)  # missed milestones this catch-up listed
        append_ledger(run_dir, entry)
    except OSError as exc:
        log.error("Discord post %s delivered but not recorded in %s: %s", key, run_dir / LEDGER, exc)
        return
    _unlink(run_dir / INFLIGHT)


def note_webhook_gone(run_dir: Path, *, status: int | None, tries: int, webhook: str | None, owed: list[str]) -> None:
    """One line in the run's ledger: these posts are owed and the webhook is gone (`webhook`
    is the masked URL)."""
    try:
        append_line(run_dir / LEDGER, {"event": "webhook_gone", "status": status, "tries": tries,
                                          "webhook": webhook, "owed": owed, "at": utc_now("milliseconds")})
    except OSError as exc:
        log.error("cannot write %s: %s", run_dir / LEDGER, exc)


class RunBook:
    """What this notifier knows of one run: keys in the ledger or the queue, and its rows as the run's
    read model folds them (prereg/rundir/fold.py), followed incrementally: a poll reads only what was
    appended to rows.jsonl since the last (prereg/rundir/tail.py), never the whole file again."""

    def __init__(self, run_dir: Path, every: int | None = None):
        self.run_dir = run_dir
        self.every = every
        self.keys: set[str] = set()
        self.maybe_sent: str | None = None  # key named by a leftover posts.inflight.json
        self.loaded = False
        self.sig: tuple | None = None  # the run directory's files (size, mtime) at the last poll
        self.over = False  # the run had ended at the last poll
        self.unreadable: str | None = None  # why its files could not be read at the last poll (no post then)
        self.gone_owed: tuple[str, ...] = ()  # what the last `webhook_gone` line said was owed
        self.plan: Plan | None = None
        self.tailer: RowsTailer | None = None
        self.fold = RowsFold(Plan(), every=every)
        self.rows: dict = {}  # a comparison run's counted rows by (arm, seed): its evidence reads them
        self.crossed: Crossed | None = None  # a crossed design (issue 48): every variant folded apart
        self.variant_folds: dict = {}  # variant -> its RowsFold (the read variant's is `fold`)

    def load(self) -> None:
        """The ledger's keys (a catch-up's `covers` included), and a leftover in-flight marker:
        gone if its post is in the ledger, else the post that may have been sent already."""
        self.keys |= read_ledger_keys(self.run_dir)
        marker = rd.read_json(self.run_dir / INFLIGHT) or {}
        key = marker.get("key")
        if key and key in self.keys:
            _unlink(self.run_dir / INFLIGHT)
        elif key:
            self.maybe_sent = key
            log.warning("Discord post %s of %s was in flight when the last notifier stopped, before it recorded "
                        "Discord's answer: it is sent again, marked as a possible repeat", key, self.run_dir.name)
        self.loaded = True

    def follow_rows(self, manifest: rd.Manifest | None) -> RowsFold:
        """Fold in what rows.jsonl gained since the last poll (under the manifest's plan: its seeds, a
        comparison run's arms); a file truncated or replaced, or a plan that changed, is read again."""
        plan, crossed = Plan.of(manifest), Crossed.of(manifest)
        if plan != self.plan or crossed != self.crossed or self.tailer is None:
            self._restart(plan, crossed)
        batch = self.tailer.poll()
        if batch.restarted:
            self._restart(plan, crossed)
            batch = self.tailer.poll()
        self.tailer.release()  # no descriptor held per run between polls
        keep = self.rows.__setitem__ if plan.arms else None
        self.fold.add_many(batch.rows, on_row=(lambda key, seed, row, _part, _replaced: keep((key, seed), row))
                           if keep is not None else None)
        if self.variant_folds:
            feed_variants(self.variant_folds, batch.rows, self.fold)
        return self.fold

    def variant_stories(self) -> tuple:
        """A crossed design's live reads per arm (prereg.stats.variants_live.live_stories); () for one scene."""
        return live_stories(self.crossed, self.variant_folds) if self.crossed is not None else ()

    def _restart(self, plan: Plan, crossed: Crossed | None = None) -> None:
        if self.tailer is not None:
            self.tailer.close()
        self.plan, self.crossed, self.tailer = plan, crossed, RowsTailer(self.run_dir / rd.ROWS)
        self.fold, self.rows = RowsFold(plan, every=self.every), {}
        self.variant_folds = {v: self.fold if v == plan.variant else RowsFold(p)
                              for v, p in crossed.plans(plan).items()} if crossed is not None else {}

    def close(self) -> None:
        if self.tailer is not None:
            self.tailer.close()


SIGNED = (rd.MANIFEST, rd.STATUS, rd.ROWS, rd.RESULTS, rd.CHART, rd.HEARTBEAT, LEDGER, rd.REAL)


def run_signature(run_dir: Path) -> tuple:
    """(size, mtime, inode) of each file a post is read from: unchanged, a finished run owes nothing new
    (a file swapped for a FIFO or a directory changes it too)."""
    out = []
    base = str(run_dir)
    for name in SIGNED:
        try:
            st = os.stat(os.path.join(base, name))
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
