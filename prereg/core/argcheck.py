"""Command-line checks argparse does not make, shared by every command (`fontaine-eval`,
`fontaine-prereg`, `fontaine-console`, `fontaine-notify`): the one source of these rules.

argparse lets a flag be given twice and silently keeps the last (`--workers 2 --workers 3` runs
3 workers), `int()`/`float()` read any Unicode digit (`--num-seeds ٣` is 3), and `Path('')` is
the working directory (`--run-dir ''` wrote a run there). All are bad input here: a repeated
flag is refused in one line (`repeated_option`, `parse_once`), numbers are ASCII digits only
and bounded (`number_type` and the types built on it), a path is never empty (`path_type`),
and a parse error is one line and exit 2 (`OneLineParser`, mapped by prereg.core.errors.run_cli).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from prereg.core.errors import UsageError

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def ascii_int(text: str) -> int:
    """int(text) for ASCII digits with an optional sign only (no '٣', '３', '1_000', ' 5'); ValueError else."""
    if not _INT.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def ascii_float(text: str) -> float:
    """float(text) for an ASCII decimal number (or nan/inf, for the caller to refuse in words); ValueError else."""
    if not _FLOAT.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    return float(text)


_MANY_ALLOWED = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
                 argparse._HelpAction, argparse._VersionAction, argparse._ExtendAction)


def repeated_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """One line naming the first flag given more than once where only one value counts (with
    the values it was given and what to do), or None. Flags that collect (`action='append'`)
    may repeat. Follows a subcommand into its own parser."""
    by_option: dict[str, argparse.Action] = {}
    subcommands: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        for opt in action.option_strings:
            by_option[opt] = action
        if isinstance(action, argparse._SubParsersAction):
            subcommands.update(action.choices)
    seen: dict[str, tuple[str, str | None]] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return None
        if tok in subcommands:
            return repeated_option(subcommands[tok], argv[i + 1:])
        if not tok.startswith("-") or tok == "-":
            i += 1
            continue
        opt, eq, inline = tok.partition("=")
        action = by_option.get(opt)
        if action is None:
            i += 1
            continue
        takes_value = action.nargs != 0
        value = inline if eq else (argv[i + 1] if takes_value and i + 1 < len(argv) else None)
        if not isinstance(action, _MANY_ALLOWED):
            if action.dest in seen:
                first_opt, first_value = seen[action.dest]
                given = "" if not takes_value else f" ({first_value!s}, then {value!s})"
                same = opt if opt == first_opt else f"{first_opt} / {opt}"
                return f"{same} is given twice{given}; give it once (only one value can count)"
            seen[action.dest] = (opt, value)
        i += 2 if takes_value and not eq else 1
    return None


# --------------------------------------------------------------------------- argparse types


def number_type(parse, *, minimum: float, inclusive: bool, what: str, maximum: float | None = None):
    """An argparse type: parse (ASCII only), require finite, and bound it with a message that states the bounds."""

    def convert(text: str):
        try:  # ASCII digits only: int() and float() also read '٣' and '３' (and '1_000')
            v = (ascii_int if parse is int else ascii_float)(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if parse is int else 'a number'}: {text!r}") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
        if v < minimum or (v == minimum and not inclusive) or (maximum is not None and v > maximum):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return v

    return convert


def bounded_int(lo: int, hi: int):
    return number_type(int, minimum=lo, inclusive=True, maximum=hi, what=f"an integer from {lo:,} to {hi:,}")


def bounded_float(lo: float, hi: float, *, inclusive: bool = False):
    """A float in (lo, hi], or [lo, hi] when `inclusive`: every number a command takes has an upper
    bound too (`--poll 1e9` would never look again; a timeout past ~1e9 s overflows a wait)."""
    what = f"from {lo:g} to {hi:g}" if inclusive else f"more than {lo:g} and at most {hi:g}"
    return number_type(float, minimum=lo, inclusive=inclusive, maximum=hi, what=what)


POLL_MAX_S = 60.0  # the console's and the notifier's --poll: a look at the runs at least once a minute
DAY_S = 86400.0

positive_int = number_type(int, minimum=0, inclusive=False, what="a positive integer")
nonneg_int = number_type(int, minimum=0, inclusive=True, what="zero or positive")
positive_float = number_type(float, minimum=0, inclusive=False, what="positive")
nonneg_float = number_type(float, minimum=0, inclusive=True, what="zero or positive")
probability = number_type(float, minimum=0, inclusive=True, maximum=1, what="a probability from 0 to 1")


def path_type(text: str) -> Path:
    """A path flag: never empty (Path('') is the working directory: `--run-dir ''` wrote a run there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path would mean the working directory; "
                                         "give a folder or file name, e.g. runs/my-run")
    return Path(text)


# --------------------------------------------------------------------------- starting a command of ours


def module_argv(module: str, *args: str) -> list[str]:
    """`python -P -m MODULE ARGS`: how the console starts a run, a resume, a report or the notifier.
    `-P` keeps the working folder off the import path (`python -m` puts it first: a `timeit.py` in the
    folder the console was started from crashed every run it launched)."""
    import sys

    return [sys.executable, "-P", "-m", module, *args]


# --------------------------------------------------------------------------- the parser


class OneLineParser(argparse.ArgumentParser):
    """A parse error is a UsageError (one line, exit 2, by run_cli), not usage text and SystemExit."""

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


def parse_once(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parser.parse_args(argv), with a flag given twice refused first (argparse would keep the last)."""
    repeated = repeated_option(parser, argv)
    if repeated:
        raise UsageError(repeated)
    return parser.parse_args(argv)
