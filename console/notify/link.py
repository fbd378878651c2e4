"""The console's side of the detached notifier (console/notify/service.py): start it, read its
status, ask it for test posts. The console never posts; it imports this and nothing else of
console.notify's process (no discord.py, no sender thread).

`NotifierLink` is the console's handle (`ConsoleNotifier` is what the console needs of it, which
a test's fake implements too); `read_status` reads RUNS/.notifier/status.json and checks that
the process it names is still the one running (its pid with the same create time, as a run's
pid.json is checked: prereg/rundir/discovery.py); `start_detached` starts one in its own session;
`request_test` drops a test request in RUNS/.notifier/requests/.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psutil

from console.notify.delivery import NOT_RUNNING, OFF, status_line
from console.notify.ledger import LOG, REQUESTS, STATUS, NotifierDoc, home, lock_held
from console.notify.webhook import ENV_URL, SETUP_HINT, fingerprint, mask_webhook_url, webhook_setting
from prereg import rundir as rd
from prereg.core.argcheck import module_argv
from prereg.rundir.discovery import run_process
from prereg.rundir.files import utc_now, write_json_atomic

log = logging.getLogger("fontaine.notifier")


@dataclass(frozen=True)
class NotifierStatus:
    """The detached notifier as the console sees it: running or not, and its last status (typed:
    a wrong-typed field in the file reads as unknown, never a crash)."""

    running: bool
    doc: NotifierDoc

    @property
    def state(self) -> str:
        return self.doc.state or "unknown"

    def line(self) -> str:
        """The line the notifier wrote (status_line, in its process), or that none is running."""
        if not self.running:
            return status_line(NOT_RUNNING, last=self.doc.line or None)
        return self.doc.line or status_line(self.state)


def read_status(runs_dir: Path | str) -> NotifierStatus:
    """The notifier's status file, and whether the process it names is still the one running
    (its pid, with the same create time, not a zombie) and holding the lock."""
    doc = NotifierDoc.from_dict(rd.read_json(home(runs_dir) / STATUS))
    running = (doc.pid is not None and doc.create_time is not None and not doc.exited
               and run_process({"pid": doc.pid, "create_time": doc.create_time}) is not None)
    return NotifierStatus(running=running, doc=doc)


def notifier_argv(runs_dir: Path | str) -> list[str]:
    return module_argv("console.notify.service", "--runs-dir", str(runs_dir))


def start_detached(runs_dir: Path | str, argv: list[str] | None = None, env: dict | None = None) -> subprocess.Popen:
    """Start a notifier for the folder in its own session (a closing console or tmux pane does not
    take it down); it exits by itself if another one already holds the folder's lock. The caller
    should poll() the Popen now and then to reap it."""
    h = home(runs_dir)
    h.mkdir(parents=True, exist_ok=True)
    with open(h / LOG, "ab") as out:
        return subprocess.Popen(argv or notifier_argv(runs_dir), start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, close_fds=True, env=env)


def request_test(runs_dir: Path | str, host: str | None = None) -> str:
    """Ask the notifier for a test post; returns the request id (its outcome appears under
    `tests` in the status file: sent, or dropped with the reason)."""
    rid = f"test-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}"
    folder = home(runs_dir) / REQUESTS
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / f"{rid}.json", {"kind": "test", "host": host, "at": utc_now()})
    return rid


def stop_notifier(runs_dir: Path | str, timeout: float = 40.0) -> bool:
    """SIGTERM the folder's notifier (it finishes a send on the wire first); True once it is gone."""
    st = read_status(runs_dir)
    if not st.running:
        return True
    try:
        proc = psutil.Process(st.doc.pid)
        proc.terminate()
        proc.wait(timeout)
        return True
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False


@dataclass(frozen=True)
class LinkState:
    """What the console's status bar shows: `name` picks the colour, `line()` the words."""

    name: str
    text: str

    def line(self) -> str:
        return self.text


class ConsoleNotifier(Protocol):
    """What the console needs of the Discord side: NotifierLink here, a test's fake elsewhere."""

    setup_hint: str | None  # how to turn posts on, when they are off for want of a webhook

    @property
    def state(self) -> LinkState: ...
    def tick(self, live: bool) -> object: ...  # from the watcher's thread: start the notifier if needed
    def send_test(self) -> bool: ...  # False when posts are off
    def test_outcomes(self) -> list[tuple[str, dict]]: ...  # (request id, {state: sent|dropped, reason})
    def close(self, timeout: float = 0.0) -> bool: ...


class NotifierLink:
    """The console's handle on the folder's detached notifier. It never posts: it starts the
    notifier when one is needed (a webhook is configured and a run is live, a test post is asked
    for, or this console has just opened), restarts it when the console's webhook URL differs
    from the one it serves, reads its status, and drops test requests for it. `tick()` is called
    from the watcher's thread; `state` and `send_test()` from the UI."""

    def __init__(self, runs_dir: Path | str, *, argv: list[str] | None = None, environ=None,
                 start_every_s: float = 10.0):
        self.runs_dir = Path(runs_dir)
        self.argv = argv or notifier_argv(self.runs_dir)
        self.environ = dict(os.environ if environ is None else environ)
        self.start_every_s = start_every_s
        self.url, self.config_error = webhook_setting(self.environ)
        self.setup_hint = SETUP_HINT if self.url is None and self.config_error is None else None
        self.url_from_env = bool(self.environ.get(ENV_URL))
        self.masked_url = mask_webhook_url(self.url) if self.url else None
        self._lock = threading.Lock()
        self._popens: list[subprocess.Popen] = []
        self._last_start = float("-inf")
        self._opened = False
        self._status: NotifierStatus | None = None
        self._asked: set[str] = set()
        self._told: set[str] = set()

    @property
    def configured(self) -> bool:
        return self.url is not None

    def tick(self, live: bool) -> NotifierStatus | None:
        """Start (or restart) the notifier if needed; refresh the status the UI reads."""
        with self._lock:
            self._popens = [p for p in self._popens if p.poll() is None]  # reap the ones that exited
            if not self.configured:
                return None
            st = read_status(self.runs_dir)
            self._status = st
            if st.running and self.url_from_env and st.doc.fingerprint not in (None, fingerprint(self.url)):
                log.info("the notifier serves another webhook than this console's: restarting it")
                stop_notifier(self.runs_dir)
                st = read_status(self.runs_dir)
            if st.running or lock_held(self.runs_dir):
                self._opened = True
                return st
            wanted = live or not self._opened or bool(self._asked - set(st.doc.tests))
            if wanted and time.monotonic() - self._last_start >= self.start_every_s:
                self._last_start = time.monotonic()
                self._opened = True
                try:
                    self._popens.append(start_detached(self.runs_dir, self.argv, env=self.environ))
                except OSError as exc:
                    log.warning("cannot start the notifier: %s", exc)
            return st

    @property
    def state(self) -> LinkState:
        if not self.configured:
            return LinkState(OFF, status_line(OFF, error=self.config_error))
        st = self._status or read_status(self.runs_dir)
        if not st.running:
            return LinkState(NOT_RUNNING, st.line())
        return LinkState(st.state, st.line() + f" · notifier pid {st.doc.pid}")

    def send_test(self) -> bool:
        """Ask the notifier for a test post (starting one if none runs). False when posts are off."""
        if not self.configured:
            return False
        rid = request_test(self.runs_dir, host=None)
        with self._lock:
            self._asked.add(rid)
            self._last_start = float("-inf")
        self.tick(live=True)
        return True

    def test_outcomes(self) -> list[tuple[str, dict]]:
        """Outcomes (sent / dropped) of this console's test requests, each reported once."""
        st = self._status
        if st is None:
            return []
        out = []
        for rid, outcome in st.doc.tests.items():
            if rid in self._asked and rid not in self._told:
                self._told.add(rid)
                out.append((rid, outcome))
        return out

    def close(self, timeout: float = 0.0) -> bool:
        """The console is quitting: the notifier keeps running (that is its point)."""
        self._popens = [p for p in self._popens if p.poll() is None]
        return True
