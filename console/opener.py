"""Opening the report's page (results.html) from the console: the system's opener where there is a display,
else the words to get the page where there is one (the console often runs in tmux over SSH).

The page links its videos relatively, so it is opened where it lies (file://), never copied; over SSH
the whole run folder is what to copy. The opener gets an argv list (never a shell string) and runs
detached: its output goes nowhere, the console never waits on it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path


def opener_argv(page: Path, *, env=None, platform: str | None = None) -> list[str] | None:
    """The command that shows `page` in the system's browser, or None where there is no display to show it on."""
    env = os.environ if env is None else env
    platform = platform or sys.platform
    if platform == "darwin":
        exe = shutil.which("open", path=env.get("PATH"))
    elif platform.startswith("linux") or "bsd" in platform:
        if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
            return None  # a terminal with no display (SSH, a server): nothing could show the page here
        exe = shutil.which("xdg-open", path=env.get("PATH"))
    else:
        return None
    return [exe, str(page)] if exe else None


def over_ssh_words(page: Path, *, env=None) -> str:
    """What to do where nothing can show the page: copy the run folder (page and videos) and open it there."""
    env = os.environ if env is None else env
    folder = page.resolve().parent
    host = socket.gethostname()
    user = env.get("USER") or env.get("LOGNAME")
    where = f"{user}@{host}" if user else host
    return (f"no display here to open it on (over SSH?). Copy the folder, page and videos, to your machine and open "
            f"{page.name} there: scp -r {where}:{folder} .   (or open file://{page.resolve()} where this disk is mounted)")


def open_page(page: Path) -> tuple[bool, str]:
    """(opened, what happened in words): the page in the system's browser, or the words to get it elsewhere."""
    if not page.is_file():
        return False, f"no page at {page}: run the report first"
    argv = opener_argv(page)
    if argv is None:
        return False, over_ssh_words(page)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
    except OSError as exc:
        return False, f"could not run {argv[0]} ({exc}); " + over_ssh_words(page)
    threading.Thread(target=proc.wait, daemon=True).start()  # reaped when it exits; the console never waits
    return True, f"opened {page} with {Path(argv[0]).name}"
