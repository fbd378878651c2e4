"""docs/convmap.md's measured figures are the code's: scripts/convmap_figures.py renders the section
from the scene's rig table, the fit and the coverage tripwire, and the document must hold exactly it.
When this fails, run `.venv/bin/python scripts/convmap_figures.py --write` and read the diff."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.helpers import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("convmap_figures", REPO / "scripts" / "convmap_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_doc_holds_one_generated_section():
    script = load_script()
    text = script.DOC.read_text()
    assert text.count(script.START) == 1 and text.count(script.END) == 1
    assert script.section_in(text).startswith(script.START + "\n## Measured on this repo's scene")


@pytest.mark.slow
def test_the_docs_figures_equal_the_codes():
    script = load_script()
    figures = script.figures()
    section = script.section_in(script.DOC.read_text())
    assert section == script.render(figures), "docs/convmap.md is stale: run scripts/convmap_figures.py --write"
    # the claims the issue named, read back from the document's own words
    assert re.search(rf"\b{figures['states']} states\b", section)
    roll = next(r for r in figures["coverage"] if r["joint"] == "wrist_roll")
    assert f"| wrist_roll | {roll['mapped_lo']:.1f} | {roll['mapped_hi']:.1f} | {roll['uncovered']:.1%} |" in section
    assert ("all joints pass" in section) == figures["coverage_passed"]
