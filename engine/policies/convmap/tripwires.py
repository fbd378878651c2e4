"""The two pre-launch tripwires for a joint-convention map, and a thin runner for the probe.

In the seed they caught three wrong joints before any GPU time was spent:

(a) Coverage: the mapped reachable set must cover the task workspace. The release box is where
    the model's q01/q99 normalisation does not clip; the share of the rig's reachable range
    (seam stats) that the map sends outside it is blind to the model. Pure stats, no model.
(b) First action vs current state: at the reset pose a policy that sees its state correctly
    starts near it, so mean |first action - state| collapses to state-copy scale under a correct
    map. A CLAMP SIGNATURE is the smoking gun: the delta equals the gap from the state to the
    release box edge (the clipped state is all the model saw; seed: wrist_roll 34.5 deg =
    77.6 - 43.5). It is BLIND TO SIGN AT REST: any bijection keeps action ~ state at the start
    pose, so a mirrored joint (shoulder_lift +180 vs the official 90 - arm) passes.

Both return a `TripwireReport` (`.passed`, `.as_dict()` for the run dir, `.format_table()`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Sequence

import numpy as np

from engine.policies.base import JOINT_NAMES, Observation
from engine.policies.convmap.fit import (
    CANDIDATE_OFFSETS_DEG,
    CANDIDATE_SIGNS,
    mapped_interval,
    release_box_in_rig,
    uncovered_fraction,
)
from engine.policies.convmap.shim import ConvMap, sim_rad_to_rig_deg
from prereg.core.vocabulary import COVERAGE_MAX_UNCOVERED

COVERAGE_THRESHOLD = COVERAGE_MAX_UNCOVERED  # max share of a joint's reachable range the map may leave clipped
ARM_JOINTS: tuple[str, ...] = JOINT_NAMES[:5]  # the gripper is reported, not judged, by default
SIGN_BLIND_NOTE = (
    "first-action check is BLIND TO SIGN AT REST: any bijective map keeps action ~ state at the "
    "reset pose, so a mirrored joint passes it; sign comes from coverage, the fit and external docs"
)


@dataclass
class TripwireReport:
    """One tripwire's verdict: per-joint rows, notes, and the parameters it was judged with."""

    name: str
    passed: bool
    joints: list[dict]
    columns: tuple[tuple[str, str, str], ...]  # (row key, header, format spec) for the table
    notes: list[str] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "passed": self.passed,
            "joints": self.joints,
            "summary": self.summary,
            "notes": list(self.notes),
            "params": self.params,
        }

    def format_table(self) -> str:
        head = f"tripwire {self.name}: {'PASS' if self.passed else 'FAIL'}"
        rows = [head, "  " + f"{'joint':<14}" + "".join(f" {h:>10}" for _, h, _ in self.columns) + "  status  why"]
        for r in self.joints:
            cells = "".join(f" {_cell(r.get(k), spec):>10}" for k, _, spec in self.columns)
            rows.append(f"  {r['joint']:<14}{cells}  {r['status']:<6}  {r.get('why', '')}")
        if self.summary:
            rows.append("  " + ", ".join(f"{k}={_cell(v, '.2f')}" for k, v in self.summary.items()))
        rows.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(rows)


def _cell(v, spec: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, (bool, str, int)):
        return str(v)
    return format(v, spec)


# --- (a) coverage ---------------------------------------------------------------------------


def coverage_tripwire(
    cmap: ConvMap,
    rig_q01,
    rig_q99,
    release_q01,
    release_q99,
    threshold: float = COVERAGE_THRESHOLD,
    *,
    allow_span_limited: bool | Collection[str] = False,
) -> TripwireReport:
    """Per joint: share of the mapped rig range outside the release box, against `threshold`.

    A joint whose rig span exceeds the release span so much that NO offset gets under the
    threshold is flagged span-limited (the seed's wrists: 53-61% under any offset); that is a
    property of the checkpoint, not the map, so `allow_span_limited` turns it into a warning:
    True for every joint, or the joints named (a plan registers them one by one). A joint named
    that is not span-limited still fails: the allowance never excuses a wrong offset.
    """
    allowed = _allowed_joints(allow_span_limited)
    rig_lo = np.minimum(np.asarray(rig_q01, float), np.asarray(rig_q99, float))
    rig_hi = np.maximum(np.asarray(rig_q01, float), np.asarray(rig_q99, float))
    rel_lo, rel_hi = np.asarray(release_q01, float), np.asarray(release_q99, float)
    rows, passed = [], True
    for i, joint in enumerate(JOINT_NAMES):
        s, o = cmap.signs[i], float(cmap.offsets_deg[i])
        lo, hi = mapped_interval(s, o, rig_lo[i], rig_hi[i])
        unc = float(uncovered_fraction(lo, hi, rel_lo[i], rel_hi[i]))
        rig_span, rel_span = rig_hi[i] - rig_lo[i], rel_hi[i] - rel_lo[i]
        floor = float(max(0.0, 1.0 - rel_span / rig_span)) if rig_span > 0 else 0.0
        best = min(
            ((float(uncovered_fraction(*mapped_interval(bs, bo, rig_lo[i], rig_hi[i]), rel_lo[i], rel_hi[i])), bs, bo)
             for bs in CANDIDATE_SIGNS for bo in CANDIDATE_OFFSETS_DEG),
            key=lambda t: (t[0], abs(t[2]), t[1] < 0),
        )
        span_limited = floor > threshold
        if unc <= threshold:
            status, why = "pass", ""
        elif span_limited:
            status = "warn" if joint in allowed else "fail"
            why = f"span mismatch: rig span {rig_span:.0f} vs release {rel_span:.0f} deg, no offset below {floor:.0%}"
            if joint in allowed:
                why += " (span-limited allowance)"
        else:
            status = "fail"
            why = f"{unc:.0%} of the rig range is clipped; ({best[1]:+d},{best[2]:+g}) leaves {best[0]:.0%}"
        passed &= status != "fail"
        rows.append({
            "joint": joint,
            "sign": int(s),
            "offset_deg": o,
            "mapped_lo": float(lo),
            "mapped_hi": float(hi),
            "release_lo": float(rel_lo[i]),
            "release_hi": float(rel_hi[i]),
            "uncovered": unc,
            "span_floor": floor,
            "best_grid": {"sign": best[1], "offset_deg": best[2], "uncovered": best[0]},
            "status": status,
            "why": why,
        })
    return TripwireReport(
        name="coverage",
        passed=bool(passed),
        joints=rows,
        columns=(("mapped_lo", "mapped_lo", ".1f"), ("mapped_hi", "mapped_hi", ".1f"),
                 ("release_lo", "release_lo", ".1f"), ("release_hi", "release_hi", ".1f"),
                 ("uncovered", "uncovered", ".1%")),
        notes=["the mapped reachable set must cover the task workspace; uncovered = share of the "
               "rig's q01..q99 range that the map sends outside the release q01..q99 box (clipped)"],
        params={"threshold": threshold, "allow_span_limited": [j for j in JOINT_NAMES if j in allowed],
                "convmap": cmap.as_dict()},
    )


def _allowed_joints(allow: bool | Collection[str]) -> frozenset[str]:
    if allow is True or allow is False:
        return frozenset(JOINT_NAMES if allow else ())
    unknown = sorted(set(allow) - set(JOINT_NAMES))
    if unknown:
        raise ValueError(f"span-limited allowance names unknown joints {unknown}; the joints are {', '.join(JOINT_NAMES)}")
    return frozenset(allow)


# --- (b) first action vs state --------------------------------------------------------------


def first_action_deltas(first_actions_rig_deg, states_rig_deg) -> np.ndarray:
    """Per-joint mean |first action - state| over seeds (the metric; also builds an anchor)."""
    a, x = np.asarray(first_actions_rig_deg, float), np.asarray(states_rig_deg, float)
    if a.shape != x.shape or a.ndim != 2 or a.shape[1] != len(JOINT_NAMES):
        raise ValueError(f"need (S, {len(JOINT_NAMES)}) actions and states, got {a.shape} and {x.shape}")
    return np.abs(a - x).mean(axis=0)


def first_action_tripwire(
    first_actions_rig_deg,
    states_rig_deg,
    release_lo_rig,
    release_hi_rig,
    anchor_deg=None,
    *,
    anchor_factor: float = 2.0,
    min_limit_deg: float = 5.0,
    max_delta_deg: float = 10.0,
    clamp_tol_deg: float = 3.0,
    clamp_tol_frac: float = 0.15,
    min_clamp_gap_deg: float = 5.0,
    judged_joints: Sequence[str] = ARM_JOINTS,
) -> TripwireReport:
    """Judge mean |first action - state| per joint and flag clamp signatures.

    The release box comes in RIG degrees (`convmap_fit.release_box_in_rig`); ends may be swapped.
    Limit per joint: max(anchor_factor * anchor, min_limit_deg) against a state-copy anchor (the
    same metric on a reference policy), else `max_delta_deg`. Clamp signature: the state sits
    >= min_clamp_gap_deg outside the box and |delta - gap| <= max(clamp_tol_deg, clamp_tol_frac *
    gap). Joints outside `judged_joints` are reported, never failed.
    """
    a, x = np.asarray(first_actions_rig_deg, float), np.asarray(states_rig_deg, float)
    delta = first_action_deltas(a, x)
    lo = np.minimum(np.asarray(release_lo_rig, float), np.asarray(release_hi_rig, float))
    hi = np.maximum(np.asarray(release_lo_rig, float), np.asarray(release_hi_rig, float))
    gaps = np.maximum(0.0, np.maximum(lo - x, x - hi))  # (S, 6): state's distance outside the box
    gap = gaps.mean(axis=0)
    anchor = None if anchor_deg is None else np.asarray(anchor_deg, float).reshape(-1)
    rows, passed = [], True
    for i, joint in enumerate(JOINT_NAMES):
        limit = max(anchor_factor * anchor[i], min_limit_deg) if anchor is not None else max_delta_deg
        clamp = bool(gap[i] >= min_clamp_gap_deg and abs(delta[i] - gap[i]) <= max(clamp_tol_deg, clamp_tol_frac * gap[i]))
        judged = joint in judged_joints
        whys = []
        if clamp:
            whys.append(f"CLAMP SIGNATURE: delta {delta[i]:.1f} ~ gap {gap[i]:.1f} from state to release edge")
        if delta[i] > limit:
            whys.append(f"delta {delta[i]:.1f} > limit {limit:.1f}")
        status = ("fail" if whys else "pass") if judged else "info"
        passed &= status != "fail"
        rows.append({
            "joint": joint,
            "delta_deg": float(delta[i]),
            "anchor_deg": None if anchor is None else float(anchor[i]),
            "limit_deg": float(limit),
            "state_mean_deg": float(x[:, i].mean()),
            "release_lo_rig": float(lo[i]),
            "release_hi_rig": float(hi[i]),
            "gap_deg": float(gap[i]),
            "clamp_signature": clamp,
            "status": status,
            "why": "; ".join(whys),
        })
    arm = [JOINT_NAMES.index(j) for j in ARM_JOINTS]
    summary = {"seeds": int(a.shape[0]), "arm_mean_delta_deg": float(delta[arm].mean())}
    if anchor is not None:
        summary["arm_mean_anchor_deg"] = float(anchor[arm].mean())
    return TripwireReport(
        name="first_action",
        passed=bool(passed),
        joints=rows,
        columns=(("delta_deg", "delta", ".2f"), ("anchor_deg", "anchor", ".2f"), ("limit_deg", "limit", ".1f"),
                 ("state_mean_deg", "state", ".1f"), ("release_lo_rig", "box_lo", ".1f"),
                 ("release_hi_rig", "box_hi", ".1f"), ("gap_deg", "gap", ".1f")),
        notes=[SIGN_BLIND_NOTE, "delta = mean |first action - state| at the reset pose, rig degrees; "
               "gap = the state's distance outside the release box pulled back to rig degrees"],
        summary=summary,
        params={"anchor_factor": anchor_factor, "min_limit_deg": min_limit_deg, "max_delta_deg": max_delta_deg,
                "clamp_tol_deg": clamp_tol_deg, "clamp_tol_frac": clamp_tol_frac,
                "min_clamp_gap_deg": min_clamp_gap_deg, "judged_joints": list(judged_joints)},
    )


# --- The thin runner ------------------------------------------------------------------------


def run_first_action_probe(
    policy, make_observation: Callable[[int], Observation], seeds: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """One batched predict at the reset pose of each seed -> (first_actions, states), rig deg (S, 6).

    `policy` is a base.Policy already carrying the map under test (the shim is inside it);
    `make_observation(seed)` builds that seed's reset-pose Observation (the sim's reset).
    """
    observations = [make_observation(int(s)) for s in seeds]
    if not observations:
        raise ValueError("first-action probe needs at least one seed")
    chunks = policy.predict_batch(observations)
    if len(chunks) != len(observations):
        raise ValueError(f"policy answered {len(chunks)} chunks for {len(observations)} observations")
    first = np.stack([np.asarray(c.targets_rad, float)[0] for c in chunks])
    states = np.stack([np.asarray(o.state_rad, float) for o in observations])
    return sim_rad_to_rig_deg(first), sim_rad_to_rig_deg(states)


def run_convmap_tripwires(
    cmap: ConvMap,
    rig_q01,
    rig_q99,
    release_q01,
    release_q99,
    *,
    policy=None,
    make_observation: Callable[[int], Observation] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    anchor_deg=None,
    coverage_threshold: float = COVERAGE_THRESHOLD,
    allow_span_limited: bool | Collection[str] = False,
) -> list[TripwireReport]:
    """(a) always; (b) when a policy and an observation builder are given."""
    reports = [coverage_tripwire(cmap, rig_q01, rig_q99, release_q01, release_q99, coverage_threshold,
                                 allow_span_limited=allow_span_limited)]
    if policy is not None and make_observation is not None:
        actions, states = run_first_action_probe(policy, make_observation, seeds)
        box_lo, box_hi = release_box_in_rig(cmap, release_q01, release_q99)
        reports.append(first_action_tripwire(actions, states, box_lo, box_hi, anchor_deg))
    return reports


def tripwires_passed(reports: Sequence[TripwireReport]) -> bool:
    return all(r.passed for r in reports)


def format_tripwires(reports: Sequence[TripwireReport]) -> str:
    return "\n\n".join(r.format_table() for r in reports)


def write_tripwires_json(reports: Sequence[TripwireReport], path: str | Path) -> Path:
    """`convmap_tripwires.json` for the run directory: {"passed", "tripwires": {name: report}}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"passed": tripwires_passed(reports), "tripwires": {r.name: r.as_dict() for r in reports}}
    from prereg.rundir.files import write_text_atomic

    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")  # never through a link onto a device or a FIFO
    return path
