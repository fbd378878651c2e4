"""A seed's video played in the console, measured in a real pseudo-terminal (as in plain tmux).

    .venv/bin/python benchmarks/bench_seed_video.py [--seconds 8] [--size 160x48] [--fps 10]

Writes a 15 s video of textured, moving frames at 640x240 (the size the seed view decodes to)
into a run directory, starts the console in a pty of --size with half-blocks forced
(FONTAINE_IMAGES=halfcell, what plain tmux gets), opens the seed's view, plays for --seconds, and
prints the frames shown per second against the file's fps and the CPU the console's process used
(all its threads) per wall second while playing, the terminal's output drained throughout.
Goal (issue 27): the file's own fps, under 30% of a core.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from console.app import FontaineApp
from console.widgets.seed_screen import SeedScreen

runs, out, seconds, settle = Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
app = FontaineApp(runs_dir=runs, prereg_dirs=[], notifier=None)
run = next(p for p in runs.iterdir() if p.is_dir())
result = {}

def start():
    screen = SeedScreen(run, run.name, 0)
    app.push_screen(screen)

    def wait_frames():
        if screen.frames is None or not screen.frames_shown:
            app.set_timer(0.1, wait_frames)
            return
        app.set_timer(settle, lambda: play(screen))  # every frame rendered ahead before measuring

    wait_frames()

def play(screen):
    import resource
    screen.action_play_pause()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0, f0, i0 = time.monotonic(), screen.frames_shown, screen.index

    def done():
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - t0
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        result.update(wall_s=wall, cpu_s=cpu, frames_drawn=screen.frames_shown - f0,
                      frames_advanced=screen.index - i0, fps=screen.frames.fps, n=len(screen.frames.images),
                      size=list(app.size))
        out.write_text(json.dumps(result))
        app.exit()

    app.set_timer(seconds, done)

app.call_later(lambda: app.set_timer(0.5, start))
app.run()
"""


def write_video(path: Path, seconds: float, fps: float, size=(640, 240), noise: bool = False) -> None:
    import imageio.v2 as imageio
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // w, yy * 255 // h, (xx + yy) * 255 // (w + h)], axis=-1).astype(np.uint8)
    rng = np.random.default_rng(0)
    texture = rng.integers(-6, 7, base.shape)  # a still scene's texture; --noise: new in every frame
    with imageio.get_writer(str(path), fps=fps, codec="libx264", quality=7, macro_block_size=1) as writer:
        for i in range(int(seconds * fps)):
            img = base.copy()
            x = int(i * (w - 60) / max(1, seconds * fps - 1))
            img[h // 3: h // 3 + 60, x:x + 60] = (250, 220, 30)  # a block that moves right
            grain = rng.integers(-6, 7, img.shape) if noise else texture
            img = np.clip(img.astype(np.int16) + grain, 0, 255).astype(np.uint8)
            writer.append_data(img)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--size", default="160x48")
    ap.add_argument("--fps", type=float, default=10.0)
    ap.add_argument("--settle", type=float, default=5.0, help="seconds between the first frame and play")
    ap.add_argument("--noise", action="store_true", help="fresh noise in every frame (worst case: every cell changes)")
    args = ap.parse_args()
    cols, rows = (int(v) for v in args.size.split("x"))

    from console.fixtures import make_row, make_run_dir

    tmp = Path(tempfile.mkdtemp(prefix="bench-video-"))
    runs = tmp / "runs"
    d = make_run_dir(runs, "film-scripted-20260101-000000", total=1, done=1,
                     rows=[make_row(0, video="videos/rollout_seed000.mp4")])
    write_video(d / "videos" / "rollout_seed000.mp4", seconds=15.0, fps=args.fps, noise=args.noise)
    out = tmp / "result.json"

    pid, fd = pty.fork()
    if pid == 0:  # the child: the console in the pty
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", "FONTAINE_IMAGES": "halfcell"}
        os.execve(sys.executable, [sys.executable, "-c", CHILD, str(ROOT), str(runs), str(out), str(args.seconds),
                                                str(args.settle)], env)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    drained = 0
    deadline = time.monotonic() + args.seconds + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            drained += len(chunk)
        elif os.waitpid(pid, os.WNOHANG) != (0, 0):
            break
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    if not out.exists():
        sys.exit(f"no result: the console did not finish (terminal output {drained:,} bytes)")
    r = json.loads(out.read_text())
    achieved = r["frames_advanced"] / r["wall_s"]
    share = r["cpu_s"] / r["wall_s"]
    print(f"terminal {cols}x{rows}, half-blocks, video {r['n']} frames at {r['fps']:g} fps"
          + (" (fresh noise in every frame)" if args.noise else " (a still textured scene, a block moving)"))
    print(f"played {r['wall_s']:.1f} s: {r['frames_advanced']} frames advanced ({r['frames_drawn']} drawn), "
          f"{achieved:.2f} fps achieved / {r['fps']:g} nominal = {achieved / r['fps']:.0%}")
    print(f"CPU while playing: {share:.0%} of a core (goal < 30%); terminal output {drained / r['wall_s'] / 1024:.0f} KiB/s")
    ok = achieved >= 0.95 * r["fps"] and share < 0.30
    print("goal met" if ok else "goal NOT met")
    subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    main()
