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
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from console.widgets.escape import DrawsPictures

PROBLEM = ""  # why textual-image could not be used, when it could not


class HalfBlockImage(DrawsPictures, Widget):
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


def half_block_strips(image, cols: int, rows: int) -> list[Strip]:
    """A PIL image as `rows` Strips of `cols` half-blocks (the whole box: the caller sizes the box
    to the image's aspect). Pure, and safe off the UI thread: the video player renders frames
    ahead in a worker and the UI only swaps the strips in. Colours keep 6 bits a channel, so that
    flat areas share their styles (and a run of equal cells is one segment)."""
    import numpy as np

    cols, rows = max(1, cols), max(1, rows)
    px = np.asarray(image.convert("RGB").resize((cols, 2 * rows)), dtype=np.uint64) & 0xFC
    rgb = (px[:, :, 0] << 16) | (px[:, :, 1] << 8) | px[:, :, 2]  # one int per pixel
    keys = ((rgb[0::2] << 24) | rgb[1::2]).tolist()  # one int per cell: (upper pixel, lower pixel)
    out = []
    for line in keys:
        segs = []
        run_key, run_len = line[0], 0
        for key in line:
            if key == run_key:
                run_len += 1
                continue
            segs.append(Segment("▀" * run_len, _style(run_key)))
            run_key, run_len = key, 1
        segs.append(Segment("▀" * run_len, _style(run_key)))
        out.append(Strip(segs, cols))
    return out


_STYLES: dict[int, Style] = {}  # (upper, lower) colour pair -> Style, shared by every frame of a video
_STYLES_MAX = 200_000


def _style(key: int) -> Style:
    style = _STYLES.get(key)
    if style is None:
        from rich.color import Color, ColorType
        from rich.color_triplet import ColorTriplet

        if len(_STYLES) >= _STYLES_MAX:
            _STYLES.clear()
        top, bottom = key >> 24, key & 0xFFFFFF
        # Colors built directly: Color.from_rgb formats a name for each, most of this function's cost
        style = _STYLES[key] = Style.from_color(
            Color("rgb", ColorType.TRUECOLOR, None, ColorTriplet(top >> 16, (top >> 8) & 255, top & 255)),
            Color("rgb", ColorType.TRUECOLOR, None, ColorTriplet(bottom >> 16, (bottom >> 8) & 255, bottom & 255)))
    return style


class VideoFrame(DrawsPictures, Widget):
    """The player's picture: strips rendered ahead (`half_block_strips`, in a worker) and swapped
    in on the player's timer, so that showing a frame costs the UI thread no image work at all.
    textual-image's half-blocks resized and re-encoded each frame on the UI thread, which held a
    10 fps video to about 1.4 fps at 0.88 of a core. `image` is the frame shown."""

    DEFAULT_CSS = "VideoFrame { width: auto; height: auto; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.image = None
        self._strips: list[Strip] = []

    def show(self, image, strips: list[Strip]) -> None:
        """Swap in a frame's strips; only the lines that differ from the shown ones are repainted
        (a still background costs the terminal nothing from one frame to the next)."""
        old, self.image, self._strips = self._strips, image, strips
        width = self.content_size.width
        if len(old) != len(strips) or not width:
            self.refresh()
            return
        for y, (a, b) in enumerate(zip(old, strips)):
            if a is not b and list(a) != list(b):
                self.refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        if y < len(self._strips) and self._strips[y].cell_length == width:
            return self._strips[y]
        return Strip.blank(width)


try:
    from textual_image.widget import HalfcellImage, SixelImage, TGPImage, UnicodeImage
    from textual_image.widget import Image as AutoImage

    _FORCED = {"halfcell": HalfcellImage, "unicode": UnicodeImage, "sixel": SixelImage, "tgp": TGPImage}
    _Chosen = _FORCED.get(os.environ.get("FONTAINE_IMAGES", "").strip().lower(), AutoImage)

    class Image(DrawsPictures, _Chosen, Renderable=_Chosen._Renderable):  # its protocol's escapes reach the terminal
        """textual-image's widget for this terminal, its lines not filtered (console/widgets/escape.py)."""

    from textual_image.renderable import Image as _AutoRenderable
    from textual_image.renderable.halfcell import Image as _HalfcellRenderable
    from textual_image.renderable.unicode import Image as _UnicodeRenderable

    # the terminal gets cells, not pixels: the video player draws its own half-blocks, rendered ahead
    DRAWS_CELLS = _Chosen in (HalfcellImage, UnicodeImage) or (
        _Chosen is AutoImage and _AutoRenderable in (_HalfcellRenderable, _UnicodeRenderable))
except Exception as exc:  # noqa: BLE001 - a failed terminal probe must not stop the console
    PROBLEM = f"textual-image unusable here ({type(exc).__name__}: {exc}); images drawn as half-blocks"
    Image = HalfBlockImage
    DRAWS_CELLS = True

__all__ = ["Image", "HalfBlockImage", "VideoFrame", "half_block_strips", "DRAWS_CELLS", "PROBLEM"]
