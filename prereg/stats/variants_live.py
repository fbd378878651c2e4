"""A crossed design's reads as rows arrive (issue 48): each arm's per-variant and pooled read from one
fold per variant (prereg.stats.variants.read_tallies: the report's computation), stated as the report's
story states it (prereg.stats.story.VariantStory). The console's variants panel and the notifier's posts
read it live; once a run is reported, they show results.json's story instead.
"""

from __future__ import annotations

from prereg.rundir.fold import ONE_ARM
from prereg.stats.story import VariantStory
from prereg.stats.variants import Crossed


def live_stories(crossed: Crossed, folds) -> tuple[VariantStory, ...]:
    """Each arm's read from `folds` (variant -> prereg.rundir.fold.RowsFold under `crossed.plans`)."""
    any_fold = next(iter(folds.values()))
    out = []
    for key in any_fold.arms:
        read = crossed.read_tallies({v: f.arms[key] for v, f in folds.items()}, any_fold.plan.seeds)
        out.append(VariantStory.of(crossed.arm if key is ONE_ARM else key, read, crossed.read_variant))
    return tuple(out)
