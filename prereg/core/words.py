"""How Fontaine says a count and cuts a line, on every surface (the report, the page, the posts, the console)."""

from __future__ import annotations

ELLIPSIS = "…"
WORD_CUT_SPAN = 0.3  # a cut goes back to the last space within this share of the limit, else mid-word


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 episode', '2 episodes', '1 knock-away', '0 seeds'."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def clip_words(text: str, limit: int) -> str:
    """`text` whole when it fits, else cut at a word with '…' (mid-word only when no space is near the end)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= int(limit * (1 - WORD_CUT_SPAN)):
        cut = cut[:space]
    return cut.rstrip(" ,;:·-") + ELLIPSIS
