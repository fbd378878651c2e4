"""Scale-out on a REAL Ray cluster on loopback (no mocks): a head and a second node started by
the tests (1 CPU each, token authentication with a per-test-session token, usage stats off,
private temp dir and ports), and real `fontaine-eval --ray` runs against it. The nodes run in
their own sessions and process groups, which teardown (and the node-death test) kill: never `ray stop`,
which would stop every Ray process of this user on the machine.

Each run costs a driver, and a Ray run a Ray worker and a sim worker per shard (seconds of imports
each), so checks that need the same run share it: the spread run (a module fixture) is held to a
local run's rows and to carrying no secret to its shards; the SIGTERM-while-connecting run to
stopping at once and to doing so with a relative run directory.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import (
    REPO,
    launch_detached,
    read_rows,
    read_status,
    run_eval,
    shadowing_working_folder,
    stable,
    wait_until,
)

ray = pytest.importorskip("ray", reason="the Ray extra is not installed (pip install '.[ray]')")

RAY_BIN = Path(sys.executable).parent / "ray"
FINAL = ("stopped", "done", "failed")
SCRIPTED = ("--policy", "scripted", "--episode-seconds", "12", "--video-draw", "none")
# slow episodes for mid-run control: a served policy (loaded in each shard) with a fixed cost per predict
SLOW = ("--policy", "hold", "--inject-latency-ms", "300", "--episode-seconds", "6", "--video-draw", "none")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_pids(sid: int) -> list[int]:
    """The processes of session `sid`: a Ray worker (a shard actor, and its pool's sim workers) sets its
    own process group, so only the session (`ray start` is its leader) holds every process of a node."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid:  # state, ppid, pgrp, session
            pids.append(int(stat.parent.name))
    return pids


class LoopbackCluster:
    """`ray start --head` plus a second `ray start` node, each in its own session and process group."""

    def __init__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="frt", dir="/tmp"))  # short: Ray's socket paths have a length limit
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client_env = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                           "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_TMPDIR": str(self.tmp)}
        # nothing under ~/.ray, and the shards' scratch dirs (a killed node leaves its own) go with the cluster
        self.node_env = {**os.environ, **self.client_env, "HOME": str(self.tmp), "TMPDIR": str(self.tmp)}
        self.procs: dict[str, subprocess.Popen] = {}
        self.sessions: set[int] = set()  # every node's session, the killed ones' too: what teardown ends

    def _start(self, name: str, args: list[str]) -> None:
        common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats",
                  f"--dashboard-agent-listen-port={_free_port()}", f"--dashboard-agent-grpc-port={_free_port()}",
                  f"--metrics-export-port={_free_port()}", f"--runtime-env-agent-port={_free_port()}"]
        log = open(self.tmp / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen([str(RAY_BIN), "start", *args, *common], env=self.node_env,
                                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT)
        self.sessions.add(self.procs[name].pid)

    def start(self) -> None:
        self._start("head", ["--head", f"--port={self.port}", "--include-dashboard=false",
                             f"--dashboard-port={_free_port()}", f"--temp-dir={self.tmp}"])
        self._wait_started("head")
        self.start_node2()

    def start_node2(self) -> None:
        log = self.tmp / "node2.log"
        if log.exists():  # a node2 started before and killed: its log's 'started' is not this one's
            log.rename(self.tmp / f"node2.{time.monotonic_ns()}.log")
        self._start("node2", [f"--address={self.address}", "--num-gpus=1"])  # a declared (fake) GPU
        self._wait_started("node2")
        self.wait_nodes(2)

    def _wait_started(self, name: str) -> None:
        def started():
            if self.procs[name].poll() is not None:
                raise AssertionError(f"ray {name} exited: {(self.tmp / f'{name}.log').read_text()[-3000:]}")
            return "Ray runtime started" in (self.tmp / f"{name}.log").read_text()
        wait_until(started, timeout=120, interval=0.2, what=f"ray {name} to start")

    def alive_nodes(self) -> int:
        for name, p in self.procs.items():
            if p.poll() is not None and name == "head":
                raise AssertionError(f"ray head exited: {(self.tmp / 'head.log').read_text()[-3000:]}")
        out = subprocess.run([str(RAY_BIN), "status", f"--address={self.address}"], env=self.node_env,
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            return 0
        active = out.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
        return sum(1 for line in active.splitlines() if "node_" in line)

    def wait_nodes(self, n: int) -> None:
        wait_until(lambda: self.alive_nodes() >= n, timeout=120, interval=0.5, what=f"{n} Ray node(s)")

    def ensure_both_nodes(self) -> None:
        """Both nodes up: the node-death test kills node2, and a test after it (the same module run
        again: scripts/repeat.sh) found one node, placed one of two shards and failed."""
        if "node2" not in self.procs:
            self.start_node2()

    def kill_now(self, name: str) -> None:
        """A node dies: every process of its group gets SIGKILL at once (its shard actors, in groups of
        their own, go on until they find their raylet gone, then die: the driver loses the shard then)."""
        p = self.procs.pop(name)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)

    def stop(self) -> None:
        """Teardown: SIGKILL to every process of every node's session at once (the cluster is thrown
        away; a SIGTERM'd `ray start --block` took its 3 s of grace), the shard actors and their sim
        workers, in process groups of their own, included; then wait for the `ray start`s."""
        for sid in self.sessions:
            for pid in _session_pids(sid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs.values():
            p.wait(timeout=30)
        self.procs.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def _cluster():
    c = LoopbackCluster()
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture
def cluster(_cluster):
    """The module's cluster with both its nodes (ensure_both_nodes)."""
    _cluster.ensure_both_nodes()
    return _cluster


def _final(run_dir, timeout=240):
    return wait_until(lambda: read_status(run_dir).get("state") in FINAL and read_status(run_dir),
                      timeout=timeout, what=f"a final state in {run_dir}")


def _log(run_dir) -> str:
    p = run_dir / "driver.log"
    return p.read_text()[-6000:] if p.exists() else ""


def _finished(proc: subprocess.Popen, run_dir: Path, timeout: float = 300) -> tuple[int, str]:
    """(exit code, the end of driver.log) of a run launched beside another (tests.helpers.launch_detached)."""
    try:
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return code, _log(run_dir)


FAKE_WEBHOOK = ("https://discord.com/api/webhooks/123456789012345678/"
                "Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7Bh4Gt9Cr1Jm6Ez0")


@pytest.fixture(scope="module")
def spread_run(_cluster, tmp_path_factory):
    """One `--ray` run of seeds 0-3 over both nodes (seed 2 filmed), its driver holding a Discord webhook
    and a token, and the same seeds run locally beside it (the reference its rows are held to)."""
    _cluster.ensure_both_nodes()
    base = tmp_path_factory.mktemp("spread")
    ref, run_dir = base / "local", base / "ray"
    local = launch_detached(ref, *SCRIPTED, "--seeds", "0-3", "--workers", "1")
    env = {**_cluster.client_env, "FONTAINE_DISCORD_WEBHOOK_URL": FAKE_WEBHOOK, "FONTAINE_CI_TOKEN": "x" * 20}
    try:
        out = run_eval(*SCRIPTED[:4], "--seeds", "0-3", "--workers", "1", "--ray", _cluster.address,
                       "--video-draw", "seeds:2", "--run-dir", str(run_dir), env=env)
    finally:
        local_result = _finished(local, ref)
    return SimpleNamespace(address=_cluster.address, run_dir=run_dir, out=out, ref=ref, local=local_result)


@pytest.mark.slow
def test_a_run_spreads_over_both_shards_and_its_rows_equal_a_local_runs(spread_run):
    code, log = spread_run.local
    assert code == 0, log
    out, run_dir = spread_run.out, spread_run.run_dir
    assert out.returncode == 0, out.stderr + out.stdout
    rows = {r["seed"]: r for r in read_rows(run_dir)}
    ref_rows = {r["seed"]: r for r in read_rows(spread_run.ref)}
    assert sorted(rows) == [0, 1, 2, 3] and len(read_rows(run_dir)) == 4
    for seed in rows:
        assert stable(rows[seed]) == stable(ref_rows[seed]), f"seed {seed} differs on Ray"
    status = read_status(run_dir)
    ex = status["executor"]
    assert status["state"] == "done" and ex["executor"] == "ray" and ex["shards"] == 2
    assert all(s["episodes"] >= 1 for s in ex["per_shard"]), ex  # both shards ran episodes
    assert len({r["worker"] for r in rows.values()}) == 2  # worker ids unique over the cluster
    assert not ex["lost_shards"] and not ex["requeued_seeds"] and ex["worker_crashes"] == 0
    # the video filmed on a shard's node is shipped to the driver and written in the run dir
    assert rows[2]["video"] == "videos/rollout_seed002.mp4"
    assert (run_dir / rows[2]["video"]).stat().st_size > 1000
    manifest = json.loads((run_dir / "manifest.json").read_text())
    c = manifest["cluster"]
    assert c["address"] == spread_run.address and c["ray_version"] == ray.__version__
    assert len(c["nodes"]) == 2 and c["shards"] == 2 and c["gpus_per_shard"] == 0
    assert c["usage_stats"] == "0" and c["auth_mode"] == "token" and c["dashboard"] is False


@pytest.mark.slow
def test_a_lerobot_checkpoint_runs_on_the_shards(cluster, tmp_path):
    """What the README says of `--lerobot ... --ray`: each shard loads the checkpoint once and serves
    its own workers' chunks; the rows and the manifest are those of a local lerobot run. Two seeds
    are enough: each shard loads the checkpoint whatever it runs (its weights' hash is in the manifest),
    and the two episodes' chunks are served on the shards."""
    pytest.importorskip("lerobot")
    from tests.engine.lerobot_fixtures import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "act", "act")  # the same path on both (loopback) nodes
    run_dir = tmp_path / "ray"
    out = run_eval("--lerobot", str(ckpt), "--seeds", "0-1", "--episode-seconds", "1", "--render-size", "48",
                   "--video-draw", "none", "--device", "cpu", "--workers", "1", "--ray", cluster.address,
                   "--ray-gpus-per-shard", "0", "--run-dir", str(run_dir), env=cluster.client_env)
    assert out.returncode == 0, out.stderr + out.stdout + _log(run_dir)
    rows = read_rows(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1]
    assert all(r["status"] == "ok" and r["predicts"] == 6 for r in rows)  # 30 ticks, chunks of 5: as locally
    ex = read_status(run_dir)["executor"]
    assert ex["executor"] == "ray" and ex["shards"] == 2 and sum(s["episodes"] for s in ex["per_shard"]) == 2
    assert not ex["lost_shards"] and ex["worker_crashes"] == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    resolved = manifest["policy_resolved"]  # what the shards loaded (they agree), not the placeholder of the ask
    assert resolved["policy"] == "lerobot" and resolved["policy_type"] == "act" and resolved["serving"] == "chunk"
    assert len(resolved["weights_sha256"]) == 64 and resolved["served"] == "in each Ray shard, batched"
    assert [s["policy"]["weights_sha256"] for s in manifest["cluster"]["per_shard"]] == [resolved["weights_sha256"]] * 2
    assert manifest["cluster"]["shards"] == 2 and manifest["cluster"]["gpus_per_shard"] == 0


def test_the_manifest_records_what_the_shards_loaded_and_refuses_shards_that_disagree():
    """policy_resolved of a Ray run: the fields every shard agrees on; a node's own path or device
    per shard; different weights (or revision, decode, ...) on two nodes are not one policy."""
    from engine.record.errors import DriverError
    from engine.scaleout.shard import shards_policy

    a = {"policy": "lerobot", "weights_sha256": "ab" * 32, "device": "cuda:0", "checkpoint_path": "/home/a/hf/x"}
    b = {**a, "checkpoint_path": "/home/b/hf/x"}
    got = shards_policy([a, b])
    assert got == {"policy": "lerobot", "weights_sha256": "ab" * 32, "device": "cuda:0", "served": "in each Ray shard",
                   "by_shard": {"checkpoint_path": ["/home/a/hf/x", "/home/b/hf/x"]}}
    with pytest.raises(DriverError) as exc:
        shards_policy([a, {**b, "weights_sha256": "cd" * 32}])
    assert "different weights_sha256 (shard 0: abab" in str(exc.value) and "same checkpoint" in str(exc.value)
    oracle = {"policy": "scripted", "served": "in each worker"}
    stepped = {"policy": "lerobot", "served": "in each worker, select_action every tick"}
    both = shards_policy([{"held": {"policy": "hold"}, "oracle": oracle, "act": stepped}] * 2, comparison=True)
    assert both == {"held": {"policy": "hold", "served": "in each Ray shard"},
                    "oracle": {"policy": "scripted", "served": "in each worker of each Ray shard"},
                    "act": {"policy": "lerobot", "served": "in each worker of each Ray shard, select_action every tick"}}
    with pytest.raises(DriverError, match="different decode for arm b"):
        shards_policy([{"b": {"decode": "grammar-masked"}}, {"b": {"decode": "reference"}}], comparison=True)


@pytest.mark.slow
def test_gpu_shards_go_where_the_gpus_are_and_count_in_gpu_hours(cluster, tmp_path):
    run_dir = tmp_path / "run"
    out = run_eval(*SCRIPTED, "--seeds", "0-1", "--workers", "1", "--ray", cluster.address, "--ray-gpus-per-shard", "1",
                   "--run-dir", str(run_dir), env=cluster.client_env)
    assert out.returncode == 0, out.stderr + out.stdout
    status = read_status(run_dir)
    assert status["state"] == "done" and status["executor"]["shards"] == 1  # one node has a GPU: one shard
    assert status["gpus"] == 1 and status["gpu_hours"] > 0  # allocated: wall x the GPU the shard held
    c = json.loads((run_dir / "manifest.json").read_text())["cluster"]
    assert c["gpus_held"] == 1 and c["gpus_per_shard"] == 1
    assert c["per_shard"][0]["cuda_visible_devices"] == "0"  # Ray gave the shard its GPU
    assert c["per_shard"][0]["node_id"] == next(n["node_id"] for n in c["nodes"] if n["gpus"] == 1)


def test_the_shard_environment_carries_no_secret():
    from engine.scaleout.shard import shard_env

    env = {"FONTAINE_DISCORD_WEBHOOK_URL": FAKE_WEBHOOK, "FONTAINE_DISCORD_WEBHOOK_FILE": "/x",
           "FONTAINE_SOME_TOKEN": "t", "FONTAINE_API_KEY": "k", "FONTAINE_RAY_START_TIMEOUT_S": "9",
           "MUJOCO_GL": "egl", "HF_TOKEN": "h", "HOME": "/root"}
    assert shard_env(env) == {"FONTAINE_RAY_START_TIMEOUT_S": "9", "MUJOCO_GL": "egl"}


@pytest.mark.slow
def test_a_shard_on_the_cluster_gets_no_webhook_from_a_driver_that_has_one(spread_run):
    """The spread run's driver holds a webhook and a FONTAINE_*_TOKEN: neither of its two shards sees them,
    and no file of the run (rows, manifest, the shipped video) holds the webhook."""
    out, run_dir = spread_run.out, spread_run.run_dir
    assert out.returncode == 0, out.stderr + out.stdout
    shards = json.loads((run_dir / "manifest.json").read_text())["cluster"]["per_shard"]
    assert len(shards) == 2
    for s in shards:  # the names of the secret-looking variables the shard process itself saw
        assert "RAY_AUTH_TOKEN" in s["env_secrets"]  # the node's own (its `ray start` env): the check sees
        assert not [n for n in s["env_secrets"] if "WEBHOOK" in n or n.startswith("FONTAINE_")], s["env_secrets"]
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_WEBHOOK.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_a_client_without_the_clusters_token_gets_one_clear_error(cluster, tmp_path):
    run_dir = tmp_path / "run"
    env = {**cluster.client_env, "RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "",
           "RAY_gcs_server_port_wait_time_s": "2"}  # Ray retries the GCS for 20 s by default
    out = run_eval(*SCRIPTED, "--seeds", "0", "--ray", cluster.address, "--run-dir", str(run_dir), env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot connect to the Ray cluster" in out.stderr and "RAY_AUTH_MODE=token" in out.stderr
    assert read_status(run_dir)["state"] == "failed"


@pytest.mark.slow
def test_stop_file_stops_both_shards_at_an_episode_boundary(cluster, tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *SLOW, "--seeds", "0-7", "--workers", "1", "--ray", cluster.address,
                           env=cluster.client_env)
    try:
        wait_until(lambda: len(read_rows(run_dir)) >= 1, timeout=180, what="a first row")
        busy = read_status(run_dir)["executor"]["per_shard"]
        (run_dir / "STOP").write_text(json.dumps({"by": "test", "reason": "enough", "at": "now"}))
        status = _final(run_dir)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    rows = read_rows(run_dir)
    assert status["state"] == "stopped" and "enough" in status["reason"], _log(run_dir)
    assert 2 <= len(rows) < 8 and status["done"] == len(rows) == len({r["seed"] for r in rows})
    assert all(r["status"] == "ok" and r["ticks"] == 180 for r in rows)  # whole episodes only
    ex = status["executor"]
    assert all(s["episodes"] >= 1 and not s["in_flight"] for s in ex["per_shard"]), ex  # both finished theirs
    assert len(busy) == 2 and not status["lost_seeds"] and not ex["lost_shards"] and not ex["requeued_seeds"]
    assert ex["predict_rounds"] >= len(rows) * 6 and status["mean_batch"] == 1.0  # one worker per shard


@pytest.mark.slow
def test_second_sigterm_aborts_every_shard_without_rows(cluster, tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *SLOW[:4], "--video-draw", "none", "--episode-seconds", "15", "--seeds", "0-7",
                           "--workers", "1",
                           "--ray", cluster.address, env=cluster.client_env)  # 15 predicts: ~5 s episodes
    try:
        wait_until(lambda: (read_status(run_dir).get("executor") or {}).get("predict_rounds", 0) >= 2,
                   timeout=180, what="episodes running on the shards")
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda: read_status(run_dir).get("state") == "stopping", timeout=30, what="stopping")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    status = read_status(run_dir)
    assert status["state"] == "stopped" and "aborted" in status["reason"], _log(run_dir)
    rows = read_rows(run_dir)
    assert status["lost_seeds"] and not ({r["seed"] for r in rows} & set(status["lost_seeds"]))
    assert all(r["status"] == "ok" for r in rows) and len(rows) + len(status["lost_seeds"]) < 8


def _small_comparison(folder: Path) -> Path:
    """The shipped comparison example at one worker per shard (the loopback nodes have 1 CPU each)
    and 3 seeds, frozen afresh: too few to decide, so both arms run every seed. Seed 2 is one that
    only `steady` succeeds on, so the decision both runs record has a discordant seed to read."""
    from prereg.document.seal import freeze
    from tests.comparison_run import compare_doc

    doc = compare_doc(folder)
    text = doc.read_text()
    text = text[:text.index("<!-- fontaine:sealed")]  # the plan, unfrozen
    for old, new in (("workers: 2", "workers: 1"), ("seeds: 0-59", "seeds: 0-2"), ("max_seeds: 60", "max_seeds: 3"),
                     ("after_episodes: 4", "after_episodes: 8")):
        assert old in text, old
        text = text.replace(old, new)
    doc.write_text(text)
    freeze(doc)
    return doc


@pytest.mark.slow
def test_a_comparison_run_spreads_both_arms_over_the_shards_and_equals_a_local_one(cluster, tmp_path):
    """`--prereg DOC --arms A,B --ray ADDR` (issue 24): every (arm, seed) once, each arm's rows equal to
    the same comparison run on this machine (run beside it), the decision read the same way."""
    doc = _small_comparison(tmp_path)
    arms = ("--prereg", str(doc), "--arms", "clumsy,steady")
    ref = tmp_path / "local"
    local = launch_detached(ref, *arms)
    run_dir = tmp_path / "ray"
    try:
        out = run_eval(*arms, "--ray", cluster.address, "--run-dir", str(run_dir), env=cluster.client_env)
    finally:
        code, log = _finished(local, ref)
    assert code == 0, log
    assert out.returncode == 0, out.stderr + out.stdout
    rows = read_rows(run_dir)
    pairs = {(r["arm"], r["seed"]): r for r in rows}
    expected = [(a, s) for a in ("clumsy", "steady") for s in range(3)]
    assert sorted(pairs) == expected and len(rows) == 6  # every (arm, seed) exactly once
    ref_pairs = {(r["arm"], r["seed"]): r for r in read_rows(ref)}
    for key in expected:
        assert stable(pairs[key]) == stable(ref_pairs[key]), f"{key} differs on Ray"
    status, ref_status = read_status(run_dir), read_status(ref)
    ex = status["executor"]
    assert status["state"] == "done" and ex["executor"] == "ray" and ex["shards"] == 2
    assert all(s["episodes"] >= 1 for s in ex["per_shard"]), ex  # both shards ran episodes
    assert status["arms"] == ["clumsy", "steady"] and (status["done"], status["total"]) == (6, 6)
    assert status["comparison"] == ref_status["comparison"] and status["comparison"]["outcome"] == "undecided"
    assert status["comparison"]["b_only"] == 1  # seed 2: the read had a discordant seed
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["arm"] == "clumsy-vs-steady" and manifest["cluster"]["shards"] == 2
    assert manifest["policy_resolved"] == {a: {"policy": "scripted", "served": "in each worker of each Ray shard",
                                               "rows": "invariant"}
                                           for a in ("clumsy", "steady")}
    assert all(set(s["policy"]) == {"clumsy", "steady"} for s in manifest["cluster"]["per_shard"])


@pytest.mark.slow
def test_a_node_that_dies_mid_run_leaves_every_seed_exactly_once(cluster, tmp_path):
    run_dir = tmp_path / "run"
    proc = launch_detached(run_dir, *SLOW, "--seeds", "0-5", "--workers", "1", "--ray", cluster.address,
                           env=cluster.client_env)
    try:
        # the first row: both shards are mid-episode (each goes straight on to its next seed)
        wait_until(lambda: len(read_rows(run_dir)) >= 1, timeout=180, what="a first row")
        cluster.kill_now("node2")
        status = _final(run_dir)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    rows = read_rows(run_dir)
    assert status["state"] == "done", _log(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1, 2, 3, 4, 5]  # every seed, exactly once
    assert all(r["status"] == "ok" for r in rows)
    lost = status["executor"]["lost_shards"]
    assert len(lost) == 1 and lost[0]["reason"], status["executor"]
    assert lost[0]["seeds_requeued"] and set(lost[0]["seeds_requeued"]) <= {r["seed"] for r in rows}
    assert status["executor"]["shards_running"] == 0 and len(status["executor"]["per_shard"]) == 2
    assert "lost shard" in _log(run_dir)


@pytest.fixture(scope="module")
def sigterm_while_connecting(tmp_path_factory):
    """A run started from its own folder with a relative run directory (the default runs/<id> is one),
    `--ray` at a port nothing listens on (it resolves and never answers), and a SIGTERM while ray.init
    connects. One run for the two tests below: a relative directory is the harder case of the same stop."""
    cwd = tmp_path_factory.mktemp("connect")
    run_dir = cwd / "runs" / "rel"
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli", "--policy", "hold", "--episode-seconds", "2",
                             "--video-draw", "none", "--seeds", "0-1", "--ray", f"127.0.0.1:{_free_port()}",
                             "--run-dir", "runs/rel"], cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        wait_until(lambda: read_status(run_dir).get("state") == "running", timeout=120, what="a running driver")
        time.sleep(1.0)  # inside ray.init's connect
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return SimpleNamespace(code=proc.returncode, out=out, run_dir=run_dir, took=took)


def test_sigterm_while_connecting_to_a_cluster_that_never_answers_stops_the_run_at_once(sigterm_while_connecting):
    """`--ray nohost:1`: ray.init blocks in C for ~40 s, where no signal handler runs; the run
    ignored SIGTERM and stayed `running`. Now it ends promptly (within 20 s of the signal) `stopped`,
    by the signal, exit 3, no episode run. (A host that does not resolve is refused before Ray starts:
    a port nothing listens on is one that resolves and never answers.)"""
    run = sigterm_while_connecting
    assert run.took < 20, run.took  # inside ray.init's connect, unhandled, it took about 40 s
    status = read_status(run.run_dir)
    assert run.code == 3, (run.code, run.out[-2000:])
    assert status["state"] == "stopped" and status["stop"]["by"] == "signal", status
    assert read_rows(run.run_dir) == []


def test_a_cluster_that_never_answers_is_given_up_on_left_alone(tmp_path):
    """Issue 33: `--ray nohost:1` left alone stayed `running` after 360 s (Ray retried for good). It
    gives up after FONTAINE_RAY_CONNECT_TIMEOUT_S: one line, exit 2, the run `failed` with why, no episode."""
    run_dir = tmp_path / "run"
    address = f"127.0.0.1:{_free_port()}"  # resolves, and nothing answers there
    proc = launch_detached(run_dir, "--policy", "hold", "--episode-seconds", "2", "--video-draw", "none",
                           "--seeds", "0-1", "--ray", address, env={"FONTAINE_RAY_CONNECT_TIMEOUT_S": "3"})
    try:
        code = proc.wait(timeout=240)  # Ray's import and the 3 s; before, it never ended
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (run_dir / "driver.log").read_text()
    assert code == 2, (code, log[-2000:])
    (line,) = [x for x in log.splitlines() if x.startswith("fontaine-eval: ")][-1:]
    assert f"cannot connect to the Ray cluster at '{address}': no answer within 3 s" in line, line
    status = read_status(run_dir)
    assert status["state"] == "failed" and "no answer within 3 s" in status["reason"], status
    assert read_rows(run_dir) == [] and "Traceback" not in log


@pytest.mark.slow
def test_shards_never_import_from_the_drivers_working_folder(tmp_path):
    """Ray puts the driver's working folder first on every worker's sys.path: run from a folder that
    holds an `engine.py`, the shard imported it and failed to start (issue 43)."""
    folder, argv = shadowing_working_folder(tmp_path)
    run_dir = tmp_path / "run"
    ray_tmp = Path(tempfile.mkdtemp(prefix="frt", dir="/tmp"))  # short: Ray's socket paths have a length limit
    try:
        out = subprocess.run([*argv, "--policy", "scripted", "--episode-seconds", "2", "--seeds", "0-2",
                              "--video-draw", "none", "--ray", "local", "--run-dir", str(run_dir)], cwd=folder,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(REPO), "RAY_TMPDIR": str(ray_tmp)})
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert "was imported" not in out.stdout + out.stderr
    assert sorted(r["seed"] for r in read_rows(run_dir)) == [0, 1, 2]


def test_sigterm_while_connecting_stops_a_run_whose_directory_is_relative(sigterm_while_connecting):
    """ray.init runs in the package's folder (the working folder is not the shards'): a relative run
    directory (the default runs/<id>) must still be where the signal's STOP and status go."""
    run = sigterm_while_connecting
    status = read_status(run.run_dir)
    assert run.code == 3, run.out[-2000:]
    assert status["state"] == "stopped" and status["stop"]["by"] == "signal", status


def _comparison_config(**over):
    from engine.policies.factory import PolicySpec
    from engine.record.config import RunConfig

    held, oracle = PolicySpec(kind="hold"), PolicySpec(kind="scripted")
    return RunConfig(run_id="cmp", arm="oracle-vs-held", policy=oracle, seeds=[0, 1], episode_seconds=1.0,
                     workers=2, video_draw="none", render_size=48,
                     arms=[{"arm": "oracle", "policy": oracle.as_dict()}, {"arm": "held", "policy": held.as_dict()}],
                     **over)


def test_a_shard_serves_each_arm_of_a_comparison_run_on_its_node(tmp_path):
    """The shard actor's own code, called in this process (a Ray actor runs the same methods): the
    served arm's policy is loaded once on the shard and answers that arm's episodes; the other arm's
    runs in each worker; every (arm, seed) handed over comes back as one row that names its arm."""
    from engine.scaleout.shard import Shard

    shard = Shard(_comparison_config(), 0, 2, {})
    try:
        assert shard.policy_description["held"]["policy"] == "hold"
        assert shard.policy_description["oracle"] == {"policy": "scripted", "served": "in each worker", "rows": "invariant"}
        assert set(shard.pool.policies) == {"held"}  # only the served arm is loaded on the shard
        wait_until(lambda: shard.step([], 0, True, 0.5)["free"] == 2, timeout=120, what="the shard's two workers")
        jobs, rows = [("oracle", 0), ("held", 0)], []
        report = shard.step(jobs, 2, True, 1.0)
        assert report["refused"] == []
        rows += [r for r, _ in report["rows"]]
        deadline = time.monotonic() + 120
        while len(rows) < 2 and time.monotonic() < deadline:
            rows += [r for r, _ in shard.step([], report["free"], True, 1.0)["rows"]]
        assert sorted((r.arm, r.seed) for r in rows) == [("held", 0), ("oracle", 0)]
        held = next(r for r in rows if r.arm == "held")
        assert held.get("predicts") > 0 and shard.pool.stats()["predict_rounds"] > 0  # served here, batched
    finally:
        shard.close()


def test_the_pool_hands_a_lost_shards_comparison_jobs_back_as_arm_and_seed_in_plan_order():
    """A lost shard's jobs go back to the driver in its own form, (arm, seed), A's seed k before B's,
    and a row is taken once per (arm, seed): a seed's row of one arm never answers for the other."""
    from engine.scaleout.ray_pool import RayPool, _ShardHandle
    from prereg.rundir.row import Row

    pool = RayPool.__new__(RayPool)  # the bookkeeping alone: no cluster
    pool.cfg, pool.log, logs = _comparison_config(), None, []
    pool.log = logs.append
    pool.arms, pool._arm_rank = True, {"oracle": 0, "held": 1}
    pool.workers_per_shard, pool._requeued, pool.requeued_total, pool._returned = 2, [], [], set()
    pool.lost_shards, pool.ray, pool._started = [], None, True
    shard = _ShardHandle(index=0, node_id="n", node_ip="127.0.0.1", pg=None, state="running", free=4)
    pool.shards = [shard]
    pool._kill = lambda s: None
    for arm, seed in (("held", 1), ("oracle", 1), ("held", 0), ("oracle", 0)):
        pool.submit(seed, arm=arm)
    assert pool.in_flight() == [("oracle", 0), ("held", 0), ("oracle", 1), ("held", 1)]  # plan order, as the driver's jobs
    shard.outbox = []  # the step call that carries them is out (what _issue does)
    rows = pool._take_report(shard, {"rows": [(Row.episode(0, arm="held"), None), (Row.episode(0, arm="held"), None),
                                              (Row.episode(7, arm="oracle"), None)],
                                     "refused": [["held", 1]], "free": 0, "alive": True})
    assert rows == [Row.episode(0, arm="held")]  # the repeat and the job it was never handed are dropped
    assert sum("dropped a row" in ln for ln in logs) == 2 and pool.take_requeued() == [("held", 1)]
    pool._lose(shard, "node died")
    assert pool.take_requeued() == [("oracle", 0), ("oracle", 1)]
    assert pool.lost_shards[0]["seeds_requeued"] == [("oracle", 0), ("oracle", 1)]
