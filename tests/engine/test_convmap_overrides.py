"""The map itself: presets, `JOINT=[SIGN,]OFFSET` overrides, printing, and the round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.policies.base import JOINT_NAMES
from engine.policies.convmap.shim import (
    PRESETS,
    ConvMap,
    ConvMapError,
    apply_overrides,
    convmap_from_dict,
    format_convmap,
    parse_override,
    resolve_convmap,
    rig_deg_to_sim_rad,
    sim_rad_to_rig_deg,
)


def test_presets_unchanged():
    assert PRESETS["official"] == ConvMap((1, -1, 1, 1, 1, 1), (0, 90, 90, 0, 0, 0), "official")
    assert PRESETS["official"].as_dict()["joints"]["shoulder_lift"] == {"sign": -1, "offset_deg": 90.0}
    # the official lift is the mirror: model = 90 - arm
    assert PRESETS["official"].to_model(np.zeros(6))[1] == 90.0
    assert PRESETS["official"].to_model(np.full(6, 30.0))[1] == 60.0


@pytest.mark.parametrize(
    "token, expected",
    [
        ("shoulder_lift=-1,90", ("shoulder_lift", -1, 90.0)),
        ("wrist_roll=-90", ("wrist_roll", 1, -90.0)),
        ("elbow_flex=+1,90", ("elbow_flex", 1, 90.0)),
        (" gripper = 1.0 , 0 ", ("gripper", 1, 0.0)),
        ("shoulder_pan=12.5", ("shoulder_pan", 1, 12.5)),
    ],
)
def test_parse_override(token, expected):
    assert parse_override(token) == expected


@pytest.mark.parametrize(
    "token, why",
    [
        ("elbow=90", "unknown joint"),
        ("shoulder_lift=2,90", "sign must be +1 or -1"),
        ("shoulder_lift=0,90", "sign must be +1 or -1"),
        ("shoulder_lift=-1,ninety", "malformed"),
        ("shoulder_lift=", "malformed"),
        ("shoulder_lift=-1,90,3", "malformed"),
        ("shoulder_lift=-1,", "malformed"),
        ("shoulder_lift", "'='"),
        ("shoulder_lift=1=2", "'='"),
        ("wrist_roll=nan", "not finite"),
    ],
)
def test_parse_override_errors_name_the_token_and_the_joints(token, why):
    with pytest.raises(ConvMapError) as err:
        parse_override(token)
    msg = str(err.value)
    assert repr(token) in msg and why in msg
    assert all(j in msg for j in JOINT_NAMES)
    assert isinstance(err.value, ValueError)


def test_resolve_official_plus_wrist_roll_override_is_arm_b():
    cmap = resolve_convmap("official", ["wrist_roll=-90"])
    assert cmap.signs == (1, -1, 1, 1, 1, 1)
    assert cmap.offsets_deg == (0, 90, 90, 0, -90.0, 0)
    assert cmap.sources[4] == "override" and cmap.sources[1] == "official"
    assert "override(wrist_roll)" in cmap.name
    assert cmap.as_dict()["joints"]["wrist_roll"]["source"] == "override"


def test_resolve_identity_with_sign_override_reaches_official_lift():
    cmap = resolve_convmap("identity", ["shoulder_lift=-1,90", "elbow_flex=90"])
    assert (cmap.signs, cmap.offsets_deg) == (PRESETS["official"].signs, PRESETS["official"].offsets_deg)


def test_resolve_errors():
    with pytest.raises(ConvMapError, match="needs a fit report"):
        resolve_convmap("fit", [])
    with pytest.raises(ConvMapError, match="unknown --convmap preset 'oficial'"):
        resolve_convmap("oficial", [])
    with pytest.raises(ConvMapError, match="already overridden"):
        resolve_convmap("official", ["wrist_roll=-90", "wrist_roll=90"])


def test_resolve_fit_uses_the_report_map():
    class Report:
        convmap = ConvMap((1, 1, 1, 1, 1, 1), (0, 180, 90, 0, 0, 0), "fit")

    cmap = resolve_convmap("fit", ["shoulder_lift=-1,90"], fit=Report())
    assert cmap.offsets_deg[1] == 90.0 and cmap.signs[1] == -1 and cmap.offsets_deg[2] == 90


def test_no_overrides_returns_the_preset_itself():
    assert resolve_convmap("official", []) is PRESETS["official"]
    assert apply_overrides(PRESETS["identity"], []) is PRESETS["identity"]


def test_format_convmap_table():
    text = format_convmap(resolve_convmap("official", ["wrist_roll=-90"]))
    lines = text.splitlines()
    assert len(lines) == 2 + len(JOINT_NAMES)
    rows = {line.split()[0]: line for line in lines[2:]}
    assert list(rows) == list(JOINT_NAMES)
    lift = rows["shoulder_lift"]
    assert "-1" in lift and "+90.0" in lift and "-rig + 90" in lift
    roll = rows["wrist_roll"]
    assert "rig - 90" in roll and "override" in roll


def test_as_dict_round_trip():
    for cmap in [*PRESETS.values(), resolve_convmap("official", ["wrist_roll=-1,-90"])]:
        back = convmap_from_dict(cmap.as_dict())
        assert back == cmap and back.sources == cmap.sources


joint_deg = st.floats(min_value=-400, max_value=400, allow_nan=False, allow_infinity=False)
override_tokens = st.lists(
    st.tuples(
        st.sampled_from(JOINT_NAMES),
        st.sampled_from(["", "1,", "-1,", "+1,"]),
        st.floats(min_value=-360, max_value=360, allow_nan=False, allow_infinity=False),
    ),
    max_size=6,
    unique_by=lambda t: t[0],
).map(lambda ts: [f"{j}={s}{o!r}" for j, s, o in ts])


@settings(max_examples=150, deadline=None)
@given(
    preset=st.sampled_from(["official", "identity"]),
    overrides=override_tokens,
    state=st.lists(joint_deg, min_size=6, max_size=6),
)
def test_round_trip_state_in_action_out_is_identity(preset, overrides, state):
    """State in (rig -> model) then action out (model -> rig) returns the rig value."""
    cmap = resolve_convmap(preset, overrides)
    rig = np.array(state)
    np.testing.assert_allclose(cmap.to_rig(cmap.to_model(rig)), rig, atol=1e-9)
    model = rig  # and the other way round
    np.testing.assert_allclose(cmap.to_model(cmap.to_rig(model)), model, atol=1e-9)
    for tok in overrides:  # each override landed where it said
        joint, sign, offset = parse_override(tok)
        j = JOINT_NAMES.index(joint)
        assert (cmap.signs[j], cmap.offsets_deg[j]) == (sign, offset)


@settings(max_examples=50, deadline=None)
@given(q=st.lists(st.floats(min_value=-1.7, max_value=1.7), min_size=6, max_size=6))
def test_sim_round_trip_through_the_seam(q):
    """sim rad -> rig deg -> model -> rig deg -> sim rad, for every preset."""
    q = np.array(q)
    for cmap in PRESETS.values():
        back = rig_deg_to_sim_rad(cmap.to_rig(cmap.to_model(sim_rad_to_rig_deg(q))))
        np.testing.assert_allclose(back, q, atol=1e-9)
