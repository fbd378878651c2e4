"""The envs this engine can run: the built-ins (boat-on-disk, pick-lift), then every `fontaine.envs` entry point,
any env file (`--env path/to/env.yaml`, engine/envs/envfile.py: the pick-and-place family, declared), and any
registered Gymnasium MuJoCo env through an adapter (`--env gym:ID` with the one Fontaine ships, or
`--env path/to/adapter.yaml`: engine/envs/gym_adapter.py).

A lab brings an env as a Python distribution that declares, in its pyproject.toml,

    [project.entry-points."fontaine.envs"]
    my-scene = "my_lab.envs:my_scene"

where `my_scene` is an `EnvSpec`, or a callable taking no arguments that returns one, whose
`name` is the entry point's name. Entry points are read with importlib.metadata each time
(nothing cached), and only the one asked for is imported; a built-in's name cannot be taken.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.envs import envfile, gym_adapter
from engine.envs.envfile import is_env_file, load_env_file
from engine.envs.gym_adapter import is_adapter_file, is_gym_ref
from engine.envs.spec import NAME_RE, EnvError, EnvSpec

ENTRY_POINT_GROUP = "fontaine.envs"
DEFAULT_ENV = "boat-on-disk"


def _boat_on_disk() -> EnvSpec:
    from engine.envs import boat_on_disk  # imports mujoco: only when the spec is asked for

    return boat_on_disk.spec()


def _pick_lift() -> EnvSpec:
    from engine.envs import pick_lift

    return pick_lift.spec()


# Loaded on demand: naming an env never imports MuJoCo (fontaine-eval checks the GL library before
# it does, and a bad MUJOCO_GL makes `import mujoco` itself fail).
BUILTINS: dict[str, Callable[[], EnvSpec]] = {DEFAULT_ENV: _boat_on_disk, "pick-lift": _pick_lift}


class UnknownEnv(EnvError):
    """No built-in and no installed entry point has this name."""


@dataclass(frozen=True)
class EnvEntry:
    name: str
    source: str  # "built-in" or "entry point <value> (<distribution>)"
    load: Callable[[], EnvSpec]


def _entry_points():
    """The installed `fontaine.envs` entry points (tests replace this or install a distribution)."""
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def entries() -> list[EnvEntry]:
    """Built-ins first, then entry points by name; a plugin that reuses a built-in's name is left out."""
    out = [EnvEntry(name, "built-in", load) for name, load in BUILTINS.items()]
    seen = set(BUILTINS)
    for ep in sorted(_entry_points(), key=lambda e: e.name):
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist = getattr(getattr(ep, "dist", None), "name", None)
        source = f"entry point {ep.value}" + (f" ({dist})" if dist else "")
        out.append(EnvEntry(ep.name, source, _loader(ep, source)))
    return out


def _loader(ep, source: str) -> Callable[[], EnvSpec]:
    def load() -> EnvSpec:
        try:
            obj = ep.load()
            spec = obj if isinstance(obj, EnvSpec) else obj()
        except EnvError:
            raise
        except Exception as exc:  # noqa: BLE001 - a lab's code may fail in any way: one line, never a traceback
            raise EnvError(f"env {ep.name}: {source} cannot be loaded ({type(exc).__name__}: {exc})") from None
        if not isinstance(spec, EnvSpec):
            raise EnvError(f"env {ep.name}: {source} gave {type(spec).__name__}, not an engine.envs.EnvSpec")
        if spec.name != ep.name:
            raise EnvError(f"env {ep.name}: {source} declares the name {spec.name!r}; "
                           "the entry point's name and the spec's must be the same")
        return spec

    return load


def check_name(name: str, base: Path | None = None) -> str:
    """`name` when it is a built-in (checked without loading it) or an entry point that loads;
    for an env file (path/to/env.yaml, relative to `base` or the working directory), its absolute
    path once it loads without a problem. UnknownEnv or EnvError (exit 2) when not."""
    if name in BUILTINS:
        return name
    if is_env_file(name):
        path = Path(name).expanduser()
        path = str(((base or Path.cwd()) / path).resolve())
        get_env(path)
        return path
    get_env(name)
    return name


def env_names() -> list[str]:
    return [e.name for e in entries()]


def get_env(name: str) -> EnvSpec:
    """The env called `name`; UnknownEnv (one line naming the known ones) when there is none."""
    if is_gym_ref(name) or (is_env_file(name) and is_adapter_file(name)):
        return gym_adapter.load(name)
    if is_env_file(name):
        return load_env_file(name)
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise UnknownEnv(f"--env {name!r}: not an env name (lower-case letters, digits and '-') nor an env file "
                         "(path/to/env.yaml); fontaine-eval --list-envs lists the names")
    for entry in entries():
        if entry.name == name:
            return entry.load()
    raise UnknownEnv(f"--env {name}: no such env (known: {', '.join(env_names())}); "
                     "fontaine-eval --list-envs lists them")


def compiled_scenes(name: str) -> dict:
    """The compiled scenes the workers of env `name` would each compile, compiled here once to be
    handed to them (engine/sim/handoff.py): {key: MjModel}. Empty for an entry-point env: how it
    builds its model is its own, so its workers compile it as before."""
    if name == DEFAULT_ENV:
        from engine.sim import scene

        return {scene.SCENE_KEY: scene.compiled_model()}
    if name == "pick-lift":
        from engine.envs import pick_lift

        return {pick_lift.NAME: pick_lift._compiled()}
    if is_env_file(name) and not is_adapter_file(name):
        decl = envfile.read_declaration(Path(name).expanduser().resolve())
        return {envfile.scene_key(decl): envfile._compile(decl)}
    return {}  # an entry point's, a Gymnasium env's: each worker builds its own


def env_sha256(name: str) -> str:
    """The content hash of the env called `name` (EnvSpec.sha256), or of an env file (its YAML, its
    MJCF and every file they read), once per process and content: writing the scene's XML compiles
    it (about 1.5 s for boat-on-disk), and a launch and its driver both ask."""
    if is_env_file(name) or is_gym_ref(name):
        spec = get_env(name)
        key = name if is_gym_ref(name) else str(Path(name).expanduser().resolve())
        return _file_sha256(key, envfile.stamps(spec), spec)
    return _named_sha256(name)


@functools.lru_cache(maxsize=8)
def _named_sha256(name: str) -> str:
    return get_env(name).sha256()


_FILE_HASHES: dict = {}


def _file_sha256(path: str, stamps: tuple, spec: EnvSpec) -> str:
    key = (path, stamps)
    if key not in _FILE_HASHES:
        _FILE_HASHES.clear()
        _FILE_HASHES[key] = spec.sha256()
    return _FILE_HASHES[key]


def env_record(name: str) -> dict:
    """The manifest's `env`: the name and content hash; an env file's adds `file` (its absolute path)
    and `physics` (whose, and what of its MJCF's <option> Fontaine overrode), and its name is the one
    the file declares."""
    if is_gym_ref(name) or (is_env_file(name) and is_adapter_file(name)):
        spec = get_env(name)
        out = {"name": name if is_gym_ref(name) else spec.name, "sha256": env_sha256(name),
               "gym": spec.reset.params["gym"], "adapter": spec.files[0][0]}
        return out if is_gym_ref(name) else {**out, "file": str(Path(name).expanduser().resolve())}
    if is_env_file(name):
        spec = load_env_file(name)
        path = Path(name).expanduser().resolve()
        return {"name": spec.name, "file": str(path), "sha256": env_sha256(name),
                "physics": envfile.physics_record(envfile.read_declaration(path))}
    return {"name": name, "sha256": env_sha256(name)}


def list_lines(reach: bool = False) -> list[str]:
    """One line per env, name first: `name<TAB>description<TAB>source`, and with `reach` its share of
    reachable seeds (engine/envs/reach_share.py); an env that cannot be loaded is listed with why, so one
    broken plugin does not hide the others."""
    lines = []
    for entry in entries():
        try:
            spec = entry.load()
            lines.append(f"{spec.line()}\t{entry.source}" + (f"\t{reach_column(entry.name)}" if reach else ""))
        except EnvError as exc:
            lines.append(f"{entry.name}\t(cannot be loaded: {exc.one_line()})"
                         f"\t{entry.source}")
    gym = gym_adapter.list_lines()
    if reach:
        gym = [line + (f"\t{reach_column(line.split(chr(9))[0])}" if "(cannot be loaded" not in line else "")
               for line in gym]
    return lines + gym


def reach_column(name: str) -> str:
    """`reachable K/N seeds (P%)` of env `name` (engine/envs/reach_share.py), or why it cannot be said."""
    from engine.envs.reach_share import reach_share, share_text

    try:
        return share_text(*reach_share(get_env(name), env_sha256(name)))
    except EnvError as exc:
        return f"reachable: unknown ({exc.one_line()})"
    except Exception as exc:  # noqa: BLE001 - a lab's env may fail in any way on a seed: one line
        return f"reachable: unknown ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
