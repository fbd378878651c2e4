"""Freeze, amend, verify: one changed character in a frozen section is caught, and named."""

from __future__ import annotations

import re

import pytest

from prereg.core.errors import PreregError
from prereg.document.launch import resolve_launch
from prereg.document.read import load
from prereg.document.seal import CHAIN, CHANGED, INTACT, OPEN, amend, freeze, verify
from tests.prereg.test_prereg_document import GOOD


def edit(path, old, new, count=1):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def test_shipped_examples_are_frozen_and_verify(examples_dir):
    for p in sorted(examples_dir.glob("*.md")):
        v = verify(p)
        assert v.frozen and v.ok, (p, [c.message for c in v.checks])
        assert all(c.state == INTACT for c in v.checks)


def test_one_character_in_the_plain_words_fails_verify_and_launch(demo):
    edit(demo, "learned nothing", "learned nothinG")
    v = verify(demo)
    assert not v.ok
    bad = v.first_failure()
    assert bad.section == "base" and bad.state == CHANGED and "plain words" in bad.message
    with pytest.raises(PreregError, match="changed since it was frozen"):
        resolve_launch(demo, "scripted")


def test_one_character_in_the_front_matter_names_the_field(demo):
    edit(demo, "episode_seconds: 20", "episode_seconds: 21")
    bad = verify(demo).first_failure()
    assert bad.changed_parts == ["yaml:protocol"]
    assert "field 'protocol'" in bad.message
    with pytest.raises(PreregError) as exc:
        resolve_launch(demo, "tiny-masked")
    msg = str(exc.value)
    assert f"{demo}:1:" in msg and "amend" in msg  # where, and what to do


def test_editing_the_seal_time_fails(demo):
    text = demo.read_text()
    demo.write_text(re.sub(r"frozen_at=(\S+)", "frozen_at=2020-01-01T00:00:00Z", text, count=1))
    assert verify(demo).first_failure().state == CHANGED


def test_trailing_whitespace_and_crlf_are_forgiven(demo):
    text = demo.read_text()
    demo.write_bytes(text.replace("learned nothing, so its\n", "learned nothing, so its   \n").replace("\n", "\r\n").encode())
    assert verify(demo).ok


def test_notes_after_the_seal_and_results_blocks_may_change(demo):
    with demo.open("a") as fh:
        fh.write("\nA note written after the freeze: the scripted arm ran first.\n")
        fh.write("<!-- fontaine:results begin arms=x -->\nRESULTS-TOKEN-1\n<!-- fontaine:results end -->\n")
    assert verify(demo).ok
    edit(demo, "RESULTS-TOKEN-1", "something else")
    assert verify(demo).ok
    resolve_launch(demo, "scripted")


def test_unfrozen_document_cannot_launch(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    v = verify(p)
    assert not v.frozen and v.checks[0].state == OPEN
    with pytest.raises(PreregError, match="not frozen.*fontaine-prereg freeze"):
        resolve_launch(p, "a")


def test_freeze_refuses_an_invalid_document(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD.replace("gpu_hours: 0.5", "gpu_hours: -1"))
    with pytest.raises(PreregError) as exc:
        freeze(p)
    assert "gates.gpu_hours" in str(exc.value) and f"{p}:" in str(exc.value)
    assert "fontaine:sealed" not in p.read_text()


def test_freeze_then_freeze_again_is_a_no_op(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    res = freeze(p, now="2026-11-30T08:00:00Z", commit="abc")
    assert res.section == "base" and len(res.sha256) == 64
    before = p.read_text()
    assert freeze(p) is None
    assert p.read_text() == before
    assert resolve_launch(p, "a").prereg_sha256 == res.sha256


def test_the_hash_is_reproducible(tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(GOOD)
    b.write_text(GOOD)
    ra = freeze(a, now="2026-11-30T08:00:00Z", commit="abc")
    rb = freeze(b, now="2026-11-30T08:00:00Z", commit="abc")
    assert ra.sha256 == rb.sha256
    c = tmp_path / "c.md"
    c.write_text(GOOD.replace("go", "gO"))
    assert freeze(c, now="2026-11-30T08:00:00Z", commit="abc").sha256 != ra.sha256


def test_amendment_chain(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    base = freeze(p)
    n = amend(p, title="arm c: masked", from_arm="a", name="c", sets={"decode": "grammar-masked"})
    assert n == 1
    with pytest.raises(PreregError, match="amendment-1, which is not frozen"):
        resolve_launch(p, "c")
    resolve_launch(p, "a")  # the base stays launchable while an amendment is open
    with pytest.raises(PreregError, match="amendment-1 is not frozen yet"):
        amend(p, title="too soon")
    a1 = freeze(p)
    assert a1.section == "amendment-1"
    doc = load(p)
    seal = doc.layout.sections[1].seal
    assert seal.parent == base.sha256
    spec = resolve_launch(p, "c")
    assert spec.prereg_sha256 == a1.sha256 and spec.decode == "grammar-masked" and spec.section == "amendment-1"
    assert spec.seeds == list(range(10))  # the protocol is inherited from the parent
    a2 = amend(p, data={"arms": [{"name": "d", "policy": "scripted"}], "protocol": {"seeds": [6]},
                        "gates": {"gpu_hours": 0.05}})
    assert a2 == 2
    freeze(p)
    d = resolve_launch(p, "d")
    assert d.seeds == [6] and d.gates.gpu_hours == 0.05 and d.gates.pace_limit_hours == 1.0
    assert verify(p).ok


def test_a_changed_amendment_is_named(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, title="arm c", from_arm="a", name="c", sets={"decode": "grammar-masked"}, why="Because masks.")
    freeze(p)
    edit(p, "Because masks.", "Because masks!")
    v = verify(p)
    assert v.check("base").state == INTACT
    assert v.check("amendment-1").state == CHANGED
    with pytest.raises(PreregError, match="amendment-1"):
        resolve_launch(p, "c")
    with pytest.raises(PreregError, match="amendment-1"):
        resolve_launch(p, "a")  # a modified document is refused whole


def test_a_broken_chain_is_caught(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, from_arm="a", name="c", sets={"decode": "grammar-masked"})
    freeze(p)
    text = p.read_text()
    # re-freezing the base under a different hash (e.g. after an edit) breaks the amendment's chain
    p.write_text(text.replace("then: go", "then: go!"))
    lines = p.read_text().splitlines()
    base_seal = next(i for i, ln in enumerate(lines) if "section=base" in ln)
    del lines[base_seal:base_seal + 2]
    p.write_text("\n".join(lines) + "\n")
    assert load(p).problems  # the amendment now follows an unfrozen base
    v = verify(p)
    assert not v.ok and v.check("amendment-1").state == CHAIN


def test_amend_refuses_an_unfrozen_base(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    with pytest.raises(PreregError, match="not frozen"):
        amend(p, title="x")


def test_amend_template_does_not_validate_until_edited(tmp_path):
    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, title="x")
    doc = load(p)
    assert any(pr.field.startswith("amendment-1.arms[0].name") for pr in doc.problems)
    with pytest.raises(PreregError, match="does not validate"):
        freeze(p)


def test_a_draft_amendment_does_not_block_frozen_arms(tmp_path):
    from prereg.document.launch import launchable_arms

    p = tmp_path / "t.md"
    p.write_text(GOOD)
    freeze(p)
    amend(p, title="draft")  # the template's placeholder arm name does not validate yet
    assert load(p).problems
    assert resolve_launch(p, "a").arm == "a"
    assert launchable_arms(p) == ["a", "b"]
    with pytest.raises(PreregError, match="draft"):
        resolve_launch(p, "new-arm")


def test_every_single_character_edit_in_a_frozen_section_is_caught(demo):
    import random

    text = demo.read_text()
    seal_at = text.index("<!-- fontaine:sealed")
    rng = random.Random(7)
    positions = [i for i in range(seal_at) if not text[i].isspace()]
    for i in rng.sample(positions, 40):
        ch = "X" if text[i] != "X" else "Y"
        demo.write_text(text[:i] + ch + text[i + 1:])
        v = verify(demo)
        assert not v.ok and v.first_failure().section == "base", (i, text[i])
    demo.write_text(text)
    assert verify(demo).ok
