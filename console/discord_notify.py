"""Posts a run's progress to a Discord channel through a webhook: the queue, the sender, the ledger.

It runs inside the detached notifier process (`console/notifier.py`, one per runs folder), which
calls `Notifier.poll_run(run_dir)` every couple of seconds; the console never posts itself. It
reads the run directory, works out which posts are owed (`console/discord_messages.py`) and
queues them. One background thread runs an asyncio loop that sends the queue in order with the
real discord.py webhook client. A post that fails stays at the head of the queue and is retried
with capped exponential backoff (discord.py itself waits out rate limits), so an outage delays
posts and loses none.

States: off (no webhook) | unknown (until Discord first answers; with `validate`, a GET of the
webhook at start answers at once) | ok | retrying | failing. A 401/403/404 is tried at most
`gone_after` (3) times, then posting stops with `failing: webhook gone…` in the state and a
`webhook_gone` line in each owed run's ledger, until `set_url` gives a new URL.

The ledger, RUN_DIR/posts.jsonl, gets one line per post only after Discord confirmed it (with
the message id, and `covers` for the missed milestones a catch-up listed), flushed and fsynced,
and a restarted notifier rebuilds what is owed from the run directory and the ledger: nothing
is posted twice and missed posts are caught up.

Crash window. discord.py's Webhook.send takes no nonce (only channel sends have
`enforce_nonce`), so Discord cannot deduplicate a re-sent webhook message. `close()` waits for
a send already on the wire up to the HTTP timeout, so a stopped notifier records its answer.
Only a process killed outright between Discord's answer and the ledger line leaves a post
delivered but unrecorded: before each send, RUN_DIR/posts.inflight.json names the post being
sent; it is removed once the ledger line is on disk. A notifier that finds it for a post not in
the ledger sends that post again, marked as a possible repeat (a rare repeat beats a lost post).

Test posts: `send_test(test_id)`; the outcome (sent with the message id, or dropped with the
reason: posts off, webhook gone, the notifier stopped first) lands in `test_results`.

Secrets. The webhook URL carries its token: it is never printed, logged or written. Only the
masked form (`mask_webhook_url`) is shown, every error text is scrubbed of it, and discord.py's
DEBUG logging, which prints the full URL, is held at WARNING.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import socket
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from console import discord_messages as msgs
from prereg import rundir as rd
from prereg.rows import read_rows

log = logging.getLogger(__name__)

ENV_URL = "FONTAINE_DISCORD_WEBHOOK_URL"
ENV_FILE = "FONTAINE_DISCORD_WEBHOOK_FILE"
LEDGER = rd.POSTS
INFLIGHT = "posts.inflight.json"

OFF, UNKNOWN, OK, RETRYING, FAILING = "off", "unknown", "ok", "retrying", "failing"
WEBHOOK_GONE = "webhook gone"  # how the state's error starts once 401/403/404 made us stop posting

SETUP_HINT = (
    "Discord posts are off. To turn them on: in Discord, Channel settings > Integrations > "
    "Webhooks > New Webhook > Copy Webhook URL; then either export "
    f"{ENV_URL}=<url>, or save the URL in a file only you can read (chmod 600 FILE) and export "
    f"{ENV_FILE}=FILE; restart the console and press the test-post key."
)

# The form discord.py's Webhook.from_url accepts.
_URL_RE = re.compile(
    r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
    r"(?P<id>[0-9]{17,20})/(?P<token>[A-Za-z0-9.\-_]{60,})"
)


class WebhookConfigError(ValueError):
    """The webhook setting is present but unusable; the message says what to do."""


class NotifierState(str):
    """The state as a plain string (off | unknown | ok | retrying | failing) that also carries the details
    the console shows next to it: a consistent copy, safe to read from the UI thread."""

    last_error: str | None  # masked
    pending: int  # posts queued, the one being sent included
    sent: int  # posts Discord confirmed since start
    target: str | None  # the masked webhook URL
    setup_hint: str | None  # how to turn posts on, when off

    def __new__(cls, state: str, last_error: str | None = None, pending: int = 0, sent: int = 0,
                target: str | None = None, setup_hint: str | None = None):
        self = super().__new__(cls, state)
        self.last_error, self.pending, self.sent, self.target, self.setup_hint = (
            last_error, pending, sent, target, setup_hint)
        return self

    @property
    def name(self) -> str:
        return str.__str__(self)

    def line(self) -> str:
        """'Discord: retrying · 3 queued · cannot reach Discord: …' for a status bar."""
        if self == OFF:
            return "Discord: off" + (f" ({self.last_error})" if self.last_error else "")
        text = f"Discord: {self.name}"
        if self.pending:
            text += f" · {self.pending} queued"
        if self == FAILING and (self.last_error or "").startswith(WEBHOOK_GONE):
            return f"Discord: failing: {self.last_error}" + (f" · {self.pending} queued" if self.pending else "")
        if self in (RETRYING, FAILING) and self.last_error:
            text += f" · {self.last_error}"
        return text


class Notifier:
    """The Discord side of the console: poll runs, queue posts, deliver them in order."""

    def __init__(
        self,
        url: str | None,
        *,
        every_episodes: int = 10,
        backoff_s: float = 2.0,
        backoff_max_s: float = 300.0,
        failing_after: int = 3,
        catch_up_s: float = 6 * 3600.0,
        request_timeout_s: float = 30.0,
        gone_after: int = 3,
        validate: bool = False,
        config_error: str | None = None,
    ):
        quiet_discord_logging(url)
        self._url = url
        self.every_episodes = every_episodes
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.failing_after = failing_after
        self.catch_up_s = catch_up_s
        self.request_timeout_s = request_timeout_s
        self.gone_after = gone_after  # 401/403/404 this many times in a row: stop posting until the URL changes
        self.validate = validate  # a GET of the webhook when the sender starts: ok/gone before any post
        self.masked_url = mask_webhook_url(url) if url else None

        self._lock = threading.Lock()  # the queue and the state; never held during file I/O
        self._poll_lock = threading.Lock()  # one poll at a time; guards the run books
        self._changed = threading.Condition(self._lock)  # notified when the queue or state changes
        self._queue: deque[_Item] = deque()
        self._runs: dict[Path, _RunBook] = {}
        self._state = UNKNOWN if url else OFF  # unknown until Discord first answers
        self._last_error = config_error
        self._sent = 0
        self._failures = 0
        self._gone_tries = 0
        self._gone = False
        self._gone_noted: set[Path] = set()  # runs whose ledger says the webhook is gone (this time)
        self._sending: _Item | None = None  # the item whose request is on the wire
        self._url_version = 0
        self.test_results: dict[str, dict] = {}  # test id -> {state: sent|dropped, at, message_id|reason}
        self._closing = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    @classmethod
    def from_env(cls, *, every_episodes: int = 10, environ=os.environ, **kw) -> "Notifier":
        """A notifier from FONTAINE_DISCORD_WEBHOOK_URL / _FILE; `off` (with the reason) otherwise."""
        try:
            url = load_webhook_url(environ)
        except WebhookConfigError as exc:
            log.warning("Discord posts off: %s", exc)
            return cls(None, every_episodes=every_episodes, config_error=str(exc), **kw)
        return cls(url, every_episodes=every_episodes, **kw)

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
        return SETUP_HINT if self._url is None else None

    def status(self) -> NotifierState:
        return self.state

    # --- what the console calls ------------------------------------------------------------

    def poll_run(self, run_dir: Path | str) -> list[str]:
        """Queue the posts this run is owed and has not had; returns their keys. Never blocks on I/O
        to Discord; reads only the run directory. Safe to call often and from any thread."""
        if self._url is None or self._closing:
            return []
        run_dir = Path(run_dir)
        with self._poll_lock:
            book = self._runs.setdefault(run_dir, _RunBook(run_dir))
            if not book.loaded:
                self._load_ledger(book)
            sig = _signature(run_dir)
            if book.over and sig == book.sig:
                return []  # a finished run that has not changed owes nothing new
            snap = msgs.read_snapshot(run_dir, rows=self._cached_rows(book))
            book.sig, book.over = sig, snap.over
            posts = msgs.due_posts(snap, book.keys, every_episodes=self.every_episodes,
                                   catch_up_s=self.catch_up_s)
            posts = [p.with_note("may repeat a post sent just before the console stopped")
                     if p.key == book.maybe_sent else p for p in posts]
            book.keys.update(p.key for p in posts)
            with self._lock:
                self._queue.extend(_Item(run_dir, p) for p in posts)
                self._changed.notify_all()
                owed = [i.post.key for i in self._queue if i.run_dir == run_dir] if self._gone and posts else []
            if owed:
                self._note_gone(run_dir, owed)
        if posts:
            self._kick()
        return [p.key for p in posts]

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
            self._queue.append(_Item(None, msgs.make_test_post(host or socket.gethostname(), at), test_id=test_id))
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
            self._gone_noted.clear()
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
                wait = max(wait, self.request_timeout_s + 1.0)
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

    # --- ledger ----------------------------------------------------------------------------

    def _load_ledger(self, book: _RunBook) -> None:
        book.keys |= read_ledger_keys(book.run_dir)  # a catch-up's `covers` included
        marker = msgs.read_json_object(book.run_dir / INFLIGHT)
        key = marker.get("key")
        if key and key in book.keys:
            _unlink(book.run_dir / INFLIGHT)
        elif key:
            book.maybe_sent = key
        book.loaded = True

    def _cached_rows(self, book: _RunBook) -> list[dict]:
        path = book.run_dir / rd.ROWS
        try:
            st = path.stat()
            sig = (st.st_size, st.st_mtime_ns)
        except OSError:
            return []
        if sig != book.rows_sig:
            book.rows = read_rows(path).rows
            book.rows_sig = sig
        return book.rows

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

        timeout = aiohttp.ClientTimeout(total=self.request_timeout_s)
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
                rd.write_json_atomic(run_dir / INFLIGHT, {"key": post.key, "kind": post.kind, "at": rd.utc_now("milliseconds")})
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
            return self._failed(item, exc, discord)
        if run_dir is not None:
            self._record(run_dir, post, message.id)
        self._sending = None
        if item.test_id is not None:
            self.test_results[item.test_id] = {"state": "sent", "message_id": str(message.id), "at": rd.utc_now()}
        with self._lock:
            self._sent += 1
        self._answered_ok()
        self._pop(item)
        log.info("Discord: posted %s for %s", post.key, post.run_id or "test")
        return 0.0

    def _record(self, run_dir: Path, post: msgs.Post, message_id: int) -> None:
        """The ledger line, then the in-flight marker goes. If the ledger cannot be written the
        marker stays, so a restarted console re-sends this post marked as a possible repeat."""
        try:
            entry = {"kind": post.kind, "key": post.key, "episodes": post.episodes,
                     "message_id": str(message_id), "at": rd.utc_now("milliseconds")}
            if post.covers:
                entry["covers"] = list(post.covers)  # missed milestones this catch-up listed
            append_ledger(run_dir, entry)
        except OSError as exc:
            log.error("Discord post %s delivered but not recorded in %s: %s", post.key, run_dir / LEDGER, exc)
            return
        _unlink(run_dir / INFLIGHT)

    def _render(self, item: _Item, discord) -> dict:
        post = item.post
        if item.plain:
            return {"content": post.as_text()}
        embed = discord.Embed(title=post.title, description=post.description, colour=post.colour)
        embed.set_footer(text=post.footer)
        kw = {"content": post.content, "embed": embed}
        if post.image:
            embed.set_image(url=f"attachment://{msgs.CHART_NAME}")
            kw["file"] = discord.File(io.BytesIO(post.image), filename=msgs.CHART_NAME)
        return kw

    def _failed(self, item: _Item | None, exc: BaseException, discord, what: str | None = None) -> float:
        """`item` None: the webhook check at start failed."""
        status = getattr(exc, "status", None)
        with self._lock:
            self._failures += 1
            failures = self._failures
        delay = min(self.backoff_max_s, self.backoff_s * 2 ** (failures - 1))
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
                if tries >= self.gone_after:
                    self._give_up(status, tries)
                    return 0.0
                text = (f"Discord answered {status}: the webhook was deleted or the URL is wrong; set a new one "
                        f"(try {tries} of {self.gone_after})")
                failures = max(failures, self.failing_after)
        elif what:
            text = f"{what}: {exc}"
        else:
            text = f"cannot reach Discord: {type(exc).__name__}: {exc}"
        text = self._scrub(text)[:300]
        state = FAILING if failures >= self.failing_after else RETRYING
        if state != self._state or text != self._last_error:
            log.warning("Discord %s not delivered (%s); retrying in %.1f s",
                        f"post {item.post.key}" if item else "webhook check", text, delay)
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
                owed: dict[Path, list[str]] = {}
                for item in self._queue:
                    if item.run_dir is not None:
                        owed.setdefault(item.run_dir, []).append(item.post.key)
            log.error("Discord: %s", text)
            for run_dir, keys in owed.items():
                self._note_gone(run_dir, keys)
            with self._lock:
                self._gone = True
                self._state, self._last_error = FAILING, text
                self._changed.notify_all()
        self._drop_tests(text)

    def _note_gone(self, run_dir: Path, keys: list[str]) -> None:
        """One line in the run's ledger: these posts are owed and the webhook is gone."""
        if run_dir in self._gone_noted:
            return
        self._gone_noted.add(run_dir)
        try:
            rd.append_line(run_dir / LEDGER, {"event": "webhook_gone", "status": getattr(self, "_gone_status", None),
                                              "tries": self._gone_tries, "webhook": self.masked_url, "owed": keys,
                                              "at": rd.utc_now("milliseconds")})
        except OSError as exc:
            log.error("cannot write %s: %s", run_dir / LEDGER, exc)

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
        if not self._url:
            return text
        m = _URL_RE.search(self._url)
        text = text.replace(self._url, self.masked_url)
        if m:
            text = text.replace(m.group("token"), "****").replace(m.group("id"), m.group("id")[:4] + "…")
        return text


def mask_webhook_url(url: str) -> str:
    """https://discord.com/api/webhooks/1234…/**** — enough to tell two webhooks apart."""
    m = _URL_RE.search(url or "")
    if not m:
        return "<webhook URL>"
    return f"https://discord.com/api/webhooks/{m.group('id')[:4]}…/****"


def load_webhook_url(environ: dict | os._Environ = os.environ) -> str | None:
    """The webhook URL from the environment or from a file only the user can read; None if unset."""
    url = (environ.get(ENV_URL) or "").strip()
    source = f"${ENV_URL}"
    if not url and environ.get(ENV_FILE):
        path = Path(environ[ENV_FILE]).expanduser()
        source = f"the file {path} (${ENV_FILE})"
        try:
            st = path.stat()
        except OSError as exc:
            raise WebhookConfigError(f"cannot read {source}: {exc.strerror}") from None
        if st.st_mode & 0o077:
            raise WebhookConfigError(
                f"{source} is readable or writable by others (mode {stat.filemode(st.st_mode)}); "
                f"it holds a secret: run `chmod 600 {path}`"
            )
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise WebhookConfigError(f"{source} belongs to another user; keep the webhook in a file you own")
        try:
            url = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise WebhookConfigError(f"cannot read {source}: {exc}") from None
    if not url:
        return None
    if not _URL_RE.fullmatch(url):
        raise WebhookConfigError(
            f"{source} is not a Discord webhook URL "
            "(expected https://discord.com/api/webhooks/<id>/<token>; copy it from the channel's Integrations)"
        )
    return url


def quiet_discord_logging(url: str | None = None) -> None:
    """discord.py logs the full webhook URL (token included) at DEBUG: hold its loggers at
    WARNING, and scrub the webhook's id and token from what they still log (a 429 warning)."""
    lg = logging.getLogger("discord")
    if lg.level == logging.NOTSET or lg.level < logging.WARNING:
        lg.setLevel(logging.WARNING)
    m = _URL_RE.search(url or "")
    if m:
        _SCRUB.secrets[m.group("token")] = "****"
        _SCRUB.secrets[m.group("id")] = m.group("id")[:4] + "…"
    for name in ("discord.webhook.async_", "discord.webhook.sync", "discord.http"):
        logger = logging.getLogger(name)
        if _SCRUB not in logger.filters:
            logger.addFilter(_SCRUB)


def read_ledger_keys(run_dir: Path) -> set[str]:
    """Keys of the posts Discord confirmed for this run (a torn last line is ignored)."""
    keys = set()
    try:
        text = (Path(run_dir) / LEDGER).read_text(encoding="utf-8")
    except OSError:
        return keys
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("key"):
            keys.add(str(obj["key"]))
            if isinstance(obj.get("covers"), list):  # a catch-up listed these missed milestones
                keys.update(str(k) for k in obj["covers"])
    return keys


def read_ledger(run_dir: Path) -> list[dict]:
    """The ledger's lines, in the order the posts were confirmed."""
    out = []
    try:
        text = (Path(run_dir) / LEDGER).read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def append_ledger(run_dir: Path, entry: dict) -> None:
    """One line, flushed and fsynced: the post exists in Discord and must not be sent again."""
    rd.append_line(Path(run_dir) / LEDGER, dict(sorted(entry.items())))


class _ScrubSecrets(logging.Filter):
    """Rewrites a record that mentions a registered secret (filters act on the emitting logger)."""

    def __init__(self):
        super().__init__()
        self.secrets: dict[str, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(s in text for s in self.secrets):
            for secret, masked in sorted(self.secrets.items(), key=lambda kv: -len(kv[0])):
                text = text.replace(secret, masked)
            record.msg, record.args = text, ()
        return True


_SCRUB = _ScrubSecrets()


@dataclass
class _Item:
    run_dir: Path | None  # None for a test post: no ledger
    post: msgs.Post
    plain: bool = False  # Discord rejected the embed as malformed: send it as plain text
    test_id: str | None = None  # a test post: its outcome goes to Notifier.test_results


class _RunBook:
    """What this notifier knows of one run: keys in the ledger or the queue, and a rows cache."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.keys: set[str] = set()
        self.maybe_sent: str | None = None  # key named by a leftover posts.inflight.json
        self.rows_sig: tuple[int, int] | None = None
        self.rows: list[dict] = []
        self.loaded = False
        self.sig: tuple | None = None  # the run directory's files (size, mtime) at the last poll
        self.over = False  # the run had ended at the last poll


def _signature(run_dir: Path) -> tuple:
    out = []
    for name in (rd.MANIFEST, rd.STATUS, rd.ROWS, rd.RESULTS, rd.CHART, rd.HEARTBEAT, LEDGER):
        try:
            st = (run_dir / name).stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def _retry_after(exc) -> float:
    """A 429 that discord.py did not retry itself (no Via header): honour its Retry-After."""
    try:
        return float(exc.response.headers.get("Retry-After", 0.0))
    except (TypeError, ValueError, AttributeError):
        return 0.0


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

