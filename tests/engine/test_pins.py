"""Pins at the point of use (issue 32, point 4): one byte of every pinned input changed in turn, before
the launch and during it; the launch is refused (exit 2, one line naming what changed) or the run fails
before its first episode naming the file. What is hashed is what runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.cli.main import main
from prereg.document.seal import freeze


def plan(arm: str, protocol: str = "", seconds: float = 1) -> str:
    """A one-arm plan: `arm` (its YAML lines after `name:`), one seed, `protocol` lines added."""
    return (f"---\nfontaine: fontaine-prereg/1\nid: pins\ntitle: one pinned arm\ncreated: 2026-12-01\narms:\n"
            f"  - name: {arm}\nprotocol:\n  seeds: [0]\n  episode_seconds: {seconds}\n  workers: 1\n  video_draw: none\n"
            f"{protocol}reads:\n  primary: successes\ngates:\n  gpu_hours: 0.5\n---\n\nRegistered before its launch.\n")


def flip_one_byte(path: Path) -> bytes:
    """Change one byte, keeping the file readable as what it is (a JSON file's last digit, a binary file's
    last byte: a weight or a statistic); returns the original bytes."""
    data = path.read_bytes()
    if path.suffix == ".json":  # a number's last digit (outside strings: not a file name the JSON names)
        i = max(m.start() for m in re.finditer(rb"[0-9]", _unquoted(data)))
        changed = data[:i] + bytes([ord("0") + (data[i] - ord("0") + 1) % 10]) + data[i + 1:]
    else:
        changed = data[:-1] + bytes([data[-1] ^ 1])
    path.write_bytes(changed)
    return data


def _unquoted(data: bytes) -> bytes:
    """`data` with every byte inside a JSON string blanked (same length)."""
    out, inside, escaped = bytearray(), False, False
    for b in data:
        if inside:
            out.append(32)
            if escaped:
                escaped = False
            elif b == ord("\\"):
                escaped = True
            elif b == ord('"'):
                inside = False
        else:
            inside = b == ord('"')
            out.append(32 if inside else b)
    return bytes(out)


@pytest.fixture
def pinned(tmp_path):
    pytest.importorskip("lerobot")
    from engine.policies.lerobot_policy import loader_files, probe
    from tests.engine.lerobot_fixtures import build_checkpoint

    def make(kind="act"):
        ckpt = build_checkpoint(tmp_path / kind, kind)
        probe.cache_clear()
        doc = tmp_path / f"{kind}.md"
        doc.write_text(plan(f"act\n    policy: lerobot\n    checkpoint: {ckpt}\n    revision: {probe(str(ckpt)).pin}"))
        freeze(doc)
        return ckpt, doc, loader_files(ckpt)

    yield make
    probe.cache_clear()


def launch(doc: Path, run_dir: Path) -> int:
    from engine.policies.lerobot_policy import probe

    probe.cache_clear()  # a launch is a new process: nothing hashed before it is remembered
    return main(["--prereg", str(doc), "--arm", "act", "--device", "cpu", "--render-size", "48",
                 "--run-dir", str(run_dir)])


def test_every_file_the_loader_reads_is_pinned(pinned):
    ckpt, _, files = pinned()
    assert files == sorted(p.name for p in ckpt.iterdir())  # config, weights, both processors, both state files
    assert any("normalizer_processor.safetensors" in f for f in files) and "config.json" in files


def test_one_byte_changed_in_any_file_before_the_launch_is_refused(pinned, tmp_path, capsys):
    ckpt, doc, files = pinned()
    for name in files:
        original = flip_one_byte(ckpt / name)
        run_dir = tmp_path / "runs" / f"before-{name}"
        code = launch(doc, run_dir)
        err = capsys.readouterr().err.strip()
        assert code == 2 and "refused: the pre-registration pins" in err and len(err.splitlines()) == 1, (name, err)
        assert not run_dir.exists(), name  # nothing written
        (ckpt / name).write_bytes(original)


def test_one_byte_changed_in_any_file_while_the_policy_loads_fails_the_launch_naming_it(pinned, tmp_path, capsys,
                                                                                        monkeypatch):
    """Chunk serving (ACT, in the driver): the byte changes after the pin was checked, while lerobot reads the
    checkpoint; the files are hashed again once loaded, and the run ends before its first episode."""
    import engine.policies.lerobot_policy as lp

    ckpt, doc, files = pinned()
    real = lp._processors
    for name in files:
        saved = {}

        def while_loading(info, device, name=name, saved=saved):
            saved["bytes"] = flip_one_byte(ckpt / name)
            return real(info, device)

        monkeypatch.setattr(lp, "_processors", while_loading)
        run_dir = tmp_path / "runs" / f"during-{name}"
        code = launch(doc, run_dir)
        err = capsys.readouterr().err
        assert code == 2 and f"changed while it was being loaded: {name} (" in err, (name, err)
        status = json.loads((run_dir / "status.json").read_text())
        assert status["state"] == "failed" and name in status["reason"]
        assert not (run_dir / "rows.jsonl").exists() or not (run_dir / "rows.jsonl").read_text()  # no episode ran
        (ckpt / name).write_bytes(saved["bytes"])


def test_a_file_changed_after_the_run_recorded_it_stops_every_worker_that_would_load_it(pinned, tmp_path, capsys,
                                                                                        monkeypatch):
    """Step serving (Diffusion: each worker loads its own copy): a byte changed after fontaine-eval hashed and
    recorded the files, before the workers load; each worker loads against the recorded hashes and refuses."""
    import engine.policies.factory as factory

    ckpt, doc, _ = pinned("diffusion")
    real = factory.describe_unserved
    saved = {}

    def after_recording(spec):
        saved["bytes"] = flip_one_byte(ckpt / "policy_preprocessor_step_3_normalizer_processor.safetensors")
        return real(spec)

    monkeypatch.setattr(factory, "describe_unserved", after_recording)
    run_dir = tmp_path / "runs" / "step"
    code = main(["--prereg", str(doc), "--arm", "act", "--device", "cpu", "--render-size", "48",
                 "--run-dir", str(run_dir)])
    err = capsys.readouterr().err
    status = json.loads((run_dir / "status.json").read_text())
    assert code == 2 and status["state"] == "failed" and status["reason"].startswith("could not start: worker ")
    assert ("changed after the run recorded it: policy_preprocessor_step_3_normalizer_processor.safetensors ("
            in status["reason"]) and len(err.strip().splitlines()) == 1
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["policy_resolved"]["files"] == manifest["policy"]["extra"]["lerobot_files"]  # what it recorded


# ---------------------------------------------------------------- a plugin policy, pinned by its installed files



@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """docs/policies.md's example as an installed distribution (a package beside its dist-info) on sys.path,
    and a frozen plan pinning it."""
    import importlib
    import sys

    from engine.policies.plugins import _entry_point, plugin_source
    from tests.helpers import REPO

    site = tmp_path / "site"
    pkg = site / "lab_policy"
    pkg.mkdir(parents=True)
    text = (REPO / "docs" / "policies.md").read_text()
    (pkg / "policy.py").write_text(next(b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                                        if "class TowardsMiddle" in b))
    (pkg / "__init__.py").write_text("from lab_policy.policy import TowardsMiddle  # noqa: F401\nGAIN = 0.1\n")
    dist = site / "lab_policy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-policy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[fontaine.policies]\ntowards-middle = lab_policy:TowardsMiddle\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    src = plugin_source(_entry_point("towards-middle"))
    assert src.distribution == "lab-policy" and src.version == "0.1"
    doc = tmp_path / "plugin.md"
    doc.write_text(plan(f"mine\n    policy: plugin\n    checkpoint: towards-middle\n    revision: {src.pin}"))
    freeze(doc)
    yield doc, pkg, dist
    for m in [m for m in sys.modules if m == "lab_policy" or m.startswith("lab_policy.")]:
        del sys.modules[m]


def launch_plugin(doc: Path, run_dir: Path) -> int:
    return main(["--prereg", str(doc), "--arm", "mine", "--run-dir", str(run_dir)])


def test_a_plugin_arm_launches_pinned_and_the_manifest_records_what_ran(installed_plugin, tmp_path):
    doc, pkg, _ = installed_plugin
    run_dir = tmp_path / "runs" / "ok"
    assert launch_plugin(doc, run_dir) == 0
    resolved = json.loads((run_dir / "manifest.json").read_text())["policy_resolved"]
    assert resolved["distribution"] == "lab-policy" and resolved["version"] == "0.1"
    assert sorted(resolved["files"]) == ["lab_policy/__init__.py", "lab_policy/policy.py"]
    assert resolved["pin"] == doc.read_text().split("revision: ")[1].split()[0]
    from prereg.outputs.report import read_registration

    _, reps, _ = read_registration(doc, {"mine": run_dir})
    assert reps["mine"].reads.valid, [c.text for c in reps["mine"].reads.checks if not c.ok]


def test_one_byte_of_the_plugin_or_its_version_changed_before_the_launch_is_refused(installed_plugin, tmp_path, capsys):
    doc, pkg, dist = installed_plugin
    for path in (pkg / "__init__.py", pkg / "policy.py", dist / "METADATA"):
        original = path.read_bytes()
        path.write_bytes(original.replace(b"0.1", b"0.2", 1))  # a gain, a version: one byte
        assert path.read_bytes() != original
        run_dir = tmp_path / "runs" / path.name
        code = launch_plugin(doc, run_dir)
        err = capsys.readouterr().err.strip()
        assert code == 2 and "refused: the pre-registration pins policy towards-middle" in err, (path, err)
        assert len(err.splitlines()) == 1 and not run_dir.exists()
        path.write_bytes(original)


def test_one_byte_of_the_plugin_changed_while_it_loads_fails_the_launch_naming_it(installed_plugin, tmp_path, capsys,
                                                                                 monkeypatch):
    import engine.policies.plugins as plugins

    doc, pkg, _ = installed_plugin
    real = plugins.plugin_source
    for name in ("__init__.py", "policy.py"):
        calls, saved = [], {}

        def then_edited(ep, name=name, calls=calls, saved=saved):
            src = real(ep)
            calls.append(1)
            if len(calls) == 2:  # the driver's load hashed it: the file changes before the import reads it
                saved["bytes"] = (pkg / name).read_bytes()
                (pkg / name).write_bytes(saved["bytes"].replace(b"0.1", b"0.2", 1))  # one byte: the gain
            return src

        monkeypatch.setattr(plugins, "plugin_source", then_edited)
        run_dir = tmp_path / "runs" / f"during-{name}"
        code = launch_plugin(doc, run_dir)
        err = capsys.readouterr().err
        assert code == 2 and f"changed while it was being loaded: lab_policy/{name} (" in err, (name, err)
        assert json.loads((run_dir / "status.json").read_text())["state"] == "failed"
        (pkg / name).write_bytes(saved["bytes"])


# ---------------------------------------------------------------- an env file, read once: hashed and run from those bytes


ENV_FILES = ("env.yaml", "scene.xml", "meshes/block.stl")


def _edit(path: Path) -> bytes:
    """One edit a lab might make, returning the original bytes: the block 9 kg, the success radius
    1 mm, the mesh's last byte."""
    data = path.read_bytes()
    if path.name == "scene.xml":
        path.write_bytes(data.replace(b'mass="0.015"', b'mass="9"'))
    elif path.name == "env.yaml":
        path.write_bytes(data.replace(b"radius_m: 0.045", b"radius_m: 0.001"))
    else:
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert path.read_bytes() != data
    return data


@pytest.fixture
def lab_plan(tmp_path):
    from engine.envs import env_sha256
    from tests.engine.env_file_fixture import write_env

    env = write_env(tmp_path / "lab")
    doc = tmp_path / "plan.md"
    doc.write_text(plan("lab\n    policy: scripted", f"  env: lab/env.yaml\n  env_sha256: {env_sha256(str(env))}\n",
                        seconds=12))
    freeze(doc)
    return doc, env.parent


def test_one_file_of_an_env_changed_before_the_launch_is_refused(lab_plan, tmp_path, capsys):
    doc, lab = lab_plan
    for name in ENV_FILES:
        original = _edit(lab / name)
        run_dir = tmp_path / "runs" / name.replace("/", "-")
        code = main(["--prereg", str(doc), "--arm", "lab", "--run-dir", str(run_dir)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and "the env file changed" in err and len(err.splitlines()) == 1, (name, err)
        assert not run_dir.exists()
        (lab / name).write_bytes(original)


def test_edits_after_the_launch_read_the_env_cannot_reach_the_run(lab_plan, tmp_path, monkeypatch):
    """The issue's edit, made once the launch has read and hashed the files: a 9 kg block and a 1 mm success
    radius. The run is the hashed bytes (the driver's compile and the worker's declaration alike): the
    oracle places the block, the manifest's hash is the pinned one and the report says VALID."""
    import engine.envs.envfile as envfile
    from engine.envs import pinned
    from prereg.outputs.report import read_registration

    doc, lab = lab_plan
    real, originals = envfile.pin, {}

    def then_edited(ref):
        decl = real(ref)
        for name in ENV_FILES[:2]:
            originals[name] = _edit(lab / name)
        return decl

    monkeypatch.setattr(envfile, "pin", then_edited)
    run_dir = tmp_path / "runs" / "edited"
    assert main(["--prereg", str(doc), "--arm", "lab", "--run-dir", str(run_dir)]) == 0
    assert not pinned.pinned()  # kept for that run only
    (row,) = [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]
    assert row["status"] == "ok" and row["success"], row
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env"]["sha256"] == doc.read_text().split("env_sha256: ")[1].split()[0]
    _, reps, _ = read_registration(doc, {"lab": run_dir})
    assert reps["lab"].reads.valid, [c.text for c in reps["lab"].reads.checks if not c.ok]
    monkeypatch.setattr(envfile, "pin", real)
    plain = tmp_path / "runs" / "as-edited"  # the same files, unpinned: the edits do reach a run that reads them
    assert main(["--policy", "scripted", "--env", str(lab / "env.yaml"), "--seeds", "0", "--episode-seconds", "12",
                 "--video-draw", "none", "--run-dir", str(plain)]) == 0
    (row,) = [json.loads(line) for line in (plain / "rows.jsonl").read_text().splitlines()]
    assert not row["success"]
    for name, data in originals.items():
        (lab / name).write_bytes(data)


def test_a_mesh_edited_after_the_pin_is_not_what_compiles(lab_plan):
    from engine.envs import env_sha256, pinned
    from engine.envs.envfile import _compiled, pin

    _, lab = lab_plan
    try:
        decl = pin(lab / "env.yaml")
        digest, model = env_sha256(str(lab / "env.yaml")), _compiled(decl)
        original = _edit(lab / "meshes" / "block.stl")
        assert env_sha256(str(lab / "env.yaml")) == digest  # hashed from the pinned bytes
        assert (_compiled(decl).mesh_vert == model.mesh_vert).all()  # compiled from them
        pinned.clear()
        assert env_sha256(str(lab / "env.yaml")) != digest  # unpinned: the disk's, edited
        (lab / "meshes" / "block.stl").write_bytes(original)
    finally:
        pinned.clear()
