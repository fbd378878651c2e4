"""The video of a filmed episode: the front and wrist views side by side, as an mp4 encoded in the
worker's own process (PyAV: FFmpeg's libraries, libx264).

The frames (front and wrist side by side, engine.workers.episode) are encoded on a background thread, so
the rollout never waits on the encoder; PyAV releases the GIL while it converts and encodes. The
file is H.264 (High profile, yuv420p) in an mp4 whose index comes first (`+faststart`): it plays
in every browser, embedded in an HTML page as it is, and in the console's seed view.

Until issue 38 each filmed episode piped its frames to an `ffmpeg` child (imageio-ffmpeg), 81-86 MB
a process more per worker filming; the encoder now lives in the worker, threads=1 (a worker is one
of N on N cores).
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from fractions import Fraction
from pathlib import Path

CRF = 15  # what imageio's quality=7 gave libx264 (crf = int((1 - 7/10) * 51)): the videos look as before
PRESET = "medium"
# Frames x264 holds to plan its rate; crf decides quality. Medium's 40 held ~10 MB more per filming
# worker. 10 -> 5 held 2.3 MB less at the peak, for 0.04 dB of PSNR and a 4% smaller file, measured
# on 242 oracle frames (benchmarks/bench_video_memory.py).
LOOKAHEAD = 5
QUEUE_FRAMES = 16  # frames waiting for the encoder (64 held up to 19 MB of 448x224 RGB; the encoder keeps up)
FRAME_MMAP_BYTES = 128 * 1024  # a block this large or larger is mapped apart (glibc's M_MMAP_THRESHOLD)


class VideoWriter:
    """Frames in (HxWx3 uint8 RGB, all one size), an mp4 out. Encodes into a hidden .part file and
    renames it into place only once the file is finished (index included): the row's path never
    names a broken mp4. Any failure is kept in `error` (the video is lost, never the row)."""

    def __init__(self, path: Path, fps: int = 10):
        map_frames_apart()
        self.path = Path(path)
        self.q: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self.fps = int(fps)
        self.error: str | None = None
        self.frames = 0
        self._closed = False
        self.thread = threading.Thread(target=self._run, name="video-encoder", daemon=True)
        self.thread.start()

    def add(self, frame) -> None:
        if self.error is None:
            self.q.put(frame)

    def _run(self) -> None:
        tmp = self.path.with_name(f".{self.path.stem}.part{self.path.suffix}")
        encoder = None
        try:
            while True:
                frame = self.q.get()
                if frame is None:
                    break
                if encoder is None:
                    encoder = _Encoder(tmp, frame.shape, self.fps)
                encoder.add(frame)
                self.frames += 1
            if encoder is not None:
                e, encoder = encoder, None
                e.close()
                os.replace(tmp, self.path)
        except Exception as exc:  # noqa: BLE001 - any encoder failure costs the video, never the row
            text = str(exc).strip()
            self.error = f"{type(exc).__name__}: {text.splitlines()[-1] if text else ''}"[:300]
            while not self._closed or not self.q.empty():  # drain, so add() never blocks on a full queue
                if self.q.get() is None:
                    break
        finally:
            if encoder is not None:
                encoder.abandon()
            if self.error is not None:
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.q.put(None)
            self.thread.join(timeout=120)
            if self.thread.is_alive() and self.error is None:
                self.error = "the encoder did not finish within 120 s"


@functools.cache
def map_frames_apart() -> bool:
    """From the first filmed episode on, this process's malloc maps every block of FRAME_MMAP_BYTES or
    more on its own and unmaps it when freed (glibc's M_MMAP_THRESHOLD, fixed). By default glibc raises
    that threshold to the largest mapped block freed so far: once the first rendered frame (150 KB a
    view) was freed, every later frame, its copies for the encoder and the encoder's own planes came
    from malloc's arenas (one per thread) and stayed there as freed scratch, 2-3 MB of a filming
    worker's peak. Whether it took (False where there is no glibc)."""
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(-3, FRAME_MMAP_BYTES))  # -3: M_MMAP_THRESHOLD (malloc.h)


class _Encoder:
    """One libx264 stream in an mp4 container. yuv420p needs even sides: an odd row or column is cropped."""

    def __init__(self, path: Path, shape: tuple, fps: int):
        import av

        h, w = int(shape[0]) // 2 * 2, int(shape[1]) // 2 * 2
        if h < 2 or w < 2:
            raise ValueError(f"a frame of {shape[1]}x{shape[0]} pixels is too small to encode")
        self.h, self.w = h, w
        self.container = av.open(str(path), mode="w", format="mp4", options={"movflags": "+faststart"})
        stream = self.container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)
        stream.codec_context.thread_count = 1
        stream.codec_context.options = {"crf": str(CRF), "preset": PRESET, "rc-lookahead": str(LOOKAHEAD)}
        self.stream = stream
        self.n = 0
        self._av = av

    def add(self, frame) -> None:
        if frame.shape[0] < self.h or frame.shape[1] < self.w:
            raise ValueError(f"frame {self.n} is {frame.shape[1]}x{frame.shape[0]}, the first was {self.w}x{self.h}")
        if frame.shape[0] != self.h or frame.shape[1] != self.w:
            import numpy as np

            frame = np.ascontiguousarray(frame[: self.h, : self.w])
        video_frame = self._av.VideoFrame.from_ndarray(frame, format="rgb24")
        video_frame.pts = self.n
        self.n += 1
        for packet in self.stream.encode(video_frame):
            self.container.mux(packet)

    def close(self) -> None:
        for packet in self.stream.encode():  # flush the frames the encoder holds
            self.container.mux(packet)
        self.container.close()

    def abandon(self) -> None:
        try:
            self.container.close()
        except Exception:  # noqa: BLE001 - already failing: the first error is the one kept
            pass
