"""`policy: lerobot` in a pre-registration (issue 25): any lerobot checkpoint, pinned like MolmoAct2's."""

from __future__ import annotations

from prereg.document.read import parse
from tests.prereg.test_prereg_document import GOOD, line_of, problems_of

PIN = "sha256:" + "ab" * 32
ARM = f"""  - name: act
    policy: lerobot
    checkpoint: lab/act-so101
    revision: {"1" * 40}
"""


def _with(arm: str) -> str:
    return GOOD.replace("  - name: b\n", arm + "  - name: b\n", 1)


def test_a_lerobot_arm_names_its_checkpoint_pin_and_shim():
    doc = parse(_with(ARM))
    assert doc.problems == []
    arm = doc.find_arm("act")[0]
    assert (arm.policy, arm.checkpoint, arm.convmap, arm.decode, arm.features) == (
        "lerobot", "lab/act-so101", "identity", None, ())  # the shim applies, identity unless the plan says


def test_features_map_checkpoint_inputs_to_sim_inputs():
    text = _with(ARM.replace("    policy: lerobot\n", "    policy: lerobot\n    features: {observation.images.top: front}\n"))
    doc = parse(text)
    assert doc.problems == [] and doc.find_arm("act")[0].features == ("observation.images.top=front",)
    (pr,) = problems_of(text.replace("    features: {observation.images.top: front}\n", "    features: [front]\n"))
    assert pr.field == "arms[1].features" and "must map" in pr.message


def test_what_does_not_apply_to_a_lerobot_arm_is_refused_where_written():
    text = _with(ARM + "    decode: flow\n")
    (pr,) = problems_of(text)
    assert pr.field == "arms[1].decode" and "does not apply to a lerobot policy" in pr.message
    (pr,) = problems_of(_with(ARM.replace(f"    revision: {'1' * 40}\n", "    revision: main\n")))
    assert pr.field == "arms[1].revision" and "not immutable" in pr.message
    (pr,) = problems_of(_with(ARM.replace("    checkpoint: lab/act-so101\n", "")))
    assert pr.field == "arms[1].checkpoint"
    text = GOOD.replace("    policy: scripted\n", "    policy: scripted\n    features: {a: front}\n", 1)
    (pr,) = problems_of(text)
    assert pr.field == "arms[1].features" and pr.line == line_of(text, "features:")
    assert parse(_with(ARM.replace(f"{'1' * 40}", PIN))).problems == []  # a local directory: its weights' sha256


def test_a_run_that_loaded_another_pin_is_invalid_naming_the_checkpoints_files(tmp_path, run_dir):
    """The report compares the pin the engine recorded (what loaded) with the registered one: a local
    checkpoint's pin is one hash of every file its loader read, so any changed file is another pin."""
    from prereg.document.seal import freeze
    from prereg.outputs.report import read_registration
    from tests.prereg.conftest import make_row

    doc = tmp_path / "act.md"
    doc.write_text(_with(ARM.replace(f"{'1' * 40}", PIN)))
    freeze(doc, now="2026-01-01T00:00:00Z")
    files = {"config.json": "c" * 64, "model.safetensors": "d" * 64, "policy_postprocessor.json": "e" * 64}
    resolved = {"policy": "lerobot", "revision": None, "pin": "sha256:" + "cd" * 32, "checkpoint_path": "/lab/act",
                "files": files}
    rows = [make_row(s) for s in range(3)]
    bad = run_dir("bad", rows, status={"state": "done"}, launched=(doc, "act"), manifest={"policy_resolved": resolved})
    good = run_dir("good", rows, status={"state": "done"}, launched=(doc, "act"),
                   manifest={"policy_resolved": {**resolved, "pin": PIN}})
    _, reps, _ = read_registration(doc, {"act": bad})
    (why,) = [c.text for c in reps["act"].reads.checks if not c.ok and c.name == "provenance"]
    assert why.startswith(f"recorded revision 'sha256:{'cd' * 32}' is not the registered '{PIN}'")
    assert "the checkpoint /lab/act loaded with files config.json, model.safetensors, policy_postprocessor.json" in why
    _, reps, _ = read_registration(doc, {"act": good})
    assert not [c for c in reps["act"].reads.checks if c.name == "provenance" and not c.ok]


def test_the_report_says_which_level_of_reproducibility_the_rows_have(tmp_path, run_dir):
    import json

    from prereg.document.seal import freeze
    from prereg.outputs.report import build_report
    from tests.prereg.conftest import make_row

    doc = tmp_path / "act.md"
    doc.write_text(_with(ARM.replace(f"{'1' * 40}", PIN)))
    freeze(doc, now="2026-01-01T00:00:00Z")
    resolved = {"policy": "lerobot", "pin": PIN, "rows": "batch-dependent", "batching": "batched"}
    run = run_dir("act", [make_row(s) for s in range(3)], status={"state": "done"}, launched=(doc, "act"),
                  manifest={"policy_resolved": resolved})
    rep = build_report(doc, {"act": run}, append=False, now="2026-01-01T01:00:00Z")
    assert rep.arms["act"].rows_level == "batch-dependent"
    assert any(n.startswith("rows batch-dependent: served batched") for n in rep.arms["act"].reads.notes)
    assert json.loads((run / "results.json").read_text())["rows_level"] == "batch-dependent"
    assert "- Note: rows batch-dependent: served batched" in (run / "results.md").read_text()
