"""Provenance: is this run directory a run of this arm of this frozen registration?

An arm's reads are VALID only when its run says where it came from and what it ran, and
that equals what the registration froze: `manifest.json` exists and parses, carries the
frozen section's hash, names the arm, and records the registered settings (policy,
checkpoint, revision, decode, seeds, episode budget, convmap). `problems` lists every
difference, one line each; an empty list is provenance established.

The manifest is what `fontaine-eval --prereg FILE --arm NAME` writes (engine/run/driver.py
`_write_manifest`: `prereg`, `arm`, `policy` = the PolicySpec, `policy_resolved` = what
the policy loaded, `seeds`, `episode_seconds`); the registered settings are `resolve_launch`'s.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from prereg import rundir as rd
from prereg.document.check_arms import ENV_FILE_SUFFIXES
from prereg.document.launch import LaunchSpec

# the engine's defaults for a setting the registration leaves out (engine/cli/resolve.py `_resolve_prereg`)
LAUNCH_DEFAULTS = {"convmap": "official", "env": "boat-on-disk"}  # a plan or manifest without env ran boat-on-disk


def registered_settings(spec: LaunchSpec) -> dict[str, object]:
    """The settings a run of this arm must record, by name (None: not registered, not compared)."""
    model = spec.policy != "scripted"
    return {
        "policy": spec.policy,
        "checkpoint": spec.checkpoint,
        "revision": spec.revision,
        "decode": spec.decode,
        "seeds": list(spec.seeds),
        "episode_seconds": float(spec.episode_seconds),
        "convmap": (spec.convmap or LAUNCH_DEFAULTS["convmap"]) if model else None,
        "convmap_overrides": list(spec.convmap_overrides) if model else None,
    }


def recorded_settings(manifest: rd.Manifest | dict) -> dict[str, object]:
    """The same settings as the manifest (typed, prereg.rundir.Manifest) records them (absent or unreadable ones as None)."""
    manifest = rd.Manifest.of(manifest)
    pol = manifest.policy or {}
    resolved = manifest.policy_resolved or {}
    revision = resolved.get("revision", pol.get("revision", (pol.get("extra") or {}).get("revision")
                                                if isinstance(pol.get("extra"), dict) else None))
    if isinstance(resolved.get("pin"), str):  # what loaded, by the engine's pin: a local checkpoint's content hash
        revision = resolved["pin"]
    return {
        "policy": pol.get("kind"),
        "checkpoint": pol.get("checkpoint"),
        "revision": revision,
        "decode": pol.get("decode"),
        "seeds": list(manifest.seeds) if manifest.seeds is not None else None,
        "episode_seconds": manifest.episode_seconds,
        "convmap": pol.get("convmap"),
        "convmap_overrides": list(pol.get("convmap_overrides") or []) if "convmap_overrides" in pol else None,
    }


def manifest_problems(run_dir: Path, spec: LaunchSpec, notes: list[str] | None = None,
                      comparison=None) -> list[str]:
    """Why this run is not a run of `spec`'s arm of this registration; [] when it is.

    A registered revision is compared with the Hugging Face snapshot the engine resolved; a
    local or built checkpoint has none to record, which goes to `notes`, not to the problems.
    `comparison` (a prereg.stats.comparison.ComparisonSpec, the frozen one for this arm): the run is read
    as one arm of a comparison run (`rd.Manifest.arm_view`), which runs the plan's first max_seeds
    seeds and must record exactly this registered comparison.
    """
    manifest, why = rd.read_manifest(run_dir)
    if why == "missing":
        return [f"no {rd.MANIFEST}: nothing says this run was launched from this registration "
                "(rows alone are reported only with --unregistered)"]
    if manifest is None:
        return [f"{why}: the run's provenance cannot be checked"]
    out = []
    if comparison is not None:
        view = manifest.arm_view(spec.arm)
        if view is None:
            return [f"the manifest is not a comparison run of arm {spec.arm!r} (arm {manifest.arm!r})"]
        out += _comparison_problems(manifest.comparison, comparison)
        manifest = view
        seeds = list(spec.seeds)[:comparison.seeds_cap(len(spec.seeds))]
        spec = replace(spec, seeds=seeds)
    recorded = manifest.prereg_sha256
    if not recorded:
        out.append("the manifest records no pre-registration hash (launched without --prereg)")
    elif recorded != spec.prereg_sha256:
        out.append(f"launched from a different registration text: manifest sha256 {str(recorded)[:12]}, "
                   f"the frozen {spec.section} {spec.prereg_sha256[:12]}")
    m_arm = manifest.arm
    if m_arm != spec.arm:
        out.append(f"the manifest names arm {m_arm!r}, not {spec.arm!r}" if m_arm else
                   f"the manifest names no arm (reported as {spec.arm!r})")
    out += env_problems(manifest, spec)
    got = recorded_settings(manifest)
    for key, want in registered_settings(spec).items():
        if want is None:
            continue
        have = got.get(key)
        if key == "revision" and have is None:
            if notes is not None:
                notes.append(f"registered revision {want!r}: the engine resolved a checkpoint without a Hugging Face "
                             "revision to record (a local or built checkpoint), so it is not compared")
            continue
        if not _same(have, want):
            out.append(f"recorded {key} {_show(have)} is not the registered {_show(want)}"
                       + (_pin_files(manifest) if key == "revision" else ""))
    return out


def _pin_files(manifest: rd.Manifest) -> str:
    """What a pin that is not the registered one covered, naming the checkpoint and its files."""
    resolved = manifest.policy_resolved or {}
    files = resolved.get("files")
    where = resolved.get("checkpoint_path") or (manifest.policy or {}).get("checkpoint")
    if isinstance(files, dict) and files:
        return (f": the checkpoint {where} loaded with files {', '.join(sorted(map(str, files)))}, one of which is not "
                "what was frozen (the pin is their one hash)")
    return f": the checkpoint {where} is not what was frozen" if where else ""


def _comparison_problems(recorded, registered) -> list[str]:
    """The comparison the run recorded against the frozen one (its arms in order, metric, test, alpha,
    minimum effect, max seeds, bound): any difference is a run of another comparison."""
    from prereg.document.comparison_spec import ComparisonSpec

    if not isinstance(recorded, dict):
        return ["the manifest records no comparison (a comparison run records the one it ran)"]
    try:
        got = ComparisonSpec.from_record(recorded)
    except (TypeError, ValueError, KeyError) as exc:
        return [f"the manifest's comparison cannot be read ({exc})"]
    have, want = got.as_dict(), registered.as_dict()
    return [f"recorded comparison {k} {_show(have[k])} is not the registered {_show(want[k])}"
            for k in want if not _same(have.get(k), want[k])]


def env_problems(manifest: rd.Manifest | dict, spec: LaunchSpec) -> list[str]:
    """The run's env against the registered one: its name, then (when the plan pinned it) its
    content hash, so an env edited after freezing (a tolerance, a camera, a mesh) is named."""
    manifest = rd.Manifest.of(manifest)
    want = spec.env or LAUNCH_DEFAULTS["env"]
    env = manifest.env or {}
    if want.endswith(ENV_FILE_SUFFIXES):
        return _env_file_problems(env, want, spec)
    have = env.get("name") if manifest.recorded("env") else LAUNCH_DEFAULTS["env"]  # a manifest from before envs
    if have != want:
        return [f"recorded env {_show(have)} is not the registered {want!r}"]
    if spec.env_sha256 and env.get("sha256") != spec.env_sha256:
        got = env.get("sha256")
        return [f"the env {want} changed after freezing: the run's env sha256 "
                + (f"{str(got)[:12]}" if got else "is not recorded")
                + f", the registered {spec.env_sha256[:12]} (an env is frozen by content: "
                "register the new one by amendment)"]
    return []


def _env_file_problems(env: dict, want: str, spec: LaunchSpec) -> list[str]:
    """An env file is compared by content: the run's recorded sha256 against the registered one
    (the file may sit elsewhere on the machine that ran it); unpinned, by its path beside the plan."""
    got, ran = env.get("sha256"), env.get("file")
    if not ran:
        return [f"recorded env {_show(env.get('name', LAUNCH_DEFAULTS['env']))} is not the registered env file {want!r}"]
    if spec.env_sha256:
        if got != spec.env_sha256:
            return [f"the env file {want} changed after freezing: the run's env sha256 "
                    + (f"{str(got)[:12]}" if got else "is not recorded")
                    + f", the registered {spec.env_sha256[:12]} (an env is frozen by content: "
                    "register the new one by amendment)"]
        return []
    expected = (Path(spec.prereg_path).parent / want).resolve()
    if Path(str(ran)).resolve() != expected:
        return [f"recorded env file {_show(ran)} is not the registered {str(expected)!r}"]
    return []


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    return a == b


def _show(v) -> str:
    if isinstance(v, list) and len(v) > 8 and all(isinstance(x, int) for x in v):
        contiguous = v == list(range(v[0], v[0] + len(v)))
        return f"[{v[0]}..{v[-1]}] ({len(v)} seeds)" if contiguous else f"{v[:6]}... ({len(v)} seeds)"
    return "none" if v is None else repr(v)
