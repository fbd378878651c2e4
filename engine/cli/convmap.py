"""The joint-convention shim as `fontaine-eval` uses it before a launch.

- `--convmap-seam-stats PATH` with a reference policy (the scripted oracle): roll it out on the
  seeds and write the rig table (per-joint q01/q99 of the sim's own state) to PATH, then exit.
- `--convmap fit --convmap-seam-stats PATH`: fit the map from that rig table against the
  checkpoint's release table; the fitted map is frozen into the run as explicit per-joint
  overrides (so a resume or a worker restart never re-fits), the fit report beside it.
- `--convmap-tripwires`: (a) coverage and (b) first action vs state on a few seeds at the reset
  pose, a per-joint table, JSON into the run directory, non-zero exit on failure;
  `--convmap-span-limited wrist_roll` lets a span-limited joint warn instead of failing (a).
- Replaying a diagnosis: `--convmap-fit-tiebreak off` fits by the midpoint gate and the mirror
  margin alone (no coverage tiebreak); `--convmap-anchor-deg A` (one value, or six per joint)
  gives tripwire (b) an anchor, so its limit is max(2 x anchor, 5 deg) instead of 10 deg.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from engine.policies.base import JOINT_NAMES, Observation
from engine.policies.factory import PolicySpec
from prereg.core.argcheck import ascii_float
from prereg.core.errors import UsageError


class ConvmapUsageError(UsageError):
    """Bad input for the shim instrument: one clear line."""


def write_seam_stats(spec: PolicySpec, seeds: list[int], episode_seconds: float, path: Path, log=print) -> dict:
    """Roll out a reference policy and write the rig table (seam stats) of the states it visits."""
    if spec.serve_in_driver and spec.kind != "hold":
        raise ConvmapUsageError("--convmap-seam-stats needs a reference policy that knows the task: --policy scripted")
    from engine.policies.convmap.fit import check_seam_stats_target, save_seam_stats

    check_seam_stats_target(path)  # before the rollout: a device or a FIFO there is refused now, never written
    from engine.run.rig_table import scene_rig_table

    stats = scene_rig_table(seeds, episode_seconds, spec=spec, log=log)

    path.parent.mkdir(parents=True, exist_ok=True)
    save_seam_stats(stats, path)
    return stats


def parse_span_limited(text: str | None) -> list[str]:
    """`--convmap-span-limited JOINT[,JOINT]`: the joints whose span mismatch may warn, not fail."""
    if text is None:
        return []
    joints = [j for j in str(text).replace(" ", "").split(",") if j]
    unknown = [j for j in joints if j not in JOINT_NAMES]
    if not joints or unknown or len(set(joints)) != len(joints):
        raise ConvmapUsageError(
            f"--convmap-span-limited {text!r}: give joints, each once, comma-separated, from {', '.join(JOINT_NAMES)} "
            "(e.g. wrist_roll): their span mismatch with the release then warns instead of failing coverage")
    return joints


def parse_anchor(text: str | None) -> list[float] | None:
    """`--convmap-anchor-deg`: one value for every joint, or six comma-separated (JOINT_NAMES order)."""
    if text is None:
        return None
    parts = [p for p in str(text).replace(" ", "").split(",") if p]
    try:
        values = [ascii_float(p) for p in parts]  # ASCII digits only
    except ValueError:
        values = []
    if len(values) not in (1, len(JOINT_NAMES)) or any(not np.isfinite(v) or v < 0 for v in values):
        raise ConvmapUsageError(
            f"--convmap-anchor-deg {text!r}: give one non-negative number of degrees (every joint) or "
            f"{len(JOINT_NAMES)} comma-separated ({', '.join(JOINT_NAMES)})")
    return values * len(JOINT_NAMES) if len(values) == 1 else values


def freeze_fit(spec: PolicySpec, seam_path: Path | None, *, declared: str | None = None, tiebreak: bool = True,
               log=print) -> PolicySpec:
    """Fit the map and return a spec that carries it as explicit overrides (plus the report)."""
    from engine.policies.convmap.fit import fit_from_files
    from engine.policies.convmap.shim import PRESETS, ConvMapError, apply_overrides, format_convmap
    from engine.policies.molmoact2.checkpoint import CheckpointError, hub_revision, resolve_checkpoint

    if seam_path is None or not Path(seam_path).exists():
        raise ConvmapUsageError(
            "--convmap fit needs the rig table: first write it with "
            "`fontaine-eval --policy scripted --convmap-seam-stats PATH`, then pass --convmap-seam-stats PATH")
    if not spec.checkpoint:
        raise ConvmapUsageError("--convmap fit needs a MolmoAct2 checkpoint (its norm_stats.json is the release table)")
    try:
        ckpt = resolve_checkpoint(spec.checkpoint, revision=hub_revision(spec.revision))
        report = fit_from_files(seam_path, ckpt.path, spec.norm_tag,
                                declared=PRESETS[declared] if declared else None, coverage_tiebreak=tiebreak)
        fitted = apply_overrides(report.convmap, list(spec.convmap_overrides))
    except (CheckpointError, ConvMapError, ValueError, OSError) as exc:
        raise ConvmapUsageError(str(exc)) from None
    log(report.format_table())
    overrides = tuple(f"{j}={int(s)},{o:g}" for j, s, o in zip(JOINT_NAMES, fitted.signs, fitted.offsets_deg))
    log("fitted map:\n" + format_convmap(fitted))
    return dataclasses.replace(spec, convmap="identity", convmap_overrides=overrides,
                               extra={**spec.extra, "convmap_fit": report.as_dict(),
                                      "convmap_requested": {"preset": "fit", "overrides": list(spec.convmap_overrides)}})


def print_resolved_map(spec: PolicySpec, log=print) -> None:
    """The resolved map, printed before launch (it also goes into the manifest)."""
    from engine.policies.convmap.shim import ConvMapError, format_convmap
    from engine.policies.factory import resolve_spec_convmap

    if spec.kind in ("scripted", "hold"):  # the shim applies to every policy that has a model's units
        return
    try:
        cmap = resolve_spec_convmap(spec)
    except ConvMapError as exc:
        raise ConvmapUsageError(str(exc)) from None
    if "convmap_fit" in spec.extra:
        label = "fit, frozen as per-joint overrides"
    else:
        label = spec.convmap + (f" + {', '.join(spec.convmap_overrides)}" if spec.convmap_overrides else "")
    log(f"joint-convention shim ({label}):\n" + format_convmap(cmap))


def run_tripwires(spec: PolicySpec, seeds: list[int], seam_path: Path | None, run_dir: Path, *,
                  render_size: int = 224, anchor_deg: list[float] | None = None,
                  span_limited: list[str] | None = None, log=print) -> bool:
    """Both tripwires against the policy and the scene; JSON into the run directory."""
    from engine.policies.convmap.fit import load_seam_stats, policy_release_box, seam_box
    from engine.policies.convmap.tripwires import format_tripwires, run_convmap_tripwires, tripwires_passed, write_tripwires_json
    from engine.policies.factory import make_policy, resolve_spec_convmap
    from engine.policies.molmoact2.checkpoint import CheckpointError
    from engine.sim.env import BoatEnv

    if not spec.is_model:
        raise ConvmapUsageError("--convmap-tripwires checks a model's shim: give --molmoact2, --molmoact2-discrete "
                                "or --lerobot CKPT")
    if seam_path is None or not Path(seam_path).exists():
        raise ConvmapUsageError("--convmap-tripwires needs the rig table: write it with "
                                "`fontaine-eval --policy scripted --convmap-seam-stats PATH` and pass --convmap-seam-stats PATH")
    try:
        rel_q01, rel_q99 = policy_release_box(spec)
    except (CheckpointError, ValueError, OSError) as exc:
        raise ConvmapUsageError(str(exc)) from None
    rig_q01, rig_q99 = seam_box(load_seam_stats(seam_path))
    cmap = resolve_spec_convmap(spec)
    policy = make_policy(spec)
    env = BoatEnv(render_size=render_size)

    def make_observation(seed: int) -> Observation:
        env.reset(seed)
        images = {cam: env.render(cam) for cam in ("front", "wrist")} if policy.needs_images else None
        return Observation(seed=seed, tick=0, replan_index=0, state_rad=env.state_rad(), task=spec.task, images=images)

    try:
        reports = run_convmap_tripwires(cmap, rig_q01, rig_q99, rel_q01, rel_q99, policy=policy,
                                        make_observation=make_observation, seeds=tuple(seeds[:3]), anchor_deg=anchor_deg,
                                        allow_span_limited=tuple(span_limited or ()))
    finally:
        env.close()  # its renderer: a caller that goes on (a test, a notebook) keeps no GL context
    log(format_tripwires(reports))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_tripwires_json(reports, run_dir / "convmap_tripwires.json")
    passed = tripwires_passed(reports)
    log(f"convmap tripwires {'PASSED' if passed else 'FAILED'}; report in {run_dir / 'convmap_tripwires.json'}")
    return passed
