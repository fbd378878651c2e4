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
from textual.errors import NoWidget
from textual.filter import ANSIToTruecolor
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


SYNC_START, SYNC_END = "\x1b[?2026h", "\x1b[?2026l"  # synchronized output, as Textual wraps its own updates

TOLERANCE = 8  # the player keeps a pixel's colour on screen until it moves by more than this (of 255)


def pixels(image, cols: int, rows: int):
    """A PIL image resized to `cols` x 2*`rows` pixels (each cell holds two), as int16 RGB. The box
    filter averages the pixels each one covers (a picture in cells is always a reduction), at a
    third of the default bicubic's cost."""
    import numpy as np
    from PIL import Image

    rgb = image if image.mode == "RGB" else image.convert("RGB")
    return np.asarray(rgb.resize((max(1, cols), 2 * max(1, rows)), Image.Resampling.BOX), dtype=np.int16)


def settle(px, shown) -> None:
    """`shown` (the pixels on screen) takes `px` where it moved by more than TOLERANCE, in place:
    a video's codec noise then repaints nothing (at 176x52 cells, 29% of a filmed episode's cells
    changed from one frame to the next, 12% with the tolerance)."""
    import numpy as np

    moved = np.abs(px - shown).max(axis=2) > TOLERANCE
    shown[moved] = px[moved]


def cell_keys(px):
    """Pixels (`pixels`) as half-block cells, one int each: (upper pixel << 24) | lower pixel, 6 bits
    a channel, so that flat areas share their styles and a run of equal cells is one segment."""
    import numpy as np

    q = px.astype(np.int64) & 0xFC
    rgb = (q[:, :, 0] << 16) | (q[:, :, 1] << 8) | q[:, :, 2]  # one int per pixel
    return (rgb[0::2] << 24) | rgb[1::2]


BLOCK = "▀"  # foreground the upper pixel, background the lower one


def key_runs(keys, offset: int = 0) -> tuple[list[int], list[Segment]]:
    """Cell keys (cell_keys, one line or a span of one) as runs of equal cells: where each run
    starts (plus `offset`) and its segment."""
    if len(keys) <= 24:  # a few cells (most changed spans): plain Python beats numpy's per-call cost
        values = keys.tolist()
        starts = [i for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]
    else:
        import numpy as np

        starts = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist()]
        values = keys.tolist()
    ends = [*starts[1:], len(values)]
    return [offset + a for a in starts], [Segment(BLOCK * (b - a), _style(values[a])) for a, b in zip(starts, ends)]


def key_strip(keys) -> Strip:
    """One line of cell keys as a Strip: one segment per run of equal cells."""
    return Strip(key_runs(keys)[1], len(keys))


SPAN_GAP = 6  # changed cells closer than this are repainted as one span (a cursor move costs a few cells' bytes)


def changed_spans(changed) -> list[tuple[int, int]]:
    """The (start, end) spans of a line's changed cells (a boolean array), merged across gaps of
    fewer than SPAN_GAP unchanged cells."""
    import numpy as np

    xs = np.flatnonzero(changed)
    if not len(xs):
        return []
    breaks = np.flatnonzero(np.diff(xs) > SPAN_GAP)
    firsts = [int(xs[0]), *xs[breaks + 1].tolist()]
    lasts = [*xs[breaks].tolist(), int(xs[-1])]
    return [(a, b + 1) for a, b in zip(firsts, lasts)]


class CellLines:
    """A frame's lines as runs of segments, kept up to date by splicing: a changed span costs the
    segments of its own cells, and the runs on either side are kept (split where the span cuts one)."""

    def __init__(self, keys):
        self.width = int(keys.shape[1])
        self.starts: list[list[int]] = []
        self.segments: list[list[Segment]] = []
        for line in keys:
            starts, segments = key_runs(line)
            self.starts.append(starts)
            self.segments.append(segments)
        self._strips: dict[int, Strip] = {}

    def splice(self, y: int, x0: int, x1: int, keys) -> None:
        """Line y's cells x0..x1 are now `keys` (their keys)."""
        from bisect import bisect_right

        starts, segments = self.starts[y], self.segments[y]
        first = bisect_right(starts, x0) - 1  # the run holding cell x0
        last = bisect_right(starts, x1 - 1) - 1  # the run holding cell x1 - 1
        end = starts[last + 1] if last + 1 < len(starts) else self.width
        new_starts, new_segments = starts[:first], segments[:first]
        if starts[first] < x0:  # the run that x0 cuts keeps its left part
            new_starts.append(starts[first])
            new_segments.append(Segment(BLOCK * (x0 - starts[first]), segments[first].style))
        mid_starts, mid_segments = key_runs(keys, x0)
        new_starts += mid_starts
        new_segments += mid_segments
        if end > x1:  # the run that x1 cuts keeps its right part
            new_starts.append(x1)
            new_segments.append(Segment(BLOCK * (end - x1), segments[last].style))
        self.starts[y] = new_starts + starts[last + 1:]
        self.segments[y] = new_segments + segments[last + 1:]
        self._strips.pop(y, None)

    def strip(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            strip = self._strips[y] = Strip(self.segments[y], self.width)
        return strip


def half_block_strips(image, cols: int, rows: int) -> list[Strip]:
    """A PIL image as `rows` Strips of `cols` half-blocks (the whole box: the caller sizes the box
    to the image's aspect): ▀ with the upper pixel in front and the lower one behind."""
    return [key_strip(line) for line in cell_keys(pixels(image, cols, rows))]


_STYLES: dict[int, Style] = {}  # (upper, lower) colour pair -> Style, shared by every frame of a video
_COLORS: dict[int, object] = {}  # 0xRRGGBB -> rich Color: a pair's two colours are mostly seen before
_STYLES_MAX = 100_000


def _style(key: int) -> Style:
    style = _STYLES.get(key)
    if style is None:
        if len(_STYLES) >= _STYLES_MAX:
            _STYLES.clear()
            _COLORS.clear()
        style = _STYLES[key] = Style.from_color(_color(key >> 24), _color(key & 0xFFFFFF))
    return style


def _color(rgb: int):
    color = _COLORS.get(rgb)
    if color is None:
        from rich.color import Color, ColorType
        from rich.color_triplet import ColorTriplet

        # built directly: Color.from_rgb formats a name for each, most of its cost
        color = _COLORS[rgb] = Color("rgb", ColorType.TRUECOLOR, None, ColorTriplet(rgb >> 16, (rgb >> 8) & 255, rgb & 255))
    return color


def forget_styles() -> None:
    """Drop the styles a video made (tens of thousands of objects the garbage collector would
    otherwise walk on every full pass, and once more at exit): the seed view calls it on closing."""
    _STYLES.clear()
    _COLORS.clear()


class VideoFrame(DrawsPictures, Widget):
    """The player's picture, in half-blocks.

    `show(image)` turns the frame into cell keys (numpy, about a millisecond at 220x60; a pixel
    keeps its colour on screen until it moves by more than TOLERANCE), finds the runs of cells
    that changed, and writes them to the terminal itself (_write_direct) when nothing can cover
    the picture; otherwise (a notification over it, a headless test) they are spliced into the
    lines (CellLines) of the side-by-side tiles (_Tile) that hold them and refreshed Textual's
    way. The tiles are there for the terminal: Textual writes a changed span from the start of
    the widget that holds it, so a whole-width picture wrote ~300 KB a frame at 220x60. Whenever
    Textual draws the picture itself (a resize, a dialog closing), the tiles draw it from the keys.
    Nothing is rendered ahead or kept per frame: the strips of a video rendered ahead (issue 27)
    were ~800k objects at 220x60 for the garbage collector to walk (quitting after playing took
    seconds), and a resize re-rendered every frame in a worker that held the UI's GIL. `image` is
    the frame shown."""

    TILES = 12
    DEFAULT_CSS = """
    VideoFrame { layout: horizontal; width: auto; height: auto; }
    VideoFrame > _Tile { width: 1fr; height: 1fr; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.image = None
        self._shown = None  # the pixels on screen, after the tolerance (settle)
        self._keys = None  # the cells on screen (cell_keys), rows x cols
        self.generation = 0  # counts the times the keys were made whole (a tile's lines are of one)
        self.painted = 0  # cells repainted (the benchmark reads it)
        self._suspended = False  # the app is suspended: nothing is written to the terminal (on_mount)

    def compose(self):
        for _ in range(self.TILES):
            yield _Tile()

    def show(self, image) -> None:
        """Show `image`: the cells that changed are repainted, in spans (changed_spans)."""
        import numpy as np

        self.image = image
        cols, rows = self.content_size.width, self.content_size.height
        old = self._keys
        if not cols or not rows or old is None or old.shape != (rows, cols):
            self._keys = self._shown = None  # not drawn at this size yet: drawn whole when the tiles ask
            for tile in self.query_children(_Tile):
                tile.lines = None
                tile.refresh()
            return
        settle(pixels(image, cols, rows), self._shown)
        keys = cell_keys(self._shown)
        changed = keys != old
        self._keys = keys
        if self._write_direct(keys, changed):
            return
        tiles = []
        for tile in self.query_children(_Tile):
            c0, c1 = tile.columns()
            if tile.lines is not None and tile._for != (self.generation, c0, c1):
                tile.lines = None  # made from other keys or columns: made afresh when drawn
                tile.refresh()
            tiles.append((tile, c0, c1, []))
        for y in np.flatnonzero(changed.any(axis=1)).tolist():
            for x0, x1 in changed_spans(changed[y]):
                self.painted += x1 - x0
                for tile, c0, c1, regions in tiles:
                    a, b = max(x0, c0), min(x1, c1)
                    if a >= b:
                        continue
                    if tile.lines is not None:
                        tile.lines.splice(y, a - c0, b - c0, keys[y, a:b])
                    regions.append(Region(a - c0, y, b - a, 1))
        for tile, _, _, regions in tiles:
            if regions:
                tile.refresh(*regions)

    def _write_direct(self, keys, changed) -> bool:
        """Write the changed spans to the terminal as Textual would draw them (Strip.render, then the
        cursor put back where Textual keeps it), when nothing can be drawn over them (_uncovered).
        Textual's way cost ~20 ms a frame at 220x60 on the development box (the compositor walks
        every line of every tile in the changed spans' bounding box, then builds each line's escape
        codes from its segments), which held the video near 30% of a core; writing the spans is
        ~1 ms. The tiles' lines are dropped: whenever Textual does draw the picture (a resize, a
        dialog or a notification closing over it) it draws it from the keys. False: drawn Textual's
        way (headless too, as in the tests)."""
        import numpy as np

        write = self._terminal()
        if write is None or not self._uncovered(keys.shape):
            return False
        region, console = self.content_region, self.app.console
        out = []
        for y in np.flatnonzero(changed.any(axis=1)).tolist():
            for x0, x1 in changed_spans(changed[y]):
                self.painted += x1 - x0
                out.append(f"\x1b[{region.y + y + 1};{region.x + x0 + 1}H")
                out.append(key_strip(keys[y, x0:x1]).render(console))
        for tile in self.query_children(_Tile):
            tile.lines = None
        if out:
            cursor = self.screen.outer_size.clamp_offset(self.app.cursor_position)  # as App._display leaves it
            out.append(f"\x1b[{cursor.y + 1};{cursor.x + 1}H")
            write(SYNC_START + "".join(out) + SYNC_END)
        return True

    def _uncovered(self, shape) -> bool:
        """Whether Textual would draw the picture's cells as they are, every one of them, now: the
        app is not suspended nor holding its updates back (a batch), the screen is the top one, the
        picture and the boxes around it are displayed, not loading, not clipped, at `shape`, no
        line filter changes colours (NO_COLOR's), and no other widget (a notification, a tooltip,
        an overlay) has a visible cell over the picture. Anything in doubt says no."""
        app, screen = self.app, self.screen
        if self._suspended or getattr(app, "_batch_count", 1) or not screen.is_active or not self.is_attached:
            return False
        if any(not isinstance(f, ANSIToTruecolor) for f in self.get_line_filters()):
            return False
        boxes = [node for node in self.ancestors_with_self if isinstance(node, Widget)]
        if not all(box.display and box.visible and not box.loading for box in boxes):
            return False
        try:
            mine = screen.find_widget(self)
        except NoWidget:
            return False
        region = self.content_region
        if not mine.clip.contains_region(mine.region) or (region.height, region.width) != shape:
            return False
        ours = {*boxes, *self.walk_children()}
        for widget in screen.walk_children():
            if widget in ours:
                continue
            try:
                theirs = screen.find_widget(widget)
            except NoWidget:  # not displayed
                continue
            if theirs.region.intersection(theirs.clip).overlaps(mine.region):
                return False
        return True

    def _terminal(self):
        """The terminal's write: Textual's driver's (its writer thread keeps the order of every
        write, Textual's own and these), or None where there is none to write to (headless, inline,
        a browser). `App._driver` is Textual's private attribute (textual is pinned in
        pyproject.toml): without it, or without what is read of it, the picture goes Textual's way."""
        driver = getattr(self.app, "_driver", None)
        write = getattr(driver, "write", None)
        if not callable(write) or not self.app.is_running:
            return None
        if getattr(driver, "is_headless", True) or getattr(driver, "is_inline", True) or getattr(driver, "is_web", True):
            return None
        return write

    def on_mount(self) -> None:
        """A suspended app (ctrl+z, or a program given the terminal) has no terminal to write to:
        the driver's writer is stopped, and a write could block the app. Told at once (immediate)."""
        self.app.app_suspend_signal.subscribe(self, lambda _app: setattr(self, "_suspended", True), immediate=True)
        self.app.app_resume_signal.subscribe(self, lambda _app: setattr(self, "_suspended", False), immediate=True)

    def forget(self) -> None:
        """Let go of the frame and its cells (the view is closing)."""
        self.image = self._shown = self._keys = None
        for tile in self.query_children(_Tile):
            tile.lines = None

    def keys(self):
        """The keys on screen at the frame's size; after a resize, the frame's whole at the new one."""
        cols, rows = self.content_size.width, self.content_size.height
        if self.image is None or not cols or not rows:
            return None
        if self._keys is None or self._keys.shape != (rows, cols):
            self._shown = pixels(self.image, cols, rows)
            self._keys = cell_keys(self._shown)
            self.generation += 1
            self.painted += rows * cols
        return self._keys


class _Tile(DrawsPictures, Widget):
    """A column band of the player's picture: its cells as CellLines, drawn as they are."""

    def __init__(self):
        super().__init__()
        self.lines: CellLines | None = None
        self._for: tuple | None = None  # (the frame's generation, first column, end column) of the lines

    def columns(self) -> tuple[int, int]:
        """The frame's columns this tile shows."""
        x0 = self.region.x - self.parent.content_region.x
        return x0, x0 + self.region.width

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines of `crop`, from the tile's CellLines (made afresh when the frame's keys or the
        tile's columns change: a resize). No border or padding to draw. The app's filter that maps
        ANSI colours to the theme's truecolor is skipped: every colour here is truecolor already,
        and it walked every segment through a 1,024-entry cache that tens of thousands of colour
        pairs thrash (a third of a frame's cost at 220x60); any other filter (NO_COLOR's) runs."""
        frame = self.parent
        keys = frame.keys() if isinstance(frame, VideoFrame) else None
        x0, x1 = self.columns()
        if keys is None or x1 > keys.shape[1] or x0 >= x1:
            return [Strip.blank(crop.width)] * crop.height
        if self.lines is None or self._for != (frame.generation, x0, x1):
            self.lines, self._for = CellLines(keys[:, x0:x1]), (frame.generation, x0, x1)
        filters = [f for f in self.get_line_filters() if not isinstance(f, ANSIToTruecolor)]
        background = self.background_colors[1] if filters else None
        c0, c1 = crop.column_span
        strips = []
        for y in crop.line_range:
            strip = self.lines.strip(y) if y < len(self.lines.segments) else Strip.blank(x1 - x0)
            if (c0, c1) != (0, self.lines.width):
                strip = strip.crop(c0, c1)
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            strips.append(strip)
        return strips

    def render_line(self, y: int) -> Strip:
        return self.render_lines(Region(0, y, self.size.width, 1))[0]


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

__all__ = ["Image", "HalfBlockImage", "VideoFrame", "half_block_strips", "forget_styles", "DRAWS_CELLS", "PROBLEM"]
