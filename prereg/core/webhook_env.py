"""The Discord webhook stays out of a run's processes: one test of what a webhook variable is.

The webhook is the detached notifier's alone (console/notify/service.py): a run never posts, so its
driver, its workers and its Ray shards have no use for it, and a worker (or a policy's code)
that could read it could leak it. The console starts a run without it (console/runs.py
`run_env`); a driver started by hand removes it from its own environment before anything else
starts (engine/run/driver.py), so its workers and a private Ray cluster inherit none.

A variable is a webhook when its name says so (contains WEBHOOK, any case) or its value holds
a Discord webhook URL, whatever the name (`MY_HOOK=https://discord.com/api/webhooks/...`, in any case,
with or without its scheme: prereg.core.untrusted.WEBHOOK_HEAD).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping

from prereg.core.untrusted import WEBHOOK_HEAD

DISCORD_WEBHOOK_URL = re.compile(WEBHOOK_HEAD)  # the one shape redaction knows too (any case, scheme or none)


def is_webhook_var(name: str, value: str) -> bool:
    return "WEBHOOK" in name.upper() or bool(DISCORD_WEBHOOK_URL.search(value or ""))


def without_webhooks(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `environ` (default os.environ) minus every webhook variable."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if not is_webhook_var(k, v)}


def scrub_webhooks(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove every webhook variable from `environ` (default os.environ) in place; their names (never values)."""
    environ = os.environ if environ is None else environ
    names = sorted(k for k, v in list(environ.items()) if is_webhook_var(k, v))
    for name in names:
        environ.pop(name, None)
    return names
