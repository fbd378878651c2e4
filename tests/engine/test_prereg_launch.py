"""fontaine-eval under a pre-registration: the launch guard, and the demo end to end
(launch from the frozen document, then the report with its chart)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO, read_rows, run_eval, run_evals_here

DEMO = REPO / "prereg" / "examples" / "demo.md"


def test_an_edited_frozen_document_is_refused(tmp_path):
    doc = tmp_path / "demo.md"
    text = DEMO.read_text()
    doc.write_text(text.replace("episode_seconds: 20", "episode_seconds: 25", 1))
    out = run_eval("--prereg", str(doc), "--arm", "scripted", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "never edited" in out.stderr or "changed" in out.stderr
    assert not (tmp_path / "r").exists()


def test_an_unknown_arm_is_refused(tmp_path):
    out = run_eval("--prereg", str(DEMO), "--arm", "no-such-arm", "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 2 and "no-such-arm" in out.stderr


@pytest.mark.slow
def test_the_demo_launches_from_its_frozen_document_and_reports(tmp_path):
    doc = tmp_path / "demo.md"
    shutil.copyfile(DEMO, doc)  # a copy keeps the frozen hash and may receive results
    run_dir = tmp_path / "runs" / "demo-scripted"
    out = run_eval("--prereg", str(doc), "--arm", "scripted", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    launch = json.loads(subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "launch-spec", str(doc), "--arm", "scripted"],
                                       cwd=REPO, capture_output=True, text=True, check=True).stdout)
    assert manifest["prereg"]["sha256"] == launch["prereg_sha256"]
    assert manifest["seeds"] == launch["seeds"] and manifest["episode_seconds"] == launch["episode_seconds"]
    assert manifest["gates"]["gpu_hours"] == launch["gates"]["gpu_hours"]
    rows = read_rows(run_dir)
    assert sorted(r["seed"] for r in rows) == launch["seeds"]

    rep = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "report", str(doc), "--run", f"scripted={run_dir}"],
                         cwd=REPO, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert (run_dir / "results.md").exists() and (run_dir / "chart.png").stat().st_size > 1000
    assert "HOLDS" in rep.stdout  # the oracle's successes make the harness rule hold
    assert "validity  VALID" in rep.stdout  # the engine's own manifest establishes the provenance
    assert (run_dir.parent / "demo-tiny-engine.results.md").exists()  # the registration's results file
    assert "fontaine:results" in doc.read_text()  # appended to the copy, the frozen parts untouched
    verify = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "verify", str(doc)], cwd=REPO, capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.slow
def test_the_demo_model_arms_report_valid_with_the_paired_delta_chart(tmp_path):
    """tiny-masked and its comparator tiny-reference, launched by the real engine, report VALID from
    their own manifests, and the report draws the paired-delta chart. The demo's plan on 2 seeds of
    2 s, frozen afresh: pairs to draw and a distance table to read are all these checks need (its 6 seeds
    of 20 s took about 100 s of the suite on 2 cores, 3 of 10 s still 84 s, for the same checks; at 5 s the
    reference decode's 10 predicts, 1.2 s each, were most of what was left). The two runs are made in this
    process (tests.helpers.run_evals_here): a launch paid the tiny model's ~10 s of imports once more."""
    from matplotlib.image import imread

    from prereg.document.seal import freeze

    doc = tmp_path / "demo.md"
    text = DEMO.read_text()
    text = text[:text.index("<!-- fontaine:sealed")]  # the plan, unfrozen
    assert "  seeds: 0-5\n" in text and "  episode_seconds: 20\n" in text
    doc.write_text(text.replace("  seeds: 0-5\n", "  seeds: 0-1\n").replace("  episode_seconds: 20\n",
                                                                            "  episode_seconds: 2\n"))
    freeze(doc)
    runs = tmp_path / "runs"
    # both arms' real runs, one after the other in this process
    done, err = run_evals_here({arm: ["--prereg", str(doc), "--arm", arm, "--run-dir", str(runs / arm)]
                                for arm in ("tiny-reference", "tiny-masked")})
    assert all(code == 0 for code, _ in done.values()), (done, err)
    rep = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "report", str(doc), "--run",
                          f"tiny-masked={runs / 'tiny-masked'}"], cwd=REPO, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.count("validity  VALID") == 1 and "vs tiny-reference: progress_final_cm delta" in rep.stdout
    paired = runs / "demo-tiny-engine.paired.tiny-masked-vs-tiny-reference.png"
    assert paired.stat().st_size > 1000
    results = (runs / "demo-tiny-engine.results.md").read_text()
    assert f"]({paired.name})" in results and "| tiny-reference | base | `tiny-reference` | VALID |" in results
    assert "## Boat-to-disk distance by second" in results and "\n| 2 | " in results  # 2 s: t = 0..2
    assert "\n| 3 | " not in results
    chart = imread(runs / "tiny-masked" / "chart.png")
    assert chart.shape[0] > chart.shape[1]  # the per-seed panel and the paired-delta panel below it
