"""A seed's video played in the console, measured in a real terminal (a pty, or tmux), as plain tmux draws it.

    .venv/bin/python benchmarks/bench_seed_video.py [--size 220x60] [--seconds 8] [--video film|synthetic|noise|PATH]
        [--resize 220x60] [--busy 2] [--tmux [--check]] [--baseline]

The video: `film` (the default) films a scripted episode of boat-on-disk with the engine, as a run
does (front | wrist, 10 fps); `synthetic` is a still textured scene with a block moving; `noise` has
fresh noise in every frame (the worst case: every cell changes); or the path of an mp4. The console
starts in a terminal of --size with half-blocks forced (FONTAINE_IMAGES=halfcell, what plain tmux
gets), opens the seed's view, lets it settle, and plays. It prints the frames shown per second
against the file's fps, the CPU the console's process used (all its threads) per wall second while
playing, and what it wrote to the terminal.

--resize WxH: halfway through, the terminal is resized (SIGWINCH, as a window manager or tmux does)
and a key (`v`, which does nothing on the video tab) is pressed at once: the time until the frame is
drawn at the new size and until the key is handled. --busy N: N busy loops (`while True: pass`)
run while it plays (the development box has 2 cores). --tmux: the console runs inside a tmux
session (new-session -d -x W -y H), which is sampled 20 times a second (capture-pane): the pictures a
tmux user sees per second, and the tmux server's CPU too. --check (with --tmux): a tall notification
covers the picture for a third of the run (BENCH_NO_TOAST=1: none); at the end, paused, tmux's
picture must be what Textual's own full repaint draws (the player writes to the terminal itself when
nothing covers it; BENCH_CHECK_DUMP=FILE keeps both). --baseline: the same run with the terminal
output thrown away (a pty nobody reads is never full, so this is the console's own cost).

Goal (issues 27 and 38): the file's own fps at every size, under 30% of a core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pty
import select
import shlex
import shutil
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
from console.widgets.images import VideoFrame
from console.widgets.seed_screen import SeedScreen
import os
if os.environ.get("TILES"):
    VideoFrame.TILES = int(os.environ["TILES"])

from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate

def timed(owner, name, key):  # thread CPU time spent in owner.name, summed under key
    inner = getattr(owner, name)
    def wrapper(*a, **k):
        t = time.thread_time()
        try:
            return inner(*a, **k)
        finally:
            spent[key] = spent.get(key, 0.0) + time.thread_time() - t
    setattr(owner, name, wrapper)
spent = {}
timed(SeedScreen, "show_frame", "the player (cells, splices)")
timed(Compositor, "render_update", "Textual's compositor")
timed(ChopsUpdate, "render_segments", "Textual's escape codes")
timed(LayoutUpdate, "render_segments", "Textual's escape codes")

runs, out, seconds, settle = Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
check = sys.argv[6] == "check"
if hasattr(VideoFrame, "_write_direct"):
    written = VideoFrame._write_direct
    def write_direct(self, keys, changed):
        went = written(self, keys, changed)
        result["direct" if went else "textual"] += 1
        return went
    VideoFrame._write_direct = write_direct
app = FontaineApp(runs_dir=runs, prereg_dirs=[], notifier=None)
run = next(p for p in runs.iterdir() if p.is_dir())
result = {"resized_drawn": [], "keys": [], "resize_seen": [], "direct": 0, "textual": 0}

# what the benchmark observes, noted where it happens (time.monotonic is one clock for every process)
made_keys = VideoFrame.keys  # the tiles ask for the keys when they draw; at a new size they are made afresh
def keys(self):
    size = (self.content_size.height, self.content_size.width)
    if self._keys is None or self._keys.shape != size:
        result["resized_drawn"].append([time.monotonic(), list(app.size), list(size)])
    return made_keys(self)
VideoFrame.keys = keys
tab = SeedScreen.action_tab
def action_tab(self, which):
    result["keys"].append(time.monotonic())
    return tab(self, which)
SeedScreen.action_tab = action_tab
resized = SeedScreen.on_resize
def on_resize(self, event):
    result["resize_seen"].append([time.monotonic(), list(event.size)])
    return resized(self, event)
SeedScreen.on_resize = on_resize

def start():
    screen = SeedScreen(run, run.name, 0)
    app.push_screen(screen)

    def wait_frames():
        if screen.frames is None or not screen.frames_shown:
            app.set_timer(0.1, wait_frames)
            return
        app.set_timer(settle, lambda: play(screen))

    wait_frames()

def play(screen):
    import resource
    frame = screen.query_one(VideoFrame)
    screen.action_play_pause()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0, f0, i0, p0 = time.monotonic(), screen.frames_shown, screen.index, frame.painted
    spent.clear()
    result["play_at"] = t0
    (out.parent / "playing").write_text(repr(t0))  # the benchmark resizes halfway from here
    n = len(screen.frames.images)
    loops = [0]
    last = [screen.index]
    ended = []

    def loop_again():  # a video shorter than the measurement plays again from the start
        if ended:
            return
        if screen.index < last[0]:
            loops[0] += 1
        last[0] = screen.index
        if not screen.playing:
            loops[0] += 1
            screen.action_play_pause()
        app.set_timer(0.05, loop_again)

    def pane(rows):  # what tmux shows on the picture's rows, colours included (--check runs inside tmux)
        import subprocess
        shot = subprocess.run(["tmux", "capture-pane", "-e", "-p", "-t", os.environ["TMUX_PANE"]],
                              capture_output=True, text=True).stdout.split("\n")
        return shot[rows[0]:rows[1]]

    def checked():  # the screen as the player left it, then as Textual draws it all afresh
        box = frame.content_region
        rows = (box.y, box.bottom)
        before = pane(rows)
        app.screen.refresh()
        def again():
            if os.environ.get("BENCH_CHECK_DUMP"):
                Path(os.environ["BENCH_CHECK_DUMP"]).write_text(json.dumps([before, pane(rows)]))
            result["check"] = {"rows": list(rows), "same": before == pane(rows),
                               "differing_rows": sum(a != b for a, b in zip(before, pane(rows)))}
            out.write_text(json.dumps(result))
            app.exit()
        app.set_timer(1.0, again)

    if check and not os.environ.get("BENCH_NO_TOAST"):  # a tall notification over the picture for a third of the run, from a third in
        tall = "\n".join(f"a notification over the picture, line {i}" for i in range(30))
        app.set_timer(seconds / 3, lambda: app.notify(tall, timeout=seconds / 3))

    def done():
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - t0
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        result.update(wall_s=wall, cpu_s=cpu, frames_drawn=screen.frames_shown - f0,
                      frames_advanced=screen.index - i0 + loops[0] * n, fps=screen.frames.fps, n=n,
                      cells_painted=frame.painted - p0, size=list(app.size), frame_cells=list(frame.content_size),
                      spent=dict(spent))
        ended.append(True)
        if check:
            if screen.playing:
                screen.action_play_pause()
            app.set_timer(1.0, checked)
            return
        out.write_text(json.dumps(result))
        app.exit()

    app.set_timer(0.05, loop_again)
    app.set_timer(seconds, done)

app.call_later(lambda: app.set_timer(0.5, start))
app.run()
"""


def write_video(path: Path, seconds: float, fps: float, size=(448, 224), noise: bool = False) -> None:
    """A still textured scene with a block moving right; `noise`: fresh noise in every frame."""
    import numpy as np

    from engine.workers.video import VideoWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // w, yy * 255 // h, (xx + yy) * 255 // (w + h)], axis=-1).astype(np.uint8)
    rng = np.random.default_rng(0)
    texture = rng.integers(-6, 7, base.shape)
    writer = VideoWriter(path, fps=int(fps))
    for i in range(int(seconds * fps)):
        img = base.copy()
        x = int(i * (w - 60) / max(1, seconds * fps - 1))
        img[h // 3: h // 3 + 60, x:x + 60] = (250, 220, 30)
        grain = rng.integers(-6, 7, img.shape) if noise else texture
        writer.add(np.clip(img.astype(np.int16) + grain, 0, 255).astype(np.uint8))
    writer.close()
    if writer.error:
        sys.exit(f"could not write the video: {writer.error}")


def film_episode(path: Path, seed: int = 0) -> None:
    """A scripted episode of boat-on-disk filmed as a run films it (the engine's own worker and encoder)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from engine.policies.factory import PolicySpec
    from engine.run.driver import RunConfig, run

    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(run_id="film", arm="scripted", policy=PolicySpec(kind="scripted"), seeds=[seed],
                        episode_seconds=20.0, workers=1, video_draw="all")
        result = run(cfg, Path(tmp) / "run", log=lambda _m: None)
        (row,) = result.rows
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tmp) / "run" / row["video"], path)


def busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def cpu_s(pid: int) -> float:
    """utime + stime of a process so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def set_size(fd: int, cols: int, rows: int) -> None:
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def run_in_pty(child_argv, env, cols, rows, deadline_s, resize, read=True) -> dict:
    pid, fd = pty.fork()
    if pid == 0:
        set_size(0, cols, rows)
        os.execve(sys.executable, child_argv, env)
    set_size(fd, cols, rows)
    out = {"drained": 0, "pid": pid}
    t_end = time.monotonic() + deadline_s
    resized = False
    while time.monotonic() < t_end:
        if resize and not resized and time.monotonic() >= resize["at"]():
            set_size(fd, *resize["size"])  # the kernel sends SIGWINCH to the pty's foreground process group
            out["resize_sent"] = time.monotonic()
            os.write(fd, b"v")
            out["key_sent"] = time.monotonic()
            resized = True
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            out["drained"] += len(chunk) if read else 0
            if os.environ.get("BENCH_DUMP"):
                with open(os.environ["BENCH_DUMP"], "ab") as f:
                    f.write(chunk)
        elif os.waitpid(pid, os.WNOHANG) != (0, 0):
            break
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    return out


def run_in_tmux(child_argv, env, cols, rows, deadline_s, resize, frame_rows) -> dict:
    """The console in a detached tmux session; its pane sampled 20 times a second."""
    session = f"bench-video-{os.getpid()}"
    cmd = " ".join(shlex.quote(a) for a in child_argv) + "; sleep 2"  # the pane outlives a crash long enough to say so
    passed = ("FONTAINE_IMAGES", "PYTHONPATH", "COLORTERM", "MUJOCO_GL", "BENCH_CHECK_DUMP", "BENCH_NO_TOAST")
    envs = [f"{k}={v}" for k, v in env.items() if k in passed]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(cols), "-y", str(rows),
                    "env", *envs, "bash", "-c", cmd], check=True)
    server = int(subprocess.run(["tmux", "display", "-p", "-t", session, "#{pid}"], capture_output=True,
                                text=True).stdout.strip())
    out = {"samples": [], "tmux_server": server}
    t_end = time.monotonic() + deadline_s
    resized = False
    try:
        while time.monotonic() < t_end:
            t = time.monotonic()
            if resize and not resized and t >= resize["at"]():
                subprocess.run(["tmux", "resize-window", "-t", session, "-x", str(resize["size"][0]),
                                "-y", str(resize["size"][1])])
                out["resize_sent"] = time.monotonic()
                subprocess.run(["tmux", "send-keys", "-t", session, "v"])
                out["key_sent"] = time.monotonic()
                resized = True
            shot = subprocess.run(["tmux", "capture-pane", "-e", "-p", "-t", session], capture_output=True)
            if shot.returncode != 0:
                break
            lines = shot.stdout.split(b"\n")
            picture = b"\n".join(lines[frame_rows[0]:frame_rows[1]])  # the player's rows, colours included
            out["samples"].append((t, hashlib.sha1(picture).hexdigest()))
            out.setdefault("tmux_cpu0", cpu_s(server))
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))
        out["tmux_cpu1"] = cpu_s(server)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--size", default="160x48")
    ap.add_argument("--fps", type=float, default=10.0, help="of the synthetic videos")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds between the first frame and play")
    ap.add_argument("--video", default="film", help="film | synthetic | noise | an mp4's path")
    ap.add_argument("--resize", default=None, help="WxH: resize the terminal to this halfway through")
    ap.add_argument("--busy", type=int, default=0, help="busy loops running meanwhile")
    ap.add_argument("--tmux", action="store_true", help="run inside tmux and count the pictures it shows")
    ap.add_argument("--baseline", action="store_true", help="throw the terminal output away unread")
    ap.add_argument("--check", action="store_true", help="(with --tmux) a notification over the picture a third of "
                    "the way in; at the end, paused, tmux's picture against Textual's own full repaint")
    ap.add_argument("--noise", action="store_true", help="(old spelling of --video noise)")
    args = ap.parse_args()
    if args.noise:
        args.video = "noise"
    cols, rows = (int(v) for v in args.size.split("x"))

    from console.fixtures import make_row, make_run_dir

    tmp = Path(tempfile.mkdtemp(prefix="bench-video-"))
    runs = tmp / "runs"
    d = make_run_dir(runs, "film-scripted-20260101-000000", total=1, done=1,
                     rows=[make_row(0, video="videos/rollout_seed000.mp4")])
    video = d / "videos" / "rollout_seed000.mp4"
    if args.video == "film":
        film_episode(video)
    elif args.video in ("synthetic", "noise"):
        write_video(video, seconds=15.0, fps=args.fps, noise=args.video == "noise")
    else:
        video.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.video, video)
    out = tmp / "result.json"
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", "FONTAINE_IMAGES": "halfcell",
           "PYTHONPATH": str(ROOT)}
    if args.check and not args.tmux:
        sys.exit("--check reads the screen from tmux: add --tmux")
    child = [sys.executable, "-c", CHILD, str(ROOT), str(runs), str(out), str(args.seconds), str(args.settle),
             "check" if args.check else "-"]
    resize = None
    if args.resize:
        size = tuple(int(v) for v in args.resize.split("x"))
        resize = {"size": size, "at": lambda: (_play_at(tmp) or float("inf")) + args.seconds / 2}
    loops = busy_loops(args.busy)
    try:
        if args.tmux:
            got = run_in_tmux(child, env, cols, rows, args.seconds + args.settle + 90, resize, frame_rows=(5, rows - 3))
        else:
            got = run_in_pty(child, env, cols, rows, args.seconds + args.settle + 90, resize, read=not args.baseline)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    if not out.exists():
        sys.exit(f"no result: the console did not finish ({got})")
    report(json.loads(out.read_text()), got, args, cols, rows)
    shutil.rmtree(tmp, ignore_errors=True)


def _play_at(tmp: Path) -> float | None:
    """When play started (the child's note, on the one monotonic clock)."""
    marker = tmp / "playing"
    try:
        return float(marker.read_text())
    except (OSError, ValueError):
        return None


def report(r: dict, got: dict, args, cols: int, rows: int) -> None:
    achieved = r["frames_advanced"] / r["wall_s"]
    share = r["cpu_s"] / r["wall_s"]
    what = {"film": "a filmed scripted episode", "synthetic": "a still textured scene, a block moving",
            "noise": "fresh noise in every frame"}.get(args.video, args.video)
    print(f"terminal {cols}x{rows}{' in tmux' if args.tmux else ''}, half-blocks, video {r['n']} frames at "
          f"{r['fps']:g} fps ({what}); player {r['frame_cells'][0]}x{r['frame_cells'][1]} cells"
          + (f"; {args.busy} busy loops running" if args.busy else ""))
    print(f"played {r['wall_s']:.1f} s: {r['frames_advanced']} frames advanced ({r['frames_drawn']} drawn), "
          f"{achieved:.2f} fps achieved / {r['fps']:g} nominal = {achieved / r['fps']:.0%}; "
          f"{r['cells_painted'] / max(1, r['frames_drawn']):.0f} cells repainted a frame")
    line = f"CPU while playing: {share:.0%} of a core (goal < 30%)"
    if "drained" in got and not args.baseline:
        line += f"; terminal output {got['drained'] / r['wall_s'] / 1024:.0f} KiB/s"
    print(line)
    drawn = max(1, r["frames_drawn"])
    print("  of which, per frame drawn: " + ", ".join(f"{k} {1000 * v / drawn:.1f} ms" for k, v in r["spent"].items())
          + f"; everything else {1000 * (r['cpu_s'] - sum(r['spent'].values())) / drawn:.1f} ms")
    ok = achieved >= 0.95 * r["fps"] and share < 0.30
    if args.tmux:
        samples = [(t, h) for t, h in got["samples"] if r["play_at"] <= t <= r["play_at"] + r["wall_s"]]
        changes = sum(1 for (_, a), (_, b) in zip(samples, samples[1:]) if a != b)
        seen = changes / r["wall_s"]
        tmux_share = (got["tmux_cpu1"] - got["tmux_cpu0"]) / max(1e-9, samples[-1][0] - samples[0][0]) if samples else 0
        print(f"tmux showed {seen:.1f} different pictures a second (sampled at 20 Hz: at most ~10 can show "
              f"as different at 10 fps); tmux server CPU {tmux_share:.0%} of a core (the capture-pane calls included)")
        ok = ok and seen >= 0.9 * r["fps"]
    if args.resize and got.get("resize_sent"):
        sent = got["resize_sent"]
        drawn = [t for t, app_size, _ in r["resized_drawn"] if t >= sent and app_size == list(map(int, args.resize.split("x")))]
        keys = [t for t in r["keys"] if t >= got["key_sent"]]
        print(f"resized to {args.resize} while playing: the frame drawn at the new size "
              + (f"{drawn[0] - sent:.2f} s" if drawn else "never") + " after the resize; a key pressed with it handled "
              + (f"{keys[0] - got['key_sent']:.2f} s" if keys else "never") + " after")
    if r["direct"] or r["textual"]:
        print(f"frames written straight to the terminal: {r['direct']}, Textual's way: {r['textual']}")
    if "check" in r:
        c = r["check"]
        print(f"check: tmux's picture (rows {c['rows'][0]}-{c['rows'][1] - 1}) after playing "
              + ("is the same as" if c["same"] else f"DIFFERS ({c['differing_rows']} rows) from") + " Textual's own repaint")
        ok = ok and c["same"]
    print("goal met" if ok else "goal NOT met")


if __name__ == "__main__":
    main()
