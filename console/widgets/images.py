"""The image widget the console draws frames and charts with: textual-image's.

textual-image picks the terminal's best protocol once, at import (Kitty graphics, Sixel, or
Unicode half-blocks, which work everywhere, plain tmux included), so this module is imported
before the app starts (console.app imports it). `FONTAINE_IMAGES=halfcell|unicode|sixel|tgp`
forces one (half-blocks are the safe choice when a terminal claims graphics it draws badly).
"""

from __future__ import annotations

import os

from textual_image.widget import HalfcellImage, Image as AutoImage, SixelImage, TGPImage, UnicodeImage

_FORCED = {"halfcell": HalfcellImage, "unicode": UnicodeImage, "sixel": SixelImage, "tgp": TGPImage}
Image = _FORCED.get(os.environ.get("FONTAINE_IMAGES", "").strip().lower(), AutoImage)

__all__ = ["Image"]
