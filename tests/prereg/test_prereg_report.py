"""The report: results.md + chart.png per run, one tool-owned section in the document, idempotent."""

from __future__ import annotations

import pytest

from prereg.document import load
from prereg.errors import PreregError
from prereg.launch import resolve_launch
from prereg.report import build_report
from prereg.seal import amend, freeze, verify

from conftest import make_row

NOW = "2026-11-30T09:00:00Z"


def demo_runs(run_dir, demo):
    sha = resolve_launch(demo, "tiny-masked").prereg_sha256
    man = lambda arm: {"arm": arm, "prereg": {"id": "demo-tiny-engine", "sha256": sha}}  # noqa: E731
    ref = run_dir("ref", [make_row(s, progress_final_cm=-1.5 if s == 2 else 0.0, predicts=20,
                                   zero_fallbacks=2 if s < 2 else 0) for s in range(6)],
                  status={"state": "done"}, manifest=man("tiny-reference"))
    masked = run_dir("masked", [make_row(s, progress_final_cm=0.5, predicts=20) for s in range(6)],
                     status={"state": "done"}, manifest=man("tiny-masked"))
    scripted = run_dir("scripted", [make_row(s, success=s != 3, progress_cm=8.0, progress_final_cm=7.5)
                                    for s in range(6)], status={"state": "done"}, manifest=man("scripted"))
    return {"tiny-reference": ref, "tiny-masked": masked, "scripted": scripted}


def test_report_writes_files_and_appends_once(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    frozen_text = demo.read_text()
    rep = build_report(demo, runs, now=NOW)
    for d in runs.values():
        assert (d / "results.md").read_text().startswith("# Results:")
        png = (d / "chart.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    masked = rep.arms["tiny-masked"]
    (cmp_,) = masked.comparators
    assert cmp_.paired.shared_seeds == 6 and cmp_.paired.better == 6
    assert cmp_.paired.delta_ci is not None
    assert rep.arms["scripted"].reads.successes == 5
    assert all(r.reads.valid for r in rep.arms.values())
    verdicts = {v.rule.condition: v.verdict for v in rep.verdicts}
    assert verdicts["scripted.successes >= 1"] == "HOLDS"
    assert verdicts["tiny-masked.zero_fallbacks == 0 and tiny-reference.zero_fallbacks > 0"] == "HOLDS"
    once = demo.read_text()
    assert once.startswith(frozen_text.rstrip("\n"))  # appended after everything, nothing above changed
    assert verify(demo).ok
    assert once.count("fontaine:results begin") == 1
    build_report(demo, runs, now=NOW)
    assert demo.read_text() == once  # re-reporting replaces its own section
    build_report(demo, runs, now="2026-12-01T10:00:00Z")
    again = demo.read_text()
    assert again.count("fontaine:results begin") == 1 and "2026-12-01 10:00Z" in again
    resolve_launch(demo, "scripted")


def test_a_different_arm_set_gets_its_own_section_and_notes_survive(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    build_report(demo, {"scripted": runs["scripted"]}, now=NOW)
    with demo.open("a") as fh:
        fh.write("\nInterpretation, written by a person after the results.\n")
    build_report(demo, runs, now=NOW)
    build_report(demo, {"scripted": runs["scripted"]}, now=NOW)
    text = demo.read_text()
    assert text.count("fontaine:results begin") == 2
    assert "Interpretation, written by a person" in text
    assert verify(demo).ok


def test_comparator_arm_without_its_run_is_said(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    (runs["tiny-reference"] / "manifest.json").unlink()  # nothing beside it says it is the comparator arm's run
    rep = build_report(demo, {"tiny-masked": runs["tiny-masked"]}, append=False, now=NOW)
    (c,) = rep.arms["tiny-masked"].comparators
    assert c.paired is None and "--run tiny-reference=" in c.note
    assert "fontaine:results" not in demo.read_text()
    undetermined = [v for v in rep.verdicts if v.verdict == "undetermined"]
    assert undetermined  # the rules that need tiny-reference cannot be judged


def test_manifest_from_another_registration_is_invalid(demo, run_dir):
    d = run_dir("x", [make_row(0)], status={"state": "done"}, manifest={"prereg": {"sha256": "0" * 64}})
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads
    assert not r.valid and any(c.name == "prereg_sha256" and not c.ok for c in r.checks)


def test_stopped_early_run(demo, run_dir):
    d = run_dir("s", [make_row(0, success=True), make_row(1)], status={"state": "stopped", "reason": "STOP by console"})
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads
    assert r.stopped_early and "1 / 2 achieved (of 6 planned; stopped early: STOP by console)" in r.primary_text()
    assert "achieved" in (d / "results.md").read_text()


def test_report_refuses_modified_or_unknown(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    with pytest.raises(PreregError, match="no arm 'nope'"):
        build_report(demo, {"nope": runs["scripted"]})
    with pytest.raises(PreregError, match="no such run directory"):
        build_report(demo, {"scripted": demo.parent / "missing"})
    demo.write_text(demo.read_text().replace("Seeds 0-5", "Seeds 0-6"))
    with pytest.raises(PreregError, match="changed since it was frozen"):
        build_report(demo, {"scripted": runs["scripted"]})


def test_comparator_run_dir_relative_to_the_document(discrete, run_dir, tmp_path):
    # the discrete example pairs its base arm against ../runs/release_officialmap_a_100ep_30s
    flow_dir = discrete.parent.parent / "runs" / "release_officialmap_a_100ep_30s"
    flow_dir.mkdir(parents=True)
    import json
    (flow_dir / "rows.jsonl").write_text("".join(json.dumps(make_row(s, success=s in (42, 73),
                                                                      progress_final_cm=0.0)) + "\n"
                                                 for s in range(100)))
    ar = run_dir("ar", [make_row(s, success=s == 73, progress_final_cm=-1.0 if s < 27 else 0.0)
                        for s in range(100)], status={"state": "done"})
    rep = build_report(discrete, {"ar-reference": ar}, now=NOW)
    (c,) = rep.arms["ar-reference"].comparators
    assert c.paired.shared_seeds == 100 and c.paired.success_overlap == [73]
    assert c.paired.worse == 27 and c.paired.tied == 73
    v = {x.rule.condition: x.verdict for x in rep.verdicts}
    assert v["successes >= 1"] == "HOLDS" and v["successes == 0"] == "does not hold"
    assert verify(discrete).ok


def test_report_after_an_amendment(tmp_path, run_dir):
    from test_prereg_document import GOOD

    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, data={"arms": [{"name": "c", "policy": "scripted"}],
                   "reads": {"comparator": {"arm": "b", "for": ["c"]}},
                   "decision_rules": [{"if": "c.delta_ci_low > 0", "then": "c beats b"}]})
    freeze(p)
    b = run_dir("b", [make_row(s, progress_final_cm=0.0) for s in range(10)])
    c = run_dir("c", [make_row(s, progress_final_cm=1.0 + 0.1 * s) for s in range(10)])
    rep = build_report(p, {"b": b, "c": c}, now=NOW)
    v = {x.rule.condition: x for x in rep.verdicts}
    assert v["c.delta_ci_low > 0"].verdict == "HOLDS"
    assert rep.arms["c"].section == "amendment-1"
    assert verify(p).ok and load(p).problems == []


def test_comparator_run_found_beside_the_reported_run(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    other = run_dir("ref-old", [make_row(s, progress_final_cm=9.0) for s in range(6)],
                    status={"state": "failed"},
                    manifest={"arm": "tiny-reference", "prereg": {"sha256": "f" * 64}})  # another registration
    rep = build_report(demo, {"tiny-masked": runs["tiny-masked"]}, append=False, now=NOW)
    (c,) = rep.arms["tiny-masked"].comparators
    assert c.paired is not None and str(runs["tiny-reference"]) in c.note and str(other) not in c.note
    v = {x.rule.condition: x.verdict for x in rep.verdicts}
    assert v["tiny-masked.zero_fallbacks == 0 and tiny-reference.zero_fallbacks > 0"] == "HOLDS"


def test_shipped_examples_are_never_written(examples_dir, run_dir):
    demo = examples_dir / "demo.md"
    before = demo.read_bytes()
    d = run_dir("s", [make_row(s, success=True) for s in range(6)], status={"state": "done"})
    rep = build_report(demo, {"scripted": d}, now=NOW)
    assert not rep.appended and "shipped example" in rep.not_appended_because
    assert demo.read_bytes() == before and (d / "results.md").exists()


def test_no_episodes_leaves_rules_undetermined(demo, run_dir):
    d = run_dir("empty", [], status={"state": "stopped", "reason": "STOP"})
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    assert rep.arms["scripted"].reads.n == 0
    assert {v.verdict for v in rep.verdicts} == {"undetermined"}  # not "successes == 0 HOLDS" on nothing
