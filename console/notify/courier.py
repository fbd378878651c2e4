"""Delivery: sending the head of the outbox to the webhook, one attempt at a time, and what a
failed attempt means (the retry, its backoff, the state, a line in notifier.log).

One background thread runs an asyncio loop that sends the queue (console/notify/outbox.py) in
order with the real discord.py webhook client. A post that fails stays at the head of the queue
and is retried after capped exponential backoff (delivery.RetryPolicy), so an outage delays
posts and loses none. Every failed attempt is one line in the log, with the error and the real
wait before the next try: a 5xx is answered to us at once (discord.py would retry it itself, up
to five times over 25 s, silently), a 429 with a Retry-After waits that long, and a new post
queued meanwhile does not cut the wait short (a test post or a new URL does: the user asked).
While posts are owed after a connection failure, a timeout or a 5xx, a cheap GET of the webhook
(posts nothing) every `probe_s` sends them the moment Discord answers again, rather than after
the whole backoff; a try made so that fails waits out its full backoff.

States: off (no webhook) | unknown (until Discord first answers; with `validate`, a GET of the
webhook at start answers at once) | ok | retrying | failing. A 401/403/404 is tried at most
`gone_after` (3) times, then posting stops with `failing: webhook gone…` in the state and a
`webhook_gone` line in each owed run's ledger, until `set_url` gives a new URL.

Crash window. discord.py's Webhook.send takes no nonce (only channel sends have
`enforce_nonce`), so Discord cannot deduplicate a re-sent webhook message. A post is marked in
flight (ledger.mark_in_flight) before the send, until its ledger line; a try that went out and
got no answer (the timeout, a dropped connection) is retried marked NO_ANSWER_REPEAT.

Secrets: every error text is scrubbed of the webhook (console/notify/webhook.py).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading

from console.notify import ledger
from console.notify.delivery import FAILING, OFF, OK, RETRYING, UNKNOWN, WEBHOOK_GONE, RetryPolicy
from console.notify.ledger import INFLIGHT
from console.notify.outbox import Gone, Item, Outbox
from console.notify.webhook import mask_webhook_url, quiet_discord_logging, scrub
from console.notify.wording import CHART_NAME
from prereg import rundir as rd

log = logging.getLogger(__name__)

# The note on a retry of a post whose earlier try went out and got no answer (the HTTP timeout, a
# dropped connection): Discord may have created it, and without a nonce it cannot tell us.
NO_ANSWER_REPEAT = "may repeat: an earlier try of this post got no answer from Discord"
SERVER_ERROR_TEXT_MAX = 2048  # bytes of a 5xx's body read for its message


class ServerError(Exception):
    """Discord answered 5xx: raised from the HTTP session as the answer arrives, so that each one is
    one failed attempt of ours (logged, backed off by our policy), not one of discord.py's silent retries."""

    def __init__(self, status: int, reason: str | None, text: str):
        super().__init__(f"{status} {reason or ''}".strip())
        self.status, self.reason, self.text = status, reason, text


async def _raise_server_errors(response) -> None:
    """aiohttp's raise_for_status hook: a 5xx ends the request at once (discord.py retries only
    what it gets back)."""
    if response.status >= 500:
        body = (await response.content.read(SERVER_ERROR_TEXT_MAX)).decode("utf-8", "replace")
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            message = None
        raise ServerError(response.status, response.reason, str(message or response.reason or body.strip()[:100]))


class Courier:
    """The sender thread: attempts to deliver the outbox's head, retries, and the delivery state."""

    def __init__(self, outbox: Outbox, url: str | None, *, retry: RetryPolicy, validate: bool = False,
                 config_error: str | None = None):
        quiet_discord_logging(url)
        self.outbox = outbox
        self.url = url
        self.retry = retry
        self.validate = validate  # a GET of the webhook when the sender starts: ok/gone before any post
        self.masked_url = mask_webhook_url(url) if url else None
        self.state = UNKNOWN if url else OFF  # unknown until Discord first answers; under outbox.lock
        self.last_error = config_error
        self.sent = 0
        self._failures = 0
        self._gone_tries = 0
        self._probe = False  # the last failure may end as soon as Discord answers: probe while waiting
        self._probed = False  # this try follows a probe's answer: if it fails, wait out the backoff
        self._urgent: str | None = None  # why the backoff is cut short (a test post, a new URL)
        self._url_version = 0
        self.stopping = False
        self.thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    # --- from other threads ------------------------------------------------------------------

    def kick(self, urgent: str | None = None) -> None:
        """Start the sender on first use; wake it (from any thread) when there is news. A post
        queued during a backoff waits for it to end; `urgent` (why) cuts it short."""
        with self.outbox.lock:
            if urgent:
                self._urgent = urgent
            if self.thread is None and not self.stopping:
                ready = threading.Event()
                self.thread = threading.Thread(target=self._run_loop, args=(ready,), name="fontaine-discord", daemon=True)
                self.thread.start()
                ready.wait(5.0)
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:
                pass  # the loop has already stopped

    def try_now(self, why: str) -> None:
        """A request to try now (a test post): the failures in a row start again, the backoff ends."""
        with self.outbox.lock:
            self._failures = 0
        self.kick(urgent=why)

    def set_url(self, url: str | None) -> None:
        """A new webhook URL: posting resumes (called with outbox.lock held)."""
        quiet_discord_logging(url)
        self.url, self.masked_url = url, (mask_webhook_url(url) if url else None)
        self._gone_tries = self._failures = 0
        self.state, self.last_error = (UNKNOWN if url else OFF), None
        self._url_version += 1
        self._urgent = "a new webhook URL"

    def stop(self, timeout: float) -> None:
        """Stop the sender; a send already on the wire is waited for up to the HTTP timeout, so that
        its answer is in the ledger and the next notifier does not send it again."""
        self.stopping = True
        if self._loop is None or self.thread is None:
            return
        self.kick()
        wait = max(1.0, timeout)
        on_wire = self.outbox.sending
        if on_wire is not None:
            wait = max(wait, self.retry.request_timeout_s + 1.0)
            log.info("Discord: waiting up to %.0f s for the post on the wire (%s)", wait, on_wire.post.key)
        self.thread.join(timeout=wait)
        on_wire = self.outbox.sending
        if self.thread.is_alive() and on_wire is not None:
            log.error("Discord: no answer for %s within %.0f s; %s names it for the next notifier",
                      on_wire.post.key, wait, INFLIGHT)

    # --- the sender thread ---------------------------------------------------------------------

    def _run_loop(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._wake = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._serve())
        except Exception as exc:  # a bug: say so without the URL, and let the next notifier catch up
            log.error("Discord sender stopped: %s", self._scrub(f"{type(exc).__name__}: {exc}"))
            self._set_state(FAILING, self._scrub(f"sender stopped: {type(exc).__name__}: {exc}"))
        finally:
            loop.close()

    async def _serve(self) -> None:
        import aiohttp
        import discord

        timeout = aiohttp.ClientTimeout(total=self.retry.request_timeout_s)
        async with aiohttp.ClientSession(timeout=timeout, raise_for_status=_raise_server_errors) as session:
            hook, version, checked = None, -1, False
            while not self.stopping:
                if version != self._url_version:  # the first pass, or a new URL
                    version, checked = self._url_version, not self.validate
                    hook = discord.Webhook.from_url(self.url, session=session) if self.url else None
                if hook is None or self.outbox.gone:
                    await self._sleep(None)  # until the URL changes (or stop)
                    continue
                if not checked:
                    delay = await self._check(hook, discord)
                    checked = delay == 0.0
                else:
                    item = self.outbox.head()
                    if item is None:
                        await self._sleep(None)
                        continue
                    delay = await self._attempt(hook, item, discord)
                if delay:
                    await self._back_off(hook, delay, discord)

    async def _check(self, hook, discord) -> float:
        """GET the webhook (cheap; posts nothing): the state is ok or failing before any post."""
        try:
            await hook.fetch()
        except Exception as exc:  # noqa: BLE001 - classified like a failed post
            return self._failed(None, exc, discord)
        self._answered_ok()
        return 0.0

    async def _probe_answers(self, hook, discord, within: float) -> bool:
        """A GET of the webhook: does Discord answer at all (an HTTP answer other than a 5xx) within
        `within` s (the backoff left: a check never delays the try the log announced)?"""
        try:
            await asyncio.wait_for(hook.fetch(), within)
        except discord.HTTPException:
            return True  # it answered (a 404 here is the next post's to find and count)
        except Exception:  # noqa: BLE001 - unreachable, timed out, 5xx: still down
            return False
        return True

    def _answered_ok(self) -> None:
        with self.outbox.lock:
            self._failures = self._gone_tries = 0
            self._probed = False
            self.state, self.last_error = OK, None
            self.outbox.changed.notify_all()

    async def _sleep(self, seconds: float | None, *, urgent_only: bool = False) -> bool:
        """Wait `seconds` (None: for ever) for news; True if woken: by stop(), an urgent kick, or
        (unless `urgent_only`) any kick (a new post)."""
        loop = asyncio.get_running_loop()
        end = None if seconds is None else loop.time() + seconds
        while True:
            self._wake.clear()
            if self.stopping:
                return True
            with self.outbox.lock:
                urgent, self._urgent = self._urgent, None
            if urgent:
                if seconds is not None:
                    log.info("Discord: trying now, before the backoff ends (%s)", urgent)
                return True
            left = None if end is None else end - loop.time()
            if left is not None and left <= 0:
                return False
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                return False
            if not urgent_only:
                return True

    async def _back_off(self, hook, delay: float, discord) -> None:
        """Wait `delay` before the next try; with a probe owed, GET the webhook every probe_s meanwhile
        and end the wait the moment Discord answers."""
        loop = asyncio.get_running_loop()
        end = loop.time() + delay
        probe = self.retry.probe_s if self._probe and 0 < self.retry.probe_s < delay else None
        while not self.stopping:
            left = end - loop.time()
            if left <= 0 or await self._sleep(min(left, probe or left), urgent_only=True):
                return
            if probe and end - loop.time() > 0 and await self._probe_answers(hook, discord, end - loop.time()):
                log.info("Discord answers again (a check of the webhook, %.1f s before the backoff ends): "
                         "sending the %d post(s) owed now", end - loop.time(), self.outbox.pending)
                with self.outbox.lock:
                    self._probed = True
                return

    async def _attempt(self, hook, item: Item, discord) -> float:
        """Send the head of the queue once; 0 on success, else how long to wait before retrying."""
        with self.outbox.lock:
            self._urgent = None  # this try is the one that was asked for
        if not self.outbox.still_owed(item):
            return 0.0
        post, run_dir = item.post, item.run_dir
        if run_dir is not None:
            try:
                ledger.mark_in_flight(run_dir, post.key, post.kind)
            except OSError as exc:
                return self._failed(item, exc, discord, f"cannot write {INFLIGHT} in {run_dir}")
        # discord.py's Webhook.send has no nonce (only channel sends do, via enforce_nonce), so
        # Discord cannot deduplicate a re-sent webhook message: we rely on the marker above and on
        # waiting for this answer at shutdown (stop), and keep the message id wait=True returns.
        if self.outbox.dropped_meanwhile(item):
            return 0.0
        try:
            message = await hook.send(**self._render(item, discord), wait=True,
                                      allowed_mentions=discord.AllowedMentions.none())
        except Exception as exc:  # noqa: BLE001 - HTTP errors, connection errors (OSError), timeouts, bugs: retried, never dropped
            self.outbox.sending = None
            item.unanswered = item.unanswered or _maybe_received(exc, discord)
            return self._failed(item, exc, discord)
        if run_dir is not None:
            ledger.record_post(run_dir, post.key, post.kind, post.episodes, message.id, post.covers)
        self.outbox.sending = None
        if item.test_id is not None:
            self.outbox.test_results[item.test_id] = {"state": "sent", "message_id": str(message.id), "at": rd.utc_now()}
        with self.outbox.lock:
            self.sent += 1
        self._answered_ok()
        self.outbox.pop(item)
        log.info("Discord: posted %s for %s", post.key, post.run_id or "test")
        return 0.0

    def _render(self, item: Item, discord) -> dict:
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

    def _failed(self, item: Item | None, exc: BaseException, discord, what: str | None = None) -> float:
        """One failed attempt (`item` None: the webhook check at start): the state, one line in the
        log, and the wait before the next try (0: at once)."""
        status = getattr(exc, "status", None)
        with self.outbox.lock:
            self._failures += 1
            failures, probed = self._failures, self._probed
        delay = self.retry.delay(failures)
        failing = failures >= self.retry.failing_after
        probe = False
        if isinstance(exc, discord.HTTPException):
            text = f"Discord answered {status}: {exc.text or exc.response.reason}"
            if status == 400 and item is not None and not item.plain:
                item.plain = True  # one bad embed must not block the queue: retry as plain text now
                delay = 0.0
            elif status == 429:
                delay = max(delay, _retry_after(exc))
            elif status in (401, 403, 404):
                with self.outbox.lock:
                    self._gone_tries += 1
                    tries = self._gone_tries
                if tries >= self.retry.gone_after:
                    self._give_up(status, tries)
                    return 0.0
                text = (f"Discord answered {status}: the webhook was deleted or the URL is wrong; set a new one "
                        f"(try {tries} of {self.retry.gone_after})")
                failing = True  # at once: retrying will not mend it (the log keeps the true count in a row)
        elif isinstance(exc, ServerError):
            text = f"Discord answered {exc.status}: {exc.text or exc.reason}"
            probe = True
        elif what:
            text = f"{what}: {exc}"
        else:
            text = f"cannot reach Discord: {type(exc).__name__}: {exc}"
            probe = True
        text = " ".join(self._scrub(text).split())[:300]  # one line, whatever Discord's body held
        probe = probe and not probed and 0 < self.retry.probe_s < delay
        with self.outbox.lock:
            self._probe, self._probed = probe, False
        if delay == 0.0:
            wait = "retrying now as plain text"
        elif probe:
            wait = (f"retrying in {_seconds(delay)} s, or as soon as Discord answers a check of the webhook "
                    f"(one every {self.retry.probe_s:g} s)")
        else:
            wait = f"retrying in {_seconds(delay)} s"
        # every failed attempt is one line in notifier.log (a repeat of the same error too): the
        # log is where a user counts the attempts and reads the gaps between them
        log.warning("Discord %s not delivered (failure %d in a row: %s); %s",
                    item.what() if item else "webhook check", failures, text, wait)
        self._set_state(FAILING if failing else RETRYING, text)
        return delay

    def _give_up(self, status: int, tries: int) -> None:
        """The webhook is gone (401/403/404 `tries` times in a row): stop posting until the URL
        changes, and say so in every owed run's ledger, in the state, and to each queued test post."""
        text = f"{WEBHOOK_GONE}: Discord answered {status} {tries} times; posting stopped until the webhook URL changes"
        log.error("Discord: %s", text)

        def publish() -> None:  # under outbox.lock, after the ledger lines
            self.state, self.last_error = FAILING, text

        self.outbox.mark_gone(Gone(status, tries, self.masked_url, text), publish)

    def _set_state(self, state: str, error: str | None) -> None:
        with self.outbox.lock:
            self.state, self.last_error = state, error
            self.outbox.changed.notify_all()

    def _scrub(self, text: str) -> str:
        """Any trace of the webhook (its URL, token, id) replaced by the masked form."""
        return scrub(self.url, text)


def _seconds(s: float) -> str:
    """A wait as the log says it: 2.0, 0.7, and 0.05 (not rounded to 0.1: the log gives the real wait)."""
    return f"{s:.1f}" if round(s, 1) == round(s, 2) else f"{s:.2f}"


def _maybe_received(exc: BaseException, discord) -> bool:
    """A try that may have reached Discord though no answer came back: a timeout or a dropped
    connection, not an HTTP answer (Discord refused it) nor a connection never made."""
    import aiohttp

    return not isinstance(exc, (discord.HTTPException, ServerError, aiohttp.ClientConnectorError))


def _retry_after(exc) -> float:
    """A 429 that discord.py did not retry itself (no Via header): honour its Retry-After."""
    try:
        return float(exc.response.headers.get("Retry-After", 0.0))
    except (TypeError, ValueError, AttributeError):
        return 0.0
