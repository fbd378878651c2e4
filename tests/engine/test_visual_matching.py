"""Visual matching (issue 48): the rendered arm, object and target over the rig's photo. The pixel
rules are checked exactly on synthetic segmentations; one real render of an env file checks that
the scene's segmentation picks the right pixels, and that the photo is part of the env's hash."""

from __future__ import annotations

import io
import shutil

import mujoco
import numpy as np
import pytest
from PIL import Image

from engine.envs import EnvFileError, env_sha256, get_env
from engine.envs import visual as visual_decl
from engine.sim import composite
from tests.engine.env_file_fixture import ENV, write_env

GEOM = int(mujoco.mjtObj.mjOBJ_GEOM)
SITE = int(mujoco.mjtObj.mjOBJ_SITE)


def _seg(ids, types):
    return np.stack([np.asarray(ids, dtype=np.int32), np.asarray(types, dtype=np.int32)], axis=-1)


def test_overlay_keeps_exactly_the_kept_geoms_pixels_and_takes_the_rest_from_the_photo():
    render = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) + 100
    background = np.full((2, 3, 3), 7, dtype=np.uint8)
    # geoms 0 (kept), 1 (not kept), 2 (kept); nothing drawn (-1); a site with the id of a kept geom
    seg = _seg([[0, 1, 2], [-1, 2, 0]], [[GEOM, GEOM, GEOM], [-1, GEOM, SITE]])
    mask = composite.keep_mask(seg, np.array([True, False, True]))
    assert mask.tolist() == [[True, False, True], [False, True, False]]
    out = composite.composite(render, mask, background)
    assert out[0, 0].tolist() == render[0, 0].tolist() and out[0, 2].tolist() == render[0, 2].tolist()
    assert out[1, 1].tolist() == render[1, 1].tolist()
    for y, x in ((0, 1), (1, 0), (1, 2)):
        assert out[y, x].tolist() == [7, 7, 7]
    assert out.dtype == np.uint8


def test_an_id_past_the_models_geoms_is_background_and_sizes_must_agree():
    mask = composite.keep_mask(_seg([[5]], [[GEOM]]), np.array([True]))
    assert mask.tolist() == [[False]]
    with pytest.raises(ValueError, match="fit the background"):
        composite.composite(np.zeros((2, 2, 3), np.uint8), np.ones((2, 2), bool), np.zeros((3, 3, 3), np.uint8))


def test_the_debug_blend_is_the_alpha_mix_rounded():
    render = np.array([[[200, 0, 101]]], dtype=np.uint8)
    photo = np.array([[[100, 255, 0]]], dtype=np.uint8)
    assert composite.blend(render, photo, 0.5).tolist() == [[[150, 128, 50]]]  # 127.5 -> 128, 50.5 -> 50 (even)
    assert composite.blend(render, photo, 0.25).tolist() == [[[125, 191, 25]]]
    assert composite.blend(render, photo, 1.0).tolist() == render.tolist()
    with pytest.raises(ValueError, match="alpha"):
        composite.blend(render, photo, 1.5)


def test_the_photo_is_resized_to_the_camera():
    photo = np.zeros((40, 60, 3), dtype=np.uint8)
    photo[:, :30] = [255, 0, 0]
    photo[:, 30:] = [0, 0, 255]
    fitted = composite.fit(photo, 8, 8)
    assert fitted.shape == (8, 8, 3)
    assert fitted[4, 0].tolist() == [255, 0, 0] and fitted[4, 7].tolist() == [0, 0, 255]
    with pytest.raises(composite.BackgroundError, match="PNG or JPEG"):
        composite.decode(b"not an image", "rig/front.png")


def test_the_readers_modes_are_the_composites():
    assert visual_decl.MODES == composite.MODES


PHOTO_RGB = (255, 0, 255)  # magenta: nowhere in the scene's colours


def _photo(path, size=(48, 36), rgb=PHOTO_RGB):
    buf = io.BytesIO()
    Image.new("RGB", size, rgb).save(buf, format="PNG")
    path.write_bytes(buf.getvalue())


def _lab(tmp_path, block: str):
    lab = write_env(tmp_path / "lab", ENV + block)
    (lab.parent / "rig").mkdir()
    _photo(lab.parent / "rig" / "front.png")
    return lab


OVERLAY = "visual_matching:\n  backgrounds:\n    front: rig/front.png\n"


def test_a_real_render_keeps_the_arm_object_and_target_and_shows_the_photo_elsewhere(tmp_path):
    lab = _lab(tmp_path, OVERLAY)
    spec = get_env(str(lab))
    assert "rig/front.png" in [label for label, _ in spec.files]
    env = spec.make(spec, render_size=48)
    try:
        env.reset(0)
        camera = env.cameras["front"]
        raw = env._render(env._renderer, camera)
        seg = env._render(env._renderer, camera, segment=True)
        kept = composite.keep_mask(seg, env.visual_match.keep)
        model = env.model
        names = {model.body(model.geom_bodyid[g]).name for g in np.unique(seg[..., 0][kept])}
        assert {"block", "pad"} <= names and len(names) > 2  # the object, the target and arm links
        assert "table" not in {model.geom(g).name for g in np.unique(seg[..., 0][kept])}
        assert 0 < kept.sum() < kept.size
        image = env.policy_images()["front"]
        assert (image[kept] == raw[kept]).all()
        assert (image[~kept] == np.array(PHOTO_RGB, dtype=np.uint8)).all()
        assert (env.policy_images()["wrist"] == env._render(env._renderer, env.cameras["wrist"])).all()  # no photo
    finally:
        env.close()


def test_the_blend_mode_mixes_the_whole_render_with_the_photo(tmp_path):
    lab = _lab(tmp_path, OVERLAY + "  mode: blend\n  blend_alpha: 0.25\n")
    spec = get_env(str(lab))
    env = spec.make(spec, render_size=32)
    try:
        env.reset(0)
        raw = env._render(env._renderer, env.cameras["front"])
        photo = np.broadcast_to(np.array(PHOTO_RGB, dtype=np.uint8), raw.shape)
        assert (env.policy_images()["front"] == composite.blend(raw, photo, 0.25)).all()
    finally:
        env.close()


def test_a_changed_photo_is_a_different_env(tmp_path):
    lab = _lab(tmp_path, OVERLAY)
    digest = env_sha256(str(lab))
    moved = tmp_path / "elsewhere"
    shutil.copytree(lab.parent, moved)
    assert env_sha256(str(moved / "env.yaml")) == digest
    _photo(moved / "rig" / "front.png", rgb=(250, 0, 255))
    assert env_sha256(str(moved / "env.yaml")) != digest


@pytest.mark.parametrize("block, says", [
    ("visual_matching:\n  backgrounds:\n    front: rig/missing.png\n", "visual_matching.backgrounds.front: 'rig/missing.png'"),
    ("visual_matching:\n  backgrounds:\n    side: rig/front.png\n", "not a policy input"),
    ("visual_matching:\n  backgrounds:\n    front: rig/front.txt\n", "is not an image file"),
    (OVERLAY + "  mode: paint\n", "overlay (the rendered arm"),
    (OVERLAY + "  blend_alpha: 0.3\n", "only with mode: blend"),
    ("visual_matching:\n  mode: blend\n", "backgrounds: missing"),
    ("visual_matching:\n  backgrounds:\n    front: rig/torn.png\n", "'rig/torn.png' cannot be read as an image"),
])
def test_a_bad_declaration_says_what_and_where(tmp_path, block, says):
    lab = _lab(tmp_path, block)
    (lab.parent / "rig" / "torn.png").write_bytes((lab.parent / "rig" / "front.png").read_bytes()[:40])
    with pytest.raises(EnvFileError) as err:
        get_env(str(lab))
    assert says in str(err.value) and f"{lab}:" in str(err.value)
