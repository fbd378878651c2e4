"""Delivery to the webhook: the queue, the one retry policy, the sender thread.

It runs inside the detached notifier process (`console/notify/service.py`, one per runs folder),
which calls `Notifier.poll_run(run_dir)` every couple of seconds; the console never posts
itself. `poll_run` reads the run directory, works out which posts are owed
(`console/notify/messages.py`, against the ledger: `console/notify/ledger.py`) and queues them.
One background thread runs an asyncio loop that sends the queue in order with the real
discord.py webhook client. A post that fails stays at the head of the queue and is retried with
capped exponential backoff (`RetryPolicy`; discord.py itself waits out rate limits), so an
outage delays posts and loses none.

States: off (no webhook) | unknown (until Discord first answers; with `validate`, a GET of the
webhook at start answers at once) | ok | retrying | failing. A 401/403/404 is tried at most
`gone_after` (3) times, then posting stops with `failing: webhook gone…` in the state and a
`webhook_gone` line in each owed run's ledger, until `set_url` gives a new URL. The states and their words are console/notify/delivery.py's.

Crash window. discord.py's Webhook.send takes no nonce (only channel sends have
`enforce_nonce`), so Discord cannot deduplicate a re-sent webhook message. `close()` waits for
a send already on the wire up to the HTTP timeout, so a stopped notifier records its answer.
A process killed outright while a post is marked in flight (ledger.mark_in_flight, before the
send, until its ledger line), its answer pending or not yet recorded, may leave it delivered but
unrecorded: the next notifier re-sends it marked MAYBE_REPEAT. A try that went out and got no
answer (the timeout, a dropped connection) is retried marked NO_ANSWER_REPEAT.

Test posts: `send_test(test_id)`; the outcome (sent with the message id, or dropped with the
reason: posts off, webhook gone, the notifier stopped first) lands in `test_results`.

Secrets: every error text is scrubbed of the webhook (`console/notify/webhook.py`).
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from console.notify import ledger, webhook
from console.notify import messages as msgs
from console.notify.delivery import FAILING, OFF, OK, RETRY, RETRYING, UNKNOWN, WEBHOOK_GONE, NotifierState, RetryPolicy
from console.notify.ledger import INFLIGHT, RunBook, read_ledger_keys, run_signature
from console.notify.snapshot import EVERY_EPISODES, read_snapshot
from console.notify.webhook import mask_webhook_url, quiet_discord_logging, scrub, webhook_setting
from console.notify.wording import CHART_NAME, END_KINDS, RESULTS, Post, make_test_post
from prereg import rundir as rd

log = logging.getLogger(__name__)

# The note on a post found in flight (ledger.INFLIGHT names it, the ledger does not): the notifier
# that sent it stopped (killed, or the machine went down) before it recorded Discord's answer.
MAYBE_REPEAT = ("may repeat: the notifier that sent this post stopped before recording whether "
                "Discord received it")
# The note on a retry of a post whose earlier try went out and got no answer (the HTTP timeout, a
# dropped connection): Discord may have created it, and without a nonce it cannot tell us.
NO_ANSWER_REPEAT = "may repeat: an earlier try of this post got no answer from Discord"


class Notifier:
    """The Discord side of the console: poll runs, queue posts, deliver them in order."""

    def __init__(
        self,
        url: str | None,
        *,
        every_episodes: int = EVERY_EPISODES,
        retry: RetryPolicy = RETRY,
        catch_up_s: float = msgs.CATCH_UP_S,
        validate: bool = False,
        config_error: str | None = None,
    ):
        quiet_discord_logging(url)
        self._url = url
        self.every_episodes = every_episodes
        self.retry = retry
        self.catch_up_s = catch_up_s
        self.validate = validate  # a GET of the webhook when the sender starts: ok/gone before any post
        self.masked_url = mask_webhook_url(url) if url else None

        self._lock = threading.Lock()  # the queue and the state; never held during file I/O
        self._poll_lock = threading.Lock()  # one poll at a time; guards the run books
        self._changed = threading.Condition(self._lock)  # notified when the queue or state changes
        self._queue: deque[_Item] = deque()
        self._runs: dict[Path, RunBook] = {}
        self._state = UNKNOWN if url else OFF  # unknown until Discord first answers
        self._last_error = config_error
        self._sent = 0
        self._failures = 0
        self._gone_tries = 0
        self._gone = False
        self._sending: _Item | None = None  # the item whose request is on the wire
        self._url_version = 0
        self.test_results: dict[str, dict] = {}  # test id -> {state: sent|dropped, at, message_id|reason}
        self._closing = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    @classmethod
    def from_env(cls, *, environ=os.environ, **kw) -> "Notifier":
        """A notifier from FONTAINE_DISCORD_WEBHOOK_URL / _FILE; `off` (with the reason) otherwise."""
        url, error = webhook_setting(environ)
        if error:
            log.warning("Discord posts off: %s", error)
        return cls(url, config_error=error, **kw)

    def __repr__(self) -> str:
        return f"<Notifier {self._state} {self.masked_url or 'no webhook'}>"

    # --- state, for the console ------------------------------------------------------------

    @property
    def state(self) -> NotifierState:
        """off | ok | retrying | failing, with .last_error, .pending, .line() for the status bar."""
        with self._lock:
            return NotifierState(self._state, self._last_error, len(self._queue), self._sent,
                                 self.masked_url, self.setup_hint)

    @property
    def last_error(self) -> str | None:
        return self._last_error

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def setup_hint(self) -> str | None:
        return webhook.SETUP_HINT if self._url is None else None

    def status(self) -> NotifierState:
        return self.state

    # --- what the console calls ------------------------------------------------------------

    def poll_run(self, run_dir: Path | str) -> list[str]:
        """Queue the posts this run is owed and has not had; returns their keys. Never blocks on I/O
        to Discord; reads only the run directory (rows.jsonl only where it grew). Safe to call often
        and from any thread."""
        if self._url is None or self._closing:
            return []
        run_dir = Path(run_dir)
        with self._poll_lock:
            book = self._runs.setdefault(run_dir, RunBook(run_dir, every=self.every_episodes))
            sig = run_signature(run_dir)
            if book.over and sig == book.sig:
                return []  # a finished run that has not changed owes nothing new (nor became unreadable)
            if self._unreadable(book):
                return []
            if not book.loaded:
                book.load()
            contract = rd.read_snapshot(run_dir)
            if contract.status is not None and contract.status.final and msgs.forgotten(
                    True, book.keys, rd.mtime_age_s(run_dir / rd.STATUS), self.catch_up_s):
                book.sig, book.over = sig, True  # ended long ago, never posted about: owed nothing, rows unread
                return []
            fold = book.follow_rows(contract.manifest)
            snap = read_snapshot(run_dir, contract=contract, fold=fold, rows=tuple(book.rows.values()),
                                 every=self.every_episodes)
            book.sig, book.over = sig, snap.over
            posts = msgs.due_posts(snap, book.keys, every_episodes=self.every_episodes,
                                   catch_up_s=self.catch_up_s)
            posts = [p.with_note(MAYBE_REPEAT) if p.key == book.maybe_sent else p for p in posts]
            book.keys.update(p.key for p in posts)
            with self._lock:
                if snap.over:
                    posts = self._fold_owed(run_dir, posts)
                self._queue.extend(_Item(run_dir, p) for p in posts)
                self._changed.notify_all()
                owed = self._owed_locked(run_dir) if self._gone else ()
            if owed and owed != book.gone_owed:
                self._note_gone(book, owed)
        if posts:
            self._kick()
        return [p.key for p in posts]

    def _fold_owed(self, run_dir: Path, posts: list[Post]) -> list[Post]:
        """The run has ended: the posts still queued for it that are not end posts (a launch, updates,
        alerts that could not be sent) leave the queue and fold into its end post, marked late. Called
        with the queue's lock held; the one on the wire is left to finish."""
        stale = [i for i in self._queue if i.run_dir == run_dir and i.post.kind not in END_KINDS and i is not self._sending]
        if not stale:
            return posts
        for item in stale:
            self._queue.remove(item)
        owed = [i.post for i in stale]
        ends = [i for i, p in enumerate(posts) if p.kind in END_KINDS and p.kind != RESULTS] or \
               [i for i, p in enumerate(posts) if p.kind == RESULTS]
        if ends:
            posts = list(posts)
            posts[ends[0]] = msgs.fold_into_end(posts[ends[0]], owed)
            return posts
        queued = next((i for i in self._queue if i.run_dir == run_dir and i.post.kind in END_KINDS
                       and i is not self._sending), None)
        if queued is not None:
            queued.post = msgs.fold_into_end(queued.post, owed)
        else:  # nothing to fold into (the end posts went out already): they stay owed, sent as they are
            self._queue.extend(stale)
        return posts

    def _owed_locked(self, run_dir: Path) -> tuple[str, ...]:
        """The keys owed to this run now: every post queued for it and what each stands for."""
        return tuple(dict.fromkeys(k for i in self._queue if i.run_dir == run_dir for k in (i.post.key, *i.post.covers)))

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

    def send_test(self, test_id: str | None = None, host: str | None = None) -> bool:
        """Queue a test post (also retries a failing queue now). False when posts are off or the
        webhook is gone (then `test_results[test_id]` says dropped, and why). Its outcome, sent
        or dropped, lands in `test_results[test_id]`."""
        test_id = test_id or rd.utc_now("milliseconds")
        why = ("Discord posts are off" if self._url is None else "the notifier is stopping" if self._closing
               else self._last_error if self._gone else None)
        if why:
            self.test_results[test_id] = {"state": "dropped", "reason": why, "at": rd.utc_now()}
            return False
        at = rd.utc_now()
        with self._lock:
            self._queue.append(_Item(None, make_test_post(host or socket.gethostname(), at), test_id=test_id))
            self._failures = 0  # a test post is a request to try now
            self._changed.notify_all()
        self._kick()
        return True

    def set_url(self, url: str | None) -> None:
        """A new webhook URL (the old one is gone, or the user changed it): posting resumes."""
        if url == self._url:
            return
        quiet_discord_logging(url)
        with self._lock:
            self._url, self.masked_url = url, (mask_webhook_url(url) if url else None)
            self._gone, self._gone_tries, self._failures = False, 0, 0
            for book in self._runs.values():
                book.gone_owed = ()
            self._state, self._last_error = (UNKNOWN if url else OFF), None
            self._url_version += 1
            self._changed.notify_all()
        self._kick()

    def start(self) -> None:
        """Start the sender now (it otherwise starts with the first post): with `validate`, the
        state turns ok or failing from a GET of the webhook before anything is owed."""
        if self._url is not None:
            self._kick()

    @property
    def gone(self) -> bool:
        return self._gone

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the queue is empty; True if it emptied in time."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def close(self, timeout: float = 5.0) -> bool:
        """Flush the queue for up to `timeout` (not at all while Discord is failing: quitting must
        not hang), then stop the sender. A send already on the wire is waited for up to the HTTP
        timeout, so that its answer is in the ledger and the next notifier does not send it
        again. True if nothing was left. Posts left are owed by the run directories and sent by
        the next notifier; test posts left are reported dropped in `test_results`."""
        if self._closing or self._thread is None:
            self._closing = True
            self._drop_tests("the notifier stopped before it was sent")
            return not self._queue
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue and self._state in (OK, UNKNOWN) and not self._gone and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            flushed = not self._queue
        self._closing = True
        if self._loop is not None and self._thread is not None:
            self._kick()
            wait = max(1.0, timeout)
            if self._sending is not None:
                wait = max(wait, self.retry.request_timeout_s + 1.0)
                log.info("Discord: waiting up to %.0f s for the post on the wire (%s)", wait, self._sending.post.key)
            self._thread.join(timeout=wait)
            if self._thread.is_alive() and self._sending is not None:
                log.error("Discord: no answer for %s within %.0f s; %s names it for the next notifier",
                          self._sending.post.key, wait, INFLIGHT)
        self._drop_tests("the notifier stopped before it was sent")
        return flushed

    def _drop_tests(self, reason: str) -> None:
        with self._lock:
            for item in [i for i in self._queue if i.test_id is not None]:
                if item is not self._sending:
                    self._queue.remove(item)
                    self.test_results[item.test_id] = {"state": "dropped", "reason": reason, "at": rd.utc_now()}
            self._changed.notify_all()

    # --- the sender thread -----------------------------------------------------------------

    def _kick(self) -> None:
        """Start the sender on first use; wake it (from any thread) when there is news."""
        with self._lock:
            if self._thread is None and not self._closing:
                ready = threading.Event()
                self._thread = threading.Thread(target=self._run_loop, args=(ready,),
                                                name="fontaine-discord", daemon=True)
                self._thread.start()
                ready.wait(5.0)
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:
                pass  # the loop has already stopped

    def _run_loop(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._wake = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._serve())
        except Exception as exc:  # a bug: say so without the URL, and let the next console catch up
            log.error("Discord sender stopped: %s", self._scrub(f"{type(exc).__name__}: {exc}"))
            self._set_state(FAILING, self._scrub(f"sender stopped: {type(exc).__name__}: {exc}"))
        finally:
            loop.close()

    async def _serve(self) -> None:
        import aiohttp
        import discord

        timeout = aiohttp.ClientTimeout(total=self.retry.request_timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            hook, version, checked = None, -1, False
            while not self._closing:
                if version != self._url_version:  # the first pass, or a new URL
                    version, checked = self._url_version, not self.validate
                    hook = discord.Webhook.from_url(self._url, session=session) if self._url else None
                if hook is None or self._gone:
                    await self._sleep(None)  # until the URL changes (or close)
                    continue
                if not checked:
                    delay = await self._check(hook, discord)
                    checked = delay == 0.0
                    if delay:
                        await self._sleep(delay)
                    continue
                with self._lock:
                    item = self._queue[0] if self._queue else None
                if item is None:
                    await self._sleep(None)
                    continue
                delay = await self._attempt(hook, item, discord)
                if delay:
                    await self._sleep(delay)

    async def _check(self, hook, discord) -> float:
        """GET the webhook (cheap; posts nothing): the state is ok or failing before any post."""
        try:
            await hook.fetch()
        except Exception as exc:  # noqa: BLE001 - classified like a failed post
            return self._failed(None, exc, discord)
        self._answered_ok()
        return 0.0

    def _answered_ok(self) -> None:
        with self._lock:
            self._failures = self._gone_tries = 0
        self._set_state(OK, None)

    async def _sleep(self, seconds: float | None) -> None:
        """Wait for news (or `seconds`): a new post, a test post, close()."""
        self._wake.clear()
        if self._closing:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _attempt(self, hook, item: _Item, discord) -> float:
        """Send the head of the queue once; 0 on success, else how long to wait before retrying."""
        post, run_dir = item.post, item.run_dir
        if run_dir is not None and post.key in read_ledger_keys(run_dir):
            self._pop(item)  # another console got there first
            return 0.0
        if run_dir is not None:
            if not run_dir.is_dir():
                log.warning("Discord post %s dropped: its run directory is gone", post.key)
                self._pop(item)
                return 0.0
            try:
                ledger.mark_in_flight(run_dir, post.key, post.kind)
            except OSError as exc:
                return self._failed(item, exc, discord, f"cannot write {INFLIGHT} in {run_dir}")
        # discord.py's Webhook.send has no nonce (only channel sends do, via enforce_nonce), so
        # Discord cannot deduplicate a re-sent webhook message: we rely on the marker above and on
        # waiting for this answer at shutdown (close), and keep the message id wait=True returns.
        with self._lock:  # a test post dropped meanwhile (close, webhook gone) is not sent after all
            if item.test_id is not None and item.test_id in self.test_results:
                self._pop_locked(item)
                return 0.0
            self._sending = item
        try:
            message = await hook.send(**self._render(item, discord), wait=True,
                                      allowed_mentions=discord.AllowedMentions.none())
        except Exception as exc:  # noqa: BLE001 - HTTP errors, connection errors (OSError), timeouts, bugs: retried, never dropped
            self._sending = None
            item.unanswered = item.unanswered or _maybe_received(exc, discord)
            return self._failed(item, exc, discord)
        if run_dir is not None:
            ledger.record_post(run_dir, post.key, post.kind, post.episodes, message.id, post.covers)
        self._sending = None
        if item.test_id is not None:
            self.test_results[item.test_id] = {"state": "sent", "message_id": str(message.id), "at": rd.utc_now()}
        with self._lock:
            self._sent += 1
        self._answered_ok()
        self._pop(item)
        log.info("Discord: posted %s for %s", post.key, post.run_id or "test")
        return 0.0

    def _render(self, item: _Item, discord) -> dict:
        post = item.post.with_note(NO_ANSWER_REPEAT) if item.unanswered else item.post
        if item.plain:
            return {"content": post.as_text()}
        embed = discord.Embed(title=post.title, description=post.description, colour=post.colour)
        embed.set_footer(text=post.footer)
        kw = {"content": post.content, "embed": embed}
        if post.image:
            embed.set_image(url=f"attachment://{CHART_NAME}")
            kw["file"] = discord.File(io.BytesIO(post.image), filename=CHART_NAME)
        return kw

    def _failed(self, item: _Item | None, exc: BaseException, discord, what: str | None = None) -> float:
        """`item` None: the webhook check at start failed."""
        status = getattr(exc, "status", None)
        with self._lock:
            self._failures += 1
            failures = self._failures
        delay = self.retry.delay(failures)
        failing = failures >= self.retry.failing_after
        if isinstance(exc, discord.HTTPException):
            text = f"Discord answered {status}: {exc.text or exc.response.reason}"
            if status == 400 and item is not None and not item.plain:
                item.plain = True  # one bad embed must not block the queue: retry as plain text now
                delay = 0.0
            elif status == 429:
                delay = max(delay, _retry_after(exc))
            elif status in (401, 403, 404):
                with self._lock:
                    self._gone_tries += 1
                    tries = self._gone_tries
                if tries >= self.retry.gone_after:
                    self._give_up(status, tries)
                    return 0.0
                text = (f"Discord answered {status}: the webhook was deleted or the URL is wrong; set a new one "
                        f"(try {tries} of {self.retry.gone_after})")
                failing = True  # at once: retrying will not mend it (the log keeps the true count in a row)
        elif what:
            text = f"{what}: {exc}"
        else:
            text = f"cannot reach Discord: {type(exc).__name__}: {exc}"
        text = self._scrub(text)[:300]
        state = FAILING if failing else RETRYING
        # every failed attempt is one line in notifier.log (a repeat of the same error too): the
        # log is where a user counts the attempts and reads the gaps between them
        what = f"post {item.post.key}" + (f" of {item.run_dir.name}" if item.run_dir else "") if item else "webhook check"
        log.warning("Discord %s not delivered (failure %d in a row: %s); %s", what, failures, text,
                    "retrying now as plain text" if delay == 0.0 else f"retrying in {delay:.1f} s")
        self._set_state(state, text)
        return delay

    def _give_up(self, status: int, tries: int) -> None:
        """The webhook is gone (401/403/404 `tries` times in a row): stop posting until the URL
        changes, say so in every owed run's ledger, in the state, and to each queued test post. The
        ledger lines come first: whoever sees `gone` (the status file the console reads) finds them.
        The poll lock keeps a poll from queuing a post between the owed list and `gone`."""
        text = f"{WEBHOOK_GONE}: Discord answered {status} {tries} times; posting stopped until the webhook URL changes"
        with self._poll_lock:
            with self._lock:
                self._gone_status = status
                owed = {run_dir: self._owed_locked(run_dir) for run_dir in dict.fromkeys(
                    i.run_dir for i in self._queue if i.run_dir is not None)}
            log.error("Discord: %s", text)
            for run_dir, keys in owed.items():
                self._note_gone(self._runs.setdefault(run_dir, RunBook(run_dir, every=self.every_episodes)), keys)
            with self._lock:
                self._gone = True
                self._state, self._last_error = FAILING, text
                self._changed.notify_all()
        self._drop_tests(text)

    def _note_gone(self, book: RunBook, keys: tuple[str, ...]) -> None:
        """A line in the run's ledger: these posts are owed and the webhook is gone. Written again
        whenever what is owed changes (a post queued since, a run that ended), so the last line counts
        every post owed, never only those queued when the webhook went."""
        book.gone_owed = tuple(keys)
        ledger.note_webhook_gone(book.run_dir, status=getattr(self, "_gone_status", None), tries=self._gone_tries,
                                 webhook=self.masked_url, owed=list(keys))

    def _pop(self, item: _Item) -> None:
        with self._lock:
            self._pop_locked(item)

    def _pop_locked(self, item: _Item) -> None:
        if self._queue and self._queue[0] is item:
            self._queue.popleft()
        self._changed.notify_all()

    def _set_state(self, state: str, error: str | None) -> None:
        with self._lock:
            self._state, self._last_error = state, error
            self._changed.notify_all()

    def _scrub(self, text: str) -> str:
        """Any trace of the webhook (its URL, token, id) replaced by the masked form."""
        return scrub(self._url, text)


@dataclass
class _Item:
    run_dir: Path | None  # None for a test post: no ledger
    post: Post
    plain: bool = False  # Discord rejected the embed as malformed: send it as plain text
    test_id: str | None = None  # a test post: its outcome goes to Notifier.test_results
    unanswered: bool = False  # an earlier try went out and got no answer: Discord may have it already


def _maybe_received(exc: BaseException, discord) -> bool:
    """A try that may have reached Discord though no answer came back: a timeout or a dropped
    connection, not an HTTP answer (Discord refused it) nor a connection never made."""
    import aiohttp

    return not isinstance(exc, (discord.HTTPException, aiohttp.ClientConnectorError))


def _retry_after(exc) -> float:
    """A 429 that discord.py did not retry itself (no Via header): honour its Retry-After."""
    try:
        return float(exc.response.headers.get("Retry-After", 0.0))
    except (TypeError, ValueError, AttributeError):
        return 0.0
