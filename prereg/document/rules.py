"""The decision-rule grammar: `[ARM.]READ OP VALUE [and ...]`, its clauses, and a rule's identity."""

from __future__ import annotations

import re
from dataclasses import dataclass

from prereg.core.vocabulary import RULE_READS

CLAUSE_RE = re.compile(r"^\s*(?P<left>\S+)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<right>\S+)\s*$")


@dataclass(frozen=True)
class Clause:
    left: float | tuple[str, str]  # a number or (arm, read)
    op: str
    right: float | tuple[str, str]


@dataclass(frozen=True)
class Rule:
    condition: str  # quoted verbatim in the report
    action: str
    section: str
    line: int | None
    clauses: tuple[Clause, ...]

    def arms(self) -> set[str]:
        return {o[0] for c in self.clauses for o in (c.left, c.right) if isinstance(o, tuple)}


def rule_key(section: str, index: int) -> str:
    """A rule's identity: its section and its 1-based place among that section's rules ("base#1")."""
    return f"{section}#{index + 1}"


def parse_condition(cond: str, default_arm: str | None, known: set[str]) -> tuple[list[Clause], str]:
    """Clauses of 'a.read OP value and ...', or a message saying what is wrong."""
    clauses = []
    for part in re.split(r"\s+and\s+", cond.strip()):
        m = CLAUSE_RE.match(part)
        if not m:
            return [], f"cannot read the condition {part!r}"
        ops = []
        for tok in (m.group("left"), m.group("right")):
            val, msg = _operand(tok, default_arm, known)
            if msg:
                return [], msg
            ops.append(val)
        clauses.append(Clause(ops[0], m.group("op"), ops[1]))
    return clauses, ""


def _operand(tok: str, default_arm: str | None, known: set[str]):
    try:
        return float(tok), ""
    except ValueError:
        pass
    arm, _, read = tok.rpartition(".")
    if not arm:
        arm = default_arm
        if arm is None:
            return None, f"read {read!r} names no arm (write ARM.{read}, or give the rule an arm:)"
    if arm not in known:
        return None, f"unknown arm {arm!r} in {tok!r}"
    if read not in RULE_READS:
        return None, f"unknown read {read!r}"
    return (arm, read), ""
