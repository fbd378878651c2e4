"""`fontaine-notify` / `python -m console.notify.service --runs-dir DIR`: the Discord notifier as its own
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
small JSON file in DIR/.notifier/requests/ (`console/notify/link.py`'s `request_test`, which is
also how the console starts this process and reads its status).

Which runs there are, and which are live, is prereg/rundir/discovery.py's (the console's too).

The webhook comes from FONTAINE_DISCORD_WEBHOOK_URL or FONTAINE_DISCORD_WEBHOOK_FILE in its
environment (the console passes its own). A webhook file is re-read when it changes, so a new
URL resumes posting after `failing: webhook gone`; with the URL in the environment, the console
restarts the notifier when its own URL differs (the fingerprints differ).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil

from console.notify.delivery import OFF, RETRY, RetryPolicy
from console.notify.ledger import LOCK, LOG, REQUESTS, STATUS, STATUS_SCHEMA, NotifierDoc, NotifierLock, NotifierLocked, home
from console.notify.sender import Notifier
from console.notify.snapshot import EVERY_EPISODES
from console.notify.webhook import ENV_FILE, ENV_URL, fingerprint, webhook_setting
from prereg import rundir as rd
from prereg.core.argcheck import DAY_S, POLL_MAX_S, OneLineParser, bounded_float, bounded_int, parse_once, path_type
from prereg.core.errors import UsageError, log_to, run_cli
from prereg.core.limits import MAX_SEEDS
from prereg.core.safe_read import os_error_why
from prereg.rundir.discovery import discover_runs
from prereg.rundir.runstate import driver_live

TESTS_KEPT = 5

log = logging.getLogger("fontaine.notifier")


# --- the process ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """`fontaine-notify`; an error is one line and its exit code (prereg.core.errors.run_cli), a bug's
    traceback goes to DIR/.notifier/notifier.log once the runs folder is known."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_cli("fontaine-notify", lambda: _main(argv))


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="fontaine-notify", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--runs-dir", type=path_type, default=Path("runs"), help="the folder of run directories (default: ./runs)")
    p.add_argument("--every", type=bounded_int(1, MAX_SEEDS), default=EVERY_EPISODES,
                   help=f"an update every N episodes (default {EVERY_EPISODES})")
    p.add_argument("--poll", type=bounded_float(0, POLL_MAX_S), default=2.0,
                   help=f"seconds between looks at the runs (default 2, at most {POLL_MAX_S:g})")
    p.add_argument("--grace", type=bounded_float(0, 7 * DAY_S, inclusive=True), default=120.0,
                   help="exit when no run has been live for this many seconds and nothing is left to send")
    p.add_argument("--linger-max", type=bounded_float(0, 7 * DAY_S, inclusive=True), default=3600.0,
                   help="with no live run, give up on a failing Discord after this many seconds (the posts stay owed)")
    p.add_argument("--backoff", type=bounded_float(0, DAY_S, inclusive=True), default=RETRY.backoff_s,
                   help=f"first retry delay after a failed post (s; default {RETRY.backoff_s:g})")
    p.add_argument("--backoff-max", type=bounded_float(0, DAY_S, inclusive=True), default=RETRY.backoff_max_s,
                   help=f"longest retry delay (s; default {RETRY.backoff_max_s:g})")
    p.add_argument("--http-timeout", type=bounded_float(0, 600), default=RETRY.request_timeout_s,
                   help=f"HTTP timeout of one request to Discord (s; default {RETRY.request_timeout_s:g})")
    p.add_argument("--probe", type=bounded_float(0, DAY_S, inclusive=True), default=RETRY.probe_s,
                   help=f"while posts wait out a long backoff, check every N s whether Discord answers again "
                        f"and send them then (0: never; default {RETRY.probe_s:g})")
    p.add_argument("--gone-after", type=bounded_int(1, 1000), default=RETRY.gone_after,
                   help=f"401/403/404 this many times: stop until the URL changes (default {RETRY.gone_after})")
    p.add_argument("--no-check", action="store_true", help="do not GET the webhook at start")
    return p


def _main(argv: list[str]) -> int:
    args = parse_once(build_parser(), argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    runs_dir = _runs_folder(args.runs_dir)
    _, config_error = webhook_setting(os.environ)
    if config_error:  # set but unusable (not a Discord URL, a file others can read, a FIFO): say so, run nothing
        raise UsageError(f"{config_error}; no notifier started")
    try:
        lock = NotifierLock(runs_dir).acquire()
    except NotifierLocked:
        log.info("another notifier already serves %s (it holds %s); exiting", runs_dir, home(runs_dir) / LOCK)
        return 0
    except OSError as exc:
        raise UsageError(f"--runs-dir {args.runs_dir}: cannot hold the notifier's lock in {home(runs_dir)}: "
                         f"{os_error_why(exc)}") from None
    log_to(home(runs_dir) / LOG)  # a bug's traceback, from here on, goes to the notifier's own log
    try:
        return Service(runs_dir, args).run()
    finally:
        lock.release()


def _runs_folder(given: Path) -> Path:
    """--runs-dir, resolved: a folder (or one to be made), never a file or a symlink loop."""
    try:
        runs_dir = given.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise UsageError(f"--runs-dir {given}: cannot be resolved ({exc})") from None
    if runs_dir.exists() and not runs_dir.is_dir():
        raise UsageError(f"--runs-dir {given} is a file, not a folder of run directories")
    return runs_dir


class Service:
    """The loop of the detached notifier: poll runs, pick up test requests, write status."""

    def __init__(self, runs_dir: Path, args):
        self.runs_dir = runs_dir
        self.args = args
        self.stop = threading.Event()
        self.file_sig: tuple | None = None
        self.started_at = rd.utc_now()
        self.tests: dict[str, dict] = {}  # request id -> outcome, the newest TESTS_KEPT
        self.pending_tests: dict[str, Path] = {}
        self.config_error: str | None = None
        url = self._load_url()
        retry = RetryPolicy(backoff_s=args.backoff, backoff_max_s=args.backoff_max,
                            request_timeout_s=args.http_timeout, gone_after=args.gone_after,
                            probe_s=args.probe)
        self.notifier = Notifier(url, every_episodes=args.every, retry=retry, validate=not args.no_check,
                                 config_error=self.config_error)
        me = psutil.Process()
        self.ident = {"pid": me.pid, "create_time": me.create_time()}

    def _load_url(self) -> str | None:
        url, self.config_error = webhook_setting(os.environ)
        return url

    def _file_changed(self) -> bool:
        path = os.environ.get(ENV_FILE)
        if not path or os.environ.get(ENV_URL):
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
            live = self.scan()
            self._take_requests()
            now = time.monotonic()
            if live:
                last_live = now
            idle_for = now - last_live
            nothing_left = n.pending == 0 or n.gone or n.state == OFF
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

    def scan(self) -> int:
        """One look at every run in the folder: queue the posts each is owed. A run directory that
        cannot be read (a FIFO, a loop, a wrong type) is logged and skipped; the others go on.
        Returns how many runs are live."""
        live = 0
        for path in discover_runs(self.runs_dir):
            try:
                self.notifier.poll_run(path)
            except Exception as exc:  # noqa: BLE001 - one bad run directory must not stop the others
                log.warning("cannot poll %s: %s", path.name, exc)
            try:  # counted apart: a live run whose posts cannot be built still keeps the notifier up
                live += driver_live(path, self.args.grace)
            except Exception as exc:  # noqa: BLE001
                log.warning("cannot tell whether %s is live: %s", path.name, exc)
        return live

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
        doc = NotifierDoc(
            schema=STATUS_SCHEMA, pid=self.ident["pid"], create_time=self.ident["create_time"],
            started_at=self.started_at, updated_at=rd.utc_now(), state=st.name, error=st.last_error, line=st.line(),
            pending=st.pending, sent=st.sent, target=st.target, fingerprint=fingerprint(self.notifier.url),
            live_runs=live, grace_s=self.args.grace, tests=self.tests, tests_queued=tuple(sorted(self.pending_tests)),
            closing=closing, exited=exited, exited_at=rd.utc_now() if exited else None)
        try:
            rd.write_json_atomic(home(self.runs_dir) / STATUS, doc.to_dict())
        except OSError as exc:
            log.warning("cannot write the notifier status: %s", exc)


if __name__ == "__main__":
    sys.exit(main())
