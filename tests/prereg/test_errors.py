"""One error root: every error raised on purpose knows its exit code and its one line, and each
command maps them in one place (prereg.core.errors.run_cli); a bug's traceback goes to a log."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from prereg import rundir as rd
from prereg.core.errors import EXIT_FAILED, EXIT_USAGE, FontaineError, PreregError, RunFailed, UsageError, log_to, run_cli

REPO = Path(__file__).resolve().parents[2]

# every error class of the project, with the exit code it ends a command with
ERRORS = [
    ("prereg.core.errors", "PreregError", EXIT_USAGE),
    ("prereg.core.safe_read", "Unreadable", EXIT_USAGE),
    ("prereg.rundir", "Locked", EXIT_USAGE),
    ("prereg.rundir", "RunLocked", EXIT_USAGE),
    ("engine.record.errors", "DriverError", EXIT_USAGE),
    ("engine.policies.factory", "PolicyError", EXIT_USAGE),
    ("engine.policies.molmoact2.checkpoint", "CheckpointError", EXIT_USAGE),
    ("engine.policies.convmap.shim", "ConvMapError", EXIT_USAGE),
    ("engine.cli.convmap", "ConvmapUsageError", EXIT_USAGE),
    ("engine.sim.render", "RenderUnavailable", EXIT_USAGE),
    ("engine.cli.main", "UsageError", EXIT_USAGE),
    ("engine.run.driver", "RunFailed", EXIT_FAILED),
    ("engine.workers.worker", "_PredictFailed", EXIT_FAILED),
    ("engine.envs.place_scene", "ResetFailed", EXIT_FAILED),
    ("console.runs", "RunBusy", EXIT_USAGE),
    ("prereg.core.yamlpos", "PosYAMLError", EXIT_USAGE),
    ("console.notify.webhook", "WebhookConfigError", EXIT_USAGE),
]

NOT_YET: set[str] = set()  # every root has joined
ROOT = "FontaineError"


@pytest.mark.parametrize("module, name, code", ERRORS)
def test_every_error_has_the_root_and_its_exit_code(module, name, code):
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, FontaineError) and cls.exit_code == code


def test_the_old_bases_still_catch_them():
    from console.runs import RunBusy
    from engine.policies.convmap.shim import ConvMapError
    from engine.sim.render import RenderUnavailable

    assert issubclass(RunBusy, OSError) and issubclass(ConvMapError, ValueError)
    assert issubclass(RenderUnavailable, RuntimeError)
    assert rd.EXIT_USAGE == EXIT_USAGE and rd.EXIT_FAILED == EXIT_FAILED


def test_no_other_exception_root_in_the_packages():
    """A class deriving straight from a builtin exception is a new root: derive from prereg.core.errors."""
    builtin = {n for n in dir(__import__("builtins")) if n.endswith(("Error", "Exception"))}
    roots = []
    for pkg in ("engine", "prereg", "console"):
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and node.bases:
                    first = node.bases[0]
                    if isinstance(first, ast.Name) and first.id in builtin and node.name not in NOT_YET | {ROOT}:
                        roots.append(f"{path.relative_to(REPO)}: {node.name}({first.id})")
    assert roots == []


def test_run_cli_maps_by_class_to_one_line(capsys):
    def usage():
        raise UsageError("--x 3: must be 1 or 2")

    def failed():
        raise RunFailed("disk full: /r")

    assert run_cli("prog", usage) == 2
    assert capsys.readouterr().err == "prog: error: --x 3: must be 1 or 2\n"
    assert run_cli("prog", failed) == 1
    assert capsys.readouterr().err == "prog: failed: disk full: /r\n"
    assert run_cli("prog", lambda: 3) == 3


def test_a_problem_list_keeps_its_lines():
    exc = PreregError("f.md: invalid:\n  f.md:3: arms: missing\n  -> fix it")
    assert exc.one_line().count("\n") == 2
    assert UsageError("a\nb").one_line() == "a; b"


def test_a_bug_has_its_traceback_in_a_log_and_the_line_says_where(capsys, tmp_path):
    def bug():
        return {}["missing"]

    assert run_cli("prog", bug) == EXIT_FAILED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error (KeyError" in err
    where = Path(err.rsplit("the traceback is in ", 1)[1].strip())
    try:
        assert "Traceback" in where.read_text() and "bug" in where.read_text()
    finally:
        where.unlink()

    log = tmp_path / "driver.log"

    def bug_in_a_run():
        log_to(log)
        raise RuntimeError("boom")

    assert run_cli("prog", bug_in_a_run) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f"the traceback is in {log}" in err and "RuntimeError: boom" in log.read_text()


def test_a_reader_that_went_away_is_not_a_bug(demo):
    """`fontaine-prereg show X.md | head -1` (issue 33: `freeze ... | head -1` said "internal error ...
    this is a bug" though the freeze had completed): stdout's reader closed, so the command exits as a
    shell tool killed by SIGPIPE would (141), with nothing on stderr."""
    import os
    import subprocess
    import sys

    from prereg.core.errors import EXIT_BROKEN_PIPE

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "prereg.outputs.cli", "show", str(demo)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE == 141 and err == "", err


def test_another_broken_pipe_is_still_a_bug(capsys):
    """Only stdout's reader going away is forgiven: a pipe to a worker breaking is a bug like any other."""
    import os

    def body():
        r, w = os.pipe()
        os.close(r)
        try:
            os.write(w, b"x")
        finally:
            os.close(w)

    assert run_cli("fontaine-x", body) == EXIT_FAILED
    assert "internal error (BrokenPipeError" in capsys.readouterr().err


def test_a_quoted_control_character_is_shown_escaped_in_the_one_line(capsys):
    def body():
        raise UsageError("status.json: state 'a\x1b[2J\x1b]0;T\x07' is not one of running, done")

    assert run_cli("fontaine-x", body) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "\x1b" not in err and "state 'a\\x1b[2J\\x1b]0;T\\x07'" in err


def test_a_symlink_loop_met_anywhere_is_the_users_path_not_a_bug(capsys, tmp_path):
    """pathlib's resolve raises RuntimeError on a loop (before 3.13), an open OSError ELOOP: either,
    from any command, is a path the user gave (or one a file they gave names), one line and exit 2."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)

    def resolves():
        loop.resolve()

    def opens():
        open(loop / "x")

    for body in (resolves, opens):
        assert run_cli("fontaine-x", body) == EXIT_USAGE
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"fontaine-x: error: {loop}") and "symbolic link loop" in err and "\n" not in err, err
