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
