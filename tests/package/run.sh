#!/usr/bin/env bash
# Package checks: man pages against --help (drift), bash and zsh
# completion, make install / make uninstall, what the build and test
# targets install (deps.bats, with fake npm and apt-get).
#
#   tests/package/run.sh BUILD_DIR [BATS-OPTION...]
#
# Runs tests/package/*.bats with bats (TAP on stdout) as the calling user.
# Tests see GLOVE_BUILD (the build directory, absolute) and GLOVE_SRC (the
# checkout). install.bats runs `make install` on BUILD_DIR with a DESTDIR,
# which sets BUILD_DIR's prefix (every make install sets it from PREFIX).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [BATS-OPTION...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
[ -x "$build/glove" ] || { echo "run.sh: $build/glove is missing (run make build)" >&2; exit 2; }
command -v bats >/dev/null || { echo "run.sh: bats is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
export GLOVE_BUILD=$build GLOVE_SRC
GLOVE_SRC=$(cd "$here/../.." && pwd)
exec bats --tap "$@" "$here"
