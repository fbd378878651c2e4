"""The lerobot adapter acts as lerobot's own `select_action` loop does, on the same observations.

Tiny random lerobot policies are built with lerobot's API on the CPU (tests/engine/lerobot_fixtures.py).
The reference is lerobot-eval's loop written with lerobot's own functions: `preprocess_observation`,
the saved preprocessor, `select_action`, the saved postprocessor, every tick. Diffusion needs the
`diffusers` extra (not installed here) and SmolVLA a VLM download, so ACT carries both modes:
chunked (batched in the driver) and, with temporal ensembling, every tick (`select_action` itself).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lerobot")

import torch  # noqa: E402

from engine.policies.base import Observation  # noqa: E402
from engine.policies.convmap.shim import PRESETS, rig_deg_to_sim_rad  # noqa: E402
from engine.policies.lerobot_policy import FeatureError, check_feeds, load_policy, probe  # noqa: E402
from tests.engine.lerobot_fixtures import IMAGE, LerobotLoop, build_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def ensembled_dir(tmp_path_factory):
    return build_checkpoint(tmp_path_factory.mktemp("act-te") / "ckpt", "act", n_action_steps=1,
                            temporal_ensemble_coeff=0.01)


def _episode(seed: int, ticks: int, size: int = IMAGE[1]) -> list[Observation]:
    rng = np.random.default_rng(seed)
    state = rng.normal(size=6) * 0.3
    out = []
    for t in range(ticks):
        state = state + rng.normal(size=6) * 0.02
        images = {c: rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for c in ("front", "wrist")}
        out.append(Observation(seed=seed, tick=t, replan_index=t, state_rad=state.copy(), images=images))
    return out


def _adapter_actions(policy, episodes: list[list[Observation]]) -> np.ndarray:
    """(B, T, 6) in the checkpoint's units: a replan whenever the last chunk is used up."""
    ticks = len(episodes[0])
    out = np.zeros((len(episodes), ticks, 6))
    t = 0
    while t < ticks:
        obs = [ep[t] for ep in episodes]
        chunk = policy.chunk_actions(obs) if policy.mode == "chunk" else np.stack(
            [policy.step_action(o) for o in obs])[:, None, :]
        n = min(chunk.shape[1], ticks - t)
        out[:, t:t + n] = chunk[:, :n]
        t += n
    return out


def test_act_chunks_are_select_actions_at_batch_1(act_ckpt):
    policy = load_policy(str(act_ckpt), device="cpu")
    assert policy.mode == "chunk" and policy.serve_in_driver and policy.chunk_horizon == 5
    ref = LerobotLoop(act_ckpt)
    for seed in (0, 1):
        episode = _episode(seed, 12)
        ref.reset()
        want = np.stack([ref.select([o])[0] for o in episode])
        got = _adapter_actions(policy, [episode])[0]
        np.testing.assert_array_equal(got, want)  # fp32, bit for bit


def test_act_batched_chunks_are_select_actions_on_the_same_batch(act_ckpt):
    policy = load_policy(str(act_ckpt), device="cpu")
    ref = LerobotLoop(act_ckpt)
    episodes = [_episode(seed, 10) for seed in (3, 4, 5)]
    ref.reset()
    want = np.stack([ref.select([ep[t] for ep in episodes]) for t in range(10)], axis=1)
    got = _adapter_actions(policy, episodes)
    np.testing.assert_array_equal(got, want)
    alone = np.stack([_adapter_actions(policy, [ep])[0] for ep in episodes])  # batch-mates change nothing
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-3)


def test_predict_batch_maps_through_the_shim_to_sim_radians(act_ckpt):
    cmap = PRESETS["official"]
    policy = load_policy(str(act_ckpt), device="cpu", convmap=cmap)
    ref = LerobotLoop(act_ckpt, convmap=cmap)
    episodes = [_episode(seed, 1) for seed in (7, 8)]
    chunks = policy.predict_batch([ep[0] for ep in episodes])
    want = ref.select([ep[0] for ep in episodes])
    assert [c.batch_size for c in chunks] == [2, 2] and chunks[0].targets_rad.shape == (5, 6)
    from engine.policies.molmoact2.policy import JOINT_HIGH_RAD, JOINT_LOW_RAD

    expect = np.clip(rig_deg_to_sim_rad(cmap.to_rig(want)), JOINT_LOW_RAD, JOINT_HIGH_RAD)
    np.testing.assert_allclose(np.stack([c.targets_rad[0] for c in chunks]), expect, rtol=0, atol=1e-12)


def test_temporal_ensembling_runs_select_action_every_tick(ensembled_dir):
    policy = load_policy(str(ensembled_dir), device="cpu")
    assert policy.mode == "step" and not policy.serve_in_driver and policy.chunk_horizon == 1
    ref = LerobotLoop(ensembled_dir)
    for seed in (0, 1):  # the second episode starts from a reset, as lerobot-eval's does
        episode = _episode(seed, 8)
        ref.reset()
        want = np.stack([ref.select([o])[0] for o in episode])
        np.testing.assert_array_equal(_adapter_actions(policy, [episode])[0], want)


def test_images_of_another_size_are_resized_to_the_checkpoint(act_ckpt):
    policy = load_policy(str(act_ckpt), device="cpu")
    batch = policy.raw_batch(_episode(0, 1, size=224))
    assert tuple(batch["observation.images.front"].shape) == (1, *IMAGE)
    assert batch["observation.state"].dtype == torch.float32 and batch["task"] == ["put the boat on the disk"]


def test_the_manifest_records_type_config_hash_and_pin(act_ckpt):
    d = load_policy(str(act_ckpt), device="cpu").describe()
    assert d["policy"] == "lerobot" and d["policy_type"] == "act" and d["serving"] == "chunk"
    assert len(d["config_sha256"]) == 64 and d["pin"] == f"sha256:{d['checkpoint_sha256']}"
    assert sorted(d["files"]) == sorted(p.name for p in act_ckpt.iterdir())  # every file the loader reads
    assert d["features"] == {"observation.images.front": "front", "observation.images.wrist": "wrist",
                             "observation.state": "state"}


def test_a_pin_that_is_not_what_loads_is_refused(act_ckpt):
    with pytest.raises(Exception, match="refused: the pre-registration pins"):
        load_policy(str(act_ckpt), device="cpu", revision="sha256:" + "0" * 64, pinned=True)
    assert load_policy(str(act_ckpt), device="cpu", revision=probe(str(act_ckpt)).pin, pinned=True)


def test_features_the_scene_cannot_feed_are_refused_naming_the_feature(tmp_path):
    top = build_checkpoint(tmp_path / "top", "act", cameras=("top", "wrist"))
    with pytest.raises(FeatureError) as err:
        check_feeds(str(top), None, ("front", "wrist"))
    assert "observation.images.top" in str(err.value) and "\n" not in str(err.value)
    plan = check_feeds(str(top), None, ("front", "wrist"), ["observation.images.top=front"])
    assert plan.as_dict()["observation.images.top"] == "front"
    seven = build_checkpoint(tmp_path / "seven", "act", action_dim=7)
    with pytest.raises(FeatureError, match=r"action is 7-D"):
        check_feeds(str(seven), None, ("front", "wrist"))
    with pytest.raises(FeatureError, match="does not read"):
        check_feeds(str(top), None, ("front", "wrist"), ["observation.images.side=front"])


def test_the_shims_tripwires_judge_a_lerobot_checkpoint(ensembled_dir, monkeypatch):
    """The coverage tripwire's release box is the checkpoint's saved state range (min/max when it has no
    quantiles); the first-action tripwire predicts with the policy, loaded in the driver for it even
    when the run serves it in each worker (step mode)."""
    import engine.run.rig_table
    from engine.policies.factory import PolicySpec
    from engine.policies.lerobot_policy import release_state_box
    from engine.record.config import RunConfig
    from engine.run.tripwires import run_registered
    from prereg.document.model import CoverageTripwire, FirstActionTripwire, Tripwires
    from prereg.rundir.status import GateSpec

    lo, hi = release_state_box(str(ensembled_dir))
    assert lo.shape == hi.shape == (6,) and np.all(lo == -150.0) and np.all(hi == 150.0)
    rig = {"joints": {}}
    monkeypatch.setattr(engine.run.rig_table, "scene_rig_table", lambda *a, **k: rig)
    monkeypatch.setattr("engine.policies.convmap.fit.seam_box",
                        lambda table: (np.full(6, -40.0), np.full(6, 40.0)))  # well inside the release box
    spec = PolicySpec(kind="lerobot", checkpoint=str(ensembled_dir), convmap="identity", device="cpu")
    plan = Tripwires(coverage=CoverageTripwire(), first_action=FirstActionTripwire(seeds=(0,), max_deg=360.0))
    cfg = RunConfig(run_id="r", arm="act", policy=spec, seeds=[0], render_size=48, gates=GateSpec(tripwires=plan.as_dict()))
    record = run_registered(cfg, {None: None}, log=lambda _: None)
    (arm,) = record["arms"]
    assert arm["applies"] is True and arm["policy"] == "lerobot" and set(arm["reports"]) == {"coverage", "first_action"}
    assert record["passed"] is True, record["failed"]


def test_before_the_load_a_pinned_lerobot_arm_whose_files_changed_is_not_judged_on_them(ensembled_dir, tmp_path,
                                                                                           monkeypatch):
    """Coverage before the load reads the checkpoint's saved state stats: a pinned arm's pin is checked
    first, so stats edited since the freeze are never judged (the load refuses the launch in its words)."""
    import shutil

    import engine.run.rig_table
    from engine.policies.factory import PolicySpec
    from engine.policies.lerobot_policy import forget_probes, probe
    from engine.record.config import RunConfig
    from engine.run.tripwires import check_at_start
    from prereg.document.model import CoverageTripwire, Tripwires
    from prereg.rundir.status import GateSpec

    ckpt = tmp_path / "act"
    shutil.copytree(ensembled_dir, ckpt)
    forget_probes()
    pin = probe(str(ckpt)).pin
    judged = []
    monkeypatch.setattr(engine.run.rig_table, "scene_rig_table", lambda *a, **k: judged.append(1) or {"joints": {}})
    monkeypatch.setattr("engine.policies.convmap.fit.seam_box", lambda table: (np.full(6, -40.0), np.full(6, 40.0)))
    spec = PolicySpec(kind="lerobot", checkpoint=str(ckpt), revision=pin, pinned=True, convmap="identity", device="cpu")
    cfg = RunConfig(run_id="r", arm="act", policy=spec, seeds=[0],
                    gates=GateSpec(tripwires=Tripwires(coverage=CoverageTripwire()).as_dict()))
    lines = []
    assert check_at_start(cfg, tmp_path, resume=False, policies={}, descriptions=None, log=lines.append,
                          before_load=True) == (None, False)
    assert judged == [1] and lines[-1] == "registered tripwire coverage PASSED before the policy loaded"
    state = next(p for p in ckpt.iterdir() if p.name.startswith("policy_preprocessor") and p.suffix == ".safetensors")
    from safetensors.numpy import load_file, save_file

    save_file({k: v + 1.0 for k, v in load_file(str(state)).items()}, str(state))  # other stats, still readable
    forget_probes()
    lines.clear()
    assert check_at_start(cfg, tmp_path, resume=False, policies={}, descriptions=None, log=lines.append,
                          before_load=True) == (None, False)
    assert judged == [1]  # nothing judged on the edited file
    assert any("not judged before the policy loads (refused: the pre-registration pins" in line for line in lines), lines
    forget_probes()


def test_diffusion_runs_select_action_every_tick_seeded_per_episode(tmp_path):
    """Diffusion keeps an observation history (n_obs_steps 2) and samples noise: lerobot's own
    select_action every tick, torch seeded by the episode's seed. Needs lerobot's `diffusion` extra."""
    pytest.importorskip("diffusers")
    from engine.policies.lerobot_policy.policy import episode_seed

    ckpt = build_checkpoint(tmp_path / "diffusion", "diffusion")
    policy = load_policy(str(ckpt), device="cpu")
    assert policy.mode == "step" and policy.chunk_horizon == 1 and not policy.serve_in_driver
    ref = LerobotLoop(ckpt)
    for seed in (0, 1):
        episode = _episode(seed, 7)
        ref.reset()
        torch.manual_seed(episode_seed(seed))
        want = np.stack([ref.select([o])[0] for o in episode])
        np.testing.assert_array_equal(_adapter_actions(policy, [episode])[0], want)
    again = _adapter_actions(policy, [_episode(1, 7)])[0]  # the same seed reproduces its episode
    np.testing.assert_array_equal(again, want)


def test_a_policy_served_in_each_worker_is_described_without_its_weights(ensembled_dir):
    from engine.policies.factory import PolicySpec, describe_unserved
    from engine.policies.lerobot_policy import LerobotError

    spec = PolicySpec(kind="lerobot", checkpoint=str(ensembled_dir), convmap="identity")
    assert not spec.serve_in_driver
    d = describe_unserved(spec)
    loaded = load_policy(str(ensembled_dir), device="cpu").describe()
    same = ("policy_type", "config_sha256", "processors_sha256", "weights_sha256", "pin", "features", "serving")
    assert {k: d[k] for k in same} == {k: loaded[k] for k in same} and d["served"].startswith("in each worker")
    with pytest.raises(LerobotError, match="refused: the pre-registration pins"):
        describe_unserved(PolicySpec(kind="lerobot", checkpoint=str(ensembled_dir), revision="sha256:" + "0" * 64,
                                     pinned=True))


def test_served_invariant_each_observation_gets_its_batch_1_action_bit_for_bit(act_ckpt):
    """`--serving invariant` (the default for a lerobot checkpoint): whatever waits with an observation, its
    action is the one it gets alone, bit for bit; `batched` is recorded as batch-dependent."""
    from engine.policies.factory import PolicySpec, make_policy

    spec = PolicySpec(kind="lerobot", checkpoint=str(act_ckpt), device="cpu", convmap="identity", dtype="fp32")
    invariant = make_policy(spec)
    batch = [_episode(s, 1)[0] for s in range(4)]
    alone = [invariant.predict_batch([o])[0].targets_rad for o in batch]
    for mix in (batch, batch[::-1], batch[:2], [batch[3], batch[0], batch[0], batch[1]]):
        got = invariant.predict_batch(mix)
        for o, chunk in zip(mix, got):
            assert np.array_equal(chunk.targets_rad, alone[batch.index(o)])
    d = invariant.describe()
    assert d["rows"] == "invariant" and d["batching"] == "per observation (batch 1)" and d["serving"] == "chunk"
    batched = make_policy(PolicySpec(**{**spec.__dict__, "serving": "batched"}))
    assert batched.describe()["rows"] == "batch-dependent" and len(batched.predict_batch(batch)) == 4
