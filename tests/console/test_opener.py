"""Opening the report's page from the console: the system's opener where there is a display, the words to
copy it over SSH where there is none (console/opener.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from console.opener import open_page, opener_argv, over_ssh_words
from tests.helpers import wait_until


def fake_opener(folder: Path, name: str) -> Path:
    """An executable `name` in `folder` that writes the argv it got to `name`.argv (a real process, run detached)."""
    exe = folder / name
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{folder / (name + ".argv")}"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_linux_opens_with_xdg_open_only_with_a_display(tmp_path):
    fake_opener(tmp_path, "xdg-open")
    page = tmp_path / "results.html"
    env = {"PATH": str(tmp_path)}
    assert opener_argv(page, env=env, platform="linux") is None  # SSH: no DISPLAY, no WAYLAND_DISPLAY
    assert opener_argv(page, env={**env, "DISPLAY": ":0"}, platform="linux") == [str(tmp_path / "xdg-open"), str(page)]
    assert opener_argv(page, env={**env, "WAYLAND_DISPLAY": "wayland-0"}, platform="linux")[0].endswith("xdg-open")
    assert opener_argv(page, env={"PATH": str(tmp_path / "none"), "DISPLAY": ":0"}, platform="linux") is None


def test_macos_opens_with_open(tmp_path):
    fake_opener(tmp_path, "open")
    page = tmp_path / "results.html"
    assert opener_argv(page, env={"PATH": str(tmp_path)}, platform="darwin") == [str(tmp_path / "open"), str(page)]


def test_the_page_opens_in_a_real_process_or_the_words_say_how_to_get_it(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "cmp"
    run.mkdir(parents=True)
    page = run / "results.html"
    page.write_text("<!doctype html>")
    fake_opener(tmp_path, "xdg-open")
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    opened, said = open_page(page)
    assert opened and "xdg-open" in said
    argv_file = tmp_path / "xdg-open.argv"
    wait_until(argv_file.exists, timeout=30, what="the opener to run")
    wait_until(lambda: argv_file.read_text().strip() == str(page), timeout=30, what="the opener's argv")
    monkeypatch.delenv("DISPLAY")
    opened, said = open_page(page)
    assert not opened and said == over_ssh_words(page)
    assert f":{run} ." in said and "scp -r" in said and f"file://{page}" in said
    opened, said = open_page(run / "missing.html")
    assert not opened and "run the report first" in said
