"""Scale a run out to a Ray cluster: one shard per (GPU) node, rows streamed to the one writer.

`RayPool` is an executor with the same interface as `engine.workers.pool.LocalPool` (free_slots,
submit, poll, in_flight, alive, take_requeued, abort, close, stats, `respawn`). The driver
stays on the user's machine and remains the single writer of the run directory; the cluster
only runs episodes.

Design (facts in docs/design-notes.md: a policy call through Ray on every step costs
1-2 ms and breaks batching; coarse shards keep full speed):

- One Ray actor per shard, placed in its own STRICT_PACK placement group
  `[{"GPU": g}] + [{"CPU": 1}] * workers` (CPU bundles only when g = 0), shards spread over
  the alive nodes. Each shard runs the EXISTING `LocalPool` on its node: its sim workers are
  local processes and a served policy (MolmoAct2, hold) is loaded once inside the actor and
  answers their batched predicts over pipes, exactly as in a local run. Nothing per step
  crosses Ray.
- Seeds go out in small batches: a shard gets as many seeds as it has idle workers, so a fast
  shard takes more. The driver keeps one `step()` call outstanding per shard; a call hands
  the shard its new seeds, drives its pool, and returns as soon as an episode finishes (or a
  worker becomes free, or after `STEP_WAIT_S`) with the finished rows. The driver waits on all
  shards' calls with `ray.wait`, so rows stream back as they complete.
- Run control is unchanged: STOP stops `submit` calls, in-flight episodes finish on every
  shard and their rows arrive; `abort()` kills the shards' workers and returns their seeds.
- A shard whose actor or node dies: its unfinished seeds come back through
  `take_requeued()` and the driver hands them to the other shards. The lost shard is never
  asked again and rows are accepted only from a live shard for a seed it holds, so each seed
  gets one row. The loss is recorded in `stats()` (status.json `executor`).
- Videos: a shard films into a scratch directory on its own node (no shared filesystem is
  assumed), reads the mp4 back when the episode's row is ready and ships the bytes with the
  row; the driver writes it to `<run_dir>/videos/` before recording the row.
- A comparison run (`cfg.arms`): a job is (arm, seed), as in the driver; each shard loads both
  arms' served policies once and hands its workers both arms, as a local comparison run does.
- Every node needs the same fontaine install (same commit, same venv path is simplest): the
  shard actor is `engine.scaleout.shard.Shard`, imported on the node. `describe()` records each
  shard's git commit, and the driver log warns when it differs from the driver's.

Ray settings: usage statistics off (`RAY_USAGE_STATS_ENABLED=0` unless set), dashboard only
with `--ray-dashboard` (it applies to a private `local` cluster; an existing cluster has the
dashboard its `ray start` gave it). Authentication (Ray 2.60 enables token auth by default):
`RAY_AUTH_MODE` and the token are read from the environment as Ray does: connect to a token
cluster with `RAY_AUTH_MODE=token` and the cluster's token in `RAY_AUTH_TOKEN`,
`RAY_AUTH_TOKEN_PATH` or `~/.ray/auth_token`; `RAY_AUTH_MODE=disabled` only on a trusted
network. A failed connection says so in one message. `--ray local` with nothing configured
uses a token of the driver process only (Ray's own default would write ~/.ray/auth_token).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.record.errors import DriverError
from engine.scaleout.connect import _first_line, connect, require_ray
from engine.scaleout.shard import Shard, as_job, job_parts, job_words, shard_env, shards_policy
from prereg import rundir as rd
from prereg.rundir.row import Row

STEP_WAIT_S = 1.0  # longest a step call waits on its shard before it reports back anyway
PLACE_TIMEOUT_S = float(os.environ.get("FONTAINE_RAY_PLACE_TIMEOUT_S", "120"))
START_TIMEOUT_S = float(os.environ.get("FONTAINE_RAY_START_TIMEOUT_S", "900"))  # a shard loads its policy
START_TOGETHER_S = 60.0  # longest the shards that are up wait for the others before taking seeds
ABORT_WAIT_S = 5.0
CLOSE_WAIT_S = 30.0


# --------------------------------------------------------------------------- the shard (on a node)




# a shard's own life (not a run's state: those are prereg.rundir's)
SHARD_STARTING, SHARD_RUNNING, SHARD_LOST, SHARD_CLOSED = "starting", "running", "lost", "closed"


@dataclass
class _ShardHandle:
    index: int
    node_id: str
    node_ip: str
    pg: object
    actor: object = None
    state: str = SHARD_STARTING  # SHARD_RUNNING | SHARD_LOST | SHARD_CLOSED
    ref: object = None  # the outstanding step() call
    free: int = 0  # idle workers, as last reported, minus seeds handed out since
    outbox: list = field(default_factory=list)  # jobs for the next step() call (seeds, or (arm, seed))
    assigned: set = field(default_factory=set)  # jobs handed to this shard, no row yet
    episodes: int = 0
    reported: bool = False  # its workers are up: it has reported free slots once
    stats: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)


class RayPool:
    """Seeds spread over shards on a Ray cluster. Driven by one thread (the driver's loop)."""

    def __init__(self, cfg, run_dir: Path, log=print, n_seeds: int | None = None):
        self.cfg, self.run_dir, self.log = cfg, Path(run_dir), log
        self.ray = require_ray()
        self.settings = dict(cfg.ray or {})
        self.address = str(self.settings.get("address") or "auto")
        self.gpus_per_shard = int(self.settings.get("gpus_per_shard") or 0)
        self.workers_per_shard = max(1, int(cfg.workers))
        arms = getattr(cfg, "arms", None) or []  # a comparison run: a job is (arm, seed), as the driver's
        self.arms = bool(arms)
        self._arm_rank = {a["arm"]: i for i, a in enumerate(arms)}  # registered order: A's seed k before B's
        self.respawn = True
        self.shards: list[_ShardHandle] = []
        self.lost_shards: list[dict] = []
        self.requeued_total: list = []  # jobs: seeds, or (arm, seed) in a comparison run
        self._requeued: list = []
        self._returned: set = set()  # jobs that have their row
        self._nodes: list[dict] = []
        self._closed = False
        self.gpus_held = 0
        self.policy_resolved: dict | None = None  # from the shards' own descriptions, once they started
        self._started = False
        self._start_by = 0.0
        if n_seeds == 0:  # nothing to run (a resume of a finished run): no cluster needed
            self._connected = False
            return
        connect(self.ray, cfg, self.settings, self.address, self.workers_per_shard, log)
        self._connected = True
        try:
            self._place(n_seeds)
        except BaseException:
            self._teardown()
            raise

    # -- the executor interface

    def free_slots(self) -> int:
        """Idle workers over the cluster. Shards start together (as a LocalPool's workers do), so a
        shard whose workers are still building their scenes does not see the others take every seed."""
        if not self._started:
            self._started = all(s.reported for s in self._running()) or time.monotonic() > self._start_by
            if not self._started:
                return 0
        return sum(s.free for s in self._running())

    def submit(self, seed: int, arm: str | None = None) -> None:
        shard = max((s for s in self._running() if s.free > 0), key=lambda s: s.free)
        job = (arm, seed) if self.arms else seed  # the driver's own job, handed back as is when re-queued
        shard.free -= 1
        shard.outbox.append(job)
        shard.assigned.add(job)

    def in_flight(self) -> list:
        """The episodes running over the cluster, in plan order: seeds, or (arm, seed) in a comparison run."""
        return sorted((job for s in self._running() for job in s.assigned), key=self._plan_order)

    def alive(self) -> bool:
        return any(True for _ in self._running())

    def poll(self, timeout: float) -> list[Row]:
        ray = self.ray
        self._issue()
        by_ref = {s.ref: s for s in self._running() if s.ref is not None}
        if not by_ref:
            return []
        refs = list(by_ref)
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        rows: list[Row] = []
        for ref in ready:
            shard = by_ref[ref]
            shard.ref = None
            try:
                report = ray.get(ref)
            except Exception as exc:  # the actor or its node died, or the step raised
                if not isinstance(exc, (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)):
                    self.log(f"shard {shard.index}: step failed:\n{exc}")
                self._lose(shard, f"{type(exc).__name__}: {_first_line(exc)}")
                continue
            rows.extend(self._take_report(shard, report))
        return rows

    def take_requeued(self) -> list:
        out, self._requeued = self._requeued, []
        return out

    def abort(self) -> list:
        """Kill every shard's episodes now; return the episodes that were in flight (no rows)."""
        lost = self.in_flight()
        live = list(self._running())
        for s in live:
            try:
                s.actor.abort.remote()
            except Exception:
                pass
        refs = [s.ref for s in live if s.ref is not None]
        if refs:  # the running step calls return as soon as their pools are aborted
            self.ray.wait(refs, num_returns=len(refs), timeout=ABORT_WAIT_S)
        for s in live:
            self._kill(s)
            s.state, s.ref, s.free = SHARD_CLOSED, None, 0
            s.assigned.clear()
        return lost

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._connected:
            return
        live = list(self._running())
        refs = []
        for s in live:
            try:
                refs.append(s.actor.close.remote())
            except Exception:
                pass
        if refs:
            self.ray.wait(refs, num_returns=len(refs), timeout=CLOSE_WAIT_S)
        for s in live:
            s.state = SHARD_CLOSED
        self._teardown()

    def stats(self) -> dict:
        per = [s.stats for s in self.shards]
        return {
            "executor": "ray",
            "address": self.address,
            "shards": len(self.shards),
            "shards_running": sum(1 for _ in self._running()),
            "predict_rounds": sum(int(p.get("predict_rounds", 0)) for p in per),
            "predicted_obs": sum(int(p.get("predicted_obs", 0)) for p in per),
            "worker_crashes": sum(int(p.get("worker_crashes", 0)) for p in per),
            "lost_shards": self.lost_shards,
            "requeued_seeds": self.requeued_total,
            "per_shard": [{"shard": s.index, "node_ip": s.node_ip, "host": s.info.get("host"), "state": s.state,
                           "episodes": s.episodes, "in_flight": sorted(s.assigned)} for s in self.shards],
        }

    def describe(self) -> dict:
        """What the manifest records about the cluster this run got."""
        ray = self.ray
        out = {
            "executor": "ray",
            "address": self.address,
            "ray_version": ray.__version__,
            "gpus_per_shard": self.gpus_per_shard,
            "workers_per_shard": self.workers_per_shard,
            "shards": len(self.shards),
            "gpus_held": self.gpus_held,
            "nodes": [{"node_id": n["NodeID"], "ip": n.get("NodeManagerAddress"),
                       "host": n.get("NodeManagerHostname"),
                       "cpus": n.get("Resources", {}).get("CPU", 0), "gpus": n.get("Resources", {}).get("GPU", 0)}
                      for n in self._nodes],
            "per_shard": [{"shard": s.index, "node_id": s.node_id, "node_ip": s.node_ip, **{
                k: s.info.get(k) for k in ("host", "pid", "python", "ray", "git_commit", "cuda_visible_devices",
                                           "env_secrets", "policy")}} for s in self.shards],
            "usage_stats": os.environ.get("RAY_USAGE_STATS_ENABLED"),
            "auth_mode": os.environ.get("RAY_AUTH_MODE", "unset (Ray's default)"),
            "dashboard": bool(self.settings.get("dashboard")),
            "videos": "filmed on the shard's node, shipped with the row, written here by the driver",
        }
        if self._connected:
            try:
                out["gcs_address"] = ray.get_runtime_context().gcs_address
            except Exception:
                pass
        return out

    # -- internals

    def _running(self):
        return (s for s in self.shards if s.state == SHARD_RUNNING)

    def _place(self, n_seeds: int | None) -> None:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from engine.record.provenance import tool_git_commit

        ray, g, w = self.ray, self.gpus_per_shard, self.workers_per_shard
        self._nodes = [n for n in ray.nodes() if n.get("Alive")]
        eligible = [n for n in self._nodes
                    if n.get("Resources", {}).get("GPU", 0) >= g and n.get("Resources", {}).get("CPU", 0) >= w]
        if not eligible:
            raise DriverError(f"no alive node of the Ray cluster can hold a shard of {g} GPU(s) and {w} CPU(s) "
                              f"(--ray-gpus-per-shard, --workers); nodes: {_node_summary(self._nodes)}")
        n_shards = int(self.settings.get("shards") or len(eligible))
        if n_seeds is not None:
            n_shards = max(1, min(n_shards, n_seeds))
        bundles = ([{"GPU": g}] if g else []) + [{"CPU": 1}] * w
        for i in range(n_shards):
            node = eligible[i % len(eligible)]
            pg = placement_group(bundles, strategy="STRICT_PACK", name=f"fontaine-{self.cfg.run_id}-shard{i}",
                                 _soft_target_node_id=node["NodeID"])
            self.shards.append(_ShardHandle(i, node["NodeID"], node.get("NodeManagerAddress", "?"), pg))
        ready, _ = ray.wait([s.pg.ready() for s in self.shards], num_returns=n_shards, timeout=PLACE_TIMEOUT_S)
        if len(ready) < n_shards:
            raise DriverError(f"the Ray cluster could place only {len(ready)} of {n_shards} shards of {bundles} "
                              f"within {PLACE_TIMEOUT_S:.0f} s; nodes: {_node_summary(self._nodes)}; "
                              f"use fewer --ray-shards or --workers")
        env = shard_env()
        actor_cls = ray.remote(Shard)
        for s in self.shards:
            s.actor = actor_cls.options(
                num_cpus=0, num_gpus=g, max_concurrency=2, max_restarts=0,
                name=f"fontaine-{self.cfg.run_id}-shard{s.index}",
                scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=s.pg, placement_group_bundle_index=0),
            ).remote(self.cfg, s.index, w, env)
        infos = {s.index: s.actor.info.remote() for s in self.shards}
        ready, _ = ray.wait(list(infos.values()), num_returns=len(infos), timeout=START_TIMEOUT_S)
        mine = tool_git_commit()
        for s in self.shards:
            try:
                if infos[s.index] not in ready:
                    raise TimeoutError(f"not started within {START_TIMEOUT_S:.0f} s")
                s.info = ray.get(infos[s.index])
            except Exception as exc:
                raise DriverError(f"Ray shard {s.index} on node {s.node_ip} failed to start: "
                                  f"{type(exc).__name__}: {_first_line(exc)}") from None
            s.state = SHARD_RUNNING
            # the node's real placement (the soft target may have been overridden)
            s.node_id = s.info.get("node_id") or s.node_id
            s.node_ip = next((n.get("NodeManagerAddress") for n in self._nodes if n["NodeID"] == s.node_id), s.node_ip)
            if s.info.get("git_commit") != mine:
                self.log(f"ray: shard {s.index} on {s.info.get('host')} runs fontaine {s.info.get('git_commit')}, "
                         f"the driver {mine}: install the same commit on every node")
        self.gpus_held = g * len(self.shards)
        self.policy_resolved = shards_policy([s.info.get("policy") for s in self.shards], comparison=self.arms)
        self._start_by = time.monotonic() + START_TOGETHER_S
        self.log(f"ray: {len(self.shards)} shard(s) x {w} worker(s), {g} GPU(s) each, on "
                 + ", ".join(f"{s.info.get('host')}({s.node_ip})" for s in self.shards))

    def _issue(self) -> None:
        """Keep one step() call outstanding on every running shard; it carries the new jobs."""
        for s in self._running():
            if s.ref is None:
                jobs, s.outbox = s.outbox, []
                try:
                    s.ref = s.actor.step.remote(jobs, s.free, bool(self.respawn), STEP_WAIT_S)
                except Exception as exc:
                    s.outbox = jobs
                    self._lose(s, f"{type(exc).__name__}: {_first_line(exc)}")

    def _take_report(self, shard: _ShardHandle, report: dict) -> list[Row]:
        for line in report.get("logs") or []:
            self.log(f"shard {shard.index}: {line}")
        shard.stats = report.get("stats") or shard.stats
        rows = []
        for row, blob in report.get("rows") or []:
            seed = row.seed
            job = (row.arm, seed) if self.arms else seed
            if job not in shard.assigned or job in self._returned:  # never two rows for a job
                self.log(f"shard {shard.index}: dropped a row for {job_words(job)} it does not hold")
                continue
            shard.assigned.discard(job)
            self._returned.add(job)
            shard.episodes += 1
            if row.worker is not None:  # worker ids unique over the cluster
                row = row.with_fields(worker=shard.index * self.workers_per_shard + int(row.worker))
            if blob is not None and row.get("video"):
                row = self._write_video(row, blob)
            rows.append(row)
        refused = [j for j in map(as_job, report.get("refused") or []) if j in shard.assigned]
        for job in refused:
            shard.assigned.discard(job)
        if refused:
            self._requeued.extend(refused)
        # seeds handed out after this call was issued are still in the outbox: not free
        shard.free = max(0, int(report.get("free") or 0) - len(shard.outbox))
        shard.reported = shard.reported or shard.free > 0
        if not report.get("alive", True):
            self._lose(shard, "every worker of the shard died")
        return rows

    def _plan_order(self, job) -> tuple[int, int]:
        arm, seed = job_parts(job)
        return seed, self._arm_rank.get(arm, 0)

    def _write_video(self, row: Row, blob: bytes) -> Row:
        """The shipped video into the run directory; the row without its video when it cannot be written."""
        path = self.run_dir / row.get("video")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".part")
            tmp.write_bytes(blob)
            os.replace(tmp, path)
        except OSError as exc:
            self.log(f"video of seed {row.seed} not written: {exc}")
            return row.with_fields(video=None)
        return row

    def _lose(self, shard: _ShardHandle, reason: str) -> None:
        seeds = sorted(set(shard.assigned) | set(shard.outbox), key=self._plan_order)  # seeds, or (arm, seed)
        shard.state, shard.ref, shard.free = SHARD_LOST, None, 0
        shard.assigned.clear()
        shard.outbox = []
        self._requeued.extend(seeds)
        self.requeued_total.extend(seeds)
        self.lost_shards.append({"shard": shard.index, "node_id": shard.node_id, "node_ip": shard.node_ip,
                                 "host": shard.info.get("host"), "reason": reason, "seeds_requeued": seeds,
                                 "at": rd.utc_now()})
        self.log(f"ray: lost shard {shard.index} on {shard.node_ip} ({reason}); "
                 f"its unfinished seeds {seeds} go to the other shards")
        self._kill(shard)

    def _kill(self, shard: _ShardHandle) -> None:
        try:
            self.ray.kill(shard.actor, no_restart=True)
        except Exception:
            pass
        try:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(shard.pg)
        except Exception:
            pass

    def _teardown(self) -> None:
        for s in self.shards:
            if s.actor is not None or s.pg is not None:
                self._kill(s)
        try:
            self.ray.shutdown()
        except Exception:
            pass


# what names the weights a shard loaded: every shard must agree on these, or the run is not one policy




def _node_summary(nodes: list[dict]) -> str:
    if not nodes:
        return "none alive"
    return ", ".join(f"{n.get('NodeManagerAddress')} ({n.get('Resources', {}).get('CPU', 0):g} CPU, "
                     f"{n.get('Resources', {}).get('GPU', 0):g} GPU)" for n in nodes)
