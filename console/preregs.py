"""The console's view of pre-registrations: which can be launched, with which arms, and why not.

Reading and validation are the prereg package's (`prereg.document.load`, the one parser, with
its refusals; `prereg.document.launch.resolve_launch`, raising `PreregError` with a message a person can
act on); the console only shows that message in place. Reports are produced by the
`fontaine-prereg report` command, run as a subprocess.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from prereg.core.argcheck import module_argv
from prereg.core.errors import PreregError
from prereg.core.safe_read import resolved
from prereg.core.vocabulary import DECODES
from prereg.document.comparison_spec import comparison_label
from prereg.document.launch import resolve_launch
from prereg.document.model import describe_tripwires
from prereg.document.read import load
from prereg.outputs.provenance import LAUNCH_DEFAULTS

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
    comparisons: list[str] = field(default_factory=list)  # registered comparisons, "A,B" as `--arms A,B` takes them
    frozen: bool | None = None  # None: could not tell (the prereg package is older, or the file unreadable)


def prereg_dirs(explicit: list[str] | None) -> list[Path]:
    """The --prereg-dir folders (or ./preregs), then the shipped examples: a folder of one's own
    adds to the demo and the examples, it does not hide them (`d` launches the demo either way)."""
    dirs = [Path(d) for d in explicit] if explicit else [Path("preregs")]
    if not any(d.resolve() == EXAMPLES_DIR for d in dirs):
        dirs.append(EXAMPLES_DIR)
    return dirs


def reopen_flags(dirs: list[Path]) -> list[str]:
    """The --prereg-dir flags that give `dirs` again (none for the default folders)."""
    own = [d for d in dirs if d.resolve() != EXAMPLES_DIR]
    if [str(d) for d in own] == ["preregs"]:
        return []
    return [arg for d in own for arg in ("--prereg-dir", str(d))]


def list_preregs(dirs: list[Path]) -> list[PreregEntry]:
    seen, out = set(), []
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.md")):
            key = resolved(p)
            if key in seen or p.name.lower() == "readme.md":
                continue
            seen.add(key)
            out.append(read_entry(p))
    return out


def read_entry(path: Path) -> PreregEntry:
    """Id, title and arm names, read by the prereg package's one parser (`prereg.document.load`).

    A document that does not validate is still listed with what could be read; one whose
    machine part cannot be read at all says why (the first problem, with its line)."""
    entry = PreregEntry(path=path, prereg_id=path.stem)
    try:
        doc = load(path)
    except PreregError as exc:
        entry.problem = str(exc).splitlines()[0]
        return entry
    entry.prereg_id = doc.prereg_id or path.stem
    entry.title = doc.title
    entry.arms = [a.name for a in doc.arms()]
    entry.comparisons = list(dict.fromkeys(f"{sm.comparison.arm_a},{sm.comparison.arm_b}" for sm in doc.sections
                                           if sm.comparison is not None))
    if not doc.sections and doc.problems:
        entry.problem = f"front matter unreadable: {doc.problems[0].render(path.name)}"
        return entry
    entry.frozen = is_frozen(path)
    return entry


def comparison_pair(choice: str) -> tuple[str, str] | None:
    """("A", "B") for a launch choice "A,B" (a comparison run, `fontaine-eval --arms A,B`; an arm name
    never holds a comma), None for one arm."""
    a, sep, b = choice.partition(",")
    return (a.strip(), b.strip()) if sep and a.strip() and b.strip() and "," not in b else None


def run_label(choice: str) -> str:
    """The arm a run of this choice records (and its run id carries): the arm, or "A-vs-B"."""
    pair = comparison_pair(choice)
    return comparison_label(*pair) if pair else choice


def validate_launch(path: Path, arm: str) -> str | None:
    """None when the launch is allowed, else the reason in words (from the prereg package)."""
    return _checked_launch(path, arm)[2]


def _checked_launch(path: Path, arm: str) -> tuple[dict, object, str | None]:
    """(each arm's LaunchSpec by name, a comparison's registered ComparisonSpec or None, None) when the
    launch is allowed, else ({}, None, why): validate_launch's one read of each arm, which
    launch_settings goes on from rather than resolving the arms again."""
    if not path.exists():
        return {}, None, f"{path}: no such pre-registration file"
    if not arm:
        return {}, None, "choose an arm"
    pair = comparison_pair(arm)
    try:
        specs = {a: resolve_launch(path, a) for a in pair or (arm,)}
        comp = _registered_comparison(path, pair) if pair else None
        if pair and comp is None:
            return {}, None, (f"{path}: no frozen comparison of {pair[0]} and {pair[1]}: register one "
                              "(comparison: {arms: [A, B], ...}) and freeze it, or by amendment")
    except PreregError as exc:
        return {}, None, str(exc)
    return specs, comp, None


def _registered_comparison(path: Path, pair: tuple[str, str]):
    from prereg.stats.comparison_report import registered_comparison

    return registered_comparison(load(path), pair)


def is_frozen(path: Path) -> bool | None:
    """Whether the document's base section is sealed (`fontaine-prereg freeze`)."""
    try:
        from prereg.document.seal import verify

        return bool(verify(path).frozen)
    except Exception:  # noqa: BLE001 - an unreadable document is said by validate_launch, not here
        return None


def freeze_hint(path: Path) -> str:
    return (f"not frozen: freeze it with `fontaine-prereg freeze {path}` (it seals the plan: "
            "edits after that are refused; changes go in amendments)")


def launch_settings(path: Path, arm: str) -> tuple[list[tuple[str, str]], str | None]:
    """What a launch of `arm` would run, as (label, value) lines, or the reason it cannot launch."""
    specs, comp, problem = _checked_launch(path, arm)
    if problem:
        return [], problem
    if comp is not None:
        return comparison_settings(comp, specs), None
    return arm_settings(specs[arm]), None


def arm_settings(spec) -> list[tuple[str, str]]:
    """One resolved arm's launch (a LaunchSpec), as (label, value) lines."""
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
    tripwires = describe_tripwires(g.tripwires)
    if tripwires:
        gates.append(tripwires)
    model = [("policy", f"{spec.policy}   checkpoint {checkpoint}"), ("model", model_settings(spec) or "—")]
    if spec.policy == "scripted":
        model = [("policy", f"{spec.policy}{_skill(spec)}   (an oracle: it reads the true poses of the object and "
                            "its target from the simulator; no model, no checkpoint)")]
    return [
        *model,
        ("env", env_line(spec)),
        ("seeds", f"{seed_text} · {spec.episode_seconds:g} s episodes · {spec.workers} workers"),
        ("video", f"draw {spec.video_draw}" + (" · predict trail recorded" if spec.record_predicts else "")),
        ("gates", "; ".join(gates)),
        ("frozen", f"{spec.section} · sha256 {str(getattr(spec, 'prereg_sha256', '') or '')[:12]}"),
    ]


def comparison_settings(comp, specs: dict) -> list[tuple[str, str]]:
    """A comparison run's launch: the registered test (`comp`, a ComparisonSpec), both arms' policies,
    then the protocol and gates they share (fontaine-eval refuses arms that differ in them). `specs`:
    each arm's LaunchSpec by name, as validate_launch resolved them (each once)."""
    a, b = comp.arm_a, comp.arm_b
    settings = {n: arm_settings(specs[n]) for n in (a, b)}
    lines = {n: dict(settings[n]) for n in (a, b)}
    cap = comp.seeds_cap(len(specs[a].seeds))
    shared = [(k, v) for k, v in settings[a] if k not in ("policy", "model")]
    seeds = dict(shared).get("seeds", "")
    return [
        ("compare", f"{comp.describe()}"),
        ("runs", f"both arms in one run directory, seed k of each together, stopped when the comparison "
                 f"decides (fontaine-eval --arms {a},{b})"),
        *[(f"arm {tag}", f"{n}: {lines[n].get('policy', '')}" + (f" · {lines[n]['model']}"
                                                                 if lines[n].get("model", "—") != "—" else ""))
          for tag, n in (("A", a), ("B", b))],
        *[(k, v if k != "seeds" else f"{seeds} · at most {cap} seeds per arm ({2 * cap} episodes)")
          for k, v in shared],
    ]


def _skill(spec) -> str:
    """The scripted oracle's registered skill knobs, the one thing that tells two oracle arms apart (shown for
    one arm as for a comparison's two: the launch dialog showed clumsy and steady with the same settings)."""
    knobs = ((k, getattr(spec, k, None)) for k in ("grasp_miss", "grasp_drop"))
    return "".join(f" · {k} {v:g}" for k, v in knobs if v)


def env_line(spec) -> str:
    """`pick-lift · sha256 1047e8d22c74`: the env the arm runs on (a plan without one means the engine's
    default) and the content hash the plan froze it with; the console never loads an env to hash it."""
    name = spec.env or f"{LAUNCH_DEFAULTS['env']} (the default)"
    pin = getattr(spec, "env_sha256", None)
    return f"{name} · " + (f"sha256 {pin[:12]}" if pin else "sha256 not pinned")


def model_settings(spec) -> str:
    """`grammar-masked decode · convmap official · bf16`: the settings of a model policy (DECODES names
    them); empty for the scripted oracle, which none of them touches."""
    if spec.policy not in DECODES:
        return ""
    return " · ".join(x for x in (spec.decode and f"{spec.decode} decode", spec.convmap and f"convmap {spec.convmap}",
                                  spec.dtype, spec.flow_steps and f"{spec.flow_steps} flow steps") if x)


def report_argv(prereg_file: str | Path, arm_runs: list[tuple[str, Path]], append: bool = True) -> list[str]:
    argv = module_argv("prereg.outputs.cli", "report", str(prereg_file))
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
