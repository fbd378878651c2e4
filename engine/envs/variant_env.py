"""An env file's scene with one of its registered variants applied (issue 48): the variant's compile
kept per process (engine.sim.variants.compiled), each running scene a copy of it."""

from __future__ import annotations

import warnings

from engine.envs.envfile import _compile, _key, build_scene
from engine.envs.place_scene import _place_env_class
from engine.sim.variants import BASE, compiled


def variant_of(decl, name: str):
    """The declared variant called `name` (None for the scene itself, `base`); KeyError names the declared ones."""
    if name == BASE:
        return None
    for v in decl.variants:
        if v.name == name:
            return v
    raise KeyError(f"env {decl.name!r} has no variant {name!r} (variants: {', '.join([BASE, *[v.name for v in decl.variants]])})")


def make_variant_env(decl, name: str, render_size: int = 224):
    """A running scene of the env file with variant `name` applied: its compile kept per process
    (engine.sim.variants.compiled), each env a copy of it."""
    variant = variant_of(decl, name)
    if variant is None:
        model = _compile(decl)
    else:
        with warnings.catch_warnings():  # the arm attached with no prefix, as _compile attaches it
            warnings.filterwarnings("ignore", message=".*empty prefix.*")
            model = compiled(repr(_key(decl)), variant, lambda: build_scene(decl))
    return _place_env_class()(decl, model, render_size=render_size)


def resolve_variants(env: str, names, declarations: dict | None = None) -> tuple:
    """The run's variants (engine.sim.variants.Variant), in `names` order: each the env file's declared
    variant of that name, or (`declarations`: name -> an env-file-style declaration, from the plan) one
    declared inline. EnvError, one line per problem, names what is wrong and where."""
    from engine.envs.envfile import is_env_file, read_declaration
    from engine.envs.spec import EnvError

    declared = {}
    if is_env_file(env):
        from pathlib import Path

        declared = {v.name: v for v in read_declaration(Path(env)).variants}
    out, problems = [], []
    for name in names:
        if declarations and name in declarations:
            problems.append(f"variant {name!r}: declared inline, which this engine does not read yet "
                            "(declare it in an env file's variants:)")
        elif name in declared:
            out.append(declared[name])
        else:
            problems.append(f"variant {name!r}: env {env!r} declares no such variant "
                            f"(declared: {', '.join(declared) or 'none'})")
    if problems:
        raise EnvError("; ".join(problems))
    return tuple(out)


def create_env(env: str, variant, render_size: int = 224):
    """A running scene of env `env` (a name or an env file) with `variant` (None: the scene as declared)
    applied; a variant's compile is kept per process."""
    from engine.envs import get_env
    from engine.envs.envfile import is_env_file, read_declaration
    from engine.envs.spec import EnvError

    if variant is None:
        return get_env(env).create(render_size=render_size)
    if not is_env_file(env):
        raise EnvError(f"env {env!r}: variants run only on env files so far")
    from pathlib import Path

    return make_variant_env(read_declaration(Path(env)), variant.name, render_size=render_size)
