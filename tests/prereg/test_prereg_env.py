"""A pre-registration names its env (issue 23): `env` and its pinned `env_sha256` in the protocol
or per arm; the launch takes them from the document; a run on another env, or on the same env
changed after freezing, is INVALID with the reason. Plans without `env` (the shipped examples)
mean boat-on-disk."""

from __future__ import annotations

import json

from prereg.document.launch import resolve_launch
from prereg.document.read import load
from prereg.document.seal import amend, freeze
from prereg.outputs.provenance import manifest_problems
from tests.prereg.conftest import launched_manifest

PIN = "ab" * 32
OTHER = "cd" * 32


def _write_manifest(tmp_path, doc, arm, **over):
    d = tmp_path / f"run-{arm}-{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(launched_manifest(doc, arm, **over)))
    return d


def _amended(demo, arm: dict):
    amend(demo, data={"arms": [arm]}, title="pick-lift arm", why="A second scene, registered before its launch.")
    return demo


def test_the_shipped_plans_mean_boat_on_disk(demo, tmp_path):
    spec = resolve_launch(demo, "scripted")
    assert spec.env is None and spec.env_sha256 is None
    old = _write_manifest(tmp_path, demo, "scripted")  # a manifest from before envs: no env at all
    assert manifest_problems(old, spec) == []
    ok = _write_manifest(tmp_path, demo, "scripted", env={"name": "boat-on-disk", "sha256": OTHER})
    assert manifest_problems(ok, spec) == []
    other = _write_manifest(tmp_path, demo, "scripted", env={"name": "pick-lift", "sha256": OTHER})
    assert manifest_problems(other, spec) == ["recorded env 'pick-lift' is not the registered 'boat-on-disk'"]


def test_an_arm_names_its_env_and_a_changed_env_is_invalid(demo, tmp_path):
    _amended(demo, {"name": "lift", "policy": "scripted", "env": "pick-lift", "env_sha256": PIN})
    assert load(demo).ok, load(demo).problems
    freeze(demo, now="2026-12-01T10:00:00Z")
    spec = resolve_launch(demo, "lift")
    assert (spec.env, spec.env_sha256) == ("pick-lift", PIN)
    assert resolve_launch(demo, "scripted").env is None  # the base arms keep theirs
    same = _write_manifest(tmp_path, demo, "lift", env={"name": "pick-lift", "sha256": PIN})
    assert manifest_problems(same, spec) == []
    changed = _write_manifest(tmp_path, demo, "lift", env={"name": "pick-lift", "sha256": OTHER})
    (why,) = manifest_problems(changed, spec)
    assert "the env pick-lift changed after freezing" in why and OTHER[:12] in why and PIN[:12] in why
    boat = _write_manifest(tmp_path, demo, "lift", env={"name": "boat-on-disk", "sha256": PIN})
    assert manifest_problems(boat, spec) == ["recorded env 'boat-on-disk' is not the registered 'pick-lift'"]


def test_an_env_must_be_pinned_and_well_formed_before_freezing(demo):
    _amended(demo, {"name": "lift", "policy": "scripted", "env": "pick-lift"})
    (p,) = [p for p in load(demo).problems if p.field.endswith("env_sha256")]
    assert p.message.startswith("missing") and "--list-envs --env pick-lift" in p.hint
    text = demo.read_text()
    indent = text.split("env: pick-lift")[0].rsplit("\n", 1)[1]
    demo.write_text(text.replace("env: pick-lift", f"env: Pick Lift\n{indent}env_sha256: nothex"))
    msgs = " | ".join(str(p) for p in load(demo).problems)
    assert "'Pick Lift' is not an env" in msgs and "'nothex' is not a sha256" in msgs  # one line per problem
    demo.write_text(text.replace("env: pick-lift", f"env: lab/scene.yaml\n{indent}env_sha256: {PIN}"))
    assert load(demo).ok


def test_the_protocol_names_the_env_for_every_arm(demo):
    text = demo.read_text()
    draft = demo.with_name("draft.md")
    body = text.split("\n<!--", 1)[0] if "\n<!--" in text else text
    draft.write_text(body.replace("  video_draw: 0\n", f"  video_draw: 0\n  env: pick-lift\n  env_sha256: {PIN}\n", 1))
    doc = load(draft)
    proto = doc.sections[0].protocol
    assert (proto.env, proto.env_sha256) == ("pick-lift", PIN)


def test_an_arm_may_name_a_gymnasium_env_and_its_run_is_checked_by_name_and_content(demo, tmp_path):
    """Issue 34: `env: gym:ID` (a Gymnasium env with Fontaine's adapter) validates, is pinned like any
    env, and a run recorded on it (manifest env name gym:ID) is valid only with the pinned content."""
    gym = "gym:MuJoCoPickAndPlace-v1"
    _amended(demo, {"name": "nexus", "policy": "scripted", "env": gym, "env_sha256": PIN})
    assert load(demo).ok, load(demo).problems
    freeze(demo, now="2026-12-01T10:00:00Z")
    spec = resolve_launch(demo, "nexus")
    assert (spec.env, spec.env_sha256) == (gym, PIN)
    same = _write_manifest(tmp_path, demo, "nexus", env={"name": gym, "sha256": PIN, "gym": "MuJoCoPickAndPlace-v1"})
    assert manifest_problems(same, spec) == []
    changed = _write_manifest(tmp_path, demo, "nexus", env={"name": gym, "sha256": OTHER})
    (why,) = manifest_problems(changed, spec)
    assert f"the env {gym} changed after freezing" in why


def test_a_gym_env_that_is_not_an_id_is_refused(demo):
    _amended(demo, {"name": "nexus", "policy": "scripted", "env": "gym:", "env_sha256": PIN})
    (problem,) = [p for p in load(demo).problems if "is not an env" in p.message]
    assert "'gym:' is not an env" in problem.message and "gym:ID" in problem.hint
