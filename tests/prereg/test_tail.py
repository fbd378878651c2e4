"""The tailer reads only what is new, holds partial lines, and restarts on truncation or replacement."""

import json
import os

from console.fixtures import make_row
from prereg.rundir.tail import RowsTailer


def line(seed, **kw):
    return (json.dumps(make_row(seed, **kw)) + "\n").encode()


def test_missing_file_reads_as_no_rows(tmp_path):
    t = RowsTailer(tmp_path / "rows.jsonl")
    b = t.poll()
    assert not b and not t.exists


def test_reads_appended_lines_once(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(0) + line(1))
    t = RowsTailer(p)
    assert [r["seed"] for r in t.poll().rows] == [0, 1]
    assert t.poll().rows == []
    with open(p, "ab") as f:
        f.write(line(2))
    assert [r["seed"] for r in t.poll().rows] == [2]
    assert t.offset == p.stat().st_size


def test_partial_line_is_held_until_its_newline(tmp_path):
    p = tmp_path / "rows.jsonl"
    whole = line(7)
    p.write_bytes(line(6) + whole[:25])
    t = RowsTailer(p)
    b = t.poll()
    assert [r["seed"] for r in b.rows] == [6] and b.bad == []
    assert t.partial == whole[:25]
    assert t.torn_tail() is not None and t.torn_tail().line_no == 2
    with open(p, "ab") as f:
        f.write(whole[25:-1])
    assert t.poll().rows == []
    with open(p, "ab") as f:
        f.write(b"\n")
    assert [r["seed"] for r in t.poll().rows] == [7]
    assert t.partial == b"" and t.torn_tail() is None


def test_line_split_across_many_small_writes(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(b"")
    t = RowsTailer(p)
    data = line(1) + line(2) + line(3)
    seen = []
    for i in range(0, len(data), 7):
        with open(p, "ab") as f:
            f.write(data[i:i + 7])
        seen += [r["seed"] for r in t.poll().rows]
    assert seen == [1, 2, 3]


def test_corrupt_lines_are_counted_with_line_numbers(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(0) + b"{not json\n" + b"\n" + b"[1, 2]\n" + b'{"no_seed": 1}\n' + line(1))
    b = RowsTailer(p).poll()
    assert [r["seed"] for r in b.rows] == [0, 1]
    assert [bad.line_no for bad in b.bad] == [2, 4, 5]
    assert "not JSON" in b.bad[0].reason


def test_truncation_restarts_from_the_top(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(0) + line(1) + line(2))
    t = RowsTailer(p)
    t.poll()
    with open(p, "wb") as f:  # truncated in place, then a shorter content
        f.write(line(9))
    b = t.poll()
    assert b.restarted and "shrank" in b.restart_reason
    assert [r["seed"] for r in b.rows] == [9]


def test_replacement_by_rename_restarts(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(0))
    t = RowsTailer(p)
    t.poll()
    new = tmp_path / "rows.jsonl.new"
    new.write_bytes(line(5) + line(6) + line(7))
    os.replace(new, p)
    b = t.poll()
    assert b.restarted and "inode" in b.restart_reason
    assert [r["seed"] for r in b.rows] == [5, 6, 7]


def test_rewrite_in_place_with_same_length_prefix_is_noticed(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(1))
    t = RowsTailer(p)
    t.poll()
    with open(p, "r+b") as f:  # same inode, longer, different head
        f.write(line(3) + line(4))
    b = t.poll()
    assert b.restarted
    assert [r["seed"] for r in b.rows] == [3, 4]


def test_disappearing_file_restarts_when_it_comes_back(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(line(0))
    t = RowsTailer(p)
    t.poll()
    p.unlink()
    assert t.poll().restarted
    p.write_bytes(line(1))
    assert [r["seed"] for r in t.poll().rows] == [1]


def test_max_bytes_reads_in_steps_and_never_rereads(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(b"".join(line(s) for s in range(50)))
    t = RowsTailer(p, max_bytes=2000)
    seeds, polls = [], 0
    while True:
        b = t.poll()
        polls += 1
        seeds += [r["seed"] for r in b.rows]
        if not b.more:
            break
    assert seeds == list(range(50)) and polls > 2
    assert t.offset == p.stat().st_size
