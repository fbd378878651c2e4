"""Issue 45: a worker's environment is an allow-list, and a lab passes its own variables by name
(`--pass-env NAME`, a plan's `protocol: pass_env:`), recorded in the manifest by name, never a webhook."""

from __future__ import annotations

import json

from engine.cli.main import main
from engine.process.environ import held_back, worker_environ
from prereg.core.webhook_env import pass_env_problem
from prereg.document.seal import freeze
from tests.engine.test_pins import plan

ENV = {"PATH": "/bin", "LAB_TRACE_DIR": "/lab", "LAB_API_KEY": "k", "LAB_OTHER": "x",
       "MY_HOOK": "https://discord.com/api/webhooks/1/abcdefghijklmnop"}


def test_a_named_variable_reaches_the_workers_and_the_rest_stays_out():
    assert set(worker_environ(ENV)) == {"PATH", "PYTHONSAFEPATH"}
    passed = worker_environ(ENV, ["LAB_TRACE_DIR", "LAB_API_KEY", "MY_HOOK", "NOT_SET"])
    assert passed["LAB_TRACE_DIR"] == "/lab" and passed["LAB_API_KEY"] == "k"  # named on purpose: passed
    assert "MY_HOOK" not in passed and "LAB_OTHER" not in passed and "NOT_SET" not in passed
    assert held_back(ENV, ["LAB_TRACE_DIR"]) == ["LAB_API_KEY", "LAB_OTHER", "MY_HOOK"]


def test_a_bad_name_or_a_webhook_is_refused_with_why():
    assert pass_env_problem("LAB_TRACE_DIR") is None
    assert "not an environment variable's name" in pass_env_problem("1BAD")
    assert "not an environment variable's name" in pass_env_problem("A=B")
    assert "the notifier's alone" in pass_env_problem("FONTAINE_DISCORD_WEBHOOK_URL")


def test_the_flag_is_checked_and_recorded_by_name(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--policy", "hold", "--num-seeds", "1", "--pass-env", "DISCORD_WEBHOOK"]) == 2
    assert "the notifier's alone" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("LAB_TRACE_DIR", "/lab")
    run_dir = tmp_path / "r"
    assert main(["--policy", "hold", "--num-seeds", "1", "--episode-seconds", "0.2", "--video-draw", "none",
                 "--pass-env", "LAB_TRACE_DIR", "--pass-env", "LAB_UNSET", "--run-dir", str(run_dir)]) == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["pass_env"] == ["LAB_TRACE_DIR", "LAB_UNSET"]
    log = (run_dir / "driver.log").read_text() if (run_dir / "driver.log").exists() else capsys.readouterr().out
    assert "workers get LAB_TRACE_DIR, LAB_UNSET by name" in log and "not set here, so not passed: LAB_UNSET" in log
    assert "/lab" not in json.dumps(manifest)  # names, never values


def test_a_plan_names_them_and_a_bad_name_is_refused_at_its_line(tmp_path, capsys):
    bad = tmp_path / "bad.md"
    bad.write_text(plan("a\n    policy: scripted", "  pass_env: [LAB_TRACE_DIR, 9x]\n"))
    assert main(["--prereg", str(bad), "--arm", "a", "--run-dir", str(tmp_path / "rb")]) == 2
    err = capsys.readouterr().err
    assert "protocol.pass_env" in err and "'9x' is not an environment variable's name" in err
    good = tmp_path / "good.md"
    good.write_text(plan("a\n    policy: scripted", "  pass_env: [LAB_TRACE_DIR]\n", seconds=0.2))
    freeze(good)
    run_dir = tmp_path / "r"
    assert main(["--prereg", str(good), "--arm", "a", "--pass-env", "LAB_EXTRA", "--run-dir", str(run_dir)]) == 0
    assert json.loads((run_dir / "manifest.json").read_text())["config"]["pass_env"] == ["LAB_TRACE_DIR", "LAB_EXTRA"]
