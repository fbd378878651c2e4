"""Episodes a run spends against the seeds its comparison test reads, with 8 workers (issue 47).

Prints, for four designs, the test's mean episodes (2 x seeds at the decision) and the mean episodes a run
spends when the episodes in flight at the decision are cancelled (the driver since issue 47) or run to their
end (before), as ratios. The table in docs/prereg.md ("Episodes after the decision") is its output.

Usage: PYTHONPATH=. .venv/bin/python scripts/dispatch_figure.py [--sims 2000] [--test optimal]
"""

from __future__ import annotations

import argparse

from prereg.document.comparison_spec import ComparisonSpec
from prereg.stats.dispatch import dispatch_cost
from prereg.stats.operating import sized_batch_seeds

DESIGNS = ((0.01, 0.09), (0.10, 0.30), (0.30, 0.50), (0.30, 0.60))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--test", default="sprt")
    args = ap.parse_args()
    print(f"| design | test reads (episodes) | run, in flight cancelled | run, in flight to the end |  ({args.test}, "
          f"{args.workers} workers, successes end at 0.35 of the budget, max seeds 1.5x the batch, {args.sims} runs)")
    print("|---|---|---|---|")
    for pa, pb in DESIGNS:
        effect = round(pb - pa, 2)
        batch = sized_batch_seeds(ComparisonSpec("a", "b", "success", "sprt", minimum_effect=effect, assumed_rates=(pa, pb)))
        spec = ComparisonSpec("a", "b", "success", args.test, minimum_effect=effect, assumed_rates=(pa, pb),
                              max_seeds=int(1.5 * batch))
        c = dispatch_cost(spec, pa, pb, workers=args.workers, sims=args.sims)
        print(f"| {pb:.0%} vs {pa:.0%} | {c.design_episodes:.1f} | {c.ratio_cancelled:.3f}x | {c.ratio_to_end:.3f}x |")


if __name__ == "__main__":
    main()
