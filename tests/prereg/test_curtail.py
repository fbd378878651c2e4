"""Curtailment (prereg/stats/curtail.py): a rule is declared settled only when every completion of the
remaining seeds agrees (brute force over small N), and exactly so for single count clauses."""

from __future__ import annotations

import functools
import itertools
import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prereg.document.rules import Clause, Rule, parse_condition
from prereg.stats import curtail
from prereg.stats.reads import HOLDS, NOT_HOLDS, UNDETERMINED, arm_reads, evaluate_rule
from tests.prereg.conftest import make_row

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}

# the ways an episode can end, as rows (each moves a different set of reads)
TEMPLATES = {
    "success": dict(success=True, progress_cm=6.0, progress_final_cm=6.0, predicts=3),
    "quiet": dict(progress_cm=0.0, progress_final_cm=0.0, predicts=3),
    "engaged": dict(progress_cm=2.0, progress_final_cm=0.5, predicts=3),
    "knock": dict(progress_cm=0.0, progress_final_cm=-2.0, predicts=3),
    "error": dict(status="error", progress_cm=None, progress_final_cm=None, predicts=0),
    "fallback": dict(progress_cm=0.0, progress_final_cm=0.0, predicts=3, zero_fallbacks=2),
}
READS = ("successes", "engaged", "knock_aways", "quiet", "error_rows", "zero_fallbacks", "predicts",
         "reset_strikes", "success_rate", "success_ci_low", "success_ci_high", "n", "zero_fallback_rate",
         "progress_final_mean")


def rows_of(kinds: list[str], start: int = 0) -> list[dict]:
    return [make_row(start + i, **TEMPLATES[k]) for i, k in enumerate(kinds)]


def tree_verdict(node, values: dict) -> str:
    """The report's semantics on a tree: a missing read -> undetermined, else the boolean."""
    def ev(n):
        if isinstance(n, Clause):
            vals = []
            for o in (n.left, n.right):
                v = o if isinstance(o, float) else values.get(o[0], {}).get(o[1])
                if v is None:
                    raise LookupError
                vals.append(float(v))
            return OPS[n.op](*vals)
        kind, kids = n
        res = [ev(k) for k in kids]
        return all(res) if kind == "and" else any(res)
    try:
        return HOLDS if ev(node) else NOT_HOLDS
    except LookupError:
        return UNDETERMINED


def completions(done_kinds: list[str], planned: int, kinds=tuple(TEMPLATES)) -> list[dict]:
    """The reads of every completion (a row's order does not change a read: multisets suffice)."""
    return _completions(tuple(sorted(done_kinds)), planned, kinds)


@functools.lru_cache(maxsize=None)
def _completions(done_kinds: tuple, planned: int, kinds: tuple) -> list[dict]:
    r = planned - len(done_kinds)
    return [arm_reads("a", rows_of(list(done_kinds) + list(rest)), planned_seeds=list(range(planned)),
                      interval="wilson").values()
            for rest in itertools.combinations_with_replacement(kinds, r)]


clauses = st.builds(
    Clause,
    st.tuples(st.just("a"), st.sampled_from(READS)),
    st.sampled_from(tuple(OPS)),
    st.one_of(st.integers(0, 6).map(float), st.sampled_from((0.0, 0.1, 0.25, 0.5, 0.9, 1.0)),
              st.tuples(st.just("a"), st.sampled_from(READS))),
)
trees = st.recursive(clauses, lambda kids: st.tuples(st.sampled_from(("and", "or")), st.lists(kids, min_size=1, max_size=3)),
                     max_leaves=4)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees, planned=st.integers(1, 4), data=st.data())
def test_settled_only_when_every_completion_agrees(tree, planned, data):
    done = data.draw(st.lists(st.sampled_from(tuple(TEMPLATES)), max_size=planned))
    state = curtail.state_from_rows(rows_of(done), range(planned))
    truths, maybe_none = curtail.settle_tree(tree, {"a": state})
    if len(truths) == 1 and not maybe_none:
        claimed = HOLDS if truths == {True} else NOT_HOLDS
        for values in completions(done, planned):
            assert tree_verdict(tree, {"a": values}) == claimed, (tree, done, values)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clause_list=st.lists(clauses.filter(lambda c: not isinstance(c.right, tuple)), min_size=1, max_size=3),
       planned=st.integers(1, 4), data=st.data())
def test_settle_rule_agrees_with_the_reports_own_evaluation(clause_list, planned, data):
    rule = Rule("c", "t", "base", 1, tuple(clause_list))
    done = data.draw(st.lists(st.sampled_from(tuple(TEMPLATES)), max_size=planned))
    s = curtail.settle_rule(rule, {"a": curtail.state_from_rows(rows_of(done), range(planned))})
    if s.settled:
        for values in completions(done, planned):
            assert evaluate_rule(rule, {"a": values}).verdict == s.verdict


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(read=st.sampled_from(("successes", "knock_aways", "error_rows", "quiet", "success_rate",
                             "success_ci_low", "success_ci_high")),
       op=st.sampled_from(tuple(OPS)), k=st.integers(0, 5), planned=st.integers(1, 4), data=st.data())
def test_a_single_count_clause_is_settled_exactly_when_brute_force_says_so(read, op, k, planned, data):
    threshold = float(k) if read in ("successes", "knock_aways", "error_rows", "quiet") else k / 5
    rule = Rule("c", "t", "base", 1, (Clause(("a", read), op, threshold),))
    kinds = ("success", "knock", "error", "quiet", "engaged")
    done = data.draw(st.lists(st.sampled_from(kinds), max_size=planned))
    s = curtail.settle_rule(rule, {"a": curtail.state_from_rows(rows_of(done), range(planned))})
    verdicts = {evaluate_rule(rule, {"a": v}).verdict for v in completions(done, planned, kinds)}
    assert s.settled == (len(verdicts) == 1), (verdicts, s)


def rule(cond: str, arms=("b",)) -> Rule:
    clauses, msg = parse_condition(cond, arms[0], set(arms))
    assert not msg
    return Rule(cond, "then", "base", 1, tuple(clauses))


def state(kinds: list[str], planned: int) -> curtail.ArmState:
    return curtail.state_from_rows(rows_of(kinds), range(planned))


def test_the_lab_note_examples():
    # "b succeeds on >= 20 of 100" cannot hold once 81 seeds have failed
    r = rule("successes >= 20")
    assert not curtail.settle_rule(r, {"b": state(["quiet"] * 80, 100)}).settled
    s = curtail.settle_rule(r, {"b": state(["quiet"] * 81, 100)})
    assert s.settled and s.verdict == NOT_HOLDS
    # masked zero-fallbacks == 0 is false at the first fallback, whatever the reference arm does
    r2 = rule("masked.zero_fallbacks == 0 and reference.zero_fallbacks > 0", arms=("masked", "reference"))
    open_ = curtail.settle_rule(r2, {"masked": state(["quiet"], 6)})
    assert not open_.settled and "reference" in open_.why
    s2 = curtail.settle_rule(r2, {"masked": state(["quiet", "fallback"], 6)})
    assert s2.settled and s2.verdict == NOT_HOLDS
    # reference zero-fallbacks > 0 holds at the first one
    s3 = curtail.settle_rule(rule("zero_fallbacks > 0"), {"b": state(["fallback"], 6)})
    assert s3.settled and s3.verdict == HOLDS


def test_means_and_paired_reads_are_never_settled_early():
    r = rule("progress_final_mean > -100")
    s = curtail.settle_rule(r, {"b": state(["quiet"] * 5, 6)})
    assert not s.settled and "never settled early" in s.why


def test_the_savings_table_shrinks_with_the_success_rate():
    r = rule("successes >= 3")
    lo = curtail.simulate_expected_episodes([r], "b", 100, 0.01)
    hi = curtail.simulate_expected_episodes([r], "b", 100, 0.3)
    assert hi < 15 < 90 < lo <= 100
    assert curtail.simulate_expected_episodes([r], "b", 100, 0.3) == hi  # seeded


@pytest.mark.parametrize("bad", ["yes", "true", 1])
def test_the_decided_gate_is_validated(bad, demo):
    from prereg.document.read import parse

    text = demo.read_text().replace("gates:\n", f"gates:\n  decided: {bad}\n", 1)
    doc = parse(text, demo)
    assert any(p.field == "gates.decided" for p in doc.problems)
    ok = parse(demo.read_text().replace("gates:\n", "gates:\n  decided: stop\n", 1), demo)
    assert not [p for p in ok.problems if p.field.startswith("gates")]
    assert ok.sections[0].gates.decided == "stop"


# ---------------------------------------------------------------- the pace projection


def lockstep_inputs(startup_s, episode_s, lanes, done, total):
    """A pool of `lanes` workers finishing in lock-step: the inputs the driver gives at row `done`."""
    from prereg.rundir.gates import PaceInputs

    waves = -(-done // lanes)  # the wave the row belongs to has ended
    in_flight = min(waves * lanes, total) - done  # the rest of that wave is about to land
    return PaceInputs(startup_s=startup_s, rollout_s=waves * episode_s, done=done, in_flight=in_flight,
                      total=total, episode_wall_s=episode_s, lanes=lanes)


def test_the_naive_projection_over_projects_a_slow_start_and_the_fair_one_does_not():
    from prereg.rundir.gates import fair_projected_wall_s, projected_wall_s

    # the lab note's figures: 100 seeds, 8 workers, a checkpoint that takes minutes to load
    startup, episode, lanes, total = 240.0, 240.0, 8, 100
    true_wall = startup + -(-total // lanes) * episode  # 13 waves
    p = lockstep_inputs(startup, episode, lanes, 10, total)
    naive = projected_wall_s(p.startup_s + p.rollout_s, 10, total)
    fair = fair_projected_wall_s(p)
    assert naive / true_wall > 1.5  # a spurious stop of a healthy run under a tight limit
    assert abs(fair / true_wall - 1) < 0.05
    for done in (1, 8, 9, 16, 50, 99):
        f = fair_projected_wall_s(lockstep_inputs(startup, episode, lanes, done, total))
        assert abs(f / true_wall - 1) < 0.05, (done, f, true_wall)


def test_a_staggered_pool_is_projected_from_its_episode_walls():
    from prereg.rundir.gates import PaceInputs, fair_projected_wall_s

    # 4 lanes, 100 s episodes, staggered by 25 s: at a row, 3 episodes are in flight, on average half done
    p = PaceInputs(startup_s=50, rollout_s=275, done=8, in_flight=3, total=40, episode_wall_s=100, lanes=4)
    true_wall = 50 + 75 + 40 / 4 * 100  # the last lane starts 75 s late
    assert abs(fair_projected_wall_s(p) / true_wall - 1) < 0.1


def test_the_fair_projection_uses_the_throughput_when_episodes_cost_more_than_their_clocks():
    from prereg.rundir.gates import PaceInputs, fair_projected_wall_s

    # episodes say 1 s each, but the rollout spent 10 s on 2 (resets outside the episode clock)
    p = PaceInputs(startup_s=0.0, rollout_s=10.0, done=2, in_flight=0, total=10, episode_wall_s=1.0, lanes=1)
    assert fair_projected_wall_s(p) == pytest.approx(50.0)


def test_the_pace_gate_trips_on_the_fair_projection_only_after_the_registered_episodes():
    from prereg.rundir.gates import PaceInputs, evaluate_gates
    from prereg.rundir.status import GateSpec

    spec = GateSpec(pace_limit_hours=1.0, pace_after_episodes=5, gpu_hours=2.0)
    slow = PaceInputs(startup_s=60, rollout_s=3000, done=4, in_flight=0, total=10, episode_wall_s=750, lanes=1)
    early = evaluate_gates(spec, elapsed_s=3060, done=4, total=10, gpu_hours=0.9, pace=slow, gpus=1)
    assert [r.state for r in early] == ["warn", "warn"]  # projected spend past the budget: a warning
    assert "start-up 60 s" in early[1].message
    late = PaceInputs(startup_s=60, rollout_s=3750, done=5, in_flight=0, total=10, episode_wall_s=750, lanes=1)
    assert evaluate_gates(spec, elapsed_s=3810, done=5, total=10, gpu_hours=1.0, pace=late, gpus=1)[1].state == "tripped"


def test_validate_prints_what_curtailment_buys(examples_dir):
    import subprocess
    import sys

    from tests.helpers import REPO

    out = subprocess.run([sys.executable, "-m", "prereg.outputs.cli", "validate", str(examples_dir / "discrete_ar_100.md")],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "arm ar-reference (100 seeds, curtailment NOT registered" in out.stdout
    assert "p=0.01: 63.6, p=0.09: 11.9, p=0.3: 3.2" in out.stdout  # seeded: the same on every machine
    assert "ar-masked.delta_ci_low > 0" in out.stdout  # never settled early: named, not simulated


def test_the_one_line_texts_never_crash_on_a_wrong_typed_status():
    from prereg.stats.curtail import pace_text, settled_text

    for bad in ({"settled": {"rules": ["x", 3], "at": "x", "all": "yes"}}, {"settled": []}, {"pace": {"startup_s": "x"}},
                {"pace": {"startup_s": 3, "total": "9", "done": None}}, {"pace": []}, [], None):
        settled_text(bad)
        pace_text(bad)
    assert settled_text({"settled": {"rules": [{"settled": True}], "at": "x", "total": 5}}) == "1 of 1 rules settled at ?/5"
