"""Text from a file someone else wrote, made fit to show: control characters escaped, secrets redacted.

A run directory, a STOP file or a row can hold anything. Drawn raw, `"a\\x1b[2J\\x1b]0;T\\x07"` in an
arm name clears the operator's terminal and sets its title; posted raw, it lands in Discord as is.
`escaped` shows every control character (C0, DEL, C1) and every bidirectional override as a visible
escape (`\\x1b`, `\\u202e`), so a screen or a post shows what the file holds without obeying it.

A secret someone typed where a reason goes (`printf 'stop %s' "$HF_TOKEN" > STOP`) would be copied
into status.json, rows.json, the terminal and the channel. `redacted` replaces the shapes of the
secrets this project meets (a Discord webhook URL, a Hugging Face token, other well-known token
prefixes, a `NAME_KEY=value` / `token: value` assignment, an `Authorization: Bearer` value) by a
marker naming what was there; `secret_in` says which shape a text or a file's bytes hold (publish
refuses such a file).

`printable` is the one sanitiser for every text exit (a terminal line, markdown, HTML, a post): secrets
redacted, control characters but newline and tab escaped; `say` is `print` through it.

Pure (the standard library only), so every layer can use it.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")


def escaped(text: str, keep: str = "") -> str:
    """`text` with every control character and bidi override written as a visible escape
    (`\\x1b`, `\\x07`, `\\x9b`, `\\u202e`); the characters in `keep` (e.g. '\\n') stay as they are."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group(0) if m.group(0) in keep else _escape(m.group(0)), text)


def has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# -- secrets ---------------------------------------------------------------------------------------

_VALUE = r"(?:\"[^\"\s]{3,}\"|'[^'\s]{3,}'|[^\s\"',;&<]{3,})"
# a Discord webhook URL's head, in any case, with or without its scheme: `HTTPS://DISCORD.COM/api/webhooks/`,
# `discord.com/api/webhooks/`, `canary.discordapp.com/api/v10/webhooks/` (Discord and every tool take them all)
# The host starts where a host can (never inside a word: without it a long word cost quadratic time, a
# 100 kB title minutes, as every start of the word was tried).
WEBHOOK_HEAD = r"(?i:(?:https?://)?(?<![a-z0-9.-])(?:[a-z0-9-]+\.)*(?:discord|discordapp)\.com/api(?:/v\d+)?/webhooks/)"
# (what it is, the pattern, words one of which every match holds, case-folded): the kinds of secret a run's
# files and posts must never carry. The words are a quick look: a shape none of whose words a text holds is
# not searched (most of a 1 MB page's redaction was the webhook shape tried at every position).
_SHAPES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("a Discord webhook URL", WEBHOOK_HEAD + r"[^\s\"'<>`]+", ("webhooks/",)),
    ("a Hugging Face token", r"(?i:hf_)[A-Za-z0-9]{30,}", ("hf_",)),  # no word boundary: glued to an escape, it is one still
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("an API key", r"\b(?:sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})", ("sk-", "xox", "akia")),
    ("a bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", ("bearer",)),
    # NAME_KEY=value, HF_TOKEN: value, token=value, password="...": a name that says secret, then its value (the
    # name starts at a word's start, never after each `_` inside it: `a_a_a_...` cost quadratic time)
    ("a secret value",
     r"(?i)(?<![A-Za-z0-9_])_*(?:[A-Za-z0-9]+_+)+(?:key|token|secret|password|passwd)\s*[=:]\s*" + _VALUE + "|"
     r"(?<![A-Za-z0-9_])(?:api_?key|token|secret|password|passwd)\s*=\s*" + _VALUE,
     ("key", "token", "secret", "passw")),
)
_TEXT = [(what, re.compile(pattern), words) for what, pattern, words in _SHAPES]
_ASSIGNMENT = _TEXT[-1][1]
_NAME_ONLY = re.compile(r"(?i)^[A-Za-z0-9_]+\s*[=:]\s*")
_NOT_SECRET = {"none", "null", "unset", "true", "false"}


def _folded(text: str) -> str:
    """What a shape's words are looked for in: case-folded, as a `(?i)` pattern matches (`casefold`, not
    `lower`: `(?i)secret` matches `ſecret`, whose lower case keeps the long s)."""
    return text.casefold()


def _may_match(words: tuple[str, ...], folded: str) -> bool:
    """Whether a shape with these words can match the (case-folded) text: it holds one of them."""
    return any(word in folded for word in words)


def _shapes_in(folded: str):
    """The shapes one of whose words the (case-folded) text holds: the only ones that can match it."""
    return [shape for shape in _TEXT if _may_match(shape[2], folded)]


def may_hold_secret(text: str) -> bool:
    """A quick look: False means `redacted(text)` is `text`. A word every shape holds is looked for first:
    the console asks this of every line it draws (its filter takes 5 us a 140-cell line, 50 without it)."""
    return any(pattern.search(text) is not None for _what, pattern, _words in _shapes_in(_folded(text)))


_MAX_PASSES = 8  # each pass that changes anything replaces a secret by a marker: a text of glued secrets ends


def redacted(text: str) -> str:
    """`text` with every secret shape replaced by `<redacted: what it was>` (an assignment keeps its
    name: `HF_TOKEN=<redacted>`). Again until nothing changes: a marker can put a word boundary before
    a secret glued to the one it replaced (`AKIA...ghp_...`: the GitHub token starts a word only once the
    key before it is `<redacted: an API key>`), and what comes out holds no shape `secret_in` finds."""
    for _ in range(_MAX_PASSES):
        before, folded = text, _folded(text)
        for what, pattern, words in _TEXT:
            if not _may_match(words, folded):
                continue  # cannot match: none of its words is here
            if pattern is _ASSIGNMENT:
                out = pattern.sub(_redact_assignment, text)
            else:
                out = pattern.sub(f"<redacted: {what}>", text)
            if out != text:  # a marker holds words (`key`, `token`): the next shapes look at the new text
                text, folded = out, _folded(out)
        if text == before:
            break
    return text


def _redact_assignment(m: re.Match) -> str:
    whole = m.group(0)
    name = _NAME_ONLY.match(whole)
    value = whole[name.end():] if name else whole
    if value.startswith("<redacted") or value.strip("\"'").lower() in _NOT_SECRET:
        return whole
    return (whole[: name.end()] if name else "") + "<redacted>"


def secret_in(data: str | bytes) -> str | None:
    """What kind of secret `data` (a text, or a file's bytes) holds: 'a Discord webhook URL', 'a
    Hugging Face token', ...; None when it holds none."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    for what, pattern, _words in _shapes_in(_folded(text)):
        for m in pattern.finditer(text):
            if pattern is not _ASSIGNMENT or _redact_assignment(m) != m.group(0):
                return what
    return None


def shown(text: str, keep: str = "") -> str:
    """A file's text as a screen or a post may show it: secrets redacted, control characters escaped."""
    return escaped(redacted(text), keep)


# -- the one sanitiser for every text exit -----------------------------------------------------------


def printable(text: str) -> str:
    """Any text on its way out (a terminal line, markdown, HTML, a post): every secret's shape redacted
    (`redacted`), then every control character but newline and tab (ESC, BEL, CR, the rest of C0, DEL,
    C1 such as the 8-bit CSI 0x9b and OSC 0x9d) and every bidi override shown as a visible escape
    (`escaped`). A title's `ESC]0;...BEL` (the window title), `ESC[2J` (clear the screen) or an OSC 8
    hyperlink (`ESC]8;;URL ESC\\`) comes out as the text `\\x1b]0;...\\x07`: shown, never obeyed.
    Idempotent: printable(printable(t)) == printable(t)."""
    return escaped(redacted(text), "\n\t")


def say(*parts: object, file=None, flush: bool = True) -> None:
    """`print` for a command's terminal lines: each part passed through `printable` first."""
    print(*(printable(str(p)) for p in parts), file=file, flush=flush)
