"""Delivery in words and in time (issue 49): each failed attempt (a 5xx, any non-2xx, a connection
refused) is one line in the log; the state, and so the console, shows the latest failure; the log's
"retrying in X s" is the real wait before the next try; and once Discord answers again after an
outage, the posts owed go at once rather than after the whole backoff. Against the fake Discord on
loopback with the real discord.py client; every wait is on a condition with a timeout.
"""

from __future__ import annotations

import logging
import re

from console.notify import ledger, link, service
from console.notify.delivery import FAILING, OK, RETRYING
from console.notify.webhook import ENV_FILE, ENV_URL
from tests.console.fake_discord import FAKE_WEBHOOK_URL, HandMadeRun
from tests.helpers import wait_until

TOKEN = FAKE_WEBHOOK_URL.rsplit("/", 1)[1]
# a try comes no sooner than the log said (less the clocks' grain), and not much later on a loaded machine
EARLY_S, LATE_S = 0.02, 0.35


def failed_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "not delivered" in r.getMessage()]


def said_wait(record: logging.LogRecord) -> float:
    return float(re.search(r"retrying in ([0-9.]+) s", record.getMessage()).group(1))


def test_every_non_2xx_answer_is_one_line_in_the_log_and_the_state_says_the_latest(fake, make_notifier, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.fail_next(429, retry_after=0.05, via=False)
    for status in (500, 502, 503, 413):
        fake.fail_next(status)
    n = make_notifier(failing_after=10)
    n.poll_run(run.dir)
    assert n.wait_idle(15)
    assert [r.status for r in fake.requests] == [429, 500, 502, 503, 413, 200]
    lines = [r.getMessage() for r in failed_lines(caplog)]
    assert len(lines) == 5, lines  # one per failed attempt: discord.py's silent 5xx retries never ran
    for i, (line, status) in enumerate(zip(lines, (429, 500, 502, 503, 413)), 1):
        assert f"failure {i} in a row: Discord answered {status}" in line, line
    assert "scripted failure" in lines[1]  # Discord's own words for the 500
    assert n.state == OK and n.last_error is None


def test_the_state_after_a_429_then_a_500_is_the_500(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100)
    fake.fail_next(429, retry_after=0.05, via=False)
    fake.fail_next(500, times=1000)
    n = make_notifier(failing_after=2)
    n.poll_run(run.dir)
    # at once, not after discord.py's own five silent retries of the 500 (25 s: the 429 showed meanwhile)
    assert wait_until(lambda: (n.last_error or "").startswith("Discord answered 500"), timeout=5)
    state = n.state
    assert state == FAILING and "429" not in state.line() and "Discord answered 500" in state.line()
    fake._failures.clear()
    assert n.wait_idle(10) and n.state.line() == "Discord: ok"


def test_the_console_reads_the_latest_delivery_state_from_the_notifiers_status_file(fake, tmp_path, monkeypatch):
    """The status bar's line comes from RUNS/.notifier/status.json (link.read_status): after a 429
    then a 500 it names the 500, and `ok` once Discord answers again."""
    monkeypatch.setenv(ENV_URL, FAKE_WEBHOOK_URL)
    monkeypatch.delenv(ENV_FILE, raising=False)
    runs_dir = tmp_path / "runs"
    ledger.home(runs_dir).mkdir(parents=True)  # made by the notifier's lock, which this test does not take
    args = service.build_parser().parse_args(["--runs-dir", str(runs_dir), "--no-check", "--backoff", "0.05",
                                              "--backoff-max", "0.2"])
    svc = service.Service(runs_dir, args)
    console_side = link.NotifierLink(runs_dir, environ={ENV_URL: FAKE_WEBHOOK_URL})
    try:
        fake.fail_next(429, retry_after=0.05, via=False)
        fake.fail_next(500, times=1000)
        HandMadeRun(runs_dir, total=100).episodes(10)
        svc.scan()
        assert wait_until(lambda: (svc.notifier.last_error or "").startswith("Discord answered 500"), timeout=5)
        svc.write_status(live=1)
        assert console_side.tick(live=True).running  # the notifier named in the file is this process
        shown = console_side.state
        assert shown.name in (RETRYING, FAILING), shown
        assert "Discord answered 500" in shown.line() and "429" not in shown.line() and TOKEN not in shown.line()
        fake._failures.clear()
        assert svc.notifier.wait_idle(10)
        svc.write_status(live=1)
        console_side.tick(live=True)
        assert console_side.state.name == OK and console_side.state.line().startswith("Discord: ok")
    finally:
        svc.notifier.close(timeout=2.0)


def test_retrying_in_x_s_is_the_real_wait_before_the_next_try(fake, make_notifier, tmp_path, caplog):
    """Measured against the fake's arrival times: the next try comes X s after the line that says so,
    a 429's Retry-After included, and a post queued meanwhile does not cut the wait short (it did: the
    log said 2.0 s and the next try came 0.6-1.1 s later, when the next poll queued an update)."""
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.fail_next(500, times=3)
    fake.fail_next(429, retry_after=0.7, via=False)
    n = make_notifier(backoff_s=0.3, backoff_max_s=0.6, probe_s=0)
    n.poll_run(run.dir)
    assert wait_until(lambda: len(failed_lines(caplog)) >= 1)
    assert n.poll_run(run.episodes(10).dir) == ["update:10"]  # queued during the backoff
    assert n.wait_idle(20)
    posts = [r for r in fake.requests if r.method == "POST"]
    assert [r.status for r in posts] == [500, 500, 500, 429, 200, 200]
    lines = failed_lines(caplog)
    assert [said_wait(r) for r in lines] == [0.3, 0.6, 0.6, 0.7]
    for line, next_try in zip(lines, posts[1:]):
        waited = next_try.at - line.created
        assert said_wait(line) - EARLY_S <= waited <= said_wait(line) + LATE_S, (line.getMessage(), waited)


def test_once_discord_answers_again_the_owed_posts_go_at_once_not_after_the_backoff(fake, make_notifier, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.stop()  # an outage: connection refused
    n = make_notifier(backoff_s=6.0, backoff_max_s=60.0, probe_s=0.2)
    n.poll_run(run.episodes(10).dir)
    assert wait_until(lambda: len(failed_lines(caplog)) >= 1)
    line = failed_lines(caplog)[0]
    assert "cannot reach Discord" in line.getMessage()
    assert "retrying in 6.0 s, or as soon as Discord answers a check of the webhook (one every 0.2 s)" in line.getMessage()
    fake.start()
    assert fake.wait_messages(2, timeout=5.5)  # both owed posts, well inside the 6 s backoff
    assert fake.messages[0].at - line.created < 4.0
    assert any("Discord answers again" in r.getMessage() for r in caplog.records)
    assert n.wait_idle(5) and n.state == OK
    assert [r.method for r in fake.requests] == ["GET", "POST", "POST"]  # one check answered, then the posts


def test_a_try_made_because_a_check_was_answered_that_fails_waits_out_its_whole_backoff(fake, make_notifier, tmp_path, caplog):
    """Discord answers a GET of the webhook but still fails the post: one early try, not one per check."""
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.stop()
    n = make_notifier(backoff_s=0.8, backoff_max_s=60.0, probe_s=0.1)
    n.poll_run(run.dir)
    assert wait_until(lambda: len(failed_lines(caplog)) >= 1)  # refused: waits 0.8 s, checking every 0.1 s
    fake.fail_next(500, method="POST", times=2)
    fake.start()
    assert n.wait_idle(15)
    posts = [r for r in fake.requests if r.method == "POST"]
    assert [r.status for r in posts] == [500, 500, 200]
    first, second, third = failed_lines(caplog)  # refused; 500 after a check (no checks: 1.6 s); 500 (checks)
    assert "(one every" not in second.getMessage() and said_wait(second) == 1.6
    assert [r.method for r in fake.requests if posts[0].at < r.at < posts[1].at] == []  # no check meanwhile
    assert said_wait(second) - EARLY_S <= posts[1].at - second.created <= said_wait(second) + LATE_S
    assert "(one every 0.1 s)" in third.getMessage()
    assert posts[2].at - third.created < said_wait(third) - 1.0  # the next check answered: it went early
