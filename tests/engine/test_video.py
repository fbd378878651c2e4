"""A filmed episode's mp4, encoded in the worker's process (engine/video.py), and the renderer that
draws its frames holding only what it can draw (engine/sim/render.py)."""

from __future__ import annotations

import time

import mujoco
import numpy as np
import psutil
import pytest

from engine.envs import get_env
from engine.sim.render import FrameRenderer, scene_geoms
from engine.workers import video
from engine.workers.video import QUEUE_FRAMES, VideoWriter


def frames(n: int, h: int = 224, w: int = 448) -> list[np.ndarray]:
    """A bright block moving right over a gradient: frames a codec cannot make alike."""
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 // w, yy * 255 // h, np.full_like(xx, 90)], axis=-1).astype(np.uint8)
    out = []
    for i in range(n):
        img = base.copy()
        x = i * (w - 40) // max(1, n - 1)
        img[h // 3: h // 3 + 40, x: x + 40] = (250, 220, 30)
        out.append(img)
    return out


def test_an_mp4_a_browser_plays_is_written_in_this_process(tmp_path):
    """H.264 (yuv420p) in an mp4 with its index first (+faststart: a page can play it while it
    loads), every frame at the run's 10 fps, and no ffmpeg child: the encoder is the worker's."""
    import av

    path = tmp_path / "videos" / "rollout_seed003.mp4"
    path.parent.mkdir()
    shown = frames(25)
    me = psutil.Process()
    before = {c.pid for c in me.children()}  # a pytest worker may hold an earlier test's processes
    writer = VideoWriter(path)
    for f in shown:
        writer.add(f)
        assert {c.pid for c in me.children()} <= before
    writer.close()
    assert writer.error is None and writer.frames == 25
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # the .part file renamed into place
    data = path.read_bytes()
    assert data[4:8] == b"ftyp" and data.index(b"moov") < data.index(b"mdat")
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.name, stream.codec_context.format.name) == ("h264", "yuv420p")
        assert stream.codec_context.profile in ("High", "Main", "Constrained Baseline")
        assert (stream.width, stream.height, float(stream.average_rate)) == (448, 224, 10.0)
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    assert len(decoded) == 25
    for original, back in zip(shown, decoded):
        assert np.abs(original.astype(int) - back.astype(int)).mean() < 3  # crf 15: close to the frames


def test_a_frame_of_odd_sides_is_cropped_to_even_ones(tmp_path):
    """yuv420p halves the chroma: an odd row or column is cropped rather than the video lost."""
    import av

    path = tmp_path / "odd.mp4"
    writer = VideoWriter(path)
    for f in frames(3, h=121, w=243):
        writer.add(f)
    writer.close()
    assert writer.error is None
    with av.open(str(path)) as container:
        assert (container.streams.video[0].width, container.streams.video[0].height) == (242, 120)


def test_an_encoder_that_fails_costs_the_video_and_leaves_no_file(tmp_path):
    writer = VideoWriter(tmp_path / "gone" / "rollout_seed000.mp4")  # its folder does not exist
    for f in frames(70):  # more than the queue holds: add() never blocks once the encoder failed
        writer.add(f)
    writer.close()
    assert writer.error is not None and writer.error.startswith("FileNotFoundError")
    assert list(tmp_path.iterdir()) == []


def test_frames_are_encoded_as_they_come_never_all_held(tmp_path, monkeypatch):
    """A filming worker holds at most the queue's frames, however long the episode: add() waits for a
    slow encoder rather than keeping every frame, and each frame is let go once it is encoded."""
    import weakref

    slow_add = video._Encoder.add

    def add(self, frame):
        time.sleep(0.004)  # an encoder slower than the rollout
        slow_add(self, frame)

    monkeypatch.setattr(video._Encoder, "add", add)
    alive, most = [0], [0]

    def gone():
        alive[0] -= 1

    n, shown = 3 * QUEUE_FRAMES + 5, frames(8, h=64, w=128)
    writer = VideoWriter(tmp_path / "long.mp4")
    for f in (shown[i % len(shown)].copy() for i in range(n)):  # each frame made as the rollout makes it
        weakref.finalize(f, gone)
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        writer.add(f)
        del f
    writer.close()
    assert writer.error is None and writer.frames == n  # no frame lost
    assert QUEUE_FRAMES < most[0] <= QUEUE_FRAMES + 3, most[0]  # the queue, one encoding, one being made


_MAPPED_APART = """
import ctypes, sys
import numpy as np
from engine.workers.video import VideoWriter

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2

def mapped_for_a_frame():
    big = np.ones(2**20, np.uint8)  # mapped; freed, it raises glibc's threshold to 1 MB
    del big
    before = libc.mallinfo2().hblks
    frame = np.ones((224, 224, 3), np.uint8)  # one view of a filmed frame, 150 KB
    return libc.mallinfo2().hblks - before

if sys.argv[1] == "writer":
    VideoWriter(sys.argv[2]).close()
print(mapped_for_a_frame())
"""


def test_a_frame_sized_block_is_mapped_apart_once_a_writer_was_made(tmp_path):
    """glibc raises its mmap threshold to the largest mapped block freed: after a 1 MB buffer went, a
    150 KB frame came from malloc's arenas and stayed there as scratch once freed (2-3 MB of a filming
    worker's peak). A writer fixes the threshold (video.map_frames_apart): a frame is its own mapping,
    given back when freed. In fresh processes: the pytest process's heap is not a worker's."""
    import ctypes
    import os
    import subprocess
    import sys

    try:
        ctypes.CDLL("libc.so.6").mallinfo2  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc (2.33+)")
    env = {**os.environ, "PYTHONPATH": str(video.Path(video.__file__).resolve().parents[2])}

    def mapped(mode: str) -> int:
        return int(subprocess.run([sys.executable, "-c", _MAPPED_APART, mode, str(tmp_path / "none.mp4")], env=env,
                                  capture_output=True, text=True, timeout=60, check=True).stdout)

    assert mapped("plain") == 0  # glibc alone: the frame came from an arena
    assert mapped("writer") == 1  # once a writer was made: mapped apart


@pytest.fixture(scope="module")
def env():
    e = get_env("boat-on-disk").create(render_size=96)
    yield e
    e.close()


def test_the_lean_renderer_draws_the_same_pixels_and_leaves_the_model_as_it_was(env):
    """The renderer's GL context is made without the meshes no drawn geom uses (the SO-101's
    collision meshes) and with an offscreen buffer of its own size: its frames are the pixels of
    mujoco.Renderer's defaults, and the model (physics reads mesh_facenum and mesh_graphadr) is
    left exactly as it was."""
    m = env.model
    env.reset(4)
    before = (m.mesh_facenum.copy(), m.mesh_graphadr.copy(), m.vis.global_.offwidth, m.vis.global_.offheight)
    option = mujoco.MjvOption()
    option.geomgroup[4] = 1  # the floor, as a video draws it
    lean = FrameRenderer(m, 96, groups=(0, 1, 2, 4))
    try:
        try:
            ours = [lean.render(env.data, cam, opt) for cam in ("front", "wrist") for opt in (None, option)]
        except Exception as exc:  # noqa: BLE001 - no GL on this machine
            pytest.skip(f"no offscreen GL: {exc}")
    finally:
        lean.close()
    assert np.array_equal(m.mesh_facenum, before[0]) and np.array_equal(m.mesh_graphadr, before[1])
    assert (m.vis.global_.offwidth, m.vis.global_.offheight) == before[2:]
    plain = mujoco.Renderer(m, 96, 96)
    try:
        plain.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        plain.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        theirs = []
        for cam in ("front", "wrist"):
            for opt in (None, option):
                plain.update_scene(env.data, camera=cam, scene_option=opt)
                theirs.append(plain.render().copy())
    finally:
        plain.close()
    for a, b in zip(ours, theirs):
        assert np.array_equal(a, b)
    hidden = [i for i in range(m.nmesh) if m.mesh_facenum[i] and i not in
              {int(m.geom_dataid[g]) for g in range(m.ngeom) if m.geom_group[g] in (0, 1, 2, 4)}]
    assert hidden  # the check above compared frames with meshes left out, not a scene without any


def test_the_scene_has_room_for_every_geom_a_frame_draws(env):
    """mjv_updateScene drops what does not fit: with every group shown, each scene fits with room to spare."""
    for name in ("boat-on-disk", "pick-lift"):
        e = env if name == "boat-on-disk" else get_env(name).create(render_size=64)
        try:
            e.reset(0)
            m = e.model
            scene = mujoco.MjvScene(m, maxgeom=scene_geoms(m))
            option = mujoco.MjvOption()
            option.geomgroup[:] = 1
            option.sitegroup[:] = 1
            mujoco.mjv_updateScene(m, e.data, option, None, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL, scene)
            assert 0 < scene.ngeom <= scene.maxgeom // 2, (name, scene.ngeom, scene.maxgeom)
            assert scene.maxgeom < 10_000
        finally:
            if e is not env:
                e.close()
