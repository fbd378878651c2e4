"""Text from a file, made fit to show (issue 33): control characters escaped, secrets redacted."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from prereg import rundir as rd
from prereg.core.untrusted import escaped, has_control, redacted, secret_in, shown

EVIL = "a\u001b[2J\u001b]0;T\u0007"
HOOK = "https://discord.com/api/webhooks/123456789012345678/Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7B"
HF = "hf_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h"


def test_control_characters_are_shown_escaped():
    assert escaped(EVIL) == "a\\x1b[2J\\x1b]0;T\\x07"
    assert escaped("x\x9b31m \u202eevil \x7f\x00") == "x\\x9b31m \\u202eevil \\x7f\\x00"
    assert escaped("line\nnext\ttab", keep="\n") == "line\nnext\\x09tab"
    assert escaped("é ü 日本 ✓ — plain") == "é ü 日本 ✓ — plain"


@given(st.text())
def test_escaped_text_holds_no_control_character_and_keeps_the_rest(text):
    out = escaped(text)
    assert not has_control(out)
    assert escaped(out) == out  # nothing left to escape
    if not has_control(text):
        assert out == text


@pytest.mark.parametrize("text, kind", [
    (f"stop {HOOK} {HF}", "a Discord webhook URL"),
    (f"token is {HF}.", "a Hugging Face token"),
    (HOOK.replace("discord.com", "canary.discordapp.com").replace("/api/", "/api/v10/"), "a Discord webhook URL"),
    ("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", "an API key"),
    ("WANDB_API_KEY=0123456789abcdef", "a secret value"),
    ("my_secret: 'hunter22'", "a secret value"),
    ("token=abc123&x=1", "a secret value"),
    ("Authorization: Bearer abcdefghijk", "a bearer token"),
    ("ghp_" + "a" * 36, "a GitHub token"),
    # issue 43: any case, with or without the scheme, every Discord host
    ("stop HTTPS://DISCORD.COM/api/webhooks/1/abc", "a Discord webhook URL"),
    ("stop discord.com/api/webhooks/1/abc now", "a Discord webhook URL"),
    ("DiscordApp.com/api/webhooks/1/abc", "a Discord webhook URL"),
    ("see ptb.discord.com/api/webhooks/1/abc", "a Discord webhook URL"),
    ("Http://Canary.Discord.com/API/V10/WEBHOOKS/1/abc", "a Discord webhook URL"),
    ("HF_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h", "a Hugging Face token"),
    ("authorization: BEARER abcdefghijk", "a bearer token"),
])
def test_secret_shapes_are_found_and_redacted(text, kind):
    assert secret_in(text) == kind and secret_in(text.encode()) == kind
    out = redacted(text)
    assert secret_in(out) is None and "<redacted" in out
    assert redacted(out) == out


@pytest.mark.parametrize("text", ["sort key: seed", "token: 17", "HF_TOKEN=none", "gate pace: projected wall 1.3 h",
                                  "https://discord.com/developers/docs", "the FAST tokenizer's tokens",
                                  "hf_short", "progress_final_cm=-1.2"])
def test_plain_words_are_not_secrets(text):
    assert secret_in(text) is None and redacted(text) == text


def test_shown_redacts_then_escapes():
    assert shown(f"\x1b[31m{HF}\n", keep="\n") == "\\x1b[31m<redacted: a Hugging Face token>\n"


def test_a_secret_written_into_stop_never_reaches_the_stop_reason(tmp_path):
    """`printf 'stop %s %s' "$WEBHOOK_URL" "$HF_TOKEN" > STOP`: the reason is copied into status.json,
    rows.json, the terminal and the Discord stop post."""
    (tmp_path / rd.STOP).write_text(f"stop {HOOK} {HF}")
    stop = rd.read_stop(tmp_path)
    assert HOOK not in stop.detail and HF not in stop.detail and secret_in(stop.text()) is None
    assert stop.detail == "stop <redacted: a Discord webhook URL> <redacted: a Hugging Face token>"
    (tmp_path / rd.STOP).write_text(json.dumps({"by": "user", "detail": f"HF_TOKEN={HF}", "who": f"ana {HOOK}"}))
    stop = rd.read_stop(tmp_path)
    assert secret_in(stop.detail) is None and secret_in(stop.who) is None and stop.detail.startswith("HF_TOKEN=<redacted")


PIECES = ["hf_", "A" * 34, "HF_TOKEN", "=", ": ", "token", "webhooks/", "https://discord.com/api/", "123/", "sk-",
          "DISCORD.COM/API/", "WEBHOOKS/", "HTTPS://", "discordapp.com/api/v9/", "HF_",
          "x" * 25, "Bearer ", "abcdefghij", "key", " ", "\n", "'", '"', "ghp_", "AKIA", "0123456789ABCDEF", "é",
          "MY_ſECRET", "TO\u212aEN", "ſ"]  # a long s and a Kelvin sign: `(?i)` matches them as s and k


@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
@example("AKIA0123456789ABCDEF" + "ghp_" + "A" * 34)  # found by this test: the marker put a boundary before ghp_
@example("MY_ſECRET=abcdef123456")  # the quick look lower-cased, and `(?i)secret` matches a long s: it missed this
def test_the_quick_look_never_misses_what_redaction_would_change(text):
    from prereg.core.untrusted import may_hold_secret

    if redacted(text) != text:
        assert may_hold_secret(text)
    assert secret_in(redacted(text)) is None


def test_the_environment_scrub_and_redaction_know_one_webhook_shape():
    """A webhook variable is recognised by the shape redaction uses (prereg.core.untrusted.WEBHOOK_HEAD)."""
    from prereg.core.webhook_env import is_webhook_var

    for value in ("HTTPS://DISCORD.COM/api/webhooks/1/abc", "discord.com/api/webhooks/1/abc"):
        assert is_webhook_var("NOTIFY", value) and secret_in(value) == "a Discord webhook URL"
    assert not is_webhook_var("URL", "https://example.com/api/webhooks/1")


def test_printable_shows_osc_csi_bel_and_c1_as_text_keeping_newline_and_tab():
    from prereg.core.untrusted import printable

    title = "T\x1b]0;pwn\x07 \x1b[2J \x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x9b31m \x9d0;x\x9c a\tb\nc\rd"
    out = printable(title)
    assert out == ("T\\x1b]0;pwn\\x07 \\x1b[2J \\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\ \\x9b31m "
                   "\\x9d0;x\\x9c a\tb\nc\\x0dd")
    assert printable(f"stop HTTPS://DISCORD.COM/api/webhooks/1/abc {HF}") == (
        "stop <redacted: a Discord webhook URL> <redacted: a Hugging Face token>")


@given(st.text())
def test_printable_leaves_nothing_a_terminal_obeys_and_is_idempotent(text):
    from prereg.core.untrusted import printable

    out = printable(text)
    assert not has_control(out.replace("\n", "").replace("\t", ""))
    assert printable(out) == out
    if not has_control(text.replace("\n", "").replace("\t", "")) and redacted(text) == text:
        assert out == text


@pytest.mark.parametrize("base", ["x", "a_", "hf_", "discord.", "x.", "-"])
def test_redaction_takes_linear_time_on_a_long_word(base):
    """A 100 kB title hung `show` (issue 43): the scheme-optional webhook shape tried every start inside a
    word, and a `NAME_KEY=` name every start after each `_`, each scanning to the end."""
    from tests.helpers import returns_within

    text = base * (100_000 // len(base))
    assert returns_within(lambda: redacted(text), 5, what="redacting 100 kB") == text
