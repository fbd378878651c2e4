"""The report of a crossed design (issue 48): every count, rule, sequential test and comparison reads the
plan's read variant's rows (a run of the scene alone reads as before); each arm's reads per variant and
pooled ride in the story (results.json, results.md's Variants section, the terminal); a comparison run
adds the pooled paired read, descriptive; validate states the episodes a crossed plan runs."""

from __future__ import annotations

import json

import pytest

from prereg import rundir as rd
from prereg.outputs.report import build_report
from prereg.rundir.rows import rows_of_variant
from prereg.stats.comparison_report import live_evidence, savings
from prereg.stats.story import Story, VariantStory
from prereg.stats.variants import read_variants
from prereg.stats.variants_compare import pooled_difference
from tests.comparison_run import compare_doc, comparison_rows, make_comparison_run
from tests.prereg.conftest import make_row

NOW = "2026-12-07T12:00:00Z"
SEEDS = range(6)
# the demo's scripted arm on seeds 0-5: base solves 0-3, dim 0-1, cam (a camera variant) every seed
WON = {None: {0, 1, 2, 3}, "dim": {0, 1}, "cam": set(SEEDS)}
CROSSED = [make_row(s, success=s in won, variant=v) for v, won in WON.items() for s in SEEDS]
CONFIG = {"variants": ["dim", "cam"], "camera_variants": ["cam"]}


def results(run) -> dict:
    return json.loads((run / rd.RESULTS_JSON).read_text())


def crossed_run(run_dir, demo, name, read_variant="base", rows=CROSSED):
    config = {**CONFIG, "read_variant": read_variant}
    return run_dir(name, rows, status={"state": "done", "done": len(rows), "total": len(rows)},
                   launched=(demo, "scripted"), manifest={"config": config})


def test_a_crossed_run_reads_its_read_variant_as_a_run_of_the_scene_alone_reads_it(run_dir, demo):
    base_only = [r for r in CROSSED if r["variant"] is None]
    plain = run_dir("plain", base_only, status={"state": "done", "done": 6, "total": 6}, launched=(demo, "scripted"))
    crossed = crossed_run(run_dir, demo, "crossed")
    build_report(demo, {"scripted": plain}, append=False, now=NOW)
    rep = build_report(demo, {"scripted": crossed}, append=False, now=NOW)  # the registration's file: this report's
    got, want = results(crossed), results(plain)
    assert got["primary"] == want["primary"] and got["primary"]["successes"] == 4 and got["primary"]["n"] == 6
    assert got["verdicts"] == want["verdicts"] and got["valid"] is want["valid"] is True
    assert got["story"]["headline"] == want["story"]["headline"]
    assert want["story"]["variants"] == [] and "## Variants" not in (plain / rd.RESULTS).read_text()
    assert any("reads the base rows" in n for n in rep.arms["scripted"].reads.notes)

    # the story carries the arm's variant reads as prereg.stats.variants reads them, and reads them back
    story = Story.from_dict(got["story"])
    read = read_variants(CROSSED, SEEDS, ("base", "dim", "cam"), camera=("cam",))
    assert story.variants == (VariantStory.of("scripted", read, "base"),)
    v = story.variants[0]
    assert [(c.variant, c.successes, c.n) for c in v.cells] == [("base", 4, 6), ("dim", 2, 6), ("cam", 6, 6)]
    assert v.pooled == ("base", "dim") and v.pooled_rate == pytest.approx(0.5) and v.worst == "dim"
    assert v.seeds_by_successes == (2, 2, 2)  # seeds 4, 5: none; 2, 3: base only; 0, 1: both

    md = (crossed / rd.RESULTS).read_text()
    section = md[md.index("## Variants"):]
    lo, hi = read.per_variant[1].interval
    assert f"| dim | 2/6 | {lo:.2f}-{hi:.2f} | worst |" in section
    assert "| base | 4/6 |" in section and section.count("| decides |") == 1
    assert "| cam | 6/6 |" in section and "| camera, read apart |" in section
    assert f"- {v.pooled_words()}" in section and "- seeds by variants succeeding: 0/2: 2, 1/2: 2, 2/2: 2" in section
    assert "pooled 0.50 (95% CI" in rep.summary_text() and "over 2 variants, 6 seeds" in rep.summary_text()
    assert f"  - variants scripted: {v.pooled_words()}" in rep.registration_md.read_text().splitlines()


def test_a_plan_that_reads_a_named_variant_counts_and_decides_on_its_rows(run_dir, demo):
    crossed = crossed_run(run_dir, demo, "dim-read", read_variant="dim")
    rep = build_report(demo, {"scripted": crossed}, append=False, now=NOW)
    got = results(crossed)
    assert (got["primary"]["successes"], got["primary"]["n"]) == (2, 6)
    assert rep.arms["scripted"].reads.success_seeds == [0, 1]
    story = Story.from_dict(got["story"])
    assert story.arms[0].successes == 2 and story.variants[0].read_variant == "dim"
    assert "| dim | 2/6 |" in (crossed / rd.RESULTS).read_text().split("## Variants")[1]


def test_a_variant_row_stamped_before_the_run_started_is_a_record_problem_of_the_arm(run_dir, demo):
    rows = [dict(r, started_at="2026-12-01T10:00:00Z") for r in CROSSED]
    rows[-1]["started_at"] = "2026-11-30T10:00:00Z"  # a cam row (never counted) edited to before the start
    run = run_dir("edited", rows, status={"state": "done", "done": 18, "total": 18}, launched=(demo, "scripted"),
                  manifest={"config": CONFIG, "started_at": "2026-12-01T09:00:00Z"})
    rep = build_report(demo, {"scripted": run}, append=False, now=NOW)
    bad = [c.text for c in rep.arms["scripted"].reads.checks if not c.ok]
    assert bad == ["rows of seeds 5 are stamped before the run started (2026-12-01T09:00:00Z): the rows' times or "
                   "the manifest were changed"]


def test_a_crossed_runs_rows_as_counted_keep_their_line_numbers_and_a_pilot_reads_its_read_variant(run_dir, demo):
    from prereg.stats.power import pilot_delta_sd

    rows = [make_row(s, progress_final_cm=float(s) * (10 if v else 1), variant=v) for s in range(4) for v in (None, "dim")]
    run = crossed_run(run_dir, demo, "pilot", read_variant="dim", rows=rows)
    got = rd.counted_rows(run)
    assert [r["variant"] for r in got.rows] == ["dim"] * 4 and got.line_nos == [2, 4, 6, 8]
    assert rd.counted_rows(run, rd.Manifest()).rows == rows  # no variants: every row
    sd = pilot_delta_sd(run)  # sqrt(2) x the SD of dim's 0, 10, 20, 30, not base's 0-3 nor a mix
    assert sd.n == 4 and sd.sd == pytest.approx(2 ** 0.5 * 12.909944, rel=1e-6)


SEQUENTIAL_DOC = """---
fontaine: fontaine-prereg/1
id: seq-variants
title: a sequential test on a crossed design
created: 2026-01-01
arms:
  - name: a
    policy: scripted
protocol:
  seeds: 0-29
  episode_seconds: 20
  workers: 1
reads:
  primary: successes
gates:
  gpu_hours: 0.1
  sequential: {p0: 0.1, p1: 0.6, alpha: 0.05, beta: 0.1}
---

Plain words.
"""


@pytest.mark.parametrize("read_variant, decision", [("base", "H1"), ("dim", "H0")])
def test_the_sequential_test_reads_the_read_variant(tmp_path, run_dir, read_variant, decision):
    from prereg.document.seal import freeze
    from prereg.stats.sequential import check_rows

    doc = tmp_path / "seq.md"
    doc.write_text(SEQUENTIAL_DOC)
    freeze(doc, now="2026-01-01T00:00:00Z")
    # base solves every seed (the test accepts H1), dim none (H0): seeds 0-7 of each, interleaved
    rows = [make_row(s, success=v is None, variant=v) for s in range(8) for v in (None, "dim")]
    spec = {"p0": 0.1, "p1": 0.6, "alpha": 0.05, "beta": 0.1}
    record = check_rows(spec, rows_of_variant(rows, read_variant), range(30))  # what the driver records
    assert record is not None and record["decision"] == decision
    run = run_dir(f"seq-{read_variant}", rows, launched=(doc, "a"),
                  status={"state": "stopped", "done": 16, "total": 60, "sequential": record},
                  manifest={"config": {"variants": ["dim"], "read_variant": read_variant}})
    rep = build_report(doc, {"a": run}, append=False, now=NOW)
    (s,) = rep.sequential
    assert s.decision is not None and s.decision.decision == decision and s.decision.at == record["at"]
    assert not [c for c in rep.arms["a"].reads.checks if not c.ok]  # the driver's record agrees


A_WINS = [s < 4 for s in range(12)]  # clumsy solves seeds 0-3
B_WINS = [True] * 12  # steady solves every seed


@pytest.mark.parametrize("read_variant, outcome", [("base", "steady better"), ("dim", "steady worse")])
def test_a_comparison_run_decides_on_its_read_variant_and_adds_the_pooled_paired_read(tmp_path, read_variant,
                                                                                     outcome):
    doc = compare_doc(tmp_path)
    base = comparison_rows(A_WINS, B_WINS)  # on base steady is better; on dim the other way round
    dim = [{**r, "variant": "dim"} for r in comparison_rows(B_WINS, A_WINS)]
    read, other = (base, dim) if read_variant == "base" else (dim, base)
    config = {"config": {"variants": ["dim"], "read_variant": read_variant}}
    run = make_comparison_run(doc, tmp_path / "runs" / f"cmp-{read_variant}", read, manifest_over=config)
    with (run / rd.ROWS).open("a") as f:  # the other variant's rows, which the decision never reads
        f.write("".join(json.dumps(r) + "\n" for r in other))
    rep = build_report(doc, {"clumsy": run, "steady": run}, append=False, now=NOW)
    (c,) = rep.comparisons
    assert c.decision is not None and c.decision["text"].startswith(outcome) and not c.record_problems
    got = results(run)
    assert got["valid"] is True and got["story"]["verdict"].startswith(outcome)
    # the cost counts every variant's episodes against a batch of seeds x 2 arms x (1 + variants)
    assert (c.episodes_run, c.batch) == (2 * 12 * 2, c.batch_seeds * 2 * 2) and "x (1 + 1 variant)" in got["story"]["cost"]
    snap = rd.read_snapshot(run)
    assert savings(snap.manifest, snap.status, base + dim).startswith("48 episodes run against the batch's")
    plain = {**json.loads((run / rd.MANIFEST).read_text()), "config": {}}  # the same run without variants
    live = live_evidence(snap.manifest, {}, base + dim)  # before a recorded decision: the rows' evidence
    assert live == live_evidence(plain, {}, read) != live_evidence(plain, {}, other)

    story = Story.from_dict(got["story"])
    every = base + dim
    reads = {a: read_variants([r for r in every if r["arm"] == a], range(60), ("base", "dim")) for a in ("clumsy", "steady")}
    (paired,) = story.variants_paired
    assert paired == pooled_difference("clumsy", reads["clumsy"], "steady", reads["steady"])
    # per seed (steady's share - clumsy's share): seeds 0-3 both solve both variants, 4-11 each solves one
    assert (paired.seeds, paired.mean) == (12, 0.0) and paired.interval[0] < 0.0 < paired.interval[1]
    assert [v.arm for v in story.variants] == ["clumsy", "steady"]
    assert story.headline == got["story"]["headline"]  # the paired read is descriptive: never the headline
    md = (run / rd.RESULTS).read_text()
    assert f"- {paired.sentence()}" in md and "descriptive, not the decision" in md
    assert paired.sentence() in rep.summary_text()


def test_validate_states_the_episodes_a_crossed_plan_runs(tmp_path, demo, capsys):
    from prereg.document.read import load
    from prereg.outputs.cli import main, variants_budget_lines

    assert variants_budget_lines(load(demo)) == []  # the scene alone: nothing to add
    doc = tmp_path / "crossed.md"
    doc.write_text(SEQUENTIAL_DOC.replace("  workers: 1\n", "  workers: 1\n  variants: [dim, clutter]\n  read_variant: dim\n")
                   .replace("  - name: a\n    policy: scripted\n", "  - name: a\n    policy: scripted\n  - name: b\n"
                            "    policy: scripted\n"))
    assert main(["validate", str(doc)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "crossed design (base): 30 seeds x 2 arms x (1 + 2 variants: base, dim, clutter) = 180 episodes; the decision "
        "reads dim (every episode count above is of its seeds: each seed costs 3 episodes an arm)")
