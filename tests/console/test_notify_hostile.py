"""The notifier over hostile run directories: a FIFO status.json, a wrong-typed status, a manifest
that is a directory, a rows.jsonl that is a symlink loop, a ledger that is a FIFO. Its scan
never waits on one, never stops for one, posts nothing false about them (no '0 successes' of
rows it cannot read, no 'gates: none' of a manifest it cannot read), says why once in its log,
and keeps posting about the good run. Against the fake Discord on loopback; every wait bounded.
"""

from __future__ import annotations

import json
import logging
import os
import random
import stat

import pytest

from console.notify import service
from console.notify.ledger import read_ledger
from console.notify.webhook import ENV_FILE, ENV_URL
from tests.console.fake_discord import FAKE_WEBHOOK_URL, HandMadeRun
from tests.helpers import returns_within

STAMP = "20261130-080000"


def _runs(runs_dir):
    """Four hostile runs, one with a wrong type only, and a good one: each 10 of 30 episodes in."""
    made = {name: HandMadeRun(runs_dir, f"{name}-{STAMP}", total=30).episodes(10)
            for name in ("fifo-status", "wrong-type", "manifest-dir", "rows-loop", "ledger-fifo", "good")}
    d = {name: run.dir for name, run in made.items()}
    (d["fifo-status"] / "status.json").unlink()
    os.mkfifo(d["fifo-status"] / "status.json")
    status = json.loads((d["wrong-type"] / "status.json").read_text())
    (d["wrong-type"] / "status.json").write_text(json.dumps({**status, "elapsed_s": "x"}))
    (d["manifest-dir"] / "manifest.json").unlink()
    (d["manifest-dir"] / "manifest.json").mkdir()
    (d["rows-loop"] / "rows.jsonl").unlink()
    (d["rows-loop"] / "rows.jsonl").symlink_to(d["rows-loop"] / "rows.jsonl")
    os.mkfifo(d["ledger-fifo"] / "posts.jsonl")
    return made


def _scan(svc: service.Service, timeout: float = 20.0) -> int:
    """One scan of the runs folder, in a thread: a scan still reading after `timeout` is a hang."""
    return returns_within(svc.scan, timeout, what="the notifier's scan")


def _posted(fake) -> dict[str, list[str]]:
    """{run name: [post keys]} of what the fake Discord accepted, in order."""
    out: dict[str, list[str]] = {}
    for footer in fake.footers():
        parts = footer.split(" · ")
        out.setdefault(parts[1].removesuffix(f"-{STAMP}"), []).append(parts[-1])
    return out


def _description(fake, run: str, key: str) -> str:
    (msg,) = [m for m in fake.messages if m.payload["embeds"][0]["footer"]["text"].startswith(f"fontaine · {run}-{STAMP} ")
              and m.payload["embeds"][0]["footer"]["text"].endswith(f" · {key}")]
    return msg.payload["embeds"][0]["description"]


@pytest.fixture
def notifier_service(fake, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_URL, FAKE_WEBHOOK_URL)
    monkeypatch.delenv(ENV_FILE, raising=False)
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    args = service.build_parser().parse_args(["--runs-dir", str(runs_dir), "--no-check", "--backoff", "0.05",
                                              "--backoff-max", "0.2"])
    svc = service.Service(runs_dir, args)
    svc.notifier.start()
    yield svc
    svc.notifier.close(timeout=2.0)


def test_the_notifier_skips_hostile_runs_says_why_once_and_keeps_posting(fake, notifier_service, caplog):
    svc = notifier_service
    runs = _runs(svc.runs_dir)
    caplog.set_level(logging.INFO, logger="console.notify")
    assert isinstance(_scan(svc), int)
    assert fake.wait_for(lambda f: len(f.messages) >= 4), _posted(fake)
    assert svc.notifier.wait_idle(10)
    assert _posted(fake) == {"wrong-type": ["launch", "update:10"], "good": ["launch", "update:10"]}
    # a wrong-typed field is unknown, never a crash and never shown: no pace from an elapsed_s of "x"
    assert "pace" not in _description(fake, "wrong-type", "update:10")
    assert "pace 15 s/episode" in _description(fake, "good", "update:10")
    skipped = {r.getMessage() for r in caplog.records if "no post for" in r.getMessage()}
    assert skipped == {
        f"Discord: no post for fifo-status-{STAMP} while its files cannot be read: "
        "status.json: is a FIFO (named pipe), not a regular file",
        f"Discord: no post for manifest-dir-{STAMP} while its files cannot be read: "
        "manifest.json: is a directory, not a regular file",
        f"Discord: no post for rows-loop-{STAMP} while its files cannot be read: "
        "rows.jsonl: a symbolic link loop (too many levels of symbolic links)",
        f"Discord: no post for ledger-fifo-{STAMP} while its files cannot be read: "
        "posts.jsonl: is a FIFO (named pipe), not a regular file",
    }, skipped
    assert [e["key"] for e in read_ledger(runs["good"].dir)] == ["launch", "update:10"]
    assert stat.S_ISFIFO(os.lstat(runs["ledger-fifo"].dir / "posts.jsonl").st_mode)  # never opened, never replaced

    # it keeps going: the next scan posts the good run's next update, and says nothing twice
    caplog.clear()
    runs["good"].episodes(20)
    _scan(svc)
    assert fake.wait_for(lambda f: len(f.messages) >= 5), _posted(fake)
    assert svc.notifier.wait_idle(10)
    assert _posted(fake)["good"] == ["launch", "update:10", "update:20"]
    assert not [r for r in caplog.records if "no post for" in r.getMessage()]

    # a run whose files can be read again gets the posts it is owed
    fifo_run = runs["fifo-status"]
    (fifo_run.dir / "status.json").unlink()
    fifo_run.status("running")
    _scan(svc)
    assert fake.wait_for(lambda f: len(f.messages) >= 7), _posted(fake)
    assert svc.notifier.wait_idle(10)
    assert _posted(fake)["fifo-status"] == ["launch", "update:10"]
    assert any(f"the files of fifo-status-{STAMP} can be read again" in r.getMessage() for r in caplog.records)
    assert set(_posted(fake)) == {"wrong-type", "good", "fifo-status"}  # the others: still nothing false


def test_the_notifier_status_file_is_a_type_and_a_wrong_field_never_crashes_the_console(tmp_path):
    """RUNS/.notifier/status.json, written by the notifier from NotifierDoc and read back by the
    console: a wrong-typed field (an edited or foreign file) reads as unknown, named in `problems`."""
    import psutil

    from console.notify.ledger import STATUS, NotifierDoc, home
    from console.notify.link import NotifierLink, read_status
    from prereg import rundir as rd

    me = psutil.Process()
    doc = NotifierDoc(schema=1, pid=me.pid, create_time=me.create_time(), state="ok", line="Discord: ok", sent=3,
                      tests={"test-1": {"state": "sent"}}, tests_queued=("test-2",), grace_s=120.0)
    assert NotifierDoc.from_dict(json.loads(json.dumps(doc.to_dict()))) == doc
    runs = tmp_path / "runs"
    home(runs).mkdir(parents=True)
    hostile = {**doc.to_dict(), "state": 5, "line": {"x": 1}, "tests": ["test-1"], "fingerprint": [1],
               "tests_queued": "test-2", "sent": "3"}
    rd.write_json_atomic(home(runs) / STATUS, hostile)
    st = read_status(runs)
    assert st.running  # pid and create time are right: this process
    assert (st.state, st.line(), st.doc.tests, st.doc.tests_queued, st.doc.sent) == ("unknown", "Discord: unknown", {}, (), None)
    assert {p.split(": ")[1].split(" ")[0] for p in st.doc.problems} == {"state", "line", "tests", "fingerprint",
                                                                          "tests_queued", "sent"}
    link = NotifierLink(runs, argv=["false"], environ={ENV_URL: FAKE_WEBHOOK_URL})
    assert link.tick(live=True) is not None and link._popens == []  # running: nothing started
    assert link.state.line() == f"Discord: unknown · notifier pid {me.pid}" and link.test_outcomes() == []
    for garbage in (b"[1, 2]", b"{not json", b""):
        (home(runs) / STATUS).write_bytes(garbage)
        st = read_status(runs)
        assert not st.running and st.line() == "Discord: notifier not running"


# --- issue 33: escapes, secrets, garbage status, a loop in the folder, a hostile webhook setting -------

EVIL = "a\u001b[2J\u001b]0;T\u0007"
HF = "hf_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h"


def _payload_text(fake) -> str:
    """Every post Discord got, as the JSON on the wire."""
    return json.dumps([m.payload for m in fake.messages], ensure_ascii=False)


def test_no_post_carries_an_escape_sequence_or_a_secret_from_a_runs_files(fake, notifier_service):
    """An arm and a stop reason holding escape sequences, and a STOP holding the webhook URL and the
    HF token (`printf 'stop %s %s' "$WEBHOOK_URL" "$HF_TOKEN" > STOP`), as the driver copies them."""
    from prereg import rundir as rd
    from prereg.core.untrusted import secret_in

    svc = notifier_service
    run = HandMadeRun(svc.runs_dir, f"evil-{STAMP}", total=30).episodes(10)
    manifest = json.loads((run.dir / "manifest.json").read_text())
    (run.dir / "manifest.json").write_text(json.dumps({**manifest, "arm": EVIL}))
    _scan(svc)
    assert fake.wait_for(lambda f: len(f.messages) >= 2), _posted(fake)
    (run.dir / "STOP").write_text(f"stop {FAKE_WEBHOOK_URL} {HF} {EVIL}")
    run.status("stopped", reason=f"raw {EVIL} {HF} {FAKE_WEBHOOK_URL}", stop=rd.read_stop(run.dir))
    _scan(svc)
    assert fake.wait_for(lambda f: len(f.messages) >= 3), _posted(fake)
    assert svc.notifier.wait_idle(10)
    text = _payload_text(fake)
    assert "\u001b" not in text and "\u0007" not in text
    assert "a\\\\x1b[2J\\\\x1b]0;T\\\\x07" in text  # shown escaped (JSON doubles the backslash)
    unescaped = text.replace("\\\\", "")  # markdown escapes out: `hf\\_...` is the token still
    assert secret_in(unescaped) is None and FAKE_WEBHOOK_URL not in unescaped and HF not in unescaped
    assert "<redacted: a Hugging Face token" in text and "<redacted: a Discord webhook URL" in text


@pytest.mark.parametrize("garbage", [random.Random(33).randbytes(256), b"[1, 2, 3]", b'{"state": 5, "done": 10}',
                                     b"[" * 100_000 + b"]" * 100_000, b'{"state": "exploded"}'],
                         ids=["random-bytes", "a-list", "state-5", "deep-json", "unknown-state"])
def test_a_status_json_without_a_known_state_gets_no_post_and_no_stall_alert(fake, notifier_service, garbage):
    svc = notifier_service
    good = HandMadeRun(svc.runs_dir, f"good-{STAMP}", total=30).episodes(10)
    bad = HandMadeRun(svc.runs_dir, f"garbage-{STAMP}", total=30).episodes(10, state="done")
    (bad.dir / "status.json").write_bytes(garbage)
    os.utime(bad.dir / "heartbeat", (1, 1))  # stale for ages: a live run's would be a stall
    _scan(svc)
    assert fake.wait_for(lambda f: len(f.messages) >= 2), _posted(fake)
    assert svc.notifier.wait_idle(10)
    _scan(svc)
    assert svc.notifier.wait_idle(10)
    assert _posted(fake) == {"good": ["launch", "update:10"]}
    assert good.dir.is_dir()


def test_a_symlink_loop_in_the_runs_folder_never_stops_the_notifier(fake, notifier_service):
    svc = notifier_service
    HandMadeRun(svc.runs_dir, f"good-{STAMP}", total=30).episodes(10)
    os.symlink("loop", svc.runs_dir / "loop")
    assert isinstance(_scan(svc), int)
    assert fake.wait_for(lambda f: len(f.messages) >= 2), _posted(fake)
    assert svc.notifier.wait_idle(10)
    assert _posted(fake) == {"good": ["launch", "update:10"]}


def _webhook_file(tmp_path, kind):
    path = tmp_path / "webhook"
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "huge":
        with open(path, "wb") as f:  # 200 MB, sparse: refused by its size, never read
            f.truncate(200 * 1024 * 1024)
        path.chmod(0o600)
    elif kind == "world-readable":
        path.write_text(FAKE_WEBHOOK_URL + "\n")
        path.chmod(0o644)
    elif kind == "not-discord":
        path.write_text("https://example.com/hook\n")
        path.chmod(0o600)
    elif kind == "loop":
        os.symlink("webhook", path)
    return path


WEBHOOK_WHY = {"fifo": "is a FIFO (named pipe), not a regular file", "huge": "bytes, more than the 4,096",
               "world-readable": "readable or writable by others", "not-discord": "is not a Discord webhook URL",
               "loop": "symbolic link loop"}


@pytest.mark.parametrize("kind", sorted(WEBHOOK_WHY))
def test_a_hostile_webhook_setting_is_one_line_and_exit_2_never_a_hang(tmp_path, monkeypatch, capsys, kind):
    from console.notify.webhook import webhook_setting

    monkeypatch.delenv(ENV_URL, raising=False)
    monkeypatch.setenv(ENV_FILE, str(_webhook_file(tmp_path, kind)))
    url, why = returns_within(lambda: webhook_setting(os.environ), 10, what="reading the webhook setting")
    assert url is None and WEBHOOK_WHY[kind] in why, why
    runs = tmp_path / "runs"
    code = returns_within(lambda: service.main(["--runs-dir", str(runs), "--no-check"]), 20, what="fontaine-notify")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("fontaine-notify: error: ") and WEBHOOK_WHY[kind] in err[0], err
    assert "no notifier started" in err[0] and FAKE_WEBHOOK_URL not in err[0]
    assert not (runs / ".notifier" / "lock").exists()


@pytest.mark.parametrize("kind", ["loop", "fifo", "dir"])
def test_a_status_json_that_is_not_a_file_reads_as_unreadable_and_owes_no_post(tmp_path, kind):
    """The posts' own rule, whatever the sender skips: a run whose status.json cannot be read is neither
    live nor over (a symlink loop there read as `starting` and got a launch post)."""
    from console.notify import messages as msgs
    from console.notify.snapshot import read_snapshot

    run = HandMadeRun(tmp_path, f"x-{STAMP}", total=30).episodes(10)
    p = run.dir / "status.json"
    p.unlink()
    {"loop": lambda: p.symlink_to(p.name), "fifo": lambda: os.mkfifo(p), "dir": lambda: p.mkdir()}[kind]()
    snap = returns_within(lambda: read_snapshot(run.dir), 10, what="the snapshot")
    assert snap.state == "unreadable" and msgs.due_posts(snap, set(), catch_up_s=1e12) == []
