"""A lab's own policy through the `fontaine.policies` entry points (docs/policies.md's example, run as written)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
import types

import numpy as np
import pytest

from engine.policies import plugins
from engine.policies.base import Observation
from engine.policies.convmap.shim import PRESETS, rig_deg_to_sim_rad
from engine.policies.factory import PolicySpec, make_policy
from tests.helpers import REPO


def _doc_example() -> types.ModuleType:
    text = (REPO / "docs" / "policies.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "class TowardsMiddle" in b)
    module = types.ModuleType("fontaine_doc_policy")
    exec(compile(code, "docs/policies.md", "exec"), module.__dict__)
    return module


@pytest.fixture
def towards_middle(monkeypatch):
    module = _doc_example()
    monkeypatch.setitem(sys.modules, "fontaine_doc_policy", module)
    ep = importlib.metadata.EntryPoint(name="towards-middle", value="fontaine_doc_policy:TowardsMiddle",
                                       group=plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "_entry_points", lambda: [ep])
    return module


def _obs(seed, replan, state):
    return Observation(seed=seed, tick=replan * 15, replan_index=replan, state_rad=np.asarray(state, dtype=float))


def test_the_documented_example_runs_batched_with_the_shim(towards_middle):
    policy = make_policy(PolicySpec(kind="towards-middle", convmap="identity", serving="batched"))
    assert policy.serve_in_driver and policy.chunk_horizon == 15 and not policy.needs_images
    chunks = policy.predict_batch([_obs(0, 0, np.zeros(6)), _obs(1, 0, np.full(6, 0.2))])
    assert [c.batch_size for c in chunks] == [2, 2] and chunks[0].targets_rad.shape == (15, 6)
    assert policy.describe()["rows"] == "batch-dependent"
    assert policy.inner.episodes == 2  # reset once per episode, at its first predict
    policy.predict_batch([_obs(0, 1, np.zeros(6))])
    assert policy.inner.episodes == 2
    assert policy.describe()["own"] == {"gain": 0.1} and policy.describe()["policy"] == "towards-middle"


def test_the_shim_maps_both_ways(towards_middle):
    cmap = PRESETS["official"]
    policy = make_policy(PolicySpec(kind="towards-middle", convmap="official"))
    seen = []
    original = policy.inner.predict
    policy.inner.predict = lambda obs: seen.extend(obs) or original(obs)
    (chunk,) = policy.predict_batch([_obs(3, 0, np.zeros(6))])
    assert np.allclose(seen[0].state_deg, cmap.to_model(np.array([0, 0, 0, 0, 0, 9.090909])), atol=1e-4)
    want = original([seen[0]])[0]
    np.testing.assert_allclose(chunk.targets_rad, rig_deg_to_sim_rad(cmap.to_rig(want)))


def test_unknown_and_broken_policies_are_one_line(towards_middle, monkeypatch):
    with pytest.raises(plugins.PluginError, match=r"no such policy \(known: scripted, hold, towards-middle\)"):
        make_policy(PolicySpec(kind="nope"))
    bad = importlib.metadata.EntryPoint(name="broken", value="fontaine_doc_policy:np", group=plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "_entry_points", lambda: [bad])
    with pytest.raises(plugins.PluginError, match="broken: entry point .* cannot be loaded"):
        make_policy(PolicySpec(kind="broken"))


def test_a_wrong_answer_is_an_error_not_a_silent_chunk(towards_middle):
    policy = make_policy(PolicySpec(kind="towards-middle"))
    policy.inner.predict = lambda obs: [np.zeros((3, 7)) for _ in obs]
    with pytest.raises(ValueError, match=r"shape \(3, 7\)"):
        policy.predict_batch([_obs(0, 0, np.zeros(6))])


@pytest.mark.slow
def test_an_installed_entry_point_runs_through_fontaine_eval(tmp_path):
    """A distribution on the path (a dist-info with its entry_points.txt, as pip installs one) whose
    `fontaine.policies` entry point is docs/policies.md's example: two seeds, batched in the driver."""
    import json

    from tests.helpers import read_rows, run_eval

    site = tmp_path / "site"
    site.mkdir()
    text = (REPO / "docs" / "policies.md").read_text()
    (site / "lab_policy.py").write_text(next(b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                                             if "class TowardsMiddle" in b))
    dist = site / "lab_policy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-policy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[fontaine.policies]\ntowards-middle = lab_policy:TowardsMiddle\n")
    run_dir = tmp_path / "run"
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    out = run_eval("--policy", "towards-middle", "--seed", "0", "--num-seeds", "2", "--workers", "2",
                   "--episode-seconds", "1", "--video-draw", "none", "--run-dir", str(run_dir), env=env, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = read_rows(run_dir)
    assert sorted(r["seed"] for r in rows) == [0, 1] and all(r["status"] == "ok" and r["predicts"] == 2 for r in rows)
    resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
    assert resolved["policy"] == "towards-middle" and resolved["version"] == "0.1" and resolved["own"] == {"gain": 0.1}
    assert resolved["convmap"]["name"] == "identity"


def test_served_invariant_by_default_each_observation_is_one_call(towards_middle):
    policy = make_policy(PolicySpec(kind="towards-middle"))
    calls = []
    original = policy.inner.predict
    policy.inner.predict = lambda obs: calls.append(len(obs)) or original(obs)
    chunks = policy.predict_batch([_obs(0, 0, np.zeros(6)), _obs(1, 0, np.full(6, 0.2))])
    assert calls == [1, 1] and len(chunks) == 2 and policy.describe()["rows"] == "invariant"
