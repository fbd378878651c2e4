"""The rollout driver: the single writer of the run directory; stop, resume, gates.

The driver hands seeds to an executor (engine/workers/executor.py) and records the rows it returns:
the local pool of worker processes with batched predicts (engine/workers/pool.py), or shards on a Ray
cluster (engine/scaleout/ray_pool.py), whichever the command line chose. For policies served in the
driver (MolmoAct2, the hold baseline) the model is loaded here, once, before any episode
starts, so a bad checkpoint fails early.

Stop protocol (engine/record/stop.py): a STOP file, SIGTERM, SIGINT or SIGHUP -> no new episode starts,
in-flight episodes finish and their rows are written, state `stopped`. SIGTERM gives them `term_grace_s`
(`--term-grace-s`): past it they are abandoned. A second signal aborts. Either way the workers are killed
and their in-flight seeds are recorded as not run (never as rows with made-up values), owed to --resume.

Comparison runs (`fontaine-eval --prereg DOC --arms A,B`, issue 24): `RunConfig.arms` names two
arms and their policies, `RunConfig.comparison` the registered comparison. Every seed is a job per
arm, dispatched in plan order with the arms interleaved (seed k of A, then seed k of B), both
policies loaded once (served ones in the driver, local ones in each worker), every row carrying its
arm. After each row `prereg.stats.comparison.decide` reads the rows by arm and seed; a decision that
stops the run stops it at the episode boundary (`decided`, "(comparison) ..."), and status.json
carries the latest decision under `comparison`. Stop, resume, the lock and the gates are the
single-arm run's, counted in episodes (arm, seed).

A crossed design (issue 48: `RunConfig.variants`, from the plan): every seed also runs on each
registered visual variant beside `base`, an episode is (arm?, variant, seed) (RunConfig.job), a
seed's variants dispatched together (RunConfig.jobs), each row naming its variant. The counts,
the summary, the decisions and the gates' success reads are the read variant's
(`RunConfig.read_variant`: prereg.rundir.fold.Plan.variant); done/total and the pace count every
episode. Resume runs the missing (arm?, variant, seed) episodes only.

Failure: whatever raises (a full disk, a deleted run directory, a bug, every worker dead), the
workers are killed, status.json says `failed` with a one-line reason when it can still be
written (a small reserve file is freed first on a full disk), and the exception reaches the
caller, which exits non-zero. Rows already written stay intact. The driver holds the run
directory's lock (prereg.rundir.RunLock) for its whole life: one writer per run directory.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import deque
from pathlib import Path

from engine.policies.factory import load_served
from engine.process.environ import SECRET_NAME, held_back
from engine.record.clock import RunClock, beating
from engine.record.config import RunConfig, RunResult, workers_for
from engine.record.errors import DriverError, StartInterrupted
from engine.record.stop import StopProtocol, as_json_jobs
from engine.record.summary import failure_reason, progress_line, summarize
from engine.record.writer import RunRecord
from engine.run.decisions import PlanDecisions
from engine.run.tripwires import TripwireFailed, check_at_start
from engine.workers.executor import Executor, ExecutorFactory, local_executor
from prereg import rundir as rd
from prereg.core.errors import FontaineError, RunFailed, UsageError, write_traceback
from prereg.core.limits import DEFAULT_TERM_GRACE_S
from prereg.core.safe_read import Unreadable
from prereg.core.untrusted import redacted
from prereg.core.webhook_env import scrub_webhooks
from prereg.rundir.files import done_stop_name, set_aside_bad_rows, touch_heartbeat, utc_now
from prereg.rundir.fold import Plan, RowsFold
from prereg.rundir.gates import evaluate_gates, first_tripped
from prereg.rundir.outcomes import is_error
from prereg.rundir.row import Row
from prereg.rundir.rows import BASE_VARIANT, variant_of

_ONE_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
HEARTBEAT_EVERY_S = 2.0
STATUS_EVERY_S = 2.0
POLL_S = 0.25


# --------------------------------------------------------------------------- the driver


def run(config: RunConfig, run_dir: Path, *, argv: list[str] | None = None, resume: bool = False,
        log=print, lock: rd.RunLock | None = None, executor: ExecutorFactory | None = None,
        term_grace_s: float = DEFAULT_TERM_GRACE_S) -> RunResult:
    """Run (or resume) the evaluation into `run_dir` and return its final state.

    `lock`: the run directory's lock, already held by the caller; else it is taken here
    (DriverError when another process holds it). Released when the run ends.
    `executor`: what runs the episodes (engine.workers.executor.make_executor chooses; default local).
    `term_grace_s`: on SIGTERM, how long the episodes in flight may take before they are abandoned."""
    run_dir = Path(run_dir).absolute()  # its threads' paths hold while ray.init runs in the package's folder
    scrubbed = scrub_webhooks()  # before any worker or shard starts: they inherit this environment
    if scrubbed:
        log(f"removed {', '.join(scrubbed)} from the environment: a run never posts (the notifier does)")
    secrets = [name for name in held_back(passed=config.pass_env) if SECRET_NAME.search(name)]
    if secrets:  # named (never their values): a lab's policy that needs one must be told why it is not there
        log(f"workers run without {', '.join(secrets)}: a worker's environment is an allow-list (engine/process/environ.py; "
            "--pass-env NAME passes one)")
    unset = [name for name in config.pass_env if name not in os.environ]
    if config.pass_env:
        log(f"workers get {', '.join(config.pass_env)} by name (--pass-env / protocol: pass_env)"
            + (f"; not set here, so not passed: {', '.join(unset)}" if unset else ""))
    if lock is None:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            lock = rd.RunLock(run_dir).acquire()
        except rd.RunLocked as exc:
            raise DriverError(str(exc)) from None
        except OSError as exc:
            raise DriverError(f"run directory {run_dir} cannot be used ({exc.strerror or exc}); "
                              "choose another --run-dir") from None
    try:
        return _Driver(config, run_dir, argv or sys.argv, resume, log, executor or local_executor,
                       term_grace_s).run()
    finally:
        lock.release()


class _Driver(StopProtocol):
    def __init__(self, cfg: RunConfig, run_dir: Path, argv: list[str], resume: bool, log, executor: ExecutorFactory,
                 term_grace_s: float = DEFAULT_TERM_GRACE_S):
        self.cfg, self.run_dir, self.resume, self.log = cfg, run_dir, resume, log
        self.argv = [redacted(str(a)) for a in argv]  # the manifest's record of the command: a token typed there is not kept
        self.make_executor = executor
        self.clock = RunClock()
        self.started_at = utc_now()
        self.record = RunRecord(cfg, run_dir, self.argv, resume, self.started_at)  # manifest, status, the end
        self.rows: list[dict] = []  # every row of the run (prior rows on resume included)
        self.session_done = 0
        self.stop: rd.StopReason | None = None  # why the run is stopping, once asked
        self.abort = False
        self.signals = 0
        self.term_grace_s = term_grace_s
        self.term_deadline: float | None = None  # monotonic: when SIGTERM's grace for the episodes in flight ends
        self.pool: Executor | None = None
        self.gpu_meter = None
        self.policy_description: dict | None = None  # what the policy resolved to, once loaded
        self._rig_tables: dict = {}  # the coverage tripwire's rig tables: judged before the load and after, computed once
        self.lost_seeds: list = []  # episodes aborted in flight: jobs as JSON (seeds, [arm, seed], [arm?, variant, seed])
        self.cancelled: list = []  # episodes in flight when the plan decided: cancelled, never rows, owed nothing
        self.aborted_note: str | None = None
        self.summary: dict = {}
        self.arms = cfg.arm_names()  # a comparison run's two arms, else None
        # the counts status.json says, kept as rows arrive (every 2 s, never recounted): the read model's
        self.fold = RowsFold(Plan(tuple(cfg.seeds), tuple(self.arms) if self.arms else None, cfg.success_field,
                                  cfg.counted_variant))  # a crossed design: the read variant's
        self._pool_closed = False
        self.policy = None
        self.gpus = 0
        self._last_hb = self._last_status = 0.0
        self.decisions = PlanDecisions(cfg, run_dir, log)  # curtailment, a sequential test, a comparison
        self.tripwires: dict | None = None  # the registered tripwires' record (engine/run/tripwires.py)
        # the episodes to run, in dispatch order: seeds, (arm, seed) interleaved by seed, (arm?, variant, seed)
        self.jobs: list = cfg.jobs()
        self._plan_order = {job: i for i, job in enumerate(self.jobs)}  # a job's place in the plan

    def _key(self, row: dict):
        """A row's episode: its seed, or (arm, seed) in a comparison run, (arm?, variant, seed) in a crossed design."""
        return self.cfg.job_of(row)

    def _done_keys(self, ok_only: bool = False) -> set:
        return {self._key(r) for r in self.rows if not (ok_only and is_error(r))}

    # -- lifecycle

    def run(self) -> RunResult:
        self._prepare_dir()
        self._install_signals()
        try:
            self._write_status(rd.STARTING)
            with beating(self.run_dir, HEARTBEAT_EVERY_S):  # minutes of model load and tripwire rollouts are not a stall
                self.record.write_manifest(self.policy_description, self.gpus)  # what was asked: readable if the policy cannot load
                self._check_tripwires(before_load=True)  # coverage needs no model: "pre-GPU: fail -> report, don't run"
                self._load_policy()
                self.record.write_manifest(self.policy_description, self.gpus)  # ... and what it resolved to
                self._check_tripwires()  # the plan's registered tripwires: before any worker starts or episode runs
            todo = self._todo_seeds()
            if self.arms:
                self.decisions.prepare()  # test sprt's exact design: seconds, once, before any row
            self._write_status(rd.RUNNING)
            if self.arms and self.rows:  # a resumed comparison that had decided says so and runs nothing more
                self._stop_if(self.decisions.comparison_after(self.rows, self._remaining(read_only=True)))
            if self.arms and (self.cfg.gates.decided or self.cfg.gates.sequential):
                self.log("gates: decided/sequential are per-arm checks and are not read in a comparison run; "
                         "the registered comparison decides")
            self._loop(todo)
            result = self._finish_normally()
        except UsageError as exc:  # bad input (a policy, a checkpoint, a cluster): said once, no traceback
            self._teardown_pool()
            if self.session_done == 0:  # before any episode: the run could not start (exit 2)
                self._finish(rd.FAILED, exc.one_line() if isinstance(exc, TripwireFailed)
                             else f"could not start: {exc.one_line()}")
                raise
            reason = failure_reason(exc, self.run_dir)
            self._finish(rd.FAILED, reason)
            raise RunFailed(reason) from exc
        except BaseException as exc:
            self._teardown_pool()
            reason = failure_reason(exc, self.run_dir)
            if not isinstance(exc, FontaineError):  # a bug, a full disk, a deleted directory: the traceback
                where = self._log_traceback()      # goes to the log, never the terminal
                if reason.startswith("driver crashed") and where:
                    reason += f" (a bug: the traceback is in {where})"
            self._finish(rd.FAILED, reason)
            raise RunFailed(reason) from exc
        self._teardown_pool()
        return result

    def _log_traceback(self) -> str | None:
        """The current exception's traceback into driver.log (a temporary file when the run
        directory cannot take it); where it went. Never on the terminal: the one line is there."""
        try:
            return write_traceback(traceback.format_exc(), "fontaine-eval", self.run_dir / rd.LOG)
        except Exception:  # noqa: BLE001 - recording a failure must not fail
            return None

    def _say(self, text: str) -> None:
        """Log, never raising (the log may be on the disk that just filled up)."""
        try:
            self.log(text)
        except Exception:  # noqa: BLE001
            pass

    def _teardown_pool(self) -> None:
        """Kill whatever workers are left (idempotent): none may outlive the driver."""
        if self.pool is not None and not self._pool_closed:
            self._pool_closed = True
            try:
                self.pool.abort()
            except Exception as exc:  # noqa: BLE001 - tearing down after a failure: say it, go on
                self._say(f"tearing down the workers: {type(exc).__name__}: {exc}")

    def _prepare_dir(self) -> None:
        self.record.check_writable()
        if self.resume:
            try:
                read, bad = set_aside_bad_rows(self.run_dir)
            except Unreadable as exc:
                raise DriverError(f"{self.run_dir / rd.ROWS} {exc.why}: the run's rows cannot be read; "
                                  "move it aside (or restore the rows) and resume again") from None
            for b in bad:
                self.log(f"resume: line {b.line_no} of rows.jsonl set aside ({b.reason}) -> {rd.SET_ASIDE}")
            jobs = set(self.jobs)
            self.rows = [r for r in read.rows if self._key(r) in jobs]
            self.fold.add_many(self.rows)
            prior = rd.Status.of(rd.read_json(self.run_dir / rd.STATUS))
            elapsed = prior.elapsed_s if prior is not None else None
            self.clock.prior_s = elapsed if elapsed is not None and 0 <= elapsed < 1e9 else 0.0
            stop = self.run_dir / rd.STOP
            if stop.exists():  # the stop that ended the last session is history, kept in the log
                stop.rename(self.run_dir / done_stop_name(time.time()))
        self.writer = self.record.open()

    def _load_policy(self) -> None:
        spec = self.cfg.policy
        if self.cfg.ray is not None:  # each shard loads its own copy on its node (a comparison: each arm's)
            describe = ({arm: {"policy": s.kind, "served": "in each Ray shard"} for arm, s in self.cfg.arm_policies()}
                        if self.arms else {"policy": spec.kind, "served": "in each Ray shard"})
            shards = int(self.cfg.ray.get("shards") or 1)
            default_gpus = shards * int(self.cfg.ray.get("gpus_per_shard") or 0)
        else:  # the served policies here (a comparison run: each arm's, once), the others in each worker
            self.policy, describe = load_served(self.cfg)
            served = ([describe[a] for a in self.policy] if self.arms else [describe] if self.policy is not None else [])
            default_gpus = int(any(str(d.get("device", "cpu")).startswith("cuda") for d in served))
        self.policy_description = describe
        self.gpus = self.cfg.gpus if self.cfg.gpus is not None else default_gpus
        from engine.record.gpumeter import GpuMeter

        self.gpu_meter = GpuMeter(self.gpus)

    def _check_tripwires(self, before_load: bool = False) -> None:
        """The tripwires the plan registers (engine/run/tripwires.py): their record goes into the
        manifest and status.json, and a failure raises TripwireFailed (`failed`, exit 2, no episode run).
        `before_load`: coverage alone, before the policy loads (a failure: no model loaded either)."""
        policies = self.policy if isinstance(self.policy, dict) else {None: self.policy}
        described = self.policy_description if self.arms else {None: self.policy_description}
        try:
            self.tripwires, ran = check_at_start(self.cfg, self.run_dir, resume=self.resume, policies=policies,
                                                 descriptions=described, log=self.log, before_load=before_load,
                                                 rig_cache=self._rig_tables)
        except TripwireFailed as exc:
            self.tripwires = getattr(exc, "record", None)
            if self.tripwires is not None:
                self.record.merge_manifest({rd.TRIPWIRES_FIELD: self.tripwires})
            raise
        if ran:
            self.record.merge_manifest({rd.TRIPWIRES_FIELD: self.tripwires})

    def _todo_seeds(self) -> list:
        done = self._done_keys(ok_only=True)
        todo = [j for j in self.jobs if j not in done]
        if self.resume:
            what = (f"episodes ({'arm, ' if self.arms else ''}variant, seed)" if self.cfg.variants
                    else "episodes (arm, seed)" if self.arms else "seeds")
            self.log(f"resume: {len(done)} {what} have rows, {len(todo)} to run")
        return todo

    # -- the loop

    def _loop(self, todo: list[int]) -> None:
        if self.stop is not None:  # stopped before any worker started (a resumed comparison that had decided, a
            # signal while the policy loaded): there is nothing for one to finish
            return
        pending = deque(todo)
        try:
            with beating(self.run_dir, HEARTBEAT_EVERY_S):  # a Ray cluster places its shards and each loads its policy
                self.pool = self.make_executor(self.cfg, self.run_dir, self.policy, len(pending), self.log)
        except StartInterrupted as exc:  # a signal while it started: the stop is recorded, nothing ran
            if self.stop is None:
                self._request_stop(rd.StopReason(rd.BY_SIGNAL, exc.one_line()))
            return
        if self.cfg.gpus is None and self.pool.gpus_held is not None:
            self.gpus = self.pool.gpus_held  # what the cluster actually granted
        described = self.pool.describe()
        if described is not None:  # e.g. the cluster: into the manifest
            extra = {"cluster": described, "gpus": self.gpus}
            if self.pool.policy_resolved is not None:  # what the shards loaded, not what was asked for
                self.policy_description = extra["policy_resolved"] = self.pool.policy_resolved
            self.record.merge_manifest(extra)
        while True:
            if self.abort:
                self._abort_pool()
                break
            if self._abandon_past_grace():
                break
            self._check_stop_file()
            stopping = self.stop is not None
            self.pool.respawn = bool(pending) and not stopping
            if not stopping:
                for _ in range(min(self.pool.free_slots(), len(pending))):
                    job = pending.popleft()
                    arm, variant, seed = self.cfg.job_fields(job)
                    if self.cfg.variants:  # (arm?, variant, seed): a seed's variants (and arms) go out together
                        self.pool.submit(seed, arm=arm, variant=variant)
                    elif self.arms:  # (arm, seed): seed k of A and of B go out together
                        self.pool.submit(seed, arm=arm)
                    else:
                        self.pool.submit(seed)
                    self.clock.submitted()
            if not self.pool.in_flight() and (stopping or not pending or not self.pool.alive()):
                if pending and not stopping:
                    raise RunFailed(self._all_workers_died(len(pending)))
                break
            for done in self.pool.poll(POLL_S):
                if self._decided():  # an earlier row of this poll decided: this one was in flight then
                    self._cancel(done)
                else:
                    self._record(done)
            if self._decided() and self.pool.in_flight():
                self._cancel_in_flight()
            requeued = self.pool.take_requeued()  # seeds of a lost shard go to the others
            if requeued:
                self.log(f"re-queued seeds {requeued} from a lost executor")
                pending.extendleft(reversed(requeued))
            self._tick()
        self.pool.close()
        self._pool_closed = True

    def _all_workers_died(self, pending: int) -> str:
        codes = sorted({c for c in self.pool.stats().get("exit_codes", []) if c is not None})
        ran = self.session_done
        return (f"every worker died ({self._stat('worker_crashes')} deaths, exit code"
                f"{'s' if len(codes) != 1 else ''} {', '.join(map(str, codes)) or '?'}) with {pending} seeds "
                f"not run{' and no episode finished' if not ran else ''}; driver.log has their output")

    def _check_rows_file(self, pending: dict | None = None) -> None:
        """rows.jsonl must still be the file the writer appends to (rows written to a deleted or
        replaced file would be read by nobody): else the run fails, its rows (`pending` too) kept
        in rows.json."""
        why = self.writer.replaced()
        if why is not None:
            if pending is not None:
                self.rows.append(pending)
            raise RunFailed(f"{rd.ROWS} was replaced or deleted ({why}); the {len(self.rows)} rows "
                            f"recorded so far are in {rd.ROWS_SUMMARY}")

    def _record(self, done: Row) -> None:
        arm = done.arm if self.arms else self.cfg.arm  # a comparison's worker says which arm ran
        row = done.written(self.cfg.run_id, arm)
        self._check_rows_file(pending=row)
        self.writer.append(row)
        self.clock.row_arrived()
        self.rows.append(row)
        self.fold.add_many((row,))
        self.session_done += 1
        self.log(progress_line(row, len(self._done_keys()), len(self.jobs), self._eta_s(),
                               arm=row.get("arm") if self.arms else None,
                               variant=variant_of(row) if self.cfg.variants else None))
        self._stop_if(self.decisions.after_row(self.rows, stopping=self.stop is not None,
                                               remaining=self._remaining(read_only=True)))
        self._write_status(rd.STOPPING if self.stop else rd.RUNNING)
        self._enforce_gates()

    def _enforce_gates(self) -> None:
        reading = first_tripped(self._gate_readings())
        if reading is not None:
            self._request_stop(rd.StopReason(rd.BY_GATE, reading.message, gate=reading.name))

    def _gate_readings(self):
        return evaluate_gates(self.cfg.gates, elapsed_s=self.elapsed_s, done=self.session_done,
                              total=self.session_done + self._remaining(), gpu_hours=self.gpu_hours, live=False,
                              pace=self._projections()[0], gpus=self.gpus)

    def _remaining(self, read_only: bool = False) -> int:
        """Episodes without a row; `read_only`: those the plan's decision reads alone (the read variant's, or
        the pooled variants'; what the decision still awaits: a decision on the last of them leaves the other
        variants' episodes to run, as a run without a decision)."""
        done = self._done_keys()
        read = self.cfg.decision_variants()
        jobs = self.jobs if not (read_only and self.cfg.variants) else \
            [j for j in self.jobs if (self.cfg.job_fields(j)[1] or BASE_VARIANT) in read]
        return sum(1 for j in jobs if j not in done)

    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._last_hb >= HEARTBEAT_EVERY_S:
            self._check_rows_file()
            touch_heartbeat(self.run_dir)
            self._last_hb = now
        if now - self._last_status >= STATUS_EVERY_S:
            self._write_status(rd.STOPPING if self.stop else rd.RUNNING)
            self._enforce_gates()

    def _stat(self, name: str) -> int:
        return self.pool.stats().get(name, 0) if self.pool is not None else 0

    def _projections(self):
        """(pace inputs, fair projected wall, naive projected wall, ETA) of this session (engine/record/clock.py)."""
        walls = [r["wall_s"] for r in self.rows[len(self.rows) - self.session_done:] if r.get("wall_s")]
        return self.clock.projections(done=self.session_done, remaining=self._remaining(),
                                      in_flight=len(self.pool.in_flight()) if self.pool is not None else 0,
                                      lanes=workers_for(self.cfg.workers, len(self.jobs)), walls=walls)

    def _eta_s(self) -> float | None:
        return self._projections()[3]

    @property
    def elapsed_s(self) -> float:
        return self.clock.elapsed_s

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.elapsed_s / 3600.0

    def _busy_hours(self) -> float | None:
        if self.gpu_meter is None:
            return None
        self.gpu_meter.sample()
        return None if self.gpu_meter.busy_hours is None else round(self.gpu_meter.busy_hours, 5)

    def _write_status(self, state: str, reason: str | None = None) -> None:
        self._last_status = time.monotonic()
        done = len(self._done_keys())  # episodes: seeds, (arm, seed) in a comparison run, (arm?, variant, seed)
        total = len(self.jobs)
        pace, fair, naive, eta = self._projections()
        counts = self.fold.total()
        status = rd.Status(  # the contract's type: status.json is its to_dict()
            schema=rd.STATUS_SCHEMA,
            state=state,
            run_id=self.cfg.run_id,
            arm=self.cfg.arm,
            done=done,
            total=total,
            ok=counts.ok,
            errors=counts.errors,
            successes=counts.successes,
            elapsed_s=round(self.elapsed_s, 2),
            projected_wall_s=round(fair, 1) if fair is not None else naive,
            eta_s=None if eta is None else round(eta, 1),
            pace={**(pace.as_dict() if pace else {}), "projected_wall_s": None if fair is None else round(fair, 1),
                  "naive_projected_wall_s": naive},
            settled=self.decisions.settled,
            sequential=self.decisions.sequential,
            arms=self.arms or None,  # a comparison run's (arms and comparison are written only in one)
            comparison=self.decisions.comparison if self.arms else None,
            gpu_hours=round(self.gpu_hours, 5),
            gpu_hours_source=f"allocated (wall x {self.gpus} GPU{'s' if self.gpus != 1 else ''} held)",
            gpu_busy_hours=self._busy_hours(),
            gpu_busy_source=self.gpu_meter.source if self.gpu_meter is not None else None,
            gpus=self.gpus,
            mean_batch=round(self._stat('predicted_obs') / self._stat('predict_rounds'), 3) if self._stat('predict_rounds') else None,
            predict_rounds=self._stat('predict_rounds'),
            worker_crashes=self._stat('worker_crashes'),
            lost_seeds=self.lost_seeds,
            cancelled_seeds=self.cancelled or None,
            in_flight_seeds=self._in_flight(),
            executor=self.pool.stats() if self.pool is not None else None,
            reason=reason if reason is not None else (self.stop.text() if self.stop else None),
            stop=self.stop,
            gates=[g.as_dict() for g in self._gate_readings()] if state != rd.STARTING else [],
            tripwires={k: self.tripwires.get(k) for k in ("passed", "failed", "checked_at", "table")} if self.tripwires else None,
            pid=os.getpid(),
            updated_at=utc_now(),
        )
        self.record.write_status(status)

    def _in_flight(self) -> list:
        """The episodes running now, in plan order: seeds, [arm, seed] in a comparison run, [arm?, variant, seed]."""
        if self.pool is None or self._pool_closed:
            return []
        return as_json_jobs(sorted(self.pool.in_flight(), key=lambda j: self._plan_order.get(j, -1)))

    def _finish_normally(self) -> RunResult:
        self._check_rows_file()  # a run whose rows file is gone is not done
        complete = self._done_keys(ok_only=True) >= set(self.jobs)
        session = self.rows[len(self.rows) - self.session_done:] if self.session_done else []
        if session and all(is_error(r) for r in session):
            first = session[0].get("error") or "no message"
            return self._finish(rd.FAILED, f"no episode could run: {len(session)} error row"
                                           f"{'s' if len(session) != 1 else ''} (first: {str(first)[:200]})")
        if self.stop is not None:
            self._check_stop_file()  # the words of a STOP first read empty
            return self._finish(rd.STOPPED, "; ".join(filter(None, [self.stop.text(), self.aborted_note])))
        if complete:
            return self._finish(rd.DONE, None)
        errors = self.fold.total().errors
        return self._finish(rd.DONE, f"{errors} episode(s) ended in an error row" if errors else None)

    def _finish(self, state: str, reason: str | None) -> RunResult:
        """Record the end: rows.json, then the final state in status.json (a reader that sees the
        final state finds the summary there too); a failure writes its status first. Each write
        is tried on its own; what cannot be written is said in the log."""
        if state == rd.FAILED:
            self.stop = rd.StopReason(rd.BY_ERROR, reason or "")
        self.record.write_end(state == rd.FAILED, lambda: self._write_status(state, reason),
                              lambda: self._write_summary(state, reason), self._say)
        return RunResult(state, reason, self.rows, self.summary)

    def _write_summary(self, state: str, reason: str | None) -> None:
        summary = summarize(self.rows, self.cfg)
        if self.arms:  # each arm's own counts (the read variant's), and the decision
            summary["arms"] = {arm: {**summarize([r for r in self.rows if r.get("arm") == arm], planned_seeds=self.cfg.seeds,
                                               success_field=self.cfg.success_field, variant=self.cfg.counted_variant),
                                     "total_seeds": len(self.cfg.seeds)} for arm in self.arms}
            summary["comparison"] = self.decisions.comparison
        summary.update({
            "state": state, "reason": reason, "elapsed_s": round(self.elapsed_s, 2),
            "mean_batch": round(self._stat('predicted_obs') / self._stat('predict_rounds'), 3) if self._stat('predict_rounds') else None,
            "predict_rounds": self._stat('predict_rounds'), "gpu_hours": round(self.gpu_hours, 5),
            "rollout_s": self.clock.rollout_s,
            "worker_crashes": self._stat('worker_crashes'), "lost_seeds": self.lost_seeds,
            "cancelled_seeds": self.cancelled,
        })
        self.summary = summary
        self.record.write_summary(summary, self.rows)
