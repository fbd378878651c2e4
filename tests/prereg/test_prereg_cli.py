"""`fontaine-prereg`: exit codes 0 / 1 (verify failed) / 2 (bad input), never a traceback for bad input."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from prereg.outputs.cli import main
from tests.prereg.conftest import make_row
from tests.prereg.test_prereg_document import GOOD


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def test_new_validate_freeze_verify_show(tmp_path, capsys):
    p = tmp_path / "my-eval.md"
    rc, out, _ = run(capsys, "new", str(p), "--title", "My eval")
    assert rc == 0 and p.exists()
    rc, _, err = run(capsys, "new", str(p))
    assert rc == 2 and "already exists" in err
    rc, _, err = run(capsys, "validate", str(p))
    assert rc == 2 and "revision" in err and "'PIN-ME' is not immutable" in err  # a frozen plan pins its checkpoint
    # ... and that is its only problem: the one-arm template's rules are that arm's, even while the
    # arm itself has a problem (they said "names no arm (this section has several)")
    assert "1 problem(s)" in err and "names no arm" not in err
    p.write_text(p.read_text().replace("revision: PIN-ME", "revision: " + "3f" * 20))
    rc, out, _ = run(capsys, "validate", str(p))
    assert rc == 0 and "valid" in out
    rc, out, err = run(capsys, "verify", str(p))
    assert rc == 1 and "not frozen" in err
    rc, out, _ = run(capsys, "freeze", str(p))
    assert rc == 0 and "froze base" in out
    rc, out, _ = run(capsys, "verify", str(p))
    assert rc == 0 and "verified" in out
    rc, out, _ = run(capsys, "show", str(p))
    assert rc == 0 and "arm arm-a" in out and "gpu_hours 1.5" in out
    rc, out, _ = run(capsys, "launch-spec", str(p), "--arm", "arm-a")
    assert rc == 0 and '"prereg_sha256"' in out


def test_validate_reports_file_line_field(tmp_path, capsys):
    p = tmp_path / "t.md"
    p.write_text(GOOD.replace("seeds: 0-9", "seeds: []"))
    rc, _, err = run(capsys, "validate", str(p))
    line = next(i for i, ln in enumerate(p.read_text().splitlines(), 1) if "seeds: []" in ln)
    assert rc == 2 and f"{p}:{line}: protocol.seeds: the seed list is empty" in err


@pytest.mark.parametrize("seeds,why", [("0-10000000", "names more than 100,000 seeds"),
                                       ("4294967296", "past the largest seed, 2147483647")])
def test_validate_refuses_the_seeds_the_cli_refuses_at_once(tmp_path, capsys, seeds, why):
    p = tmp_path / "t.md"
    p.write_text(GOOD.replace("seeds: 0-9", f"seeds: {seeds}"))
    rc, _, err = run(capsys, "validate", str(p))
    assert rc == 2 and why in err and "protocol.seeds" in err


@pytest.mark.parametrize("make, why", [
    (lambda p: __import__("os").mkfifo(p), "cannot be read: it is a FIFO (named pipe), not a regular file"),
    (lambda p: p.mkdir(), "cannot be read: it is a directory, not a regular file"),
    (lambda p: p.symlink_to(p), "cannot be read: a symbolic link loop (too many levels of symbolic links)"),
], ids=["fifo", "directory", "symlink-loop"])
def test_a_document_that_is_no_regular_file_is_one_line_at_once(tmp_path, make, why):
    """A FIFO named *.md hung validate (an unbounded read_text): it is refused, exit 2, in one line.
    Run as a process with a timeout, so a hang fails the test instead of stopping the suite."""
    p = tmp_path / "plan.md"
    make(p)
    for command in (["validate", str(p)], ["launch-spec", str(p), "--arm", "a"], ["verify", str(p)]):
        try:
            out = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", *command], cwd=Path(__file__).resolve().parents[2],
                                 capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"fontaine-prereg {command[0]} still reading {p} after 60 s: a hang") from None
        assert out.returncode == 2, (command, out)
        assert out.stderr == f"fontaine-prereg: error: {p}: {why}\n", (command, out.stderr)


def test_bad_input_exits_2(tmp_path, capsys, demo):
    assert run(capsys, "validate", str(tmp_path / "nope.md"))[0] == 2
    assert run(capsys, "launch-spec", str(demo), "--arm", "nope")[0] == 2
    rc, _, err = run(capsys, "report", str(demo), "--run", "scripted")
    assert rc == 2 and "ARM=RUN_DIR" in err
    rc, _, err = run(capsys, "report", str(demo), "--run", f"scripted={tmp_path / 'missing'}")
    assert rc == 2 and "no such run directory" in err
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2
    p = tmp_path / "t.md"
    p.write_text(GOOD.replace("gpu_hours: 0.5", "gpu_hours: -1"))
    rc, _, err = run(capsys, "freeze", str(p))
    assert rc == 2 and "gates.gpu_hours" in err


def test_tampered_document(demo, capsys):
    demo.write_text(demo.read_text().replace("0.25 GPU-hours", "0.35 GPU-hours"))
    rc, out, err = run(capsys, "verify", str(demo))
    assert rc == 1 and "[CHANGED] base" in out and "DOES NOT VERIFY" in err
    rc, _, err = run(capsys, "launch-spec", str(demo), "--arm", "scripted")
    assert rc == 2 and "changed since it was frozen" in err


def test_amend_from_arm_and_freeze(tmp_path, capsys):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    assert run(capsys, "freeze", str(p))[0] == 0
    rc, out, _ = run(capsys, "amend", str(p), "--title", "masked", "--from-arm", "a", "--name", "a-masked",
                     "--set", "decode=grammar-masked", "--set", "workers=4", "--why", "Masks repair fallbacks.",
                     "--freeze")
    assert rc == 0 and "froze amendment-1" in out
    rc, out, _ = run(capsys, "launch-spec", str(p), "--arm", "a-masked")
    assert rc == 0 and '"decode": "grammar-masked"' in out and '"workers": 4' in out
    rc, _, err = run(capsys, "amend", str(p), "--set", "decode=flow")
    assert rc == 2 and "--from-arm" in err


def test_report_cli(demo, run_dir, capsys):
    d = run_dir("s", [make_row(s, success=True, progress_final_cm=8.0) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"))
    rc, out, _ = run(capsys, "report", str(demo), "--run", f"scripted={d}")
    assert rc == 0 and "successes 6 / 6" in out and "[HOLDS] if scripted.successes >= 1" in out
    assert (d / "chart.png").exists() and (d / "results.md").exists()
    rc, out, _ = run(capsys, "report", str(demo), "--run", f"scripted={d}", "--json", "--no-append")
    assert rc == 0 and '"successes": 6' in out


def test_report_cli_unregistered(demo, run_dir, capsys):
    d = run_dir("plain", [make_row(s, success=True) for s in range(6)], status={"state": "done"})
    rc, out, _ = run(capsys, "report", str(demo), "--run", f"scripted={d}", "--no-append")
    assert rc == 0 and "INVALID" in out and "no manifest.json" in out
    assert "[undetermined (scripted: INVALID" in out
    rc, out, _ = run(capsys, "report", str(demo), "--run", f"scripted={d}", "--unregistered")
    assert rc == 0 and out.splitlines()[0].startswith("UNREGISTERED REPORT")
    assert "fontaine:results" not in demo.read_text()


def test_console_script_runs_as_a_subprocess(demo):
    exe = Path(sys.executable).with_name("fontaine-prereg")
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "prereg.outputs.cli"]
    res = subprocess.run(argv + ["verify", str(demo)], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert "verified" in res.stdout


@pytest.mark.parametrize("argv,why", [
    (["new", "x.md", "--title", "a", "--title", "b"], "--title is given twice ('a', then 'b')"),
    (["launch-spec", "x.md", "--arm", "a", "--arm=b"], "--arm is given twice"),
    (["report", "x.md", "--run", "a=r", "--json", "--json"], "--json is given twice; give it once"),
])
def test_a_repeated_flag_is_refused_in_one_line(tmp_path, capsys, monkeypatch, argv, why):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and why.replace("'", "") in err.replace("'", "") and err.count("\n") == 1 and not out
    assert list(tmp_path.iterdir()) == []


def test_flags_that_collect_may_repeat():
    from prereg.core.argcheck import repeated_option
    from prereg.outputs.cli import _parser

    assert repeated_option(_parser(), ["report", "x.md", "--run", "a=r", "--run", "b=s"]) is None
    assert repeated_option(_parser(), ["amend", "x.md", "--set", "a=1", "--set", "b=2"]) is None
    assert repeated_option(_parser(), ["new", "--", "--title", "--title"]) is None


# --- issue 33: what ended "internal error ... this is a bug", hung, or was taken silently -------------


@pytest.mark.parametrize("old, new, says", [
    ("created: 2026-11-30", "created: 2026-13-45", "'2026-13-45' cannot be read (month must be in 1..12); quote it"),
    ("created: 2026-11-30", "created: [1]", "created: [1] is not a date"),
    ("title:", "ti\0tle:", "not valid YAML: special characters are not allowed"),
])
def test_a_document_yaml_cannot_hold_is_a_problem_at_its_line(tmp_path, capsys, demo, old, new, says):
    p = tmp_path / "d.md"
    p.write_text(demo.read_text().replace(old, new, 1))
    for cmd in ("validate", "freeze", "show"):  # the demo is frozen: freeze says what changed since
        rc, out, err = run(capsys, cmd, str(p))
        assert rc == 2 and (says in out + err or cmd == "freeze") and "internal error" not in err, (cmd, out, err)


@pytest.mark.parametrize("kind, says", [("fifo", "is a FIFO (named pipe), not a regular file"),
                                        ("random", "cannot be read as YAML"), ("deep", "nested more than 32 deep")])
def test_an_amendment_yaml_file_that_is_not_one_is_one_line_never_a_hang(tmp_path, capsys, demo, kind, says):
    import os

    from tests.helpers import returns_within

    y = tmp_path / "a.yaml"
    {"fifo": lambda: os.mkfifo(y), "random": lambda: y.write_bytes(bytes(range(256)) * 4),
     "deep": lambda: y.write_text("[" * 5000 + "]" * 5000)}[kind]()
    rc, _, err = returns_within(lambda: run(capsys, "amend", str(demo), "--yaml", str(y)), 20, what="amend --yaml")
    assert rc == 2 and says in err and err.count("\n") == 1 and "internal error" not in err, err


def test_new_refuses_a_folder_that_is_a_file_and_an_id_that_is_no_name(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    rc, _, err = run(capsys, "new", str(tmp_path / "f" / "n.md"))
    assert rc == 2 and "not a folder" in err and "internal error" not in err, err
    rc, _, err = run(capsys, "new", str(tmp_path / "n.md"), "--id", "../x")
    assert rc == 2 and "--id '../x': an id is letters" in err and not (tmp_path / "n.md").exists()


@pytest.mark.parametrize("name, kind", [("results.json", "dir"), ("results.md", "dir"), ("chart.png", "fifo")])
def test_a_report_file_that_is_not_a_file_is_one_line_never_a_hang(demo, run_dir, capsys, name, kind):
    import os

    from tests.helpers import returns_within

    d = run_dir("s", [make_row(s, success=True) for s in range(6)], status={"state": "done"}, launched=(demo, "scripted"))
    (d / name).mkdir() if kind == "dir" else os.mkfifo(d / name)
    (d / name / "keep").write_text("x") if kind == "dir" else None
    rc, out, err = returns_within(lambda: run(capsys, "report", str(demo), "--run", f"scripted={d}", "--no-append"), 60,
                                  what="the report")
    if kind == "dir":
        assert rc == 2 and f"{name}: is a directory" in err and "internal error" not in err, err
    else:  # the report's own chart: written over the FIFO atomically, never opened and waited on
        assert rc == 0 and (d / name).is_file(), err


ESCAPES = "\x1b]0;pwn\x07 \x1b[2J \x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x9b31m \r"


def _no_raw_control(text: str) -> None:
    """Nothing a terminal obeys: no ESC, BEL, CR or C1 (newline and tab are text)."""
    assert not [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f], repr(text)


def test_show_prints_a_titles_escape_sequences_as_text_never_raw(tmp_path, capsys):
    """Issue 43: `show` printed a title's ESC]0;...BEL (the window title), ESC[2J and an OSC 8 link raw."""
    p = tmp_path / "t.md"
    assert run(capsys, "new", str(p))[0] == 0
    yaml_title = 'x \\e]0;pwn\\a \\e[2J \\e]8;;https://evil.example\\e\\\\click\\e]8;;\\e\\\\ \\x9b31m'
    p.write_text(re.sub(r"(?m)^title: .*$", lambda _m: f'title: "{yaml_title}"', p.read_text(), count=1))
    rc, out, err = run(capsys, "show", str(p))
    assert "\\x1b]0;pwn\\x07" in out and "\\x1b[2J" in out and "\\x1b]8;;https://evil.example" in out, out
    _no_raw_control(out + err)


def test_report_prints_its_summary_without_a_raw_escape(demo, run_dir, capsys):
    """Issue 43: `report` printed text from the run (here its folder's name) raw."""
    d = run_dir("s" + ESCAPES.replace("\r", ""), [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"))
    rc, out, err = run(capsys, "report", str(demo), "--run", f"scripted={d}", "--no-append")
    assert rc == 0 and "\\x1b]0;pwn\\x07" in out, out + err
    _no_raw_control(out + err)


def test_a_run_directory_that_is_a_fifo_is_named_as_one(demo, tmp_path, capsys):
    """Issue 43: `report --run arm=FIFO` read 'no such run directory'."""
    import os

    fifo = tmp_path / "run"
    os.mkfifo(fifo)
    rc, _, err = run(capsys, "report", str(demo), "--run", f"scripted={fifo}")
    assert rc == 2 and f"{fifo}: is a FIFO (named pipe), not a directory (for arm 'scripted')" in err, err
    assert "no such run directory" not in err and err.count("\n") == 1
