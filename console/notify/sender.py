"""`Notifier`: the Discord side of the notifier process, scheduling and delivery put together.

It runs inside the detached notifier process (`console/notify/service.py`, one per runs folder),
which calls `Notifier.poll_run(run_dir)` every couple of seconds; the console never posts
itself. Its work splits in two, each in its own module:

    outbox.py   scheduling: which posts a run is owed and when (every ~10 episodes, the alerts,
                the end posts, the catch-up of what was missed, posts folded into a late end
                post), the queue they wait in, the test posts, the ledger lines of a gone webhook
    courier.py  delivery: one attempt at a time to the webhook on a background thread, the
                retry and its backoff, the checks that end an outage's wait early, the rate limit
                and error handling, one line in notifier.log per failed attempt, the state

States: off | unknown | ok | retrying | failing (console/notify/delivery.py's, with their words).
Test posts: `send_test(test_id)`; the outcome (sent with the message id, or dropped with the
reason: posts off, webhook gone, the notifier stopped first) lands in `test_results`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path

from console.notify import messages as msgs
from console.notify import webhook
from console.notify.courier import Courier
from console.notify.delivery import OK, RETRY, UNKNOWN, NotifierState, RetryPolicy
from console.notify.outbox import Item, Outbox
from console.notify.snapshot import EVERY_EPISODES
from console.notify.webhook import webhook_setting
from console.notify.wording import make_test_post
from prereg import rundir as rd

log = logging.getLogger(__name__)


class Notifier:
    """Poll runs, queue the posts they are owed, deliver them in order."""

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
        self.outbox = Outbox(every_episodes=every_episodes, catch_up_s=catch_up_s)
        self.courier = Courier(self.outbox, url, retry=retry, validate=validate, config_error=config_error)
        self.every_episodes = every_episodes
        self.retry = retry
        self.test_results = self.outbox.test_results  # test id -> {state: sent|dropped, at, message_id|reason}

    @classmethod
    def from_env(cls, *, environ=os.environ, **kw) -> "Notifier":
        """A notifier from FONTAINE_DISCORD_WEBHOOK_URL / _FILE; `off` (with the reason) otherwise."""
        url, error = webhook_setting(environ)
        if error:
            log.warning("Discord posts off: %s", error)
        return cls(url, config_error=error, **kw)

    def __repr__(self) -> str:
        return f"<Notifier {self.courier.state} {self.masked_url or 'no webhook'}>"

    # --- state, for the console ------------------------------------------------------------

    @property
    def url(self) -> str | None:
        return self.courier.url

    @property
    def masked_url(self) -> str | None:
        return self.courier.masked_url

    @property
    def state(self) -> NotifierState:
        """off | ok | retrying | failing, with .last_error, .pending, .line() for the status bar."""
        c = self.courier
        with self.outbox.lock:
            return NotifierState(c.state, c.last_error, len(self.outbox.queue), c.sent, c.masked_url, self.setup_hint)

    @property
    def last_error(self) -> str | None:
        return self.courier.last_error

    @property
    def pending(self) -> int:
        return self.outbox.pending

    @property
    def setup_hint(self) -> str | None:
        return webhook.SETUP_HINT if self.courier.url is None else None

    def status(self) -> NotifierState:
        return self.state

    @property
    def gone(self) -> bool:
        return self.outbox.gone is not None

    # --- what the service calls ------------------------------------------------------------

    def poll_run(self, run_dir: Path | str) -> list[str]:
        """Queue the posts this run is owed and has not had; returns their keys. Never blocks on I/O
        to Discord; reads only the run directory. Safe to call often and from any thread."""
        if self.courier.url is None:
            return []
        keys = self.outbox.poll_run(run_dir)
        if keys:
            self.courier.kick()
        return keys

    def send_test(self, test_id: str | None = None, host: str | None = None) -> bool:
        """Queue a test post (also retries a failing queue now). False when posts are off or the
        webhook is gone (then `test_results[test_id]` says dropped, and why). Its outcome, sent
        or dropped, lands in `test_results[test_id]`."""
        test_id = test_id or rd.utc_now("milliseconds")
        gone = self.outbox.gone
        why = ("Discord posts are off" if self.courier.url is None else "the notifier is stopping" if self.outbox.closed
               else gone.text if gone else None)
        if why:
            self.test_results[test_id] = {"state": "dropped", "reason": why, "at": rd.utc_now()}
            return False
        at = rd.utc_now()
        self.outbox.add_test(Item(None, make_test_post(host or socket.gethostname(), at), test_id=test_id))
        self.courier.try_now("a test post was asked for")
        return True

    def set_url(self, url: str | None) -> None:
        """A new webhook URL (the old one is gone, or the user changed it): posting resumes."""
        if url == self.courier.url:
            return
        with self.outbox.lock:
            self.outbox.clear_gone()
            self.courier.set_url(url)
            self.outbox.changed.notify_all()
        self.courier.kick()

    def start(self) -> None:
        """Start the sender now (it otherwise starts with the first post): with `validate`, the
        state turns ok or failing from a GET of the webhook before anything is owed."""
        if self.courier.url is not None:
            self.courier.kick()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the queue is empty; True if it emptied in time."""
        return self.outbox.wait_idle(timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Flush the queue for up to `timeout` (not at all while Discord is failing: quitting must
        not hang), then stop the sender. A send already on the wire is waited for up to the HTTP
        timeout, so that its answer is in the ledger and the next notifier does not send it
        again. True if nothing was left. Posts left are owed by the run directories and sent by
        the next notifier; test posts left are reported dropped in `test_results`."""
        stopped = "the notifier stopped before it was sent"
        if self.outbox.closed or self.courier.thread is None:
            self.outbox.closed = self.courier.stopping = True
            self.outbox.drop_tests(stopped)
            return not self.outbox.queue
        flushed = self.outbox.wait_empty(time.monotonic() + timeout,
                                         lambda: self.courier.state in (OK, UNKNOWN) and self.outbox.gone is None)
        self.outbox.closed = True
        self.courier.stop(timeout)
        self.outbox.drop_tests(stopped)
        return flushed
