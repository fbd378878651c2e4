"""Command-line checks argparse does not make, shared by `fontaine-eval` and `fontaine-prereg`.

argparse lets a flag be given twice and silently keeps the last (`--workers 2 --workers 3` runs
3 workers), and `int()`/`float()` read any Unicode digit (`--num-seeds ٣` is 3). Both are bad
input here: a repeated flag is refused in one line, and numbers are ASCII digits only.
"""

from __future__ import annotations

import argparse
import re

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
