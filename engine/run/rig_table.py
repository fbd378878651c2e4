"""The rig table of a scene: the states a reference policy (the scripted oracle unless told otherwise)
visits on given seeds, as seam statistics in rig degrees. The registered coverage tripwire
(engine/run/tripwires.py), `fontaine-eval --convmap-seam-stats` (engine/cli/convmap.py) and
scripts/convmap_figures.py build it here, running the episodes in this process."""

from __future__ import annotations

import numpy as np

from engine.policies.base import Chunk, Observation
from engine.policies.factory import PolicySpec


def scene_rig_table(seeds, episode_seconds: float, *, spec: PolicySpec | None = None, env: str | None = None,
                    log=print) -> dict:
    """The rig table (seam stats) of the scene: per-joint q01/q99, rig degrees, of the states a reference
    policy (the scripted oracle unless `spec` says otherwise) visits on `seeds`: each replan's state and
    the chunk's targets. Deterministic: the same seeds on the same scene give the same table. The
    registered coverage tripwire (engine/run/tripwires.py) and scripts/convmap_figures.py use it."""
    from engine.envs import DEFAULT_ENV, get_env
    from engine.policies.convmap.fit import seam_stats_from_states
    from engine.policies.convmap.shim import sim_rad_to_rig_deg
    from engine.policies.factory import make_policy
    from engine.workers.episode import run_episode

    spec = spec or PolicySpec(kind="scripted")
    seeds = [int(s) for s in seeds]
    policy = make_policy(spec)
    sim = get_env(env or DEFAULT_ENV).create(render_size=64)
    states: list[np.ndarray] = []

    def recording_predict(obs: Observation) -> Chunk:
        chunk = policy.predict_batch([obs])[0]
        states.append(sim_rad_to_rig_deg(obs.state_rad))
        states.extend(sim_rad_to_rig_deg(chunk.targets_rad))  # the states the controller is sent to
        return chunk

    successes = 0
    try:
        for i, seed in enumerate(seeds, start=1):
            row = run_episode(sim, seed, episode_seconds, recording_predict, chunk_horizon=policy.chunk_horizon,
                              needs_images=False, needs_privileged=policy.needs_privileged, task=spec.task)
            successes += bool(row["success"])
            log(f"seam stats: seed {seed} ({i}/{len(seeds)}) {'success' if row['success'] else 'no success'}")
    finally:
        sim.close()
    return seam_stats_from_states(np.asarray(states), source=f"{spec.kind} on seeds {seeds[0]}..{seeds[-1]} "
                                                             f"({successes}/{len(seeds)} successes)")
