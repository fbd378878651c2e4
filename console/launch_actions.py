"""What the console starts on a key press: a run (`l`, `d`: detached, through console/runs.py) and a
Discord test post (`t`, asked of the detached notifier). `LaunchActions` is mixed into the app
(console/app.py), as console/run_actions.py's `RunActions` (what it does to a run) is.
"""

from __future__ import annotations

from pathlib import Path

from textual import work

from console import preregs, runs
from console.main_draw import discord_line
from console.runs import shown_path
from console.widgets.dialogs import LaunchScreen
from prereg import rundir as rd
from prereg.rundir.files import new_run_id, write_json_atomic


class LaunchActions:
    """The app's launch and Discord-test actions (FontaineApp mixes them in: `self` is the app)."""

    def action_launch(self) -> None:
        entries = preregs.list_preregs(self.prereg_dirs)

        def launched(choice: tuple | None) -> None:
            if choice:
                path, prereg_id, arm = choice
                self.remember_launch(Path(path), arm)
                self.launch(Path(path), prereg_id, arm)

        self.push_screen(LaunchScreen(entries, last=self.last_launch()), launched)

    @property
    def _last_launch_file(self) -> Path:
        return self.runs_dir / ".console" / "last-launch.json"

    def last_launch(self) -> dict:
        """The launch dialog's previous choice (kept beside the runs, so every console on this folder shares it)."""
        return rd.read_json(self._last_launch_file) or {}

    def remember_launch(self, path: Path, arm: str) -> None:
        try:
            self._last_launch_file.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self._last_launch_file, {"prereg": str(path), "arm": arm})
        except OSError:
            pass  # a read-only runs folder: the dialog simply starts blank next time

    def action_demo(self) -> None:
        path = preregs.DEMO_PREREG
        problem = preregs.validate_launch(path, preregs.DEMO_ARM)
        if problem:
            self.notify(f"demo cannot launch: {problem}", severity="error", timeout=10)
            return
        self.launch(path, preregs.read_entry(path).prereg_id, preregs.DEMO_ARM)

    def launch(self, prereg_file: Path, prereg_id: str, arm: str) -> Path | None:
        """Start a run of `arm` ("A,B": a comparison run of both arms, labelled "A-vs-B") detached."""
        label = preregs.run_label(arm)
        run_id = new_run_id(prereg_id, label)
        run_dir = self.runs_dir / run_id
        argv = self.launch_argv(prereg_file, arm, run_dir)
        try:
            popen = runs.launch_detached(argv, run_dir)
        except OSError as exc:
            self.notify(f"could not start {' '.join(argv)}: {exc}", severity="error", timeout=15)
            return None
        self.launched.append(run_dir)
        self.watcher.adopt(run_dir, popen, label)
        self._select(run_dir)
        self.notify(f"launched {run_id} (pid {popen.pid}); output in {shown_path(run_dir / rd.LOG)}")
        return run_dir

    def action_discord_test(self) -> None:
        if self.notifier is None:
            self.notify(discord_line(None).plain, severity="warning")
            return
        self.discord_test_worker()

    @work(thread=True, group="discord")
    def discord_test_worker(self) -> None:
        try:
            queued = self.notifier.send_test()
            if queued is False:
                hint = self.notifier.setup_hint or f"{discord_line(self.notifier).plain}: no post sent"
                self.call_from_thread(self.notify, hint, severity="warning", timeout=20)
            else:
                self.call_from_thread(self.notify, "Discord test post asked of the notifier")
        except Exception as exc:
            self.call_from_thread(self.notify, f"Discord test post failed: {exc}", severity="error")
        self.call_from_thread(self.painter.show_discord)
