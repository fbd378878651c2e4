"""One source of truth for the run-directory contract: its file names live in prereg/rundir.py
and a row's meaning in prereg/rows.py. A file name written as a literal elsewhere, or a row's
status compared by hand (`.get("status") ==`), is a second copy that will one day disagree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from prereg import rundir as rd

REPO = Path(__file__).resolve().parent.parent
OWNERS = {REPO / "prereg" / "rundir.py", REPO / "prereg" / "rows.py"}
NAMES = {v for k, v in vars(rd).items() if k.isupper() and isinstance(v, str) and len(v) > 2
         and (v.endswith((".json", ".jsonl", ".md", ".png", ".log", ".lock")) or v == rd.STOP)}
# (`heartbeat` is also a word the console shows as a column title: it is not held to this test)
ROW_STATUS = re.compile(r"""\.get\(\s*["']status["']\s*\)\s*[!=]=""")


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
                found.append(f"{path.relative_to(REPO)}:{i}: {line.strip()} (use prereg.rows.is_error / classify)")
    assert not found, "\n".join(found)
