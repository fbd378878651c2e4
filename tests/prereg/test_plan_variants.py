"""A plan's crossed design (issue 48): `protocol.variants` (the env's variant names, or a mapping declaring them
inline), `read_variant` and `pool_cameras` are read into the Protocol, carried to the launch, frozen with the
plan, and a bad shape is reported with its field and line."""

from __future__ import annotations

import pytest

from prereg.document.launch import resolve_launch
from prereg.document.read import load, parse
from prereg.document.seal import amend, freeze, verify
from prereg.document.template import render
from tests.prereg.test_prereg_document import GOOD, line_of

INLINE = """  variants:
    dim-light:
      lighting: {direction: [0.3, 0.0, -1.0], intensity: 0.35}
    camera-left:
      camera_offsets: {front: [0.0, 0.02, 0.0]}
  read_variant: dim-light
  pool_cameras: true
"""


def with_protocol(extra: str) -> str:
    return GOOD.replace("  workers: 2\n", "  workers: 2\n" + extra, 1)


def test_a_plan_without_variants_runs_base_alone():
    p = parse(GOOD, "t.md").sections[0].protocol
    assert (p.variants, p.variant_declarations, p.read_variant, p.pool_cameras) == ((), {}, "base", False)


def test_a_list_names_the_envs_variants_in_order():
    doc = parse(with_protocol("  variants: [dark-table, clutter]\n  read_variant: clutter\n"), "t.md")
    assert doc.problems == []
    p = doc.sections[0].protocol
    assert p.variants == ("dark-table", "clutter") and p.variant_declarations == {} and p.read_variant == "clutter"
    assert p.pool_cameras is False


def test_a_mapping_declares_them_inline_and_the_launch_carries_them(tmp_path):
    doc = parse(with_protocol(INLINE), "t.md")
    assert doc.problems == []
    p = doc.sections[0].protocol
    assert p.variants == ("dim-light", "camera-left") and p.read_variant == "dim-light" and p.pool_cameras is True
    assert p.variant_declarations["camera-left"] == {"camera_offsets": {"front": [0.0, 0.02, 0.0]}}
    path = tmp_path / "plan.md"
    path.write_text(with_protocol(INLINE))
    freeze(path)
    spec = resolve_launch(path, "b")
    assert spec.variants == ("dim-light", "camera-left") and spec.read_variant == "dim-light" and spec.pool_cameras
    assert spec.variant_declarations["dim-light"]["lighting"]["intensity"] == 0.35


def test_they_are_frozen_with_the_plan(tmp_path):
    path = tmp_path / "plan.md"
    path.write_text(with_protocol(INLINE))
    freeze(path)
    assert verify(path).ok
    path.write_text(path.read_text().replace("intensity: 0.35", "intensity: 0.5"))
    assert not verify(path).ok  # an inline declaration edited after freezing breaks the seal


@pytest.mark.parametrize("extra, field, needle, says", [
    ("  variants: dim\n", "protocol.variants", "variants: dim", "lists no variant"),
    ("  variants: []\n", "protocol.variants", "variants: []", "lists no variant"),
    ("  variants: [dim, Dim_2]\n", "protocol.variants[1]", "variants: [dim", "'Dim_2' is not a variant name"),
    ("  variants: [base]\n", "protocol.variants[0]", "variants: [base]", "'base' is not a variant name"),
    ("  variants: [dim, dim]\n", "protocol.variants[1]", "variants: [dim, dim]", "'dim' is listed twice"),
    ("  variants:\n    dim: 0.3\n", "protocol.variants.dim", "dim: 0.3", "must be a mapping of lighting, colors"),
    ("  variants:\n    dim:\n      texture: wood\n", "protocol.variants.dim.texture", "texture: wood",
     "unknown variant field 'texture'"),
    ("  variants:\n    dim:\n      lighting: {when: 2026-12-07}\n", "protocol.variants.dim.lighting", "when:",
     "holds something other than numbers"),
    ("  variants: [dim]\n  read_variant: bright\n", "protocol.read_variant", "read_variant: bright",
     "read_variant 'bright' is not among the variants run (base, dim)"),
    ("  read_variant: 3\n", "protocol.read_variant", "read_variant: 3", "3 is not a variant name"),
    ("  pool_cameras: yes please\n", "protocol.pool_cameras", "pool_cameras", "must be true or false"),
])
def test_a_bad_shape_names_its_field_and_line(extra, field, needle, says):
    text = with_protocol(extra)
    problems = parse(text, "t.md").problems
    assert [(p.field, p.line) for p in problems] == [(field, line_of(text, needle))], problems
    assert says in problems[0].message


def test_an_amendment_that_reads_a_variant_the_plan_does_not_run_is_refused(tmp_path):
    path = tmp_path / "plan.md"
    path.write_text(with_protocol("  variants: [dim]\n"))
    freeze(path)
    amend(path, title="read dim", why="Why.", data={"protocol": {"read_variant": "dimm"},
                                                    "decision_rules": [{"if": "a.successes >= 2", "then": "go"}]})
    problems = [p for p in load(path).problems if "read_variant" in p.field]
    assert problems and "'dimm' is not among the variants run (base, dim)" in problems[0].message
    assert problems[0].field.endswith("protocol.read_variant") and problems[0].line > 20  # in the amendment


def test_the_template_names_the_fields_and_still_validates():
    text = render()
    assert "# variants:" in text and "# read_variant: base" in text and "# pool_cameras: false" in text
    uncommented = text.replace("  # variants: [dim-light, clutter]", "  variants: [dim-light, clutter]")
    p = parse(uncommented, "t.md").sections[0].protocol
    assert p.variants == ("dim-light", "clutter")


def test_show_lists_the_crossed_design(tmp_path, capsys):
    from prereg.outputs.cli import main

    path = tmp_path / "plan.md"
    path.write_text(with_protocol(INLINE))
    freeze(path)
    assert main(["show", str(path), "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert ("variants: base, dim-light, camera-left (declared inline); the decision reads dim-light; "
            "camera variants pooled") in out
