"""A plan's registered tripwires (`gates: tripwires:`), run by the driver before the first episode.

The lab notes' rule: the shim's tripwires are "mandatory, pre-GPU: fail -> report, don't run". The
driver judges coverage before the policy loads (it needs the checkpoint's norm_stats and the scene,
never the model: `check_at_start(before_load=True)`), and every registered tripwire once the policy
is loaded and before any worker starts (first_action needs the model; the rig table is computed once
for both). The result (every per-joint table, the rig table it was judged on, the verdict) goes into
the manifest (`prereg.rundir.TRIPWIRES_FIELD`) and the log, and a failure is a `TripwireFailed`: the
run ends `failed` with a reason starting `tripwire`, exit 2, nothing spent on episodes, and a failing
coverage nothing spent on loading the model either.

- coverage: the rig table is the scripted oracle's rollouts on the run's own scene
  (`engine.run.rig_table.scene_rig_table`, the plan's `rig` seeds and budget); the release table is the
  checkpoint's norm_stats under the arm's norm tag; `span_limited` joints may warn.
- first_action: one batched predict of the loaded policy at the reset pose of a few seeds (the
  plan's, else the first of the protocol's), judged against the plan's anchor or `max_deg`.

A policy without the joint-convention shim (the scripted oracle) has nothing to check: recorded as
not applicable, never as passed silently.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from engine.policies.base import Observation
from prereg import rundir as rd
from prereg.core.errors import UsageError
from prereg.core.vocabulary import FIRST_ACTION_SEEDS
from prereg.document.model import Tripwires, tripwires_from_dict
from prereg.rundir.stop import one_line


class TripwireFailed(UsageError):
    """A registered tripwire failed before the first episode: nothing was spent (exit 2)."""


def applies(spec) -> bool:
    """The tripwires judge a joint-convention map: only a policy that has one and a release table
    (MolmoAct2's norm_stats, a lerobot checkpoint's saved state stats)."""
    return spec.is_model


def check_at_start(cfg, run_dir: Path, *, resume: bool, policies: dict, descriptions: dict | None,
                   log=print, before_load: bool = False, rig_cache: dict | None = None) -> tuple[dict | None, bool]:
    """The registered tripwires at a run's start, and whether they ran now: run (`run_registered`),
    their table also written to driver.log; (None, False) when the plan registers none. A resume
    whose manifest says they passed at the start does not run them again (its record, False).

    `before_load`: coverage alone, before any policy is loaded (`policies` and `descriptions` unused):
    a failure raises as above; a pass returns (None, False), the record being the full check's, after
    the load. Where the checkpoint's norm_stats cannot be read yet (a hub checkpoint not downloaded,
    a checkpoint the load will refuse in its own words), coverage waits for the full check. `rig_cache`
    keeps the rig table between the two calls."""
    if not cfg.gates.tripwires:
        return None, False
    if resume:
        manifest, _ = rd.read_manifest(run_dir)
        prior = manifest.tripwires if manifest is not None else None
        if isinstance(prior, dict) and prior.get("passed") is True:
            if before_load:
                return None, False
            log("registered tripwires: passed at the run's start (manifest.json); not run again")
            return prior, False
    try:
        if before_load:
            try:
                _pins_hold(cfg)
                run_registered(cfg, {}, log=log, coverage_only=True, rig_cache=rig_cache)
            except TripwireFailed:
                raise
            except Exception as exc:  # noqa: BLE001 - the check after the load judges it, and says what is wrong
                log(f"registered tripwire coverage: not judged before the policy loads ({one_line(str(exc))[:200]}); "
                    "judged once it has")
            return None, False
        record = run_registered(cfg, policies, policy_descriptions=descriptions, log=log, rig_cache=rig_cache)
    except TripwireFailed as exc:
        record = getattr(exc, "record", None)
        if record is not None:
            also_in_log(run_dir, f"{record.get('table', '')}\n{exc.one_line()}")
        raise
    if record is None:
        return None, False
    also_in_log(run_dir, f"{record.get('table', '')}\nregistered tripwires PASSED")
    return record, True


def _pins_hold(cfg) -> None:
    """Before the load, a pinned lerobot arm's files are checked against its pin (their hashes, no lerobot
    import) so the stats coverage judges are the pinned ones; else the load's refusal (LerobotError) is
    raised here and coverage waits for it. A MolmoAct2 hub pin is the commit the snapshot is resolved at."""
    for _, spec in cfg.arm_policies():
        if spec.kind == "lerobot" and spec.pinned:
            from engine.policies.lerobot_policy import check_pin

            check_pin(spec.checkpoint, spec.revision)


def also_in_log(run_dir: Path, text: str) -> None:
    """`text` into driver.log when this process's stdout is not already that file (a run started
    from a terminal rather than by the console); never raising."""
    target = run_dir / rd.LOG
    try:
        if target.exists() and os.path.samestat(os.fstat(sys.stdout.fileno()), target.stat()):
            return
    except (OSError, ValueError, AttributeError):
        pass
    try:
        with open(target, "a", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n")
    except OSError:
        pass


def run_registered(cfg, policies: dict, *, policy_descriptions: dict | None = None, log=print,
                   coverage_only: bool = False, rig_cache: dict | None = None) -> dict | None:
    """Run the tripwires `cfg.gates.tripwires` registers for every arm; the manifest's record.

    `policies`: {arm (None for a one-arm run): the loaded policy, or None where it is not loaded
    here (a Ray run)}. Raises TripwireFailed when one fails (the record is in `exc.record`).
    `coverage_only`: the check before the policy loads (no first_action: it needs the model; the
    record says so). `rig_cache`: the rig tables by (seeds, seconds), kept by the caller."""
    plan = tripwires_from_dict(cfg.gates.tripwires)
    if plan is None:
        return None
    from prereg.rundir.files import utc_now

    record: dict = {"registered": plan.as_dict(), "checked_at": utc_now(), "passed": True, "failed": [], "arms": []}
    if coverage_only:  # the record keeps the plan as registered: only this check is narrower
        record["before_load"] = ("coverage, before the policy loaded" + (
            "; first_action not run (it needs the loaded policy)" if plan.first_action is not None else ""))
        plan = dataclasses.replace(plan, first_action=None)
        if plan.coverage is None:
            return None
    tables = []
    rig_cache = {} if rig_cache is None else rig_cache
    for arm, spec in cfg.arm_policies():
        label = arm or cfg.arm
        if not applies(spec):
            note = f"not applicable: policy {spec.kind} has no joint-convention shim"
            record["arms"].append({"arm": label, "policy": spec.kind, "applies": False, "note": note})
            if not coverage_only:  # said once, by the check after the load
                log(f"tripwires ({label}): {note}")
            continue
        entry = _run_arm(cfg, spec, plan, policies.get(arm), (policy_descriptions or {}).get(arm), rig_cache, log)
        entry["arm"] = label
        record["arms"].append(entry)
        head = f"registered tripwires, arm {label} ({spec.kind}):"
        tables.append(head + "\n" + entry["table"])
        if not entry["passed"]:
            record["passed"] = False
            record["failed"].extend(f"{label}: {f}" if arm else f for f in entry["failed"])
    record["table"] = "\n\n".join(tables)
    if coverage_only and record["passed"]:  # its table comes with the others' once the policy is loaded
        log("registered tripwire coverage PASSED before the policy loaded")
        return record
    if tables:
        log(record["table"])
    log(f"registered tripwires {'PASSED' if record['passed'] else 'FAILED'}"
        + ("" if record["passed"] else f": {'; '.join(record['failed'])}"))
    if not record["passed"]:
        exc = TripwireFailed(failure_reason(record))
        exc.record = record
        raise exc
    return record


def failure_reason(record: dict) -> str:
    """status.json's one line: `tripwire coverage: wrist_roll 54% uncovered (span mismatch ...)`."""
    return one_line(f"{rd.TRIPWIRE_REASON} " + "; ".join(record.get("failed") or ["failed"]))


def _run_arm(cfg, spec, plan: Tripwires, policy, description: dict | None, rig_cache: dict, log) -> dict:
    from engine.policies.convmap.fit import policy_release_box, release_box_in_rig, seam_box
    from engine.policies.convmap.tripwires import (
        coverage_tripwire,
        first_action_tripwire,
        format_tripwires,
        run_first_action_probe,
    )
    from engine.policies.factory import resolve_spec_convmap
    from engine.run.rig_table import scene_rig_table

    cmap = resolve_spec_convmap(spec)
    rel_q01, rel_q99 = policy_release_box(spec, (description or {}).get("checkpoint_path") or None)
    reports, entry = [], {"policy": spec.kind, "applies": True, "convmap": cmap.as_dict()}
    if plan.coverage is not None:
        c = plan.coverage
        key = (c.rig_seeds, c.rig_episode_seconds)
        if key not in rig_cache:
            log(f"tripwire coverage: the rig table from the scripted oracle on seeds {list(c.rig_seeds)}, "
                f"{c.rig_episode_seconds:g} s each, on {cfg.env}")
            rig_cache[key] = scene_rig_table(c.rig_seeds, c.rig_episode_seconds, env=cfg.env, log=log)
        rig = rig_cache[key]
        entry["rig_table"] = rig
        rig_q01, rig_q99 = seam_box(rig)
        reports.append(coverage_tripwire(cmap, rig_q01, rig_q99, rel_q01, rel_q99, c.max_uncovered,
                                         allow_span_limited=c.span_limited))
    if plan.first_action is not None:
        f = plan.first_action
        if policy is None and spec.kind == "lerobot" and cfg.ray is None:  # served in each worker: a copy here
            from engine.policies.factory import make_policy

            policy = make_policy(spec)
        if policy is None:
            raise TripwireFailed(f"{rd.TRIPWIRE_REASON} first_action: the policy is not loaded in the driver (a Ray run "
                                 "loads it in each shard); run it without --ray, or register coverage only")
        seeds = list(f.seeds) if f.seeds is not None else list(cfg.seeds[:FIRST_ACTION_SEEDS])
        env, make_observation = _reset_observations(cfg, spec, policy)
        try:
            actions, states = run_first_action_probe(policy, make_observation, seeds)
        finally:
            env.close()
        box_lo, box_hi = release_box_in_rig(cmap, rel_q01, rel_q99)
        reports.append(first_action_tripwire(actions, states, box_lo, box_hi, f.anchor_deg, max_delta_deg=f.max_deg))
    entry["passed"] = all(r.passed for r in reports)
    entry["reports"] = {r.name: r.as_dict() for r in reports}
    entry["failed"] = [f"{r.name}: {_failing_joints(r)}" for r in reports if not r.passed]
    entry["table"] = format_tripwires(reports)
    return entry


def _failing_joints(report) -> str:
    """`wrist_roll 54% uncovered (span mismatch: ...)`, one clause per failing joint."""
    parts = []
    for row in report.joints:
        if row["status"] != "fail":  # a tripwire row (pass, warn, fail, info), not an episode row
            continue
        if report.name == "coverage":
            parts.append(f"{row['joint']} {row['uncovered']:.0%} uncovered ({row.get('why', '')})")
        else:
            parts.append(f"{row['joint']} {row.get('why', '')}")
    return ", ".join(parts) or "failed"


def _reset_observations(cfg, spec, policy):
    """(the env, seed -> the reset-pose Observation the run's first predict of that seed would see)."""
    from engine.envs import get_env

    env = get_env(cfg.env).create(render_size=cfg.render_size)

    def make_observation(seed: int) -> Observation:
        env.reset(seed)
        return Observation(seed=seed, tick=0, replan_index=0, state_rad=env.state_rad(), task=spec.task,
                           images=env.policy_images() if policy.needs_images else None,
                           privileged=env.privileged() if policy.needs_privileged else None)

    return env, make_observation
