"""Connecting a run to a Ray cluster (engine/scaleout/ray_pool.py places its shards once connected):
Ray imported or one clear message, `ray.init` on a private `local` cluster or an existing cluster's
address, authentication as Ray reads it from the environment, and a connection that a stop signal can
interrupt and that gives up after FONTAINE_RAY_CONNECT_TIMEOUT_S."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path

from engine.process.environ import outside_the_working_folder
from engine.process.signals import STOP_SIGNALS
from engine.record.errors import DriverError, StartInterrupted
from prereg.core.webhook_env import scrub_webhooks

CONNECT_TIMEOUT_S = float(os.environ.get("FONTAINE_RAY_CONNECT_TIMEOUT_S", "60"))  # an address that does not answer
INSTALL_HINT = "pip install '.[ray]'"


def require_ray():
    """Import Ray, or fail with one clear message (the CLI prints it and exits 2)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # before Ray reads its config
    try:
        import ray
    except ImportError as exc:
        raise DriverError(f"--ray needs the optional Ray extra, which is not installed here ({exc}); "
                          f"install it with: {INSTALL_HINT}  (Ray 2.60.0)") from None
    return ray


def connect(ray, cfg, settings: dict, address: str, workers_per_shard: int, log) -> None:
    """ray.init for a run: a private `local` cluster (this process's token, the webhook scrubbed from
    what its raylet inherits) or an existing cluster's address, with the driver's own stop signals
    kept in force; every failure one DriverError that says what to do."""
    kwargs: dict = {"logging_level": logging.WARNING, "log_to_driver": False,
                    "namespace": f"fontaine-{cfg.run_id}"}
    if address == "local":  # a private cluster on this machine, stopped at close
        shards = int(settings.get("shards") or 1)
        kwargs.update(address="local", include_dashboard=bool(settings.get("dashboard")),
                      num_cpus=max(os.cpu_count() or 1, shards * workers_per_shard))
        _ephemeral_token_for_a_private_cluster()
        # the private cluster's raylet, and so every shard, inherits this process's environment
        scrub_webhooks()  # the driver never posts: the webhook is the notifier's alone
    else:
        kwargs["address"] = address
        if settings.get("dashboard"):
            log("--ray-dashboard: an existing cluster has the dashboard its `ray start` gave it "
                     "(--include-dashboard=true on the head)")
    if ray.is_initialized():
        ray.shutdown()
    # ray.init installs a SIGTERM handler that exits; the driver's own (first signal = stop at
    # the episode boundary, second = abort) must stay in force
    saved = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    try:
        with outside_the_working_folder():  # a shard never imports from the user's working folder
            if address == "local":
                ray.init(**{k: v for k, v in kwargs.items() if v is not None})
            else:
                _init_interruptibly(ray, kwargs, saved, address, log)
    except (StartInterrupted, DriverError):
        raise
    except Exception as exc:
        text = f"{type(exc).__name__}: {_first_line(exc)}"
        chain, e = [], exc
        while e is not None and len(chain) < 5:
            chain.append(f"{type(e).__name__}: {e}")
            e = e.__cause__ or e.__context__
        hint = ""
        if any(k in " ".join(chain) for k in ("InvalidAuthToken", "Unauthenticated", "AuthenticationError")):
            hint = (" The cluster uses token authentication (Ray 2.60's default): set RAY_AUTH_MODE=token and "
                    "give this machine the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
                    "~/.ray/auth_token), or run the cluster and this command with RAY_AUTH_MODE=disabled "
                    "on a trusted network.")
        raise DriverError(f"cannot connect to the Ray cluster at {address!r}: {_first_line(text)}.{hint}") from None
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in saved.items():
                if handler is not None:
                    signal.signal(sig, handler)
    log(f"ray: connected to {address} (Ray {ray.__version__}, usage stats "
             f"{'off' if os.environ.get('RAY_USAGE_STATS_ENABLED') == '0' else 'on'})")

def _init_interruptibly(ray, kwargs: dict, saved: dict, address: str, log) -> None:
    """ray.init on a cluster address, in a thread: connecting to an address that does not
    answer blocks in C for ~40 s, where no signal handler runs (`--ray nohost:1` ignored
    SIGTERM and left the run `running`). Here a SIGTERM, SIGINT or SIGHUP reaches the driver's
    own handler (which records the stop) and ends the wait at once: StartInterrupted. Left
    alone, the wait gives up after CONNECT_TIMEOUT_S (it retried for good: still `running` after
    6 minutes): a DriverError, nothing run."""
    outcome: dict = {}
    interrupted: list[int] = []

    def connect() -> None:
        try:
            ray.init(**{k: v for k, v in kwargs.items() if v is not None})
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            outcome["exc"] = exc

    def on_signal(signum, frame) -> None:
        interrupted.append(signum)
        handler = saved.get(signum)
        if callable(handler):
            handler(signum, frame)

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in saved:
            signal.signal(sig, on_signal)
    thread = threading.Thread(target=connect, name="ray-connect", daemon=True)  # never holds up the exit
    thread.start()
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while thread.is_alive() and not interrupted and time.monotonic() < deadline:
        thread.join(0.1)
    if thread.is_alive() and not interrupted:
        raise DriverError(f"cannot connect to the Ray cluster at {address!r}: no answer within "
                          f"{CONNECT_TIMEOUT_S:g} s; check the address (the head's host:port, e.g. 10.0.0.5:6379) "
                          "and that the cluster is up (`ray status` there)")
    if interrupted:
        name = signal.Signals(interrupted[0]).name
        log(f"ray: {name} while connecting to {address}: stopping before any episode")
        raise StartInterrupted(f"{name} received while connecting to the Ray cluster at {address!r}; "
                               "no episode ran")
    if "exc" in outcome:
        raise outcome["exc"]


def _ephemeral_token_for_a_private_cluster() -> None:
    """`--ray local` with no authentication configured: token auth with a token of this process
    only. Ray's default would write ~/.ray/auth_token, after which every `ray start --head` of this
    user silently turns token auth on."""
    if any(os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
        return
    if (Path.home() / ".ray" / "auth_token").exists():
        return  # Ray uses the user's token; nothing is written
    import secrets

    try:
        from ray._raylet import AuthenticationTokenLoader, Config

        os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
        Config.initialize("")  # what Ray itself does when it turns token auth on in a process
        AuthenticationTokenLoader.instance().reset_cache()
    except Exception:  # a Ray without these internals: its own default applies
        for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(k, None)


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
