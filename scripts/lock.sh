#!/usr/bin/env bash
# Rewrite the lock (scripts/constraints.txt) from .venv, after a deliberate upgrade and once the suite
# passes: its comment header kept, then every installed package but the project and pip, as pip freeze
# writes them. `bash scripts/lock.sh OUT` writes OUT instead (tests/test_constraints.py compares).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-scripts/constraints.txt}"
tmp="$(mktemp)"
{ grep '^#' scripts/constraints.txt; .venv/bin/python -m pip freeze --exclude-editable | grep -v '^pip=='; } > "$tmp"
mv "$tmp" "$out"
