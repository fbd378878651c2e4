"""An env file's `visual_matching` (issue 48): the rig's photo behind each policy camera.

```yaml
visual_matching:
  backgrounds:                 # policy input -> the rig's photo from that camera, arm and objects removed
    front: rig/front.png       #   relative to the env file; hashed with the env (a new photo is a new env)
  mode: overlay                # overlay (default): the arm, object and target rendered over the photo;
                               # blend: the whole render alpha-blended over it, to align the camera pose
  blend_alpha: 0.5             # blend only: the render's weight
```

The pixel rules are engine/sim/composite.py's; this module reads the declaration and makes the
running scene's `VisualMatch` from the pinned bytes of the photos (engine/envs/pinned.py), so what
is hashed is what the policy sees.
"""

from __future__ import annotations

from pathlib import Path

from engine.envs import pinned
from engine.envs.declare import POLICY_INPUTS, _Reader
from engine.envs.mjcf_scan import file_label
from prereg.core.safe_read import why_not_a_file

KEY = "visual_matching"
FIELDS = ("backgrounds", "mode", "blend_alpha")
MODES = ("overlay", "blend")  # engine.sim.composite.MODES (a test holds them equal; reading a file imports no mujoco)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def read_visual_matching(r: _Reader, raw: dict, folder: Path) -> tuple[dict | None, list[tuple[str, Path]]]:
    """(the declaration {"backgrounds": {input: path}, "mode", "blend_alpha"} or None, the photos as
    (label, path) for the env's files and hash); problems go to `r`."""
    v, before = raw.get(KEY), len(r.out)
    if v is None:
        return None, []
    if not isinstance(v, dict):
        r.err((KEY,), "a mapping {backgrounds: {front: photo.png}, mode: overlay|blend}")
        return None, []
    for k in v:
        if k not in FIELDS:
            r.err((KEY, k), f"not a {KEY} field (fields: {', '.join(FIELDS)})")
    mode = v.get("mode", "overlay")
    if mode not in MODES:
        r.err((KEY, "mode"), f"{mode!r}: overlay (the rendered arm, object and target over the photo) or blend "
              "(the render alpha-blended over the photo, to align the camera)")
    alpha = r.number((KEY, "blend_alpha"), v.get("blend_alpha", 0.5), 0.0, 1.0)
    if "blend_alpha" in v and mode != "blend":
        r.err((KEY, "blend_alpha"), "only with mode: blend")
    backgrounds, files = {}, []
    given = v.get("backgrounds")
    if not isinstance(given, dict) or not given:
        r.err((KEY, "backgrounds"), "missing: a photo per policy camera, e.g. {front: rig/front.png}"
              if given is None else "a mapping {policy input: photo file}")
        given = {}
    for cam, ref in given.items():
        if cam not in POLICY_INPUTS:
            r.err((KEY, "backgrounds", cam), f"not a policy input (inputs: {', '.join(POLICY_INPUTS)})")
        elif not isinstance(ref, str) or not ref.lower().endswith(IMAGE_SUFFIXES):
            r.err((KEY, "backgrounds", cam), f"{ref!r} is not an image file ({', '.join(IMAGE_SUFFIXES)}), "
                  "relative to this file")
        else:
            p = (folder / ref).resolve()
            why = why_not_a_file(p) if pinned.get(p) is None else None
            if why is not None:
                r.err((KEY, "backgrounds", cam), f"{ref!r} {why} ({p})")
            elif (bad := _not_an_image(p)) is not None:
                r.err((KEY, "backgrounds", cam), f"{ref!r} {bad}: give a PNG or JPEG photo")
            else:
                backgrounds[cam] = p
                files.append((file_label(p, folder), p))
    if len(r.out) > before:
        return None, files
    return {"backgrounds": backgrounds, "mode": mode, "blend_alpha": alpha}, files


def _not_an_image(path: Path) -> str | None:
    """Why the file is no image Pillow reads (decoded in full: a truncated photo is refused here, not in
    every worker), or None."""
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(pinned.read(path))) as im:
            im.load()
    except Exception as exc:  # noqa: BLE001 - Pillow's decoders raise several types; each is "not an image"
        return f"cannot be read as an image ({type(exc).__name__}: {exc})"
    return None


def make_visual_match(declared: dict, cameras: dict, keep, size: int):
    """The running scene's engine.sim.composite.VisualMatch: each photo decoded from its pinned bytes and
    keyed by the scene camera its policy input maps to (`cameras`)."""
    from engine.sim.composite import VisualMatch, decode

    images = {cameras[cam]: decode(pinned.read(p), str(p)) for cam, p in declared["backgrounds"].items()}
    return VisualMatch(images, keep, size, mode=declared["mode"], alpha=declared["blend_alpha"])
