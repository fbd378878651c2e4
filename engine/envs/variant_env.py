"""A scene with one of its registered visual variants applied (issue 48), on any env whose scene is an
MjSpec: the built-ins (boat-on-disk, pick-lift), env files and entry-point envs. A variant is declared in
the env file (`variants:`) or inline in the plan (`protocol.variants` as a mapping), both read by one
reader (engine/envs/variants.py read_variants) and checked against the compiled scene; its compile is
kept per process (engine.sim.variants.compiled) and each running env steps a copy of it. A Gymnasium
env builds its own model inside its own code, so a variant cannot reach it: it refuses them.
"""

from __future__ import annotations

import warnings

from engine.envs.envfile import _compile, _key, build_scene
from engine.envs.place_scene import _place_env_class
from engine.sim.variants import BASE, Variant, compiled

PLAN_INLINE = "the plan's protocol"  # where an inline declaration is reported (its keys follow: variants.NAME...)


def variant_of(decl, name: str):
    """The declared variant called `name` (None for the scene itself, `base`); KeyError names the declared ones."""
    if name == BASE:
        return None
    for v in decl.variants:
        if v.name == name:
            return v
    raise KeyError(f"env {decl.name!r} has no variant {name!r} (variants: {', '.join([BASE, *[v.name for v in decl.variants]])})")


def _compile_variant(scene_key: str, variant: Variant, build_spec):
    with warnings.catch_warnings():  # the arm attached with no prefix, as the scenes' own compiles attach it
        warnings.filterwarnings("ignore", message=".*empty prefix.*")
        return compiled(scene_key, variant, build_spec)


def make_variant_env(decl, name: str, render_size: int = 224):
    """A running scene of the env file with variant `name` applied: its compile kept per process
    (engine.sim.variants.compiled), each env a copy of it."""
    variant = variant_of(decl, name)
    if variant is None:
        model = _compile(decl)
    else:
        model = _compile_variant(repr(_key(decl)), variant, lambda: build_scene(decl))
    return _place_env_class()(decl, model, render_size=render_size)


def _is_gym(env: str) -> bool:
    from engine.envs.envfile import is_env_file
    from engine.envs.gym_adapter import is_adapter_file, is_gym_ref

    return is_gym_ref(env) or (is_env_file(env) and is_adapter_file(env))


def _gym_refuses(env: str) -> str:
    return (f"env {env!r}: a Gymnasium env builds its own model in its own code, so a registered variant cannot "
            "be applied to it; run variants on a built-in env, an env file or an entry-point env")


def _variant_scene(env: str):
    """(the env's spec, then _scene's three) for an env that takes variants; EnvError for one that cannot (a
    Gymnasium env builds its own model; an env whose scene is no MjSpec)."""
    from engine.envs import get_env
    from engine.envs.spec import EnvError

    if _is_gym(env):
        raise EnvError(_gym_refuses(env))
    spec = get_env(env)
    if not spec.takes_model():
        raise EnvError(spec.no_model_why())
    return (spec, *_scene(env, spec))


def _scene(env: str, spec):
    """(the scene's key among compiled variants, its MjSpec builder, the env file's declaration or None)."""
    from pathlib import Path

    from engine.envs.envfile import is_env_file, read_declaration

    if is_env_file(env):
        decl = read_declaration(Path(env).expanduser().resolve())
        return repr(_key(decl)), (lambda: build_scene(decl)), decl
    from engine.envs.spec import _qualname

    return f"env:{spec.name}:{_qualname(spec.build_scene)}", spec.build_scene, None


def _base_model(env: str, spec, key: str, build):
    """The scene as declared, compiled (the one the run's base episodes compile, where there is one)."""
    from engine.envs.registry import compiled_scenes

    scenes = compiled_scenes(env)
    if scenes:
        return next(iter(scenes.values()))
    return _compile_variant(key, Variant(name=BASE), build)  # an entry point's: an empty variant is its scene


def read_inline(declarations: dict, cameras: dict) -> tuple:
    """The plan's inline declarations (name -> the fields of an env file's variants entry) as Variants, read by
    the env file's reader; EnvError, one problem per line, when any is malformed."""
    from engine.envs.declare import _Reader
    from engine.envs.spec import EnvError
    from engine.envs.variants import KEY, read_variants

    r = _Reader(PLAN_INLINE, {})
    got = read_variants(r, {KEY: dict(declarations)}, dict(cameras))
    if r.out:
        raise EnvError("; ".join(r.out))
    return got


def resolve_variants(env: str, names, declarations: dict | None = None) -> tuple:
    """The run's variants (engine.sim.variants.Variant), in `names` order: each the env file's declared
    variant of that name, or (`declarations`: name -> an env-file-style declaration, from the plan) one
    declared inline, checked against the compiled scene. EnvError, one problem per line, names what is
    wrong and where."""
    from engine.envs.spec import EnvError
    from engine.envs.variants import variant_problems

    names, declarations = list(names), dict(declarations or {})
    if not names and not declarations:
        return ()
    spec, key, build, decl = _variant_scene(env)
    in_file = {v.name: v for v in decl.variants} if decl is not None else {}
    inline = {v.name: v for v in read_inline(declarations, spec.cameras)} if declarations else {}
    out, problems = [], []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            problems.append(f"variant {name!r}: listed {names.count(name)} times (each variant runs once)")
        if name == BASE:
            problems.append(f"variant {name!r}: the scene as declared always runs; list only the variants beside it")
        elif name in inline and name in in_file:
            problems.append(f"variant {name!r}: declared both inline in {PLAN_INLINE}'s variants and in env file "
                            f"{decl.path}'s variants: (rename one, or drop the inline one to run the file's)")
        elif name in inline:
            out.append(inline[name])
        elif name in in_file:
            out.append(in_file[name])
        else:
            where = (f"env file {decl.path} declares none such (declared: {', '.join(in_file) or 'none'})"
                     if decl is not None else f"env {env!r} declares no variants")
            problems.append(f"variant {name!r}: not declared inline in {PLAN_INLINE}'s variants, and {where}")
    for name in declarations:
        if name not in names:
            problems.append(f"variant {name!r}: declared inline in {PLAN_INLINE} but not among the variants run "
                            f"({', '.join(names) or 'none'})")
    if problems:
        raise EnvError("; ".join(problems))
    used = tuple(v for v in out if v.name in inline)
    if used:  # the file's were checked when the env file loaded
        problems = variant_problems(PLAN_INLINE, used, _base_model(env, spec, key, build))
        if problems:
            raise EnvError("; ".join(problems))
    return tuple(out)


def create_env(env: str, variant, render_size: int = 224):
    """A running scene of env `env` (a name or an env file) with `variant` (None: the scene as declared)
    applied; a variant's compile is kept per process (one per scene and variant), each env a copy of it."""
    from engine.envs import get_env

    if variant is None:
        return get_env(env).create(render_size=render_size)
    spec, key, build, _ = _variant_scene(env)
    return spec.create(render_size=render_size, model=_compile_variant(key, variant, build))
