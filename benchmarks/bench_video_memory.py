"""What x264's lookahead costs a filming worker, and what it buys: the same oracle frames encoded
at several `rc-lookahead` values, each in a fresh process, by engine.workers.video.VideoWriter.

Prints, per lookahead: the file's size, the PSNR of the decoded frames against the rendered ones
(mean and worst frame; RGB, so yuv420p's halved chroma is in it whatever the lookahead), the
encoder's peak added anonymous memory (sampled every 3 ms while it encodes) and the encode's wall.
The value engine.workers.video.LOOKAHEAD uses is marked.

Usage: .venv/bin/python benchmarks/bench_video_memory.py [--seeds 3 7] [--episode-seconds 12] [--lookahead 10 5 3]
(bench_driver.py --only workers gives a filming worker's whole peak RSS.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MUJOCO_GL", "egl")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[3, 7])
    ap.add_argument("--episode-seconds", type=float, default=12.0)
    ap.add_argument("--lookahead", type=int, nargs="+", default=[10, 5, 3])
    ap.add_argument("--encode", nargs=2, metavar=("LOOKAHEAD", "FRAMES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.encode:
        encode(int(args.encode[0]), Path(args.encode[1]))
        return
    from engine.workers.video import LOOKAHEAD

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "frames.npy"
        n = render(args.seeds, args.episode_seconds, path)
        print(f"{n} frames (front | wrist, 224 px a side) of the scripted oracle, seeds {args.seeds}:")
        for lookahead in args.lookahead:
            out = subprocess.run([sys.executable, __file__, "--encode", str(lookahead), str(path)],
                                 capture_output=True, text=True, check=True).stdout.strip()
            print(f"  {out}{'  <- engine.workers.video.LOOKAHEAD' if lookahead == LOOKAHEAD else ''}")


def render(seeds, episode_seconds: float, path: Path) -> int:
    import numpy as np

    from engine.envs import get_env
    from engine.policies.factory import PolicySpec, make_policy
    from engine.workers.episode import run_episode

    env = get_env("boat-on-disk").create(render_size=224)
    policy = make_policy(PolicySpec(kind="scripted"))
    frames: list = []
    for seed in seeds:
        run_episode(env, seed, episode_seconds, lambda obs: policy.predict_batch([obs])[0],
                    chunk_horizon=policy.chunk_horizon, needs_images=False, needs_privileged=True,
                    frame_sink=frames.append, stop_on_success=False)
    np.save(path, np.stack(frames))
    return len(frames)


def encode(lookahead: int, frames_path: Path) -> None:
    import av
    import numpy as np

    from engine.workers import video

    frames = np.load(frames_path)
    video.LOOKAHEAD = lookahead
    base = _anon_mb()
    peak, done = [base], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _anon_mb())
            time.sleep(0.003)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = frames_path.with_name(f"lookahead{lookahead}.mp4")
    t0 = time.perf_counter()
    writer = video.VideoWriter(out)
    for frame in frames:
        writer.add(frame)
    writer.close()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    if writer.error:
        raise SystemExit(writer.error)
    with av.open(str(out)) as container:
        decoded = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])
    if len(decoded) != len(frames):
        raise SystemExit(f"{len(decoded)} frames decoded of {len(frames)}")
    mse = ((decoded.astype(float) - frames.astype(float)) ** 2).mean(axis=(1, 2, 3))
    psnr = 10 * np.log10(255**2 / np.maximum(mse, 1e-9))
    print(f"lookahead {lookahead:2d}: {out.stat().st_size / 1e3:6.0f} kB, PSNR mean {psnr.mean():.2f} dB "
          f"(worst frame {psnr.min():.2f}), encoder's peak +{peak[0] - base:.1f} MB anonymous, {wall:.2f} s")


def _anon_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    main()
