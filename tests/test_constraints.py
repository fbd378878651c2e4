"""scripts/constraints.txt (the versions the suite passed with) and pyproject.toml (what Fontaine needs)
agree, and this environment is the locked one: a fresh machine's set-up installs what CI tested."""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate((ROOT / "scripts" / "constraints.txt").read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
        assert m, f"scripts/constraints.txt:{n}: {line!r} is not name==version"
        name = canonicalize_name(m.group(1))
        assert name not in pins, f"scripts/constraints.txt:{n}: {name} pinned twice"
        pins[name] = m.group(2)
    return pins


def _default_extras() -> list[str]:
    """The extras scripts/setup.sh installs unless told otherwise (read from it: one source)."""
    m = re.search(r"FONTAINE_EXTRAS:-([a-z0-9_,-]+)\}", (ROOT / "scripts" / "setup.sh").read_text())
    assert m, "scripts/setup.sh names no default extras"
    return m.group(1).split(",")


def test_every_requirement_the_setup_installs_is_locked_at_a_version_it_allows():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in _default_extras():
        reqs += project["optional-dependencies"][extra]
    pins = _locked()
    problems = []
    for text in reqs:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req.name}: in pyproject.toml, not in scripts/constraints.txt")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req.name}: pyproject.toml asks {req.specifier}, the lock has {pins[name]}")
    assert not problems, "\n".join(problems)


def test_this_environment_is_the_locked_one():
    wrong = []
    for name, version in _locked().items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            wrong.append(f"{name}: locked at {version}, not installed")
            continue
        if have != version:
            wrong.append(f"{name}: locked at {version}, installed {have}")
    assert not wrong, "rerun scripts/setup.sh (or regenerate the lock after a deliberate upgrade):\n" + "\n".join(wrong)


def test_the_lock_script_writes_the_committed_lock_from_this_environment(tmp_path):
    out = tmp_path / "constraints.txt"
    subprocess.run(["bash", str(ROOT / "scripts" / "lock.sh"), str(out)], check=True, capture_output=True, text=True)
    assert out.read_text() == (ROOT / "scripts" / "constraints.txt").read_text()
