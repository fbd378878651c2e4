"""YAML with line numbers, so that every validation error can name the line it is about.

PyYAML's safe constructor builds plain values but forgets where they came from; composing the
node tree first and constructing it ourselves keeps each node's position.
"""

from __future__ import annotations

import yaml

from prereg.core.errors import UsageError

Path_ = tuple  # a field path, e.g. ("arms", 1, "checkpoint")


class PosYAMLError(UsageError, ValueError):
    """YAML that cannot be read as a pre-registration, with the file line (bad input: exit 2)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


def load_with_lines(text: str, first_line: int = 1) -> tuple[object, dict[Path_, int], list[tuple[Path_, int]]]:
    """(value, {path: line}, duplicate keys) for YAML `text` whose first line is file line `first_line`.

    Raises PosYAMLError (with the file line) when the text is not YAML.
    """
    _refuse_aliases(text, first_line)
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # checks every character: a NUL or a control character is a ReaderError
        node = loader.get_single_node()
    except yaml.YAMLError as exc:  # a MarkedYAMLError says where; a ReaderError its offset
        raise PosYAMLError(f"not valid YAML: {_words(exc)}", first_line + _line_of(exc, text)) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[Path_, int] = {}
    dups: list[tuple[Path_, int]] = []
    if node is None:
        return None, lines, dups
    value = _build(loader, node, (), lines, dups, first_line)
    return value, lines, dups


MAX_DEPTH = 32  # lists and mappings nested deeper than this are refused (the composer recurses)


def _refuse_aliases(text: str, first_line: int) -> None:
    """Anchors and aliases (`&a` / `*a`) are refused: a few of them nest into an exponential
    document (a 1 KB "billion laughs" takes minutes and gigabytes), and a pre-registration
    is meant to be read by people, value by value. So is nesting deeper than MAX_DEPTH (5,000
    brackets overflowed the recursion of YAML's composer). Scanning the event stream is linear."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = first_line + event.start_mark.line
                raise PosYAMLError("YAML anchors and aliases (&name, *name) are not allowed in a pre-registration; "
                                   "write each value out", line)
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise PosYAMLError(f"lists and mappings nested more than {MAX_DEPTH} deep: a pre-registration "
                                       "is a few levels deep", first_line + event.start_mark.line)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # not YAML at all: the loader below says where


def _build(loader, node, path, lines, dups, first_line):
    lines[path] = first_line + node.start_mark.line
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                key = str(key)
            sub = path + (key,)
            if key in out:
                dups.append((sub, first_line + key_node.start_mark.line))
            out[key] = _build(loader, value_node, sub, lines, dups, first_line)
            lines[sub] = first_line + key_node.start_mark.line
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, path + (i,), lines, dups, first_line) for i, item in enumerate(node.value)]
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError, yaml.YAMLError) as exc:  # `created: 2026-13-45` is YAML's date, and not one
        raise PosYAMLError(f"{node.value!r} cannot be read ({exc}); quote it to keep it as text", lines[path]) from None


def _words(exc: yaml.YAMLError) -> str:
    return getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc).splitlines()[0]


def _line_of(exc: yaml.YAMLError, text: str) -> int:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return mark.line
    position = getattr(exc, "position", None)
    return text.count("\n", 0, position) if isinstance(position, int) else 0
