"""The video of a filmed episode: the front and wrist views side by side, as an mp4.

Encoded on a background thread (a worker's rollout never waits on the encoder) into a hidden
`.part` file, renamed into place only once complete; any encoder failure costs the video, never
the episode's row (`error` says why).
"""

from __future__ import annotations

import os
from pathlib import Path


class VideoWriter:
    """mp4 of the front and wrist views side by side, encoded on a background thread so the
    rollout never waits on it."""

    def __init__(self, path: Path, fps: int = 10):
        import queue
        import threading

        self.path = path
        self.q: queue.Queue = queue.Queue(maxsize=64)
        self.fps = fps
        self.error: str | None = None
        self._closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, frame) -> None:
        if self.error is None:
            self.q.put(frame)

    def _run(self) -> None:
        """Encode into a hidden .part file and rename it into place only once ffmpeg has finished
        it (trailer included): the row's path never names a broken mp4."""
        import imageio.v2 as imageio

        tmp = self.path.with_name(f".{self.path.stem}.part{self.path.suffix}")
        writer = None
        try:
            while True:
                frame = self.q.get()
                if frame is None:
                    break
                if writer is None:
                    writer = imageio.get_writer(str(tmp), fps=self.fps, codec="libx264",
                                                macro_block_size=1, quality=7)
                writer.append_data(frame)
            if writer is not None:
                w, writer = writer, None
                w.close()
                os.replace(tmp, self.path)
        except Exception as exc:  # noqa: BLE001 - any encoder failure costs the video, never the row
            self.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"[:300]
            while not self._closed or not self.q.empty():
                if self.q.get() is None:
                    break
        finally:
            if writer is not None:
                try:
                    writer.close()
                except Exception:  # noqa: BLE001
                    pass
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
