"""A tiny stand-in for `fontaine-eval` that keeps the run-directory contract (for console tests).

A real process: it writes pid.json with its own create time, touches the heartbeat, appends
a row every --row-every seconds up to --rows, and honours STOP by writing state `stopped`
and exiting. With --rows reached it writes `done`. It never imports the engine.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from console.fixtures import make_row  # noqa: E402
from prereg import rundir as rd  # noqa: E402
from prereg.rundir.files import touch_heartbeat
from prereg.rundir.files import write_json_atomic as write_json  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run_dir", type=Path)
    p.add_argument("--rows", type=int, default=0)
    p.add_argument("--total", type=int, default=10)
    p.add_argument("--row-every", type=float, default=0.1)
    p.add_argument("--linger", type=float, default=600.0, help="seconds to stay alive with no more rows")
    p.add_argument("--wait-for", default=None, help="write nothing until this file appears in the run directory")
    p.add_argument("--ignore-term", action="store_true",
                   help="an episode that outlasts any grace: neither SIGTERM nor STOP ends the run")
    args = p.parse_args()
    if args.ignore_term:
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    d = args.run_dir
    d.mkdir(parents=True, exist_ok=True)
    if args.wait_for:  # a driver still importing its libraries: alive, nothing written yet
        deadline = time.time() + args.linger
        while not (d / args.wait_for).exists() and time.time() < deadline:
            time.sleep(0.02)
    me = psutil.Process()
    write_json(d / rd.PID, {"pid": me.pid, "pgid": os.getpgid(0), "create_time": me.create_time(),
                                "launched_at": "2026-01-01T00:00:00Z"})
    run_id = d.name
    write_json(d / rd.MANIFEST, {"run_id": run_id, "prereg": None, "arm": "scripted", "workers": 2,
                                     "seeds": list(range(args.total)), "episode_seconds": 30.0,
                                     "gates": {"gpu_hours": 1.0, "pace_limit_hours": 10.0, "pace_after_episodes": 2}})
    start = time.time()
    done = 0
    rows = open(d / rd.ROWS, "a")

    def status(state, reason=None):
        write_json(d / rd.STATUS, {"state": state, "done": done, "total": args.total,
                                       "elapsed_s": time.time() - start, "projected_wall_s": None,
                                       "gpu_hours": 0.0, "gpu_hours_source": "allocated", "reason": reason,
                                       "updated_at": "2026-01-01T00:00:00Z", "errors": 0,
                                       "in_flight_seeds": list(range(done, min(done + 2, args.total)))})  # 2 workers

    status("running")
    next_row = time.time() + args.row_every
    deadline = time.time() + args.linger
    while time.time() < deadline:
        touch_heartbeat(d)
        stop = None if args.ignore_term else rd.read_stop(d)
        if stop is not None:
            status("stopped", stop.text())
            return
        if done < args.rows and time.time() >= next_row:
            rows.write(json.dumps(make_row(done, run_id=run_id)) + "\n")
            rows.flush()
            done += 1
            status("running")
            next_row = time.time() + args.row_every
        if done >= args.total:
            status("done")
            return
        time.sleep(0.05)
    status("failed", "fake driver lingered too long")


if __name__ == "__main__":
    main()
