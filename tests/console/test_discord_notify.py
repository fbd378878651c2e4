"""The Discord notifier against a fake Discord API on loopback, with the real discord.py client.

Every wait is on a condition with a timeout. Backoff is shortened through the constructor (a 5xx
is ours to retry, as any failure: discord.py's own silent 5xx retries never run).
"""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from console.notify.delivery import FAILING, OFF, OK, RETRYING, UNKNOWN
from console.notify.ledger import INFLIGHT, LEDGER, read_ledger
from console.notify.sender import Notifier
from console.notify.webhook import ENV_FILE, ENV_URL, SETUP_HINT, mask_webhook_url
from tests.console.fake_discord import FAKE_WEBHOOK_URL, FakeDiscord, HandMadeRun
from tests.helpers import returns_within

TOKEN = FAKE_WEBHOOK_URL.rsplit("/", 1)[1]
WEBHOOK_ID = FAKE_WEBHOOK_URL.rsplit("/", 2)[1]


def keys_posted(fake: FakeDiscord) -> list[str]:
    return [footer.rsplit(" · ", 1)[1] for footer in fake.footers()]


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.01)
    return True


def test_a_run_of_25_episodes_posts_launch_updates_at_10_and_20_and_results_with_the_chart(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=25)
    n = make_notifier()
    assert n.poll_run(run.dir) == ["launch"]
    assert n.poll_run(run.episodes(5).dir) == []
    assert n.poll_run(run.episodes(10).dir) == ["update:10"]
    assert n.poll_run(run.dir) == []  # polled again: nothing owed twice
    assert n.poll_run(run.episodes(19).dir) == []
    assert n.poll_run(run.episodes(20).dir) == ["update:20"]
    assert n.wait_idle(10)  # sent before the run ends (a post still queued then folds into the end post)
    run.episodes(25, state="done").results()
    assert n.poll_run(run.dir) == ["results"]
    assert n.wait_idle(10)

    assert keys_posted(fake) == ["launch", "update:10", "update:20", "results"]
    launch, up10, up20, results = fake.messages
    assert "flow-official-100" in launch.payload["embeds"][0]["description"]
    assert "25 seeds (0–24)" in launch.payload["embeds"][0]["description"]
    assert "10/25" in up10.payload["embeds"][0]["title"]
    assert "successes **4**" in up20.payload["embeds"][0]["description"]
    assert "GPU-hours 0.08 of 1.5 gate" in up20.payload["embeds"][0]["description"]
    assert results.files == [("chart.png", (run.dir / "chart.png").read_bytes())]
    assert results.payload["embeds"][0]["image"]["url"] == "attachment://chart.png"
    assert "5/25 (CI95 0.09-0.39)" in results.payload["embeds"][0]["description"]
    assert all(m.payload["allowed_mentions"] == {"parse": []} for m in fake.messages)
    assert all(m.query["wait"] == "1" for m in fake.messages)

    ledger = read_ledger(run.dir)
    assert [e["key"] for e in ledger] == ["launch", "update:10", "update:20", "results"]
    assert [e["episodes"] for e in ledger] == [0, 10, 20, 25]
    assert [e["message_id"] for e in ledger] == [str(1_300_000_000_000_000_001 + i) for i in range(4)]
    assert not (run.dir / INFLIGHT).exists()
    assert n.status() == OK and n.status().sent == 4


def test_a_429_and_a_5xx_are_retried_and_the_posts_arrive_in_order(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(20)
    fake.fail_next(500)  # retried after our backoff (discord.py's own 5xx retries never run)
    fake.fail_next(429, retry_after=0.05)  # with Via: discord.py waits retry_after and retries
    fake.fail_next(429, retry_after=0.05, via=False)  # without Via: discord.py raises, we back off
    n = make_notifier()
    assert n.poll_run(run.dir) == ["launch", "update:20"]
    assert n.wait_idle(15)
    assert [r.status for r in fake.requests] == [500, 429, 429, 200, 200]
    assert keys_posted(fake) == ["launch", "update:20"]
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch", "update:20"]
    assert n.state == OK and n.last_error is None


def test_an_outage_delays_the_posts_and_loses_none(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100)
    n = make_notifier(failing_after=3)
    fake.stop()
    n.poll_run(run.dir)
    n.poll_run(run.episodes(10).dir)
    assert wait_until(lambda: n.state == FAILING)
    state = n.state  # what the console's status bar reads: a str with the details attached
    assert state.name == "failing" and state.pending == 2 and "cannot reach Discord" in state.last_error
    assert state.line().startswith("Discord: failing · 2 queued · cannot reach Discord")
    n.poll_run(run.episodes(20).dir)
    assert n.pending == 3 and fake.messages == [] and not (run.dir / LEDGER).exists()

    fake.start()
    assert n.wait_idle(10)
    assert keys_posted(fake) == ["launch", "update:10", "update:20"]
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch", "update:10", "update:20"]
    assert n.state == OK and n.last_error is None


def test_a_restarted_console_catches_up_without_repeating_a_post(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100)
    first = make_notifier()
    first.poll_run(run.dir)
    first.poll_run(run.episodes(10).dir)
    assert first.close(timeout=5)

    run.episodes(45)  # the console was away for updates 20, 30, 40
    second = make_notifier()
    assert second.poll_run(run.dir) == ["update:40"]
    assert second.poll_run(run.episodes(50).dir) == ["update:50"]
    assert second.wait_idle(10)  # sent before the run ends (a post still queued then folds into the end post)
    run.episodes(100, state="done").results()
    assert second.poll_run(run.dir) == ["results"]
    assert second.wait_idle(10)

    assert keys_posted(fake) == ["launch", "update:10", "update:40", "update:50", "results"]
    catch_up = fake.messages[2].payload["embeds"][0]["description"]
    assert "caught up" in catch_up and "at 20/100: successes 4" in catch_up and "at 30/100: successes 6" in catch_up
    assert read_ledger(run.dir)[2]["covers"] == ["update:20", "update:30"]
    third = make_notifier()  # and a third console, after the end, owes nothing
    assert third.poll_run(run.dir) == []


def test_a_completed_run_posts_done_then_its_frozen_reads_when_the_report_is_written(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=10).episodes(5)
    n = make_notifier()
    assert n.poll_run(run.dir) == ["launch"]
    assert n.poll_run(run.episodes(10, state="done").dir) == ["done"]
    assert n.poll_run(run.dir) == []
    assert n.poll_run(run.results().dir) == ["results"]
    assert n.wait_idle(10)
    assert keys_posted(fake) == ["launch", "done", "results"]
    assert fake.messages[-1].files[0][0] == "chart.png"


def test_posts_still_queued_when_the_console_quit_are_sent_by_the_next_one(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    fake.stop()
    first = make_notifier()
    assert first.poll_run(run.dir) == ["launch", "update:10"]
    assert wait_until(lambda: first.state in (RETRYING, FAILING))
    # not flushed: the run directory still owes them; and quitting does not wait on a failing Discord
    # (a close that did would take its 30 s timeout)
    assert returns_within(lambda: first.close(timeout=30), timeout=10, what="close") is False
    fake.start()
    second = make_notifier()
    assert second.poll_run(run.dir) == ["launch", "update:10"]
    assert second.wait_idle(10)
    assert keys_posted(fake) == ["launch", "update:10"]


def test_a_post_caught_in_the_crash_window_is_sent_again_marked_as_a_possible_repeat(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    (run.dir / LEDGER).write_text('{"key": "launch", "kind": "launch", "episodes": 0, "message_id": "1"}\n')
    (run.dir / INFLIGHT).write_text('{"key": "update:10", "kind": "update"}')
    n = make_notifier()
    assert n.poll_run(run.dir) == ["update:10"]
    assert n.wait_idle(10)
    note = fake.messages[0].payload["embeds"][0]["description"].splitlines()[-1]
    # it says what happened: the notifier (killed, not the console) stopped before recording the answer
    assert "may repeat" in note and "notifier" in note and "before recording" in note and "console" not in note
    assert not (run.dir / INFLIGHT).exists()

    # A marker for a post the ledger already has: the post made it; nothing is re-sent.
    (run.dir / INFLIGHT).write_text('{"key": "update:10", "kind": "update"}')
    again = make_notifier()
    assert again.poll_run(run.dir) == []
    assert not (run.dir / INFLIGHT).exists()


def test_the_webhook_url_and_token_appear_in_no_log_and_no_file_of_the_run(fake, make_notifier, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    run = HandMadeRun(tmp_path, total=25)
    fake.fail_next(429, retry_after=0.05)  # discord.py logs a warning naming the webhook
    fake.fail_next(404)  # an error message from Discord reaches our log and last_error
    n = make_notifier()
    n.poll_run(run.episodes(10).dir)
    assert n.wait_idle(10)
    fake.stop()
    n.poll_run(run.episodes(20).dir)
    assert wait_until(lambda: n.state == FAILING)
    failing = n.status()
    fake.start()
    n.poll_run(run.episodes(25, state="done").results().dir)
    assert n.wait_idle(10)
    n.close(2)

    assert logging.getLogger("discord").getEffectiveLevel() >= logging.WARNING
    assert "rate limited" in caplog.text and "cannot reach Discord" in caplog.text  # the logs were exercised
    shown = [caplog.text, repr(n), failing.line(), str(failing), failing.last_error, n.status().line()]
    for text in shown:
        assert TOKEN not in text and WEBHOOK_ID not in text and FAKE_WEBHOOK_URL not in text
    for path in run.dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert TOKEN.encode() not in data and WEBHOOK_ID.encode() not in data, path
    assert n.status().target == mask_webhook_url(FAKE_WEBHOOK_URL) == "https://discord.com/api/webhooks/1234…/****"


@pytest.mark.parametrize("discord", ["down", "answering 60 s late"])
def test_polling_and_test_posts_return_at_once_while_discord_is_down_or_slow(fake, make_notifier, tmp_path, discord):
    """Posts are queued, never sent inline: a poll or a test post that waited on Discord would take
    the late answer's 60 s (or retry forever), not return."""
    if discord == "down":
        fake.stop()
    else:
        fake.delay_next(60.0, times=3)
    run = HandMadeRun(tmp_path, total=100).episodes(30)
    n = make_notifier(request_timeout_s=120.0)

    def poll_and_test():
        n.poll_run(run.dir)
        return n.send_test()

    assert returns_within(poll_and_test, timeout=10, what="poll_run and send_test") is True
    assert n.pending == 3
    if discord != "down":
        fake.release_delays()
        assert n.wait_idle(10) and [e["key"] for e in read_ledger(run.dir)] == ["launch", "update:30"]
        return
    fake.start()
    assert n.wait_idle(10)
    assert [m.payload["embeds"][0]["title"] for m in fake.messages][-1] == "Test post"
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch", "update:30"]  # the test post has no ledger


def test_a_deleted_webhook_reads_failing_with_an_actionable_error_and_recovers(fake, make_notifier):
    fake.fail_next(404, times=2)
    fake.delay_next(2.0)  # the post that recovers is answered late: `failing` lasts seconds, not one backoff
    n = make_notifier(failing_after=5)
    n.send_test()
    assert wait_until(lambda: n.state == FAILING)
    assert "404" in n.last_error and "set a new one" in n.last_error
    assert n.wait_idle(10) and n.state == OK


def test_an_embed_discord_rejects_is_sent_as_plain_text_rather_than_blocking_the_queue(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    fake.fail_next(400)
    n = make_notifier()
    n.poll_run(run.dir)
    assert n.wait_idle(10)
    first, second = fake.messages
    assert "embeds" not in first.payload and "Launch" in first.payload["content"]
    assert second.payload["embeds"]
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch", "update:10"]


# --- configuration ---------------------------------------------------------------------------


def test_without_a_webhook_the_notifier_is_off_says_how_to_set_one_up_and_writes_nothing(tmp_path):
    n = Notifier.from_env(environ={})
    assert n.state == OFF and n.setup_hint == SETUP_HINT and ENV_URL in n.setup_hint
    run = HandMadeRun(tmp_path).episodes(10)
    assert n.poll_run(run.dir) == [] and n.send_test() is False
    assert not (run.dir / LEDGER).exists() and n.close(0.1)
    assert n.status().line() == "Discord: off"


def test_the_webhook_comes_from_the_environment():
    n = Notifier.from_env(every_episodes=5, environ={ENV_URL: FAKE_WEBHOOK_URL})
    assert n.state == UNKNOWN and n.every_episodes == 5 and n.setup_hint is None


def test_a_webhook_file_must_be_readable_only_by_its_owner(tmp_path):
    f = tmp_path / "webhook"
    f.write_text(FAKE_WEBHOOK_URL + "\n")
    os.chmod(f, 0o644)
    n = Notifier.from_env(environ={ENV_FILE: str(f)})
    assert n.state == OFF and "chmod 600" in n.last_error and str(f) in n.last_error
    assert TOKEN not in n.last_error
    os.chmod(f, 0o600)
    assert Notifier.from_env(environ={ENV_FILE: str(f)}).state == UNKNOWN  # until Discord answers


def test_a_malformed_webhook_is_refused_without_echoing_it():
    bad = "https://discord.com/api/webhooks/123/secret-ish"
    n = Notifier.from_env(environ={ENV_URL: bad})
    assert n.state == OFF and "not a Discord webhook URL" in n.last_error and "secret-ish" not in n.last_error
    missing = Notifier.from_env(environ={ENV_FILE: "/nonexistent/webhook"})
    assert missing.state == OFF and "cannot read" in missing.last_error


# --- a dead webhook, the check at start, a send on the wire at shutdown ----------------------

OTHER_URL = FAKE_WEBHOOK_URL.replace("123456789012345678", "223456789012345678").replace("Zq3v", "Aa1b")


def test_a_dead_webhook_is_tried_at_most_3_times_then_reads_webhook_gone_and_resumes_on_a_new_url(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    fake.fail_next(404, times=50)
    n = make_notifier()
    n.poll_run(run.dir)
    assert wait_until(lambda: n.gone)
    assert len(fake.requests) == 3 and {r.status for r in fake.requests} == {404}
    line = n.state.line()
    assert line.startswith("Discord: failing: webhook gone") and "2 queued" in line and TOKEN not in line
    gone = [e for e in read_ledger(run.dir) if e.get("event") == "webhook_gone"]
    assert len(gone) == 1 and gone[0]["owed"] == ["launch", "update:10"] and gone[0]["status"] == 404
    assert n.send_test("t1") is False and n.test_results["t1"]["state"] == "dropped"
    assert "webhook gone" in n.test_results["t1"]["reason"]
    n.poll_run(run.episodes(20).dir)  # more owed, still nothing tried
    assert not fake.wait_for(lambda f: len(f.requests) > 3, timeout=0.5)

    fake._failures.clear()
    n.set_url(OTHER_URL)  # the owner pasted a new webhook: the queue goes out, in order
    assert n.wait_idle(10) and n.state == OK
    assert keys_posted(fake) == ["launch", "update:10", "update:20"]
    assert [r.status for r in fake.requests[3:]] == [200, 200, 200]


def test_webhook_gone_is_published_only_once_the_ledger_says_so(fake, make_notifier, tmp_path, monkeypatch):
    from prereg import rundir as rd

    append_line = rd.append_line

    def slow_disk(path, obj):  # a slow fsync: the ledger line lands well after the 404 is counted
        time.sleep(0.3)
        append_line(path, obj)

    monkeypatch.setattr(rd, "append_line", slow_disk)
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    fake.fail_next(404, times=3)
    n = make_notifier()
    n.poll_run(run.dir)
    assert wait_until(lambda: n.gone or n.state.line().startswith("Discord: failing: webhook gone"))
    assert [e["owed"] for e in read_ledger(run.dir) if e.get("event") == "webhook_gone"] == [["launch", "update:10"]]


def test_the_webhook_is_checked_at_start_unknown_until_discord_answers(fake, make_notifier):
    n = make_notifier(validate=True)
    assert n.state == UNKNOWN and n.state.line() == "Discord: unknown"
    n.start()
    assert wait_until(lambda: n.state == OK)
    assert [r.method for r in fake.requests] == ["GET"] and fake.messages == []

    fake.fail_next(401, times=5)
    bad = make_notifier(validate=True)
    bad.start()
    assert wait_until(lambda: bad.gone)
    assert [r.status for r in fake.requests[1:]] == [401, 401, 401]


def test_a_send_on_the_wire_at_shutdown_is_waited_for_and_recorded_so_it_is_never_sent_twice(fake, make_notifier, tmp_path):
    run = HandMadeRun(tmp_path, total=100)
    fake.delay_next(2.0)  # Discord has created the message; its answer is late
    first = make_notifier(request_timeout_s=10)
    first.poll_run(run.dir)
    assert fake.wait_messages(1)
    first.close(timeout=0.1)  # quitting: the send on the wire is waited for, not abandoned
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch"] and not (run.dir / INFLIGHT).exists()
    second = make_notifier()
    assert second.poll_run(run.dir) == []
    assert len(fake.messages) == 1


def test_a_test_post_still_queued_at_close_is_reported_dropped(fake, make_notifier):
    fake.stop()
    n = make_notifier()
    assert n.send_test("t9") is True
    assert wait_until(lambda: n.state in (RETRYING, FAILING))
    n.close(timeout=0.2)
    assert n.test_results["t9"]["state"] == "dropped" and "stopped" in n.test_results["t9"]["reason"]


def test_each_failed_attempt_is_a_line_in_the_log(fake, make_notifier, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.fail_next(429, retry_after=0.05, via=False, times=4)  # the same error four times in a row
    n = make_notifier()
    assert n.poll_run(run.dir) == ["launch"]
    assert n.wait_idle(20)
    failed = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(failed) == 4, failed  # each attempt, not only the first of a kind
    assert [f"failure {i} in a row" in line for i, line in enumerate(failed, 1)] == [True] * 4
    assert all("post launch of flow-a-20261130-080000" in line for line in failed)


def test_the_log_of_a_dead_webhook_counts_its_tries_as_they_happen(fake, make_notifier, tmp_path, caplog):
    """The first 404 is failure 1 in a row and try 1 of 3 (it read 'failure 3 in a row … (try 1 of 3)'),
    and the state says failing at once: retrying will not bring a deleted webhook back."""
    caplog.set_level(logging.INFO)
    run = HandMadeRun(tmp_path, total=100)
    fake.fail_next(404, times=3)
    n = make_notifier()
    n.poll_run(run.dir)
    assert wait_until(lambda: n.gone)
    failed = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(failed) == 2, failed  # the third 404 gives up (its own line: webhook gone)
    for i, line in enumerate(failed, 1):
        assert f"failure {i} in a row" in line and f"(try {i} of 3)" in line, line
    assert any("webhook gone: Discord answered 404 3 times" in r.getMessage() for r in caplog.records)


def test_a_send_that_got_no_answer_is_retried_marked_as_a_possible_repeat(fake, make_notifier, tmp_path):
    """Discord created the message but its answer came after the HTTP timeout: without a nonce the
    retry makes a second copy, and says it may be one. A post Discord refused or never got is not marked."""
    run = HandMadeRun(tmp_path, total=100)
    fake.delay_next(3.0)  # created at once, answered after the notifier gave up waiting
    n = make_notifier(request_timeout_s=0.5)
    n.poll_run(run.dir)
    assert n.wait_idle(20)
    fake.release_delays()
    assert keys_posted(fake) == ["launch", "launch"]
    first, second = (m.payload["embeds"][0]["description"] for m in fake.messages)
    assert "may repeat" not in first
    assert second.splitlines()[-1] == "*may repeat: an earlier try of this post got no answer from Discord*"
    assert [e["key"] for e in read_ledger(run.dir)] == ["launch"]

    fake.stop()  # Discord unreachable: the request never left, so its retry is no repeat
    n.poll_run(run.episodes(10).dir)
    assert wait_until(lambda: n.state in (RETRYING, FAILING))
    fake.start()
    assert n.wait_idle(20)
    assert "may repeat" not in fake.messages[-1].payload["embeds"][0]["description"]
