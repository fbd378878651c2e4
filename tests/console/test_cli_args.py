"""`fontaine-notify` and `fontaine-console` refuse bad input as `fontaine-eval` does, with the same
helpers (prereg/core/argcheck.py): one line, exit 2, ASCII digits only, no flag given twice, no empty
path; and a bug in the notifier is one line on stderr with its traceback in the notifier's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console import app as console_app
from console.notify import service
from console.notify.ledger import LOG, home
from prereg.core.errors import EXIT_FAILED, EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("argv, why", [
    (["--every", "٣"], "argument --every: not an integer: '٣'"),
    (["--every", "３"], "argument --every: not an integer"),
    (["--poll", "٠.٥"], "argument --poll: not a number"),
    (["--every", "0"], "argument --every: must be an integer from 1 to 100,000"),
    (["--poll", "1e9"], "argument --poll: must be more than 0 and at most 60"),  # issue 33: it never looked again
    (["--http-timeout", "1e12"], "argument --http-timeout: must be more than 0 and at most 600"),
    (["--grace", "1e300"], "argument --grace: must be from 0 to 604800"),
    (["--grace", "nan"], "argument --grace: not a finite number"),
    (["--probe", "-1"], "argument --probe: must be from 0 to 86400"),
    (["--every", "3", "--every", "4"], "--every is given twice (3, then 4); give it once"),
    (["--runs-dir", "a", "--runs-dir=b"], "--runs-dir is given twice (a, then b)"),
    (["--no-check", "--no-check"], "--no-check is given twice; give it once"),
    (["--runs-dir", ""], "argument --runs-dir: an empty path would mean the working directory"),
    (["--runs-dir", " "], "argument --runs-dir: an empty path"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
])
def test_the_notifier_refuses_bad_flags_in_one_line(argv, why, capsys):
    assert service.main(argv) == EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("fontaine-notify: error: ") and why in line, line


def test_a_runs_dir_that_is_a_file_is_one_line_from_the_real_process(tmp_path):
    """`fontaine-notify --runs-dir /etc/passwd` printed a traceback."""
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    for given, why in [(a_file, f"--runs-dir {a_file} is a file, not a folder of run directories"),
                       (a_file / "sub", "cannot hold the notifier's lock in")]:
        out = subprocess.run([sys.executable, "-m", "console.notify.service", "--runs-dir", str(given)], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == EXIT_USAGE, out
        line = _one_line(out.stderr)
        assert line.startswith("fontaine-notify: error: ") and why in line, line
    assert a_file.read_text() == "root:x:0:0\n"


def test_a_symlink_loop_runs_dir_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    assert service.main(["--runs-dir", str(loop)]) == EXIT_USAGE
    assert "fontaine-notify: error: --runs-dir" in _one_line(capsys.readouterr().err)


def test_a_bug_in_the_notifier_is_one_line_and_its_traceback_is_in_the_notifier_log(tmp_path, capsys, monkeypatch):
    def bug(self):
        return {}["a bug"]

    monkeypatch.setattr(service.Service, "run", bug)
    monkeypatch.setattr(service.logging, "basicConfig", lambda **kw: None)  # keep the test's own logging
    runs = tmp_path / "runs"
    assert service.main(["--runs-dir", str(runs), "--no-check"]) == EXIT_FAILED
    line = _one_line(capsys.readouterr().err)
    log = home(runs.resolve()) / LOG
    assert line.startswith("fontaine-notify: failed: internal error (KeyError") and f"the traceback is in {log}" in line
    assert "Traceback" in log.read_text() and "a bug" in log.read_text()


@pytest.mark.parametrize("argv, why", [
    (["--poll", "٣"], "argument --poll: not a number: '٣'"),
    (["--poll", "0"], "argument --poll: must be more than 0 and at most 60"),
    (["--poll", "1e9"], "argument --poll: must be more than 0 and at most 60"),  # issue 33: it never polled again
    (["--poll", "inf"], "argument --poll: not a finite number"),
    (["--runs-dir", "a", "--runs-dir", "b"], "--runs-dir is given twice (a, then b); give it once"),
    (["--poll", "1", "--poll=2"], "--poll is given twice (1, then 2)"),
    (["--runs-dir", ""], "argument --runs-dir: an empty path would mean the working directory"),
    (["--prereg-dir", ""], "argument --prereg-dir: an empty path"),
])
def test_the_console_refuses_bad_flags_in_one_line_before_it_opens(argv, why, capsys, monkeypatch):
    opened = []
    monkeypatch.setattr(console_app.FontaineApp, "run", lambda self: opened.append(self))
    assert console_app.main(argv) == EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("fontaine-console: error: ") and why in line, line
    assert opened == []


def test_the_console_still_takes_repeated_prereg_dirs(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(console_app.FontaineApp, "run", lambda self: seen.append((self.runs_dir, self.poll_s)))
    assert console_app.main(["--runs-dir", str(tmp_path), "--prereg-dir", "a", "--prereg-dir", "b", "--poll", "0.25"]) == 0
    assert seen == [(tmp_path, 0.25)]


def test_the_number_and_path_types_are_the_ones_fontaine_eval_uses():
    """One source of truth: the engine's CLI (engine/cli/) takes its types from prereg.core.argcheck, it defines none of its own."""
    import ast

    trees = [ast.parse(p.read_text(encoding="utf-8")) for p in sorted((REPO / "engine" / "cli").glob("*.py"))]
    defined = {n.name for t in trees for n in ast.walk(t) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert not defined & {"_number", "_path", "_Parser", "_bounded_int", "_bounded_float"}
    imported = {a.name for t in trees for n in ast.walk(t) if isinstance(n, ast.ImportFrom)
                and n.module == "prereg.core.argcheck" for a in n.names}
    assert {"parse_once", "path_type", "OneLineParser", "positive_int"} <= imported
