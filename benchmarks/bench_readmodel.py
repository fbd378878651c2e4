"""A run's read model, measured where it is read: the console and the Discord notifier, on a folder
of many runs and on one big live run (issue 31: neither may get slower).

    .venv/bin/python benchmarks/bench_readmodel.py [--runs 200] [--rows-per-run 100] [--big 100000]

Two folders are written in a temporary directory (console/fixtures.py rows):
  - `many`: --runs ended runs of --rows-per-run rows each (one in ten a comparison run of two arms);
  - `big`: one live run (its pid.json names this process) of --big rows, appended to while measured,
    its updates posted up to its last milestone (posts.jsonl), as when a notifier restarts beside it.

Prints, each as CPU seconds (this process, every thread: the notifier's sender included) and, on a
second pass under tracemalloc, the peak of traced memory:
  1. [many, watcher]   the console's watcher opening the folder (polls until every run is read),
                       then the CPU of one idle poll of the whole folder;
  2. [many, notifier]  the notifier's first look at every run (`Notifier.poll_run`, what its scan
                       calls), then a second look with nothing changed;
  3. [big, watcher]    opening the 100k-row run, then following it: --appends appends of
                       --append-rows rows, one poll after each (CPU per poll);
  4. [big, notifier]   the same for the notifier (its first look, then one poll per append);
  5. [many, app]       the whole console (Textual, headless, 160x50) until the runs list shows every run.

Posts go to a loopback fake of Discord (tests/console/fake_discord.py), never to the network. The
script uses only the console's and the notifier's public entry points, so the same file measures
an older checkout (BENCH_ROOT=DIR: import the code from DIR). On a shared, noisy machine compare two
checkouts with `--against DIR --repeat 3`: the measurements run alternately, each in a fresh process
(this checkout, then DIR's, `--repeat` times), and the table gives each figure's median for both and
their ratio (below 1: this checkout is cheaper). The figures in benchmarks/README.md were taken so,
against `git archive 0e9c421 | tar -x -C /tmp/before`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))

from console.fixtures import make_row, make_run_dir  # noqa: E402
from console.notify.sender import Notifier  # noqa: E402
from console.watcher import Watcher  # noqa: E402
from prereg import rundir as rd  # noqa: E402
from prereg.rundir.files import write_json_atomic  # noqa: E402


def write_many(root: Path, runs: int, rows_per_run: int) -> Path:
    folder = root / "many"
    old = time.time() - 30 * 86400  # ended a month ago: the notifier owes them nothing
    for i in range(runs):
        run_id = f"bench-{i:03d}-scripted-20260101-{i // 60:02d}{i % 60:02d}00"
        if i % 10 == 9:  # a comparison run: both arms, seed k of each
            rows = [make_row(s, run_id=run_id, arm=arm) for s in range(rows_per_run // 2) for arm in ("clumsy", "steady")]
            d = make_run_dir(folder, run_id, arm="clumsy-vs-steady", total=rows_per_run, done=rows_per_run,
                             rows=rows, mtime=old)
            manifest = json.loads((d / rd.MANIFEST).read_text())
            manifest.update(seeds=list(range(rows_per_run // 2)), arms=[{"arm": "clumsy"}, {"arm": "steady"}])
            write_json_atomic(d / rd.MANIFEST, manifest)
            os.utime(d / rd.MANIFEST, (old, old))
        else:
            make_run_dir(folder, run_id, total=rows_per_run, done=rows_per_run, mtime=old)
    return folder


def write_big(root: Path, n: int, every: int = 10) -> Path:
    """A live run of `n` rows whose ledger says its updates were posted up to the last milestone: a
    notifier (re)started beside a long run, not one catching up on thousands of missed updates (the
    old catch-up recounted the first M rows for every missed milestone M: hours at 100k rows)."""
    folder = root / "big"
    me = {"pid": os.getpid(), "pgid": os.getpgid(0), "create_time": _create_time()}
    d = make_run_dir(folder, "big-scripted-20260101-000000", total=2 * n, done=n, state="running", pid=me,
                     mtime=None, rows=[make_row(s) for s in range(n)])
    with open(d / rd.POSTS, "w") as f:
        for i, key in enumerate(["launch", *(f"update:{m}" for m in range(every, n + 1, every))]):
            f.write(json.dumps({"kind": key.split(":")[0], "key": key, "episodes": 0, "message_id": str(i + 1),
                                "at": "2026-01-01T00:00:00Z"}) + "\n")
    return folder


def _create_time() -> float:
    import psutil

    return psutil.Process().create_time()


def cpu_and_peak(fn, traced: bool) -> tuple[float, float | None]:
    if traced:
        tracemalloc.start()
    c0 = time.process_time()
    fn()
    cpu = time.process_time() - c0
    peak = None
    if traced:
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    return cpu, peak


def bench_watcher_open(folder: Path, label: str) -> Watcher:
    out = {}
    for traced in (False, True):
        w = Watcher(folder, lambda _u: None, interval=0.5)

        def open_all(w=w) -> None:
            while w.poll_once():
                pass

        cpu, peak = cpu_and_peak(open_all, traced)
        if traced:
            print(f"[{label}, watcher] open: peak traced memory {peak:.1f} MB")
            w.stop()
        else:
            print(f"[{label}, watcher] open: {cpu:.2f} CPU s ({len(w.watches)} runs)")
            out["w"] = w
    return out["w"]


def bench_watcher_idle(w: Watcher, label: str, polls: int = 20) -> None:
    c0 = time.process_time()
    for _ in range(polls):
        w.poll_once(now=time.monotonic() + 10.0)  # due for a rescan and a liveness check every time
    print(f"[{label}, watcher] idle poll of every run: {1000 * (time.process_time() - c0) / polls:.1f} CPU ms")


def bench_notifier_open(folder: Path, url: str, label: str) -> Notifier:
    runs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    out = {}
    for traced in (False, True):
        n = Notifier(url, validate=False)

        def look(n=n) -> None:
            for p in runs:
                n.poll_run(p)
            n.wait_idle(30.0)

        cpu, peak = cpu_and_peak(look, traced)
        if traced:
            print(f"[{label}, notifier] first look: peak traced memory {peak:.1f} MB")
            n.close(timeout=2.0)
        else:
            print(f"[{label}, notifier] first look at {len(runs)} run(s): {cpu:.2f} CPU s")
            c0 = time.process_time()
            for p in runs:
                n.poll_run(p)
            print(f"[{label}, notifier] second look, nothing changed: {1000 * (time.process_time() - c0):.1f} CPU ms")
            out["n"] = n
    return out["n"]


def bench_follow(folder: Path, w: Watcher, n: Notifier, start: int, appends: int, per: int) -> None:
    run = next(p for p in folder.iterdir() if p.is_dir())
    with open(run / rd.ROWS, "rb") as f:  # the rows appended are the run's own last row, seed by seed
        f.seek(-4096, os.SEEK_END)
        template = json.loads(f.read().splitlines()[-1])
    seed = start
    cw = cn = 0.0
    for _ in range(appends):
        with open(run / rd.ROWS, "a") as f:
            for _ in range(per):
                f.write(json.dumps({**template, "seed": seed}) + "\n")
                seed += 1
        status = json.loads((run / rd.STATUS).read_text())
        status["done"] = seed
        write_json_atomic(run / rd.STATUS, status)
        c0 = time.process_time()
        w.poll_once(now=time.monotonic() + 10.0)
        cw += time.process_time() - c0
        c0 = time.process_time()
        n.poll_run(run)
        n.wait_idle(30.0)
        cn += time.process_time() - c0
    print(f"[big, watcher] following: {1000 * cw / appends:.1f} CPU ms per poll ({appends} appends of {per} rows)")
    print(f"[big, notifier] following: {1000 * cn / appends:.1f} CPU ms per poll ({appends} appends of {per} rows)")


def bench_app(folder: Path, runs: int) -> None:
    from console.app import FontaineApp

    async def run() -> None:
        app = FontaineApp(runs_dir=folder, prereg_dirs=[], notifier=None)
        c0, t0 = time.process_time(), time.perf_counter()
        async with app.run_test(size=(160, 50)):
            while len(app.runs) < runs or any(r.loading for r in app.runs) or app.detail is None:
                await asyncio.sleep(0.02)
            print(f"[many, app] every run listed and read: {time.process_time() - c0:.2f} CPU s, "
                  f"{time.perf_counter() - t0:.2f} s wall")

    asyncio.run(run())


LINE = re.compile(r"^\[(?P<where>[^\]]+)\] (?P<what>.*?)(?::| ) ?(?P<value>[0-9.]+) (?P<unit>CPU s|CPU ms|MB)\b")


def write_data(root: Path, args) -> Path:
    """The two folders, written once with this checkout's rows (console/fixtures.py): both checkouts then
    read the same bytes. Each wrote its own before, and a row of this checkout's 44 fields is a dict
    of twice the memory of the older 40 (Python's dict table doubles past 42 keys): the peak memory
    compared the rows, not the code that reads them."""
    write_many(root, args.runs, args.rows_per_run)
    write_big(root, args.big)  # its pid.json names this process, which outlives the measuring children
    return root


def against(args, sizes: list[str]) -> None:
    """Both checkouts, alternately, each measurement in a fresh process, on the same rows: medians and their ratio."""
    trees = {"this": str(ROOT), "against": str(Path(args.against).resolve())}
    got: dict[tuple, dict[str, list[float]]] = {}
    data = write_data(Path(tempfile.mkdtemp(prefix="bench-readmodel-data-")), args)
    for i in range(args.repeat):
        for name, tree in trees.items():
            env = {**os.environ, "BENCH_ROOT": tree, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
            out = subprocess.run([sys.executable, __file__, *sizes, f"--data={data}"], env=env, cwd=tree,
                                 capture_output=True, text=True)
            print(f"[run {i + 1}/{args.repeat}, {name}] exit {out.returncode}", flush=True)
            for line in out.stdout.splitlines():
                if line.startswith("[read]") and i == 0:
                    print(f"  {name}: {line}")  # what each checkout counted: the same rows, read the same
            for m in map(LINE.match, out.stdout.splitlines()):
                if m:
                    got.setdefault((m["where"], m["what"], m["unit"]), {}).setdefault(name, []).append(float(m["value"]))
    print(f"\n{'measure':<62} {'this':>9} {'against':>9} {'ratio':>6}")
    for (where, what, unit), by in got.items():
        a, b = (statistics.median(by.get(k, [float('nan')])) for k in ("this", "against"))
        print(f"{f'[{where}] {what} ({unit})':<62} {a:>9.2f} {b:>9.2f} {a / b if b else float('nan'):>6.2f}")
    shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--rows-per-run", type=int, default=100)
    p.add_argument("--big", type=int, default=100_000)
    p.add_argument("--appends", type=int, default=20)
    p.add_argument("--append-rows", type=int, default=2)
    p.add_argument("--against", help="another checkout to measure alternately with this one (medians, ratios)")
    p.add_argument("--repeat", type=int, default=3, help="with --against: runs of each checkout")
    p.add_argument("--data", help="read a copy of these folders (many/, big/) instead of writing them (--against does)")
    args = p.parse_args()
    if args.against:
        against(args, [f"--runs={args.runs}", f"--rows-per-run={args.rows_per_run}", f"--big={args.big}",
                       f"--appends={args.appends}", f"--append-rows={args.append_rows}"])
        return
    import importlib.util

    import discord

    here = Path(__file__).resolve().parents[1] / "tests" / "console" / "fake_discord.py"  # this checkout's test helper
    spec = importlib.util.spec_from_file_location("fake_discord", here)
    fake_discord = sys.modules["fake_discord"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_discord)
    fake = fake_discord.FakeDiscord().start()
    discord.http.Route.BASE = fake.base
    url = "https://discord.com/api/webhooks/123456789012345678/" + "x" * 68
    root = Path(tempfile.mkdtemp(prefix="bench-readmodel-"))
    if args.data:
        shutil.copytree(args.data, root, dirs_exist_ok=True)
        many, big = root / "many", root / "big"
    else:
        many, big = write_many(root, args.runs, args.rows_per_run), write_big(root, args.big)
    print(f"[setup] {args.runs} runs of {args.rows_per_run} rows; one live run of {args.big} rows; code from {ROOT}")
    w = bench_watcher_open(many, "many")
    counted = sum(x.agg.rows for x in w.watches.values())
    print(f"[read] {len(w.watches)} runs, {counted} rows counted, {sum(x.agg.corrupt for x in w.watches.values())} corrupt")
    bench_watcher_idle(w, "many")
    w.stop()
    n = bench_notifier_open(many, url, "many")
    n.close(timeout=2.0)
    w = bench_watcher_open(big, "big")
    n = bench_notifier_open(big, url, "big")
    bench_follow(big, w, n, args.big, args.appends, args.append_rows)
    w.stop()
    n.close(timeout=2.0)
    bench_app(many, args.runs)
    fake.close()


if __name__ == "__main__":
    main()
