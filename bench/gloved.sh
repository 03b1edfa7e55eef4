#!/usr/bin/env bash
# gloved benchmarks: durable create_session per second (next to validate_plan
# on the same connection), validate_plan latency, and start-up replay time
# for a store of 10 000 sessions (next to an empty store).
#
#   bench/gloved.sh BUILD_DIR [--creates N] [--calls N] [--rounds N]
#
# Appends JSON lines to bench/results/gloved.jsonl (bench/gloved.py) and
# prints the figures. Times are reported, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
gloved="$(cd "$build" && pwd)/gloved"
[ -x "$gloved" ] || { echo "bench: $gloved is missing (run make build)" >&2; exit 2; }
mkdir -p bench/results
echo "== gloved: durable sessions, plan validation, start-up replay ($gloved, $(uname -r), uid $(id -u))"
exec /usr/bin/python3 bench/gloved.py --gloved "$gloved" --results bench/results/gloved.jsonl "$@"
