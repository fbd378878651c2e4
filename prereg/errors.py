"""Errors a person can act on: what was wrong, where (file:line, field), and what to do.

A bad document is input, not a bug: the CLI prints these and exits 2, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


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


class PreregError(Exception):
    """A pre-registration cannot be used as asked; the message says what, where and what to do."""

    def __init__(self, message: str, problems: list[Problem] | tuple[Problem, ...] = ()):
        super().__init__(message)
        self.problems = list(problems)

    @classmethod
    def from_problems(cls, path: str, problems: list[Problem], what: str, todo: str) -> "PreregError":
        lines = [f"{path}: {what}:"] + ["  " + p.render(path) for p in problems] + [f"  -> {todo}"]
        return cls("\n".join(lines), problems)
