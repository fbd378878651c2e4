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
