"""The report: results.md + chart.png per run, one tool-owned section in the document, idempotent."""

from __future__ import annotations

import pytest

from prereg.core.errors import PreregError
from prereg.document.launch import resolve_launch
from prereg.document.read import load
from prereg.document.seal import amend, freeze, verify
from prereg.outputs.report import build_report
from tests.prereg.conftest import make_row

NOW = "2026-11-30T09:00:00Z"


def demo_runs(run_dir, demo):
    ref = run_dir("ref", [make_row(s, progress_final_cm=-1.5 if s == 2 else 0.0, predicts=20,
                                   zero_fallbacks=2 if s < 2 else 0) for s in range(6)],
                  status={"state": "done"}, launched=(demo, "tiny-reference"))
    masked = run_dir("masked", [make_row(s, progress_final_cm=0.5, predicts=20) for s in range(6)],
                     status={"state": "done"}, launched=(demo, "tiny-masked"))
    scripted = run_dir("scripted", [make_row(s, success=s != 3, progress_cm=8.0, progress_final_cm=7.5)
                                    for s in range(6)], status={"state": "done"}, launched=(demo, "scripted"))
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
    d = run_dir("x", [make_row(0)], status={"state": "done"}, manifest={"prereg": {"sha256": "0" * 64}},
                launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads
    assert not r.valid and any(c.name == "provenance" and not c.ok and "different registration" in c.text
                               for c in r.checks)


def test_stopped_early_run(demo, run_dir):
    d = run_dir("s", [make_row(0, success=True), make_row(1)], status={"state": "stopped", "reason": "STOP by console"},
                launched=(demo, "scripted"))
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
    # the discrete example pairs its base arm against ../runs/release_officialmap_a_100ep_30s: the
    # document goes one folder down so that ../runs is this test's (it was the worker's shared folder,
    # and a second pass under pytest-repeat found the first pass's directory there)
    (tmp_path / "preregs").mkdir()
    discrete = discrete.rename(tmp_path / "preregs" / discrete.name)
    flow_dir = discrete.parent.parent / "runs" / "release_officialmap_a_100ep_30s"
    assert flow_dir.is_relative_to(tmp_path)
    flow_dir.mkdir(parents=True)
    import json
    (flow_dir / "rows.jsonl").write_text("".join(json.dumps(make_row(s, success=s in (42, 73),
                                                                      progress_final_cm=0.0)) + "\n"
                                                 for s in range(100)))
    ar = run_dir("ar", [make_row(s, success=s == 73, progress_final_cm=-1.0 if s < 27 else 0.0)
                        for s in range(100)], status={"state": "done"}, launched=(discrete, "ar-reference"))
    rep = build_report(discrete, {"ar-reference": ar}, now=NOW)
    (c,) = rep.arms["ar-reference"].comparators
    assert c.paired.shared_seeds == 100 and c.paired.success_overlap == [73]
    assert c.paired.worse == 27 and c.paired.tied == 73
    v = {x.rule.condition: x.verdict for x in rep.verdicts}
    assert v["successes >= 1"] == "HOLDS" and v["successes == 0"] == "does not hold"
    assert verify(discrete).ok


def test_report_after_an_amendment(tmp_path, run_dir):
    from tests.prereg.test_prereg_document import GOOD

    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, data={"arms": [{"name": "c", "policy": "scripted"}],
                   "reads": {"comparator": {"arm": "b", "for": ["c"]}},
                   "decision_rules": [{"if": "c.delta_ci_low > 0", "then": "c beats b"}]})
    freeze(p)
    done = {"state": "done"}  # without one, a manifest written a moment ago is a driver starting (runstate)
    b = run_dir("b", [make_row(s, progress_final_cm=0.0) for s in range(10)], status=done, launched=(p, "b"))
    c = run_dir("c", [make_row(s, progress_final_cm=1.0 + 0.1 * s) for s in range(10)], status=done, launched=(p, "c"))
    rep = build_report(p, {"b": b, "c": c}, now=NOW)
    v = {x.rule.condition: x for x in rep.verdicts}
    assert v["c.delta_ci_low > 0"].verdict == "HOLDS", v["c.delta_ci_low > 0"].label
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
    d = run_dir("s", [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": d}, now=NOW)
    assert not rep.appended and "shipped example" in rep.not_appended_because
    assert demo.read_bytes() == before and (d / "results.md").exists()


def test_no_episodes_leaves_rules_undetermined(demo, run_dir):
    d = run_dir("empty", [], status={"state": "stopped", "reason": "STOP"}, launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    assert rep.arms["scripted"].reads.n == 0
    assert {v.verdict for v in rep.verdicts} == {"undetermined"}  # not "successes == 0 HOLDS" on nothing


# ---------------------------------------------------------------- provenance and verdicts on solid ground


def test_a_folder_with_only_rows_is_invalid_and_its_rules_undetermined(demo, run_dir):
    d = run_dir("rows-only", [make_row(s, success=True) for s in range(6)], status={"state": "done"})
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    r = rep.arms["scripted"].reads
    assert not r.valid
    assert any("no manifest.json" in c.text for c in r.checks if not c.ok)
    v = {x.rule.condition: x for x in rep.verdicts}
    assert v["scripted.successes >= 1"].verdict == "undetermined"
    assert "scripted: INVALID" in v["scripted.successes >= 1"].label
    assert "INVALID" in (d / "results.md").read_text()


def test_unregistered_flag_labels_every_output_in_its_first_line_and_never_appends(demo, run_dir):
    d = run_dir("elsewhere", [make_row(s, success=True) for s in range(6)], status={"state": "done"})
    before = demo.read_text()
    rep = build_report(demo, {"scripted": d}, now=NOW, unregistered=True)
    assert rep.summary_text().splitlines()[0].startswith("UNREGISTERED REPORT")
    assert (d / "results.md").read_text().splitlines()[0].startswith("**UNREGISTERED REPORT**")
    assert rep.registration_md.read_text().splitlines()[0].startswith("**UNREGISTERED REPORT**")
    assert not rep.appended and demo.read_text() == before
    assert any("unregistered" in n and "no manifest.json" in n for n in rep.arms["scripted"].reads.notes)


@pytest.mark.parametrize("what, manifest, reason", [
    ("truncated", None, "manifest.json: not JSON"),
    ("another arm", {"arm": "tiny-masked"}, "names arm 'tiny-masked', not 'scripted'"),
    ("other seeds", {"seeds": [0, 1, 2]}, "recorded seeds [0, 1, 2] is not the registered [0, 1, 2, 3, 4, 5]"),
    ("other budget", {"episode_seconds": 30.0}, "recorded episode_seconds 30.0 is not the registered 20.0"),
    ("other policy", {"policy": {"kind": "molmoact2", "checkpoint": "tiny"}}, "recorded policy 'molmoact2'"),
    ("no hash", {"prereg": None}, "no pre-registration hash"),
])
def test_a_manifest_that_is_not_this_arm_of_this_registration_is_invalid(demo, run_dir, what, manifest, reason):
    d = run_dir(what.replace(" ", "-"), [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                launched=(demo, "scripted"), manifest=manifest)
    if manifest is None:
        (d / "manifest.json").write_text((d / "manifest.json").read_text()[:40])
    rep = build_report(demo, {"scripted": d}, append=False, now=NOW)
    failed = [c.text for c in rep.arms["scripted"].reads.checks if not c.ok]
    assert any(reason in t for t in failed), failed
    assert "undetermined" in {v.verdict for v in rep.verdicts}


def test_model_arm_settings_are_compared(demo, run_dir):
    d = run_dir("masked", [make_row(s) for s in range(6)], status={"state": "done"},
                launched=(demo, "tiny-masked"))
    assert build_report(demo, {"tiny-masked": d}, append=False, now=NOW).arms["tiny-masked"].reads.valid
    import json
    m = json.loads((d / "manifest.json").read_text())
    m["policy"]["decode"] = "reference"
    m["policy"]["convmap"] = "identity"
    (d / "manifest.json").write_text(json.dumps(m))
    failed = [c.text for c in build_report(demo, {"tiny-masked": d}, append=False, now=NOW)
              .arms["tiny-masked"].reads.checks if not c.ok]
    assert any("recorded decode 'reference' is not the registered 'grammar-masked'" in t for t in failed)
    assert any("recorded convmap 'identity'" in t for t in failed)


def test_error_rows_are_not_successes_in_the_report(demo, run_dir):
    rows = [make_row(s, success=True, status="error" if s < 2 else "ok") for s in range(5)]
    rows.append(make_row(5, success=True, status="timeout"))
    d = run_dir("errs", rows, status={"state": "done"}, launched=(demo, "scripted"))
    r = build_report(demo, {"scripted": d}, append=False, now=NOW).arms["scripted"].reads
    assert r.successes == 3 and r.error_rows == 3 and r.n == 6 and not r.valid


def test_running_runs_are_undetermined_and_stopped_ones_provisional(demo, run_dir):
    rows = [make_row(s, success=True) for s in range(2)]
    live = run_dir("live", rows, status={"state": "running"}, launched=(demo, "scripted"))
    v = {x.rule.condition: x for x in build_report(demo, {"scripted": live}, append=False, now=NOW).verdicts}
    assert v["scripted.successes >= 1"].label.startswith("undetermined (scripted: the run is still running")
    misses = [make_row(s, success=False) for s in range(2)]
    stopped = run_dir("stopped", misses, status={"state": "stopped"}, launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": stopped}, append=False, now=NOW)
    v = {x.rule.condition: x for x in rep.verdicts}
    assert v["scripted.successes >= 1"].verdict == "provisional"
    assert v["scripted.successes >= 1"].label == "provisional at 2/6 (does not hold so far)"
    assert "provisional at 2/6" in rep.summary_text() and "[does not hold]" not in rep.summary_text()


def test_a_rule_no_completion_can_change_is_final_on_a_stopped_run_and_says_so(demo, run_dir):
    rows = [make_row(s, success=True) for s in range(2)]
    stopped = run_dir("stopped", rows, status={"state": "stopped"}, launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": stopped}, append=False, now=NOW)
    v = {x.rule.condition: x for x in rep.verdicts}["scripted.successes >= 1"]
    assert v.verdict == "HOLDS" and v.early
    # never a bare HOLDS on 2/6, and never "by curtailment": none was registered, the user stopped it
    assert v.label == "HOLDS (final: settled at 1/6: no completion of the plan could change it)"
    assert "[HOLDS (final: settled at 1/6: no completion of the plan could change it)]" in rep.summary_text()


def test_every_registered_rule_appears_even_without_its_arms(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    (runs["tiny-reference"] / "manifest.json").unlink()
    rep = build_report(demo, {"scripted": runs["scripted"]}, append=False, now=NOW)
    from prereg.document.read import load as load_doc
    assert [v.rule.condition for v in rep.verdicts] == [r.condition for r in load_doc(demo).rules()]
    v = {x.rule.condition: x for x in rep.verdicts}
    assert "no run of this arm" in v["tiny-masked.zero_fallbacks == 0 and tiny-reference.zero_fallbacks > 0"].label
    text = rep.registration_md.read_text()
    for r in load_doc(demo).rules():
        assert r.condition in text
    for arm in ("scripted", "tiny-reference", "tiny-masked", "tiny-flow"):
        assert f"| {arm} |" in text


def test_a_paired_ci_needs_the_minimum_of_shared_seeds(demo, run_dir):
    from prereg.stats.reads import MIN_PAIRED_SEEDS

    few = MIN_PAIRED_SEEDS - 1
    ref = run_dir("ref", [make_row(s, progress_final_cm=0.0) for s in range(few)], status={"state": "done"},
                  launched=(demo, "tiny-reference"))
    masked = run_dir("masked", [make_row(s, progress_final_cm=1.0 + s) for s in range(6)], status={"state": "done"},
                     launched=(demo, "tiny-masked"))
    rep = build_report(demo, {"tiny-masked": masked, "tiny-reference": ref}, append=False, now=NOW)
    (c,) = rep.arms["tiny-masked"].comparators
    assert c.paired.shared_seeds == few and c.paired.delta_ci is None
    assert f"fewer than the minimum of {MIN_PAIRED_SEEDS}" in c.paired.ci_method


def test_dropped_values_are_counted(demo, run_dir):
    rows = [make_row(s, progress_final_cm=float("nan") if s == 0 else (None if s == 1 else 1.0)) for s in range(6)]
    d = run_dir("nan", rows, status={"state": "done"}, launched=(demo, "tiny-masked"))
    ref = run_dir("ref", [make_row(s, progress_final_cm=0.0) for s in range(6)], status={"state": "done"},
                  launched=(demo, "tiny-reference"))
    rep = build_report(demo, {"tiny-masked": d, "tiny-reference": ref}, append=False, now=NOW)
    r = rep.arms["tiny-masked"].reads
    assert r.dropped["progress_final_cm"] == 2 and r.progress_final_mean == 1.0
    (c,) = rep.arms["tiny-masked"].comparators
    assert c.paired.shared_seeds == 4 and c.paired.dropped_unpaired == 2
    md = (d / "results.md").read_text()
    assert "Dropped values" in md and "progress_final_cm 2" in md and "2 seeds with rows on both sides not paired" in md


def test_verdict_numbers_have_the_digits_that_tell_them_apart():
    from prereg.document.read import parse
    from prereg.stats.reads import evaluate_rule
    from tests.prereg.test_prereg_document import GOOD

    doc = parse(GOOD.replace("a.successes >= 1", "a.progress_final_mean < b.progress_final_mean"), "t.md")
    (rule,) = doc.rules()
    v = evaluate_rule(rule, {"a": {"progress_final_mean": 0.162301}, "b": {"progress_final_mean": 0.162349}})
    assert v.verdict == "HOLDS" and "= 0.1623 < b.progress_final_mean = 0.16235" in v.detail


def test_registration_results_file_and_the_paired_delta_chart(demo, run_dir):
    runs = demo_runs(run_dir, demo)
    rep = build_report(demo, runs, now=NOW)
    reg = rep.registration_md
    assert reg.parent == runs["scripted"].parent and reg.name == "demo-tiny-engine.results.md"
    text = reg.read_text()
    assert "## Paired comparisons" in text and "tiny-masked - tiny-reference" in text
    (chart,) = rep.paired_charts
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"]({chart.name})" in text
    assert str(reg) in demo.read_text()  # the appended section points at it


def test_every_report_carries_every_registered_rule(demo, run_dir):
    from prereg.document.read import load as load_doc

    runs = demo_runs(run_dir, demo)
    build_report(demo, {"scripted": runs["scripted"]}, now=NOW)
    conditions = [r.condition for r in load_doc(demo).rules()]
    for text in ((runs["scripted"] / "results.md").read_text(), demo.read_text()):
        assert all(c in text for c in conditions)


def test_a_run_not_of_this_registration_is_never_appended_and_a_new_report_replaces_the_old(demo, run_dir):
    import json

    good = [make_row(s, success=True, progress_cm=8.0, progress_final_cm=7.5) for s in range(6)]
    tampered = run_dir("tampered", good, status={"state": "done"}, launched=(demo, "scripted"))
    m = json.loads((tampered / "manifest.json").read_text())
    m["prereg"]["sha256"] = "0" * 64  # a copied run, edited to look like another registration's
    (tampered / "manifest.json").write_text(json.dumps(m))
    before = demo.read_text()
    rep = build_report(demo, {"scripted": tampered}, now=NOW)
    assert not rep.appended and "not a run of this registration" in rep.not_appended_because
    assert demo.read_text() == before and rep.registration_md.exists()  # the results file still says why
    first = run_dir("first", [make_row(s, success=s < 3) for s in range(6)], status={"state": "done"},
                    launched=(demo, "scripted"))
    build_report(demo, {"scripted": first}, now=NOW)
    once = demo.read_text()
    assert once.count("fontaine:results begin") == 1 and "fontaine:replaced" not in once
    ok = run_dir("ok", good, status={"state": "done"}, launched=(demo, "scripted"))
    build_report(demo, {"scripted": ok}, now="2026-12-01T10:00:00Z")
    text = demo.read_text()
    assert text.count("fontaine:results begin") == 1  # one section per arm set, replaced
    current, _, history = text.partition("<!-- fontaine:replaced -->")
    assert "successes **6 / 6**" in current and "successes **3 / 6**" in history
    assert "Replaced at 2026-12-01 10:00Z: Results: scripted (2026-11-30 09:00Z" in history and "sha256 " in history
    build_report(demo, {"scripted": ok}, now="2026-12-01T10:00:00Z")
    assert demo.read_text() == text  # the same report again: nothing new to keep
    build_report(demo, {"scripted": first}, now="2026-12-01T11:00:00Z")
    third = demo.read_text()
    assert third.count("<details>") == 2 and third.count("_Earlier reports") == 1 and verify(demo).ok


def test_a_resumed_runs_resumes_are_listed_in_its_reads(demo, run_dir):
    from prereg.document.layout import RESULTS_BEGIN_RE, RESULTS_END

    # the driver appends one entry to the manifest's "resumes" per `fontaine-eval --resume` (engine/run/driver.py)
    resumes = [{"at": at, "argv": ["fontaine-eval", "--resume", "runs/scripted"], "host": "lab-1"}
               for at in ("2026-11-29T08:00:00Z", "2026-11-29T13:30:00Z")]
    d = run_dir("scripted", [make_row(s, success=True, progress_cm=8.0, progress_final_cm=7.5) for s in range(6)],
                status={"state": "done"}, manifest={"resumes": resumes}, launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": d}, now=NOW)
    arm = rep.arms["scripted"]
    assert arm.reads.valid and rep.appended  # a resume is not a provenance problem
    assert arm.evidence.resumes == ["2026-11-29T08:00:00Z", "2026-11-29T13:30:00Z"]
    (note,) = [n for n in arm.reads.notes if n.startswith("resumed")]
    assert note.startswith("resumed 2 time(s), at 2026-11-29T08:00:00Z, 2026-11-29T13:30:00Z:")
    assert note in rep.as_dict()["arms"]["scripted"]["reads"]["notes"]
    assert f"- Note: {note}" in (d / "results.md").read_text().splitlines()
    lines = demo.read_text().splitlines()
    (begin,) = [i for i, line in enumerate(lines) if RESULTS_BEGIN_RE.match(line)]
    section = lines[begin:lines.index(RESULTS_END, begin)]
    assert f"- Note: {note}" in section  # in the document's results section, not only beside the run
    assert f"- Note: {note}" in rep.registration_md.read_text().splitlines()
    plain = run_dir("plain", [make_row(s) for s in range(6)], status={"state": "done"}, launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": plain}, append=False, now=NOW)
    assert not any(n.startswith("resumed") for n in rep.arms["scripted"].reads.notes)


def test_a_rule_settled_early_on_a_complete_run_is_not_said_curtailed(demo, run_dir):
    """The demo (no curtailment registered, every seed run) read 'settled at 1/6 by curtailment', as
    if the run had been cut short. Every row was read: the detail says from when it could not change."""
    done = run_dir("done", [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                   launched=(demo, "scripted"))
    rep = build_report(demo, {"scripted": done}, append=False, now=NOW)
    v = {x.rule.condition: x for x in rep.verdicts}["scripted.successes >= 1"]
    assert v.verdict == "HOLDS" and not v.early and v.label == "HOLDS"
    assert v.detail.endswith("; fixed from 1/6 on: no later row could change it"), v.detail
    assert "by curtailment" not in rep.summary_text() and "by curtailment" not in (done / "results.md").read_text()
