"""A real browser for the tests: Playwright driving the system's Chromium (Debian's `chromium` package,
which scripts/setup.sh installs; never `playwright install`, which downloads a browser).

`browser()` yields a launched Chromium, or the test is skipped with the reason (no Playwright, no
Chromium on this machine). `open_page` gives a page that records console messages, page errors and
every request, so a test can say "no console error" and "nothing from another host". `static_server`
serves a folder over loopback HTTP with Range requests (what a Space or any static host does for
video), and `page_check` reads a page the way the tests and scripts/page_screenshots.py read it.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE = {"width": 390, "height": 844}  # an iPhone 12-15's CSS viewport
DESKTOP = {"width": 1280, "height": 900}


def chromium_path() -> str | None:
    for cand in (CHROMIUM, shutil.which("chromium"), shutil.which("chromium-browser")):
        if cand and Path(cand).is_file():
            return cand
    return None


@contextlib.contextmanager
def browser():
    """A headless Chromium under Playwright; skips (with why) where either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install -e '.[dev]')")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium on this machine (scripts/setup.sh installs Debian's `chromium`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Watched:
    page: object
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught page errors and failed requests, one line each. A request the
        browser itself cancelled (net::ERR_ABORTED: a paused video's pending range, a page left) is no failure."""
        return ([f"console {t}: {m}" for t, m in self.console if t in ("error", "warning")]
                + [f"page error: {e}" for e in self.errors]
                + [f"request failed: {u}" for u in self.failed if "net::ERR_ABORTED" not in u])


def open_page(b, viewport: dict, *, javascript: bool = True) -> Watched:
    ctx = b.new_context(viewport=viewport, java_script_enabled=javascript, device_scale_factor=1)
    page = ctx.new_page()
    w = Watched(page)
    page.on("console", lambda m: w.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    page.on("request", lambda r: w.requests.append(r.url))
    page.on("requestfailed", lambda r: w.failed.append(f"{r.url} ({r.failure})"))
    return w


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def static_server(root: Path):
    """http://127.0.0.1:PORT/ serving `root` (a plain static host: GET, HEAD, Range)."""
    handler = functools.partial(_RangeHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        t.join(timeout=5)


class _RangeHandler(_Quiet):
    """SimpleHTTPRequestHandler with single byte ranges (`Range: bytes=a-b`), as static hosts answer video."""

    def send_head(self):
        rng = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not rng or not rng.startswith("bytes=") or not path.is_file():
            return super().send_head()
        size = path.stat().st_size
        a, _, b = rng[6:].split(",")[0].partition("-")
        start = int(a) if a else max(0, size - int(b))
        end = min(int(b), size - 1) if a and b else size - 1
        if start >= size:
            self.send_error(416)
            return None
        f = path.open("rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self._left = end - start + 1
        return f

    def copyfile(self, source, outputfile):
        left = getattr(self, "_left", None)
        if left is None:
            return super().copyfile(source, outputfile)
        while left > 0:
            chunk = source.read(min(65536, left))
            if not chunk:
                break
            outputfile.write(chunk)
            left -= len(chunk)
