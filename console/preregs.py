"""The console's view of pre-registrations: which can be launched, with which arms, and why not.

Validation is the prereg package's (`prereg.launch.resolve_launch`, raising `PreregError`
with a message a person can act on); the console only shows that message in place. The
import is guarded so the console works, with a plainer check, where that package is older.
Reports are produced by the `fontaine-prereg report` command, run as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "prereg" / "examples"
DEMO_PREREG = EXAMPLES_DIR / "demo.md"
DEMO_ARM = "scripted"
REPORT_TIMEOUT_S = 300


@dataclass
class PreregEntry:
    path: Path
    prereg_id: str
    title: str = ""
    arms: list[str] = field(default_factory=list)
    problem: str = ""  # why its front matter could not be read (shown, not raised)
    frozen: bool | None = None  # None: could not tell (the prereg package is older, or the file unreadable)


def prereg_dirs(explicit: list[str] | None) -> list[Path]:
    """The --prereg-dir folders, or ./preregs plus the shipped examples."""
    if explicit:
        return [Path(d) for d in explicit]
    return [Path("preregs"), EXAMPLES_DIR]


def list_preregs(dirs: list[Path]) -> list[PreregEntry]:
    seen, out = set(), []
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.md")):
            key = p.resolve()
            if key in seen or p.name.lower() == "readme.md":
                continue
            seen.add(key)
            out.append(read_entry(p))
    return out


def read_entry(path: Path) -> PreregEntry:
    """Id, title and arm names from the front matter, tolerant of its exact shape."""
    entry = PreregEntry(path=path, prereg_id=path.stem)
    try:
        meta = _front_matter(path.read_text())
    except (OSError, yaml.YAMLError, ValueError) as exc:
        entry.problem = f"{path.name}: front matter unreadable ({exc})"
        return entry
    entry.prereg_id = str(meta.get("id") or meta.get("prereg_id") or path.stem)
    entry.title = str(meta.get("title") or "")
    entry.frozen = is_frozen(path)
    arms = meta.get("arms")
    if isinstance(arms, dict):
        entry.arms = [str(k) for k in arms]
    elif isinstance(arms, list):
        entry.arms = [str(a.get("name")) if isinstance(a, dict) else str(a) for a in arms]
    return entry


def validate_launch(path: Path, arm: str) -> str | None:
    """None when the launch is allowed, else the reason in words (from the prereg package)."""
    if not path.exists():
        return f"{path}: no such pre-registration file"
    if not arm:
        return "choose an arm"
    try:
        from prereg.errors import PreregError
        from prereg.launch import resolve_launch
    except ImportError:
        entry = read_entry(path)
        if entry.problem:
            return entry.problem
        if entry.arms and arm not in entry.arms:
            return f"{path.name} has no arm {arm!r} (arms: {', '.join(entry.arms)})"
        return None
    try:
        resolve_launch(path, arm)
    except PreregError as exc:
        return str(exc)
    return None


def is_frozen(path: Path) -> bool | None:
    """Whether the document's base section is sealed (`fontaine-prereg freeze`)."""
    try:
        from prereg.seal import verify

        return bool(verify(path).frozen)
    except Exception:  # noqa: BLE001 - an unreadable document is said by validate_launch, not here
        return None


def freeze_hint(path: Path) -> str:
    return (f"not frozen: freeze it with `fontaine-prereg freeze {path}` (it seals the plan: "
            "edits after that are refused; changes go in amendments)")


def launch_settings(path: Path, arm: str) -> tuple[list[tuple[str, str]], str | None]:
    """What a launch of `arm` would run, as (label, value) lines, or the reason it cannot launch."""
    problem = validate_launch(path, arm)
    if problem:
        return [], problem
    try:
        from prereg.launch import resolve_launch

        spec = resolve_launch(path, arm)
    except Exception as exc:  # noqa: BLE001 - validate_launch passed: an older prereg package
        return [], str(exc)
    seeds = spec.seeds
    seed_text = f"{len(seeds)} seeds" + (f" ({seeds[0]}..{seeds[-1]})" if seeds else "")
    checkpoint = spec.checkpoint or "—"
    if spec.revision:
        checkpoint += f" @ {spec.revision[:12]}"
    g = spec.gates
    gates = [f"GPU-hours ≤ {g.gpu_hours:g}" if g.gpu_hours is not None else "no GPU-hours budget",
             f"projected wall ≤ {g.pace_limit_hours:g} h after {g.pace_after_episodes} episodes"
             if g.pace_limit_hours is not None else "no pace limit",
             f"stall beyond {g.stall_factor:g}x median episode (≥ {g.stall_min_s:g} s)"]
    decode = " · ".join(x for x in (spec.decode and f"decode {spec.decode}", spec.convmap and f"convmap {spec.convmap}",
                                    spec.dtype, spec.flow_steps and f"{spec.flow_steps} flow steps") if x)
    return [
        ("policy", f"{spec.policy}   checkpoint {checkpoint}"),
        ("decode", decode or "—"),
        ("seeds", f"{seed_text} · {spec.episode_seconds:g} s episodes · {spec.workers} workers"),
        ("video", f"draw {spec.video_draw}" + (" · predict trail recorded" if spec.record_predicts else "")),
        ("gates", "; ".join(gates)),
        ("frozen", f"{spec.section} · sha256 {str(getattr(spec, 'prereg_sha256', '') or '')[:12]}"),
    ], None


def report_argv(prereg_file: str | Path, arm_runs: list[tuple[str, Path]], append: bool = True) -> list[str]:
    argv = [sys.executable, "-m", "prereg.cli", "report", str(prereg_file)]
    for arm, run_dir in arm_runs:
        argv += ["--run", f"{arm}={run_dir}"]
    return argv + ([] if append else ["--no-append"])


def appends_to(prereg_file: str | Path) -> bool:
    """The report appends its results to the document, except to the examples shipped with the tool."""
    try:
        Path(prereg_file).resolve().relative_to(EXAMPLES_DIR)
    except ValueError:
        return True
    return False


def run_report(prereg_file: str | Path, arm_runs: list[tuple[str, Path]]) -> tuple[int, str]:
    """Run the report command (blocking: call from a thread worker); returns (exit code, output)."""
    argv = report_argv(prereg_file, arm_runs, append=appends_to(prereg_file))
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=REPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, f"the report did not finish in {REPORT_TIMEOUT_S} s: {' '.join(argv)}"
    except OSError as exc:
        return 127, f"could not run {' '.join(argv)}: {exc}"
    return done.returncode, (done.stdout + done.stderr).strip()


def _front_matter(text: str) -> dict:
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError("front matter opened with --- but never closed")
    meta = yaml.safe_load(text[3:end]) or {}
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    return meta
