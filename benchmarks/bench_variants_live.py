"""What a crossed design costs the console's live read (issue 48): folding a run's rows and one snapshot
(what each redraw reads), for a run of one scene and for the same seeds crossed with variants.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_variants_live.py [--seeds 25000] [--variants 3] [--repeats 3]

`one scene`: the seeds on base alone, the counts only. `crossed`: every seed on base and each variant
(a camera variant among them), one fold per variant (console.aggregate.RunAggregate with a Crossed
design) and the live per-variant and pooled read in every snapshot (prereg.stats.variants.read_tallies:
the report's computation). It prints the median over the repeats of each, per row folded and per
snapshot, and the ratio per row (1.0: a variant's row costs what a base row costs).
"""

from __future__ import annotations

import argparse
import statistics
import time

from console.aggregate import RunAggregate
from console.fixtures import make_row
from prereg.rundir.fold import Plan
from prereg.rundir.manifest import Manifest
from prereg.stats.variants import Crossed


def rows_of(seeds: int, variants: tuple[str, ...]) -> list[dict]:
    out = []
    for s in range(seeds):
        for i, v in enumerate(("base", *variants)):
            out.append(make_row(s, variant=None if v == "base" else v, success=(s + i) % 3 != 0))
    return out


def timed(plan: Plan, crossed: Crossed | None, rows: list[dict], repeats: int) -> tuple[float, float]:
    fold_s, snap_s = [], []
    for _ in range(repeats):
        agg = RunAggregate(plan, crossed=crossed)
        t = time.perf_counter()
        for i in range(0, len(rows), 4096):  # as a tail hands them over
            agg.add_many(rows[i:i + 4096])
        fold_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        agg.snapshot()
        snap_s.append(time.perf_counter() - t)
    return statistics.median(fold_s), statistics.median(snap_s)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=25_000)
    p.add_argument("--variants", type=int, default=3, help="beside base; the last moves a camera")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    names = tuple(f"v{i}" for i in range(a.variants))
    m = Manifest.from_dict({"run_id": "bench", "arm": "a", "seeds": list(range(a.seeds)),
                            "config": {"variants": list(names), "camera_variants": list(names[-1:])}})
    plain = rows_of(a.seeds, ())
    crossed = rows_of(a.seeds, names)
    one = timed(Plan(tuple(range(a.seeds))), None, plain, a.repeats)
    both = timed(Plan.of(m), Crossed.of(m), crossed, a.repeats)
    print(f"{a.seeds} seeds, {a.variants} variants beside base, median of {a.repeats}")
    print(f"{'':12} {'rows':>8} {'fold s':>8} {'us/row':>8} {'snapshot ms':>12}")
    for label, rows, (f, s) in (("one scene", plain, one), ("crossed", crossed, both)):
        print(f"{label:12} {len(rows):8d} {f:8.2f} {1e6 * f / len(rows):8.1f} {1e3 * s:12.1f}")
    print(f"crossed / one scene, per row: {(both[0] / len(crossed)) / (one[0] / len(plain)):.2f}")


if __name__ == "__main__":
    main()
