"""`fontaine-eval`: run (or resume) an evaluation into a run directory.

Bad input (an unknown flag value, a seed count out of bounds, a run directory that cannot be
written or is being written by another process, a missing GL library, a checkpoint that cannot
be loaded, an unfrozen or edited pre-registration, a flag the pre-registration decides) gets one
clear line on stderr and exit code 2, never a traceback. Exit codes: prereg.rundir.EXIT_* (0
done, 1 failed, 2 bad input, 3 stopped); the table is in docs/run-directory.md. Every error is
mapped to its line and code in one place, prereg.core.errors.run_cli, by its class.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from prereg import rundir as rd  # noqa: E402 - MUJOCO_GL must be set before anything imports mujoco
from prereg.core.argcheck import (
    OneLineParser,
    bounded_float,
    bounded_int,
    nonneg_float,
    nonneg_int,
    parse_once,
    path_type,
    positive_float,
    positive_int,
    probability,
)
from prereg.core.errors import RunFailed, UsageError, log_to, run_cli  # noqa: E402
from prereg.core.limits import MAX_SEED, MAX_SEEDS  # noqa: E402 - one bound for the flags and the documents
from prereg.core.video_draw import parse_video_draw  # noqa: E402
from prereg.core.vocabulary import CONVMAPS, DTYPES  # noqa: E402 - the one vocabulary, shared with the documents

EXIT_BAD_INPUT = rd.EXIT_USAGE
MAX_EPISODE_SECONDS = 3600.0  # one hour of simulated time per episode
MAX_WORKERS = 256
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

# Flags a frozen pre-registration decides (given with --prereg they are refused, never ignored);
# with --resume the run's manifest decides them all.
DECIDED_BY_DOCUMENT = (
    "policy", "molmoact2", "molmoact2_discrete", "molmoact2_grammar_masked", "dtype", "flow_steps", "norm_tag",
    "task", "convmap", "convmap_override", "convmap_declare", "seed", "num_seeds", "seeds", "episode_seconds",
    "workers", "video_draw", "gpu_hours_gate", "pace_limit_hours", "pace_after_episodes", "revision",
    "convmap_fit_tiebreak", "env", "grasp_miss", "lerobot", "lerobot_map", "fast_revision",
)
DECIDED_BY_MANIFEST = DECIDED_BY_DOCUMENT + (
    "prereg", "arm", "arms", "run_id", "run_dir", "runs_dir", "batch_wait_ms", "batch_wait_max_ms", "render_size",
    "video_size", "gpus", "device",
    "ray", "ray_shards", "ray_gpus_per_shard", "ray_dashboard",
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_cli("fontaine-eval", lambda: _main(argv))


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_once(parser, argv)
    args.explicit = explicit_flags(parser, argv)
    if args.list_envs:
        return _list_envs(args.env)
    config, run_dir, resume = resolve(args)
    return execute(args, config, run_dir, resume, argv)


def explicit_flags(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, str]:
    """{dest: the option as typed} for every option given on the command line."""
    by_option = {o: a.dest for a in parser._actions for o in a.option_strings}
    out: dict[str, str] = {}
    for tok in argv:
        if tok == "--":
            break
        opt = tok.split("=", 1)[0]
        if opt in by_option:
            out.setdefault(by_option[opt], opt)
    return out


def _refuse_decided(args, decided: tuple[str, ...], by: str, hint: str) -> None:
    """A flag that the document (or the manifest) decides is refused, never silently ignored."""
    given = [opt for dest, opt in args.explicit.items() if dest in decided]
    if given:
        raise UsageError(f"{', '.join(given)}: {by} decides {'this' if len(given) == 1 else 'these'}; "
                         f"remove the flag{'s' if len(given) != 1 else ''} ({hint})")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="fontaine-eval", description="Run a policy evaluation on the embedded SO-101 boat scene.",
                allow_abbrev=False)  # an abbreviated flag would slip past the pre-registration's check
    pol = p.add_argument_group("policy")
    pol.add_argument("--policy", metavar="NAME",
                     help="scripted (the oracle), hold (the state-copy baseline), or a lab's own policy: a "
                          "fontaine.policies entry point (docs/policies.md)")
    pol.add_argument("--lerobot", metavar="CKPT",
                     help="a lerobot policy checkpoint (ACT, Diffusion, SmolVLA, ...): a local directory or a "
                          "Hugging Face id (downloaded; --revision pins it), loaded with lerobot's factory")
    pol.add_argument("--lerobot-map", action="append", default=[], metavar="FEATURE=SOURCE",
                     help="feed a checkpoint input from a sim camera or 'state' when the names differ, e.g. "
                          "observation.images.top=front (default: by name)")
    pol.add_argument("--molmoact2", metavar="CKPT",
                     help="MolmoAct2 flow pathway: a local directory, a Hugging Face id (downloaded), or 'tiny'")
    pol.add_argument("--revision",
                     help="the Hugging Face commit, branch or tag to download (default main); the manifest records the commit")
    pol.add_argument("--molmoact2-discrete", metavar="CKPT", help="MolmoAct2 discrete (token) pathway")
    pol.add_argument("--molmoact2-grammar-masked", action="store_true", help="discrete pathway with the grammar-masked decode")
    pol.add_argument("--fast-revision", metavar="COMMIT",
                     help="discrete pathway: the 40-hex commit of allenai/MolmoAct2-FAST-Tokenizer to fetch (a checkpoint "
                          "with its own action_tokenizer/ needs none); the manifest records it")
    pol.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    pol.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    pol.add_argument("--flow-steps", type=bounded_int(1, 1000), default=10)
    pol.add_argument("--norm-tag", default="so100_so101_molmoact2")
    pol.add_argument("--task", default=None, help="task text (default: 'put the boat on the disk')")
    pol.add_argument("--convmap", choices=list(CONVMAPS), default="official", help="joint-convention shim preset")
    pol.add_argument("--convmap-override", action="append", default=[], metavar="JOINT=[SIGN,]OFFSET")
    pol.add_argument("--convmap-seam-stats", type=path_type, metavar="PATH",
                     help="with --policy scripted: write the rig table (per-joint q01/q99 of the sim's state) and exit; "
                          "with --convmap fit / --convmap-tripwires: read it")
    pol.add_argument("--convmap-declare", choices=["official"], help="external documentation: this preset wins in the fit")
    pol.add_argument("--convmap-tripwires", action="store_true",
                     help="run the shim's two tripwires (coverage, first action vs state) on the first 3 seeds and exit")
    pol.add_argument("--convmap-fit-tiebreak", choices=["on", "off"], default="on",
                     help="the fit's coverage tiebreak; 'off' replays the margin-only fit (docs/convmap.md)")
    pol.add_argument("--convmap-anchor-deg", metavar="DEG[,DEG x5]",
                     help="tripwire (b)'s anchor: limit max(2 x anchor, 5 deg) per joint instead of 10 deg")
    pol.add_argument("--convmap-span-limited", metavar="JOINT[,JOINT]",
                     help="tripwire (a)'s span-limited allowance: these joints, when no offset can cover their "
                          "span (a checkpoint property), warn instead of failing (e.g. wrist_roll)")
    pol.add_argument("--grasp-miss", type=probability, default=None, metavar="P",
                     help="the scripted oracle's skill knob: the probability (seeded per seed) that an "
                          "episode's grasps miss; its success rate is about its no-miss rate x (1 - P)")
    pol.add_argument("--inject-latency-ms", type=nonneg_float, default=0.0, help=argparse.SUPPRESS)

    proto = p.add_argument_group("protocol")
    proto.add_argument("--seed", type=bounded_int(0, MAX_SEED), default=0, help="first seed")
    proto.add_argument("--num-seeds", type=bounded_int(1, MAX_SEEDS), default=None,
                       help=f"number of consecutive seeds (default 10, at most {MAX_SEEDS:,})")
    proto.add_argument("--seeds", type=_seed_list, default=None, help="explicit seeds, e.g. 0,3,10-19")
    proto.add_argument("--episode-seconds", type=bounded_float(0, MAX_EPISODE_SECONDS), default=30.0,
                       help=f"episode budget in seconds (30 Hz ticks; at most {MAX_EPISODE_SECONDS:g})")
    proto.add_argument("--env", metavar="NAME|FILE", default=None,
                       help="the scene and task to run (default boat-on-disk), or an env file, path/to/env.yaml "
                            "(docs/envs.md); --list-envs lists the names")
    proto.add_argument("--list-envs", action="store_true",
                       help="print the envs this engine can run, one a line (name first), and exit")
    proto.add_argument("--workers", type=bounded_int(1, MAX_WORKERS), default=1,
                       help="worker processes (at most one per seed is started)")
    proto.add_argument("--video-draw", default="auto",
                       help="'auto' (default) = every seed of a run of up to 100 seeds, else the first episode of "
                            "each worker; '0' = first episode of each worker; 'none', 'all', or 'seeds:6,28'. "
                            "A video shows the front and wrist views side by side")
    proto.add_argument("--batch-wait-ms", type=nonneg_float, default=20.0,
                       help="shortest wait to fill a batch (it adapts to the workers' chunk time)")
    proto.add_argument("--batch-wait-max-ms", type=nonneg_float, default=1000.0, help="longest wait to fill a batch")
    proto.add_argument("--render-size", type=bounded_int(16, 1024), default=224)
    proto.add_argument("--video-size", type=bounded_int(16, 1024), default=None,
                       help="pixels a side of each filmed view (default: --render-size, the policy's image size)")

    out = p.add_argument_group("run directory")
    out.add_argument("--run-dir", type=path_type, help="the run directory (default runs/<run id>)")
    out.add_argument("--runs-dir", type=path_type, default=Path("runs"))
    out.add_argument("--run-id")
    out.add_argument("--out-json", type=path_type, help="also copy rows.json here at the end")
    out.add_argument("--rows-jsonl", type=path_type, help="also copy rows.jsonl here at the end")
    out.add_argument("--resume", type=path_type, metavar="DIR", help="resume a run: skip seeds with an ok row, run the rest")
    out.add_argument("--record-predicts", action="store_true",
                     help="write predicts.jsonl: tokens, normalised chunk, fallback and first action of every predict")

    pre = p.add_argument_group("pre-registration")
    pre.add_argument("--prereg", type=path_type, metavar="FILE", help="a frozen pre-registration: everything comes from it")
    pre.add_argument("--arm", help="the arm of --prereg to run")
    pre.add_argument("--arms", metavar="A,B",
                     help="a comparison run: both arms of the registered comparison in one run directory, "
                          "interleaved by seed, stopped when the comparison decides (docs/prereg.md)")

    ray = p.add_argument_group("scale-out (Ray; pip install '.[ray]')")
    ray.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster: 'auto', 'host:port', or 'local' (a private one)")
    ray.add_argument("--ray-shards", type=positive_int, default=None, help="shards (one per GPU node); default: one per node")
    ray.add_argument("--ray-gpus-per-shard", type=nonneg_int, default=None,
                     help="GPUs each shard holds (default 1 for MolmoAct2 and --lerobot, 0 otherwise)")
    ray.add_argument("--ray-dashboard", action="store_true", help="start Ray's dashboard (off by default)")

    gates = p.add_argument_group("gates and tripwires")
    gates.add_argument("--gpu-hours-gate", type=nonneg_float, default=None)
    gates.add_argument("--pace-limit-hours", type=positive_float, default=None)
    gates.add_argument("--pace-after-episodes", type=positive_int, default=10)
    gates.add_argument("--gpus", type=nonneg_int, default=None, help="GPUs held (default: 1 on CUDA, else 0)")
    return p


# --------------------------------------------------------------------------- resolution


def resolve(args):
    """Turn flags (or a frozen pre-registration, or a run to resume) into a RunConfig."""
    from engine.driver import RunConfig
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
    spec = _policy_spec_from_flags(args)
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
                       workers=_clip_workers(args.workers, len(seeds)), video_draw=args.video_draw,
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms,
                       gates=gates, gpus=args.gpus, render_size=args.render_size, video_size=args.video_size,
                       ray=_ray_settings(args, spec),
                       record_predicts=args.record_predicts, env=_check_env(args.env))
    config.video_draw = _check_video_draw(config.video_draw)
    return config, Path(run_dir), False


def _policy_spec_from_flags(args):
    from engine.policies.factory import PolicySpec

    chosen = [f for f, v in (("--policy", args.policy), ("--molmoact2", args.molmoact2),
                             ("--molmoact2-discrete", args.molmoact2_discrete), ("--lerobot", args.lerobot)) if v]
    if len(chosen) > 1:
        raise UsageError(f"choose one policy, not {' and '.join(chosen)}")
    if args.grasp_miss is not None and (args.molmoact2 or args.molmoact2_discrete or args.lerobot
                                        or args.policy not in (None, "scripted")):
        raise UsageError("--grasp-miss is the scripted oracle's skill knob; give it with --policy scripted")
    if args.molmoact2_grammar_masked and not args.molmoact2_discrete:
        raise UsageError("--molmoact2-grammar-masked modifies --molmoact2-discrete CKPT; give that too")
    if args.fast_revision is not None and not args.molmoact2_discrete:
        raise UsageError("--fast-revision pins the FAST tokenizer of --molmoact2-discrete CKPT; give that too")
    _check_overrides(args.convmap_override)
    common = dict(revision=args.revision, dtype=args.dtype, device=args.device, convmap=args.convmap,
                  convmap_overrides=tuple(args.convmap_override), norm_tag=args.norm_tag,
                  flow_steps=args.flow_steps, inject_latency_ms=args.inject_latency_ms)
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
    return PolicySpec(kind=args.policy or "scripted", grasp_miss=args.grasp_miss or 0.0, **common)


def _resolve_prereg(args):
    from engine.driver import RunConfig

    if args.arms is not None:
        if args.arm:
            raise UsageError("give --arm NAME (one arm) or --arms A,B (a comparison run), not both")
        return _resolve_comparison(args)
    if not args.arm:
        raise UsageError("--prereg needs --arm NAME (the arm of the pre-registration to run)")
    _refuse_decided(args, DECIDED_BY_DOCUMENT, "the frozen pre-registration",
                    "to change the plan, amend it: fontaine-prereg amend")
    from prereg.document.launch import resolve_launch

    launch = resolve_launch(args.prereg, args.arm)  # a PreregError is bad input (exit 2)
    spec = _launch_policy(args, launch)
    run_id = args.run_id or (args.run_dir.name if args.run_dir else rd.new_run_id(launch.prereg_id, launch.arm))
    run_dir = args.run_dir or args.runs_dir / run_id
    config = RunConfig(run_id=run_id, arm=launch.arm, policy=spec, seeds=list(launch.seeds),
                       episode_seconds=launch.episode_seconds, workers=_clip_workers(launch.workers or 1, len(launch.seeds)),
                       video_draw=str(launch.video_draw if launch.video_draw is not None else "0"),
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms, gates=launch.gates, gpus=args.gpus,
                       render_size=args.render_size, video_size=args.video_size, ray=_ray_settings(args, spec),
                       record_predicts=bool(launch.record_predicts or args.record_predicts),
                       env=_check_env(launch.env, Path(launch.prereg_path).parent,  # the document decides the env
                                      launch.env_sha256),  # (None: boat-on-disk; a file: beside the document)
                       prereg={"id": launch.prereg_id, "sha256": launch.prereg_sha256,
                               "path": str(Path(launch.prereg_path).resolve())})
    config.video_draw = _check_video_draw(config.video_draw)
    return config, Path(run_dir), False


def _resolve_comparison(args):
    """`--prereg DOC --arms A,B`: both arms of the registered comparison, one run directory.

    The comparison is the one a frozen section registers for these two arms (run in its order,
    A then B); both arms must share the protocol (seeds, episode length, video draw, env) and the
    gates, and run at most the comparison's max_seeds seeds each."""
    from engine.driver import RunConfig, comparison_record
    from prereg.document.comparison_spec import comparison_label
    from prereg.document.launch import resolve_launch
    from prereg.document.read import load

    _refuse_decided(args, DECIDED_BY_DOCUMENT, "the frozen pre-registration",
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
    shared = ("seeds", "episode_seconds", "video_draw", "env", "env_sha256", "gates", "record_predicts")
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
    run_id = args.run_id or (args.run_dir.name if args.run_dir else rd.new_run_id(a.prereg_id, label))
    run_dir = args.run_dir or args.runs_dir / run_id
    workers = max(a.workers or 1, b.workers or 1)
    config = RunConfig(run_id=run_id, arm=label, policy=specs[a.arm], seeds=seeds,
                       episode_seconds=a.episode_seconds, workers=_clip_workers(workers, 2 * len(seeds)),
                       video_draw=str(a.video_draw if a.video_draw is not None else "0"),
                       batch_wait_ms=args.batch_wait_ms, batch_wait_max_ms=args.batch_wait_max_ms, gates=a.gates,
                       gpus=args.gpus, render_size=args.render_size, video_size=args.video_size,
                       ray=_ray_settings(args, *specs.values()),  # both arms' policies on each shard
                       record_predicts=bool(a.record_predicts or args.record_predicts),
                       env=_check_env(a.env, Path(a.prereg_path).parent, a.env_sha256),
                       prereg={"id": a.prereg_id, "sha256": a.prereg_sha256, "path": str(Path(a.prereg_path).resolve()),
                               "arms": {n: {"sha256": launches[n].prereg_sha256, "section": launches[n].section}
                                        for n in (a.arm, b.arm)}},
                       arms=[{"arm": n, "policy": specs[n].as_dict()} for n in (a.arm, b.arm)],
                       comparison=comparison_record(comp))
    config.video_draw = _check_video_draw(config.video_draw)
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
                      grasp_miss=launch.grasp_miss or 0.0,
                      feature_map=tuple(getattr(launch, "features", None) or ()))


def _resolve_resume(args):
    from engine.driver import RunConfig

    _refuse_decided(args, DECIDED_BY_MANIFEST, "the run's manifest", "a resume runs the rest as the run was started")
    run_dir = args.resume
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--resume {run_dir}: is a file, not a run directory")
    snap = rd.read_snapshot(run_dir)  # the contract's one read of a run's small files, as the console's
    manifest = snap.manifest
    if manifest is None or manifest.config is None:
        problem = snap.unreadable.get(rd.MANIFEST)
        why = f" ({problem})" if problem else ""
        raise UsageError(f"{run_dir} has no readable manifest.json{why}: not a run directory (or it never started)")
    try:
        config = RunConfig.from_dict(manifest.config)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{run_dir / rd.MANIFEST}: its config cannot be read back ({exc}); "
                         "the run cannot be resumed") from None
    recorded = manifest.env or {}
    _check_env(config.env, pin=recorded.get("sha256") if recorded.get("file") else None,
               pinned_by="the run started on")  # the env the run was started on must still be there, unchanged
    return config, Path(run_dir), True


def _check_env(name: str | None, base: Path | None = None, pin: str | None = None,
               pinned_by: str = "the frozen pre-registration pins") -> str:
    """The env's name (an env file's absolute path, relative to `base`), once the registry has it;
    an env file whose content hash is not `pin` is refused (an UnknownEnv or EnvError, or a
    changed file, is bad input: exit 2, nothing written)."""
    from engine.envs import DEFAULT_ENV, check_name, env_sha256, is_env_file

    ref = check_name(DEFAULT_ENV if name is None else name, base)
    if pin and is_env_file(ref):
        have = env_sha256(ref)
        if have != pin:
            raise UsageError(f"--env {name}: the env file changed: its sha256 is {have[:12]}, {pinned_by} {pin[:12]} "
                             "(an env is frozen by content: revert the files, or register the new hash by amendment)")
    return ref


def _list_envs(name: str | None = None) -> int:
    """One line per env; with --env NAME, that env's line and its sha256 (what a plan pins)."""
    from engine.envs import env_sha256, get_env, list_lines

    if name is not None:
        spec = get_env(name)
        print(f"{spec.line()}\tsha256 {env_sha256(name)}", flush=True)
        return 0
    for line in list_lines():
        print(line, flush=True)
    return 0


def execute(args, config, run_dir: Path, resume: bool, argv: list[str]) -> int:
    import dataclasses

    from engine import convmap_cli
    from engine.driver import format_summary, run

    _check_before_writing(args, config)
    if config.record_predicts and config.ray is not None:
        raise UsageError("--record-predicts (or record_predicts: true) is not supported with --ray yet: "
                         "a shard would write predicts.jsonl on its own node; run it locally")
    # a ConvmapUsageError, PolicyError or CheckpointError from here on is bad input (exit 2)
    anchor = convmap_cli.parse_anchor(args.convmap_anchor_deg)
    if anchor is not None and not args.convmap_tripwires:
        raise convmap_cli.ConvmapUsageError("--convmap-anchor-deg is tripwire (b)'s anchor: give --convmap-tripwires too")
    span_limited = convmap_cli.parse_span_limited(args.convmap_span_limited)
    if span_limited and not args.convmap_tripwires:
        raise convmap_cli.ConvmapUsageError("--convmap-span-limited is tripwire (a)'s allowance: give --convmap-tripwires "
                                            "too (a plan registers it as gates.tripwires.coverage.span_limited)")
    if args.convmap_fit_tiebreak == "off" and config.policy.convmap != "fit":
        raise convmap_cli.ConvmapUsageError("--convmap-fit-tiebreak off changes the fit: give --convmap fit too")
    shimmed = config.policy.is_model  # reads the rig table
    if not resume and args.convmap_seam_stats is not None and not shimmed:
        convmap_cli.write_seam_stats(config.policy, config.seeds, config.episode_seconds, args.convmap_seam_stats,
                                     log=_log)
        print(f"fontaine-eval: rig table written to {args.convmap_seam_stats}")
        return 0
    if not resume and config.policy.convmap == "fit" and config.policy.kind.startswith("molmoact2"):
        config = dataclasses.replace(config, policy=convmap_cli.freeze_fit(
            config.policy, args.convmap_seam_stats, declared=args.convmap_declare,
            tiebreak=args.convmap_fit_tiebreak == "on", log=_log))
    convmap_cli.print_resolved_map(config.policy, log=_log)
    if args.convmap_tripwires:
        _preflight_rendering(config)
        passed = convmap_cli.run_tripwires(config.policy, config.seeds, args.convmap_seam_stats, run_dir,
                                           render_size=config.render_size,
                                           anchor_deg=anchor, span_limited=span_limited, log=_log)
        return 0 if passed else 1
    _preflight_rendering(config)
    executor = make_executor(config)  # no Ray where --ray asks for it: a DriverError, nothing written
    lock = _claim_run_dir(run_dir)  # held until the run ends: one writer per run directory
    log_to(run_dir / rd.LOG)  # from here a bug's traceback goes to the run's driver.log
    try:
        if not resume and (run_dir / rd.MANIFEST).exists():
            raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} or another --run-dir")
        print(f"fontaine-eval: run {config.run_id} -> {run_dir}  ({len(config.seeds)} seeds, "
              f"{config.episode_seconds:g} s episodes, {config.workers} worker{'s' if config.workers != 1 else ''}, "
              + (f"arms {' and '.join(config.arm_names())} interleaved by seed" if config.arms else
                 f"policy {config.policy.kind}" + (f" {config.policy.checkpoint}" if config.policy.checkpoint else ""))
              + ")", flush=True)
        # bad input found by the driver (a checkpoint, a cluster) is a UsageError (exit 2), a
        # failure once the run started a RunFailed (exit 1): run_cli prints either as one line
        result = run(config, run_dir, argv=["fontaine-eval", *argv], resume=resume, log=_log, lock=lock,
                     executor=executor)
    finally:
        lock.release()
    print(format_summary(result, run_dir), flush=True)
    for target, name in ((args.out_json, rd.ROWS_SUMMARY), (args.rows_jsonl, rd.ROWS)):
        if target is not None and Path(target).resolve() != (run_dir / name).resolve():
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(run_dir / name, target)
            except OSError as exc:  # checked at the start; the disk may have changed since
                raise RunFailed(f"the run ended {result.state} but {name} could not be copied to {target} "
                                f"({exc.strerror or exc}); it is in {run_dir / name}") from None
    if result.state == rd.FAILED:
        print(f"fontaine-eval: failed: {result.reason}", file=sys.stderr, flush=True)
    return {rd.DONE: rd.EXIT_DONE, rd.STOPPED: rd.EXIT_STOPPED}.get(result.state, rd.EXIT_FAILED)


DEVICE_RE = re.compile(r"cpu|cuda(:[0-9]{1,3})?|mps", re.ASCII)


def _check_before_writing(args, config) -> None:
    """What can be refused before a run directory is written: the copy targets, the device, a
    checkpoint path that is there but cannot be read (each was a traceback or 'driver crashed')."""
    import dataclasses

    for flag, target in (("--out-json", args.out_json), ("--rows-jsonl", args.rows_jsonl)):
        if target is None:
            continue
        target = Path(target)
        if target.is_dir():
            raise UsageError(f"{flag} {target}: is a directory; give a file path for the copy, "
                             f"e.g. {target / (rd.ROWS_SUMMARY if flag == '--out-json' else rd.ROWS)}")
        for part in target.parents:
            if part.exists():
                if not part.is_dir():
                    raise UsageError(f"{flag} {target}: {part} is a file, not a directory; give another path")
                break
    for arm, spec in config.arm_policies():  # the one policy, or a comparison's two
        if spec.device is not None and not DEVICE_RE.fullmatch(spec.device):
            raise UsageError(f"--device {spec.device!r}: not a device this engine runs on; use cpu, cuda or cuda:N "
                             "(or leave it out: cuda when available, else cpu)")
        if spec.kind.startswith("molmoact2") and spec.checkpoint and spec.checkpoint != "tiny":
            from engine.policies.molmoact2.checkpoint import check_local_path

            check_local_path(spec.checkpoint)  # a CheckpointError is bad input: exit 2, nothing written
        if spec.kind == "lerobot":  # download, then every input the checkpoint reads must have a sim source
            from engine.envs import get_env
            from engine.policies.lerobot_policy import check_feeds, check_pin, serving_of

            check_feeds(spec.checkpoint, spec.revision, get_env(config.env).cameras, spec.feature_map)
            if spec.pinned:  # a plan's pin: what loads must be it (checked again at load)
                check_pin(spec.checkpoint, spec.revision)
            mode = serving_of(spec.checkpoint, spec.revision)  # decided once: a worker then reads no checkpoint to know
            if not config.arms:
                config.policy = dataclasses.replace(spec, extra={**spec.extra, "lerobot_serving": mode})
            for entry in config.arms or ():
                if entry["arm"] == arm:
                    entry["policy"] = {**entry["policy"], "extra": {**entry["policy"].get("extra", {}),
                                                                    "lerobot_serving": mode}}


def make_executor(cfg):
    """What runs the episodes: a Ray cluster when the config names one, else this machine.
    Checks now, before anything is written, that Ray can be used (DriverError if not)."""
    from engine.executor import local_executor

    if cfg.ray is None:
        return local_executor
    from engine.scaleout import RayPool, require_ray

    require_ray()

    def ray_executor(cfg, run_dir: Path, policy, n_seeds: int, log):
        return RayPool(cfg, run_dir, log=log, n_seeds=n_seeds)

    return ray_executor


def _log(msg: str) -> None:
    print(msg, flush=True)


def _preflight_rendering(config) -> None:
    """Fail before any episode when frames are needed and no GL library can make a context."""
    needs_frames = (any(spec.is_model for _, spec in config.arm_policies())
                    or config.video_draw.strip().lower() not in ("none", "off"))
    if not needs_frames:
        return
    try:
        import mujoco

        ctx = mujoco.GLContext(16, 16)
        ctx.make_current()
        ctx.free()
    except Exception as exc:  # noqa: BLE001 - any GL failure is the same advice
        raise UsageError(
            f"offscreen rendering is unavailable with MUJOCO_GL={os.environ.get('MUJOCO_GL')} ({exc}); "
            "install Debian's Mesa (apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri, or libosmesa6 with "
            "MUJOCO_GL=osmesa), or run with --video-draw none and a policy that needs no images") from None


def _claim_run_dir(run_dir: Path) -> rd.RunLock:
    """Create the run directory and take its lock; every reason it cannot be used is one line."""
    run_dir = Path(run_dir)
    for part in (run_dir, *run_dir.parents):
        if part.exists():
            if not part.is_dir():
                raise UsageError(f"run directory {run_dir}: {part} is a file, not a directory; choose another --run-dir")
            break
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"run directory {run_dir} cannot be created ({exc.strerror or exc}); "
                         "choose another --run-dir") from None
    if not os.access(run_dir, os.W_OK | os.X_OK):
        raise UsageError(f"run directory {run_dir} is not writable (no write permission); choose another --run-dir")
    try:
        return rd.RunLock(run_dir).acquire()  # RunLocked (another driver writes it) is bad input too
    except OSError as exc:
        raise UsageError(f"run directory {run_dir} cannot be locked ({exc.strerror or exc}); "
                         "choose another --run-dir") from None


def _check_run_id(run_id: str) -> None:
    if not RUN_ID_RE.fullmatch(run_id) or run_id in (".", ".."):
        raise UsageError(f"--run-id {run_id!r}: a run id is one folder name of letters, digits, '.', '_' and '-' "
                         "(at most 128, starting with a letter or digit)")


def _clip_workers(workers: int, n_seeds: int) -> int:
    """No more workers than seeds: the manifest records the count that actually runs."""
    return max(1, min(workers, n_seeds))


def _check_overrides(overrides: list[str]) -> None:
    """Parse and check every --convmap-override whatever the policy: a bad one is never stored."""
    from engine.policies.convmap import PRESETS, ConvMapError, apply_overrides

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


def _check_video_draw(draw: str) -> str:
    """The draw in its one written form (prereg.core.video_draw, the grammar a document's protocol uses too)."""
    try:
        return parse_video_draw(draw)
    except ValueError as exc:
        raise UsageError(f"--video-draw {exc}") from None


def _stamp() -> str:
    return rd.run_stamp()


def _seed_list(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"([0-9]{1,20})(?:-([0-9]{1,20}))?", part)  # ASCII digits only (\d reads '٣' too)
        if not m:
            raise argparse.ArgumentTypeError(f"bad seed {part!r} in {text!r} (use e.g. 0,3,10-19)")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise argparse.ArgumentTypeError(f"empty seed range {part!r}")
        if b > MAX_SEED:
            raise argparse.ArgumentTypeError(f"seed {b} in {text!r} is past the largest seed, {MAX_SEED}")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise argparse.ArgumentTypeError(f"{text!r} names more than {MAX_SEEDS:,} seeds, the most one run takes")
        seeds.extend(range(a, b + 1))
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds repeat in {text!r}")
    return seeds


if __name__ == "__main__":
    sys.exit(main())
