"""What the driver writes into manifest.json at a run's start: what was asked for and what it resolved to.

The fields are the run-directory contract's (docs/run-directory.md, read back by
`prereg.rundir.Manifest`): the plan, the env and its content hash, the policy and what it resolved
to, the protocol, the gates, the config a resume starts from, and where and with what it ran.
"""

from __future__ import annotations

import socket

from engine.record.config import RunConfig
from engine.record.provenance import package_versions, tool_git_commit


def manifest_record(cfg: RunConfig, *, policy_resolved: dict | None, gpus: int, argv: list[str],
                    started_at: str) -> dict:
    """manifest.json of a new run (a resume appends to `resumes` instead)."""
    return {
        "run_id": cfg.run_id,
        "prereg": cfg.prereg,
        "arm": cfg.arm,
        "env": env_record(cfg.env),
        "policy": cfg.policy.as_dict(),
        "policy_resolved": policy_resolved,
        **({"arms": cfg.arms, "comparison": cfg.comparison} if cfg.arms else {}),
        "seeds": cfg.seeds,
        "episode_seconds": cfg.episode_seconds,
        "workers": cfg.workers,
        "batch_wait_ms": [cfg.batch_wait_ms, cfg.batch_wait_max_ms],
        "video_draw": cfg.video_draw,
        "video_size": cfg.video_size or cfg.render_size,
        "gates": cfg.gates.to_dict(),
        "gpus": gpus,
        "config": cfg.as_dict(),
        "argv": argv,
        "git_commit": tool_git_commit(),
        "versions": package_versions(),
        "host": socket.gethostname(),
        "device": (policy_resolved or {}).get("device"),
        "started_at": started_at,
    }


def env_record(name: str) -> dict:
    """The manifest's `env`: its name and content hash (the scene's XML takes about 1.5 s to write:
    once per process). The driver itself never needs MuJoCo to run, so a hash it cannot compute
    (MuJoCo failing to load here, say) is recorded as missing with why, and the workers say the rest."""
    try:
        from engine.envs import env_record as record

        return record(name)  # an env file's adds `file`, and its name is the one it declares
    except Exception as exc:  # noqa: BLE001 - the manifest says why; provenance treats a missing hash as not the registered env
        return {"name": name, "sha256": None, "sha256_error": f"{type(exc).__name__}: {str(exc)[:200]}"}
