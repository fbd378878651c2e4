"""A crossed design's run directory (issue 48), hand-made as the engine leaves it: manifest.json whose
`config` names the variants beside `base`, the camera variants and the read variant; rows that name
their `variant` (null on base) and their video (prereg.rundir.files.video_relpath); results.json only
when asked (a reported run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from console.fixtures import FIXED_TIME, make_row, make_run_dir
from prereg.rundir.files import video_relpath
from prereg.rundir.rows import BASE_VARIANT

VARIANTS = ("dim", "clutter", "cam-left")  # beside base
CAMERA = ("cam-left",)
ALL = (BASE_VARIANT, *VARIANTS)


def wins(variant: str, seed: int) -> bool:
    """Who succeeds: base on 3 seeds in 4, dim on 1 in 2, clutter on 1 in 4, the camera variant on every seed."""
    return {"base": seed % 4 != 3, "dim": seed % 2 == 0, "clutter": seed % 4 == 0, "cam-left": True}[variant]


def crossed_rows(seeds, *, arm: str = "a", variants=ALL, filmed=(), win=wins) -> list[dict]:
    """Seed by seed, each variant in the plan's order (the engine's dispatch); `filmed`: seeds whose
    episodes name a video (every variant's)."""
    out = []
    for s in seeds:
        for v in variants:
            name = None if v == BASE_VARIANT else v
            ok = win(v, s)
            out.append(make_row(s, arm=arm, variant=name, success=ok, success_tick=600 if ok else None,
                                video=video_relpath(s, None, name) if s in filmed else None))
    return out


def make_crossed_run(runs_dir: Path, run_id: str, *, total: int = 8, done: int | None = None, arm: str = "a",
                     rows: list[dict] | None = None, read_variant: str = BASE_VARIANT, pool_cameras: bool = False,
                     **kw) -> Path:
    """A one-arm crossed run of `total` seeds, the first `done` of them with a row on every variant."""
    done = total if done is None else done
    rows = rows if rows is not None else crossed_rows(range(done), arm=arm)
    d = make_run_dir(runs_dir, run_id, arm=arm, total=total, done=done, rows=rows, **kw)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["config"] = {"variants": list(VARIANTS), "camera_variants": list(CAMERA), "read_variant": read_variant,
                          "pool_cameras": pool_cameras, "variant_sha256": {v: f"{i:064x}" for i, v in enumerate(VARIANTS)}}
    (d / "manifest.json").write_text(json.dumps(manifest))
    mtime = kw.get("mtime", FIXED_TIME)
    if mtime is not None:  # as make_run_dir leaves every file (the snapshots' clock)
        os.utime(d / "manifest.json", (mtime, mtime))
    return d


def write_report_story(run_dir: Path, rows: list[dict], seeds, *, arm: str = "a", read_variant: str = BASE_VARIANT,
                       state: str = "done") -> "object":
    """results.json with a story as the report records it (prereg.stats.story.Story, its `variants` from
    read_variants on `rows`); the Story."""
    from prereg.rundir.files import write_json_atomic
    from prereg.stats.story import ArmStory, Story, VariantStory
    from prereg.stats.variants import read_variants

    read = read_variants(rows, seeds, ALL, camera=CAMERA)
    counted = read.per_variant[ALL.index(read_variant)]
    story = Story(run_dir.name, state, "not judged yet", ("no decision registered",),
                  (ArmStory(arm, "not judged yet", (), counted.successes, counted.n, len(list(seeds))),),
                  generated_at="2026-01-01T00:20:00Z", variants=(VariantStory.of(arm, read, read_variant),))
    write_json_atomic(run_dir / "results.json", {"story": story.as_dict()})
    return story
