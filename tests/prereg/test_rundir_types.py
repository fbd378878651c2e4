"""The run-directory contract as types (prereg/rundir/): Status, Manifest, read_snapshot.

status.json and manifest.json are other processes' files: any JSON at all reads without an
exception, a wrong-typed field is None and named, and the driver's own files read clean."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from console.fixtures import make_run_dir
from prereg import rundir as rd
from prereg.rundir.files import done_stop_name, new_run_id

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
                    max_leaves=8)
KEYS = st.sampled_from(["state", "done", "total", "elapsed_s", "stop", "pace", "gpu_hours", "seeds", "prereg", "policy",
                        "gates", "resumes", "arm", "run_id", "episode_seconds", "workers"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, JSON, max_size=8))
def test_any_json_reads_as_a_status_and_a_manifest_without_an_exception(d):
    s, m = rd.Status.from_dict(d), rd.Manifest.from_dict(d)
    for v in (s.done, s.total):
        assert v is None or type(v) is int
    assert s.elapsed_s is None or isinstance(s.elapsed_s, float)
    assert m.seeds is None or all(type(x) is int for x in m.seeds)
    assert s.state is None or isinstance(s.state, str)
    json.dumps(s.to_dict(), default=str)
    json.dumps(m.to_dict(), default=str)


def test_a_wrong_typed_field_is_none_and_named():
    s = rd.Status.from_dict({"state": "running", "elapsed_s": "x", "done": True, "total": float("nan")})
    assert s.state == "running" and s.live and s.elapsed_s is None and s.done is None and s.total is None
    assert any("elapsed_s is str 'x'" in p for p in s.problems) and any("done is bool" in p for p in s.problems)
    assert rd.Status.from_dict({"state": "exploded"}).problems[0].endswith("is not one of " + ", ".join(rd.STATES))
    m = rd.Manifest.from_dict({"policy": "scripted", "seeds": [0, "1"], "prereg": [1]})
    assert m.policy_kind == "scripted" and m.seeds is None and m.prereg is None and len(m.problems) == 2


def test_a_run_directory_reads_as_one_snapshot(tmp_path):
    d = make_run_dir(tmp_path, "p-a-20260101-000000", total=10, done=4, state="running",
                     prereg={"id": "p", "sha256": "abc", "path": "p.md"})
    snap = rd.read_snapshot(d)
    assert snap.status.state == "running" and snap.status.done == 4 and snap.status.problems == ()
    assert snap.manifest.prereg == rd.PreregRef("p", "abc", "p.md") and snap.manifest.seeds == tuple(range(10))
    assert snap.rows_size > 0 and snap.heartbeat_mtime is not None and snap.missing == (rd.PID,) and snap.unreadable == {}
    (d / rd.STATUS).unlink()
    (d / rd.STATUS).mkdir()  # a directory where a file belongs: unreadable with why, never a crash
    snap = rd.read_snapshot(d)
    assert snap.status is None and "directory" in snap.unreadable[rd.STATUS]


def test_the_run_id_and_a_done_stop_are_named_in_one_place():
    assert new_run_id("demo", "scripted", 0) == "demo-scripted-19700101-000000"
    assert done_stop_name(1780000000.7) == "STOP.1780000000.done"


def test_a_gate_spec_round_trips_and_is_the_one_prereg_gates_uses():
    from prereg.rundir import gates

    assert gates.GateSpec is rd.GateSpec  # one definition: the run directory's
    spec = rd.GateSpec(gpu_hours=1.5, pace_limit_hours=2.0, pace_after_episodes=4, stall_factor=3.0, stall_min_s=30.0,
                       warn_fraction=0.5, decided="stop", sequential={"p0": 0.2, "p1": 0.5, "alpha": 0.05, "beta": 0.2},
                       tripwires={"coverage": {"max_uncovered": 0.3}})
    assert rd.GateSpec.from_dict(spec.to_dict()) == spec
    assert rd.GateSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert rd.GateSpec.from_dict(rd.GateSpec().to_dict()) == rd.GateSpec()
    m = rd.Manifest.from_dict({"run_id": "r", "gates": spec.to_dict()})
    assert m.gates == spec and rd.Manifest.from_dict(m.to_dict()) == m


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["gpu_hours", "pace_limit_hours", "pace_after_episodes", "stall_factor",
                                        "decided", "sequential", "warn_fraction"]), JSON, max_size=5))
def test_any_gates_read_back_equal_after_a_round_trip(d):
    spec = rd.GateSpec.from_dict(d)
    assert rd.GateSpec.from_dict(spec.to_dict()) == spec


def test_a_status_round_trips_with_the_keys_the_driver_writes():
    s = rd.Status(schema=rd.STATUS_SCHEMA, state=rd.STOPPED, run_id="r", arm="a", done=3, total=5, ok=3, errors=0,
                  successes=2, elapsed_s=12.5, stop=rd.StopReason(rd.BY_USER, "stop key", who="ana", at="t"),
                  reason="user (ana): stop key", lost_seeds=[3, 4], gates=[], pid=7, updated_at="t")
    d = s.to_dict()
    assert list(d) == [k for k in rd.Status.__dataclass_fields__ if k not in ("raw", "problems", "arms", "comparison",
                                                                              rd.TRIPWIRES_FIELD)]
    assert d["stop"] == {"by": "user", "detail": "stop key", "gate": None, "who": "ana", "at": "t"} and d["eta_s"] is None
    back = rd.Status.from_dict(json.loads(json.dumps(d)))
    assert back == s and back.problems == ()
    both = rd.Status(state=rd.RUNNING, arms=["a", "b"], tripwires={"passed": True}).to_dict()
    assert both["arms"] == ["a", "b"] and both["comparison"] is None and both["tripwires"] == {"passed": True}


def test_a_manifest_reads_the_early_forms_of_its_fields():
    m = rd.Manifest.from_dict({"arm": {"name": "a"}, "prereg": "demo", "prereg_sha256": "abc", "env": {"name": "e"}})
    assert m.arm == "a" and m.prereg_id == "demo" and m.prereg_sha256 == "abc" and m.problems == ()
    assert m.recorded("env") and not m.recorded("config") and m.env == {"name": "e"}
    new = rd.Manifest.from_dict({"prereg": {"id": "p", "sha256": "s", "path": "x.md"}, "prereg_sha256": "old"})
    assert new.prereg_id == "p" and new.prereg_sha256 == "s"
