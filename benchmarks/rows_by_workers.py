"""Do a run's rows depend on the number of workers? A tiny random ACT (served in the driver) run by
`fontaine-eval` with 1 worker and with N, once per serving mode, and the rows compared seed by seed.

    .venv/bin/python benchmarks/rows_by_workers.py [--seeds 0-5] [--workers 3] [--episode-seconds 2]

Prints, per mode (`--serving invariant`, the default; `--serving batched`), on how many seeds the
first action (first_action_delta_deg) and the final distance are equal, bit for bit, between the two
runs, the largest first-action difference, and the mean batch the N-worker run served: what
docs/policies.md quotes. A measurement, not a test (how batched kernels round is the machine's):
tests/engine/test_lerobot_episodes.py holds the invariant mode to equality.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-5")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--episode-seconds", default="2")
    args = parser.parse_args()
    from tests.engine.lerobot_fixtures import build_checkpoint

    tmp = Path(tempfile.mkdtemp(prefix="rows-by-workers-"))
    ckpt = build_checkpoint(tmp / "act", "act")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    for mode in ("invariant", "batched"):
        rows = {}
        for workers in (1, args.workers):
            run_dir = tmp / f"{mode}-{workers}"
            subprocess.run([sys.executable, "-m", "engine.cli", "--lerobot", str(ckpt), "--seeds", args.seeds,
                            "--workers", str(workers), "--episode-seconds", args.episode_seconds, "--render-size", "48",
                            "--video-draw", "none", "--device", "cpu", "--serving", mode, "--run-dir", str(run_dir)],
                           cwd=REPO, env=env, check=True, capture_output=True)
            rows[workers] = sorted((json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()),
                                   key=lambda r: r["seed"])
        one, many = rows[1], rows[args.workers]
        first = sum(a["first_action_delta_deg"] == b["first_action_delta_deg"] for a, b in zip(one, many))
        final = sum(a["dist_final_cm"] == b["dist_final_cm"] for a, b in zip(one, many))
        worst = max(abs(x - y) for a, b in zip(one, many)
                    for x, y in zip(_joints(a["first_action_delta_deg"]), _joints(b["first_action_delta_deg"])))
        batch = sum(r["mean_batch"] or 0 for r in many) / len(many)
        print(f"{mode:9}  1 vs {args.workers} workers: first actions equal on {first}/{len(one)} seeds (largest "
              f"difference {worst:.3g} deg), final distances on {final}/{len(one)}; mean batch served {batch:.2f}")
    return 0


def _joints(v) -> list[float]:
    return list(v) if isinstance(v, list) else [v]


if __name__ == "__main__":
    sys.exit(main())
