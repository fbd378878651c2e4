"""One source of truth for the run-directory contract: its file names, run states and run-id format
live in prereg/rundir/ and a row's meaning in prereg/rundir/rows.py. A file name written as a literal
elsewhere, a run state compared or listed by hand (`state == "done"`, `("starting", "running")`),
a run-id stamp format or pattern, or a row's status compared by hand (`.get("status") ==`), is a
second copy that will one day disagree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from prereg import rundir as rd
from prereg.rundir.files import new_run_id, run_stamp, stamp_of

REPO = Path(__file__).resolve().parent.parent
OWNERS = {REPO / "prereg" / "rundir" / name for name in ("__init__.py", "files.py", "rows.py", "outcomes.py")}
NAMES = {v for k, v in vars(rd).items() if k.isupper() and isinstance(v, str) and len(v) > 2
         and (v.endswith((".json", ".jsonl", ".md", ".png", ".log", ".lock")) or v == rd.STOP)}
# (`heartbeat` is also a word the console shows as a column title: it is not held to this test)
ROW_STATUS = re.compile(r"""\.get\(\s*["']status["']\s*\)\s*[!=]=""")
# the states a run can be in, recorded (STATES) or concluded by a reader (died, unreadable, unknown)
RUN_STATES = frozenset(rd.STATES) | {rd.DIED, rd.UNREADABLE, rd.UNKNOWN}
# how a run id ends: rundir's strftime format and the pattern that finds it
RUN_ID_FORMATS = (rd.RUN_STAMP_FORMAT, rd.RUN_STAMP_RE.pattern.rstrip("$").strip("()"))


def _sources():
    for pkg in ("console", "engine", "prereg"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            if path not in OWNERS:
                yield path


def test_the_contract_names_every_file_it_owns():
    assert {rd.STATUS, rd.MANIFEST, rd.ROWS, rd.STOP, rd.LOG, rd.PID, rd.LOCK, rd.RESULTS_JSON} <= NAMES


def test_no_contract_file_name_is_written_as_a_literal_elsewhere():
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r} (use prereg.rundir's name)")
    assert not found, "\n".join(found)


def test_no_row_status_is_compared_by_hand():
    found = []
    for path in _sources():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ROW_STATUS.search(line):
                found.append(f"{path.relative_to(REPO)}:{i}: {line.strip()} (use prereg.rundir.outcomes.is_error / classify)")
    assert not found, "\n".join(found)


def _state_literals(tree: ast.AST):
    """(line, what) for each run state compared by hand (`x == "done"`) or listed by hand (a tuple,
    list, set or dict whose strings are all run states, two or more: `("starting", "running")`).
    A word that is also a state, used as a key or in a message, is not a state literal."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                for side in (node.left, right):
                    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(side, ast.Constant) and side.value in RUN_STATES:
                        yield node.lineno, f"compared with {side.value!r}"
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else node.elts
            words = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(set(words)) >= 2 and set(words) <= RUN_STATES:
                yield node.lineno, f"lists {sorted(set(words))}"


def test_no_run_state_is_compared_or_listed_by_hand():
    found = []
    for path in _sources():
        for line, what in _state_literals(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(f"{path.relative_to(REPO)}:{line}: {what} (use prereg.rundir's states and sets)")
    assert not found, "\n".join(found)


def test_the_state_check_finds_what_it_looks_for():
    bad = ast.parse('if st == "done": pass\nLIVE = ("starting", "running", "stopping")\nS = {"died": 1, "failed": 2}')
    assert [w for _, w in _state_literals(bad)] == ["compared with 'done'", "lists ['running', 'starting', 'stopping']",
                                                    "lists ['died', 'failed']"]
    fine = ast.parse('x = d.get("done")\nCOLS = (("done", "done"), ("arm", "arm"))\nk in ("done", "total")\n'
                     'print("failed")\nst == rd.DONE')
    assert list(_state_literals(fine)) == []


def test_the_run_id_format_is_defined_once():
    assert new_run_id("p", "a", 0).endswith(run_stamp(0)) and stamp_of(new_run_id("p", "a", 0)) == run_stamp(0)
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for i, line in enumerate(text.splitlines(), 1):
            for fmt in RUN_ID_FORMATS:
                if fmt in line:
                    found.append(f"{path.relative_to(REPO)}:{i}: {line.strip()} (use run_stamp / stamp_of)")
    assert not found, "\n".join(found)
