"""Which episodes a run films: the one grammar of `video_draw`, for the pre-registration's
protocol and for `fontaine-eval --video-draw`, and the one rule that applies it.

    auto        every seed of a run of up to VIDEO_ALL_UP_TO seeds, else as 0 (the flag's default)
    0           the first episode each worker runs
    none | off  no video
    all         every episode
    seeds:6,28  just these seeds

The cost of a video per episode is measured in benchmarks/bench_driver.py.
"""

from __future__ import annotations

# auto films every seed of a run of up to this many seeds. Measured by benchmarks/bench_driver.py
# --only video (2-core box, software GL, front | wrist at 224 px): +1.6 to 2.5 s of wall and 0.3 MB
# per episode, about 10x a scripted episode's 0.25 s but a small part of a served policy's episode.
# At 100 seeds of 30-s episodes that is about 12 minutes of worker time and 100 MB: worth a video
# of every seed.
VIDEO_ALL_UP_TO = 100
CHOICES = "'auto', 0, 'none', 'all' or 'seeds:6,28'"


def parse_video_draw(value: object) -> str:
    """The draw in its one written form ("auto", "0", "none", "all", "seeds:6,28"); ValueError says
    what is wrong. A document may write 0 as a number; true/false and other numbers are refused
    (only 0 has a meaning: the first episode of each worker)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a video draw: use {CHOICES}")
    if isinstance(value, int):
        if value == 0:
            return "0"
        raise ValueError(f"{value!r} is not a video draw: only 0 is a number here (the first episode of "
                         f"each worker); use {CHOICES}")
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a video draw: use {CHOICES}")
    d = value.strip().lower()
    if d in ("auto", "0", "all"):
        return d
    if d in ("none", "off"):
        return "none"
    if d.startswith("seeds:"):
        parts = [s.strip() for s in d[6:].split(",") if s.strip()]
        if parts and all(p.isascii() and p.isdigit() for p in parts):
            return "seeds:" + ",".join(str(int(p)) for p in parts)
        raise ValueError(f"{value!r}: 'seeds:' takes whole seed numbers separated by commas, e.g. 'seeds:6,28'")
    raise ValueError(f"{value!r} is not a video draw: use {CHOICES}")


def films(draw: str, seed: int, n_seeds: int, episodes_started: int) -> bool:
    """Whether the episode of `seed` is filmed, the worker having started `episodes_started`
    episodes before it, in a run of `n_seeds` seeds."""
    d = parse_video_draw(draw)
    if d == "none":
        return False
    if d == "all" or (d == "auto" and n_seeds <= VIDEO_ALL_UP_TO):
        return True
    if d.startswith("seeds:"):
        return seed in {int(s) for s in d[6:].split(",")}
    return episodes_started == 0  # "0", and "auto" for a run of more than VIDEO_ALL_UP_TO seeds
