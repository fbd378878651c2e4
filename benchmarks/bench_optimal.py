"""What test optimal's design search costs: the backward induction it runs a thousand times a design
(prereg.stats.paired_optimal._lagrangian, every step's posteriors at once) against the step-by-step
induction it replaced (tests/prereg/test_paired_optimal.py keeps it, and holds the two equal bit for bit),
measured in the same run, then what `fontaine-prereg validate` spends on a plan whose test cannot reach
its power (it searches the designs of many max_seeds to say which would).

    .venv/bin/python benchmarks/bench_optimal.py [--n 120] [--calls 200] [--repeats 3]

It prints the median ms a call of each over the repeats and `step-by-step / at once` (above 1: the
vectorised induction is faster), then validate's wall time on the refused plan (the design cache off).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

from prereg.stats import paired_optimal as O
from tests.prereg.test_paired_optimal import _lagrangian_step_by_step


def per_call_ms(fn, n: int, calls: int) -> float:
    dlt, reach = O.clock(n, 0.3)
    t0 = time.perf_counter()
    for i in range(calls):
        fn(0.8, n, math.exp(1.0 + i * 0.01), math.exp(3.5), dlt, reach)
    return (time.perf_counter() - t0) / calls * 1000


def validate_refused_s() -> float:
    """`fontaine-prereg validate` on tests/prereg/test_comparison.py's SPRT plan that needs 139 seeds."""
    from prereg.outputs.cli import main
    from tests.prereg.test_comparison import DOC

    text = DOC.replace("seeds: 0-99", "seeds: 0-199").replace("max_seeds: 60", "max_seeds: 123")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FONTAINE_CACHE"] = tmp  # nothing kept from an earlier run
        plan = Path(tmp) / "sprt.md"
        plan.write_text(text.replace("test: savi", "test: sprt\n  assumed_rates: [0.01, 0.09]"))
        t0 = time.perf_counter()
        code = main(["validate", str(plan)])
        took = time.perf_counter() - t0
    assert code == 2, code
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=120, help="walk steps (the design's max seeds)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    at_once, stepwise = [], []
    for _ in range(args.repeats):
        at_once.append(per_call_ms(O._lagrangian, args.n, args.calls))
        stepwise.append(per_call_ms(_lagrangian_step_by_step, args.n, args.calls))
    a, s = statistics.median(at_once), statistics.median(stepwise)
    print(f"backward induction, {args.n} steps: at once {a:.2f} ms, step by step {s:.2f} ms a call; "
          f"step-by-step / at once = {s / a:.2f}x")
    print(f"validate on a plan whose test cannot reach its power: {validate_refused_s():.1f} s")


if __name__ == "__main__":
    main()
