"""The detached notifier as a real process (`python -m console.notify.service`), started by the real
console or by hand, against the fake Discord on loopback with the real discord.py client.

Every wait is on a condition with a timeout; the notifier's timing knobs (poll, grace, backoff,
HTTP timeout) are passed on its command line so the tests stay fast. The one long wait is the
8 s send the issue asks for.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from console.notify.ledger import home, read_ledger
from console.notify.link import NotifierLink, read_status, start_detached
from console.notify.webhook import fingerprint
from tests.console.conftest import make_app, notified, plain, wait_for
from tests.console.fake_discord import FAKE_WEBHOOK_URL, HandMadeRun
from tests.helpers import wait_until

REPO = Path(__file__).resolve().parents[2]
WRAPPER = Path(__file__).with_name("notifier_under_fake.py")
FAST = ["--poll", "0.1", "--grace", "5", "--backoff", "0.05", "--backoff-max", "0.3", "--http-timeout", "15"]
OTHER_URL = FAKE_WEBHOOK_URL.replace("123456789012345678", "223456789012345678").replace("Zq3v", "Aa1b")
TOKEN = FAKE_WEBHOOK_URL.rsplit("/", 1)[1]


@pytest.fixture
def runs(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    yield d
    # end every notifier this test started, by its own pid (each runs in its own session)
    st = read_status(d)
    if st.running:
        try:
            os.killpg(st.doc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in _started:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
    _started.clear()


_started: list = []


def argv(fake, runs_dir, *extra) -> list[str]:
    return [sys.executable, str(WRAPPER), fake.base, "--runs-dir", str(runs_dir), *FAST, *extra]


def env(**kw) -> dict:
    base = {k: v for k, v in os.environ.items() if "WEBHOOK" not in k}
    return {**base, "PYTHONPATH": str(REPO), "FONTAINE_DISCORD_WEBHOOK_URL": FAKE_WEBHOOK_URL, **kw}


def spawn(fake, runs_dir, *extra, environ=None):
    p = start_detached(runs_dir, argv(fake, runs_dir, *extra), env=environ or env())
    _started.append(p)
    return p


def keys_posted(fake) -> list[str]:
    return [f.rsplit(" · ", 1)[1] for f in fake.footers()]


def log_of(runs_dir) -> str:
    p = home(runs_dir) / "notifier.log"
    return p.read_text()[-4000:] if p.exists() else ""


async def test_the_notifier_keeps_posting_updates_at_10_20_30_with_the_console_closed(fake, runs):
    run = HandMadeRun(runs, total=100)
    link = NotifierLink(runs, argv=argv(fake, runs), environ=env())
    app = make_app(runs, notifier=link)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: read_status(runs).running, timeout=20, what="the console to start the notifier")
        await wait_for(pilot, lambda: "Discord: ok" in plain(app.screen.query_one("#discord")), timeout=20,
                       what="the notifier's status in the console", state=lambda: plain(app.screen.query_one("#discord")))
    _started.extend(link._popens)
    # the console is closed; the notifier is not
    pid = read_status(runs).doc.pid
    assert read_status(runs).running and psutil.Process(pid).is_running()
    wait_until(lambda: keys_posted(fake) == ["launch"], what="the launch post")
    for n in (10, 20, 30):
        run.episodes(n)
        wait_until(lambda n=n: keys_posted(fake)[-1:] == [f"update:{n}"], what=f"update:{n}")
    assert keys_posted(fake) == ["launch", "update:10", "update:20", "update:30"]
    # the fake has the post before the notifier has Discord's answer, and the ledger's line comes after that
    wanted = ["launch", "update:10", "update:20", "update:30"]
    wait_until(lambda: [e["key"] for e in read_ledger(run.dir)] == wanted, what="the ledger's line for update:30")
    assert fake.messages[1].payload["content"].startswith("A 10/100 · ")

    # a second notifier for the same folder sees the lock and leaves at once: nothing twice
    p = spawn(fake, runs)
    assert p.wait(20) == 0 and "another notifier already serves" in log_of(runs)
    assert read_status(runs).doc.pid == pid

    # the run ends: the notifier posts the end and exits after its grace period
    run.episodes(100, state="done")
    wait_until(lambda: keys_posted(fake)[-1:] == ["done"], what="the done post")
    wait_until(lambda: not read_status(runs).running, timeout=30, what="the notifier to exit when no run is live")
    assert read_status(runs).doc.exited.startswith("no live run")
    # Rows 31-100 land in one go, as no driver writes them; a poll that caught the file part-written saw
    # a milestone between (1 pass in ~6,000 of the console tests): an update for it is right, twice is not
    keys = keys_posted(fake)
    between = keys[4:-1]
    assert keys[:4] == ["launch", "update:10", "update:20", "update:30"] and keys[-1] == "done", keys
    assert all(k.startswith("update:") and 30 < int(k.split(":")[1]) < 100 for k in between), keys
    assert len(set(keys)) == len(keys) == len(fake.messages), keys  # each post once, and nothing else
    assert [e["key"] for e in read_ledger(run.dir)] == keys
    for path in runs.rglob("*"):  # the status file, the log, the ledgers: no webhook anywhere
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes() and b"123456789012345678" not in path.read_bytes(), path


def test_a_notifier_stopped_during_an_outage_leaves_no_hole(fake, runs):
    run = HandMadeRun(runs, total=100)
    p = spawn(fake, runs)
    wait_until(lambda: keys_posted(fake) == ["launch"], what="the launch post")
    fake.stop()
    run.episodes(10)
    wait_until(lambda: read_status(runs).doc.pending == 1
               and read_status(runs).doc.state in ("retrying", "failing"), what="update:10 stuck in the queue")
    p.send_signal(signal.SIGTERM)  # the owner quits; Discord is down
    assert p.wait(20) == 0
    assert "update:10" not in {e.get("key") for e in read_ledger(run.dir)}

    run.episodes(20)  # ... and comes back after episode 20, Discord up again
    fake.start()
    spawn(fake, runs)
    wait_until(lambda: keys_posted(fake) == ["launch", "update:20"], what="the catch-up")
    text = fake.messages[1].payload["embeds"][0]["description"]
    assert "**caught up**" in text and "at 10/100: successes 2 · knock-aways 3 · engaged 5" in text
    # the ledger line follows Discord's answer: wait for it rather than race it
    ledger = wait_until(lambda: (lambda led: led if len(led) >= 2 else None)(read_ledger(run.dir)),
                        what="the catch-up's ledger line")
    assert [e["key"] for e in ledger] == ["launch", "update:20"] and ledger[1]["covers"] == ["update:10"]


def test_a_notifier_stopped_during_an_8_s_send_posts_exactly_one_copy(fake, runs):
    run = HandMadeRun(runs, total=100)
    fake.delay_next(8.0)  # Discord creates the message at once and answers 8 s later
    p = spawn(fake, runs)
    assert fake.wait_messages(1, timeout=20)
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0
    # it waited for the answer on the wire: only Discord's answer carries the message id it recorded
    ledger = read_ledger(run.dir)
    assert [e["key"] for e in ledger] == ["launch"] and ledger[0]["message_id"] == "1300000000000000001"
    assert not (run.dir / "posts.inflight.json").exists()

    second = spawn(fake, runs)
    wait_until(lambda: read_status(runs).doc.pid == second.pid and read_status(runs).doc.state == "ok"
               and read_status(runs).doc.pending == 0, what="the second notifier's first round")
    assert len(fake.messages) == 1


async def test_a_dead_webhook_is_tried_at_most_3_times_then_the_console_says_webhook_gone_and_a_new_url_resumes(
        fake, runs, tmp_path):
    hook = tmp_path / "webhook"
    hook.write_text(FAKE_WEBHOOK_URL + "\n")
    os.chmod(hook, 0o600)
    environ = env(FONTAINE_DISCORD_WEBHOOK_FILE=str(hook))
    environ.pop("FONTAINE_DISCORD_WEBHOOK_URL")
    run = HandMadeRun(runs, total=100).episodes(10)
    fake.fail_next(404, times=50)
    link = NotifierLink(runs, argv=argv(fake, runs), environ=environ)
    app = make_app(runs, notifier=link)
    async with app.run_test(size=(160, 40)) as pilot:
        shown = lambda: plain(app.screen.query_one("#discord"))  # noqa: E731
        await wait_for(pilot, lambda: "failing: webhook gone" in shown(), timeout=30, what="webhook gone", state=shown)
        _started.extend(link._popens)
        assert len(fake.requests) <= 3 and {r.status for r in fake.requests} == {404}
        assert TOKEN not in shown()
        gone = [e for e in read_ledger(run.dir) if e.get("event") == "webhook_gone"]
        assert gone and gone[0]["owed"] == ["launch", "update:10"]
        assert not fake.wait_for(lambda f: len(f.requests) > 3, timeout=0.5)  # and nothing more is tried

        fake._failures.clear()
        hook.write_text(OTHER_URL + "\n")  # the owner pastes a new webhook: posting resumes
        await wait_for(pilot, lambda: keys_posted(fake) == ["launch", "update:10"], timeout=20, what="the posts")
        await wait_for(pilot, lambda: "Discord: ok" in shown(), timeout=20, what="ok again", state=shown)
    assert all(OTHER_URL.rsplit("/", 2)[1] in m.path for m in fake.messages)


async def test_a_test_post_from_the_console_is_sent_by_the_notifier_and_reported(fake, runs):
    link = NotifierLink(runs, argv=argv(fake, runs), environ=env())
    app = make_app(runs, notifier=link)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("t")
        await wait_for(pilot, lambda: [m for m in fake.messages if m.payload["embeds"][0]["title"] == "Test post"],
                       timeout=20, what="the test post")
        await wait_for(pilot, lambda: notified(app, "test post sent"),
                       timeout=20, what="the console to say it was sent")
        _started.extend(link._popens)
    assert not list((home(runs) / "requests").glob("*.json"))
    assert json.loads((home(runs) / "status.json").read_text())["tests"]


def test_a_console_with_another_webhook_url_restarts_the_notifier_on_it(fake, runs):
    spawn(fake, runs)
    wait_until(lambda: read_status(runs).running and read_status(runs).doc.state == "ok", what="the first notifier")
    first = read_status(runs).doc.pid
    assert read_status(runs).doc.fingerprint == fingerprint(FAKE_WEBHOOK_URL)
    link = NotifierLink(runs, argv=argv(fake, runs), environ=env(FONTAINE_DISCORD_WEBHOOK_URL=OTHER_URL))
    link.tick(live=True)  # what the console's watcher thread does every 2 s
    _started.extend(link._popens)
    wait_until(lambda: read_status(runs).running and read_status(runs).doc.pid != first
               and read_status(runs).doc.state == "ok", what="the restarted notifier")
    assert read_status(runs).doc.fingerprint == fingerprint(OTHER_URL)
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
