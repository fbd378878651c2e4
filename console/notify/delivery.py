"""The notifier's delivery, in states and words: off | unknown | ok | retrying | failing (the
webhook's, not a run's: those are prereg.rundir's), the one retry policy, and `status_line`, the one
wording of a state the console's status bar shows (its own NOT_RUNNING included).
"""

from __future__ import annotations

from dataclasses import dataclass

# the notifier's delivery states (not a run's: those are prereg.rundir's)
OFF, UNKNOWN, OK, RETRYING, FAILING = "off", "unknown", "ok", "retrying", "failing"
NOT_RUNNING = "not running"  # the console's word for a folder with no notifier process
WEBHOOK_GONE = "webhook gone"  # how the state's error starts once 401/403/404 made us stop posting


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed post is retried: the one place for these defaults (fontaine-notify's
    options default to them)."""

    backoff_s: float = 2.0  # first retry delay after a failed post
    backoff_max_s: float = 300.0  # longest retry delay
    failing_after: int = 3  # failures in a row before the state says failing (not retrying)
    request_timeout_s: float = 30.0  # HTTP timeout of one request to Discord
    gone_after: int = 3  # 401/403/404 this many times in a row: stop posting until the URL changes
    probe_s: float = 5.0  # while a post waits out a longer backoff after Discord was unreachable or
    # answered 5xx: a GET of the webhook this often, and the post goes as soon as one is answered (0: never)

    def delay(self, failures: int) -> float:
        """Capped exponential backoff after the `failures`-th failure in a row."""
        return min(self.backoff_max_s, self.backoff_s * 2 ** (failures - 1))


RETRY = RetryPolicy()

def status_line(state: str, *, error: str | None = None, pending: int = 0, last: str | None = None) -> str:
    """The Discord status in words, as the console's status bar shows it, for every state: the
    sender's (off | unknown | ok | retrying | failing, with the last error and the queue:
    'Discord: retrying · 3 queued · cannot reach Discord: …'), and the console's NOT_RUNNING
    (with the last line the notifier wrote)."""
    if state == OFF:
        return "Discord: off" + (f" ({error})" if error else "")
    if state == NOT_RUNNING:
        return "Discord: notifier not running" + (f" (last: {last})" if last else "")
    queued = f" · {pending} queued" if pending else ""
    if state == FAILING and (error or "").startswith(WEBHOOK_GONE):
        text = f"Discord: failing: {error}{queued}"
    else:
        text = f"Discord: {state}{queued}"
        if state in (RETRYING, FAILING) and error:
            text += f" · {error}"
    return text


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
        return status_line(self.name, error=self.last_error, pending=self.pending)
