"""The webhook: where its URL comes from, and keeping its secret out of every output.

The URL carries a token: it is never printed, logged or written. Only the masked form
(`mask_webhook_url`: https://discord.com/api/webhooks/1234…/****) is shown, a short hash
(`fingerprint`) tells two URLs apart in the notifier's status file, every error text is scrubbed
of it (`scrub`), and discord.py's DEBUG logging, which prints the full URL, is held at WARNING
with the id and token filtered out of what it still logs (`quiet_discord_logging`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from pathlib import Path

from prereg.core.errors import UsageError
from prereg.core.safe_read import Unreadable, check_regular, read_regular

ENV_URL = "FONTAINE_DISCORD_WEBHOOK_URL"
ENV_FILE = "FONTAINE_DISCORD_WEBHOOK_FILE"
WEBHOOK_FILE_MAX_BYTES = 4096  # a webhook URL is about 120 characters; a bigger file is not one

SETUP_HINT = (
    "Discord posts are off. To turn them on: in Discord, Channel settings > Integrations > "
    "Webhooks > New Webhook > Copy Webhook URL; then either export "
    f"{ENV_URL}=<url>, or save the URL in a file only you can read (chmod 600 FILE) and export "
    f"{ENV_FILE}=FILE; restart the console and press the test-post key."
)

# The form discord.py's Webhook.from_url accepts.
_URL_RE = re.compile(
    r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
    r"(?P<id>[0-9]{17,20})/(?P<token>[A-Za-z0-9.\-_]{60,})"
)


class WebhookConfigError(UsageError, ValueError):
    """The webhook setting is present but unusable; the message says what to do."""


def mask_webhook_url(url: str) -> str:
    """https://discord.com/api/webhooks/1234…/**** — enough to tell two webhooks apart."""
    m = _URL_RE.search(url or "")
    if not m:
        return "<webhook URL>"
    return f"https://discord.com/api/webhooks/{m.group('id')[:4]}…/****"


def load_webhook_url(environ: dict | os._Environ = os.environ) -> str | None:
    """The webhook URL from the environment or from a file only the user can read; None if unset."""
    url = (environ.get(ENV_URL) or "").strip()
    source = f"${ENV_URL}"
    if not url and environ.get(ENV_FILE):
        path = Path(environ[ENV_FILE]).expanduser()
        source = f"the file {path} (${ENV_FILE})"
        try:  # a regular file, stat'ed before it is opened: a FIFO there is refused, never waited on
            st = check_regular(path, WEBHOOK_FILE_MAX_BYTES)
        except FileNotFoundError:
            raise WebhookConfigError(f"cannot read {source}: no such file") from None
        except Unreadable as exc:
            raise WebhookConfigError(f"cannot read {source}: {exc.why}") from None
        if st.st_mode & 0o077:
            raise WebhookConfigError(
                f"{source} is readable or writable by others (mode {stat.filemode(st.st_mode)}); "
                f"it holds a secret: run `chmod 600 {path}`"
            )
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise WebhookConfigError(f"{source} belongs to another user; keep the webhook in a file you own")
        try:
            url = read_regular(path, WEBHOOK_FILE_MAX_BYTES).decode("utf-8").strip()
        except (OSError, Unreadable, UnicodeDecodeError) as exc:
            raise WebhookConfigError(f"cannot read {source}: {getattr(exc, 'why', None) or exc}") from None
    if not url:
        return None
    if not _URL_RE.fullmatch(url):
        raise WebhookConfigError(
            f"{source} is not a Discord webhook URL "
            "(expected https://discord.com/api/webhooks/<id>/<token>; copy it from the channel's Integrations)"
        )
    return url


def quiet_discord_logging(url: str | None = None) -> None:
    """discord.py logs the full webhook URL (token included) at DEBUG: hold its loggers at
    WARNING, and scrub the webhook's id and token from what they still log (a 429 warning)."""
    lg = logging.getLogger("discord")
    if lg.level == logging.NOTSET or lg.level < logging.WARNING:
        lg.setLevel(logging.WARNING)
    m = _URL_RE.search(url or "")
    if m:
        _SCRUB.secrets[m.group("token")] = "****"
        _SCRUB.secrets[m.group("id")] = m.group("id")[:4] + "…"
    for name in ("discord.webhook.async_", "discord.webhook.sync", "discord.http"):
        logger = logging.getLogger(name)
        if _SCRUB not in logger.filters:
            logger.addFilter(_SCRUB)


def fingerprint(url: str | None) -> str | None:
    """A short hash of the webhook URL: tells two URLs apart, reveals nothing of the token."""
    return hashlib.sha256(url.encode()).hexdigest()[:16] if url else None


def scrub(url: str | None, text: str) -> str:
    """Any trace of the webhook `url` (its URL, token, id) in `text` replaced by the masked form."""
    if not url:
        return text
    m = _URL_RE.search(url)
    text = text.replace(url, mask_webhook_url(url))
    if m:
        text = text.replace(m.group("token"), "****").replace(m.group("id"), m.group("id")[:4] + "…")
    return text


def webhook_setting(environ=os.environ) -> tuple[str | None, str | None]:
    """(the URL, None); (None, None) when no webhook is set; (None, why) when the setting is unusable."""
    try:
        return load_webhook_url(environ), None
    except WebhookConfigError as exc:
        return None, str(exc)


class _ScrubSecrets(logging.Filter):
    """Rewrites a record that mentions a registered secret (filters act on the emitting logger)."""

    def __init__(self):
        super().__init__()
        self.secrets: dict[str, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(s in text for s in self.secrets):
            for secret, masked in sorted(self.secrets.items(), key=lambda kv: -len(kv[0])):
                text = text.replace(secret, masked)
            record.msg, record.args = text, ()
        return True


_SCRUB = _ScrubSecrets()

