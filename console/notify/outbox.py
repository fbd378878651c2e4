"""Scheduling: which post is owed when, and the queue they wait in, in the order they go.

`Outbox.poll_run(run_dir)` reads a run directory, works out which posts it is owed and has not
had (console/notify/messages.py against the run's ledger: an update every ~10 episodes, the
alerts, the end posts, the catch-up of what was missed while no notifier ran) and queues them.
A run that has ended folds the posts still queued for it (Discord was down, or the webhook gone)
into its end post, marked late. Test posts wait in the same queue. When the webhook is gone
(`mark_gone`) each owed run's ledger says which posts it is owed, and says it again whenever that
changes. Nothing here touches the network: console/notify/courier.py sends the head of the queue.

One lock guards the queue and, through `changed`, wakes whoever waits on it or on the delivery
state (the courier changes its state under the same lock): a waiter sees both at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from console.notify import ledger
from console.notify import messages as msgs
from console.notify.ledger import RunBook, read_ledger_keys, run_signature
from console.notify.snapshot import EVERY_EPISODES, read_snapshot
from console.notify.wording import END_KINDS, RESULTS, Post
from prereg import rundir as rd
from prereg.rundir.files import mtime_age_s, utc_now

log = logging.getLogger(__name__)

# The note on a post found in flight (ledger.INFLIGHT names it, the ledger does not): the notifier
# that sent it stopped (killed, or the machine went down) before it recorded Discord's answer.
MAYBE_REPEAT = ("may repeat: the notifier that sent this post stopped before recording whether "
                "Discord received it")


@dataclass
class Item:
    """One queued post."""

    run_dir: Path | None  # None for a test post: no ledger
    post: Post
    plain: bool = False  # Discord rejected the embed as malformed: send it as plain text
    test_id: str | None = None  # a test post: its outcome goes to Outbox.test_results
    unanswered: bool = False  # an earlier try went out and got no answer: Discord may have it already

    def what(self) -> str:
        """'post update:10 of <run>' / 'post test' for the log."""
        return f"post {self.post.key}" + (f" of {self.run_dir.name}" if self.run_dir else "")


@dataclass(frozen=True)
class Gone:
    """The webhook is gone: Discord answered `status` (401/403/404) `tries` times in a row."""

    status: int
    tries: int
    webhook: str | None  # the masked URL
    text: str  # the state's error, starting with delivery.WEBHOOK_GONE


class Outbox:
    """The posts owed, queued in the order they go; what each run is owed and has had."""

    def __init__(self, *, every_episodes: int = EVERY_EPISODES, catch_up_s: float = msgs.CATCH_UP_S):
        self.every_episodes = every_episodes
        self.catch_up_s = catch_up_s
        self.lock = threading.Lock()  # the queue (and the courier's state); never held during file I/O
        self.changed = threading.Condition(self.lock)  # notified when the queue or the state changes
        self._poll_lock = threading.Lock()  # one poll at a time; guards the run books
        self.queue: deque[Item] = deque()
        self._runs: dict[Path, RunBook] = {}
        self.gone: Gone | None = None  # set by mark_gone: nothing is sent until clear_gone
        self.sending: Item | None = None  # the item whose request is on the wire (set by the courier)
        self.test_results: dict[str, dict] = {}  # test id -> {state: sent|dropped, at, message_id|reason}
        self.closed = False  # no more posts are queued

    # --- what is owed ------------------------------------------------------------------------

    def poll_run(self, run_dir: Path | str) -> list[str]:
        """Queue the posts this run is owed and has not had; returns their keys. Reads only the run
        directory (rows.jsonl only where it grew). Safe to call often and from any thread."""
        if self.closed:
            return []
        run_dir = Path(run_dir)
        with self._poll_lock:
            book = self._book(run_dir)
            sig = run_signature(run_dir)
            if book.over and sig == book.sig:
                return []  # a finished run that has not changed owes nothing new (nor became unreadable)
            if self._unreadable(book):
                return []
            if not book.loaded:
                book.load()
            contract = rd.read_snapshot(run_dir)
            if contract.status is not None and contract.status.final and msgs.forgotten(
                    True, book.keys, mtime_age_s(run_dir / rd.STATUS), self.catch_up_s):
                book.sig, book.over = sig, True  # ended long ago, never posted about: owed nothing, rows unread
                return []
            fold = book.follow_rows(contract.manifest)
            snap = read_snapshot(run_dir, contract=contract, fold=fold, rows=tuple(book.rows.values()),
                                 every=self.every_episodes, variants=book.variant_stories())
            book.sig, book.over = sig, snap.over
            posts = msgs.due_posts(snap, book.keys, every_episodes=self.every_episodes,
                                   catch_up_s=self.catch_up_s)
            posts = [p.with_note(MAYBE_REPEAT) if p.key == book.maybe_sent else p for p in posts]
            book.keys.update(p.key for p in posts)
            with self.lock:
                if snap.over:
                    posts = self._fold_owed(run_dir, posts)
                self.queue.extend(Item(run_dir, p) for p in posts)
                self.changed.notify_all()
                gone, owed = self.gone, (self._owed_locked(run_dir) if self.gone else ())
            if owed and owed != book.gone_owed:
                self._note_gone(book, owed, gone)
        return [p.key for p in posts]

    def _book(self, run_dir: Path) -> RunBook:
        return self._runs.setdefault(run_dir, RunBook(run_dir, every=self.every_episodes))

    def _fold_owed(self, run_dir: Path, posts: list[Post]) -> list[Post]:
        """The run has ended: the posts still queued for it that are not end posts (a launch, updates,
        alerts that could not be sent) leave the queue and fold into its end post, marked late. Called
        with the lock held; the one on the wire is left to finish."""
        stale = [i for i in self.queue if i.run_dir == run_dir and i.post.kind not in END_KINDS and i is not self.sending]
        if not stale:
            return posts
        for item in stale:
            self.queue.remove(item)
        owed = [i.post for i in stale]
        ends = [i for i, p in enumerate(posts) if p.kind in END_KINDS and p.kind != RESULTS] or \
               [i for i, p in enumerate(posts) if p.kind == RESULTS]
        if ends:
            posts = list(posts)
            posts[ends[0]] = msgs.fold_into_end(posts[ends[0]], owed)
            return posts
        queued = next((i for i in self.queue if i.run_dir == run_dir and i.post.kind in END_KINDS
                       and i is not self.sending), None)
        if queued is not None:
            queued.post = msgs.fold_into_end(queued.post, owed)
        else:  # nothing to fold into (the end posts went out already): they stay owed, sent as they are
            self.queue.extend(stale)
        return posts

    def _owed_locked(self, run_dir: Path) -> tuple[str, ...]:
        """The keys owed to this run now: every post queued for it and what each stands for."""
        return tuple(dict.fromkeys(k for i in self.queue if i.run_dir == run_dir for k in (i.post.key, *i.post.covers)))

    @staticmethod
    def _unreadable(book: RunBook) -> bool:
        """Whether this run's files cannot be read now (a FIFO, a directory, a symlink loop): then
        it gets no post, since one would say '0 successes' of rows it cannot read or 'gates: none'
        of a manifest it cannot read. Said once in the log; its posts stay owed and go once the
        files can be read again."""
        why = "; ".join(ledger.unreadable_files(book.run_dir)) or None
        if why != book.unreadable:
            if why:
                log.warning("Discord: no post for %s while its files cannot be read: %s", book.run_dir.name, why)
            else:
                log.info("Discord: the files of %s can be read again", book.run_dir.name)
            book.unreadable = why
        return why is not None

    def still_owed(self, item: Item) -> bool:
        """Whether the head of the queue is still to be sent; it leaves the queue if not: another
        notifier recorded it already, its run directory is gone, or it is a test post dropped meanwhile."""
        run_dir, post = item.run_dir, item.post
        if run_dir is not None and post.key in read_ledger_keys(run_dir):
            self.pop(item)  # another notifier got there first
            return False
        if run_dir is not None and not run_dir.is_dir():
            log.warning("Discord post %s dropped: its run directory is gone", post.key)
            self.pop(item)
            return False
        return True

    # --- the queue ---------------------------------------------------------------------------

    def add_test(self, item: Item) -> None:
        with self.lock:
            self.queue.append(item)
            self.changed.notify_all()

    def head(self) -> Item | None:
        with self.lock:
            return self.queue[0] if self.queue else None

    def pop(self, item: Item) -> None:
        with self.lock:
            self.pop_locked(item)

    def pop_locked(self, item: Item) -> None:
        if self.queue and self.queue[0] is item:
            self.queue.popleft()
        self.changed.notify_all()

    @property
    def pending(self) -> int:
        with self.lock:
            return len(self.queue)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the queue is empty; True if it emptied in time."""
        return self.wait_empty(time.monotonic() + timeout, lambda: True)

    def wait_empty(self, deadline: float, worth_waiting: Callable[[], bool]) -> bool:
        """Wait until the queue is empty, the monotonic `deadline` passes or `worth_waiting()` (called
        with the lock held, on every change) turns false; True if it emptied."""
        with self.lock:
            while self.queue and worth_waiting():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            return not self.queue

    def drop_tests(self, reason: str) -> None:
        """Every test post still queued (not the one on the wire) leaves, reported dropped for `reason`."""
        with self.lock:
            for item in [i for i in self.queue if i.test_id is not None]:
                if item is not self.sending:
                    self.queue.remove(item)
                    self.test_results[item.test_id] = {"state": "dropped", "reason": reason, "at": utc_now()}
            self.changed.notify_all()

    def dropped_meanwhile(self, item: Item) -> bool:
        """A test post dropped after it reached the head (close, webhook gone) is not sent after all;
        otherwise it is marked as the one on the wire. Called by the courier just before the send."""
        with self.lock:
            if item.test_id is not None and item.test_id in self.test_results:
                self.pop_locked(item)
                return True
            self.sending = item
            return False

    # --- a gone webhook ----------------------------------------------------------------------

    def mark_gone(self, gone: Gone, publish: Callable[[], None]) -> None:
        """The webhook is gone: a line in every owed run's ledger (the posts it is owed), then
        `publish()` (under the lock: the state the console reads) and `gone` set, then every queued
        test post dropped. The ledger lines come first, so whoever sees `gone` finds them; the poll
        lock keeps a poll from queuing a post between the owed list and `gone`."""
        with self._poll_lock:
            with self.lock:
                owed = {run_dir: self._owed_locked(run_dir) for run_dir in dict.fromkeys(
                    i.run_dir for i in self.queue if i.run_dir is not None)}
            for run_dir, keys in owed.items():
                self._note_gone(self._book(run_dir), keys, gone)
            with self.lock:
                self.gone = gone
                publish()
                self.changed.notify_all()
        self.drop_tests(gone.text)

    def clear_gone(self) -> None:
        """A new webhook URL: the posts owed go again (called with the lock held)."""
        self.gone = None
        for book in self._runs.values():
            book.gone_owed = ()

    @staticmethod
    def _note_gone(book: RunBook, keys: tuple[str, ...], gone: Gone | None) -> None:
        """A line in the run's ledger: these posts are owed and the webhook is gone. Written again
        whenever what is owed changes (a post queued since, a run that ended), so the last line counts
        every post owed, never only those queued when the webhook went."""
        book.gone_owed = tuple(keys)
        ledger.note_webhook_gone(book.run_dir, status=gone.status if gone else None, tries=gone.tries if gone else 0,
                                 webhook=gone.webhook if gone else None, owed=list(keys))
