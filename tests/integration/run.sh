#!/usr/bin/env bash
# The whole integration suite in one cell, by hand.
#
#   tests/integration/run.sh BUILD_DIR MODE [BATS-OPTION...]
#                                   MODE = root | unprivileged
#
# Runs every tests/integration/*.bats with one bats (TAP on stdout) against
# BUILD_DIR/glove, as root or as uid 65534 (`setpriv --reuid=65534
# --regid=65534 --clear-groups`), in a cell made by tests/integration/cell.sh
# (a copy of the suite, agents and binaries both users can reach, and, for
# uid 65534, a delegated cgroup). BATS-OPTIONs go to bats, e.g. --filter
# 'grants:' or --timing.
#
# `make check` does not use this script: scripts/check.sh runs the files of
# tests/integration/matrix in the cells the matrix names, in parallel where
# it is safe (tests/integration/matrix.sh).
#
# When a mode cannot run on this host (no unprivileged user namespaces, or
# root mode as a non-root user), the runner says why and reports a TAP skip:
# never a silent pass.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR root|unprivileged [BATS-OPTION...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$1 mode=$2
shift 2
case "$mode" in root|unprivileged) ;; *) usage ;; esac
here=$(cd "$(dirname "$0")" && pwd)

# Not under /tmp: discovery's trust rule refuses a sticky world-writable
# ancestor (cell.sh base).
parent=$(mktemp -d "$("$here/cell.sh" base "$build")/glove-it.XXXXXX")
chmod 0755 "$parent"
trap '"$here/cell.sh" cleanup "$parent/cell"; rmdir "$parent" 2>/dev/null || true' EXIT
rc=0
why=$("$here/cell.sh" prepare "$build" "$mode" "$parent/cell") || rc=$?
if [ $rc -eq 3 ]; then
        echo "run.sh: skipping the $mode integration suite: $why" >&2
        echo "1..1"
        echo "ok 1 integration suite ($mode) # skip $why"
        exit 0
fi
[ $rc -eq 0 ] || exit $rc
set +e
"$here/cell.sh" run "$parent/cell" all "$@"
