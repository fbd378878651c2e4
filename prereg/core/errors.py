"""Errors a person can act on: what was wrong, where (file:line, field), and what to do.

One root, `FontaineError`: every error the project raises on purpose subclasses it and carries
its exit code and the one line a command prints for it (`one_line()`). Bad input is a
`UsageError` (exit 2: nothing was run), a run that started and failed is a `RunFailed` (exit 1).
Each command's `main` maps them in one place, `run_cli`: one line on stderr, never a
traceback. Anything else is a bug: its traceback goes to a log (the run's `driver.log` once a
command knows its run directory, else a temporary file) and the one line says where.

The exit codes are defined here (prereg.rundir re-exports them): 0 done, 1 failed, 2 bad input,
3 stopped at an episode boundary.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from prereg.core.untrusted import escaped, shown

EXIT_DONE = 0  # every seed ran (error rows included: they are rows)
EXIT_FAILED = 1  # the run failed: a crash, a full disk, every worker dead, no episode could run
EXIT_USAGE = 2  # bad input (a flag, a document, a checkpoint, a run directory): nothing was run
EXIT_STOPPED = 3  # stopped at an episode boundary on request (STOP, a signal) or by a gate
EXIT_BROKEN_PIPE = 128 + 13  # the output's reader went away (`| head -1`): what a shell tool killed by SIGPIPE exits


class FontaineError(Exception):
    """The root of every error raised on purpose: it knows its exit code and its one line."""

    exit_code: int = EXIT_FAILED
    label: str = "failed"  # the word after the command's name: `fontaine-eval: failed: ...`

    def one_line(self) -> str:
        """What was wrong, where and what to do, on one line (a message's line breaks become '; ';
        a control character quoted from a file is shown escaped, never sent to the terminal, and a
        secret's shape quoted from anywhere is redacted)."""
        text = str(self).strip() or type(self).__name__
        return shown("; ".join(part.strip() for part in text.splitlines() if part.strip()))


class UsageError(FontaineError):
    """Bad input (a flag, a document, a checkpoint, a run directory): nothing was run, exit 2."""

    exit_code = EXIT_USAGE
    label = "error"


class RunFailed(FontaineError):
    """A run failed after it started; str() is the one-line reason also written to status.json."""

    exit_code = EXIT_FAILED
    label = "failed"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, located by field path and 1-based line."""

    field: str
    message: str
    line: int | None = None
    hint: str = ""

    def render(self, path: str = "") -> str:
        where = f"{path}:{self.line}" if self.line else path
        head = f"{where}: " if where else ""
        fld = f"{self.field}: " if self.field else ""
        tail = f" ({self.hint})" if self.hint else ""
        return f"{head}{fld}{self.message}{tail}"


class PreregError(UsageError):
    """A pre-registration cannot be used as asked; the message says what, where and what to do."""

    def __init__(self, message: str, problems: list[Problem] | tuple[Problem, ...] = ()):
        super().__init__(message)
        self.problems = list(problems)

    @classmethod
    def from_problems(cls, path: str, problems: list[Problem], what: str, todo: str) -> "PreregError":
        lines = [f"{path}: {what}:"] + ["  " + p.render(path) for p in problems] + [f"  -> {todo}"]
        return cls("\n".join(lines), problems)

    def one_line(self) -> str:
        """A problem list keeps one line per problem under its heading (a validation report)."""
        return shown(str(self).strip(), keep="\n")


# --------------------------------------------------------------------------- the commands' one mapping

_crash_log: Path | None = None  # where a bug's traceback goes (run_cli resets it; log_to sets it)


def log_to(path: str | Path | None) -> None:
    """Tracebacks of bugs from here on go to `path` (a run's driver.log), not to a temporary file."""
    global _crash_log
    _crash_log = Path(path) if path is not None else None


def write_traceback(text: str, prog: str = "fontaine", path: str | Path | None = None) -> str | None:
    """Append a traceback to the log (`path`, else the one `log_to` named; the process's stdout
    when that is the same file), else to a new temporary file; the path written, or None."""
    target = Path(path) if path is not None else _crash_log
    if target is not None:
        try:
            st = os.fstat(sys.stdout.fileno())
            same = target.exists() and os.path.samestat(st, target.stat())
        except (OSError, ValueError, AttributeError):
            same = False
        try:
            if same:
                sys.stdout.write(text if text.endswith("\n") else text + "\n")
                sys.stdout.flush()
            else:
                with open(target, "a", encoding="utf-8") as f:
                    f.write(text if text.endswith("\n") else text + "\n")
            return str(target)
        except (OSError, ValueError):
            pass
    try:
        fd, name = tempfile.mkstemp(prefix=f"{prog}-traceback-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return name
    except OSError:
        return None


def run_cli(prog: str, fn: Callable[[], int]) -> int:
    """Run a command's body and map what it raises, by class, to one line and an exit code.

    A FontaineError prints `prog: <label>: <one line>` on stderr and exits with its code; any
    other exception is a bug: its traceback goes to the log, the one line says where."""
    log_to(None)
    try:
        code = fn()
        sys.stdout.flush()  # here, not at exit: a reader gone by now is a broken pipe below, not a bug
        return code
    except BrokenPipeError:
        if not _stdout_gone():  # another pipe broke (a worker's): a bug like any other
            return _bug(prog)
        _quiet_stdout()  # the reader of our output went away (`| head -1`): not a bug, nothing to say
        return EXIT_BROKEN_PIPE
    except FontaineError as exc:
        print(f"{prog}: {exc.label}: {exc.one_line()}", file=sys.stderr, flush=True)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - a bug: the traceback to the log, one line here
        loop = symlink_loop(exc)
        if loop is not None:  # a path the user gave, or one a file they gave names: their file system's loop
            print(f"{prog}: error: {loop}: a symbolic link loop (too many levels of symbolic links); remove the "
                  "loop or give another path", file=sys.stderr, flush=True)
            return EXIT_USAGE
        return _bug(prog)


def symlink_loop(exc: BaseException) -> str | None:
    """The path of a symbolic link loop `exc` ran into (pathlib's resolve raises RuntimeError on one
    before Python 3.13, an open or a stat OSError ELOOP), else None."""
    import errno

    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return escaped(str(exc.filename or "a path"))
    if type(exc) is RuntimeError and str(exc).startswith("Symlink loop from "):
        return escaped(str(exc).removeprefix("Symlink loop from ").strip("'\""))
    return None


def _bug(prog: str) -> int:
    """The exception being handled is a bug: its traceback to the log, one line on stderr, exit 1."""
    exc = sys.exc_info()[1]
    where = write_traceback(traceback.format_exc(), prog)
    first = shown((str(exc).strip().splitlines() or [""])[0])
    print(f"{prog}: failed: internal error ({type(exc).__name__}{': ' + first if first else ''}); "
          f"this is a bug: the traceback is in {where or 'nowhere (no log could be written)'}",
          file=sys.stderr, flush=True)
    return EXIT_FAILED


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll says POLLERR)."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, 0)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so the interpreter's flush at exit does not
    raise (and print) the same error again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
