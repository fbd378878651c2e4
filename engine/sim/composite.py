"""Visual matching (issue 48): the rendered arm, object and target over the rig's own photo.

A policy trained on a real camera sees the rig's background; a sim render shows the MJCF's table and
walls. An env may name, per policy camera, a photo of the rig taken from that camera with the arm and
objects removed: the policy's image then keeps the pixels MuJoCo's segmentation rendering says are the
arm's, the object's or the target's, and takes every other pixel from the photo, resized to the
camera (ManiSkill's digital-twin "overlay"). The debug mode `blend` alpha-blends the whole render
over the photo instead, so a lab can move the declared camera until the table edges line up.

The pixel rules are pure numpy (`keep_mask`, `composite`, `blend`, `fit`), tested on synthetic
segmentations; `VisualMatch` applies them to one scene's frames.
"""

from __future__ import annotations

import io

import mujoco
import numpy as np

from prereg.core.errors import UsageError

MODES = ("overlay", "blend")  # engine.envs.visual reads them from the env file
DEFAULT_BLEND_ALPHA = 0.5  # blend: the render's weight


class BackgroundError(UsageError, ValueError):
    """A background image that cannot be decoded: what the file is, and what would do."""


def keep_mask(seg: np.ndarray, keep_geoms: np.ndarray) -> np.ndarray:
    """HxW bool: the pixels of `seg` (MuJoCo's HxWx2 segmentation: object id, object type; -1 where
    nothing is drawn) that show a geom whose entry in `keep_geoms` (bool per geom id) is set."""
    ids, types = seg[..., 0], seg[..., 1]
    is_geom = (types == int(mujoco.mjtObj.mjOBJ_GEOM)) & (ids >= 0) & (ids < len(keep_geoms))
    out = np.zeros(ids.shape, dtype=bool)
    out[is_geom] = np.asarray(keep_geoms, dtype=bool)[ids[is_geom]]
    return out


def composite(render: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
    """The render where `mask` holds, the background elsewhere (HxWx3 uint8, same sizes)."""
    if render.shape != background.shape or render.shape[:2] != mask.shape:
        raise ValueError(f"composite: render {render.shape}, mask {mask.shape} and background {background.shape} "
                         "differ in size (fit the background to the camera first)")
    return np.where(mask[..., None], render, background).astype(np.uint8)


def blend(render: np.ndarray, background: np.ndarray, alpha: float = DEFAULT_BLEND_ALPHA) -> np.ndarray:
    """alpha * render + (1 - alpha) * background, rounded to the nearest uint8 (the debug mode)."""
    if render.shape != background.shape:
        raise ValueError(f"blend: render {render.shape} and background {background.shape} differ in size")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"blend: alpha {alpha!r} is not in [0, 1]")
    mixed = alpha * render.astype(np.float64) + (1.0 - alpha) * background.astype(np.float64)
    return np.clip(np.rint(mixed), 0, 255).astype(np.uint8)


def decode(data: bytes, label: str) -> np.ndarray:
    """An image file's bytes (PNG, JPEG, anything Pillow reads) as HxWx3 uint8 RGB."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise BackgroundError(f"{label}: not an image Pillow can read ({exc}); give a PNG or JPEG photo") from None


def fit(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """The image resized to the camera's height x width (bilinear; the whole photo, aspect not kept:
    the photo is taken by the camera the render imitates, so only its resolution differs)."""
    if image.shape[:2] == (height, width):
        return image
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((width, height), Image.Resampling.BILINEAR), dtype=np.uint8)


def keep_geoms(model: mujoco.MjModel, is_arm: np.ndarray, is_obj: np.ndarray, target_body: str) -> np.ndarray:
    """Bool per geom: what visual matching keeps from the render: the arm, the object, and every geom
    hanging from the target's body."""
    target_root = model.body_rootid[model.body(target_body).id]
    return np.asarray(is_arm, dtype=bool) | np.asarray(is_obj, dtype=bool) | (model.body_rootid[model.geom_bodyid]
                                                                                == target_root)


class VisualMatch:
    """One scene's visual matching: the photo behind each of its scene cameras, fitted to the render
    size once, the geoms kept, and the mode."""

    def __init__(self, backgrounds: dict[str, np.ndarray], keep: np.ndarray, size: int, mode: str = "overlay",
                 alpha: float = DEFAULT_BLEND_ALPHA):
        if mode not in MODES:
            raise ValueError(f"visual matching mode {mode!r}: one of {', '.join(MODES)}")
        self.backgrounds = {cam: fit(img, size, size) for cam, img in backgrounds.items()}
        self.keep = np.asarray(keep, dtype=bool)
        self.mode, self.alpha = mode, float(alpha)

    @property
    def cameras(self) -> tuple[str, ...]:
        return tuple(self.backgrounds)

    @property
    def needs_segmentation(self) -> bool:
        return self.mode == "overlay"

    def apply(self, camera: str, render: np.ndarray, seg: np.ndarray | None) -> np.ndarray:
        """The frame the policy sees from `camera`: the render as is for a camera with no photo."""
        background = self.backgrounds.get(camera)
        if background is None:
            return render
        if self.mode == "blend":
            return blend(render, background, self.alpha)
        return composite(render, keep_mask(seg, self.keep), background)
