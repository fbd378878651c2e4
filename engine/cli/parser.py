"""`fontaine-eval`'s command line: its flags, their bounds, and which of them a frozen document or a
run's manifest decides (given with --prereg or --resume, such a flag is refused, never ignored).

Every number is read as ASCII digits within its bounds (prereg.core.argcheck), abbreviations are off
and no flag may be given twice: bad input is one line and exit 2 (prereg.core.errors.run_cli).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from prereg.core.argcheck import (
    OneLineParser,
    bounded_float,
    bounded_int,
    nonneg_float,
    nonneg_int,
    path_type,
    positive_float,
    positive_int,
    probability,
)
from prereg.core.limits import (  # one bound for the flags, the documents and a resumed manifest
    DEFAULT_TERM_GRACE_S,
    MAX_EPISODE_SECONDS,
    MAX_SEED,
    MAX_SEEDS,
    MAX_TERM_GRACE_S,
    MAX_WORKERS,
    MIN_EPISODE_SECONDS,
)
from prereg.core.vocabulary import COMMIT_RE, CONVMAPS, DTYPES, SERVINGS  # the one vocabulary, shared with the documents

MAX_BATCH_WAIT_MS = 60_000.0  # a batch waits at most a minute for its workers (1e12 ms was taken)
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

# Flags a frozen pre-registration decides (given with --prereg they are refused, never ignored);
# with --resume the run's manifest decides them all.
DECIDED_BY_DOCUMENT = (
    "policy", "molmoact2", "molmoact2_discrete", "molmoact2_grammar_masked", "dtype", "flow_steps", "norm_tag",
    "task", "convmap", "convmap_override", "convmap_declare", "seed", "num_seeds", "seeds", "episode_seconds",
    "workers", "video_draw", "gpu_hours_gate", "pace_limit_hours", "pace_after_episodes", "revision",
    "convmap_fit_tiebreak", "env", "grasp_miss", "grasp_drop", "lerobot", "lerobot_map", "fast_revision",
)
DECIDED_BY_MANIFEST = DECIDED_BY_DOCUMENT + (
    "prereg", "arm", "arms", "run_id", "run_dir", "runs_dir", "batch_wait_ms", "batch_wait_max_ms", "render_size",
    "video_size", "gpus", "device", "serving",
    "ray", "ray_shards", "ray_gpus_per_shard", "ray_dashboard",
)


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


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="fontaine-eval", description="Run a policy evaluation on the embedded SO-101 boat scene.",
                allow_abbrev=False)  # an abbreviated flag would slip past the pre-registration's check
    pol = p.add_argument_group("policy")
    pol.add_argument("--policy", metavar="NAME", type=text_arg,
                     help="scripted (the oracle), hold (the state-copy baseline), or a lab's own policy: a "
                          "fontaine.policies entry point (docs/policies.md)")
    pol.add_argument("--lerobot", metavar="CKPT", type=checkpoint_arg,
                     help="a lerobot policy checkpoint (ACT, Diffusion, SmolVLA, ...): a local directory or a "
                          "Hugging Face id (downloaded; --revision pins it), loaded with lerobot's factory")
    pol.add_argument("--lerobot-map", action="append", default=[], metavar="FEATURE=SOURCE",
                     help="feed a checkpoint input from a sim camera or 'state' when the names differ, e.g. "
                          "observation.images.top=front (default: by name)")
    pol.add_argument("--molmoact2", metavar="CKPT", type=checkpoint_arg,
                     help="MolmoAct2 flow pathway: a local directory, a Hugging Face id (downloaded), or 'tiny'")
    pol.add_argument("--revision", type=text_arg,
                     help="the Hugging Face commit, branch or tag to download (default main); the manifest records the commit")
    pol.add_argument("--molmoact2-discrete", metavar="CKPT", type=checkpoint_arg, help="MolmoAct2 discrete (token) pathway")
    pol.add_argument("--molmoact2-grammar-masked", action="store_true", help="discrete pathway with the grammar-masked decode")
    pol.add_argument("--fast-revision", metavar="COMMIT", type=commit_arg,
                     help="discrete pathway: the 40-hex commit of allenai/MolmoAct2-FAST-Tokenizer to fetch (a checkpoint "
                          "with its own action_tokenizer/ needs none); the manifest records it")
    pol.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    pol.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    pol.add_argument("--serving", choices=list(SERVINGS), default=None,
                     help="a policy served in the driver: invariant (each observation alone, bit for bit its batch-1 "
                          "action: rows independent of the number of workers and of timing; the default, but for "
                          "MolmoAct2) or batched (the waiting observations in one call: faster, rows batch-dependent)")
    pol.add_argument("--flow-steps", type=bounded_int(1, 1000), default=10)
    pol.add_argument("--norm-tag", default="so100_so101_molmoact2")
    pol.add_argument("--task", default=None, type=text_arg, help="task text (default: 'put the boat on the disk')")
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
    pol.add_argument("--grasp-drop", type=probability, default=None, metavar="P",
                     help="the scripted oracle's drop knob: the probability (seeded per seed, its own stream) that "
                          "it lets go of its grasp after the lift, so 'grasped then dropped' is exercised")
    pol.add_argument("--inject-latency-ms", type=nonneg_float, default=0.0, help=argparse.SUPPRESS)

    proto = p.add_argument_group("protocol")
    proto.add_argument("--seed", type=bounded_int(0, MAX_SEED), default=0, help="first seed")
    proto.add_argument("--num-seeds", type=bounded_int(1, MAX_SEEDS), default=None,
                       help=f"number of consecutive seeds (default 10, at most {MAX_SEEDS:,})")
    proto.add_argument("--seeds", type=seed_list, default=None, help="explicit seeds, e.g. 0,3,10-19")
    proto.add_argument("--episode-seconds", type=bounded_float(MIN_EPISODE_SECONDS, MAX_EPISODE_SECONDS, inclusive=True),
                       default=30.0,
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
    proto.add_argument("--batch-wait-ms", type=bounded_float(0, MAX_BATCH_WAIT_MS, inclusive=True), default=20.0,
                       help="shortest wait to fill a batch (it adapts to the workers' chunk time)")
    proto.add_argument("--batch-wait-max-ms", type=bounded_float(0, MAX_BATCH_WAIT_MS, inclusive=True), default=1000.0,
                       help=f"longest wait to fill a batch (at most {MAX_BATCH_WAIT_MS:g})")
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
    out.add_argument("--term-grace-s", type=bounded_float(0, MAX_TERM_GRACE_S, inclusive=True), default=DEFAULT_TERM_GRACE_S,
                     metavar="S", help=f"on SIGTERM, how long the episodes in flight may take to finish (default "
                                       f"{DEFAULT_TERM_GRACE_S:g}); past it they are abandoned, owed to --resume, and the "
                                       "run ends `stopped` (a STOP file, the console's `s`, waits for the boundary)")
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


# --------------------------------------------------------------------------- argument types


def checkpoint_arg(text: str) -> str:
    """A checkpoint: a Hugging Face id, a local directory or 'tiny'; never empty (`--lerobot ''` ran the oracle)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty checkpoint: give a Hugging Face id, a local directory or 'tiny'")
    return text


def commit_arg(text: str) -> str:
    """A commit, as a pin is: 40 hexadecimal digits (a branch or a tag does not freeze what loads)."""
    if not COMMIT_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text[:60]!r} is not a commit: give the 40-hex commit (see docs/molmoact2.md)")
    return text


def text_arg(text: str) -> str:
    """A word or a sentence a run records: never empty or blank (`--task ''` ran with no instruction)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; give a value or leave the flag out")
    return text


# --------------------------------------------------------------------------- resolution


def seed_list(text: str) -> list[int]:
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
