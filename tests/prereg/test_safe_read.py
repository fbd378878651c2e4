"""Run-directory reads never hang and never read without bound (issue 22): a FIFO, a device, a
directory or a symlink loop where a file should be is reported as unreadable, with why."""

from __future__ import annotations

import json
import os
import random
import re
import signal

import pytest

from prereg import rundir as rd
from prereg.core.safe_read import Unreadable, read_regular
from prereg.outputs.report import build_report
from prereg.rundir.files import append_line, load_json_object, set_aside_bad_rows
from prereg.rundir.rows import read_rows
from prereg.rundir.status import status_reason_text
from prereg.rundir.stop import one_line
from tests.helpers import returns_within
from tests.prereg.conftest import make_row


@pytest.fixture(autouse=True)
def no_hang():
    """A blocking open fails the test in 10 s instead of hanging the suite."""
    def on_alarm(_signum, _frame):
        raise TimeoutError("a read blocked (a FIFO opened for a blocking read?)")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _hostile(path, kind):
    """Put `kind` where a file should be: 'fifo', 'dir', 'loop' (a symlink to itself), 'device'."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "device":
        os.symlink("/dev/zero", path)
    return path


WHY = {"fifo": "is a FIFO (named pipe), not a regular file", "dir": "is a directory, not a regular file",
       "loop": "symbolic link loop", "device": "is a character device, not a regular file"}
KINDS = sorted(WHY)


@pytest.mark.parametrize("kind", KINDS)
def test_read_regular_refuses_what_is_not_a_regular_file_at_once(tmp_path, kind):
    path = _hostile(tmp_path / "status.json", kind)

    def refused():
        with pytest.raises(Unreadable) as got:
            read_regular(path, 1024)
        return got.value

    got = returns_within(refused, timeout=10, what=f"read_regular of a {kind}")  # a FIFO read would wait forever
    assert WHY[kind] in got.why and str(got).startswith("status.json: ")


def test_read_regular_is_bounded_and_missing_is_missing(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 2000)
    assert read_regular(path, 2000) == b"x" * 2000
    with pytest.raises(Unreadable, match="2,000 bytes, more than the 1,999"):
        read_regular(path, 1999)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent", 10)
    os.symlink("absent", tmp_path / "dangling")
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "dangling", 10)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", [rd.STATUS, rd.MANIFEST, rd.PID])
def test_json_files_that_are_not_files_are_problems_not_hangs(tmp_path, kind, name):
    _hostile(tmp_path / name, kind)
    obj, problem = load_json_object(tmp_path / name)
    assert obj is None and problem.startswith(f"{name}: ") and WHY[kind] in problem
    assert rd.read_json(tmp_path / name) is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_stop_that_is_not_a_file_still_stops_and_says_what_it_is(tmp_path, kind):
    _hostile(tmp_path / rd.STOP, kind)
    stop = rd.read_stop(tmp_path)
    assert stop is not None and stop.by == rd.BY_USER
    assert stop.detail.startswith("STOP present (unreadable: ") and WHY[kind] in stop.detail


def test_a_huge_stop_still_stops(tmp_path):
    (tmp_path / rd.STOP).write_bytes(b"x" * (1 << 20))
    stop = rd.read_stop(tmp_path)
    assert stop.by == rd.BY_USER and "more than" in stop.detail


@pytest.mark.parametrize("kind", KINDS)
def test_rows_that_cannot_be_read_are_a_problem_and_a_bad_line(tmp_path, kind):
    _hostile(tmp_path / rd.ROWS, kind)
    got = read_rows(tmp_path / rd.ROWS)
    assert got.rows == [] and WHY[kind] in got.problem
    (bad,) = got.bad
    assert bad.line_no == 0 and bad.reason.startswith("rows.jsonl: ") and "no row of this run can be read" in bad.reason


def test_rows_over_the_bound_are_unreadable(tmp_path):
    (tmp_path / rd.ROWS).write_text(json.dumps(make_row(0)) + "\n")
    assert read_rows(tmp_path / rd.ROWS).rows and read_rows(tmp_path / rd.ROWS).problem is None
    got = read_rows(tmp_path / rd.ROWS, max_bytes=10)
    assert not got.rows and "more than the 10 a reader takes" in got.problem


@pytest.mark.parametrize("kind", ["fifo", "loop"])
def test_a_resume_refuses_rows_it_cannot_read_rather_than_replacing_them(tmp_path, kind):
    _hostile(tmp_path / rd.ROWS, kind)
    with pytest.raises(Unreadable, match=re.escape(WHY[kind])):
        set_aside_bad_rows(tmp_path)
    assert os.path.lexists(tmp_path / rd.ROWS) and not (tmp_path / rd.SET_ASIDE).exists()


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop"])
def test_the_row_writer_refuses_what_is_not_a_regular_file(tmp_path, kind):
    _hostile(tmp_path / rd.ROWS, kind)
    with pytest.raises(Unreadable, match=re.escape(WHY[kind])):
        rd.RowWriter(tmp_path / rd.ROWS)


@pytest.mark.parametrize("kind", ["loop", "fifo"])
def test_the_report_of_unreadable_rows_is_invalid_with_the_reason(demo, run_dir, kind):
    d = run_dir("scripted", [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"))
    (d / rd.ROWS).unlink()
    _hostile(d / rd.ROWS, kind)
    rep = build_report(demo, {"scripted": d}, now="2026-11-30T09:00:00Z")
    reads = rep.arms["scripted"].reads
    assert not reads.valid
    assert any(WHY[kind] in b for b in reads.bad_lines), reads.bad_lines
    assert WHY[kind] in (d / rd.RESULTS).read_text()


def test_the_report_of_a_run_whose_rows_file_was_deleted_is_invalid(demo, run_dir):
    """The driver fails a run whose rows.jsonl is deleted mid-run ('rows.jsonl was replaced or
    deleted'); its report said "0 / 0 achieved ... VALID". A run that started (it has a manifest)
    always had the file, so its absence is lost rows: INVALID, with what to do."""
    d = run_dir("scripted", [make_row(s, success=True) for s in range(3)],
                status={"state": "failed", "reason": "rows.jsonl was replaced or deleted"}, launched=(demo, "scripted"))
    (d / rd.ROWS).unlink()
    rep = build_report(demo, {"scripted": d}, now="2026-11-30T09:00:00Z")
    reads = rep.arms["scripted"].reads
    assert not reads.valid and reads.n == 0
    lost = next(c for c in reads.checks if c.name == "rows_file")
    assert not lost.ok and "rows.jsonl is missing" in lost.text and "run the arm again" in lost.text
    assert "rows.jsonl is missing" in (d / rd.RESULTS).read_text()


def test_the_report_with_a_fifo_manifest_says_so(demo, run_dir):
    d = run_dir("scripted", [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"))
    (d / rd.MANIFEST).unlink()
    os.mkfifo(d / rd.MANIFEST)
    rep = build_report(demo, {"scripted": d}, now="2026-11-30T09:00:00Z", unregistered=False)
    assert any("manifest.json: is a FIFO" in p for p in rep.arms["scripted"].provenance)


def _one_printable_line(text: str, limit: int = rd.STOP_DETAIL_MAX) -> bool:
    return text.isprintable() and len(text) <= limit and text == " ".join(text.split())


@pytest.mark.parametrize("data", [
    random.Random(4096).randbytes(4096), random.Random(64).randbytes(64),  # seeded: the same ids in every process
    b"stop\nnow\r\n\x1b[2J\x1b]0;owned\x07 \x00\x00" + "\u202egnp.exe".encode(),
    json.dumps({"by": "user", "detail": "line one\nline two\x1b[31m red " + "x" * 5000, "who": "ana\n\x00evil",
                "gate": "pace\r\n", "at": "\x1b[0m"}).encode(),
    json.dumps({"by": ["user"], "detail": {"nested": ["a\nb"]}}).encode(),
])
def test_stop_contents_become_one_printable_bounded_line(tmp_path, data):
    (tmp_path / rd.STOP).write_bytes(data)
    stop = rd.read_stop(tmp_path)
    assert stop is not None and stop.by in rd.STOP_BY
    assert _one_printable_line(stop.detail), repr(stop.detail)
    for field in (stop.who, stop.gate, stop.at):
        assert field is None or _one_printable_line(field), repr(field)
    assert _one_printable_line(stop.text(), 400)
    # and the same through status.json's stop (what the console and Discord show)
    assert _one_printable_line(status_reason_text({"stop": json.loads(json.dumps(stop.as_dict()))}), 400)


def test_one_line_keeps_plain_words_and_marks_a_cut():
    assert one_line("gate pace: projected wall 1.3 h > 1.0 h") == "gate pace: projected wall 1.3 h > 1.0 h"
    assert one_line("  a\n\n b\tc  ") == "a b c"
    assert one_line("é ü 日本") == "é ü 日本"
    cut = one_line("x" * 1000)
    assert len(cut) == rd.STOP_DETAIL_MAX and cut.endswith("…")


def test_a_ledger_line_appended_where_a_fifo_now_is_is_an_error_not_a_wait(tmp_path):
    """The notifier appends its posts.jsonl with append_line; a FIFO swapped in there would have
    held it until something read the pipe. Now: OSError at once (the notifier logs it and the post's
    in-flight marker stays, so nothing is lost), and a regular file still takes the line."""
    fifo = _hostile(tmp_path / "posts.jsonl", "fifo")
    with pytest.raises(OSError):
        returns_within(lambda: append_line(fifo, {"key": "k"}), what="the append")
    folder = _hostile(tmp_path / "dir.jsonl", "dir")
    with pytest.raises(OSError):
        append_line(folder, {"key": "k"})
    ok = tmp_path / "ok.jsonl"
    append_line(ok, {"key": "a"})
    append_line(ok, {"key": "b"})
    assert [json.loads(x)["key"] for x in ok.read_text().splitlines()] == ["a", "b"]


def test_read_lines_streams_a_file_line_by_line_and_drops_a_line_too_long_unkept(tmp_path):
    from prereg.core.safe_read import read_lines

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"a\n\nbb\n" + b"x" * 5000 + b"\nlast")
    got = list(read_lines(path, 10_000, line_max=100))
    assert got == [(1, b"a", 1, True), (2, b"", 0, True), (3, b"bb", 2, True), (4, None, 5000, True), (5, b"last", 4, False)]
    with pytest.raises(Unreadable, match="more than the 10"):
        list(read_lines(path, 10, line_max=100))
    for kind in KINDS:
        other = _hostile(tmp_path / f"other-{kind}", kind)
        with pytest.raises(Unreadable):
            returns_within(lambda other=other: list(read_lines(other, 100)), 10, what=f"read_lines of a {kind}")


def test_rows_are_read_in_memory_sized_to_the_rows_not_three_times_the_file(tmp_path):
    """Issue 33: a 300 MB rows.jsonl was read whole, split, then parsed: three times the file before a
    row was kept. Streamed, a line longer than a row may be is one bad line and is never kept."""
    rows = [make_row(s) for s in range(3)]
    path = tmp_path / rd.ROWS
    path.write_text(json.dumps(rows[0]) + "\n" + '{"seed": 9, "pad": "' + "x" * 3_000_000 + '"}\n'
                    + "".join(json.dumps(r) + "\n" for r in rows[1:]))
    got = read_rows(path)
    assert [r["seed"] for r in got.rows] == [0, 1, 2] and got.line_nos == [1, 3, 4]
    (bad,) = got.bad
    assert bad.line_no == 2 and "a line of 3,000,022 bytes, more than the 1,048,576 a row may be" in bad.reason
    from prereg.rundir.rows import last_row_of_seed

    assert last_row_of_seed(path, 2)[0]["seed"] == 2 and last_row_of_seed(path, 9) == (None, "no row for seed 9 yet")


def test_a_line_repeated_is_one_row_object_in_memory(tmp_path):
    """Issue 33: 300 MB of one row line, repeated, was read as 300,000 dictionaries (1 GB). The rows read
    are the same (the report still sees every line: its duplicates, its last row), sharing one object."""
    path = tmp_path / rd.ROWS
    a, b = make_row(0), make_row(0, success=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in (a, a, a, b, b, make_row(1))))
    got = read_rows(path)
    assert [r["seed"] for r in got.rows] == [0, 0, 0, 0, 0, 1] and got.line_nos == [1, 2, 3, 4, 5, 6]
    assert got.rows[0] is got.rows[1] is got.rows[2] and got.rows[3] is got.rows[4] and got.rows[2] is not got.rows[3]
    assert got.rows[3]["success"] is True and got.rows[0] == a
