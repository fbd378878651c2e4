#!/usr/bin/env bash
# The repeat check: is the gate steady? Runs the console tests COUNT times (default 20) and the
# end-to-end engine tests (tests/engine -m slow) ENGINE_COUNT times (default 3), each round on a
# quiet machine and then under BUSY busy loops (default 2: two cores kept at 100%), with the same
# two pytest workers as scripts/test.sh (pytest-repeat, --repeat-scope session: whole passes, in order).
# Prints, per condition, the passes that ran and every test that failed at least once with its count;
# logs go to .cache/repeat/. Exit 1 when any test failed once.
#
#   bash scripts/repeat.sh                         # console x20 and engine e2e x3, quiet then busy
#   bash scripts/repeat.sh --only console --count 5 --busy 0
set -euo pipefail
cd "$(dirname "$0")/.."
count=20 engine_count=3 busy_levels="0 2" only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --engine-count) engine_count="$2"; shift 2 ;;
    --busy) busy_levels="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "repeat.sh: unknown argument '$1' (--count N, --engine-count N, --busy 'LEVELS', --only console|engine)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
export MUJOCO_GL="${MUJOCO_GL:-egl}"
logs=.cache/repeat/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$logs"
loops=()
stop_loops() { for p in "${loops[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; loops=(); }
trap stop_loops EXIT
failed_any=0

one() {  # one condition: NAME BUSY COUNT PYTEST-ARGS...
  local name="$1" busy="$2" n="$3"; shift 3
  local log="$logs/$name-busy$busy.log"
  for ((i = 0; i < busy; i++)); do python3 -c 'while True: pass' & loops+=("$!"); done
  local t0=$SECONDS
  .venv/bin/python -m pytest -n 2 --dist loadfile -p no:cacheprovider -q -rf \
    --count "$n" --repeat-scope session "$@" >"$log" 2>&1 || true
  stop_loops
  local summary
  summary="$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -1 | tr -d '=')"
  echo "$name x$n, $busy busy loops: ${summary:-no summary, see $log} ($((SECONDS - t0)) s)"
  if grep -q '^FAILED ' "$log"; then
    failed_any=1
    grep '^FAILED ' "$log" | sed -E 's/^FAILED ([^ ]+).*/\1/; s/\[[0-9]+-[0-9]+\]$//; s/-[0-9]+-[0-9]+\]$/]/' \
      | sort | uniq -c | sort -rn | sed 's/^/  failed /'
  fi
}

for busy in $busy_levels; do
  [ "$only" = "engine" ] || one console "$busy" "$count" tests/console
  [ "$only" = "console" ] || one engine-e2e "$busy" "$engine_count" tests/engine -m slow
done
echo "logs: $logs"
exit "$failed_any"
