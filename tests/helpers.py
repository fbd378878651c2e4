"""Shared test helpers: wait on conditions (never fixed sleeps) and launch real runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VOLATILE_ROW_FIELDS = {"wall_s", "started_at", "finished_at", "worker", "run_id", "video"}


def wait_until(predicate, timeout: float = 60.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def returns_within(fn, timeout: float = 10.0, what: str = "the call"):
    """fn()'s result, run in a thread; an AssertionError when it has not returned within `timeout`
    seconds: for reads that must never wait (a FIFO where a file should be would hang them)."""
    import threading

    out: dict = {}

    def call():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"{what} still running after {timeout} s: a hang"
    if "error" in out:
        raise out["error"]
    return out["value"]


def eval_argv(*args: str, module: str = "engine.cli") -> list[str]:
    return [sys.executable, "-m", module, *args]


def run_eval(*args: str, timeout: float = 300, env: dict | None = None,
             faults: dict | None = None) -> subprocess.CompletedProcess:
    """fontaine-eval in a subprocess; `faults` (tests/engine/faults.py's variables) runs it with them."""
    return subprocess.run(eval_argv(*args, module="tests.engine.faults" if faults else "engine.cli"), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {}), **(faults or {})})


def run_evals_here(argvs: dict[str, list[str]], *,
                   env: dict | None = None) -> tuple[dict[str, tuple[int | None, str]], str]:
    """Real fontaine-eval runs (driver, fork server, workers, rows, manifest), each through fontaine-eval's
    main, one after the other in THIS (the pytest worker's) process: ({name: (exit code, its stdout)}, the
    stderr of all). For a test whose claim is about what a run does, not how it is launched (`run_eval`,
    `launch_detached` launch one): a process that imports torch/transformers/lerobot pays ~10 s of CPU for
    it before anything runs, and a test file that loads lerobot or MolmoAct2 has paid it here already. What
    a run leaves in the process is put back: the signal handlers the driver installs, the environment (the
    pool sets OMP_NUM_THREADS), the working folder. Its workers' own output (their fds) is not captured."""
    import contextlib
    import io
    import signal

    from engine.cli.main import main

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    environ, cwd = dict(os.environ), os.getcwd()
    out, err = {}, io.StringIO()
    try:
        os.environ.update(env or {})
        os.chdir(REPO)
        for name, argv in argvs.items():
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
                try:
                    code = main(list(argv))
                except SystemExit as exc:  # argparse's refusals
                    code = exc.code if isinstance(exc.code, int) else 2
            out[name] = (code, stdout.getvalue())
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return out, err.getvalue()


def run_eval_here(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """One run as `run_eval` returns it (returncode, stdout, stderr), made in this process (`run_evals_here`)."""
    done, err = run_evals_here({"run": list(args)}, env=env)
    code, stdout = done["run"]
    return subprocess.CompletedProcess(["fontaine-eval", *args], code, stdout, err)


def launch_detached(run_dir: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    run_dir.mkdir(parents=True, exist_ok=True)
    log = open(run_dir / "driver.log", "ab")
    return subprocess.Popen(eval_argv(*args, "--run-dir", str(run_dir)), cwd=REPO, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True,
                            env={**os.environ, **(env or {})})


def read_status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def read_rows(run_dir: Path) -> list[dict]:
    p = run_dir / "rows.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def stable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in VOLATILE_ROW_FIELDS}


def shadowing_working_folder(tmp_path: Path) -> tuple[Path, list[str]]:
    """A folder holding an engine.py, prereg.py and console.py that raise on import, and the argv of
    `fontaine-eval` as its installed entry point runs it (its own folder, not the working one, on sys.path)."""
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("engine", "prereg", "console"):
        (folder / f"{name}.py").write_text(f"raise RuntimeError('the working folder\\'s {name}.py was imported')\n")
    script = tmp_path / "bin" / "fontaine-eval"
    script.parent.mkdir()
    script.write_text("import sys\nfrom engine.cli.main import main\nif __name__ == '__main__':\n    sys.exit(main())\n")
    return folder, [sys.executable, str(script)]


def decide_on_rows(spec, a, b, length: int, n: int):
    """`prereg.stats.comparison.decide` on the rows of the first `length` of n planned seeds, each arm's
    success from the bool arrays a and b: what the driver reads, to hold against a vectorised test."""
    from prereg.stats.comparison import decide

    rows = [{s: {"seed": s, "status": "ok", "success": bool(x[s])} for s in range(length)} for x in (a, b)]
    return decide(spec, rows[0], rows[1], list(range(n)))
