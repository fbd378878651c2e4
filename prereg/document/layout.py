"""Where things are in a pre-registration's text: the front matter, the sections, their seals, the
results blocks; and the marker lines, read here and written from here (seal, amendment, results)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prereg.core.errors import Problem

SEAL_RE = re.compile(r"^<!-- fontaine:sealed (?P<attrs>.*?) -->\s*$")
AMEND_RE = re.compile(r"^<!-- fontaine:amendment (?P<n>\d+) -->\s*$")
RESULTS_BEGIN_RE = re.compile(r"^<!-- fontaine:results begin (?P<key>.*?) -->\s*$")
RESULTS_END = "<!-- fontaine:results end -->"
REPLACED_MARK = "<!-- fontaine:replaced -->"  # inside a results block: the reports it replaced, newest first
FENCE_YAML_RE = re.compile(r"^```\s*ya?ml\s*$")
FENCE_END_RE = re.compile(r"^```\s*$")


def seal_marker(attrs: str) -> str:
    """The seal line `fontaine-prereg freeze` writes (`attrs`: 'section=base sha256=... ...')."""
    return f"<!-- fontaine:sealed {attrs} -->"


def amendment_marker(n: int) -> str:
    return f"<!-- fontaine:amendment {n} -->"


def results_begin(key: str, **attrs: str) -> str:
    """The first line of a tool-owned results block (`key`: 'arms=a,b'; `attrs`: at=, rules=, superseded=, by=)."""
    extra = "".join(f" {k}={v}" for k, v in attrs.items() if v)
    return f"<!-- fontaine:results begin {key}{extra} -->"


@dataclass
class Seal:
    line: int  # 1-based
    attrs: dict[str, str]

    @property
    def sha256(self) -> str:
        return self.attrs.get("sha256", "")

    @property
    def parent(self) -> str:
        return self.attrs.get("parent", "-")


@dataclass
class Section:
    name: str  # "base" | "amendment-N"
    number: int  # 0 for the base
    start: int  # 0-based first line
    end: int | None = None  # 0-based, exclusive: the seal line, or where a seal would go
    seal: Seal | None = None
    yaml_start: int | None = None  # 0-based first line of its YAML
    yaml_end: int | None = None  # exclusive

    @property
    def sealed(self) -> bool:
        return self.seal is not None


@dataclass
class ResultsBlock:
    key: str  # "arms=a,b": the arm set it reports (one live block per set)
    start: int  # 0-based line of the begin marker
    end: int  # 0-based line of the end marker (inclusive)
    attrs: dict[str, str] = field(default_factory=dict)  # at=, rules= (the questions it answers), superseded=, by=

    @property
    def arms(self) -> set[str]:
        return {a for a in self.key.removeprefix("arms=").split(",") if a}

    @property
    def rules(self) -> set[str]:
        return {k for k in self.attrs.get("rules", "").split(",") if k}

    @property
    def superseded(self) -> bool:
        return "superseded" in self.attrs


@dataclass
class Layout:
    lines: list[str]
    sections: list[Section]
    results: list[ResultsBlock]
    problems: list[Problem]


def split_lines(text: str) -> list[str]:
    """Lines without their endings; CRLF and CR read as LF."""
    t = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = t.split("\n")
    if t.endswith("\n"):
        lines.pop()
    return lines


def parse_layout(text: str) -> Layout:
    """Where the front matter, sections, seals and results blocks are."""
    lines = split_lines(text)
    problems: list[Problem] = []
    base = Section("base", 0, 0)
    sections = [base]
    results: list[ResultsBlock] = []
    i = 0
    if lines and lines[0].strip() == "---":
        close = next((j for j in range(1, len(lines)) if lines[j].strip() in ("---", "...")), None)
        if close is None:
            problems.append(Problem("front matter", "opened with '---' on line 1 but never closed", 1,
                                    "end it with a line holding only '---'"))
            base.yaml_start, base.yaml_end = 1, len(lines)
            i = len(lines)
        else:
            base.yaml_start, base.yaml_end = 1, close
            i = close + 1
    else:
        problems.append(Problem("front matter", "the document does not start with a YAML front matter", 1,
                                "start the file with '---', the fields, and '---' (`fontaine-prereg new` writes one)"))
    current = base
    while i < len(lines):
        s = lines[i]
        m = RESULTS_BEGIN_RE.match(s)
        if m:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == RESULTS_END), None)
            if end is None:
                problems.append(Problem("results", "a results block is opened but never closed", i + 1,
                                        f"add '{RESULTS_END}' or delete the block and re-run the report"))
                end = len(lines) - 1
            key, _, rest = m.group("key").strip().partition(" ")
            results.append(ResultsBlock(key, i, end, _attrs(rest)))
            if current.seal is None and current.end is None:
                current.end = i
            i = end + 1
            continue
        m = SEAL_RE.match(s)
        if m:
            if current.seal is not None:
                problems.append(Problem("seal", "a seal line outside any section (a copy of a seal?)", i + 1,
                                        "delete it; seals are written by `fontaine-prereg freeze`"))
            else:
                current.end = i
                current.seal = Seal(i + 1, _attrs(m.group("attrs")))
            i += 1
            continue
        m = AMEND_RE.match(s)
        if m:
            n = int(m.group("n"))
            want = len(sections)
            if current.seal is None:
                problems.append(Problem(f"amendment-{n}", f"amendment {n} starts before {current.name} is frozen", i + 1,
                                        f"freeze {current.name} first (`fontaine-prereg freeze`)"))
                if current.end is None:
                    current.end = i
            if n != want:
                problems.append(Problem(f"amendment-{n}", f"amendment numbered {n}, expected {want}", i + 1,
                                        "amendments are numbered 1, 2, ... in order"))
            current = Section(f"amendment-{n}", n, i)
            sections.append(current)
            _find_yaml_block(lines, current, problems)
        i += 1
    if current.seal is None and current.end is None:
        current.end = len(lines)
    for sec in sections:
        if sec.end is None:
            sec.end = len(lines)
    return Layout(lines, sections, results, problems)


def _attrs(text: str) -> dict[str, str]:
    out = {}
    for tok in text.split():
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def _find_yaml_block(lines: list[str], sec: Section, problems: list[Problem]) -> None:
    j = sec.start + 1
    while j < len(lines) and not AMEND_RE.match(lines[j]) and not SEAL_RE.match(lines[j]) \
            and not RESULTS_BEGIN_RE.match(lines[j]):
        if FENCE_YAML_RE.match(lines[j]):
            end = next((k for k in range(j + 1, len(lines)) if FENCE_END_RE.match(lines[k])), None)
            if end is None:
                problems.append(Problem(sec.name, "its ```yaml block is never closed", j + 1, "close it with a ``` line"))
                end = len(lines)
            sec.yaml_start, sec.yaml_end = j + 1, end
            return
        j += 1
    problems.append(Problem(sec.name, "the amendment has no ```yaml block (its arms, reads, gates)", sec.start + 1,
                            "`fontaine-prereg amend` writes one"))
