#!/usr/bin/env bash
# The README's test command: set up (idempotent) and run the whole suite, slow tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
# Bytecode written (where the machine sets PYTHONDONTWRITEBYTECODE): pytest keeps each test module's
# assertion-rewritten code, so a second run's workers collect the 1800 tests in 10 s of CPU, not 17,
# and a module edited since set-up is compiled once, not in every process that imports it.
unset PYTHONDONTWRITEBYTECODE
# Two pytest workers, whole files each (a file's runs and fixtures stay together): the end-to-end
# tests wait on detached runs and subprocesses as much as they compute, so two share the 2 cores
# well (1041 tests: 1032 s in one process, 598 s in two, on the 2-core CI machine).
# FONTAINE_TEST_WORKERS=0 runs them in one process (what a debugger or -x wants).
workers="${FONTAINE_TEST_WORKERS:-2}"
if [ "$workers" = "0" ]; then
  exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
