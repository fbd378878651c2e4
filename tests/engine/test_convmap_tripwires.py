"""The two tripwires: coverage (pure stats) and first action vs state (a few predicts)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.policies.base import JOINT_NAMES, Chunk, Observation, Policy
from engine.policies.convmap.fit import release_box_in_rig
from engine.policies.convmap.shim import PRESETS, ConvMap, resolve_convmap, rig_deg_to_sim_rad
from engine.policies.convmap.tripwires import (
    SIGN_BLIND_NOTE,
    coverage_tripwire,
    first_action_deltas,
    first_action_tripwire,
    format_tripwires,
    run_convmap_tripwires,
    run_first_action_probe,
    tripwires_passed,
    write_tripwires_json,
)

REL_Q01 = np.array([-41.91, 43.67, 38.39, 5.71, -63.45, 0.94])
REL_Q99 = np.array([48.29, 185.26, 173.14, 91.78, 42.94, 44.14])
# A rig table shaped like the seed's: lift reaches [-86, 57], elbow [-40, 95], wrist_roll home 77.6.
RIG_Q01 = np.array([-40.0, -86.35, -40.0, 10.0, 30.0, 2.0])
RIG_Q99 = np.array([45.0, 57.09, 95.0, 85.0, 110.0, 40.0])
HOME_RIG = np.array([0.0, -10.0, 20.0, 30.0, 77.6, 10.0])
LIFT, ELBOW, WFLEX, WROLL = 1, 2, 3, 4


def row(report, joint):
    return report.joints[JOINT_NAMES.index(joint)]


# --- (a) coverage ---------------------------------------------------------------------------


def test_coverage_official_passes_and_identity_fails_with_a_hint():
    ok = coverage_tripwire(resolve_convmap("official", ["wrist_roll=-90"]), RIG_Q01, RIG_Q99, REL_Q01, REL_Q99)
    assert ok.passed, ok.format_table()
    assert row(ok, "shoulder_lift")["uncovered"] == pytest.approx(0.075, abs=5e-4)
    bad = coverage_tripwire(PRESETS["identity"], RIG_Q01, RIG_Q99, REL_Q01, REL_Q99)
    assert not bad.passed
    elbow = row(bad, "elbow_flex")
    assert elbow["status"] == "fail" and elbow["uncovered"] == pytest.approx(78.39 / 135)
    assert elbow["best_grid"]["offset_deg"] == 90.0 and "(+1,+90)" in elbow["why"]
    assert row(bad, "shoulder_pan")["status"] == "pass"


def test_coverage_span_limited_wrist_fails_unless_allowed():
    rig01, rig99 = RIG_Q01.copy(), RIG_Q99.copy()
    rig01[WFLEX], rig99[WFLEX] = -80.0, 80.0  # 160 deg of rig vs 86 deg of release: >46% clipped always
    cmap = resolve_convmap("official", ["wrist_roll=-90", "wrist_flex=50"])
    strict = coverage_tripwire(cmap, rig01, rig99, REL_Q01, REL_Q99)
    wf = row(strict, "wrist_flex")
    assert not strict.passed and wf["status"] == "fail" and "span mismatch" in wf["why"]
    assert wf["span_floor"] == pytest.approx(1 - 86.07 / 160)
    lenient = coverage_tripwire(cmap, rig01, rig99, REL_Q01, REL_Q99, allow_span_limited=True)
    assert lenient.passed and row(lenient, "wrist_flex")["status"] == "warn"


# --- (b) first action vs state --------------------------------------------------------------


def test_clamp_signature_on_wrist_roll_seed_numbers():
    """Seed: identity wrist_roll, home 77.6 above the release ceiling; the first action lands at
    the ceiling, so delta (34.1) equals the gap (34.7): the clamp signature."""
    states = np.tile(HOME_RIG, (3, 1))
    actions = states + np.array([0.5, -0.8, 1.0, 0.3, 0.0, 0.2])
    actions[:, WROLL] = 43.5
    lo, hi = release_box_in_rig(PRESETS["official"], REL_Q01, REL_Q99)
    rep = first_action_tripwire(actions, states, lo, hi)
    roll = row(rep, "wrist_roll")
    assert roll["clamp_signature"] and roll["status"] == "fail" and "CLAMP SIGNATURE" in roll["why"]
    assert roll["delta_deg"] == pytest.approx(34.1) and roll["gap_deg"] == pytest.approx(77.6 - 42.94)
    assert not rep.passed
    assert all(row(rep, j)["status"] == "pass" for j in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex"))
    # under wrist_roll -90 the home maps to -12.4, inside the box: no gap, no signature
    lo2, hi2 = release_box_in_rig(resolve_convmap("official", ["wrist_roll=-90"]), REL_Q01, REL_Q99)
    actions[:, WROLL] = 77.6 + 0.97
    rep2 = first_action_tripwire(actions, states, lo2, hi2)
    assert rep2.passed and row(rep2, "wrist_roll")["gap_deg"] == 0.0


def test_first_action_says_it_is_blind_to_sign_at_rest():
    states = np.tile(HOME_RIG, (2, 1))
    lo, hi = release_box_in_rig(PRESETS["official"], REL_Q01, REL_Q99)
    rep = first_action_tripwire(states + 1.0, states, lo, hi)
    assert SIGN_BLIND_NOTE in rep.notes and "BLIND TO SIGN AT REST" in rep.format_table()
    assert "BLIND TO SIGN AT REST" in json.dumps(rep.as_dict())


def test_first_action_limits_anchor_and_gripper_is_not_judged():
    states = np.zeros((4, 6)) + HOME_RIG
    lo, hi = np.full(6, -1000.0), np.full(6, 1000.0)
    actions = states.copy()
    actions[:, ELBOW] += 12.0
    actions[:, 5] += 60.0  # the gripper may open first: reported, not judged
    no_anchor = first_action_tripwire(actions, states, lo, hi)
    assert not no_anchor.passed and row(no_anchor, "elbow_flex")["limit_deg"] == 10.0
    assert row(no_anchor, "gripper")["status"] == "info"
    anchor = np.array([2.0, 3.0, 13.2, 2.0, 1.0, 5.0])
    with_anchor = first_action_tripwire(actions, states, lo, hi, anchor)
    assert with_anchor.passed and row(with_anchor, "elbow_flex")["limit_deg"] == pytest.approx(26.4)
    assert row(with_anchor, "shoulder_pan")["limit_deg"] == 5.0  # min_limit_deg floor
    assert with_anchor.summary["arm_mean_anchor_deg"] == pytest.approx(np.mean(anchor[:5]))
    np.testing.assert_allclose(first_action_deltas(actions, states), [0, 0, 12, 0, 0, 60])


# --- the runner, with a fake release behind a shim --------------------------------------------


class ClampCopyRelease:
    """Stands in for the release checkpoint behind `cmap`: it sees its state through the q01/q99
    clip and answers with (about) the state it saw. That is exactly what makes the clamp."""

    name = "fake-release"
    chunk_horizon = 30
    needs_images = False
    needs_privileged = False
    serve_in_driver = True

    def __init__(self, cmap: ConvMap):
        self.cmap, self.calls = cmap, 0

    def describe(self):
        return {"convmap": self.cmap.as_dict()}

    def predict_batch(self, observations):
        from engine.policies.convmap.shim import sim_rad_to_rig_deg

        self.calls += 1
        out = []
        for o in observations:
            seen = np.clip(self.cmap.to_model(sim_rad_to_rig_deg(o.state_rad)), REL_Q01, REL_Q99)
            action_rig = self.cmap.to_rig(seen + 0.5)
            targets = rig_deg_to_sim_rad(np.tile(action_rig, (self.chunk_horizon, 1)))
            out.append(Chunk(targets_rad=targets, batch_size=len(observations)))
        return out


def reset_obs(seed: int) -> Observation:
    jitter = np.random.default_rng(seed).normal(0, 0.5, 6)
    return Observation(seed=seed, tick=0, replan_index=0, state_rad=rig_deg_to_sim_rad(HOME_RIG + jitter))


def test_probe_is_one_batched_predict_in_rig_degrees():
    policy = ClampCopyRelease(PRESETS["identity"])
    assert isinstance(policy, Policy)
    actions, states = run_first_action_probe(policy, reset_obs, [0, 1, 2])
    assert policy.calls == 1 and actions.shape == states.shape == (3, 6)
    np.testing.assert_allclose(states[:, WROLL], 77.6, atol=2.0)
    np.testing.assert_allclose(actions[:, WROLL], 42.94 + 0.5, atol=1e-6)  # clamped at the ceiling


def test_run_tripwires_catches_wrist_roll_and_the_override_clears_it(tmp_path):
    official = PRESETS["official"]
    reports = run_convmap_tripwires(official, RIG_Q01, RIG_Q99, REL_Q01, REL_Q99,
                                    policy=ClampCopyRelease(official), make_observation=reset_obs)
    assert [r.name for r in reports] == ["coverage", "first_action"]
    assert not tripwires_passed(reports)
    assert row(reports[1], "wrist_roll")["clamp_signature"]
    assert row(reports[0], "wrist_roll")["status"] == "fail"  # 100% of 30..110 above 42.94
    text = format_tripwires(reports)
    assert "tripwire coverage: FAIL" in text and "tripwire first_action: FAIL" in text

    fixed = resolve_convmap("official", ["wrist_roll=-90"])
    reports = run_convmap_tripwires(fixed, RIG_Q01, RIG_Q99, REL_Q01, REL_Q99,
                                    policy=ClampCopyRelease(fixed), make_observation=reset_obs)
    assert tripwires_passed(reports), format_tripwires(reports)
    assert reports[1].summary["arm_mean_delta_deg"] == pytest.approx(0.5)
    path = write_tripwires_json(reports, tmp_path / "run" / "convmap_tripwires.json")
    payload = json.loads(path.read_text())
    assert payload["passed"] and set(payload["tripwires"]) == {"coverage", "first_action"}


def test_wrong_lift_sign_passes_the_first_action_probe():
    """Why the note exists: the seed's +180 lift (the wrong sign) is invisible at rest."""
    wrong = resolve_convmap("official", ["shoulder_lift=180", "wrist_roll=-90"])
    actions, states = run_first_action_probe(ClampCopyRelease(wrong), reset_obs, [0, 1, 2])
    lo, hi = release_box_in_rig(wrong, REL_Q01, REL_Q99)
    assert first_action_tripwire(actions, states, lo, hi).passed


def test_coverage_only_without_a_policy():
    reports = run_convmap_tripwires(PRESETS["official"], RIG_Q01, RIG_Q99, REL_Q01, REL_Q99)
    assert [r.name for r in reports] == ["coverage"]
