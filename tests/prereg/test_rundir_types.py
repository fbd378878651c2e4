"""The run-directory contract as types (prereg/rundir.py): Status, Manifest, read_snapshot.

status.json and manifest.json are other processes' files: any JSON at all reads without an
exception, a wrong-typed field is None and named, and the driver's own files read clean."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from console.fixtures import make_run_dir
from prereg import rundir as rd

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
    assert rd.new_run_id("demo", "scripted", 0) == "demo-scripted-19700101-000000"
    assert rd.done_stop_name(1780000000.7) == "STOP.1780000000.done"
