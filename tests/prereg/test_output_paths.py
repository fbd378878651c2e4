"""Issue 43: a path named for output is written only when it is new or a regular file.

As root, `--convmap-seam-stats /dev/full` renamed a 707-byte regular file over the device. Every write
to a path goes through `prereg.core.safe_read.check_output`: a device, a FIFO, a socket, a directory or
a loop there (or at a symlink's end) is one line and exit 2, and the thing there is left as it was.
/dev/null is only ever reached through a symlink in tmp: the device itself is never touched."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from prereg.core.safe_read import NotWritable, check_output
from prereg.rundir.files import write_bytes_atomic, write_json_atomic, write_text_atomic
from tests.helpers import returns_within


def _make(kind: str, path):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "link-to-fifo":
        os.mkfifo(path.parent / "real-fifo")
        path.symlink_to(path.parent / "real-fifo")
    elif kind == "link-to-devnull":
        path.symlink_to("/dev/null")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        return s
    return None


WHY = {"fifo": "is a FIFO (named pipe), not a regular file", "dir": "is a directory, not a regular file",
       "link-to-fifo": "is a FIFO (named pipe), not a regular file", "link-to-devnull": "is a character device",
       "loop": "symbolic link loop", "socket": "is a socket"}


@pytest.mark.parametrize("kind", sorted(WHY))
def test_check_output_refuses_what_is_not_a_regular_file_in_one_line(tmp_path, kind):
    path = tmp_path / "out.json"
    sock = _make(kind, path)
    try:
        with pytest.raises(NotWritable) as got:
            check_output(path)
    finally:
        if sock is not None:
            sock.close()
    msg = got.value.one_line()
    assert WHY[kind] in msg and str(path) in msg and "\n" not in msg
    assert got.value.exit_code == 2


def test_check_output_takes_a_new_path_a_regular_file_and_a_link_to_one(tmp_path):
    check_output(tmp_path / "new.json")
    (tmp_path / "old.json").write_text("x")
    check_output(tmp_path / "old.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "old.json")
    check_output(tmp_path / "link.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere")
    check_output(tmp_path / "dangling.json")  # the atomic writer replaces the link, never its missing target


@pytest.mark.parametrize("kind", ["fifo", "dir", "link-to-fifo", "link-to-devnull"])
def test_the_atomic_writer_leaves_a_fifo_a_directory_and_a_device_as_they_were(tmp_path, kind):
    """A path the user named (`named=True`): only a new path or a regular file is written."""
    path = tmp_path / "out.json"
    _make(kind, path)
    before = os.lstat(path)
    with pytest.raises(NotWritable):
        returns_within(lambda: write_text_atomic(path, "hello\n", named=True), 10, what="the atomic write")
    with pytest.raises(NotWritable):
        write_bytes_atomic(path, b"{}", named=True)
    after = os.lstat(path)
    assert (after.st_ino, stat.S_IFMT(after.st_mode)) == (before.st_ino, stat.S_IFMT(before.st_mode))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind
    if kind == "link-to-devnull":
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.readlink(path) == "/dev/null"


@pytest.mark.parametrize("kind", ["dir", "link-to-devnull"])
def test_a_writers_own_file_is_never_written_over_a_device_or_a_directory(tmp_path, kind):
    path = tmp_path / "status.json"
    _make(kind, path)
    with pytest.raises(NotWritable):
        write_json_atomic(path, {"a": 1})
    assert path.is_dir() if kind == "dir" else os.readlink(path) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_where_a_writers_own_file_goes_is_renamed_over_never_opened(tmp_path):
    """A run's status.json, a report's chart.png: a FIFO put there is junk, replaced whole (a resume heals
    it), never opened for a write that would wait on a reader."""
    path = tmp_path / "status.json"
    os.mkfifo(path)
    returns_within(lambda: write_json_atomic(path, {"a": 1}), 10, what="the atomic write")
    assert path.is_file() and not path.is_fifo() and path.read_text() == '{\n  "a": 1\n}\n'


def test_the_atomic_writer_still_replaces_a_regular_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n"


def _devnull_link(tmp_path):
    link = tmp_path / "rig.json"
    link.symlink_to("/dev/null")
    return link


@pytest.mark.parametrize("kind", ["fifo", "dir", "link-to-devnull"])
def test_seam_stats_to_a_device_a_fifo_or_a_directory_is_one_line_exit_2_before_the_rollout(tmp_path, capsys, kind):
    from engine.cli.main import main

    path = tmp_path / "rig.json"
    _make(kind, path)
    before = os.lstat(path)
    code = returns_within(lambda: main(["--policy", "scripted", "--num-seeds", "1", "--episode-seconds", "1",
                                        "--convmap-seam-stats", str(path)]), 60, what="fontaine-eval")
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    err = err.strip()
    assert err.startswith("fontaine-eval: error: --convmap-seam-stats") and WHY[kind] in err and "\n" not in err, err
    assert "written to" not in out and "Traceback" not in err
    assert os.lstat(path).st_ino == before.st_ino and stat.S_IFMT(os.lstat(path).st_mode) == stat.S_IFMT(before.st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_prereg_new_never_writes_through_a_link(tmp_path, capsys):
    from prereg.outputs.cli import main

    dangling = tmp_path / "p.md"
    dangling.symlink_to(tmp_path / "elsewhere.md")
    assert main(["new", str(dangling)]) == 2
    err = capsys.readouterr().err.strip()
    assert "already exists" in err and "\n" not in err
    assert not (tmp_path / "elsewhere.md").exists()
    assert main(["new", str(tmp_path / "q.md")]) == 0 and (tmp_path / "q.md").is_file()


def test_a_tripwire_report_is_never_written_through_a_link_onto_a_device(tmp_path):
    from engine.policies.convmap.tripwires import write_tripwires_json

    link = _devnull_link(tmp_path)
    with pytest.raises(NotWritable):
        write_tripwires_json([], link)
    assert os.readlink(link) == "/dev/null" and stat.S_ISCHR(os.stat("/dev/null").st_mode)
