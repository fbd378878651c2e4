"""`fontaine-notify` / `python -m console.notifier --runs-dir DIR`: the Discord notifier as its own
detached process, one per runs folder, so posts keep coming with no console open.

How it starts. The console starts it, detached (own session, output to DIR/.notifier/notifier.log),
when a webhook is configured: when the console opens, when it launches a run, and whenever a run
is live or a test post is asked for and no notifier is running. It can also be started by hand
beside a run launched from a shell (`fontaine-notify --runs-dir runs &`). The engine never starts
it (it never imports the console) and never gets the webhook.

One per runs folder. It holds an exclusive `flock` on DIR/.notifier/lock for its whole life (the
kernel drops it however the process dies); a second one finds the lock held and exits at once,
so two notifiers never post the same thing.

How it stops. When no run in the folder has been live for `--grace` seconds (default 120) and
nothing is left to send, or on SIGTERM/SIGINT: it then waits for a send already on the wire (up
to the HTTP timeout) so that its answer reaches the ledger, reports test posts it could not send
as dropped, writes its final status and exits. Posts still owed are owed by the run directories:
the next notifier sends them (an explicit catch-up for missed updates).

What it writes, all atomically, none of it secret: DIR/.notifier/status.json (state, masked
webhook, a short fingerprint of the URL, pid and create time, queued/sent counts, the outcome of
recent test posts), and each run's posts.jsonl ledger. Test posts are asked for by dropping a
small JSON file in DIR/.notifier/requests/ (`request_test`).

The webhook comes from FONTAINE_DISCORD_WEBHOOK_URL or FONTAINE_DISCORD_WEBHOOK_FILE in its
environment (the console passes its own). A webhook file is re-read when it changes, so a new
URL resumes posting after `failing: webhook gone`; with the URL in the environment, the console
restarts the notifier when its own URL differs (the fingerprints differ).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psutil

from prereg import rundir as rd

HOME = ".notifier"  # under the runs folder; a dot folder, so never taken for a run
LOCK = "lock"
STATUS = "status.json"
LOG = "notifier.log"
REQUESTS = "requests"
STATUS_SCHEMA = 1
CREATE_TIME_TOLERANCE_S = 1.0
TESTS_KEPT = 5

log = logging.getLogger("fontaine.notifier")


def home(runs_dir: Path | str) -> Path:
    return Path(runs_dir) / HOME


def fingerprint(url: str | None) -> str | None:
    """A short hash of the webhook URL: tells two URLs apart, reveals nothing of the token."""
    return hashlib.sha256(url.encode()).hexdigest()[:16] if url else None


# --- the lock: one notifier per runs folder ----------------------------------------------------


NotifierLocked = rd.Locked


class NotifierLock(rd.FileLock):
    """An exclusive flock on DIR/.notifier/lock, held for the notifier's life (the same lock as a
    run directory's); released by the kernel however the process ends."""

    def __init__(self, runs_dir: Path):
        super().__init__(home(runs_dir) / LOCK)


def lock_held(runs_dir: Path) -> bool:
    return rd.lock_holder_at(home(runs_dir) / LOCK) is not None


# --- the process ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fontaine-notify", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs-dir", default="runs", help="the folder of run directories (default: ./runs)")
    p.add_argument("--every", type=int, default=10, help="an update every N episodes (default 10)")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between looks at the runs (default 2)")
    p.add_argument("--grace", type=float, default=120.0,
                   help="exit when no run has been live for this many seconds and nothing is left to send")
    p.add_argument("--linger-max", type=float, default=3600.0,
                   help="with no live run, give up on a failing Discord after this many seconds (the posts stay owed)")
    p.add_argument("--backoff", type=float, default=2.0, help="first retry delay after a failed post (s)")
    p.add_argument("--backoff-max", type=float, default=300.0, help="longest retry delay (s)")
    p.add_argument("--http-timeout", type=float, default=30.0, help="HTTP timeout of one request to Discord (s)")
    p.add_argument("--gone-after", type=int, default=3, help="401/403/404 this many times: stop until the URL changes")
    p.add_argument("--no-check", action="store_true", help="do not GET the webhook at start")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    runs_dir = Path(args.runs_dir).resolve()
    try:
        lock = NotifierLock(runs_dir).acquire()
    except NotifierLocked:
        log.info("another notifier already serves %s (it holds %s); exiting", runs_dir, home(runs_dir) / LOCK)
        return 0
    try:
        return Service(runs_dir, args).run()
    finally:
        lock.release()


class Service:
    """The loop of the detached notifier: poll runs, pick up test requests, write status."""

    def __init__(self, runs_dir: Path, args):
        from console import discord_notify as dn

        self.dn = dn
        self.runs_dir = runs_dir
        self.args = args
        self.stop = threading.Event()
        self.file_sig: tuple | None = None
        self.started_at = rd.utc_now()
        self.tests: dict[str, dict] = {}  # request id -> outcome, the newest TESTS_KEPT
        self.pending_tests: dict[str, Path] = {}
        self.config_error: str | None = None
        url = self._load_url()
        self.notifier = dn.Notifier(
            url, every_episodes=args.every, backoff_s=args.backoff, backoff_max_s=args.backoff_max,
            request_timeout_s=args.http_timeout, gone_after=args.gone_after, validate=not args.no_check,
            config_error=self.config_error,
        )
        me = psutil.Process()
        self.ident = {"pid": me.pid, "create_time": me.create_time()}

    def _load_url(self) -> str | None:
        try:
            url = self.dn.load_webhook_url(os.environ)
            self.config_error = None
            return url
        except self.dn.WebhookConfigError as exc:
            self.config_error = str(exc)
            return None

    def _file_changed(self) -> bool:
        path = os.environ.get(self.dn.ENV_FILE)
        if not path or os.environ.get(self.dn.ENV_URL):
            return False
        try:
            st = Path(path).expanduser().stat()
            sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            sig = None
        changed = self.file_sig is not None and sig != self.file_sig
        self.file_sig = sig
        return changed

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: self.stop.set())
        self._file_changed()
        n = self.notifier
        log.info("notifier for %s started (webhook %s, pid %d)", self.runs_dir, n.masked_url or "off", os.getpid())
        n.start()
        last_live = time.monotonic()
        reason = "signal"
        while not self.stop.is_set():
            if self._file_changed():
                n.set_url(self._load_url())
                log.info("webhook file changed: now %s", n.masked_url or "off")
            live = 0
            for path in self._runs():
                try:
                    n.poll_run(path)
                except Exception as exc:  # one bad run directory must not stop the others
                    log.warning("cannot poll %s: %s", path.name, exc)
                live += self._is_live(path)
            self._take_requests()
            now = time.monotonic()
            if live:
                last_live = now
            idle_for = now - last_live
            nothing_left = n.pending == 0 or n.gone or n.state == self.dn.OFF
            if not live and ((nothing_left and not self.pending_tests and idle_for >= self.args.grace)
                             or idle_for >= self.args.linger_max):
                reason = f"no live run for {idle_for:.0f} s"
                break
            self.write_status(live=live)
            self.stop.wait(self.args.poll)
        log.info("notifier stopping (%s)", reason)
        self.write_status(live=0, closing=reason)
        n.close(timeout=min(5.0, self.args.http_timeout))
        self._collect_tests()
        for rid in list(self.pending_tests):
            self._answer(rid, {"state": "dropped", "reason": "the notifier stopped before it was sent", "at": rd.utc_now()})
        self.write_status(live=0, exited=reason)
        log.info("notifier exited (%s)", reason)
        return 0

    def _runs(self) -> list[Path]:
        from console.runs import discover_runs

        return discover_runs(self.runs_dir)

    def _is_live(self, path: Path) -> bool:
        """Live: the recorded state is live and the driver's process is there (or, before its
        pid.json exists, the status was written within the grace period)."""
        from console.runs import ALIVE, UNKNOWN, liveness

        status = rd.read_json(path / rd.STATUS) or {}
        if status.get("state") not in rd.LIVE_STATES and (status or (path / rd.PID).exists()):
            return False
        alive = liveness(rd.read_json(path / rd.PID))
        if alive == ALIVE:
            return True
        if alive == UNKNOWN:
            age = rd.mtime_age_s(path / rd.STATUS) or rd.mtime_age_s(path / rd.MANIFEST)
            return age is not None and age < self.args.grace
        return False

    # -- test posts ---------------------------------------------------------------------

    def _take_requests(self) -> None:
        self._collect_tests()
        folder = home(self.runs_dir) / REQUESTS
        try:
            files = sorted(folder.glob("test-*.json"))
        except OSError:
            return
        for f in files:
            rid = f.stem
            if rid in self.pending_tests or rid in self.tests:
                continue
            req = rd.read_json(f) or {}
            self.pending_tests[rid] = f
            if not self.notifier.send_test(rid, host=str(req.get("host") or "") or None):
                self._collect_tests()

    def _collect_tests(self) -> None:
        for rid in list(self.pending_tests):
            outcome = self.notifier.test_results.get(rid)
            if outcome is not None:
                self._answer(rid, outcome)

    def _answer(self, rid: str, outcome: dict) -> None:
        path = self.pending_tests.pop(rid, None)
        self.tests[rid] = outcome
        while len(self.tests) > TESTS_KEPT:
            self.tests.pop(next(iter(self.tests)))
        log.info("test post %s: %s%s", rid, outcome["state"], f" ({outcome['reason']})" if outcome.get("reason") else "")
        self.write_status(live=0)
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass

    # -- status -------------------------------------------------------------------------

    def write_status(self, *, live: int, closing: str | None = None, exited: str | None = None) -> None:
        st = self.notifier.state
        doc = {
            "schema": STATUS_SCHEMA, **self.ident, "started_at": self.started_at, "updated_at": rd.utc_now(),
            "state": st.name, "error": st.last_error, "line": st.line(), "pending": st.pending, "sent": st.sent,
            "target": st.target, "fingerprint": fingerprint(self.notifier._url), "live_runs": live,
            "grace_s": self.args.grace, "tests": self.tests, "tests_queued": sorted(self.pending_tests),
            "closing": closing, "exited": exited, "exited_at": rd.utc_now() if exited else None,
        }
        try:
            rd.write_json_atomic(home(self.runs_dir) / STATUS, doc)
        except OSError as exc:
            log.warning("cannot write the notifier status: %s", exc)


# --- what the console uses ----------------------------------------------------------------------


@dataclass(frozen=True)
class NotifierStatus:
    """The detached notifier as the console sees it: running or not, and its last status."""

    running: bool
    doc: dict

    @property
    def state(self) -> str:
        return str(self.doc.get("state") or "unknown")

    def line(self) -> str:
        if not self.doc:
            return "Discord: notifier not running"
        if not self.running:
            return "Discord: notifier not running" + (f" (last: {self.doc.get('line')})" if self.doc.get("line") else "")
        return str(self.doc.get("line") or f"Discord: {self.state}")


def read_status(runs_dir: Path | str) -> NotifierStatus:
    """The notifier's status file, and whether the process it names is still the one running
    (its pid, with the same create time, not a zombie) and holding the lock."""
    doc = rd.read_json(home(runs_dir) / STATUS) or {}
    running = False
    if isinstance(doc.get("pid"), int) and not doc.get("exited"):
        try:
            proc = psutil.Process(doc["pid"])
            same = abs(proc.create_time() - float(doc.get("create_time") or 0)) <= CREATE_TIME_TOLERANCE_S
            running = same and proc.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, TypeError, ValueError):
            running = False
    return NotifierStatus(running=running, doc=doc)


def notifier_argv(runs_dir: Path | str) -> list[str]:
    return [sys.executable, "-m", "console.notifier", "--runs-dir", str(runs_dir)]


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
    rd.write_json_atomic(folder / f"{rid}.json", {"kind": "test", "host": host, "at": rd.utc_now()})
    return rid


def stop_notifier(runs_dir: Path | str, timeout: float = 40.0) -> bool:
    """SIGTERM the folder's notifier (it finishes a send on the wire first); True once it is gone."""
    st = read_status(runs_dir)
    if not st.running:
        return True
    try:
        proc = psutil.Process(st.doc["pid"])
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
        from console import discord_notify as dn

        self.runs_dir = Path(runs_dir)
        self.argv = argv or notifier_argv(self.runs_dir)
        self.environ = dict(os.environ if environ is None else environ)
        self.start_every_s = start_every_s
        try:
            self.url, self.config_error = dn.load_webhook_url(self.environ), None
        except dn.WebhookConfigError as exc:
            self.url, self.config_error = None, str(exc)
        self.setup_hint = dn.SETUP_HINT if self.url is None and self.config_error is None else None
        self.url_from_env = bool(self.environ.get(dn.ENV_URL))
        self.masked_url = dn.mask_webhook_url(self.url) if self.url else None
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
            if st.running and self.url_from_env and st.doc.get("fingerprint") not in (None, fingerprint(self.url)):
                log.info("the notifier serves another webhook than this console's: restarting it")
                stop_notifier(self.runs_dir)
                st = read_status(self.runs_dir)
            if st.running or lock_held(self.runs_dir):
                self._opened = True
                return st
            wanted = live or not self._opened or bool(self._asked - set(st.doc.get("tests") or {}))
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
            return LinkState("off", "Discord: off" + (f" ({self.config_error})" if self.config_error else ""))
        st = self._status or read_status(self.runs_dir)
        if not st.running:
            return LinkState("not running", st.line())
        return LinkState(st.state, st.line() + f" · notifier pid {st.doc.get('pid')}")

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
        for rid, outcome in (st.doc.get("tests") or {}).items():
            if rid in self._asked and rid not in self._told:
                self._told.add(rid)
                out.append((rid, outcome))
        return out

    def close(self, timeout: float = 0.0) -> bool:
        """The console is quitting: the notifier keeps running (that is its point)."""
        self._popens = [p for p in self._popens if p.poll() is None]
        return True


if __name__ == "__main__":
    sys.exit(main())
