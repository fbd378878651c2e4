"""The image widget the console draws frames and charts with: textual-image's.

textual-image picks the terminal's best protocol once, at import (Kitty graphics, Sixel, or
Unicode half-blocks, which work everywhere, plain tmux included), so this module is imported
before the app starts (console.app imports it). `FONTAINE_IMAGES=halfcell|unicode|sixel|tgp`
forces one (half-blocks are the safe choice when a terminal claims graphics it draws badly).

Its terminal probe can fail (a pseudo-terminal that reports a 0x0 size makes it divide by
zero at import): the console then draws images with its own half-blocks (`HalfBlockImage`)
rather than not starting.
"""

from __future__ import annotations

import os

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

PROBLEM = ""  # why textual-image could not be used, when it could not


class HalfBlockImage(Widget):
    """A PIL image as colour half-blocks (▀: foreground the upper pixel, background the lower),
    scaled to the widget's size with its aspect kept. The fallback when textual-image is unusable."""

    DEFAULT_CSS = "HalfBlockImage { width: auto; height: auto; }"

    def __init__(self, image=None, **kwargs):
        super().__init__(**kwargs)
        self._image = None
        self._rows: list[Strip] = []
        self._for_size = None
        self.image = image

    @property
    def image(self):
        return self._image

    @image.setter
    def image(self, value) -> None:
        self._image = value
        self._for_size = None
        self.refresh(layout=True)

    def get_content_width(self, container, viewport) -> int:
        if self._image is None:
            return 0
        w, h = self._image.size
        height = self.styles.height
        if height is not None and not height.is_auto and self.content_size.height:
            return max(1, min(container.width, round(self.content_size.height * 2 * w / h)))
        return max(1, min(container.width, w))

    def get_content_height(self, container, viewport, width: int) -> int:
        if self._image is None:
            return 0
        w, h = self._image.size
        return max(1, round(width * h / w / 2))

    def render_line(self, y: int) -> Strip:
        size = (self.content_size.width, self.content_size.height)
        if self._image is None or not size[0] or not size[1]:
            return Strip.blank(self.content_size.width)
        if self._for_size != size:
            self._rows = self._half_blocks(*size)
            self._for_size = size
        return self._rows[y] if y < len(self._rows) else Strip.blank(size[0])

    def _half_blocks(self, width: int, height: int) -> list[Strip]:
        w, h = self._image.size
        scale = min(width / w, 2 * height / h)
        cols, rows2 = max(1, int(w * scale)), max(2, int(h * scale) // 2 * 2)
        px = self._image.convert("RGB").resize((cols, rows2)).load()
        out = []
        for y in range(0, rows2, 2):
            segs = []
            for x in range(cols):
                top, bottom = px[x, y], px[x, y + 1]
                segs.append(Segment("▀", Style(color=f"rgb{tuple(top)}", bgcolor=f"rgb{tuple(bottom)}")))
            out.append(Strip(segs, cols))
        return out


try:
    from textual_image.widget import HalfcellImage, SixelImage, TGPImage, UnicodeImage
    from textual_image.widget import Image as AutoImage

    _FORCED = {"halfcell": HalfcellImage, "unicode": UnicodeImage, "sixel": SixelImage, "tgp": TGPImage}
    Image = _FORCED.get(os.environ.get("FONTAINE_IMAGES", "").strip().lower(), AutoImage)
except Exception as exc:  # noqa: BLE001 - a failed terminal probe must not stop the console
    PROBLEM = f"textual-image unusable here ({type(exc).__name__}: {exc}); images drawn as half-blocks"
    Image = HalfBlockImage

__all__ = ["Image", "HalfBlockImage", "PROBLEM"]
