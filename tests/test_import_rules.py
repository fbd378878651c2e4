"""The layering, enforced: prereg's rooms stand on one another in one order (core, rundir, document,
stats, outputs: a room imports only the rooms below it), and so do engine's (process, sim, policies, envs,
record, workers, run, scaleout, cli), prereg imports neither engine nor console, console never imports
engine, engine.envs (the env contract) imports only engine.sim and prereg (and never console), engine.sim
never imports engine.envs, engine.gym (the envs as Gymnasium envs) sits on engine.envs and nothing in the
engine imports it, console.notify (the Discord notifier) imports nothing of console outside itself, and no
module imports itself back through others (lazy imports inside functions count: a cycle broken
by a late import is still a cycle)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "console", "prereg")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `path` imports, anywhere in it (resolved to the longest known name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    """Parsed once a session (each of ten tests parsing all ~220 modules again took 16 s of the suite)."""
    mods = _modules()
    known = set(mods)
    return {name: frozenset(_imports(path, name, known)) for name, path in mods.items()}


def _graph() -> dict[str, set[str]]:
    return {name: set(deps) for name, deps in _parsed_graph().items()}


def test_prereg_imports_neither_engine_nor_console():
    bad = {m: sorted(d for d in deps if d.split(".")[0] in ("engine", "console"))
           for m, deps in _graph().items() if m.split(".")[0] == "prereg"}
    assert not {m: d for m, d in bad.items() if d}


# prereg's rooms, ground floor first: a module may import its own room and the rooms below it, never above
PREREG_ROOMS = ("core", "rundir", "document", "stats", "outputs")


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "prereg" and len(parts) > 1 else None


def test_prereg_rooms_import_only_the_rooms_below_them():
    graph = _graph()
    rooms = {m: _room(m) for m in graph if m.startswith("prereg.")}
    outside = sorted(m for m, r in rooms.items() if r not in PREREG_ROOMS)
    assert not outside, f"modules of prereg/ outside its rooms: {outside}"
    floor = {r: i for i, r in enumerate(PREREG_ROOMS)}
    bad = {m: sorted(d for d in deps if _room(d) and floor[_room(d)] > floor[rooms[m]])
           for m, deps in graph.items() if m in rooms}
    assert not {m: d for m, d in bad.items() if d}
    assert not {d for d in graph["prereg"] if d.startswith("prereg.")}  # the package face imports nothing


# engine's rooms, ground floor first (engine/README.md is their map): a module may import its own room and
# the rooms below it, never above. engine.gym is the way out (tested below): nothing in the engine imports it.
ENGINE_ROOMS = ("process", "sim", "policies", "envs", "record", "workers", "run", "scaleout", "cli")
ENGINE_TOP = {"engine", "engine.rollout_sim_parallel"}  # the package face and the lab notes' name for the command


def _engine_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "engine" and len(parts) > 1 and module not in ENGINE_TOP else None


def test_engine_rooms_import_only_the_rooms_below_them():
    graph = _graph()
    mine = {m for m in graph if m.split(".")[0] == "engine"}
    outside = sorted(m for m in mine if m not in ENGINE_TOP and _engine_room(m) not in (*ENGINE_ROOMS, "gym"))
    assert not outside, f"modules of engine/ outside its rooms: {outside}"
    floor = {r: i for i, r in enumerate(ENGINE_ROOMS)}
    bad = {m: sorted(d for d in graph[m] if _engine_room(d) in floor and floor[_engine_room(d)] > floor[_engine_room(m)])
           for m in mine if _engine_room(m) in floor}
    assert not {m: d for m, d in bad.items() if d}
    assert not {d for d in graph["engine"] if d.startswith("engine.")}  # the package face imports nothing
    faces = {m: sorted(graph[m]) for m in mine if m.count(".") == 1 and _engine_room(m) in floor and graph[m]
             and m not in ("engine.envs", "engine.sim", "engine.policies")}
    assert not faces, f"a room's __init__ hands names on instead of saying what the room holds: {faces}"


def test_console_never_imports_engine():
    bad = {m: sorted(d for d in deps if d.split(".")[0] == "engine")
           for m, deps in _graph().items() if m.split(".")[0] == "console"}
    assert not {m: d for m, d in bad.items() if d}


def test_envs_import_only_the_simulator_and_prereg():
    """engine.envs declares scenes: it may import engine.sim and prereg, never console, nor the rest of
    the engine (policies, the driver), which import it; engine.sim is the layer under it."""
    graph = _graph()
    allowed = ("engine.envs", "engine.sim", "prereg")
    bad = {m: sorted(d for d in deps if d.split(".")[0] in PACKAGES and not any(d == a or d.startswith(a + ".")
                                                                             for a in allowed))
           for m, deps in graph.items() if m == "engine.envs" or m.startswith("engine.envs.")}
    assert not {m: d for m, d in bad.items() if d}
    assert any(m.startswith("engine.envs.") for m in graph)  # the rule reads the package it guards
    under = {m: sorted(d for d in deps if d == "engine.envs" or d.startswith("engine.envs."))
             for m, deps in graph.items() if m == "engine.sim" or m.startswith("engine.sim.")}
    assert not {m: d for m, d in under.items() if d}


def test_the_gym_package_sits_on_the_envs_and_nothing_in_the_engine_imports_it():
    """engine.gym (Fontaine's envs as Gymnasium envs) may import engine.envs, engine.sim, the joint
    convention (engine.policies.convmap.shim, base) and prereg; the engine itself never imports it (it is
    the way out, for gymnasium.make and lerobot-eval)."""
    graph = _graph()
    allowed = ("engine.gym", "engine.envs", "engine.sim", "engine.policies.convmap.shim", "engine.policies.base", "prereg")
    mine = {m: deps for m, deps in graph.items() if m == "engine.gym" or m.startswith("engine.gym.")}
    assert mine  # the rule reads the package it guards
    bad = {m: sorted(d for d in deps if d.split(".")[0] in PACKAGES and not any(d == a or d.startswith(a + ".")
                                                                             for a in allowed))
           for m, deps in mine.items()}
    assert not {m: d for m, d in bad.items() if d}
    users = {m: sorted(d for d in deps if d == "engine.gym" or d.startswith("engine.gym."))
             for m, deps in graph.items() if not (m == "engine.gym" or m.startswith("engine.gym."))}
    assert not {m: d for m, d in users.items() if d}


def _in_notify(module: str) -> bool:
    return module == "console.notify" or module.startswith("console.notify.")


def test_the_notifier_imports_neither_engine_nor_the_rest_of_console():
    """console.notify runs as its own process (fontaine-notify) and never uses Textual: it takes
    runs, states and liveness from prereg, nothing from the console around it."""
    bad = {m: sorted(d for d in deps if d.split(".")[0] == "engine" or (d.split(".")[0] == "console" and not _in_notify(d)))
           for m, deps in _graph().items() if _in_notify(m)}
    assert not {m: d for m, d in bad.items() if d}


def test_no_import_cycles():
    graph = _graph()
    # a package's __init__ re-exporting its own modules is not a cycle of behaviour
    graph = {m: {d for d in deps if not (m.startswith(d + ".") or d.startswith(m + "."))} for m, deps in graph.items()}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_prereg_imports_the_hub_client_only_inside_functions():
    """prereg/outputs/publish_hub.py talks to the Hugging Face hub; `import prereg...` must not load huggingface_hub
    (nor httpx): every other prereg command, the console and the notifier import prereg without it."""
    heavy = ("huggingface_hub", "httpx")
    bad = []
    for path in sorted((REPO / "prereg").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in heavy]
    assert not bad, "\n".join(bad)


def test_policies_a_lab_brings_stay_beside_the_other_policies():
    """engine.policies.lerobot_policy (any lerobot checkpoint) and engine.policies.plugins (the
    `fontaine.policies` entry points) are policies: they may use the policy seam (base, convmap,
    MolmoAct2's checkpoint download) and prereg, never the driver, the pool, the envs or the sim."""
    graph = _graph()
    allowed = ("engine.policies", "prereg")
    rooms = [m for m in graph if m.startswith("engine.policies.lerobot_policy") or m == "engine.policies.plugins"]
    assert "engine.policies.plugins" in rooms and "engine.policies.lerobot_policy.policy" in rooms
    bad = {m: sorted(d for d in graph[m] if d.split(".")[0] in PACKAGES
                     and not any(d == a or d.startswith(a + ".") for a in allowed))
           for m in rooms}
    assert not {m: d for m, d in bad.items() if d}
