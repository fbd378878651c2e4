"""Freeze, amend and verify: the tamper-evidence of a pre-registration.

A seal is one HTML comment line (invisible when the Markdown is rendered) holding the sha256 of
its section's canonical text, chained to the parent section's hash, with the time and the
tool's git commit inside the hashed header. Canonical text: LF line endings, trailing
whitespace dropped on each line, leading/trailing blank lines dropped; nothing else is
forgiven, so one changed character in a frozen section fails verification. The seal also
lists short hashes of the section's parts (each top-level YAML field, the plain words) so that
verify can say *what* changed, not only that something did.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from prereg.core.errors import PreregError
from prereg.document.layout import Layout, Section, amendment_marker, seal_marker
from prereg.document.read import load
from prereg.rundir.files import utc_now, write_text_atomic

SEAL_FORMAT = "fontaine-seal/1"
TOP_KEY_RE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:")
INTACT, CHANGED, OPEN, CHAIN = "intact", "changed", "open", "chain-broken"


# ---------------------------------------------------------------- verify


@dataclass
class SectionCheck:
    section: str
    state: str  # intact | changed | open | chain-broken
    line: int  # 1-based first line of the section
    message: str
    changed_parts: list[str] = field(default_factory=list)
    sha256: str = ""  # the recorded hash (sealed sections)


@dataclass
class Verification:
    frozen: bool  # the base section is sealed
    checks: list[SectionCheck]

    @property
    def ok(self) -> bool:
        """Frozen, and every sealed section intact and chained (open amendments are allowed)."""
        return self.frozen and all(c.state in (INTACT, OPEN) for c in self.checks)

    def check(self, section: str) -> SectionCheck | None:
        return next((c for c in self.checks if c.section == section), None)

    def first_failure(self) -> SectionCheck | None:
        return next((c for c in self.checks if c.state in (CHANGED, CHAIN)), None)


def verify_layout(layout: Layout) -> Verification:
    checks = []
    parent = "-"
    for sec in layout.sections:
        line = sec.start + 1
        if sec.seal is None:
            checks.append(SectionCheck(sec.name, OPEN, line, f"{sec.name} is not frozen yet"))
            parent = None  # nothing after an open section can chain
            continue
        attrs = sec.seal.attrs
        recorded = attrs.get("sha256", "")
        actual = section_digest(layout.lines, sec, attrs.get("parent", "-"), attrs.get("frozen_at", ""),
                                attrs.get("tool_commit", ""))
        if attrs.get("section") != sec.name:
            checks.append(SectionCheck(sec.name, CHAIN, sec.seal.line,
                                       f"the seal on line {sec.seal.line} is for {attrs.get('section')!r}, not {sec.name}",
                                       sha256=recorded))
        elif actual != recorded:
            now_parts = section_parts(layout.lines, sec)
            was = _parse_parts(attrs.get("parts", ""))
            changed = sorted({k for k in set(now_parts) | set(was) if now_parts.get(k) != was.get(k)})
            what = ", ".join(_part_label(k) for k in changed) if changed else "its seal line (time, commit or hash)"
            checks.append(SectionCheck(sec.name, CHANGED, line,
                                       f"{sec.name} (lines {line}-{sec.seal.line}) changed since it was frozen: {what}",
                                       changed, recorded))
        elif parent is None or attrs.get("parent", "-") != parent:
            checks.append(SectionCheck(sec.name, CHAIN, sec.seal.line,
                                       f"{sec.name} is chained to parent {attrs.get('parent', '-')[:12]}, "
                                       f"but the section before it is sealed as {(parent or 'open')[:12]} "
                                       "(a seal was edited, or sections were reordered or removed)", sha256=recorded))
        else:
            checks.append(SectionCheck(sec.name, INTACT, line, f"{sec.name} intact (sha256 {recorded[:12]})",
                                       sha256=recorded))
        parent = recorded
    frozen = bool(layout.sections) and layout.sections[0].sealed
    return Verification(frozen, checks)



def require_intact(layout: Layout, path: str, *, not_frozen: str, modified: str) -> None:
    """Raise PreregError unless the document is frozen and its frozen parts are unchanged.

    `not_frozen` and `modified` finish the sentence for the caller's purpose (a launch, a report).
    """
    from prereg.core.errors import PreregError

    ver = verify_layout(layout)
    if not ver.frozen:
        raise PreregError(f"{path}:1: not frozen, {not_frozen}")
    bad = ver.first_failure()
    if bad:
        raise PreregError(f"{path}:{bad.line}: {bad.message}. {modified}")

def verify(path: str | Path) -> Verification:
    return verify_layout(load(path).layout)


def _part_label(key: str) -> str:
    return "the plain words" if key == "words" else f"field '{key.removeprefix('yaml:')}'"


# ---------------------------------------------------------------- hashing


def canonical_text(lines: list[str]) -> str:
    out = [ln.rstrip() for ln in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def section_lines(lines: list[str], sec: Section) -> list[str]:
    return lines[sec.start:sec.end]


def section_digest(lines: list[str], sec: Section, parent: str, frozen_at: str, tool_commit: str) -> str:
    header = (f"{SEAL_FORMAT}\nsection={sec.name}\nparent={parent}\n"
              f"frozen_at={frozen_at}\ntool_commit={tool_commit}\n\n")
    body = canonical_text(section_lines(lines, sec))
    return hashlib.sha256((header + body).encode("utf-8")).hexdigest()


def section_parts(lines: list[str], sec: Section) -> dict[str, str]:
    """Short hashes of each top-level YAML field and of the plain words, for diagnosis only."""
    groups: dict[str, list[str]] = {"words": []}
    key = None
    for i in range(sec.start, sec.end):
        in_yaml = sec.yaml_start is not None and sec.yaml_start <= i < sec.yaml_end
        if not in_yaml:
            groups["words"].append(lines[i])
            continue
        m = TOP_KEY_RE.match(lines[i])
        if m:
            key = "yaml:" + m.group("key")
        groups.setdefault(key or "yaml:", []).append(lines[i])
    return {k: hashlib.sha256(canonical_text(v).encode()).hexdigest()[:10] for k, v in groups.items()}


def _parse_parts(text: str) -> dict[str, str]:
    out = {}
    for tok in text.split(";"):
        k, _, v = tok.rpartition("=")
        if k:
            out[k] = v
    return out


def tool_commit() -> str:
    """The git commit of the tool's own checkout, or 'unknown' (an installed wheel, no git)."""
    here = Path(__file__).resolve().parent
    try:
        res = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    out = res.stdout.strip()
    return out if res.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", out) else "unknown"


# ---------------------------------------------------------------- freeze


@dataclass
class FreezeResult:
    section: str
    sha256: str
    seal_line: int  # 1-based
    frozen_at: str
    tool_commit: str


def freeze(path: str | Path, *, now: str | None = None, commit: str | None = None) -> FreezeResult | None:
    """Seal the open section (the base, or the newest amendment); None when all are frozen.

    Refuses (PreregError) when the document does not validate or a frozen part was modified.
    """
    doc = load(path)
    p = str(doc.path)
    ver = verify_layout(doc.layout)
    bad = ver.first_failure()
    if bad:
        raise PreregError(f"{p}:{bad.line}: {bad.message}; refusing to freeze on top of it "
                          "(revert the change, e.g. `git diff`, then freeze)")
    open_secs = [s for s in doc.layout.sections if not s.sealed]
    if not open_secs:
        return None
    if doc.problems:
        raise PreregError.from_problems(p, doc.problems, "does not validate, so it cannot be frozen",
                                        "fix the fields named above, then freeze")
    sec = open_secs[0]
    idx = doc.layout.sections.index(sec)
    parent = "-" if idx == 0 else doc.layout.sections[idx - 1].seal.sha256
    frozen_at = now or utc_now()
    commit = commit or tool_commit()
    lines = list(doc.layout.lines)
    digest = section_digest(lines, sec, parent, frozen_at, commit)
    parts = ";".join(f"{k}={v}" for k, v in sorted(section_parts(lines, sec).items()))
    seal = seal_marker(f"section={sec.name} sha256={digest} parent={parent} "
                       f"frozen_at={frozen_at} tool_commit={commit} parts={parts}")
    note = (f"> Frozen: {sec.name} ({frozen_at}, sha256 {digest[:12]}, tool {commit[:12]}). Do not edit it: "
            "notes go below this line, changes to the plan go in an amendment (`fontaine-prereg amend`).")
    at = sec.end
    while at > sec.start and not lines[at - 1].strip():
        at -= 1
    insert = ["", seal, note, ""]
    lines[at:sec.end] = insert
    write_lines(doc.path, lines)
    return FreezeResult(sec.name, digest, at + 2, frozen_at, commit)


def write_lines(path: Path, lines: list[str]) -> None:
    """Atomic rewrite (tmp + rename), so a crash never leaves half a pre-registration."""
    write_text_atomic(path, "\n".join(lines).rstrip("\n") + "\n", keep_mode=True, named=True)


# ---------------------------------------------------------------- amend

ARM_PLACEHOLDER = "<new arm name>"


def amend(path: str | Path, *, title: str = "", why: str = "", data: dict | None = None,
          from_arm: str | None = None, name: str | None = None, sets: dict | None = None) -> int:
    """Append amendment N (a template, or the given machine part); returns N.

    `from_arm` + `name` + `sets` copy an existing arm with changes, the seeds' usual amendment
    ("arm B is arm A with --molmoact2-grammar-masked"). The amendment is frozen by the next
    `freeze`; it is not launchable until then.
    """
    doc = load(path)
    p = str(doc.path)
    ver = verify_layout(doc.layout)
    if not ver.frozen:
        raise PreregError(f"{p}: the base section is not frozen, so there is nothing to amend "
                          "(edit it directly, then `fontaine-prereg freeze`)")
    bad = ver.first_failure()
    if bad:
        raise PreregError(f"{p}:{bad.line}: {bad.message}; revert it before amending")
    open_secs = [s for s in doc.layout.sections if not s.sealed]
    if open_secs:
        raise PreregError(f"{p}:{open_secs[0].start + 1}: {open_secs[0].name} is not frozen yet: "
                          "edit it and `fontaine-prereg freeze` it before starting another amendment")
    n = len(doc.layout.sections)
    data = dict(data or {})
    if from_arm:
        found = doc.find_arm(from_arm)
        if not found:
            known = ", ".join(a.name for a in doc.arms())
            raise PreregError(f"{p}: no arm {from_arm!r} to copy (known arms: {known})")
        arm = _arm_dict(found[0])
        arm["name"] = name or ARM_PLACEHOLDER
        arm.update(sets or {})
        data.setdefault("arms", []).append(arm)
    elif sets or name:
        raise PreregError("--name and --set need --from-arm ARM (the arm the new one differs from)")
    title = title or str(data.get("title") or "") or "TITLE"
    data = {"title": title, **{k: v for k, v in data.items() if k != "title"}}
    if "arms" not in data and "reads" not in data and "decision_rules" not in data:
        data["arms"] = [{"name": ARM_PLACEHOLDER, "policy": "molmoact2-discrete", "checkpoint": "tiny",
                         "decode": "grammar-masked", "convmap": "official"}]
    block = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100).rstrip("\n")
    words = why or ("Plain words: why this amendment, what changes, what stays the same, and that it is "
                    "registered before its launch. Frozen with the amendment by `fontaine-prereg freeze`.")
    lines = list(doc.layout.lines)
    while lines and not lines[-1].strip():
        lines.pop()
    lines += ["", amendment_marker(n), f"## Amendment {n}: {title}", "", "```yaml",
              *block.split("\n"), "```", "", words, ""]
    write_lines(doc.path, lines)
    return n


def _arm_dict(arm) -> dict:
    keys = ("name", "policy", "checkpoint", "revision", "fast_revision", "decode", "convmap", "convmap_overrides",
            "norm_tag", "dtype", "workers", "flow_steps", "task", "env", "env_sha256", "grasp_miss", "grasp_drop")
    out = {}
    for k in keys:
        v = getattr(arm, k)
        if v is None or v == ():
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    return out

