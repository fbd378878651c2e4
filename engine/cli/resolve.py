"""From `fontaine-eval`'s flags to a `RunConfig`: flags alone, a frozen pre-registration's arm (or a
comparison run of two), or a run to resume (its manifest decides everything).

What the document or the manifest decides is refused as a flag; a policy, an env, the seeds, the
workers, the video draw and the Ray settings are checked here, before anything is written (a
UsageError: one line, exit 2).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
from pathlib import Path

from engine.cli.parser import DECIDED_BY_DOCUMENT, DECIDED_BY_MANIFEST, RUN_ID_RE
from engine.record.config import RunConfig, comparison_record, workers_for
from prereg import rundir as rd
from prereg.core.errors import UsageError
from prereg.core.limits import MAX_SEED, MAX_SEEDS
from prereg.core.safe_read import why_not_a_folder
from prereg.core.video_draw import parse_video_draw
from prereg.core.webhook_env import pass_env_problem
from prereg.rundir.files import new_run_id, run_stamp
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ, SUCCESS_FIELDS, VARIANT_NAME_RE


def refuse_decided(args, decided: tuple[str, ...], by: str, hint: str) -> None:
    """A flag that the document (or the manifest) decides is refused, never silently ignored."""
    given = [opt for dest, opt in args.explicit.items() if dest in decided]
    if given:
        raise UsageError(f"{', '.join(given)}: {by} decides {'this' if len(given) == 1 else 'these'}; "
                         f"remove the flag{'s' if len(given) != 1 else ''} ({hint})")


def resolve(args):
    """Turn flags (or a frozen pre-registration, or a run to resume) into a RunConfig."""
    from prereg.rundir.status import GateSpec

    if not hasattr(args, "explicit"):
        args.explicit = {}
    if args.resume is not None:
        return _resolve_resume(args)
    if args.run_id is not None:
        _check_run_id(args.run_id)
    if args.prereg is not None:
        return _resolve_prereg(args)
    if args.arm:
        raise UsageError("--arm needs --prereg FILE")
    if args.arms:
        raise UsageError("--arms needs --prereg FILE (the comparison is registered there)")
    spec = policy_spec_from_flags(args)
    if args.seeds is not None and args.explicit.keys() & {"seed", "num_seeds"}:
        raise UsageError("--seeds lists the seeds; give it without --seed/--num-seeds")
    n = args.num_seeds or 10
    if args.seed + n - 1 > MAX_SEED:
        raise UsageError(f"--seed {args.seed} --num-seeds {n} goes past the largest seed, {MAX_SEED}")
    seeds = args.seeds if args.seeds is not None else list(range(args.seed, args.seed + n))
    arm = spec.kind if spec.decode in (None, "flow", "reference") else f"{spec.kind}-{spec.decode}"
    run_dir = args.run_dir or (args.rows_jsonl.parent if args.rows_jsonl else None)
    run_id = args.run_id or (Path(run_dir).name if run_dir else f"{arm}-{_stamp()}")
    run_dir = run_dir or args.runs_dir / run_id
    gates = GateSpec(gpu_hours=args.gpu_hours_gate, pace_limit_hours=args.pace_limit_hours,
                     pace_after_episodes=args.pace_after_episodes)
    config = RunConfig(run_id=run_id, arm=arm, policy=spec, seeds=seeds, episode_seconds=args.episode_seconds,
                       workers=workers_for(args.workers, len(seeds)), video_draw=args.video_draw,
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms,
                       gates=gates, gpus=args.gpus, render_size=args.render_size, video_size=args.video_size,
                       ray=_ray_settings(args, spec),
                       record_predicts=args.record_predicts, env=check_env(args.env),
                       pass_env=list(dict.fromkeys(args.pass_env)))
    config.video_draw = check_video_draw(config.video_draw, config.seeds)
    return config, Path(run_dir), False


def policy_spec_from_flags(args):
    from engine.policies.factory import PolicySpec

    chosen = [f for f, v in (("--policy", args.policy), ("--molmoact2", args.molmoact2),
                             ("--molmoact2-discrete", args.molmoact2_discrete), ("--lerobot", args.lerobot)) if v]
    if len(chosen) > 1:
        raise UsageError(f"choose one policy, not {' and '.join(chosen)}")
    for knob, flag in ((args.grasp_miss, "--grasp-miss"), (args.grasp_drop, "--grasp-drop")):
        if knob is not None and (args.molmoact2 or args.molmoact2_discrete or args.lerobot
                                 or args.policy not in (None, "scripted")):
            raise UsageError(f"{flag} is a knob of the scripted oracle; give it with --policy scripted")
    if args.molmoact2_grammar_masked and not args.molmoact2_discrete:
        raise UsageError("--molmoact2-grammar-masked modifies --molmoact2-discrete CKPT; give that too")
    if args.fast_revision is not None and not args.molmoact2_discrete:
        raise UsageError("--fast-revision pins the FAST tokenizer of --molmoact2-discrete CKPT; give that too")
    _check_overrides(args.convmap_override)
    common = dict(revision=args.revision, dtype=args.dtype, device=args.device, convmap=args.convmap,
                  convmap_overrides=tuple(args.convmap_override), norm_tag=args.norm_tag,
                  flow_steps=args.flow_steps, inject_latency_ms=args.inject_latency_ms, serving=args.serving)
    if args.task:
        common["task"] = args.task
    if args.lerobot_map and not args.lerobot:
        raise UsageError("--lerobot-map maps the inputs of --lerobot CKPT; give that too")
    if (args.lerobot or args.policy not in (None, "scripted", "hold")) and "convmap" not in args.explicit:
        common["convmap"] = "identity"  # the shim applies to any policy; identity unless asked
    if args.lerobot:  # lerobot runs at the checkpoint's own precision (fp32; autocast where it says use_amp)
        molmo = [opt for dest, opt in args.explicit.items() if dest in ("dtype", "flow_steps", "norm_tag")]
        if molmo:
            raise UsageError(f"{', '.join(molmo)}: MolmoAct2's; a lerobot policy runs as its checkpoint says "
                             "(its own precision, sampler and normalisation)")
        common["dtype"] = "fp32"
        return PolicySpec(kind="lerobot", checkpoint=args.lerobot, feature_map=tuple(args.lerobot_map), **common)
    if args.policy not in (None, "scripted", "hold"):
        from engine.policies.plugins import is_plugin, load_plugin

        if not is_plugin(args.policy):
            load_plugin(args.policy)  # the one line that says which policies there are
    if args.molmoact2:
        return PolicySpec(kind="molmoact2", checkpoint=args.molmoact2, decode="flow", **common)
    if args.molmoact2_discrete:
        decode = "grammar-masked" if args.molmoact2_grammar_masked else "reference"
        return PolicySpec(kind="molmoact2-discrete", checkpoint=args.molmoact2_discrete, decode=decode,
                          fast_revision=args.fast_revision, **common)
    return PolicySpec(kind=args.policy or "scripted", grasp_miss=args.grasp_miss or 0.0,
                      grasp_drop=args.grasp_drop or 0.0, **common)


def _resolve_prereg(args):
    if args.arms is not None:
        if args.arm:
            raise UsageError("give --arm NAME (one arm) or --arms A,B (a comparison run), not both")
        return _resolve_comparison(args)
    if not args.arm:
        raise UsageError("--prereg needs --arm NAME (the arm of the pre-registration to run)")
    refuse_decided(args, DECIDED_BY_DOCUMENT, "the frozen pre-registration",
                    "to change the plan, amend it: fontaine-prereg amend")
    from prereg.document.launch import resolve_launch

    launch = resolve_launch(args.prereg, args.arm)  # a PreregError is bad input (exit 2)
    spec = _launch_policy(args, launch)
    run_id = args.run_id or (args.run_dir.name if args.run_dir else new_run_id(launch.prereg_id, launch.arm))
    run_dir = args.run_dir or args.runs_dir / run_id
    env = check_env(launch.env, Path(launch.prereg_path).parent,  # the document decides the env
                    launch.env_sha256)  # (None: boat-on-disk; a file: beside the document)
    variants = variant_fields(env, launch, f"{args.prereg}: arm {launch.arm}")
    episodes = len(launch.seeds) * (1 + len(variants.get("variants", ())))
    config = RunConfig(run_id=run_id, arm=launch.arm, policy=spec, seeds=list(launch.seeds),
                       episode_seconds=launch.episode_seconds, workers=workers_for(launch.workers or 1, episodes),
                       video_draw=str(launch.video_draw if launch.video_draw is not None else "0"),
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms, gates=launch.gates, gpus=args.gpus,
                       render_size=args.render_size, video_size=args.video_size, ray=_ray_settings(args, spec),
                       record_predicts=bool(launch.record_predicts or args.record_predicts),
                       pass_env=list(dict.fromkeys([*launch.pass_env, *args.pass_env])),
                       success_field=launch.success_field, env=env,
                       prereg={"id": launch.prereg_id, "sha256": launch.prereg_sha256,
                               "path": str(Path(launch.prereg_path).resolve())}, **variants)
    config.video_draw = check_video_draw(config.video_draw)
    check_crossed_design(config)
    return config, Path(run_dir), False


def _resolve_comparison(args):
    """`--prereg DOC --arms A,B`: both arms of the registered comparison, one run directory.

    The comparison is the one a frozen section registers for these two arms (run in its order,
    A then B); both arms must share the protocol (seeds, episode length, video draw, env) and the
    gates, and run at most the comparison's max_seeds seeds each."""
    from prereg.document.comparison_spec import comparison_label
    from prereg.document.launch import resolve_launch
    from prereg.document.read import load

    refuse_decided(args, DECIDED_BY_DOCUMENT, "the frozen pre-registration",
                    "to change the plan, amend it: fontaine-prereg amend")
    names = [n.strip() for n in args.arms.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise UsageError(f"--arms {args.arms!r}: name two different arms of the pre-registration, e.g. --arms A,B")
    launches = {n: resolve_launch(args.prereg, n) for n in names}  # a PreregError is bad input (exit 2)
    doc = load(args.prereg)
    found = [sm.comparison for sm in doc.sections
             if sm.section.sealed and sm.comparison is not None
             and {sm.comparison.arm_a, sm.comparison.arm_b} == set(names)]
    if not found:
        registered = [f"{sm.comparison.arm_a},{sm.comparison.arm_b}" for sm in doc.sections
                      if sm.section.sealed and sm.comparison is not None]
        raise UsageError(f"{args.prereg}: no frozen comparison of {names[0]} and {names[1]} "
                         f"({'it registers --arms ' + ' and '.join(registered) if registered else 'it registers none'}); "
                         "register one (comparison: {arms: [A, B], ...}) by amendment")
    comp = found[-1]  # the latest frozen section's
    a, b = launches[comp.arm_a], launches[comp.arm_b]
    shared = ("seeds", "episode_seconds", "video_draw", "env", "env_sha256", "gates", "record_predicts",
              "variants", "variant_declarations", "read_variant", "pool_cameras")
    differ = [k for k in shared if getattr(a, k) != getattr(b, k)]
    if differ:
        raise UsageError(f"arms {a.arm} and {b.arm} run different {', '.join(differ)}: a comparison run "
                         "interleaves one protocol; run each arm on its own (--arm)")
    specs = {n: _launch_policy(args, launches[n]) for n in (a.arm, b.arm)}
    for n, spec in specs.items():
        if spec.convmap == "fit" and spec.kind.startswith("molmoact2"):
            raise UsageError(f"arm {n}: convmap fit is not supported with --arms yet; run it on its own (--arm)")
    seeds = list(a.seeds)[:comp.seeds_cap(len(a.seeds))]  # the comparison reads at most max_seeds seeds
    if comp.test == "step":  # the package and its policy now, before anything is written (exit 2 if missing)
        from prereg.stats.step import step_policy

        try:
            step_policy(len(seeds), comp.alpha / 2)
        except ValueError as exc:  # the package's own refusal (StepUnavailable, a UsageError, passes through)
            raise UsageError(f"{args.prereg}: test: step cannot be built for {len(seeds)} seeds ({exc})") from None
    label = comparison_label(a.arm, b.arm)
    run_id = args.run_id or (args.run_dir.name if args.run_dir else new_run_id(a.prereg_id, label))
    run_dir = args.run_dir or args.runs_dir / run_id
    workers = max(a.workers or 1, b.workers or 1)
    env = check_env(a.env, Path(a.prereg_path).parent, a.env_sha256)
    variants = variant_fields(env, a, f"{args.prereg}: arms {a.arm} and {b.arm}")
    episodes = 2 * len(seeds) * (1 + len(variants.get("variants", ())))
    config = RunConfig(run_id=run_id, arm=label, policy=specs[a.arm], seeds=seeds,
                       episode_seconds=a.episode_seconds, workers=workers_for(workers, episodes),
                       video_draw=str(a.video_draw if a.video_draw is not None else "0"),
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms, gates=a.gates,
                       gpus=args.gpus, render_size=args.render_size, video_size=args.video_size,
                       ray=_ray_settings(args, *specs.values()),  # both arms' policies on each shard
                       record_predicts=bool(a.record_predicts or args.record_predicts),
                       pass_env=list(dict.fromkeys([*a.pass_env, *args.pass_env])),
                       success_field=a.success_field, env=env,
                       prereg={"id": a.prereg_id, "sha256": a.prereg_sha256, "path": str(Path(a.prereg_path).resolve()),
                               "arms": {n: {"sha256": launches[n].prereg_sha256, "section": launches[n].section}
                                        for n in (a.arm, b.arm)}},
                       arms=[{"arm": n, "policy": specs[n].as_dict()} for n in (a.arm, b.arm)],
                       comparison=comparison_record(comp), **variants)
    config.video_draw = check_video_draw(config.video_draw)
    check_crossed_design(config)
    return config, Path(run_dir), False


def _launch_policy(args, launch):
    """The PolicySpec of a frozen arm (the device and the latency knob are the command line's)."""
    from engine.policies.factory import PolicySpec

    return PolicySpec(kind=launch.policy, checkpoint=launch.checkpoint, revision=launch.revision,
                      fast_revision=launch.fast_revision, pinned=launch.policy != "scripted", decode=launch.decode, dtype=launch.dtype,
                      device=args.device, convmap=launch.convmap or "official",
                      convmap_overrides=tuple(launch.convmap_overrides or ()),
                      norm_tag=launch.norm_tag or "so100_so101_molmoact2", flow_steps=launch.flow_steps or 10,
                      task=launch.task or PolicySpec().task, inject_latency_ms=args.inject_latency_ms,
                      grasp_miss=launch.grasp_miss or 0.0, grasp_drop=getattr(launch, "grasp_drop", None) or 0.0,
                      serving=args.serving,  # how it is served: the run's
                      feature_map=tuple(getattr(launch, "features", None) or ()))


def _resolve_resume(args):
    refuse_decided(args, DECIDED_BY_MANIFEST, "the run's manifest", "a resume runs the rest as the run was started")
    run_dir = args.resume
    why = why_not_a_folder(run_dir)
    if why is not None and why != "does not exist":  # a FIFO, a file, a loop: said as what it is
        raise UsageError(f"--resume {run_dir}: {why.replace('a directory', 'a run directory')}")
    snap = rd.read_snapshot(run_dir)  # the contract's one read of a run's small files, as the console's
    manifest = snap.manifest
    where = run_dir / rd.MANIFEST
    if manifest is not None and manifest.config is None and manifest.raw.get("config") is not None:
        config = manifest.raw["config"]  # the manifest reads, its config does not: say that, not 'no manifest'
        raise UsageError(f"{where}: config is {type(config).__name__} {_shown(config)}, not an object; "
                         "the run cannot be resumed as recorded (start a new run)")
    if manifest is None or manifest.config is None:
        problem = snap.unreadable.get(rd.MANIFEST)
        why = f" ({problem})" if problem else " (it has no config)" if manifest is not None else ""
        raise UsageError(f"{run_dir} has no readable manifest.json{why}: not a run directory (or it never started)")
    resumes = manifest.raw.get("resumes")
    if resumes is not None and not (isinstance(resumes, list) and all(isinstance(r, dict) for r in resumes)):
        raise UsageError(f"{where}: resumes is {type(resumes).__name__} {_shown(resumes)}, not a list of resumes; "
                         "the run cannot be resumed as recorded (start a new run)")
    try:
        check_resumed(manifest.config, where)
        config = RunConfig.from_dict(manifest.config)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{where}: its config cannot be read back ({exc}); the run cannot be resumed") from None
    recorded = manifest.env or {}
    check_env(config.env, pin=recorded.get("sha256") if recorded.get("file") or recorded.get("gym") else None,
               pinned_by="the run started on")  # the env the run was started on must still be there, unchanged
    if config.variants:  # a crossed design resumes on the variants it started on, each unchanged
        again = variant_fields(config.env, config, str(where))
        changed = [n for n in config.variants if config.variant_sha256.get(n) != again["variant_sha256"].get(n)]
        if changed:
            raise UsageError(f"{where}: variant{'s' if len(changed) > 1 else ''} {', '.join(changed)} changed since the run "
                             "started (its declaration's sha256 is not the one recorded in config.variant_sha256); "
                             "the run cannot be resumed as recorded (revert the declaration, or start a new run)")
    check_crossed_design(config)
    return config, Path(run_dir), True


def variant_fields(env: str, launch, where: str) -> dict:
    """A crossed design's RunConfig fields (issue 48) from a plan's launch (prereg.document.launch.LaunchSpec)
    or a recorded RunConfig: the variants resolved on the env now (engine.envs.variant_env.resolve_variants),
    so a variant that does not exist, or cannot be built, is one line (a UsageError, exit 2) before anything
    is written; `camera_variants` and `variant_sha256` recorded from what was resolved. {} without variants."""
    from engine.envs.spec import EnvError
    from engine.envs.variant_env import resolve_variants

    names = list(launch.variants or ())
    read = launch.read_variant or BASE_VARIANT
    if not names:
        if read != BASE_VARIANT:
            raise UsageError(f"{where}: read_variant {read!r} names a variant, but the plan lists none (variants:); "
                             f"list it under protocol.variants or read {BASE_VARIANT!r}")
        return {}
    if read not in (BASE_VARIANT, POOLED_READ) and read not in names:
        raise UsageError(f"{where}: read_variant {read!r} is not one of the plan's variants "
                         f"({', '.join([BASE_VARIANT, *names])}) nor {POOLED_READ!r}")
    declarations = dict(launch.variant_declarations or {})
    try:
        resolved = resolve_variants(env, names, declarations)
    except EnvError as exc:
        raise UsageError(f"{where}: {exc.one_line()}; nothing was run") from None
    return {"variants": names, "variant_declarations": declarations, "read_variant": read,
            "pool_cameras": bool(launch.pool_cameras),
            "camera_variants": [v.name for v in resolved if v.moves_a_camera],
            "variant_sha256": {v.name: v.sha256() for v in resolved}}


def check_crossed_design(config: RunConfig) -> None:
    """A crossed design runs on this machine's pool: a Ray shard does not carry a variant yet (one line, exit 2)."""
    if config.variants and config.ray is not None:
        raise UsageError(f"--ray: this run is a crossed design ({len(config.variants)} registered variant"
                         f"{'s' if len(config.variants) != 1 else ''} beside base), which Ray shards do not run yet; "
                         "run it on this machine (leave out --ray)")


def check_resumed(config: dict, where: Path) -> None:
    """A resumed run's recorded config, checked with the command line's own types and bounds (its flags'
    argparse types, prereg/core/limits.py): a manifest is a file anyone can edit, and a resume honoured
    `workers: 100000` over 200,000 seeds until the kernel's OOM killer took it and another run with it,
    or crashed on a wrong type ("internal error ... this is a bug"). A UsageError names the field."""
    from engine.cli.parser import build_parser, seed_list

    actions = build_parser()._actions
    types = {a.dest: a.type for a in actions if a.type is not None}
    choices = {a.dest: tuple(a.choices) for a in actions if a.choices is not None}
    number, text, opt_text = (int, float), (str,), (str, type(None))

    def field(d: dict, key: str, kinds: tuple, flag: str | None = None, name: str | None = None):
        name = name or key
        if key not in d:
            return
        v = d[key]
        if type(v) not in kinds:
            raise UsageError(f"{where}: config.{name} is {type(v).__name__} {_shown(v)}; "
                             "the run cannot be resumed as recorded (start a new run)")
        if flag is not None and v is not None:
            try:
                types[flag](str(v))  # the flag's own check: the same bounds and words
            except argparse.ArgumentTypeError as exc:
                raise UsageError(f"{where}: config.{name} {v!r}: {exc} (as --{flag.replace('_', '-')} would be); "
                                 "the run cannot be resumed as recorded (start a new run)") from None

    if not isinstance(config, dict):
        raise UsageError(f"{where}: config is not a JSON object; the run cannot be resumed")
    for key in ("run_id", "arm", "video_draw", "env"):
        field(config, key, text)
    if isinstance(config.get("run_id"), str) and not RUN_ID_RE.fullmatch(config["run_id"]):
        raise UsageError(f"{where}: config.run_id {config['run_id'][:60]!r} is not a run id; the run cannot be resumed")
    field(config, "episode_seconds", number, "episode_seconds")
    field(config, "workers", (int,), "workers")
    field(config, "batch_wait_ms", number, "batch_wait_ms")
    field(config, "batch_wait_max_ms", number, "batch_wait_max_ms")
    field(config, "render_size", (int,), "render_size")
    field(config, "video_size", (int, type(None)), "video_size")
    field(config, "gpus", (int, type(None)), "gpus")
    field(config, "record_predicts", (bool,))
    field(config, "pass_env", (list,))
    field(config, "success_field", (str,))
    if config.get("success_field", "success") not in SUCCESS_FIELDS:
        raise UsageError(f"{where}: config.success_field {str(config['success_field'])[:40]!r} is not one of "
                         f"{', '.join(SUCCESS_FIELDS)}; the run cannot be resumed")
    for name in config.get("pass_env") or []:
        problem = pass_env_problem(name)
        if problem:
            raise UsageError(f"{where}: config.pass_env: {problem}; the run cannot be resumed")
    for key in ("prereg", "ray", "comparison"):
        field(config, key, (dict, type(None)))
    for key, kinds in (("variants", (list,)), ("camera_variants", (list,)), ("variant_declarations", (dict,)),
                       ("variant_sha256", (dict,)), ("read_variant", (str,)), ("pool_cameras", (bool,))):
        field(config, key, kinds)  # a crossed design's (issue 48)
    names = config.get("variants") or []
    if not all(isinstance(n, str) and VARIANT_NAME_RE.fullmatch(n) and n != BASE_VARIANT for n in names) \
            or len(set(names)) != len(names):
        raise UsageError(f"{where}: config.variants is not a list of distinct variant names (base not among them); "
                         "the run cannot be resumed as recorded (start a new run)")
    field(config, "arms", (list, type(None)))
    field(config, "gates", (dict, type(None)))
    for key, v in (config.get("gates") or {}).items():  # a gate that cannot be read would be dropped, silently
        kinds = (str, type(None)) if key == "decided" else (dict, type(None)) if key in ("sequential", "tripwires") \
            else (int, float, type(None))
        if type(v) not in kinds or (isinstance(v, (int, float)) and not (math.isfinite(v) and v >= 0)):
            raise UsageError(f"{where}: config.gates.{key} is {type(v).__name__} {_shown(v)}, not a gate's value; "
                             "the run cannot be resumed as recorded (its gates would be lost)")
    if isinstance(config.get("video_draw"), str):
        try:
            check_video_draw(config["video_draw"])
        except UsageError as exc:
            raise UsageError(f"{where}: config.video_draw: {str(exc).removeprefix('--video-draw ')}; "
                             "the run cannot be resumed as recorded") from None
    seeds = config.get("seeds")
    if not isinstance(seeds, list) or not all(type(s) is int for s in seeds):
        raise UsageError(f"{where}: config.seeds is not a list of whole numbers; the run cannot be resumed")
    if not seeds or len(seeds) > MAX_SEEDS:
        raise UsageError(f"{where}: config.seeds holds {len(seeds):,} seeds, not 1 to {MAX_SEEDS:,} "
                         "(as --seeds would be); the run cannot be resumed as recorded (start a new run)")
    if any(s < 0 or s > MAX_SEED for s in seeds) or len(set(seeds)) != len(seeds):
        try:
            seed_list(",".join(map(str, seeds)))
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{where}: config.seeds: {exc}; the run cannot be resumed as recorded") from None
    policies = [config.get("policy")] + [a.get("policy") if isinstance(a, dict) else a for a in config.get("arms") or []]
    for i, pol in enumerate(policies):
        name = "policy" if i == 0 else f"arms[{i - 1}].policy"
        if not isinstance(pol, dict):
            raise UsageError(f"{where}: config.{name} is not a JSON object; the run cannot be resumed")
        for key, kinds in (("kind", text), ("checkpoint", opt_text), ("revision", opt_text), ("fast_revision", opt_text),
                           ("decode", opt_text), ("device", opt_text), ("norm_tag", text), ("task", text),
                           ("pinned", (bool,)), ("extra", (dict,)), ("convmap_overrides", (list,)),
                           ("feature_map", (list,))):
            field(pol, key, kinds, name=f"{name}.{key}")
        for key, flag in (("dtype", "dtype"), ("convmap", "convmap")):  # null: not the policy's (a frozen scripted arm)
            field(pol, key, opt_text, name=f"{name}.{key}")
            if pol.get(key) is not None and pol[key] not in choices[flag]:
                raise UsageError(f"{where}: config.{name}.{key} {pol[key]!r} is not one of "
                                 f"{', '.join(choices[flag])}; the run cannot be resumed")
        field(pol, "flow_steps", (int,), "flow_steps", name=f"{name}.flow_steps")
        field(pol, "grasp_miss", number, "grasp_miss", name=f"{name}.grasp_miss")
        field(pol, "grasp_drop", number, "grasp_drop", name=f"{name}.grasp_drop")
        field(pol, "inject_latency_ms", number, "inject_latency_ms", name=f"{name}.inject_latency_ms")
        overrides = pol.get("convmap_overrides") or []
        if not all(isinstance(o, str) for o in overrides):
            raise UsageError(f"{where}: config.{name}.convmap_overrides is not a list of JOINT=[SIGN,]OFFSET")
        try:
            _check_overrides(list(overrides))
        except UsageError as exc:
            raise UsageError(f"{where}: config.{name}.convmap_overrides: {exc}; the run cannot be resumed") from None


def _shown(v) -> str:
    """A recorded value in a message: as JSON has it (`'2'` for a string, `5` for a number), cut short."""
    text = repr(v) if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def check_env(name: str | None, base: Path | None = None, pin: str | None = None,
               pinned_by: str = "the frozen pre-registration pins") -> str:
    """The env's name (an env file's absolute path, relative to `base`), once the registry has it;
    an env (a file, a gym id or a built-in scene) whose content hash is not `pin` is refused (an UnknownEnv or EnvError, or a
    changed file, is bad input: exit 2, nothing written)."""
    from engine.envs import DEFAULT_ENV, check_name, env_sha256, is_env_file, is_gym_ref
    from engine.envs.gym_adapter import is_adapter_file

    ref = check_name(DEFAULT_ENV if name is None else name, base)
    if is_env_file(ref) and not is_adapter_file(ref):
        from engine.envs.envfile import pin as pin_env_file

        pin_env_file(ref)  # its files read once, now: the hash below, the manifest's and the compiled scene are these bytes
    if pin:  # every env, built-in ones included: a run on another env would spend its budget to be INVALID
        have = env_sha256(ref)
        if have != pin:
            if is_env_file(ref) or is_gym_ref(ref):
                raise UsageError(f"--env {name}: the env file changed: its sha256 is {have[:12]}, {pinned_by} {pin[:12]} "
                                 "(an env is frozen by content: revert the files, or register the new hash by amendment)")
            raise UsageError(f"--env {ref}: this Fontaine's {ref} has sha256 {have[:12]}, {pinned_by} {pin[:12]}: the "
                             "built-in scene is not the one the plan was frozen on (run the Fontaine version the plan "
                             "names in its provenance, or register the new hash by amendment); nothing was run")
    return ref


def _check_run_id(run_id: str) -> None:
    if not RUN_ID_RE.fullmatch(run_id) or run_id in (".", ".."):
        raise UsageError(f"--run-id {run_id!r}: a run id is one folder name of letters, digits, '.', '_' and '-' "
                         "(at most 128, starting with a letter or digit)")


def _check_overrides(overrides: list[str]) -> None:
    """Parse and check every --convmap-override whatever the policy: a bad one is never stored."""
    from engine.policies.convmap.shim import PRESETS, ConvMapError, apply_overrides

    try:
        apply_overrides(PRESETS["identity"], overrides)
    except ConvMapError as exc:
        raise UsageError(str(exc)) from None


def _ray_settings(args, *specs) -> dict | None:
    """The run's Ray settings from the flags; `specs`: the policies each shard loads (one, or a
    comparison run's two)."""
    if args.ray is None:
        if args.ray_shards or args.ray_gpus_per_shard is not None or args.ray_dashboard:
            raise UsageError("--ray-shards / --ray-gpus-per-shard / --ray-dashboard need --ray ADDRESS")
        return None
    address = args.ray.strip()
    if address not in ("auto", "local") and not re.fullmatch(r"[\w.\-]+:[0-9]{1,5}", address, re.ASCII):
        raise UsageError(f"--ray {args.ray!r}: use 'auto', 'local' or host:port (e.g. 10.0.0.5:6379)")
    gpus = args.ray_gpus_per_shard
    if gpus is None:
        gpus = int(any(s.is_model for s in specs))  # a model: its GPU
    return {"address": address, "shards": args.ray_shards, "gpus_per_shard": gpus, "dashboard": bool(args.ray_dashboard)}


def check_ray_host(address: str) -> None:
    """A cluster address's host must resolve before Ray starts: `--ray nohost:1` took 68 s and six of
    Ray's log lines to fail. One line (UsageError, exit 2) instead, from a flag or a resumed manifest."""
    if address in ("auto", "local"):
        return
    host = address.rpartition(":")[0]
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"Ray address {address!r}: host {host!r} does not resolve ({why}); give the head's "
                         "host:port (e.g. 10.0.0.5:6379), 'auto' or 'local'") from None


def check_video_draw(draw: str, seeds=None) -> str:
    """The draw in its one written form (prereg.core.video_draw, the grammar a document's protocol uses
    too); with the run's `seeds`, a draw that names a seed the run does not run is refused (it filmed nothing)."""
    try:
        d = parse_video_draw(draw)
    except ValueError as exc:
        raise UsageError(f"--video-draw {exc}") from None
    if seeds is not None and d.startswith("seeds:"):
        outside = sorted({int(x) for x in d[6:].split(",")} - set(seeds))
        if outside:
            shown = ", ".join(map(str, outside[:5])) + (f" and {len(outside) - 5:,} more" if len(outside) > 5 else "")
            raise UsageError(f"--video-draw names seed{'s' if len(outside) > 1 else ''} {shown} that this run does not "
                             "run; name seeds of the run (--seeds/--num-seeds)")
    return d


def _stamp() -> str:
    return run_stamp()
