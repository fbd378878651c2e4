"""One seed of a run, as the drill-down shows it: its row in words, its predict trail, its video.

Pure reading, no Textual: the seed screen calls these from a thread worker. Files are the run
directory's (prereg/rundir/ names them); the engine is never imported. Every reader is
tolerant: a torn line, a missing file or an mp4 that does not decode is said in words, never raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from prereg import rundir as rd
from prereg.core.safe_read import Unreadable, check_regular, os_error_why, resolved
from prereg.rundir.predicts import Trail
from prereg.rundir.predicts import read_predicts as prereg_read_predicts
from prereg.rundir.row_words import row_in_words  # noqa: F401 - the seed view's words (shared with the report's page)
from prereg.rundir.rows import last_row_of_seed, last_rows_of_seed

PREDICTS_SHOWN = 2000  # lines of one seed's trail kept for the table (a long episode has ~100)
MAX_FRAMES = 1200  # frames decoded from one video (2 minutes at 10 fps)
VIDEO_MAX_BYTES = 2 * 1024**3  # a video the driver writes is about 1 MB; far bigger is not one of its
FRAME_MAX_PX = (640, 240)  # frames are shrunk to at most this (width, height) before display

def find_row(run_dir: str | Path, seed, arm: str | None = None) -> tuple[dict | None, str]:
    """The last row of `seed` (of `arm`'s, a comparison run) in rows.jsonl (a resumed seed's latest), and a
    problem in words."""
    return last_row_of_seed(Path(run_dir) / rd.ROWS, seed, arm=arm)


def find_rows(run_dir: str | Path, seed, arm: str | None = None) -> tuple[dict[str, dict], str]:
    """A crossed design's seed: its last row on each variant (variant -> row), and a problem in words."""
    return last_rows_of_seed(Path(run_dir) / rd.ROWS, seed, arm=arm)


def read_predicts(run_dir: str | Path, seed, arm: str | None = None) -> Trail:
    """This seed's lines of predicts.jsonl (of `arm`'s, a comparison run; absent unless the run recorded them)."""
    return prereg_read_predicts(run_dir, seed, limit=PREDICTS_SHOWN, arm=arm)


def predict_cells(line: dict) -> tuple[str, ...]:
    """replan, tick, pathway, decode, tokens, chunk, fallback, mask, first action: one table row."""
    tokens = line.get("tokens")
    chunk = line.get("chunk_normalized")
    first = line.get("first_action_deg")
    chunk_text = "—"
    if isinstance(chunk, list) and chunk:
        flat = [v for step in chunk if isinstance(step, list) for v in step if isinstance(v, (int, float))]
        if flat:
            peak = max(abs(v) for v in flat)
            chunk_text = f"{len(chunk)}x{len(chunk[0]) if isinstance(chunk[0], list) else '?'} |max| {peak:.2f}"
            if peak == 0:
                chunk_text += " (zeros)"
    first_text = "—"
    if isinstance(first, list):
        first_text = " ".join(f"{v:.0f}" if isinstance(v, (int, float)) and math.isfinite(v) else "?" for v in first)
    return (
        str(line.get("replan", "—")), str(line.get("tick", "—")), str(line.get("pathway") or "—"),
        str(line.get("decode") or "—"), "—" if not isinstance(tokens, list) else str(len(tokens)),
        chunk_text, str(line.get("fallback") or ""), str(line.get("mask_interventions", "—")), first_text,
    )


@dataclass
class Frames:
    """A decoded video: frames as PIL images (shrunk), its frame rate, and a problem in words."""

    images: list = field(default_factory=list)
    fps: float = 10.0
    problem: str = ""
    truncated: bool = False


def video_path(run_dir: str | Path, row: dict | None) -> Path | None:
    rel = (row or {}).get("video")
    if not isinstance(rel, str) or not rel:
        return None
    p = (Path(run_dir) / rel)
    try:
        resolved(p).relative_to(resolved(run_dir))
    except ValueError:  # a row naming a file outside its run directory is not followed
        return None
    return p


def decode_frames(path: Path, max_frames: int = MAX_FRAMES, max_px: tuple[int, int] = FRAME_MAX_PX,
                  cancelled=lambda: False) -> Frames:
    """Every frame of an mp4 (PyAV: FFmpeg's libraries in process, as the workers encode it), shrunk to fit
    max_px. In process on purpose: imageio's ffmpeg child was started with a preexec_fn, a fork that runs
    Python in the child, and a fork from the console's threads (the seed view's decode, the watcher) could
    leave the child waiting on a lock forever (the suite hung on one after `n` switched variants)."""
    import av
    from PIL import Image

    out = Frames()
    try:  # a regular file of a video's size, stat'ed first: ffmpeg would wait on a FIFO forever
        check_regular(path, VIDEO_MAX_BYTES)
    except (OSError, Unreadable) as exc:
        out.problem = f"{path.name}: {getattr(exc, 'why', None) or os_error_why(exc)}"
        return out
    try:
        container = av.open(str(path))
        stream = container.streams.video[0]
    except Exception as exc:  # noqa: BLE001 - a video that does not open is said, not raised
        out.problem = f"{path.name} does not open: {type(exc).__name__}: {str(exc)[:120]}"
        return out
    try:
        rate = stream.average_rate or stream.guessed_rate
        if rate is not None and float(rate) > 0:
            out.fps = float(rate)
        for i, frame in enumerate(container.decode(stream)):
            if cancelled():
                break
            if i >= max_frames:
                out.truncated = True
                break
            img = frame.to_image()
            img.thumbnail(max_px, Image.Resampling.BICUBIC)
            out.images.append(img)
    except Exception as exc:  # noqa: BLE001
        out.problem = f"{path.name}: decoding stopped after {len(out.images)} frames ({type(exc).__name__})"
    finally:
        try:
            container.close()
        except Exception:  # noqa: BLE001
            pass
    if not out.images and not out.problem:
        out.problem = f"{path.name} holds no frames"
    return out
