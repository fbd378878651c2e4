"""A comparison run directory as `fontaine-eval --prereg DOC --arms A,B` leaves it (issue 24), hand-made:
manifest (arm "A-vs-B", both arms under `arms`, each arm's section under `prereg.arms`, the recorded
comparison), rows that carry their arm, and status.json with the driver's latest decision, computed
the way the driver computes it (prereg.stats.comparison.decide on the rows by arm)."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from prereg.document.read import load
from prereg.rundir.rows import complete_row, rows_by_seed
from prereg.stats.comparison import decide
from tests.prereg.conftest import launched_manifest

EXAMPLES = Path(__file__).resolve().parents[1] / "prereg" / "examples"


def compare_doc(folder: Path) -> Path:
    """A private copy of the shipped comparison example (clumsy vs steady, savi on success, 60 seeds)."""
    dst = Path(folder) / "compare.md"
    shutil.copy(EXAMPLES / "compare.md", dst)
    return dst


def comparison_spec(doc: Path):
    return next(sm.comparison for sm in load(doc).sections if sm.comparison is not None)


def row(arm: str, seed: int, success: bool, progress: float | None = None, **kw) -> dict:
    p = (15.0 if success else 0.0) if progress is None else progress
    return complete_row(dict(arm=arm, seed=seed, success=success, progress_cm=max(p, 0.0), progress_final_cm=p,
                             reset_strikes=0, predicts=10, zero_fallbacks=0, mask_violations=0, status="ok", **kw))


def comparison_rows(a_wins: list[bool], b_wins: list[bool], a: str = "clumsy", b: str = "steady") -> list[dict]:
    """Seed k of A then of B, for each k (the driver's dispatch order)."""
    out = []
    for s in range(max(len(a_wins), len(b_wins))):
        if s < len(a_wins):
            out.append(row(a, s, a_wins[s]))
        if s < len(b_wins):
            out.append(row(b, s, b_wins[s]))
    return out


def make_comparison_run(doc: Path, run_dir: Path, rows: list[dict], *, state: str | None = None,
                        stop: bool | None = None, manifest_over: dict | None = None, record: bool = True) -> Path:
    """The run directory; `state` defaults to stopped (the comparison decided before the last pair) or
    done; `record=False` leaves status.json without the decision (a driver that recorded none)."""
    spec = comparison_spec(doc)
    a_arm, b_arm = spec.arm_a, spec.arm_b
    base = launched_manifest(doc, a_arm)
    seeds = base["seeds"][:spec.seeds_cap(len(base["seeds"]))]
    arms = [{"arm": n, "policy": launched_manifest(doc, n)["policy"]} for n in (a_arm, b_arm)]
    record_ = {**asdict(spec), "assumed_rates": list(spec.assumed_rates) if spec.assumed_rates else None}
    record_.pop("line", None)
    label = f"{a_arm}-vs-{b_arm}"
    manifest = {**base, "run_id": Path(run_dir).name, "arm": label, "seeds": seeds, "arms": arms,
                "comparison": record_,
                "prereg": {**base["prereg"], "arms": {n: {"sha256": base["prereg"]["sha256"], "section": "base"}
                                                      for n in (a_arm, b_arm)}},
                "policy_resolved": {n: {"policy": "scripted", "served": "in each worker"} for n in (a_arm, b_arm)},
                **(manifest_over or {})}
    by = {n: rows_by_seed([r for r in rows if r["arm"] == n], seeds) for n in (a_arm, b_arm)}
    d = decide(spec, by[a_arm], by[b_arm], seeds)
    decision = None if d is None else {**d.as_dict(), "episodes_saved": d.episodes_saved}
    stops = d is not None and d.stops_run and d.at < len(seeds) if stop is None else stop
    state = state or ("stopped" if stops else "done")
    status = {"schema": 1, "state": state, "run_id": Path(run_dir).name, "arm": label, "done": len(rows),
              "total": 2 * len(seeds), "elapsed_s": 12.0, "gpu_hours": 0.0, "gpus": 0, "arms": [a_arm, b_arm],
              "comparison": decision if record else None,
              "stop": ({"by": "decided", "detail": "(comparison) " + d.text, "gate": None, "who": None, "at": None}
                       if stops and d is not None else None),
              "reason": ("decided: (comparison) " + d.text) if stops and d is not None else None}
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "status.json").write_text(json.dumps(status))
    return run_dir
