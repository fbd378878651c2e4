"""A crossed design's counts in the console (issue 48): a column per variant, k/n each, the variant the
decision reads marked `decides`, camera variants read apart marked `apart`, then each arm's pooled rate
with its interval and the worst variant.

Drawn from `prereg.stats.story.VariantStory` alone: live, the watcher's (console.aggregate
`RunAggregate.variant_stories`, the report's computation on the folds); once the run is reported, the
report's own (results.json's story). One story, whichever is shown; no Textual, no files.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from prereg.stats.story import CAMERA_APART, DECIDES, VariantStory

NAME_WIDTH = 10  # a variant's name in its column header, clipped
NARROW_TAGS = {CAMERA_APART: "apart"}  # under a camera variant the pooled rate leaves out: as narrow as its column


def pooled_line(story: VariantStory, with_arm: bool, width: int | None = None) -> Text:
    """'pooled 0.62 (95% CI 0.50-0.73) over 4 variants, 20 seeds · worst dim': the story's own words
    (VariantStory.pooled_words), the arm first in a comparison; where they do not fit `width` (a half-width
    panel), from 'over' on a line of its own rather than wrapped mid-phrase."""
    t = Text()
    if with_arm:
        t.append(f"{clip(story.arm, 22)}: ", style="bold")
    head, _, rest = story.pooled_words().partition(" over ")
    t.append(head, style="cyan" if story.pooled_rate is not None else "grey62")
    tail = (f"over {rest}" if rest else "") + (f" · worst {story.worst}" if story.worst else "")
    if tail:
        fits = width is None or len(t.plain) + 1 + len(tail) <= width
        t.append((" " if fits else "\n  ") + tail.lstrip(" ·" if not rest else " "), style="grey62")
    return t


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def variants_table(stories: tuple[VariantStory, ...], reported: bool = False,
                   width: int | None = None) -> RenderableType | None:
    """The variants panel (None for a run of one scene). `reported`: the stories are the report's
    (results.json), not the live read; `width`: the panel's, for the pooled lines."""
    if not stories:
        return None
    first = stories[0]
    t = Table.grid(padding=(0, 2))
    t.add_column(style="grey70")
    for _ in first.cells:
        t.add_column(justify="right")
    t.add_row(Text("variants" + (" (report)" if reported else ""), style="bold"),
              *(Text(clip(c.variant, NAME_WIDTH), style="bold" if first.decides(c.variant) else "")
                for c in first.cells))
    tags = [NARROW_TAGS.get(first.tag(c), first.tag(c)) for c in first.cells]
    if any(tags):
        t.add_row("", *(Text(tag, style="green" if tag == DECIDES else "yellow") for tag in tags))
    comparison = len(stories) > 1
    for s in stories:
        by_variant = {c.variant: c for c in s.cells}
        cells = []
        for c in first.cells:
            got = by_variant.get(c.variant)
            text = f"{got.successes}/{got.n}" if got is not None else "—"
            cells.append(Text(text, style="bold green" if s.decides(c.variant) else ""))
        t.add_row(clip(s.arm, 14) if comparison else "successes", *cells)
    return Group(t, *(pooled_line(s, comparison, width) for s in stories))


def stories_shown(info_story, live: tuple[VariantStory, ...]) -> tuple[tuple[VariantStory, ...], bool]:
    """(the variant stories to show, whether they are the report's): the report's once the run has a
    results.json whose story has them, the live read before."""
    reported = tuple(getattr(info_story, "variants", ()) or ())
    return (reported, True) if reported else (live, False)

