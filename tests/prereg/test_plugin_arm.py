"""`policy: plugin` in a pre-registration (issue 32): a lab's own policy, its entry point named as the
arm's checkpoint and pinned by the content of its installed package (`sha256:<plugin_sha256>`)."""

from __future__ import annotations

from prereg.document.read import parse
from tests.prereg.test_lerobot_arm import _with
from tests.prereg.test_prereg_document import problems_of

PIN = "sha256:" + "cd" * 32
ARM = f"""  - name: mine
    policy: plugin
    checkpoint: towards-middle
    revision: {PIN}
"""


def test_a_plugin_arm_names_its_entry_point_and_its_pin():
    doc = parse(_with(ARM))
    assert doc.problems == []
    arm = doc.find_arm("mine")[0]
    assert (arm.policy, arm.checkpoint, arm.revision, arm.convmap) == ("plugin", "towards-middle", PIN, "identity")


def test_a_plugin_arm_without_a_content_pin_or_with_what_does_not_apply_is_refused_where_written():
    (pr,) = problems_of(_with(ARM.replace(f"    revision: {PIN}\n", "")))
    assert pr.field == "arms[1].revision" and "pinned by the content of its installed package" in pr.message
    (pr,) = problems_of(_with(ARM.replace(PIN, "1" * 40)))
    assert pr.field == "arms[1].revision" and "does not pin a plugin policy" in pr.message
    (pr,) = problems_of(_with(ARM + "    decode: flow\n"))
    assert pr.field == "arms[1].decode" and "does not apply to a plugin policy" in pr.message
    (pr,) = problems_of(_with(ARM.replace("    checkpoint: towards-middle\n", "")))
    assert pr.field == "arms[1].checkpoint" and "entry point" in pr.hint
