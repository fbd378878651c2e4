"""How long a key takes in the console, alone and right after a terminal resize (issue 49).

    .venv/bin/python benchmarks/bench_console_keys.py [--keys 12] [--busy 0]

The app (headless, Textual's Pilot) shows a runs folder of a comparison run and five one-arm runs of
100 rows; up/down move between runs (each move draws the newly selected run's panels). Prints:

  1. a key alone: press to screen refreshed, median over --keys presses (the baseline);
  2. a key pressed right after a resize (cycling 200x60, 120x40, 80x24, 160x48, from 120x40): the same,
     the resize's own work (restyle, layout, redraw at the new size) queued before it;
  3. their ratio, both measured in this run (the machine's load falls on both alike), and what one
     resize cost: layout passes and restyles of the screen's widgets, per resize;
  4. the CPU time of the app's thread in the 1.2 s after a resize, less that of 1.2 s with no resize
     (its timers, a followed run): the work a resize makes, which the load on the machine does not
     change as it changes the latencies above (median over --keys resizes).

--busy N starts N busy loops (a loaded machine, as the issue was seen on) for the run's length.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from console.app import FontaineApp  # noqa: E402
from console.fixtures import make_row, make_run_dir  # noqa: E402

SIZES = [(200, 60), (120, 40), (80, 24), (160, 48)]
START = (120, 40)


def build(root: Path) -> Path:
    from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run

    runs = root / "runs"
    make_comparison_run(compare_doc(root), runs / "demo-compare-clumsy-vs-steady-20260101-000000",
                        comparison_rows([s < 4 for s in range(12)], [True] * 12))
    for i in range(5):
        make_run_dir(runs, f"flow-officialmap-a-2026010{i + 2}-000000", arm="a", total=100, done=100,
                     rows=[make_row(s, arm="a") for s in range(100)])
    return runs


def counting(counts: collections.Counter):
    """Count the screen's layout passes and restyles (Textual's own methods, wrapped for this run)."""
    from textual.css.stylesheet import Stylesheet
    from textual.screen import Screen

    for cls, name in ((Screen, "_refresh_layout"), (Stylesheet, "update_nodes")):
        original = getattr(cls, name)

        def wrapped(*a, _original=original, _name=name, **k):
            counts[_name] += 1
            return _original(*a, **k)

        setattr(cls, name, wrapped)


async def measure(runs: Path, keys: int, counts: collections.Counter) -> dict:
    app = FontaineApp(runs_dir=runs, prereg_dirs=[], poll_s=0.5, notifier=None)
    alone, after, per_resize = [], [], []
    async with app.run_test(size=START) as pilot:
        deadline = time.monotonic() + 60
        while (app.detail is None or app.detail.loading or len(app.runs) < 6) and time.monotonic() < deadline:
            await pilot.pause(0.05)

        async def press(i: int) -> float:
            t0 = time.perf_counter()
            await pilot.press("down" if i % 2 == 0 else "up")
            await pilot.pause()
            return time.perf_counter() - t0

        await asyncio.sleep(1.0)
        for i in range(keys):
            alone.append(await press(i))
            await asyncio.sleep(0.3)  # the newly selected run drawn, the machine back to idle
        for i in range(keys):
            counts.clear()
            await pilot.resize_terminal(*SIZES[i % len(SIZES)])
            after.append(await press(i))
            await asyncio.sleep(1.2)  # the resize and the key's redraws done (the panels redraw at most once a second)
            per_resize.append(dict(counts))
        cpu = []  # the app runs on this thread (run_test): its CPU time, the watcher's thread apart
        for i in range(keys):
            t0 = time.thread_time()
            await asyncio.sleep(1.2)
            idle = time.thread_time() - t0
            t0 = time.thread_time()
            await pilot.resize_terminal(*SIZES[(i + 1) % len(SIZES)])
            await asyncio.sleep(1.2)
            cpu.append(time.thread_time() - t0 - idle)
    return {"alone": alone, "after": after, "per_resize": per_resize, "cpu": cpu}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=12, help="presses measured each way")
    ap.add_argument("--busy", type=int, default=0, help="busy loops to run alongside (a loaded machine)")
    args = ap.parse_args(argv)
    if args.keys < 1 or args.busy < 0:
        ap.error(f"--keys must be at least 1 and --busy at least 0 (got {args.keys}, {args.busy})")
    root = Path(tempfile.mkdtemp(prefix="bench-keys-"))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    counts: collections.Counter = collections.Counter()
    counting(counts)
    try:
        got = asyncio.run(measure(build(root), args.keys, counts))
    finally:
        for p in busy:
            p.kill()
            p.wait()
        shutil.rmtree(root, ignore_errors=True)
    alone, after = statistics.median(got["alone"]), statistics.median(got["after"])
    layouts = statistics.median(c.get("_refresh_layout", 0) for c in got["per_resize"])
    restyles = statistics.median(c.get("update_nodes", 0) for c in got["per_resize"])
    print(f"{args.keys} keys each way, {args.busy} busy loops; up/down between runs, headless from {START[0]}x{START[1]}")
    print(f"  1. a key alone:              median {alone * 1000:6.0f} ms (max {max(got['alone']) * 1000:.0f})")
    print(f"  2. a key right after resize: median {after * 1000:6.0f} ms (max {max(got['after']) * 1000:.0f})")
    print(f"  3. ratio (2 / 1): {after / alone:.2f}x; per resize: {layouts:g} layout passes, {restyles:g} restyles")
    print(f"  4. the app's CPU time a resize takes: median {statistics.median(got['cpu']) * 1000:.0f} ms "
          f"(quartiles {' / '.join(f'{q * 1000:.0f}' for q in statistics.quantiles(got['cpu'], n=4))} ms)")


if __name__ == "__main__":
    main()
