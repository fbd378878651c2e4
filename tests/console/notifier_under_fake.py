"""The real notifier process (`python -m console.notify.service`) pointed at a fake Discord on loopback:
argv[1] is the fake's API base; the rest are the notifier's own arguments."""

import sys

import discord

discord.http.Route.BASE = sys.argv[1]

from console.notify.service import main  # noqa: E402

sys.exit(main(sys.argv[2:]))
