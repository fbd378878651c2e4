"""A crossed design's posts (issue 48), against the fake Discord on loopback: the update every ~10 episodes
and the results post carry each variant's k/n compactly and the pooled rate with its interval, live (the
notifier's folds, one per variant) and then the report's story; the same computation as the report's."""

from __future__ import annotations

import json

from prereg.rundir.files import write_json_atomic
from prereg.stats.story import VariantStory
from prereg.stats.variants import read_variants
from tests.console.test_discord_notify import keys_posted
from tests.crossed_run import ALL, CAMERA, crossed_rows, make_crossed_run, write_report_story


def _status(run_dir, state: str, done: int, total: int) -> None:
    write_json_atomic(run_dir / "status.json", {
        "schema": 1, "state": state, "done": done, "total": total, "elapsed_s": 15.0 * done,
        "projected_wall_s": 15.0 * total if done else None, "gpu_hours": 0.01 * done, "gpu_hours_source": "allocated",
        "reason": None, "updated_at": "2026-11-30T08:10:00Z"})
    (run_dir / "heartbeat").touch()


def _append(run_dir, seeds) -> list[dict]:
    rows = crossed_rows(seeds)
    with open(run_dir / "rows.jsonl", "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return rows


def test_the_update_and_the_results_post_carry_each_variant_and_the_pooled_rate(fake, make_notifier, tmp_path):
    d = make_crossed_run(tmp_path, "crossed-a-20261130-080000", total=25, done=0, rows=[], state="running", mtime=None)
    _status(d, "running", 0, 25)
    n = make_notifier()
    assert n.poll_run(d) == ["launch"]
    rows = _append(d, range(10))
    _status(d, "running", 10, 25)
    assert n.poll_run(d) == ["update:10"]
    assert n.wait_idle(10)
    rows += _append(d, range(10, 25))
    _status(d, "done", 25, 25)
    story = write_report_story(d, rows, range(25))
    (d / "results.md").write_text("## Results\n\nthe report's words\n")
    assert n.poll_run(d) == ["results"]
    assert n.wait_idle(10)

    assert keys_posted(fake) == ["launch", "update:10", "results"]
    launch = fake.messages[0].payload["embeds"][0]["description"]
    assert ("variants: base · dim · clutter · cam-left (each seed on each; the decision reads base; camera, read apart: "
            "cam-left)") in launch
    update = fake.messages[1].payload["embeds"][0]["description"]
    assert "variants: base 8/10 (decides) · dim 5/10 · clutter 3/10 · cam-left 10/10 (camera, apart)" in update
    live = VariantStory.of("a", read_variants(rows[:40], range(25), ALL, camera=CAMERA), "base")
    assert f"{live.pooled_words()} · worst clutter" in update  # the report's computation, on the rows so far
    assert "successes **8**" in update  # the run's counts are the read variant's
    results = fake.messages[2].payload["embeds"][0]["description"]
    (told,) = story.variants
    assert "variants: base 19/25 (decides) · dim 13/25 · clutter 7/25 · cam-left 25/25 (camera, apart)" in results
    assert f"{told.pooled_words()} · worst clutter" in results
