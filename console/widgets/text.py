"""Text widgets whose height follows their text, every time.

Textual 8.2 keys a widget's cached box model on `Widget._layout_updates`, and `refresh(layout=True)`
counts a layout only when none is pending (`_layout_required` is False). A widget whose first layout
request is still pending when the screen lays out (its idle not yet run: the console's first draw,
under load) keeps a box model cached for its first text; an update then asks for a layout that is
not counted, and the screen's next layout finds the stale box. The run header stayed one row tall
under its three-row "died" banner (1 start in ~25 on a busy machine). `FreshLayout` counts every
layout request, so a cached box is never reused for new text.
"""

from __future__ import annotations

from textual.widgets import Static


class FreshLayout:
    """Mixin for a Widget: every `refresh(layout=True)` invalidates the cached box model."""

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False):
        if layout and self._layout_required:  # a request already pending: Textual would not count this one
            self._layout_updates += 1
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)


class TextBlock(FreshLayout, Static):
    """A Static whose height is laid out again on every update (see the module's docstring)."""
