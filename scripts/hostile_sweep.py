"""The hostile sweep (issue 33): every command and screen tried as an attacker or an unlucky operator
would, each outcome classified, the counts printed (docs/hostile.md keeps the last run's).

    PYTHONPATH=$PWD .venv/bin/python scripts/hostile_sweep.py [--only eval,prereg,...] [--jobs 2] [--json out.json]

Each case runs a real command in a subprocess (or, for the screens and the posts, the real code on a
hostile runs folder) under a timeout, in a scratch folder, with made-up secrets in its environment
(HF_TOKEN, WANDB_API_KEY, a Discord webhook URL) and in some of its files. Outcomes:

- clear: what was expected (bad input: one line on stderr and exit 2; a fault: the run's documented end)
- accepted: bad input taken silently (exit 0 where it should have been refused)
- hang: still running at the timeout
- traceback: a traceback, or "internal error ... this is a bug", for a user's mistake
- leak: a secret in an output, a file written, or a post
- other: anything else (an unexpected exit code, several lines where one was due)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
HF = "hf_" + "SweepSecretToken0123456789abcdefXYZ"
KEY = "wandb-sweep-secret-7f3a9c"
HOOK = "https://discord.com/api/webhooks/123456789012345678/SweepSecretWebhookToken0123456789abcdefghijklmnopqrstuvwxyzAB"
SECRETS = (HF, KEY, HOOK, HOOK.rsplit("/", 1)[1])
EVIL = "a\x1b[2J\x1b]0;T\x07"
DEMO = REPO / "prereg" / "examples" / "demo.md"


@dataclass
class Case:
    group: str
    name: str
    argv: list[str]  # '{t}' is the case's scratch folder
    expect: str = "refuse"  # refuse | ok | stopped | custom
    setup: Callable[[Path], None] | None = None
    timeout: float = 120.0
    env: dict = field(default_factory=dict)
    check: Callable[[Path, subprocess.CompletedProcess], str | None] | None = None  # -> an outcome, or None
    stdin: str | None = None


# --------------------------------------------------------------------------------------- hostile files

def hostile(path: Path, kind: str) -> None:
    """Put `kind` where a file goes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(random.Random(33).randbytes(4096))
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(300 * 1024 * 1024)
    elif kind == "dangling":
        path.symlink_to("nowhere-at-all")
    elif kind == "unreadable":
        path.write_text("x")
        path.chmod(0)
    elif kind == "deep":
        path.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "list":
        path.write_text("[1, 2, 3]")
    else:
        raise ValueError(kind)


FILE_KINDS = ("fifo", "dir", "loop", "device", "empty", "random", "huge", "dangling", "deep", "list")


# --------------------------------------------------------------------------------------- the cases

def eval_cases() -> list[Case]:
    """fontaine-eval: bad flag values (each must be one line and exit 2, nothing written)."""
    base = ["--policy", "scripted", "--num-seeds", "1", "--run-dir", "{t}/run"]
    flags = [
        ["--num-seeds", "0"], ["--num-seeds", "1e7"], ["--num-seeds", "-1"], ["--num-seeds", "٣"], ["--num-seeds", ""],
        ["--seeds", "0-10000000"], ["--seeds", "5-2"], ["--seeds", "a"], ["--seeds", "1,1"], ["--seeds", "2147483648"],
        ["--seed", "-1"], ["--seed", "2147483647", "--num-seeds", "2"],
        ["--episode-seconds", "1e9"], ["--episode-seconds", "nan"], ["--episode-seconds", "-1"], ["--episode-seconds", "0"],
        ["--episode-seconds", "0.0001"], ["--episode-seconds", "inf"], ["--episode-seconds", ""],
        ["--workers", "100000"], ["--workers", "0"], ["--workers", "1.5"],
        ["--batch-wait-ms", "-1"], ["--batch-wait-max-ms", "1e12"], ["--batch-wait-ms", "nan"],
        ["--render-size", "1"], ["--render-size", "100000"], ["--video-size", "8"], ["--video-size", "1e9"],
        ["--video-draw", "sometimes"], ["--video-draw", "seeds:"], ["--video-draw", "seeds:x"], ["--video-draw", ""],
        ["--video-draw", "seeds:" + ",".join(map(str, range(5000)))],
        ["--convmap", "nope"], ["--convmap-override", "wrist_rol=5"], ["--convmap-override", "elbow_flex=x"],
        ["--convmap-override", "elbow_flex=2,3,4"], ["--convmap-override", "="], ["--convmap-override", "elbow_flex=1e400"],
        ["--convmap-anchor-deg", "5"], ["--convmap-anchor-deg", "x,y"], ["--convmap-span-limited", "nojoint"],
        ["--convmap-fit-tiebreak", "off"], ["--convmap-declare", "other"],
        ["--run-id", "../../x"], ["--run-id", "a/b"], ["--run-id", ""], ["--run-id", "." * 200], ["--run-id", EVIL],
        ["--device", "tpu9"], ["--dtype", "fp64"], ["--flow-steps", "0"], ["--flow-steps", "1e9"],
        ["--task", ""], ["--policy", ""], ["--policy", "nosuchpolicy"], ["--policy", EVIL],
        ["--molmoact2-discrete", ""], ["--lerobot", ""], ["--molmoact2", ""], ["--lerobot", "no/such/thing"],
        ["--molmoact2-grammar-masked"], ["--fast-revision", "nothex"], ["--revision", ""],
        ["--grasp-miss", "1.5"], ["--grasp-miss", "nan"], ["--grasp-drop", "-0.1"],
        ["--gpu-hours-gate", "-1"], ["--gpu-hours-gate", "nan"], ["--pace-limit-hours", "0"], ["--pace-after-episodes", "0"],
        ["--gpus", "-1"], ["--ray-shards", "2"], ["--ray", "bad address"], ["--ray", ""],
        ["--arm", "x"], ["--arms", "a,b"], ["--work", "2"], ["--workers", "2", "--workers", "3"],
        ["--env", "nosuchenv"], ["--env", ""], ["--env", "gym:"], ["--env", "gym:NoSuch-v9"],
        ["--record-predicts", "--record-predicts"], ["--inject-latency-ms", "-5"],
        ["--runs-dir", ""], ["--run-dir", ""], ["--out-json", ""], ["--rows-jsonl", ""],
        ["--list-envs", "--env", "nosuchenv"],
    ]
    out = []
    for f in flags:
        argv = base + f if "--policy" not in f and not any(x in f for x in ("--molmoact2", "--lerobot", "--molmoact2-discrete")) \
            else ["--num-seeds", "1", "--run-dir", "{t}/run", *f]
        out.append(Case("eval-flags", " ".join(f)[:60], ["fontaine-eval", *argv]))
    return out


def eval_path_cases() -> list[Case]:
    """fontaine-eval: hostile files and folders where a path goes."""
    out = []
    for kind in FILE_KINDS:
        out += [
            Case("eval-paths", f"--prereg is {kind}", ["fontaine-eval", "--prereg", "{t}/x.md", "--arm", "scripted",
                                                        "--run-dir", "{t}/run"], setup=lambda t, k=kind: hostile(t / "x.md", k)),
            Case("eval-paths", f"--env is {kind}", ["fontaine-eval", "--policy", "scripted", "--env", "{t}/env.yaml",
                                                     "--run-dir", "{t}/run"], setup=lambda t, k=kind: hostile(t / "env.yaml", k)),
            Case("eval-paths", f"--resume manifest {kind}", ["fontaine-eval", "--resume", "{t}/r"],
                 setup=lambda t, k=kind: hostile(t / "r" / "manifest.json", k)),
            Case("eval-paths", f"--out-json is {kind}", ["fontaine-eval", "--policy", "scripted", "--num-seeds", "1",
                                                          "--video-draw", "none", "--run-dir", "{t}/run",
                                                          "--out-json", "{t}/o.json"],
                 setup=lambda t, k=kind: hostile(t / "o.json", k),
                 expect="refuse" if kind in ("fifo", "dir", "loop", "device") else "ok"),
            Case("eval-paths", f"--convmap-seam-stats write to {kind}",
                 ["fontaine-eval", "--policy", "scripted", "--num-seeds", "1", "--episode-seconds", "1",
                  "--convmap-seam-stats", "{t}/rig.json"], setup=lambda t, k=kind: hostile(t / "rig.json", k),
                 expect="refuse" if kind in ("fifo", "dir", "loop", "device") else "ok"),  # issue 43: never written over
            Case("eval-paths", f"--molmoact2 ckpt config.json {kind}",
                 ["fontaine-eval", "--molmoact2", "{t}/ckpt", "--num-seeds", "1", "--run-dir", "{t}/run"],
                 setup=lambda t, k=kind: hostile(t / "ckpt" / "config.json", k)),
        ]
    for kind in ("file", "fifo", "loop", "device"):
        out.append(Case("eval-paths", f"--run-dir is {kind}", ["fontaine-eval", "--policy", "scripted", "--run-dir", "{t}/rd"],
                        setup=lambda t, k=kind: (t / "rd").write_text("x") if k == "file" else hostile(t / "rd", k)))
    out.append(Case("eval-paths", "--run-dir under a file", ["fontaine-eval", "--policy", "scripted", "--run-dir", "{t}/f/run"],
                    setup=lambda t: (t / "f").write_text("x")))
    out.append(Case("eval-paths", "--resume of a file", ["fontaine-eval", "--resume", "{t}/f"], setup=lambda t: (t / "f").write_text("x")))
    out.append(Case("eval-paths", "--resume of nothing", ["fontaine-eval", "--resume", "{t}/none"]))
    out.append(Case("eval-paths", "--ray nohost:1 (its host does not resolve)", ["fontaine-eval", "--policy", "hold", "--num-seeds",
                                                                                "1", "--video-draw", "none", "--ray", "nohost:1",
                                                                                "--run-dir", "{t}/run"], timeout=60))
    out.append(Case("eval-paths", "--ray at a port nothing answers, left alone", ["fontaine-eval", "--policy", "hold", "--num-seeds",
                                                                                 "1", "--video-draw", "none", "--ray", "127.0.0.1:1",
                                                                                 "--run-dir", "{t}/run"],
                    env={"FONTAINE_RAY_CONNECT_TIMEOUT_S": "10"}, timeout=240))
    return out


def _manifest_case(name: str, change: Callable[[dict], None]) -> Case:
    def setup(t: Path) -> None:
        shutil.copytree(FIXTURES["stopped_run"], t / "r")
        m = json.loads((t / "r" / "manifest.json").read_text())
        change(m)
        (t / "r" / "manifest.json").write_text(json.dumps(m))
    return Case("eval-resume", name, ["fontaine-eval", "--resume", "{t}/r"], setup=setup)


def resume_cases() -> list[Case]:
    c = "config"
    changes = {
        "workers 100000": lambda m: m[c].update(workers=100000),
        "200,000 seeds": lambda m: m[c].update(seeds=list(range(200_000))),
        "episode_seconds 1e9": lambda m: m[c].update(episode_seconds=1e9),
        "episode_seconds -1": lambda m: m[c].update(episode_seconds=-1),
        "workers '2'": lambda m: m[c].update(workers="2"),
        "seeds 'all'": lambda m: m[c].update(seeds="all"),
        "seeds [x]": lambda m: m[c].update(seeds=["x"]),
        "seeds empty": lambda m: m[c].update(seeds=[]),
        "policy 5": lambda m: m[c].update(policy=5),
        "policy kind 5": lambda m: m[c]["policy"].update(kind=5),
        "policy kind nosuch": lambda m: m[c]["policy"].update(kind="nosuch"),
        "dtype fp64": lambda m: m[c]["policy"].update(dtype="fp64"),
        "convmap nope": lambda m: m[c]["policy"].update(convmap="nope"),
        "overrides 5": lambda m: m[c]["policy"].update(convmap_overrides=5),
        "overrides bad": lambda m: m[c]["policy"].update(convmap_overrides=["wrist_rol=5"]),
        "run_id ../x": lambda m: m[c].update(run_id="../x"),
        "run_id 5": lambda m: m[c].update(run_id=5),
        "gates list": lambda m: m[c].update(gates=[1]),
        "gates wrong types": lambda m: m[c].update(gates={"gpu_hours": "x", "pace_limit_hours": [1]}),
        "video_draw bad": lambda m: m[c].update(video_draw="sometimes"),
        "video_draw 5": lambda m: m[c].update(video_draw=5),
        "env 5": lambda m: m[c].update(env=5),
        "env nosuch": lambda m: m[c].update(env="nosuch"),
        "ray 'x'": lambda m: m[c].update(ray="x"),
        "arms 5": lambda m: m[c].update(arms=5),
        "arms [1]": lambda m: m[c].update(arms=[1]),
        "render_size 1e6": lambda m: m[c].update(render_size=1_000_000),
        "config a list": lambda m: m.update(config=[1]),
        "config missing": lambda m: m.pop(c),
        "resumes 5": lambda m: m.update(resumes=5),
        "prereg 5": lambda m: m[c].update(prereg=5),
        "grasp_miss 7": lambda m: m[c]["policy"].update(grasp_miss=7),
        "flow_steps 0": lambda m: m[c]["policy"].update(flow_steps=0),
        "extra 5": lambda m: m[c]["policy"].update(extra=5),
        "task 5": lambda m: m[c]["policy"].update(task=5),
        "batch wait 1e12": lambda m: m[c].update(batch_wait_max_ms=1e12),
    }
    out = [_manifest_case(n, ch) for n, ch in changes.items()]
    for kind in ("fifo", "loop", "dir", "random"):
        def setup(t, k=kind):
            shutil.copytree(FIXTURES["stopped_run"], t / "r")
            hostile(t / "r" / "rows.jsonl", k)
        out.append(Case("eval-resume", f"rows.jsonl {kind}", ["fontaine-eval", "--resume", "{t}/r"], setup=setup,
                        expect="refuse" if kind != "random" else "ok", timeout=300))
    for kind in ("fifo", "random", "list"):
        def setup(t, k=kind):
            shutil.copytree(FIXTURES["stopped_run"], t / "r")
            hostile(t / "r" / "status.json", k)
        out.append(Case("eval-resume", f"status.json {kind}", ["fontaine-eval", "--resume", "{t}/r"], setup=setup,
                        expect="ok", timeout=300))
    return out


def prereg_cases() -> list[Case]:
    """fontaine-prereg: hostile documents, run directories and flags."""
    out = []
    for cmd in ("validate", "freeze", "show", "verify"):
        for kind in FILE_KINDS + ("unreadable",):
            out.append(Case("prereg", f"{cmd} of a {kind}", ["fontaine-prereg", cmd, "{t}/x.md"],
                            setup=lambda t, k=kind: hostile(t / "x.md", k),
                            **({} if cmd == "freeze" else {"expect": "custom", "check": _report_of_problems})))
    edits = {
        "created 2026-13-45": ("created: 2026-11-30", "created: 2026-13-45"),
        "created a list": ("created: 2026-11-30", "created: [1]"),
        "id a list": ("id: demo-tiny-engine", "id: [x]"),
        "id with escapes": ("id: demo-tiny-engine", 'id: "a\\e[2J"'),
        "title 1MB": ('title: "Demo', 'title: "' + "x" * 100_000),
        "arms a string": ("arms:\n", "arms: x\nold_arms:\n"),
        "workers 100000": ("  workers: 2", "  workers: 100000"),
        "episode_seconds 1e9": ("  episode_seconds: 20", "  episode_seconds: 1e9"),
        "episode_seconds 0.0001": ("  episode_seconds: 20", "  episode_seconds: 0.0001"),
        "seeds 0-10000000": ("  seeds: 0-5", "  seeds: 0-10000000"),
        "seeds a dict": ("  seeds: 0-5", "  seeds: {start: x}"),
        "gpu_hours nan": ("  gpu_hours: 0.25", "  gpu_hours: .nan"),
        "rule garbage": ("  - if: scripted.successes >= 1", "  - if: scripted.successes >= >= 1"),
        "rule deep": ("  - if: scripted.successes >= 1", "  - if: " + "(" * 500 + "1" + ")" * 500),
        "yaml alias bomb": ("reads:", "bomb: &a [x, x]\nb2: [*a, *a]\nreads:"),
        "yaml tab": ("  workers: 2", "\tworkers: 2"),
        "task empty": ("    policy: scripted\n", "    policy: scripted\n    task: ''\n"),
        "fast_revision nothex": ("    decode: reference\n", "    decode: reference\n    fast_revision: nothex\n"),
        "a NUL": ("title:", "ti\0tle:"),
        "invalid utf8": ("title:", "ti\udcfftle:"),
        "no front matter": ("---\n", ""),
    }
    for name, (old, new) in edits.items():
        for cmd in ("validate", "freeze", "show"):
            def setup(t, o=old, n=new):
                text = DEMO.read_text().replace(o, n, 1)
                (t / "doc.md").write_bytes(text.encode("utf-8", errors="surrogateescape"))
            legit = name in ("title 1MB",)  # a long title is a title
            out.append(Case("prereg", f"{cmd}: {name}", ["fontaine-prereg", cmd, "{t}/doc.md"], setup=setup,
                            expect="ok" if legit and cmd != "freeze" else "refuse" if cmd == "freeze" else "custom",
                            check=None if cmd == "freeze" or legit else _report_of_problems))
    out += [
        Case("prereg", "freeze | head -1 (a broken pipe)", ["sh", "-c", "fontaine-prereg freeze {t}/d.md | head -c 1"],
             setup=lambda t: (t / "d.md").write_text(DEMO.read_text().split("\n<!-- fontaine:sealed")[0]), expect="custom",
             check=_pipe_check),
        Case("prereg", "new over a FIFO", ["fontaine-prereg", "new", "{t}/n.md"], setup=lambda t: hostile(t / "n.md", "fifo")),
        Case("prereg", "new over a directory", ["fontaine-prereg", "new", "{t}/n.md"], setup=lambda t: hostile(t / "n.md", "dir")),
        Case("prereg", "new under a file", ["fontaine-prereg", "new", "{t}/f/n.md"], setup=lambda t: (t / "f").write_text("x")),
        Case("prereg", "new --id ../x", ["fontaine-prereg", "new", "{t}/n.md", "--id", "../x"]),
        Case("prereg", "launch-spec --arm nosuch", ["fontaine-prereg", "launch-spec", str(DEMO), "--arm", "nosuch"]),
        Case("prereg", "launch-spec --arm ''", ["fontaine-prereg", "launch-spec", str(DEMO), "--arm", ""]),
        Case("prereg", "amend --set garbage", ["fontaine-prereg", "amend", "{t}/d.md", "--from-arm", "scripted", "--name", "b",
                                               "--set", "x", "--why", "w"], setup=lambda t: shutil.copy(DEMO, t / "d.md")),
        Case("prereg", "amend --set workers=100000, then freeze", ["sh", "-c", "fontaine-prereg amend {t}/d.md --from-arm "
                                                                   "scripted --name b --set workers=100000 --why w --freeze"],
             setup=lambda t: shutil.copy(DEMO, t / "d.md"), expect="custom", check=_refused_at_freeze),
        Case("prereg", "amend --yaml FIFO", ["fontaine-prereg", "amend", "{t}/d.md", "--yaml", "{t}/a.yaml"],
             setup=lambda t: (shutil.copy(DEMO, t / "d.md"), hostile(t / "a.yaml", "fifo"))),
        Case("prereg", "amend --yaml random", ["fontaine-prereg", "amend", "{t}/d.md", "--yaml", "{t}/a.yaml"],
             setup=lambda t: (shutil.copy(DEMO, t / "d.md"), hostile(t / "a.yaml", "random"))),
        Case("prereg", "amend --yaml a list", ["fontaine-prereg", "amend", "{t}/d.md", "--yaml", "{t}/a.yaml"],
             setup=lambda t: (shutil.copy(DEMO, t / "d.md"), hostile(t / "a.yaml", "list"))),
        Case("prereg", "amend --yaml deep", ["fontaine-prereg", "amend", "{t}/d.md", "--yaml", "{t}/a.yaml"],
             setup=lambda t: (shutil.copy(DEMO, t / "d.md"), hostile(t / "a.yaml", "deep"))),
        Case("prereg", "report --run bad form", ["fontaine-prereg", "report", str(DEMO), "--run", "scripted"]),
        Case("prereg", "report --run unknown arm", ["fontaine-prereg", "report", str(DEMO), "--run", "x={t}"]),
        Case("prereg", "report --run a file", ["fontaine-prereg", "report", str(DEMO), "--run", "scripted={t}/f"],
             setup=lambda t: (t / "f").write_text("x")),
        Case("prereg", "publish --path-in-repo /abs", ["fontaine-prereg", "publish", str(DEMO), "--repo", "a/b",
                                                       "--path-in-repo", "/abs", "--dry-run", "--run", "scripted={t}/r"],
             setup=lambda t: shutil.copytree(FIXTURES["reported_run"], t / "r")),
        Case("prereg", "publish --repo garbage", ["fontaine-prereg", "publish", str(DEMO), "--repo", "not a repo"]),
        Case("prereg", "publish --video-seeds x", ["fontaine-prereg", "publish", str(DEMO), "--repo", "a/b", "--video-seeds", "x"]),
        Case("prereg", "publish a webhook in a row", ["fontaine-prereg", "publish", "{t}/demo.md", "--repo", "a/b",
                                                      "--run", "scripted={t}/r"],
             setup=_row_with_hook, env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0"}),
    ]
    for name in ("manifest.json", "status.json", "rows.jsonl", "results.json", "results.md", "chart.png"):
        for kind in ("fifo", "loop", "dir", "random", "deep", "list"):
            def setup(t, n=name, k=kind):
                shutil.copytree(FIXTURES["reported_run"], t / "r")
                hostile(t / "r" / n, k)
            out.append(Case("prereg-report", f"report, {name} {kind}",
                            ["fontaine-prereg", "report", "{t}/demo.md", "--run", "scripted={t}/r", "--no-append"],
                            setup=lambda t, s=setup: (s(t), shutil.copy(DEMO, t / "demo.md")), expect="custom",
                            check=_report_check))
    return out


def _report_of_problems(t: Path, out: subprocess.CompletedProcess) -> str | None:
    """validate, show and verify report on a document that does not validate (its problems, one line
    each, exit 2; verify: not frozen, exit 1): by design, never silently 0."""
    return "clear" if out.returncode in (1, 2) else "accepted" if out.returncode == 0 else None


def _refused_at_freeze(t: Path, out: subprocess.CompletedProcess) -> str | None:
    """amend appends a draft to be edited; the freeze refuses what does not validate (exit 2, the field named)."""
    return "clear" if out.returncode == 2 and "workers" in out.stderr else "accepted" if out.returncode == 0 else None


def _pipe_check(t: Path, out: subprocess.CompletedProcess) -> str | None:
    return "clear" if "internal error" not in out.stderr and "Traceback" not in out.stderr else "traceback"


def _report_check(t: Path, out: subprocess.CompletedProcess) -> str | None:
    """The report of a run whose file is hostile: INVALID with why (exit 0, or 2 for an unusable run), never a bug."""
    return "clear" if out.returncode in (0, 1, 2) else None


def _row_with_hook(t: Path) -> None:
    shutil.copytree(FIXTURES["reported_run"], t / "r")
    shutil.copy(DEMO, t / "demo.md")
    rows = (t / "r" / "rows.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row["note"] = f"see {HOOK}"
    rows[0] = json.dumps(row)
    (t / "r" / "rows.jsonl").write_text("\n".join(rows) + "\n")
    os.utime(t / "r" / "rows.jsonl", (1, 1))


def notify_cases() -> list[Case]:
    """fontaine-notify and fontaine-console: flags, and a webhook setting it cannot use."""
    out = []
    for f in (["--poll", "1e9"], ["--poll", "0"], ["--every", "0"], ["--grace", "nan"], ["--http-timeout", "1e12"],
              ["--backoff", "-1"], ["--gone-after", "0"], ["--runs-dir", ""], ["--every", "1e9"], ["--linger-max", "inf"]):
        out.append(Case("notify", "fontaine-notify " + " ".join(f), ["fontaine-notify", "--runs-dir", "{t}/runs", *f]))
    for f in (["--poll", "1e9"], ["--poll", "0"], ["--runs-dir", ""], ["--runs-dir", "{t}/f"], ["--prereg-dir", ""]):
        out.append(Case("notify", "fontaine-console " + " ".join(f), ["fontaine-console", *f],
                        setup=lambda t: (t / "f").write_text("x")))
    for kind in ("fifo", "huge", "dir", "loop", "device", "world-readable", "not-discord", "empty-url", "random"):
        def setup(t, k=kind):
            p = t / "hook"
            if k == "world-readable":
                p.write_text(HOOK + "\n")
                p.chmod(0o644)
            elif k == "not-discord":
                p.write_text("https://example.com/hook\n")
                p.chmod(0o600)
            elif k == "empty-url":
                p.write_text("\n")
                p.chmod(0o600)
            else:
                hostile(p, k)
                if k in ("huge", "random"):
                    p.chmod(0o600)
        out.append(Case("notify", f"webhook file {kind}", ["fontaine-notify", "--runs-dir", "{t}/runs", "--grace", "0"],
                        setup=setup, env={"FONTAINE_DISCORD_WEBHOOK_FILE": "{t}/hook", "FONTAINE_DISCORD_WEBHOOK_URL": ""},
                        expect="ok" if kind == "empty-url" else "refuse"))
    out.append(Case("notify", "webhook URL not Discord", ["fontaine-notify", "--runs-dir", "{t}/runs", "--grace", "0"],
                    env={"FONTAINE_DISCORD_WEBHOOK_URL": "https://example.com/x"}))
    return out


def fault_cases() -> list[Case]:
    """Real runs, interrupted: what the README promises."""
    run = ["--policy", "scripted", "--episode-seconds", "10", "--seeds", "0-7", "--workers", "2", "--video-draw", "none"]
    out = []
    for sig in ("TERM", "HUP", "INT"):
        out.append(Case("faults", f"SIG{sig} to the run's process group", ["fault-signal", sig, *run],
                        expect="custom", check=_signal_check, timeout=400))
    out.append(Case("faults", "STOP holding the webhook and the token", ["fault-stop-secret", *run], expect="custom",
                    check=_secret_stop_check, timeout=400))
    out.append(Case("faults", "kill -9, then --resume", ["fault-kill9", *run], expect="custom", check=_kill9_check, timeout=600))
    return out


def _signal_check(t: Path, out: subprocess.CompletedProcess) -> str | None:
    status = json.loads((t / "run" / "status.json").read_text())
    rows = [json.loads(x) for x in (t / "run" / "rows.jsonl").read_text().splitlines() if x.strip()]
    ok = out.returncode == 3 and status.get("state") == "stopped" and all(r["status"] == "ok" for r in rows)
    return "clear" if ok else None


def _secret_stop_check(t: Path, out: subprocess.CompletedProcess) -> str | None:
    status = json.loads((t / "run" / "status.json").read_text())
    return "clear" if out.returncode == 3 and status.get("state") == "stopped" else None


def _kill9_check(t: Path, out: subprocess.CompletedProcess) -> str | None:
    rows = [json.loads(x) for x in (t / "run" / "rows.jsonl").read_text().splitlines() if x.strip()]
    return "clear" if out.returncode == 0 and sorted(r["seed"] for r in rows) == list(range(8)) else None


# --------------------------------------------------------------------------------------- running

COMMANDS = {"fontaine-eval": ["-m", "engine.cli"], "fontaine-prereg": ["-m", "prereg.outputs.cli"],
            "fontaine-notify": ["-m", "console.notify.service"], "fontaine-console": ["-m", "console.app"]}
FIXTURES: dict[str, Path] = {}


def expand(argv: list[str], t: Path) -> list[str]:
    argv = [a.replace("{t}", str(t)) for a in argv]
    if argv[0] in COMMANDS:
        return [PY, "-P", *COMMANDS[argv[0]], *argv[1:]]
    if argv[0] == "sh":
        cmd = argv[2]
        for name, args in COMMANDS.items():
            cmd = cmd.replace(name, " ".join([PY, "-P", *args]))
        return ["sh", "-c", cmd]
    return argv


def environment(case: Case, t: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "HF_TOKEN": HF, "WANDB_API_KEY": KEY, "HF_HUB_OFFLINE": "1", "FONTAINE_DISCORD_WEBHOOK_URL": HOOK,
           "FONTAINE_IMAGES": "halfcell"}
    env.update({k: v.replace("{t}", str(t)) for k, v in case.env.items()})
    return {k: v for k, v in env.items() if v != ""}


def run_case(case: Case, root: Path) -> dict:
    t = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    if case.setup is not None:
        case.setup(t)
    seeded = {p for p in t.rglob("*") if p.is_file() and not p.is_symlink()}
    env = environment(case, t)
    started = time.monotonic()
    if case.argv[0].startswith("fault-"):
        out = run_fault(case, t, env)
    else:
        proc = subprocess.Popen(expand(case.argv, t), cwd=t, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            shutil.rmtree(t, ignore_errors=True)
            return {"group": case.group, "case": case.name, "outcome": "hang",
                    "detail": f"still running after {case.timeout:g} s"}
        out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    wall = time.monotonic() - started
    outcome = classify(case, t, out, seeded)
    result = {"group": case.group, "case": case.name, "outcome": outcome, "code": out.returncode, "wall_s": round(wall, 1),
              "detail": (out.stderr.strip().splitlines() or [""])[-1][:300]}
    shutil.rmtree(t, ignore_errors=True)
    return result


def classify(case: Case, t: Path, out: subprocess.CompletedProcess, seeded: set[Path]) -> str:
    text = out.stdout + out.stderr
    if "Traceback (most recent call last)" in out.stderr or "internal error" in out.stderr or "this is a bug" in text:
        return "traceback"
    if leaked(t, text, seeded):
        return "leak"
    if case.check is not None:
        got = case.check(t, out)
        if got is not None:
            return got
    if case.expect == "refuse":
        lines = [x for x in out.stderr.splitlines() if x.strip()]
        if out.returncode == 0:
            return "accepted"
        said = [x for x in lines if x.startswith("fontaine-")]  # its line (a library's warnings may come first)
        if out.returncode == 2 and said and ": error: " in said[0]:  # one line (a document's problems: one each)
            return "clear"
        return "other"
    if case.expect == "ok":
        return "clear" if out.returncode == 0 else "other"
    return "other"


def leaked(t: Path, text: str, seeded: set[Path]) -> bool:
    if any(s in text for s in SECRETS):
        return True
    for p in t.rglob("*"):
        try:
            if p in seeded or p.is_symlink() or not p.is_file() or p.stat().st_size > 50_000_000:
                continue
            data = p.read_bytes()
        except OSError:
            continue
        if any(s.encode() in data for s in SECRETS):
            return True
    return False


def run_fault(case: Case, t: Path, env: dict) -> subprocess.CompletedProcess:
    what, args = case.argv[0], case.argv[1:]
    run_dir = t / "run"
    argv = expand(["fontaine-eval"], t)
    if what == "fault-signal":
        sig, args = getattr(signal, f"SIG{args[0]}"), args[1:]
    proc = subprocess.Popen([*argv, *args, "--run-dir", str(run_dir)], cwd=t, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_for(pred, timeout=200):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if pred():
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        return False

    def in_flight():
        return json.loads((run_dir / "status.json").read_text()).get("in_flight_seeds")

    try:
        wait_for(in_flight)
        if what == "fault-signal":
            os.killpg(proc.pid, sig)
        elif what == "fault-stop-secret":
            (run_dir / "STOP").write_text(f"stop {HOOK} {HF} WANDB_API_KEY={KEY} {EVIL}")
        elif what == "fault-kill9":
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=case.timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if what == "fault-kill9":
        return subprocess.run([*argv, "--resume", str(run_dir)], cwd=t, env=env, capture_output=True, text=True,
                              timeout=case.timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


# --------------------------------------------------------------------------------------- fixtures

def make_fixtures(root: Path, only: set) -> None:
    """A real run stopped before its first episode (for resume cases) and a reported demo run (for report cases)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if not only & {"resume", "prereg", "memory"}:
        return
    stopped = root / "fixture-stopped"
    stopped.mkdir()
    (stopped / "STOP").write_text("stop before it starts")
    subprocess.run([PY, "-m", "engine.cli", "--policy", "scripted", "--seeds", "0-1", "--episode-seconds", "1",
                    "--video-draw", "none", "--run-dir", str(stopped)], env=env, capture_output=True, timeout=600)
    FIXTURES["stopped_run"] = stopped
    reported = root / "fixture-reported"
    subprocess.run([PY, "-m", "engine.cli", "--prereg", str(DEMO), "--arm", "scripted", "--run-dir", str(reported)],
                   env=env, capture_output=True, timeout=1200)
    doc = root / "demo.md"
    shutil.copy(DEMO, doc)
    subprocess.run([PY, "-m", "prereg.outputs.cli", "report", str(doc), "--run", f"scripted={reported}", "--no-append"],
                   env=env, capture_output=True, timeout=600)
    FIXTURES["reported_run"] = reported


# --------------------------------------------------------------------------------------- in-process sweeps

def screen_and_post_sweep(root: Path, parts: tuple[str, ...] = ("posts", "screens")) -> list[dict]:
    """The console's screens and the notifier's posts over one runs folder of hostile runs, in a child
    process (a hang there is a hang): every key of the main screen, the seed view and the dialogs
    (`parts`: the posts, the screens or both)."""
    code = r'''
import asyncio, json, os, sys, traceback
from pathlib import Path
os.environ.setdefault("FONTAINE_IMAGES", "halfcell")
sys.path.insert(0, sys.argv[2])
from scripts.hostile_sweep import build_hostile_runs, SECRETS
from console.notify.messages import due_posts
from console.notify.snapshot import read_snapshot
runs = Path(sys.argv[1])
parts = set(sys.argv[3].split(","))
names = build_hostile_runs(runs)
results = []
for d in sorted(p for p in runs.iterdir() if not p.name.startswith(".")) if "posts" in parts else ():
    try:
        snap = read_snapshot(d)  # the notifier's one read of a run (console/notify/snapshot.py)
        posts = due_posts(snap, set(), catch_up_s=1e12)
        text = json.dumps([[p.content, p.title, p.description, p.footer] for p in posts])
        bad = "\x1b" in text or any(s in text.replace("\\\\", "") for s in SECRETS)
        state = snap.state
        false_post = state not in ("starting", "running", "stopping", "stopped", "done", "failed") and posts
        results.append({"group": "posts", "case": d.name, "outcome": "leak" if bad else "other" if false_post else "clear",
                        "detail": f"state {state}; posts {[p.key for p in posts]}"})
    except Exception as exc:
        results.append({"group": "posts", "case": d.name, "outcome": "traceback", "detail": repr(exc)[:200]})

async def screens():
    from console.app import FontaineApp

    app = FontaineApp(runs_dir=runs, prereg_dirs=[runs.parent / "preregs"], notifier=None)
    errors = []
    async with app.run_test(size=(140, 44)) as pilot:
        for _ in range(60):
            await pilot.pause(0.1)
            if app.runs:
                break
        for i, r in enumerate(app.runs):
            for keys in (("down",), ("g", "enter", "w", "p", "escape"), ("r",), ("escape",), ("c",), ("escape",),
                         ("l",), ("escape",), ("?",), ("escape",)):
                try:
                    for k in keys:
                        await pilot.press(k)
                        await pilot.pause(0.05)
                except Exception:
                    errors.append(traceback.format_exc())
            shot = app.export_screenshot()
            results.append({"group": "screens", "case": f"keys on run {i} ({r.run_id[:40]!r})", "outcome":
                            "leak" if "\x1b" in shot or any(s in shot for s in SECRETS) else "clear", "detail": ""})
    return errors, app.return_code

errors, rc = asyncio.run(screens()) if "screens" in parts else ([], 0)
if errors:
    results.append({"group": "screens", "case": "console", "outcome": "traceback", "detail": errors[0][-300:]})
print(json.dumps(results))
'''
    runs = root / "hostile-runs" / "runs"
    runs.mkdir(parents=True)
    (runs.parent / "preregs").mkdir()
    (runs.parent / "preregs" / "loop.md").symlink_to("loop.md")
    os.mkfifo(runs.parent / "preregs" / "fifo.md")
    (runs.parent / "preregs" / "evil.md").write_text(DEMO.read_text().replace("id: demo-tiny-engine", f"id: {EVIL!r}"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_TOKEN": HF}
    try:
        out = subprocess.run([PY, "-c", code, str(runs), str(REPO), ",".join(parts)], env=env, capture_output=True, text=True, timeout=900,
                             start_new_session=True)
    except subprocess.TimeoutExpired:
        return [{"group": "screens", "case": "console over hostile runs", "outcome": "hang", "detail": "900 s"}]
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [{"group": "screens", "case": "console over hostile runs", "outcome": "traceback",
                 "detail": out.stderr[-300:]}]


def build_hostile_runs(runs: Path) -> list[str]:
    """A runs folder an attacker filled: each run directory wrong in one way, and a good one."""
    from console.fixtures import make_row, make_run_dir

    def run(name, **kw):
        return make_run_dir(runs, name, total=6, done=3, state=kw.pop("state", "running"), **kw)

    made = []
    d = run("evil-arm")
    m = json.loads((d / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps({**m, "arm": EVIL, "run_id": EVIL}))
    made.append(d.name)
    d = run("evil-stop", state="stopped")
    s = json.loads((d / "status.json").read_text())
    (d / "status.json").write_text(json.dumps({**s, "reason": f"stopped {EVIL} {HF}",
                                               "stop": {"by": "user", "detail": f"{HOOK} {EVIL}", "who": EVIL}}))
    (d / "STOP").write_text(f"stop {HOOK} {HF}")
    for kind in ("random", "list", "deep"):
        d = run(f"status-{kind}", state="done")
        hostile(d / "status.json", kind)
    d = run("status-state-5", state="done")
    (d / "status.json").write_text(json.dumps({"state": 5, "done": 3}))
    for kind in ("fifo", "loop", "dir"):
        for name in ("status.json", "manifest.json", "rows.jsonl", "STOP", "pid.json", "results.md", "chart.png"):
            d = run(f"{name.split('.')[0]}-{kind}")
            if name in ("results.md", "chart.png"):
                (d / "rows.jsonl").touch()
            hostile(d / name, kind)
    d = run("rows-hostile", rows=[make_row(s) for s in range(3)])
    with open(d / "rows.jsonl", "a") as f:
        f.write(json.dumps({**make_row(3), "note": f"{EVIL} {HF} {HOOK}", "error": EVIL}) + "\n")
        f.write(json.dumps(make_row(0)) + "\n")  # a duplicated line
        f.write("\0\0garbage\n" + '{"seed": 9, "pad": "' + "x" * 2_000_000 + '"}\n')
    d = run("video-fifo", rows=[make_row(s, video=f"videos/rollout_seed00{s}.mp4") for s in range(3)])
    (d / "videos").mkdir(exist_ok=True)
    os.mkfifo(d / "videos" / "rollout_seed000.mp4")
    (runs / "a-loop").symlink_to("a-loop")
    (runs / "a-file").write_text("x")
    run("z-good")
    return made


# --------------------------------------------------------------------------------------- memory

def memory_sweep(root: Path) -> list[dict]:
    """Peak memory of reads sized to their input (issue 33's 300 MB rows.jsonl, 200 MB webhook file, 1 GB sparse mesh)."""
    out = []
    t = root / "memory"
    t.mkdir()
    shutil.copytree(FIXTURES["reported_run"], t / "r")
    row = json.loads((t / "r" / "rows.jsonl").read_text().splitlines()[0])
    with open(t / "r" / "rows.jsonl", "w") as f:
        size = 0
        while size < 300 * 1024 * 1024:
            line = json.dumps(row) + "\n"
            f.write(line)
            size += len(line)
    shutil.copy(DEMO, t / "demo.md")
    hook = t / "hook"
    with open(hook, "wb") as f:
        f.truncate(200 * 1024 * 1024)
    hook.chmod(0o600)
    probes = {
        "report of a 300 MB rows.jsonl": ([PY, "-m", "prereg.outputs.cli", "report", str(t / "demo.md"), "--run",
                                           f"scripted={t / 'r'}", "--no-append"], {}),
        "notifier with a 200 MB webhook file": ([PY, "-m", "console.notify.service", "--runs-dir", str(t / "runs"), "--grace", "0"],
                                                {"FONTAINE_DISCORD_WEBHOOK_FILE": str(hook), "FONTAINE_DISCORD_WEBHOOK_URL": ""}),
    }
    for name, (argv, extra) in probes.items():
        env = {k: v for k, v in {**os.environ, "PYTHONPATH": str(REPO), **extra}.items() if v != ""}
        wrapper = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
                   "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        try:
            res = subprocess.run([PY, "-c", wrapper, *argv], env=env, capture_output=True, text=True, timeout=900)
            code, kb = res.stdout.split()
            out.append({"group": "memory", "case": name, "outcome": "clear" if int(kb) < 1024 * 1024 else "other",
                        "detail": f"exit {code}, peak {int(kb) / 1024:.0f} MB"})
        except (subprocess.TimeoutExpired, ValueError) as exc:
            out.append({"group": "memory", "case": name, "outcome": "hang" if isinstance(exc, subprocess.TimeoutExpired)
                        else "other", "detail": str(exc)[:200]})
    return out


# --------------------------------------------------------------------------------------- main

GROUPS = {"eval": eval_cases, "paths": eval_path_cases, "resume": resume_cases, "prereg": prereg_cases,
          "notify": notify_cases, "faults": fault_cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated: " + ", ".join([*GROUPS, "posts", "screens", "memory"]))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every case's outcome here")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(","))) or {*GROUPS, "posts", "screens", "memory"}
    root = Path(tempfile.mkdtemp(prefix="fontaine-sweep-"))
    results: list[dict] = []
    try:
        make_fixtures(root, only)
        cases = [c for g, make in GROUPS.items() if g in only for c in make()]
        with ThreadPoolExecutor(args.jobs) as pool:
            for r in pool.map(lambda c: run_case(c, root), cases):
                results.append(r)
                if r["outcome"] != "clear":
                    print(f"{r['outcome']:>9}  {r['group']}: {r['case']}  {r.get('detail', '')[:160]}", flush=True)
        if only & {"posts", "screens"}:
            results += screen_and_post_sweep(root, tuple(p for p in ("posts", "screens") if p in only))
        if "memory" in only:
            results += memory_sweep(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    outcomes = ("clear", "accepted", "hang", "traceback", "leak", "other")
    print(f"\n{'group':<14}" + "".join(f"{o:>10}" for o in ("tried", *outcomes)))
    for g in dict.fromkeys(r["group"] for r in results):
        rs = [r for r in results if r["group"] == g]
        print(f"{g:<14}{len(rs):>10}" + "".join(f"{sum(r['outcome'] == o for r in rs):>10}" for o in outcomes))
    print(f"{'all':<14}{len(results):>10}" + "".join(f"{sum(r['outcome'] == o for r in results):>10}" for o in outcomes))
    for r in results:
        if r["group"] in ("memory",):
            print(f"memory: {r['case']}: {r['detail']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["outcome"] == "clear" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
