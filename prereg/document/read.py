"""The pre-registration document: its layout and the model a machine reads from it.

A document is Markdown. Its front matter (YAML between `---` lines) is the base section's
machine part; the plain words follow. `fontaine-prereg freeze` appends a seal line that
freezes everything above it. An amendment starts at a `<!-- fontaine:amendment N -->` marker,
carries its machine part in a ```yaml block, and is frozen by its own seal. Text between a
seal and the next amendment marker is free (notes written after freezing), and
`<!-- fontaine:results ... -->` blocks belong to the tool. See docs/prereg.md.

Every validation problem names the field and the 1-based line of the file. The parts live along
their seams: the vocabulary (prereg/core/vocabulary.py), the layout and its
markers (prereg/document/layout.py), the model (prereg/document/model.py), validation (prereg/document/) and
the rule grammar (prereg/document/rules.py). This module reads a document: `load`, `load_valid`, `parse`.
"""

from __future__ import annotations

from pathlib import Path

from prereg.core.errors import PreregError
from prereg.core.safe_read import Unreadable, read_regular
from prereg.document.layout import parse_layout
from prereg.document.model import Document
from prereg.document.validation import build_model

DOC_MAX_BYTES = 16 * 1024 * 1024  # a document with every amendment and results block is a few hundred KB


def load(path: str | Path) -> Document:
    """Read and validate a document; problems are collected in `doc.problems`, never raised."""
    p = Path(path)
    try:  # bounded, regular files only: a FIFO named *.md would otherwise wait for a writer forever
        text = read_regular(p, DOC_MAX_BYTES).decode("utf-8")
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as read_text gave
    except FileNotFoundError:
        raise PreregError(f"{p}: no such file (check the path; `fontaine-prereg new {p}` writes a template)") from None
    except Unreadable as exc:
        raise PreregError(f"{p}: cannot be read: it {exc.why}" if exc.why.startswith("is ") else
                          f"{p}: cannot be read: {exc.why}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PreregError(f"{p}: cannot be read ({exc})") from None
    return parse(text, p)


def load_valid(path: str | Path) -> Document:
    doc = load(path)
    if doc.problems:
        raise PreregError.from_problems(
            str(doc.path), doc.problems, "does not validate",
            "fix the fields named above (`fontaine-prereg validate` lists them all)",
        )
    return doc


def parse(text: str, path: str | Path = "<document>") -> Document:
    layout = parse_layout(text)
    doc = Document(path=Path(path), text=text, layout=layout)
    doc.problems.extend(layout.problems)
    build_model(doc)
    seen, uniq = set(), []
    for pr in doc.problems:
        key = (pr.line, pr.field, pr.message)
        if key not in seen:
            seen.add(key)
            uniq.append(pr)
    doc.problems = sorted(uniq, key=lambda pr: (pr.line or 0))
    return doc
