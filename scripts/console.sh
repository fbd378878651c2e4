#!/usr/bin/env bash
# The README's main command: set up (idempotent), then open the console on ./runs.
# The demo pre-registration is one key away (d). Run it inside tmux.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/fontaine-console "$@"
