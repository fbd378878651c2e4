"""`fontaine-eval`: run (or resume) an evaluation into a run directory.

Bad input (an unknown flag value, a seed count out of bounds, a run directory that cannot be
written or is being written by another process, a missing GL library, a checkpoint that cannot
be loaded, an unfrozen or edited pre-registration, a flag the pre-registration decides) gets one
clear line on stderr and exit code 2, never a traceback. Exit codes: prereg.core.errors.EXIT_* (0
done, 1 failed, 2 bad input, 3 stopped); the table is in docs/run-directory.md. Every error is
mapped to its line and code in one place, prereg.core.errors.run_cli, by its class.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from engine.cli.parser import build_parser, explicit_flags  # noqa: E402 - MUJOCO_GL must be set before anything imports mujoco
from engine.cli.resolve import check_ray_host, resolve  # noqa: E402
from prereg import rundir as rd  # noqa: E402
from prereg.core.argcheck import parse_once  # noqa: E402
from prereg.core.errors import EXIT_DONE, EXIT_FAILED, EXIT_STOPPED, RunFailed, UsageError, log_to, run_cli  # noqa: E402
from prereg.core.safe_read import NotWritable, check_output  # noqa: E402
from prereg.core.untrusted import say  # noqa: E402
from prereg.core.vocabulary import PLUGIN  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_cli("fontaine-eval", lambda: _main(argv))


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_once(parser, argv)
    args.explicit = explicit_flags(parser, argv)
    if args.list_envs:
        return _list_envs(args.env)
    from engine.envs import pinned

    if args.sim_predictions is not None:
        return _sim_predictions(args)
    try:
        config, run_dir, resume = resolve(args)  # an env file is read once here (engine/envs/pinned.py) ...
        return execute(args, config, run_dir, resume, argv)
    finally:
        pinned.clear()  # ... and its bytes kept for this run only


def _sim_predictions(args) -> int:
    """`--sim-predictions DIR`: the run's recorded config (as a resume reads it) and its plan's real read
    decide everything (engine/run/predictions.py)."""
    from engine.envs import pinned
    from engine.run.predictions import run_predictions

    others = sorted(opt for dest, opt in args.explicit.items() if dest != "sim_predictions")
    if others:
        raise UsageError(f"--sim-predictions DIR takes no other flag (got {', '.join(others)}): the run's manifest "
                         "and its plan's reads.real decide the policy, env, seeds, K and jitter")
    args.resume = args.sim_predictions
    try:
        config, run_dir, _ = resolve(args)
        summary = run_predictions(config, run_dir, log=_log)
    finally:
        pinned.clear()
    say(f"fontaine-eval: sim predictions of {run_dir}: {summary['written']} written, {summary['skipped']} already "
        f"there, {summary['setups']} setup(s) of selected seeds written", flush=True)
    return EXIT_DONE


def _list_envs(name: str | None = None) -> int:
    """One line per env; with --env NAME, that env's line and its sha256 (what a plan pins)."""
    from engine.envs import env_sha256, get_env, list_lines
    from engine.envs.registry import reach_column

    if name is not None:
        spec = get_env(name)
        say(f"{spec.line()}\tsha256 {env_sha256(name)}\t{reach_column(name)}", flush=True)
        return 0
    for line in list_lines(reach=True):
        say(line, flush=True)
    return 0


def execute(args, config, run_dir: Path, resume: bool, argv: list[str]) -> int:
    import dataclasses

    from engine.cli import convmap as convmap_cli
    from engine.process import terminal
    from engine.record.summary import format_summary
    from engine.run.driver import run

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
        say(f"fontaine-eval: rig table written to {args.convmap_seam_stats}")
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
    terminal.detach(run_dir / rd.LOG)  # from here a closed terminal fails no write (engine/process/terminal.py)
    try:
        if not resume and (run_dir / rd.MANIFEST).exists():
            raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} or another --run-dir")
        crossed = (f" x {1 + len(config.variants)} variants (base, {', '.join(config.variants)}; "
                   f"{len(config.jobs())} episodes)" if config.variants else "")
        say(f"fontaine-eval: run {config.run_id} -> {run_dir}  ({len(config.seeds)} seeds{crossed}, "
              f"{config.episode_seconds:g} s episodes, {config.workers} worker{'s' if config.workers != 1 else ''}, "
              + (f"arms {' and '.join(config.arm_names())} interleaved by seed" if config.arms else
                 f"policy {config.policy.kind}" + (f" {config.policy.checkpoint}" if config.policy.checkpoint else ""))
              + ")", flush=True)
        # bad input found by the driver (a checkpoint, a cluster) is a UsageError (exit 2), a
        # failure once the run started a RunFailed (exit 1): run_cli prints either as one line
        result = run(config, run_dir, argv=["fontaine-eval", *argv], resume=resume, log=_log, lock=lock,
                     executor=executor, term_grace_s=args.term_grace_s)
    finally:
        lock.release()
        terminal.reattach()  # the terminal back on stdout and stderr, or driver.log once it is gone
    say(format_summary(result, run_dir), flush=True)
    for target, name in ((args.out_json, rd.ROWS_SUMMARY), (args.rows_jsonl, rd.ROWS)):
        if target is not None and Path(target).resolve() != (run_dir / name).resolve():
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                check_output(target)  # again: the path may have become a device or a FIFO during the run
                shutil.copyfile(run_dir / name, target)
            except (OSError, NotWritable) as exc:  # checked at the start; the disk may have changed since
                why = exc.why if isinstance(exc, NotWritable) else exc.strerror or exc
                raise RunFailed(f"the run ended {result.state} but {name} could not be copied to {target} "
                                f"({why}); it is in {run_dir / name}") from None
    if result.state == rd.FAILED:
        say(f"fontaine-eval: failed: {result.reason}", file=sys.stderr, flush=True)
    return {rd.DONE: EXIT_DONE, rd.STOPPED: EXIT_STOPPED}.get(result.state, EXIT_FAILED)


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
        try:  # a FIFO, a device, a symlink loop: refused now, not after the whole run (the copy would wait on a FIFO)
            check_output(target)
        except NotWritable as exc:
            raise UsageError(f"{flag} {target}: {exc.why}; give a file path for the copy") from None
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
        if spec.kind == PLUGIN and spec.pinned:  # a plan's plugin arm: the installed package must be the pinned one
            from engine.policies.plugins import check_pin as check_plugin_pin

            check_plugin_pin(spec.checkpoint, spec.revision)
        if spec.kind == "lerobot":  # download, then every input the checkpoint reads must have a sim source
            from engine.envs import get_env
            from engine.policies.lerobot_policy import check_feeds, check_pin, probe, serving_of

            check_feeds(spec.checkpoint, spec.revision, get_env(config.env).cameras, spec.feature_map)
            if spec.pinned:  # a plan's pin: what loads must be it (checked again at load)
                check_pin(spec.checkpoint, spec.revision)
            mode = serving_of(spec.checkpoint, spec.revision)  # decided once: a worker then reads no checkpoint to know
            # the files as hashed now: the driver and every worker load exactly these or refuse, naming the file
            extra = {"lerobot_serving": mode, "lerobot_files": dict(probe(spec.checkpoint, spec.revision).files)}
            if not config.arms:
                config.policy = dataclasses.replace(spec, extra={**spec.extra, **extra})
            for entry in config.arms or ():
                if entry["arm"] == arm:
                    entry["policy"] = {**entry["policy"], "extra": {**entry["policy"].get("extra", {}), **extra}}


def make_executor(cfg):
    """What runs the episodes: a Ray cluster when the config names one, else this machine.
    Checks now, before anything is written, that Ray can be used (DriverError if not)."""
    from engine.workers.executor import local_executor

    if cfg.ray is None:
        return local_executor
    check_ray_host(str(cfg.ray.get("address") or "auto"))  # before Ray is imported: its start is slow and loud
    from engine.scaleout.connect import require_ray
    from engine.scaleout.ray_pool import RayPool

    require_ray()

    def ray_executor(cfg, run_dir: Path, policy, n_seeds: int, log):
        return RayPool(cfg, run_dir, log=log, n_seeds=n_seeds)

    return ray_executor


def _log(msg: str) -> None:
    say(msg, flush=True)


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


if __name__ == "__main__":
    sys.exit(main())
