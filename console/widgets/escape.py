"""Nothing from a file reaches the terminal raw: the console's last line filter shows control
characters escaped and redacts a secret's shape.

An arm name, a stop reason, a row's note or a document's title can hold escape sequences
(`"a\\x1b[2J\\x1b]0;T\\x07"`). Textual writes a widget's text to the terminal as it is, so drawn raw they
clear the screen and set the terminal's title. Every line every widget draws passes through
`ShowControls` (the app adds it to its line filters, Textual's own hook for recolouring lines),
which writes each control character as a visible escape (`\\x1b`, prereg.core.untrusted.escaped),
whichever screen drew it, today's or tomorrow's. A control character takes no cell, its escape
does: the line is cut back to its width, so the layout never moves.

Pictures are not text: a widget that draws images (`DrawsPictures`: half-blocks, Sixel, Kitty
graphics, whose protocols are escape sequences) opts out.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from prereg.core.untrusted import has_control, may_hold_secret, shown


class ShowControls(LineFilter):
    """A line filter: control characters in a line's text shown as escapes and a secret's shape
    redacted (a row's note quoting a token, written by someone else's hand), the line's width kept."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if not _needs("".join(seg.text for seg in segments if not seg.control)):  # one look at the line
            return segments
        width = Segment.get_line_length(segments)
        out = [seg if seg.control or not _needs(seg.text) else Segment(shown(seg.text), seg.style) for seg in segments]
        return Segment.adjust_line_length(out, width)


def _needs(text: str) -> bool:
    return has_control(text) or may_hold_secret(text)


SHOW_CONTROLS = ShowControls()  # one instance: Textual caches a filtered line by its filter


class DrawsPictures:
    """Mixed into a widget whose cells are a picture (an image, a video frame): its lines are not
    filtered by `ShowControls` (an image protocol's own escape sequences must reach the terminal)."""

    def get_line_filters(self):
        return [f for f in super().get_line_filters() if not isinstance(f, ShowControls)]
