"""One run, one story (issue 42): every surface states the same state, validity and verdict in the same words.

Each case below is a run as a researcher meets it (live, done, died, stopped, refused, INVALID, a
comparison decided and undecided, a hold unfinished, a rule frozen after the data). The report is
built once; then results.md, the terminal's summary, results.html, the Discord results post and
the console's run header are each parsed back, and each must state the story's headline, word for
word: '<state> · <validity> · <the plan's decision>'. A property test then feeds rows of every
shape the classifier accepts to every renderer of an episode's outcome.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.notify.messages import results_post
from console.notify.snapshot import read_snapshot
from console.render import OUTCOME_GLYPH, OUTCOME_STYLE, header_text, recent_row_cells
from console.runs import read_run
from prereg import rundir as rd
from prereg.outputs.page_seeds import OUTCOME_COLORS
from prereg.outputs.report import build_report
from prereg.outputs.report_markdown import HEADLINE, outcomes_line
from prereg.rundir.files import write_json_atomic
from prereg.rundir.outcomes import EPISODE_OUTCOMES, OUTCOME_LABELS, OUTCOME_RULES, RowCounts, episode_outcome
from prereg.rundir.rows import complete_row
from prereg.stats.story import INVALID, PENDING, SEP, VALID, Story
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run, row
from tests.prereg.conftest import make_row, scripted_doc

NOW = "2026-12-01T12:00:00Z"
A_WINS = [s < 4 for s in range(12)]  # clumsy wins seeds 0-3, steady every seed: steady better at seed 11
B_WINS = [True] * 12


# ---------------------------------------------------------------- reading each surface back


def from_markdown(run) -> str:
    lines = (run / rd.RESULTS).read_text().splitlines()
    at = lines.index(f"## {HEADLINE}")
    return next(line for line in lines[at + 1:] if line.startswith("**")).strip("*")


def from_page(run) -> str:
    m = re.search(r'data-k="headline" data-v="([^"]*)"', (run / rd.RESULTS_HTML).read_text())
    return html.unescape(m.group(1))


def from_post(run) -> str:
    first = results_post(read_snapshot(run)).description.splitlines()[0]
    return re.sub(r"\\([\\*_~`|>])", r"\1", first.strip("*"))  # Discord's escapes undone


def from_console(run) -> str:
    text = header_text(read_run(run), False, "").plain
    return next(line for line in text.splitlines() if line.startswith("report: "))[len("report: "):]


def from_terminal(rep, run) -> str:
    return next(line for line in rep.summary_text().splitlines() if line.startswith(f"run {run.name}: ")
                ).split(": ", 1)[1]


def told(rep, run) -> Story:
    """The story results.json records, after checking that every surface states its headline as it is."""
    story = Story.from_dict(json.loads((run / rd.RESULTS_JSON).read_text())["story"])
    surfaces = {"results.md": from_markdown(run), "results.html": from_page(run), "Discord": from_post(run),
                "console": from_console(run), "terminal": from_terminal(rep, run)}
    assert surfaces == dict.fromkeys(surfaces, story.headline), surfaces
    state, validity, verdict = story.headline.split(SEP, 2)
    assert (state, validity, verdict) == (story.state, story.validity, story.verdict)
    return story


# ---------------------------------------------------------------- the runs


def one_arm(tmp_path, run_dir, demo, name, rows, status, **kw):
    return run_dir(name, rows, status=status, launched=(demo, "scripted"), **kw)


def six(success=True):
    return [make_row(s, success=success) for s in range(6)]


def gone_pid() -> dict:
    """pid.json of a process that has exited: the run died."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(p.pid).create_time()
    p.wait()
    return {"pid": p.pid, "pgid": p.pid, "create_time": created}


def live_pid() -> dict:
    me = psutil.Process()
    return {"pid": me.pid, "pgid": me.pid, "create_time": me.create_time()}


CASES = {  # name -> (state, validity, words in the verdict)
    "done": (rd.DONE, VALID, "HOLDS: if scripted.successes >= 1; does not hold: if scripted.successes == 0"),
    "live": (rd.RUNNING, PENDING, "undetermined: if scripted.successes >= 1"),
    "died": (rd.DIED, VALID, "provisional: if scripted.successes >= 1"),  # 0 of 3 so far: not settled
    "stopped": (rd.STOPPED, VALID, "HOLDS: if scripted.successes >= 1"),
    "refused": (rd.FAILED, INVALID, "undetermined: if scripted.successes >= 1"),
    "invalid": (rd.DONE, INVALID, "undetermined: if scripted.successes >= 1"),
    "hold unfinished": (rd.DONE, VALID, "HOLDS: if scripted.successes >= 1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_one_arm_run_reads_the_same_on_every_surface(tmp_path, run_dir, demo, case):
    status = {"state": "done", "done": 6, "total": 6}
    rows, pid = six(), None
    if case == "live":
        rows, status, pid = six()[:2], {"state": "running", "done": 2, "total": 6}, live_pid()
    elif case == "died":
        rows, status, pid = six(False)[:3], {"state": "running", "done": 3, "total": 6}, gone_pid()
    elif case == "stopped":
        rows, status = six()[:2], {"state": "stopped", "done": 2, "total": 6, "reason": "STOP by console"}
    elif case == "refused":
        rows, status = [], {"state": "failed", "done": 0, "total": 6, "reason": "refused: the checkpoint is missing"}
    elif case == "invalid":
        rows = six()[:5] + [make_row(5, status="error", error="worker crashed")]
    elif case == "hold unfinished":  # placed, its hold cut short by the episode's end: the crash of issue 42
        rows = six()[:5] + [make_row(5, success=False, success_streak=5)]
    run = one_arm(tmp_path, run_dir, demo, case.replace(" ", "-"), rows, status)
    if pid is not None:
        write_json_atomic(run / rd.PID, pid)
    rep = build_report(demo, {"scripted": run}, append=False, now=NOW)
    story = told(rep, run)
    state, validity, words = CASES[case]
    assert (story.state, story.validity) == (state, validity)
    assert words in story.verdict
    if case == "refused":
        assert story.reasons == ("no episodes: the run is failed with no row (refused: the checkpoint is missing)",)
    if case == "stopped":  # the user stopped it: settled early, never 'by curtailment' (none was registered)
        assert "curtailment" not in (run / rd.RESULTS).read_text()
    if case == "done":  # every seed ran: nothing was curtailed, whatever the rule could have settled at
        assert "by curtailment" not in json.dumps(json.loads((run / rd.RESULTS_JSON).read_text()))
    if case == "hold unfinished":
        assert 'data-outcome="hold_unfinished"' in (run / rd.RESULTS_HTML).read_text()
    if case == "died":  # the report calls it what the console does, and never "still running"
        assert "still running" not in (run / rd.RESULTS).read_text()


def test_a_comparison_decided_and_undecided_read_the_same_everywhere(tmp_path):
    doc = compare_doc(tmp_path)
    decided = make_comparison_run(doc, tmp_path / "runs" / "cmp",
                                  comparison_rows(A_WINS, B_WINS) + [row("clumsy", 12, False)])
    rep = build_report(doc, {"clumsy-vs-steady": decided}, append=False, now=NOW)
    story = told(rep, decided)
    assert story.headline == ("stopped · VALID · steady better than clumsy (the registered comparison, decided at "
                              "12/60 seeds)")
    assert [a.arm for a in story.arms] == ["clumsy", "steady"]  # the registered order
    # the plain count rule beside it is a descriptive read, and says so wherever it is shown
    (read,) = story.descriptive
    assert read.subject == "if steady.successes > clumsy.successes"
    assert "a descriptive read: the plan decides by its registered comparison" in (decided / rd.RESULTS).read_text()
    assert "descriptive, not the test" in story.decisions[0].label  # the band beside the e-value
    assert story.cost.endswith(": 25 saved")  # against the batch validate sized (25 seeds), not max seeds x 2

    body = doc.read_text().replace("max_seeds: 60", "max_seeds: 4")
    doc.write_text(body[:body.index("<!-- fontaine:sealed")])
    from prereg.document.seal import freeze

    freeze(doc)
    undecided = make_comparison_run(doc, tmp_path / "runs" / "short", comparison_rows([True] * 4, [True] * 4))
    rep = build_report(doc, {"steady": undecided}, append=False, now=NOW)
    story = told(rep, undecided)
    assert (story.state, story.validity) == (rd.DONE, VALID)
    assert story.verdict == "undecided (the registered comparison, at max seeds (4/4))"


def test_a_rule_frozen_after_the_data_is_exploratory_even_with_the_rows_times_moved(tmp_path, run_dir):
    """Shifting only the rows' times a day later must not turn a post-hoc rule into a verdict: the data's start
    is the earliest time any record gives (the manifest's start here), and the moved rows are a provenance problem."""
    doc = scripted_doc(tmp_path, amendments=[({"decision_rules": [{"if": "a.successes >= 5", "then": "a is good"}]},
                                              "2026-01-01T00:20:00Z")])
    moved = [make_row(s, success=True, started_at="2026-01-02T00:09:00Z", finished_at="2026-01-02T00:10:00Z")
             for s in range(6)]
    run = run_dir("a", moved, status={"state": "done", "done": 6, "total": 6, "updated_at": "2026-01-01T00:30:00Z"},
                  launched=(doc, "a"), manifest={"started_at": "2026-01-01T00:05:00Z"})
    rep = build_report(doc, {"a": run}, append=False, now=NOW)
    story = told(rep, run)
    assert story.verdict.startswith("exploratory")
    assert story.validity == INVALID and any("stamped after the run ended" in why for why in story.reasons)


# ---------------------------------------------------------------- any row renders everywhere

FLAG = st.one_of(st.none(), st.booleans())
NUM = st.one_of(st.none(), st.floats(-40, 40, allow_nan=False), st.integers(-40, 40))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.fixed_dictionaries({
    "status": st.sampled_from(["ok", "error", None]), "success": FLAG, "success_streak": st.one_of(st.none(), st.integers(0, 9)),
    "off_table": FLAG, "grasped": FLAG, "released": FLAG, "tipped": FLAG, "touched": FLAG, "knock_away": FLAG,
    "engaged": FLAG, "progress_cm": NUM, "progress_final_cm": NUM, "dist_final_cm": NUM, "carried_cm": NUM,
    "object_z_mm": NUM}))
def test_any_row_the_classifier_accepts_renders_on_every_surface(fields):
    r = complete_row({"seed": 0, "arm": "a", **fields})
    outcome = episode_outcome(r)
    assert outcome in EPISODE_OUTCOMES
    for table in (OUTCOME_LABELS, OUTCOME_COLORS, OUTCOME_STYLE, OUTCOME_GLYPH):  # page, console, report, posts
        assert outcome in table
    assert outcome in OUTCOME_RULES or outcome == "error"
    counts = RowCounts()
    counts.add(r)
    assert OUTCOME_LABELS[outcome] in outcomes_line(counts.by_outcome)
    cells = recent_row_cells(r)
    assert cells[1].plain == OUTCOME_LABELS[outcome]  # the latest-rows log and the grid say one word


def test_an_escape_or_a_masked_link_in_a_run_is_shown_never_obeyed_on_any_surface(tmp_path, run_dir, demo):
    """issue 43: raw ESC/BEL reached results.md and results.html (`cat results.md` acted on them), and a
    Discord masked link in a reason reached posts clickable."""
    reason = "STOP by \x1b]0;pwned\x07 [click](https://evil.example) \x1b[2J"
    run = one_arm(tmp_path, run_dir, demo, "hostile", six()[:2],
                  {"state": "stopped", "done": 2, "total": 6, "reason": reason})
    build_report(demo, {"scripted": run}, append=False, now=NOW)
    for name in (rd.RESULTS, rd.RESULTS_HTML):
        text = (run / name).read_text()
        assert "\x1b" not in text and "\x07" not in text and "pwned" in text, name  # said, as visible escapes
    post = results_post(read_snapshot(run))
    for field in (post.content, post.title, post.description):
        assert "\x1b" not in field and "[click](" not in field
