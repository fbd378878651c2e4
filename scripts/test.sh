#!/usr/bin/env bash
# The README's test command: set up (idempotent) and run the whole suite, slow tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec .venv/bin/python -m pytest "$@"
