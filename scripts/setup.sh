#!/usr/bin/env bash
# One-shot set-up on a fresh machine: Debian's Mesa for offscreen rendering, a Python 3.12
# virtual environment in .venv, and the project with its pinned dependencies.
# Idempotent: a second run with an unchanged pyproject.toml returns in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

quiet() { if [ -n "${FONTAINE_SETUP_VERBOSE:-}" ]; then "$@"; else "$@" >/tmp/fontaine-setup.log 2>&1 || { cat /tmp/fontaine-setup.log >&2; return 1; }; fi; }

# 1. System libraries: EGL/OSMesa for MuJoCo's offscreen renderer, ffmpeg-free (imageio-ffmpeg ships one), tmux for the console,
#    chromium for the report page's browser tests (Playwright drives it; `playwright install` is never run).
need_apt=()
for pkg in libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 libglvnd0 libopengl0 tmux chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  quiet $SUDO apt-get update
  quiet env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

# 2. Python 3.12 (plain, or through pyenv where that is how it is installed).
PY=""
for cand in python3.12 /root/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then PY="$cand"; break; fi
done
[ -n "$PY" ] || { echo "setup: python3.12 not found; install it (e.g. apt-get install python3.12-venv) and rerun" >&2; exit 2; }

# 3. The virtual environment and the project (editable), at the versions the suite passed with (scripts/constraints.txt),
#    re-installed only when pyproject.toml or the constraints change.
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PY"
  "$PY" -m venv .venv
fi
stamp=".venv/.fontaine-installed"
want="$(cat pyproject.toml scripts/constraints.txt scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python packages (first time: a few minutes, about 5 GB with torch)"
  quiet .venv/bin/python -m pip install --upgrade pip
  quiet .venv/bin/python -m pip install -e ".[${FONTAINE_EXTRAS:-dev,ray,step,diffusion,nexus}]" -c scripts/constraints.txt
  echo "$want" > "$stamp"
fi

# 4. The project's bytecode, written once here: where PYTHONDONTWRITEBYTECODE is set (it is on these
#    machines) no process writes it, so every driver, worker, shard and CLI call compiled each module of
#    engine/, prereg/ and console/ it imported afresh (0.75 s of CPU a driver, 2.5 s the console). compileall rewrites
#    only what changed, and Python rechecks each file's mtime, so an edit after this never runs stale code.
quiet .venv/bin/python -m compileall -q -j 0 console engine prereg tests benchmarks scripts
