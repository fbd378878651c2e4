"""The driver against a hostile run directory (issue 22), in process and fast: a fake executor
stands in for the workers, so each test is the driver's own logic, not a simulation."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from engine.policies.factory import PolicySpec
from engine.record.config import RunConfig
from engine.record.errors import DriverError
from engine.run.driver import run
from prereg import rundir as rd
from prereg.rundir.row import Row


class FakeExecutor:
    """Finishes each submitted seed at the next poll; `on_poll(n)` runs before the n-th poll."""

    def __init__(self, on_poll=None):
        self.respawn, self.gpus_held, self.policy_resolved = True, None, None
        self._flight: list[int] = []
        self.polls = 0
        self.on_poll = on_poll

    def __call__(self, cfg, run_dir, policy, n_seeds, log):
        return self

    def free_slots(self):
        return 1 - len(self._flight)

    def submit(self, seed):
        self._flight.append(seed)

    def in_flight(self):
        return list(self._flight)

    def alive(self):
        return True

    def poll(self, timeout):
        self.polls += 1
        if self.on_poll is not None:
            self.on_poll(self.polls)
        done, self._flight = self._flight, []
        return [Row.episode(s, success=True, wall_s=0.01) for s in done]

    def take_requeued(self):
        return []

    def abort(self):
        lost, self._flight = self._flight, []
        return lost

    def close(self):
        pass

    def stats(self):
        return {}

    def describe(self):
        return None


@pytest.fixture(autouse=True)
def guarded():
    """The driver installs SIGTERM/SIGINT handlers: put them back; and fail, not hang, in 20 s."""
    term, intr = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    def on_alarm(_signum, _frame):
        raise TimeoutError("the driver blocked")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
    signal.signal(signal.SIGTERM, term)
    signal.signal(signal.SIGINT, intr)


def _config(n=5) -> RunConfig:
    return RunConfig(run_id="hostile", arm="scripted", policy=PolicySpec(kind="scripted"), seeds=list(range(n)),
                     episode_seconds=1.0, workers=1, gpus=0)


def test_a_fifo_named_stop_stops_the_run_and_says_what_it_is(tmp_path):
    d = tmp_path / "run"
    ex = FakeExecutor(on_poll=lambda n: n == 2 and os.mkfifo(d / rd.STOP))
    result = run(_config(), d, argv=["test"], log=lambda _t: None, executor=ex)
    assert result.state == rd.STOPPED and len(result.rows) < 5
    status = json.loads((d / rd.STATUS).read_text())
    assert status["state"] == rd.STOPPED and "STOP present (unreadable: is a FIFO" in status["reason"]


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop"])
def test_a_resume_over_rows_that_are_not_a_file_is_refused_in_one_line(tmp_path, kind):
    d = tmp_path / "run"
    run(_config(2), d, argv=["test"], log=lambda _t: None, executor=FakeExecutor())
    (d / rd.ROWS).unlink()
    {"fifo": lambda p: os.mkfifo(p), "dir": lambda p: p.mkdir(), "loop": lambda p: os.symlink(p.name, p)}[kind](d / rd.ROWS)
    with pytest.raises(DriverError) as got:
        run(_config(2), d, argv=["test"], resume=True, log=lambda _t: None, executor=FakeExecutor())
    msg = str(got.value)
    assert "rows.jsonl" in msg and "cannot be read" in msg and "\n" not in msg


def test_a_wrong_typed_elapsed_in_status_does_not_crash_a_resume(tmp_path):
    d = tmp_path / "run"
    run(_config(2), d, argv=["test"], log=lambda _t: None, executor=FakeExecutor())
    status = json.loads((d / rd.STATUS).read_text())
    (d / rd.STATUS).write_text(json.dumps({**status, "elapsed_s": "x"}))
    (d / rd.ROWS).write_text("")
    result = run(_config(2), d, argv=["test"], resume=True, log=lambda _t: None, executor=FakeExecutor())
    assert result.state == rd.DONE


def test_random_bytes_in_stop_become_a_one_line_printable_reason(tmp_path):
    d = tmp_path / "run"
    junk = os.urandom(2048) + b"\n\x1b[2J\nsecond line"
    ex = FakeExecutor(on_poll=lambda n: n == 2 and (d / rd.STOP).write_bytes(junk))
    result = run(_config(), d, argv=["test"], log=lambda _t: None, executor=ex)
    assert result.state == rd.STOPPED
    reason = json.loads((d / rd.STATUS).read_text())["reason"]
    assert reason.isprintable() and "\n" not in reason and len(reason) <= 300, repr(reason)


def _swap_rows(d, how):
    p = d / rd.ROWS
    if how == "deleted":
        p.unlink()
    elif how == "a directory":
        p.unlink()
        p.mkdir()
    elif how == "another file":
        tmp = d / "other.jsonl"
        tmp.write_text(p.read_text())
        os.replace(tmp, p)


@pytest.mark.parametrize("how", ["deleted", "a directory", "another file"])
def test_rows_jsonl_replaced_or_deleted_mid_run_fails_the_run(tmp_path, how):
    """Rows appended to a file nobody can see: the driver exited `done` and the report read 0/0."""
    from prereg.core.errors import RunFailed

    d = tmp_path / "run"
    ex = FakeExecutor(on_poll=lambda n: n == 3 and _swap_rows(d, how))
    with pytest.raises(RunFailed) as got:
        run(_config(), d, argv=["test"], log=lambda _t: None, executor=ex)
    assert str(got.value).startswith("rows.jsonl was replaced or deleted")
    status = json.loads((d / rd.STATUS).read_text())
    assert status["state"] == rd.FAILED and status["reason"].startswith("rows.jsonl was replaced or deleted")
    assert status["stop"]["by"] == rd.BY_ERROR
    kept = json.loads((d / rd.ROWS_SUMMARY).read_text())["rows"]
    assert [r["seed"] for r in kept] == [0, 1, 2]  # the two written and the one that found the file gone


def test_rows_jsonl_deleted_while_no_row_arrives_fails_at_the_heartbeat(tmp_path, monkeypatch):
    from engine.run import driver
    from prereg.core.errors import RunFailed

    monkeypatch.setattr(driver, "HEARTBEAT_EVERY_S", 0.0)
    d = tmp_path / "run"

    class Slow(FakeExecutor):
        def poll(self, timeout):  # the first episode never finishes: only the heartbeat can notice
            self.polls += 1
            if self.polls == 2:
                (d / rd.ROWS).unlink()
            return []

    with pytest.raises(RunFailed, match="rows.jsonl was replaced or deleted"):
        run(_config(), d, argv=["test"], log=lambda _t: None, executor=Slow())


HOOK = "https://discord.com/api/webhooks/123456789012345678/Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7B"


def test_the_driver_scrubs_webhook_variables_before_it_starts_workers(tmp_path, monkeypatch):
    """Started by hand (not by the console), fontaine-eval passed the webhook on to its workers."""
    monkeypatch.setenv("FONTAINE_DISCORD_WEBHOOK", HOOK)
    monkeypatch.setenv("FONTAINE_DISCORD_WEBHOOK_FILE", "/somewhere/webhook")
    monkeypatch.setenv("my_webhook_thing", "x")
    monkeypatch.setenv("NOTIFY_URL", f"see {HOOK.replace('discord.com', 'canary.discordapp.com')}")
    monkeypatch.setenv("HF_TOKEN", "needed-for-checkpoints")
    monkeypatch.setenv("DOCS_URL", "https://discord.com/developers/docs")
    seen = {}

    class Capturing(FakeExecutor):
        def __call__(self, cfg, run_dir, policy, n_seeds, log):
            seen.update(os.environ)
            return self

    said = []
    run(_config(2), tmp_path / "run", argv=["test"], log=said.append, executor=Capturing())
    assert seen and not [k for k in seen if "WEBHOOK" in k.upper()] and "NOTIFY_URL" not in seen
    assert HOOK.rsplit("/", 1)[1] not in " ".join(seen.values())
    assert seen["HF_TOKEN"] == "needed-for-checkpoints" and seen["DOCS_URL"].endswith("/docs")
    assert any("removed FONTAINE_DISCORD_WEBHOOK, FONTAINE_DISCORD_WEBHOOK_FILE, NOTIFY_URL, my_webhook_thing" in s
               for s in said)
    assert HOOK not in " ".join(said)


def test_one_test_of_a_webhook_variable():
    from prereg.core.webhook_env import is_webhook_var, scrub_webhooks, without_webhooks

    env = {"FONTAINE_DISCORD_WEBHOOK_URL": "x", "A": HOOK, "B": HOOK.replace("https://discord", "http://ptb.discord"),
           "C": "https://discordapp.com/api/v10/webhooks/1/abc", "HF_TOKEN": "h", "HOME": "/root"}
    assert without_webhooks(env) == {"HF_TOKEN": "h", "HOME": "/root"}
    assert scrub_webhooks(env) == ["A", "B", "C", "FONTAINE_DISCORD_WEBHOOK_URL"] and env == {"HF_TOKEN": "h", "HOME": "/root"}
    assert not is_webhook_var("URL", "https://example.com/api/webhooks/1")


def test_the_driver_beats_the_heartbeat_through_a_slow_policy_load(tmp_path, monkeypatch):
    """Nothing beat the heartbeat while a model loaded: 'heartbeat 62 s old (stall beyond 60 s) at 0/4'
    was posted during start-up. The load here takes as long as the heartbeat needs to move twice."""
    from engine.run import driver
    from tests.helpers import wait_until

    monkeypatch.setattr(driver, "HEARTBEAT_EVERY_S", 0.2)
    d = tmp_path / "run"
    seen = {}

    def slow_load(cfg):  # runs in the driver's own thread: only another thread can beat now
        beat = d / rd.HEARTBEAT
        for i in range(2):
            before = beat.stat().st_mtime_ns
            wait_until(lambda b=before: beat.stat().st_mtime_ns > b, timeout=30, what=f"heartbeat beat {i + 1}")
        seen["state"] = json.loads((d / rd.STATUS).read_text())["state"]
        seen["threads"] = [t.name for t in threading.enumerate()]
        return None, {"policy": "scripted", "served": "in each worker"}

    monkeypatch.setattr(driver, "load_served", slow_load)
    result = run(_config(2), d, argv=["test"], log=lambda _t: None, executor=FakeExecutor())
    assert result.state == rd.DONE and seen["state"] == rd.STARTING
    assert "fontaine-heartbeat" in seen["threads"]
    assert "fontaine-heartbeat" not in [t.name for t in threading.enumerate()]  # it ends with start-up
def test_a_secret_written_into_stop_reaches_no_file_and_does_not_linger(tmp_path):
    """Issue 33: `printf 'stop %s %s' "$WEBHOOK_URL" "$HF_TOKEN" > STOP` put both into status.json,
    rows.json, the terminal and the Discord stop post. The reason is redacted where it becomes one line,
    and the STOP itself, once acted on, is rewritten as that reason."""
    token = "hf_" + "Z" * 34
    d = tmp_path / "run"
    said = []
    ex = FakeExecutor(on_poll=lambda n: n == 2 and (d / rd.STOP).write_text(f"stop {HOOK} {token}"))
    result = run(_config(), d, argv=["test"], log=said.append, executor=ex)
    assert result.state == rd.STOPPED
    for p in d.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert token.encode() not in data and HOOK.encode() not in data, p.name
    assert token not in " ".join(said) and HOOK not in " ".join(said)
    status = json.loads((d / rd.STATUS).read_text())
    assert status["stop"]["detail"] == "stop <redacted: a Discord webhook URL> <redacted: a Hugging Face token>"


@pytest.mark.parametrize("hook", ["HTTPS://DISCORD.COM/api/webhooks/1/abc", "discord.com/api/webhooks/1/abc",
                                  "Https://Canary.DiscordApp.com/api/v10/webhooks/1/abc", "ptb.discord.com/api/webhooks/1/abc"])
def test_a_webhook_in_any_case_or_without_its_scheme_is_redacted_from_stop(tmp_path, hook):
    """Issue 43: only a lower-case `https://` webhook was redacted; `HTTPS://DISCORD.COM/...` and a
    scheme-less `discord.com/...` were copied whole into status.json, rows.json, the STOP and the terminal."""
    d = tmp_path / "run"
    said = []
    ex = FakeExecutor(on_poll=lambda n: n == 2 and (d / rd.STOP).write_text(f"stop {hook} Bearer abcdefgh12345678"))
    result = run(_config(), d, argv=["test"], log=said.append, executor=ex)
    assert result.state == rd.STOPPED and "webhooks/1/abc" not in (result.reason or "")
    files = [p for p in d.rglob("*") if p.is_file()]
    assert any(p.name.startswith(rd.STOP) for p in files)  # the STOP acted on is kept, rewritten
    for p in files:
        data = p.read_bytes().lower()
        assert b"webhooks/1/abc" not in data and b"abcdefgh12345678" not in data, p.name
    assert "webhooks/1/abc" not in " ".join(said).lower() and "abcdefgh12345678" not in " ".join(said)
    status = json.loads((d / rd.STATUS).read_text())
    assert status["stop"]["detail"] == "stop <redacted: a Discord webhook URL> <redacted: a bearer token>"
    assert "<redacted: a Discord webhook URL>" in status["reason"]


def test_a_token_typed_on_the_command_line_is_not_kept_in_the_manifest(tmp_path):
    """The manifest records the command (argv): a token or a webhook typed there is redacted, the rest kept."""
    d = tmp_path / "run"
    argv = ["fontaine-eval", "--task", "pick discord.com/api/webhooks/1/abc up", "--run-id", "x"]
    run(_config(1), d, argv=argv, log=lambda _t: None, executor=FakeExecutor())
    manifest = json.loads((d / rd.MANIFEST).read_text())
    assert manifest["argv"] == ["fontaine-eval", "--task", "pick <redacted: a Discord webhook URL> up", "--run-id", "x"]
