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
    caplog.set_level(logging.INFO, logger="console.notify.sender")
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
