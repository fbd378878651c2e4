"""Fitting the joint-convention map from two tables: the rig's seam stats and the release's box.

The rig table is the per-joint q01/q99 of the simulator's own state (rig degrees) over rollouts
of a reference policy, written by `--convmap-seam-stats`. The release table is the checkpoint's
`norm_stats.json` state q01/q99 under the norm tag (model degrees). A correct map puts the rig's
reachable range where the release trained; states outside the release box are clipped by the
q01/q99 normalisation, so a wrong map blinds the model without any error.

The rule, per joint (every number below lands in the `FitReport`):

1. Candidates: sign in {+1, -1} x offset in {0, +-90, +-180}. Candidate c maps the rig range
   [q01, q99] to the interval I_c = sort(sign * [q01, q99] + offset), midpoint m_c.
2. Midpoint displacement D_c: the distance (degrees) from m_c to the PADDED release box
   [r01 - pad, r99 + pad], pad = pad_frac * (r99 - r01); zero when m_c lies inside it.
   Coverage u_c: the fraction of I_c that falls outside the UNPADDED release box.
3. Midpoint gate: per sign, the best candidate orders by (D_c, |offset|, offset < 0), i.e. the
   smallest translation among the least displaced. That is deliberately conservative, and it is
   why the gate under-translates near-ties (the seed's elbow: identity's midpoint sat 2.2 deg
   inside the padded box, so the gate kept identity while 56% of the rig range was clipped).
4. Mirror margin (pre-registered): the sign -1 best replaces the sign +1 best only when it
   lowers D by at least MIRROR_MARGIN release spans: (D_same - D_mirror) / span >= MIRROR_MARGIN.
5. Coverage tiebreak: among the near-ties of the gate's pick (D_c <= D_pick + pad), the
   best-covering candidate wins when it leaves at least COVERAGE_MARGIN less of the rig range
   uncovered. This is how a real mirror the margin rule rejected still wins (the seed's
   shoulder_lift: 7.5% vs 27.9% uncovered, a 20.4 pt coverage win that the margin rule
   ignored); the report says which rule decided and why. `coverage_tiebreak=False`
   (`--convmap-fit-tiebreak off`) skips this step: the margin-only fit the lab note started from.
6. Declared override: a declared map (external documentation, e.g. the `official` preset) wins
   per joint when given; the report records it and whether the fit agreed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from engine.policies.base import JOINT_NAMES
from engine.policies.convmap.shim import ConvMap, ConvMapError

CANDIDATE_SIGNS: tuple[int, ...] = (1, -1)
CANDIDATE_OFFSETS_DEG: tuple[float, ...] = (0.0, 90.0, -90.0, 180.0, -180.0)
MIRROR_MARGIN = 0.25  # pre-registered: release spans of midpoint displacement a mirror must win by
PAD_FRAC = 0.10  # the midpoint gate's pad around the release box, as a fraction of its span
COVERAGE_MARGIN = 0.15  # uncovered fraction a near-tie candidate must win by to overturn the gate
SEAM_STATS_FORMAT = "fontaine.convmap.seam_stats/1"
SEAM_STATS_MAX_BYTES = 1024 * 1024  # a rig table is a few KB
DEFAULT_NORM_TAG = "so100_so101_molmoact2"


# --- Geometry: mapped ranges and coverage -------------------------------------------------


def mapped_interval(sign: float, offset: float, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The image of [lo, hi] under x -> sign * x + offset, as (low, high) (a mirror swaps ends)."""
    a = sign * np.asarray(lo, dtype=np.float64) + offset
    b = sign * np.asarray(hi, dtype=np.float64) + offset
    return np.minimum(a, b), np.maximum(a, b)


def uncovered_fraction(lo, hi, box_lo, box_hi) -> np.ndarray:
    """Fraction of [lo, hi] outside [box_lo, box_hi]; a point range counts 0 inside, 1 outside."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    box_lo, box_hi = np.asarray(box_lo, dtype=np.float64), np.asarray(box_hi, dtype=np.float64)
    length = hi - lo
    inside = np.clip(np.minimum(hi, box_hi) - np.maximum(lo, box_lo), 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(length > 0, 1.0 - inside / np.where(length > 0, length, 1.0), 0.0)
    point_out = (lo < box_lo) | (lo > box_hi)
    return np.where(length > 0, frac, point_out.astype(np.float64))


def release_box_in_rig(cmap: ConvMap, release_q01, release_q99) -> tuple[np.ndarray, np.ndarray]:
    """The release box (model degrees) pulled back to rig degrees: A^-1(box), ends sorted."""
    a = cmap.to_rig(np.asarray(release_q01, dtype=np.float64))
    b = cmap.to_rig(np.asarray(release_q99, dtype=np.float64))
    return np.minimum(a, b), np.maximum(a, b)


# --- Seam stats (the rig table) and the release table -------------------------------------


def seam_stats_from_states(states_rig_deg: np.ndarray, *, source: str = "") -> dict:
    """Per-joint q01/q99 of (N, 6) rig-degree states: the rig side of the fit."""
    states = np.asarray(states_rig_deg, dtype=np.float64)
    if states.ndim != 2 or states.shape[1] != len(JOINT_NAMES) or states.shape[0] == 0:
        raise ValueError(f"seam stats need states of shape (N>0, {len(JOINT_NAMES)}), got {states.shape}")
    if not np.all(np.isfinite(states)):
        raise ValueError("seam stats: states contain non-finite values")
    q01, q99 = np.quantile(states, [0.01, 0.99], axis=0)
    return {
        "format": SEAM_STATS_FORMAT,
        "units": "rig_deg",
        "source": source,
        "count": int(states.shape[0]),
        "joints": {j: {"q01": float(q01[i]), "q99": float(q99[i])} for i, j in enumerate(JOINT_NAMES)},
    }


def seam_box(stats: dict) -> tuple[np.ndarray, np.ndarray]:
    """(q01, q99) arrays in `JOINT_NAMES` order from a seam-stats dict."""
    joints = stats["joints"]
    return (
        np.array([joints[j]["q01"] for j in JOINT_NAMES], dtype=np.float64),
        np.array([joints[j]["q99"] for j in JOINT_NAMES], dtype=np.float64),
    )


def save_seam_stats(stats: dict, path: str | Path) -> Path:
    """Written whole, atomically, to a new path or over a regular file only (a FIFO, a device or a
    directory at `path` is a ConvMapError, never opened, waited on or renamed over)."""
    from prereg.rundir.files import write_text_atomic

    path = Path(path)
    try:
        check_seam_stats_target(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(stats, indent=2) + "\n", named=True)
    except OSError as exc:
        raise ConvMapError(f"--convmap-seam-stats {path}: cannot be written ({exc.strerror or exc})") from None
    return path


def check_seam_stats_target(path: str | Path) -> None:
    """A ConvMapError now when `path` cannot take the rig table (not new, not a regular file): asked
    before the rollout that makes the table, and again as it is written."""
    from prereg.core.safe_read import NotWritable, check_output

    try:
        check_output(path)
    except NotWritable as exc:
        raise ConvMapError(f"--convmap-seam-stats {exc}") from None


def load_seam_stats(path: str | Path) -> dict:
    """Read and check a seam-stats JSON written by `save_seam_stats`: bounded and never blocking
    (a FIFO given as --convmap-seam-stats hung the run), every problem a ConvMapError naming the file."""
    from prereg.core.safe_read import Unreadable, read_regular

    try:
        stats = json.loads(read_regular(path, SEAM_STATS_MAX_BYTES))
    except FileNotFoundError:
        raise ConvMapError(f"{path}: no such seam-stats file (write one: --policy scripted --convmap-seam-stats "
                           f"{path})") from None
    except Unreadable as exc:
        raise ConvMapError(f"{path}: {exc.why}") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ConvMapError(f"{path}: not a seam-stats file ({str(exc)[:120]})") from None
    if not isinstance(stats, dict) or not isinstance(stats.get("joints"), dict):
        raise ConvMapError(f"{path}: not a seam-stats file (no joints table)")
    if stats.get("format") != SEAM_STATS_FORMAT:
        raise ConvMapError(f"{path}: not a seam-stats file (format {stats.get('format')!r}, want {SEAM_STATS_FORMAT!r})")
    missing = [j for j in JOINT_NAMES if j not in stats.get("joints", {})]
    if missing:
        raise ConvMapError(f"{path}: seam stats lack joints {missing}")
    seam_box(stats)  # every joint has numeric q01/q99
    return stats


def policy_release_box(spec, checkpoint_path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(q01, q99) of the state range a model policy (a factory.PolicySpec) was trained on, in its own
    units: a lerobot checkpoint's saved normaliser, or MolmoAct2's norm_stats from `checkpoint_path`
    (where the loaded policy found it), else from the checkpoint resolved at the spec's revision."""
    if spec.kind == "lerobot":
        from engine.policies.lerobot_policy import release_state_box

        return release_state_box(spec.checkpoint, spec.revision, spec.feature_map)
    if checkpoint_path is None:
        from engine.policies.molmoact2.checkpoint import hub_revision, resolve_checkpoint

        checkpoint_path = resolve_checkpoint(spec.checkpoint, revision=hub_revision(spec.revision)).path
    return load_release_stats(checkpoint_path, spec.norm_tag)


def load_release_stats(
    norm_stats_path: str | Path, norm_tag: str = DEFAULT_NORM_TAG, *, kind: str = "state_stats"
) -> tuple[np.ndarray, np.ndarray]:
    """The release box: (q01, q99) of the first 6 dims under `norm_tag` in norm_stats.json.

    Same layout lerobot's MolmoAct2 reads: {"norm_mode", "metadata_by_tag": {tag: {"state_stats":
    {"q01", "q99", ...}, "action_stats": {...}}}}. A checkpoint directory is accepted too (its
    config.json may rename the file via `norm_stats_filename`, as lerobot honours).
    """
    from prereg.core.safe_read import JSON_MAX_BYTES, read_regular

    path = Path(norm_stats_path)
    if path.is_dir():
        name = "norm_stats.json"
        config = path / "config.json"
        if config.exists():
            try:
                name = str(json.loads(read_regular(config, JSON_MAX_BYTES)).get("norm_stats_filename") or name)
            except (OSError, json.JSONDecodeError):
                pass
        path = path / name
    if not path.exists():
        raise FileNotFoundError(f"release norm stats not found: {path}")
    payload = json.loads(read_regular(path, JSON_MAX_BYTES))
    by_tag = payload.get("metadata_by_tag")
    if not isinstance(by_tag, dict):
        raise ConvMapError(f"{path}: no metadata_by_tag mapping")
    if norm_tag not in by_tag:
        raise ConvMapError(f"{path}: norm_tag {norm_tag!r} not present; tags present: {sorted(map(str, by_tag))}")
    stats = (by_tag[norm_tag] or {}).get(kind)
    if not isinstance(stats, dict) or "q01" not in stats or "q99" not in stats:
        raise ConvMapError(f"{path}: norm_tag {norm_tag!r} has no {kind}.q01/q99")
    q01 = np.asarray(stats["q01"], dtype=np.float64).reshape(-1)
    q99 = np.asarray(stats["q99"], dtype=np.float64).reshape(-1)
    n = len(JOINT_NAMES)
    if q01.size < n or q99.size < n:
        raise ConvMapError(f"{path}: {norm_tag!r} {kind} has {min(q01.size, q99.size)} dims, need {n}")
    return q01[:n], q99[:n]


# --- The fit ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One (sign, offset) scored against the release box for one joint."""

    sign: int
    offset_deg: float
    mapped_lo: float
    mapped_hi: float
    midpoint: float
    displacement_deg: float  # midpoint's distance outside the padded release box (0 = inside)
    displacement_frac: float  # ... in release spans
    uncovered: float  # coverage: fraction of the mapped rig range outside the release box

    @property
    def label(self) -> str:
        return f"({self.sign:+d},{self.offset_deg:+g})"

    def gate_key(self) -> tuple:
        return (round(self.displacement_deg, 9), abs(self.offset_deg), self.sign < 0, self.offset_deg < 0)

    def as_dict(self) -> dict:
        return {
            "sign": self.sign,
            "offset_deg": self.offset_deg,
            "mapped": [self.mapped_lo, self.mapped_hi],
            "midpoint": self.midpoint,
            "displacement_deg": self.displacement_deg,
            "displacement_frac": self.displacement_frac,
            "uncovered": self.uncovered,
        }


def score_candidate(sign, offset, rig_lo, rig_hi, rel_lo, rel_hi, pad_frac=PAD_FRAC) -> Candidate:
    """Score one (sign, offset) for one joint: midpoint displacement and coverage."""
    span = rel_hi - rel_lo
    pad = pad_frac * span
    lo, hi = mapped_interval(sign, offset, rig_lo, rig_hi)
    mid = 0.5 * (lo + hi)
    disp = max(0.0, (rel_lo - pad) - mid, mid - (rel_hi + pad))
    return Candidate(
        sign=int(sign),
        offset_deg=float(offset),
        mapped_lo=float(lo),
        mapped_hi=float(hi),
        midpoint=float(mid),
        displacement_deg=float(disp),
        displacement_frac=float(disp / span),
        uncovered=float(uncovered_fraction(lo, hi, rel_lo, rel_hi)),
    )


@dataclass(frozen=True)
class JointFit:
    joint: str
    chosen: Candidate
    runner_up: Candidate
    gate_pick: Candidate  # what the midpoint gate + mirror margin alone would pick
    rule: str  # "midpoint" | "mirror-margin" | "coverage" | "declared"
    reason: str
    mirror_gain: float  # (D_same - D_mirror) / span, compared with MIRROR_MARGIN
    candidates: tuple[Candidate, ...]

    def as_dict(self) -> dict:
        return {
            "joint": self.joint,
            "chosen": self.chosen.as_dict(),
            "runner_up": self.runner_up.as_dict(),
            "gate_pick": self.gate_pick.as_dict(),
            "rule": self.rule,
            "reason": self.reason,
            "mirror_gain": self.mirror_gain,
            "candidates": [c.as_dict() for c in self.candidates],
        }


@dataclass(frozen=True)
class FitReport:
    convmap: ConvMap
    joints: tuple[JointFit, ...]
    params: dict = field(default_factory=dict)

    def joint(self, name: str) -> JointFit:
        return self.joints[JOINT_NAMES.index(name)]

    def as_dict(self) -> dict:
        return {"convmap": self.convmap.as_dict(), "params": dict(self.params), "joints": [j.as_dict() for j in self.joints]}

    def format_table(self) -> str:
        p = self.params
        rows = [
            f"convmap fit (MIRROR_MARGIN={p.get('mirror_margin')}, pad_frac={p.get('pad_frac')}, "
            f"coverage_margin={p.get('coverage_margin')}"
            f"{'' if p.get('coverage_tiebreak', True) else ', coverage tiebreak OFF'}); uncovered = share of the mapped rig range "
            "outside the release box",
            f"  {'joint':<14} {'chosen':<11} {'uncov':>6} {'disp':>6}  {'runner-up':<11} {'uncov':>6}  {'rule':<13} reason",
        ]
        for j in self.joints:
            c, r = j.chosen, j.runner_up
            rows.append(
                f"  {j.joint:<14} {c.label:<11} {c.uncovered:>6.1%} {c.displacement_deg:>6.1f}  "
                f"{r.label:<11} {r.uncovered:>6.1%}  {j.rule:<13} {j.reason}"
            )
        return "\n".join(rows)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pt(x: float) -> str:
    return f"{100 * x:.1f} pt"


def _fit_joint(joint, rig_lo, rig_hi, rel_lo, rel_hi, mirror_margin, pad_frac, coverage_margin,
               coverage_tiebreak: bool = True) -> JointFit:
    cands = [
        score_candidate(s, o, rig_lo, rig_hi, rel_lo, rel_hi, pad_frac)
        for s in CANDIDATE_SIGNS
        for o in CANDIDATE_OFFSETS_DEG
    ]
    span = rel_hi - rel_lo
    best_same = min((c for c in cands if c.sign > 0), key=Candidate.gate_key)
    best_mirror = min((c for c in cands if c.sign < 0), key=Candidate.gate_key)
    gain = (best_same.displacement_deg - best_mirror.displacement_deg) / span
    if gain >= mirror_margin:
        pick, rule = best_mirror, "mirror-margin"
        reason = f"mirror lowers midpoint displacement by {_pt(gain)} of span (>= MIRROR_MARGIN {_pt(mirror_margin)})"
    else:
        pick, rule = best_same, "midpoint"
        reason = "least midpoint displacement, smallest offset"
    chosen = pick
    near = [c for c in cands if c.displacement_deg <= pick.displacement_deg + pad_frac * span]
    # Equal coverage keeps the pick's sign: a mirror needs a reason (the margin, or better coverage).
    best_cov = min(near, key=lambda c: (round(c.uncovered, 9), c.sign != pick.sign, c.gate_key()))
    if coverage_tiebreak and pick.uncovered - best_cov.uncovered >= coverage_margin:
        chosen, rule = best_cov, "coverage"
        better = (f"covers {_pt(pick.uncovered - best_cov.uncovered)} better "
                  f"({_pct(best_cov.uncovered)} vs {_pct(pick.uncovered)} uncovered)")
        if best_cov.sign < 0 <= pick.sign:
            reason = (
                f"MIRROR_MARGIN rejected mirror {best_cov.label} (gain {_pt(gain)} < {_pt(mirror_margin)} of span) "
                f"but it {better} than {pick.label}"
            )
        else:
            reason = f"near-tie: midpoint gate picked {pick.label}, but {best_cov.label} {better}"
    others = sorted((c for c in cands if c != chosen), key=lambda c: (round(c.displacement_deg, 9), c.uncovered) + c.gate_key()[1:])
    runner_up = pick if chosen != pick else others[0]
    return JointFit(joint, chosen, runner_up, pick, rule, reason, float(gain), tuple(cands))


def fit_convention_map(
    rig_q01,
    rig_q99,
    release_q01,
    release_q99,
    *,
    mirror_margin: float = MIRROR_MARGIN,
    pad_frac: float = PAD_FRAC,
    coverage_margin: float = COVERAGE_MARGIN,
    coverage_tiebreak: bool = True,
    declared: ConvMap | None = None,
    declared_joints: Sequence[str] | None = None,
) -> FitReport:
    """Fit (sign, offset) per joint from the rig table to the release table (rule: module doc).

    `declared` (e.g. PRESETS["official"]) wins on `declared_joints` (default: all joints).
    """
    arrays = [np.asarray(a, dtype=np.float64).reshape(-1) for a in (rig_q01, rig_q99, release_q01, release_q99)]
    n = len(JOINT_NAMES)
    if any(a.size != n for a in arrays):
        raise ValueError(f"fit_convention_map needs {n} values per table, got {[a.size for a in arrays]}")
    rig_lo, rig_hi = np.minimum(arrays[0], arrays[1]), np.maximum(arrays[0], arrays[1])
    rel_lo, rel_hi = arrays[2], arrays[3]
    if np.any(~(rel_hi > rel_lo)):
        bad = [JOINT_NAMES[i] for i in np.flatnonzero(~(rel_hi > rel_lo))]
        raise ValueError(f"release box has q99 <= q01 on {bad}")
    if declared_joints is not None:
        unknown = [j for j in declared_joints if j not in JOINT_NAMES]
        if unknown:
            raise ConvMapError(f"declared_joints {unknown} unknown; valid joints: {', '.join(JOINT_NAMES)}")
    fits = []
    for i, joint in enumerate(JOINT_NAMES):
        jf = _fit_joint(joint, rig_lo[i], rig_hi[i], rel_lo[i], rel_hi[i], mirror_margin, pad_frac, coverage_margin,
                        coverage_tiebreak)
        if declared is not None and (declared_joints is None or joint in declared_joints):
            d = score_candidate(declared.signs[i], declared.offsets_deg[i], rig_lo[i], rig_hi[i], rel_lo[i], rel_hi[i], pad_frac)
            agree = (d.sign, d.offset_deg) == (jf.chosen.sign, jf.chosen.offset_deg)
            note = "fit agrees" if agree else f"fit chose {jf.chosen.label} by {jf.rule}"
            runner = jf.runner_up if agree else jf.chosen
            jf = JointFit(
                joint, d, runner, jf.gate_pick, "declared",
                f"declared by {declared.name} {d.label} ({note})", jf.mirror_gain, jf.candidates,
            )
        fits.append(jf)
    sources = tuple(
        f"declared:{declared.name}" if jf.rule == "declared" and declared is not None else f"fit:{jf.rule}"
        for jf in fits
    )
    cmap = ConvMap(
        tuple(jf.chosen.sign for jf in fits), tuple(jf.chosen.offset_deg for jf in fits), "fit", sources=sources
    )
    params = {
        "mirror_margin": mirror_margin,
        "pad_frac": pad_frac,
        "coverage_margin": coverage_margin,
        "coverage_tiebreak": bool(coverage_tiebreak),
        "declared": declared.name if declared is not None else None,
        "declared_joints": list(declared_joints) if declared_joints is not None else None,
        "rig_q01": rig_lo.tolist(),
        "rig_q99": rig_hi.tolist(),
        "release_q01": rel_lo.tolist(),
        "release_q99": rel_hi.tolist(),
    }
    return FitReport(cmap, tuple(fits), params)


def fit_from_files(
    seam_stats_path: str | Path,
    norm_stats_path: str | Path,
    norm_tag: str = DEFAULT_NORM_TAG,
    *,
    declared: ConvMap | None = None,
    **kwargs,
) -> FitReport:
    """`--convmap fit` in one call: seam-stats JSON + the checkpoint's norm_stats -> FitReport."""
    rig_q01, rig_q99 = seam_box(load_seam_stats(seam_stats_path))
    rel_q01, rel_q99 = load_release_stats(norm_stats_path, norm_tag)
    report = fit_convention_map(rig_q01, rig_q99, rel_q01, rel_q99, declared=declared, **kwargs)
    report.params.update(seam_stats=str(seam_stats_path), norm_stats=str(norm_stats_path), norm_tag=norm_tag)
    return report
