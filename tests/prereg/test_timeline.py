"""A timeline, and rules after data are exploratory (issue 32, points 2 and 3): every rule carries the
time its section was frozen; one frozen after the first row of a run it reads is reported as
exploratory everywhere (results.md, results.json, the document, the console, Discord), never as a
verdict, and never stops a run; `show` prints the timeline and where each section's gates come from;
reporting again supersedes every other results section that answered the same question."""

from __future__ import annotations

import json

from prereg.outputs.cli import main as prereg_main
from prereg.outputs.report import build_report, read_registration
from prereg.stats.curtail import check_run
from prereg.stats.reads import EXPLORATORY, HOLDS
from tests.prereg.conftest import make_row, scripted_doc

ROWS_AT = "2026-01-01T00:10:00Z"  # the run's rows finished from here on


def rows(n=6, success=True, at=ROWS_AT):
    return [make_row(s, success=success, finished_at=at) for s in range(n)]


def rule_after(tmp_path, frozen: str, rule="a.successes >= 5"):
    return scripted_doc(tmp_path, amendments=[({"decision_rules": [{"if": rule, "then": "a is good"}]}, frozen)])


def test_a_rule_frozen_after_the_first_row_is_exploratory_everywhere(tmp_path, run_dir):
    doc = rule_after(tmp_path, "2026-01-01T00:20:00Z")
    run = run_dir("a", rows(), status={"state": "done"}, launched=(doc, "a"))
    rep = build_report(doc, {"a": run}, now="2026-01-01T01:00:00Z")
    (v,) = rep.verdicts
    assert v.verdict == EXPLORATORY and v.frozen_at == "2026-01-01T00:20:00Z" and v.data_at == f"a {ROWS_AT}"
    assert v.label.startswith("exploratory (frozen after the data existed: frozen 2026-01-01T00:20:00Z, after the "
                              f"first row of a's run ({ROWS_AT}); on the rows: HOLDS)")
    res = json.loads((run / "results.json").read_text())
    (j,) = res["verdicts"]
    assert j["verdict"] == EXPLORATORY and j["exploratory"] and j["on_rows"] == HOLDS
    assert j["frozen_at"] == "2026-01-01T00:20:00Z"
    assert "**exploratory (frozen after the data existed" in (run / "results.md").read_text()
    assert "**exploratory (frozen after the data existed" in doc.read_text()  # the document's results section
    assert "[exploratory (frozen after the data existed" in rep.summary_text()  # the console line of `report`
    assert "**HOLDS**" not in doc.read_text().split("fontaine:results begin")[1]
    from console.notify.wording import verdict_lines

    (line,) = verdict_lines(res)  # the Discord results post: whole, never cut mid-phrase
    assert line == "[exploratory (frozen after the data existed)] `a.successes >= 5`"


def test_the_compare_view_shows_the_rule_as_exploratory(tmp_path, run_dir):
    from console.compare import compare_view

    doc = rule_after(tmp_path, "2026-01-01T00:20:00Z")
    run = run_dir("a", rows(), status={"state": "done"}, launched=(doc, "a"))
    view = compare_view("two-oracles", str(doc), {"a": run})
    assert view.verdicts[0].startswith("[exploratory (frozen after the data existed")


def test_a_rule_frozen_before_the_first_row_is_a_verdict(tmp_path, run_dir):
    doc = rule_after(tmp_path, "2026-01-01T00:05:00Z")
    run = run_dir("a", rows(), status={"state": "done"}, launched=(doc, "a"))
    _, _, judgement = read_registration(doc, {"a": run})
    (v,) = judgement.verdicts
    assert v.verdict == HOLDS and v.frozen_at == "2026-01-01T00:05:00Z" and v.data_at == f"a {ROWS_AT}"
    assert v.as_dict()["exploratory"] is False


def test_the_first_row_is_the_earliest_row_not_the_first_line(tmp_path, run_dir):
    doc = rule_after(tmp_path, "2026-01-01T00:20:00Z")
    late = rows(6, at="2026-01-01T00:30:00Z")
    late[4]["finished_at"] = "2026-01-01T00:15:00Z"  # one episode finished before the amendment was frozen
    run = run_dir("a", late, status={"state": "done"}, launched=(doc, "a"))
    _, _, judgement = read_registration(doc, {"a": run})
    assert judgement.verdicts[0].verdict == EXPLORATORY


def test_without_row_times_the_runs_start_dates_its_data(tmp_path, run_dir):
    doc = rule_after(tmp_path, "2026-01-01T00:20:00Z")
    run = run_dir("a", [make_row(s, success=True) for s in range(6)], status={"state": "done"},
                  manifest={"started_at": "2026-01-01T00:09:00Z"}, launched=(doc, "a"))
    _, _, judgement = read_registration(doc, {"a": run})
    assert judgement.verdicts[0].verdict == EXPLORATORY and judgement.verdicts[0].data_at == "a 2026-01-01T00:09:00Z"


def test_a_rule_frozen_after_the_run_began_never_stops_it(tmp_path):
    doc = scripted_doc(tmp_path, amendments=[(
        {"decision_rules": [{"if": "a.successes >= 1", "then": "x"}], "gates": {"decided": "stop"}},
        "2026-01-01T00:20:00Z")])
    prereg = {"path": str(doc)}
    early = rows(2, at="2026-01-01T00:10:00Z")
    assert check_run(prereg, "a", early, tmp_path) is None  # written once a's rows existed: not read
    before = scripted_doc(tmp_path / "b", amendments=[({"decision_rules": [{"if": "a.successes >= 1", "then": "x"}]},
                                                       "2026-01-01T00:05:00Z")])
    settled = check_run({"path": str(before)}, "a", early, tmp_path)
    assert settled is not None and settled["all"] and settled["rules"][0]["key"] == "amendment-1#1"


def test_show_prints_the_timeline_and_where_each_sections_gates_come_from(tmp_path, run_dir, capsys):
    doc = scripted_doc(tmp_path, amendments=[(
        {"arms": [{"name": "b", "policy": "scripted"}], "gates": {"gpu_hours": 0.2},
         "decision_rules": [{"if": "a.successes >= 5", "then": "x"}]}, "2026-01-01T00:20:00Z")])
    run = run_dir("two-oracles-a-20260101-000900", rows(), status={"state": "done"},
                  manifest={"started_at": "2026-01-01T00:09:00Z"}, launched=(doc, "a"))
    build_report(doc, {"a": run}, now="2026-01-01T01:00:00Z")
    assert prereg_main(["show", str(doc), "--runs-dir", str(run.parent)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("timeline")))
    events = [x.strip() for x in lines[start + 1:]]
    assert events[0].startswith("2026-01-01T00:00:00Z") and "froze base" in events[0]
    assert events[1].startswith("2026-01-01T00:09:00Z") and f"launched a from base: run {run.name}" in events[1]
    assert events[2].startswith(ROWS_AT) and f"first row of run {run.name} (a)" in events[2]
    assert "froze amendment-1" in events[3]
    assert events[4].startswith("2026-01-01T00:20:00Z   !! amendment-1 was frozen after the first row of run")
    assert "its rules on a are exploratory against that run" in events[4]
    assert any("reported run" in e for e in events) and any("results section for a appended" in e for e in events)
    assert "  inherits gates: pace (from base)" not in out  # the base sets no pace
    assert "  inherits protocol: episode_seconds (from base), seeds (from base), workers (from base)" in out
    assert "  inherits reads: primary (from base)" in out


def test_an_amendments_gates_without_decided_inherit_decided_stop_and_show_says_so(tmp_path, capsys):
    from prereg.document.read import load
    from prereg.document.seal import amend, freeze
    from tests.prereg.conftest import SCRIPTED_DOC

    src = tmp_path / "stop.md"
    src.write_text(SCRIPTED_DOC.replace("gates:\n  gpu_hours: 0.1\n", "gates:\n  gpu_hours: 0.1\n  decided: stop\n"))
    freeze(src, now="2026-01-01T00:00:00Z")
    amend(src, title="b", why="Why.", data={"arms": [{"name": "b", "policy": "scripted"}], "gates": {"gpu_hours": 0.3}})
    freeze(src, now="2026-01-01T00:01:00Z")
    sm = load(src).section_model("amendment-1")
    assert sm.gates.decided == "stop" and sm.gates.gpu_hours == 0.3  # keys merge one by one: decided is inherited
    assert sm.inherited("gates") == {"decided": "base"}
    assert prereg_main(["show", str(src), "--runs-dir", str(tmp_path / "none")]) == 0
    assert "  inherits gates: decided (from base)" in capsys.readouterr().out


def test_reporting_again_supersedes_every_section_that_answered_the_same_question(tmp_path, run_dir):
    from prereg.document.read import load

    doc = scripted_doc(tmp_path, amendments=[(
        {"arms": [{"name": "b", "policy": "scripted"}],
         "decision_rules": [{"if": "b.successes > a.successes", "then": "b is better"}]}, "2026-01-01T00:01:00Z")])
    a = run_dir("a", rows(6, success=False), status={"state": "done"}, launched=(doc, "a"))
    b2 = run_dir("b2", rows(6, success=True), status={"state": "done"}, launched=(doc, "b"))
    b = run_dir("b", rows(6, success=False), status={"state": "done"}, launched=(doc, "b"))
    first = build_report(doc, {"a": a, "b": b2}, now="2026-01-01T01:00:00Z")
    assert first.verdicts[0].verdict == HOLDS
    build_report(doc, {"a": a, "b": b}, now="2026-01-01T02:00:00Z")  # the same arm set: replaced, not added
    blocks = load(doc).layout.results
    assert [x.key for x in blocks] == ["arms=a,b"] and not blocks[0].superseded
    build_report(doc, {"b": b}, now="2026-01-01T03:00:00Z")  # b again, alone: the a,b section is superseded
    blocks = load(doc).layout.results
    assert [(x.key, x.superseded) for x in blocks] == [("arms=a,b", True), ("arms=b", False)]
    assert blocks[0].attrs["by"] == "arms=b" and blocks[0].attrs["superseded"] == "2026-01-01T03:00:00Z"
    text = doc.read_text()
    assert "> **Superseded** at 2026-01-01 03:00Z by the results section for b" in text
    build_report(doc, {"a": a}, now="2026-01-01T04:00:00Z")  # a's section is new; the superseded one stays as it was
    blocks = load(doc).layout.results
    assert [(x.key, x.superseded) for x in blocks] == [("arms=a,b", True), ("arms=b", False), ("arms=a", False)]
    assert blocks[0].attrs["superseded"] == "2026-01-01T03:00:00Z"
    build_report(doc, {"a": a, "b": b}, now="2026-01-01T05:00:00Z")  # a,b again: live again, the others superseded
    blocks = load(doc).layout.results
    assert [(x.key, x.superseded) for x in blocks] == [("arms=a,b", False), ("arms=b", True), ("arms=a", True)]
    from prereg.document.seal import verify

    assert verify(doc).ok
