"""fit_convention_map on synthetic rig/release tables with known answers, and the two tables' I/O."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.policies.base import JOINT_NAMES
from engine.policies.convmap.fit import (
    CANDIDATE_OFFSETS_DEG,
    MIRROR_MARGIN,
    fit_convention_map,
    fit_from_files,
    load_release_stats,
    load_seam_stats,
    mapped_interval,
    save_seam_stats,
    seam_box,
    seam_stats_from_states,
    uncovered_fraction,
)
from engine.policies.convmap.shim import PRESETS, ConvMap, ConvMapError, resolve_convmap

# The release's SO-100/101 state box (MOLMOACT2.md), model degrees.
REL_Q01 = np.array([-41.91, 43.67, 38.39, 5.71, -63.45, 0.94])
REL_Q99 = np.array([48.29, 185.26, 173.14, 91.78, 42.94, 44.14])
LIFT, ELBOW, WFLEX, WROLL = 1, 2, 3, 4


def sc(jf):
    return (jf.chosen.sign, jf.chosen.offset_deg)


def test_uncovered_fraction():
    assert uncovered_fraction(0, 10, 0, 10) == 0.0
    assert uncovered_fraction(-5, 5, 0, 10) == 0.5
    assert uncovered_fraction(-10, 30, 0, 10) == 0.75
    assert uncovered_fraction(20, 30, 0, 10) == 1.0
    assert uncovered_fraction(5, 5, 0, 10) == 0.0 and uncovered_fraction(11, 11, 0, 10) == 1.0


def test_identity_tables_fit_identity():
    rep = fit_convention_map(REL_Q01, REL_Q99, REL_Q01, REL_Q99)
    assert rep.convmap.signs == (1,) * 6 and rep.convmap.offsets_deg == (0.0,) * 6
    for jf in rep.joints:
        assert jf.rule == "midpoint" and jf.chosen.uncovered == 0.0 and jf.chosen.displacement_deg == 0.0
        assert jf.runner_up != jf.chosen and len(jf.candidates) == 10
    assert rep.convmap.sources == ("fit:midpoint",) * 6


def test_pure_plus_90_offset():
    rep = fit_convention_map(REL_Q01 - 90, REL_Q99 - 90, REL_Q01, REL_Q99)
    assert rep.convmap.signs == (1,) * 6 and rep.convmap.offsets_deg == (90.0,) * 6
    assert all(jf.chosen.uncovered == 0.0 for jf in rep.joints)


def test_pure_shoulder_lift_mirror_model_is_90_minus_arm():
    """Rig lift = 90 - release lift: the gate keeps sign +1 (+90 also sits in the padded box, so
    the mirror gains 0 < MIRROR_MARGIN); coverage (0% vs 35% uncovered) hands it to the mirror."""
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[LIFT], rig99[LIFT] = 90 - REL_Q99[LIFT], 90 - REL_Q01[LIFT]
    rep = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99)
    lift = rep.joint("shoulder_lift")
    assert sc(lift) == (-1, 90.0) and lift.rule == "coverage"
    assert (lift.gate_pick.sign, lift.gate_pick.offset_deg) == (1, 90.0)
    assert lift.chosen.uncovered == pytest.approx(0.0)
    assert lift.mirror_gain < MIRROR_MARGIN and "MIRROR_MARGIN rejected mirror (-1,+90)" in lift.reason
    cmap = rep.convmap
    np.testing.assert_allclose(cmap.to_model(np.full(6, 30.0))[LIFT], 60.0)
    assert cmap.sources[LIFT] == "fit:coverage"


def test_seed_lift_margin_rejects_a_mirror_that_covers_20_4_pt_better():
    """The seed's numbers: the mirror (-1,+90) leaves 7.5% uncovered vs 27.9% for the same-sign
    pick, the margin rule alone rejects it, the coverage tiebreak restores it and says why."""
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[LIFT], rig99[LIFT] = -86.35, 57.09
    rep = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99)
    lift = rep.joint("shoulder_lift")
    assert sc(lift) == (-1, 90.0) and lift.rule == "coverage"
    assert lift.chosen.uncovered == pytest.approx(0.075, abs=5e-4)
    assert lift.runner_up.uncovered == pytest.approx(0.279, abs=5e-4)
    assert (lift.runner_up.sign, lift.runner_up.offset_deg) == (1, 90.0) == (lift.gate_pick.sign, lift.gate_pick.offset_deg)
    assert "covers 20.4 pt better (7.5% vs 27.9% uncovered)" in lift.reason
    # with the coverage tiebreak switched off, the pre-registered rule alone makes the seed's mistake
    margin_only = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, coverage_margin=1.01)
    assert sc(margin_only.joint("shoulder_lift")) == (1, 90.0)
    assert margin_only.joint("shoulder_lift").rule == "midpoint"
    switched_off = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, coverage_tiebreak=False)
    assert sc(switched_off.joint("shoulder_lift")) == (1, 90.0) and switched_off.joint("shoulder_lift").rule == "midpoint"
    assert switched_off.params["coverage_tiebreak"] is False and "coverage tiebreak OFF" in switched_off.format_table()
    assert rep.params["coverage_tiebreak"] is True and "OFF" not in rep.format_table()


def test_mirror_that_clears_the_margin_wins_by_margin():
    """No same-sign offset lands near this box (rig = -model, box mid 22.5): gain 0.9 spans."""
    rel01, rel99 = REL_Q01.copy(), REL_Q99.copy()
    rel01[WFLEX], rel99[WFLEX] = 7.5, 37.5
    rig01, rig99 = rel01.copy(), rel99.copy()
    rig01[WFLEX], rig99[WFLEX] = -37.5, -7.5
    wf = fit_convention_map(rig01, rig99, rel01, rel99).joint("wrist_flex")
    assert sc(wf) == (-1, 0.0) and wf.rule == "mirror-margin"
    assert wf.mirror_gain == pytest.approx(0.9)


def test_elbow_near_tie_midpoint_gate_wrong_coverage_right():
    """The seed's elbow: identity's midpoint (27.5) sits inside the padded box (floor 38.39 - 13.5),
    so the gate keeps identity with 58% of the rig range clipped; +90 leaves 9%."""
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[ELBOW], rig99[ELBOW] = -40.0, 95.0
    el = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99).joint("elbow_flex")
    assert (el.gate_pick.sign, el.gate_pick.offset_deg) == (1, 0.0)
    assert el.gate_pick.displacement_deg == 0.0 and el.gate_pick.midpoint == pytest.approx(27.5)
    assert el.gate_pick.uncovered == pytest.approx(78.39 / 135)
    assert sc(el) == (1, 90.0) and el.rule == "coverage" and el.reason.startswith("near-tie")
    assert el.chosen.uncovered == pytest.approx(11.86 / 135)
    assert (el.runner_up.sign, el.runner_up.offset_deg) == (1, 0.0)
    gate_only = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, coverage_margin=1.01)
    assert sc(gate_only.joint("elbow_flex")) == (1, 0.0)


def test_declared_preset_wins_per_joint_and_is_recorded():
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[WROLL], rig99[WROLL] = 30.0, 110.0  # fits best at -90, official says identity
    rep = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, declared=PRESETS["official"])
    assert (rep.convmap.signs, rep.convmap.offsets_deg) == (PRESETS["official"].signs, PRESETS["official"].offsets_deg)
    roll = rep.joint("wrist_roll")
    assert roll.rule == "declared" and "fit chose (+1,-90)" in roll.reason
    assert (roll.runner_up.sign, roll.runner_up.offset_deg) == (1, -90.0)
    assert rep.convmap.sources[WROLL] == "declared:official"
    partial = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, declared=PRESETS["official"], declared_joints=["shoulder_lift"])
    assert partial.joint("shoulder_lift").rule == "declared"
    assert sc(partial.joint("wrist_roll")) == (1, -90.0) and partial.joint("wrist_roll").rule != "declared"
    with pytest.raises(ConvMapError, match="unknown"):
        fit_convention_map(rig01, rig99, REL_Q01, REL_Q99, declared=PRESETS["official"], declared_joints=["elbow"])


def test_fit_report_feeds_resolve_and_serialises():
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[ELBOW], rig99[ELBOW] = -40.0, 95.0
    rep = fit_convention_map(rig01, rig99, REL_Q01, REL_Q99)
    cmap = resolve_convmap("fit", ["wrist_roll=-90"], fit=rep)
    assert cmap.offsets_deg[ELBOW] == 90.0 and cmap.offsets_deg[WROLL] == -90.0
    assert cmap.sources[ELBOW] == "fit:coverage" and cmap.sources[WROLL] == "override"
    d = json.loads(json.dumps(rep.as_dict()))
    assert d["joints"][ELBOW]["rule"] == "coverage" and d["params"]["mirror_margin"] == MIRROR_MARGIN
    table = rep.format_table()
    assert all(j in table for j in JOINT_NAMES) and "runner-up" in table and "MIRROR_MARGIN=0.25" in table


def test_fit_input_errors():
    with pytest.raises(ValueError, match="6 values"):
        fit_convention_map(REL_Q01[:5], REL_Q99, REL_Q01, REL_Q99)
    bad = REL_Q99.copy()
    bad[0] = REL_Q01[0]
    with pytest.raises(ValueError, match="shoulder_pan"):
        fit_convention_map(REL_Q01, REL_Q99, REL_Q01, bad)


# --- the tables ---------------------------------------------------------------------------


def test_seam_stats_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    states = rng.uniform(-50, 50, size=(2000, 6))
    stats = seam_stats_from_states(states, source="scripted-oracle seeds 0-9")
    assert stats["count"] == 2000 and stats["units"] == "rig_deg"
    q01, q99 = seam_box(stats)
    np.testing.assert_allclose(q01, np.quantile(states, 0.01, axis=0))
    np.testing.assert_allclose(q99, np.quantile(states, 0.99, axis=0))
    path = save_seam_stats(stats, tmp_path / "sub" / "seam.json")
    assert load_seam_stats(path) == stats
    with pytest.raises(ValueError):
        seam_stats_from_states(states[:, :5])
    with pytest.raises(ValueError, match="non-finite"):
        seam_stats_from_states(np.full((3, 6), np.nan))
    (tmp_path / "other.json").write_text(json.dumps({"format": "x"}))
    with pytest.raises(ConvMapError, match="not a seam-stats file"):
        load_seam_stats(tmp_path / "other.json")


def _norm_stats_payload():
    pad = [0.0] * 26  # lerobot pads to max_action_dim 32
    return {
        "norm_mode": "q01_q99",
        "metadata_by_tag": {
            "so100_so101_molmoact2": {
                "state_stats": {"q01": list(REL_Q01) + pad, "q99": list(REL_Q99) + pad, "names": list(JOINT_NAMES)},
                "action_stats": {"q01": list(REL_Q01 - 1), "q99": list(REL_Q99 + 1)},
                "action_horizon": 30,
            },
            "franka_droid": {"state_stats": {"q01": [0] * 8, "q99": [1] * 8}},
        },
    }


def test_load_release_stats(tmp_path):
    (tmp_path / "norm_stats.json").write_text(json.dumps(_norm_stats_payload()))
    q01, q99 = load_release_stats(tmp_path / "norm_stats.json", "so100_so101_molmoact2")
    np.testing.assert_allclose(q01, REL_Q01)
    np.testing.assert_allclose(q99, REL_Q99)
    a01, _ = load_release_stats(tmp_path, "so100_so101_molmoact2", kind="action_stats")  # a checkpoint dir
    np.testing.assert_allclose(a01, REL_Q01 - 1)
    with pytest.raises(ConvMapError, match=r"'so101' not present; tags present: \['franka_droid', 'so100_so101_molmoact2'\]"):
        load_release_stats(tmp_path / "norm_stats.json", "so101")
    with pytest.raises(FileNotFoundError):
        load_release_stats(tmp_path / "missing.json", "so100_so101_molmoact2")


def test_fit_from_files(tmp_path):
    (tmp_path / "norm_stats.json").write_text(json.dumps(_norm_stats_payload()))
    rig01, rig99 = REL_Q01.copy(), REL_Q99.copy()
    rig01[1], rig99[1] = 90 - REL_Q99[1], 90 - REL_Q01[1]
    states = np.linspace(rig01, rig99, 1001)
    seam = save_seam_stats(seam_stats_from_states(states), tmp_path / "seam.json")
    rep = fit_from_files(seam, tmp_path, "so100_so101_molmoact2")
    assert (rep.convmap.signs[1], rep.convmap.offsets_deg[1]) == (-1, 90.0)
    assert rep.params["norm_tag"] == "so100_so101_molmoact2"


def test_load_release_stats_honours_config_filename(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"norm_stats_filename": "stats_v2.json"}))
    (tmp_path / "stats_v2.json").write_text(json.dumps(_norm_stats_payload()))
    q01, _ = load_release_stats(tmp_path, "so100_so101_molmoact2")
    np.testing.assert_allclose(q01, REL_Q01)


# --- properties on exact tables (rig range = the release box pulled back through a grid map) ---

boxes = st.tuples(st.floats(-100, 100), st.floats(30, 180))


@settings(max_examples=120, deadline=None)
@example(box=(0.0, 180.0), sign=1, offset=180.0)  # an exact tie between +180 and the mirror: keep the sign
@given(box=boxes, sign=st.sampled_from([1, -1]), offset=st.sampled_from(CANDIDATE_OFFSETS_DEG))
def test_exact_tables_recover_the_map_unless_the_mirror_is_ambiguous(box, sign, offset):
    """Same-sign truths are always recovered. A mirrored truth is lost only when a same-sign
    candidate leaves < COVERAGE_MARGIN uncovered: the range is then nearly symmetric and range
    stats alone cannot see the sign (that is what `declared` is for)."""
    lo, span = box
    rel01, rel99 = np.zeros(6) + lo, np.zeros(6) + lo + span
    a, b = mapped_interval(sign, -sign * offset, rel01, rel99)  # rig = sign * (model - offset)
    jf = fit_convention_map(a, b, rel01, rel99).joints[0]
    truth = (sign, offset)
    if sign > 0:
        assert (jf.chosen.sign, jf.chosen.offset_deg) == truth
    elif (jf.chosen.sign, jf.chosen.offset_deg) != truth:  # ambiguous: a same-sign map covers nearly as well
        assert jf.chosen.sign == 1 and jf.chosen.uncovered < 0.15
    docs = ConvMap((sign,) * 6, (offset,) * 6, "docs")
    declared = fit_convention_map(a, b, rel01, rel99, declared=docs).joints[0]
    assert (declared.chosen.sign, declared.chosen.offset_deg) == truth and declared.chosen.uncovered == pytest.approx(0, abs=1e-9)



@pytest.mark.parametrize("kind, says", [("fifo", "is a FIFO (named pipe), not a regular file"),
                                        ("loop", "symbolic link loop"), ("dir", "is a directory"),
                                        ("garbage", "not a seam-stats file"), ("list", "no joints table"),
                                        ("missing", "no such seam-stats file")])
def test_a_seam_stats_path_that_is_not_a_table_is_one_convmap_error_never_a_hang(tmp_path, kind, says):
    """Issue 33: a FIFO as --convmap-seam-stats hung the run (read), and writing the table to one would too."""
    import os

    from engine.policies.convmap.fit import load_seam_stats, save_seam_stats
    from engine.policies.convmap.shim import ConvMapError
    from tests.helpers import returns_within

    path = tmp_path / "rig.json"
    {"fifo": lambda: os.mkfifo(path), "loop": lambda: path.symlink_to(path), "dir": lambda: path.mkdir(),
     "garbage": lambda: path.write_bytes(b"\xff\x00{"), "list": lambda: path.write_text("[1, 2]"),
     "missing": lambda: None}[kind]()

    def refused():
        with pytest.raises(ConvMapError) as got:
            load_seam_stats(path)
        return str(got.value)

    assert says in returns_within(refused, 10, what="reading the seam stats")
    if kind in ("fifo", "dir", "loop"):  # refused in one line (issue 43), never opened and waited on nor renamed over
        def write_refused():
            with pytest.raises(ConvMapError) as got:
                save_seam_stats({"format": "x", "joints": {}}, path)
            return str(got.value)

        assert says in returns_within(write_refused, 10, what="writing the seam stats")
        assert path.is_fifo() if kind == "fifo" else path.is_dir() if kind == "dir" else path.is_symlink()
