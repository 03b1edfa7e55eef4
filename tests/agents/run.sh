#!/usr/bin/env bash
# make agents: the five real agent CLIs (tests/node_modules, pinned by
# tests/package-lock.json) each complete one scripted turn against the fake
# model server (tests/agents/fake_model.py), under `glove exec` and as a
# gloved managed session, and the four with an MCP client one turn of MCP
# tool calls through `glove run` over each in-sandbox endpoint
# (tests/agents/agents.bats).
#
#   tests/agents/run.sh BUILD_DIR [BATS-OPTION...]
#
# Like tests/integration/run.sh, the suite, its helpers, the agents, the
# binaries and node_modules (hard links when possible) are copied into a
# fresh directory that the sandboxed user can traverse and whose ancestors
# pass gloved's discovery trust test (tests/integration/cell.sh base: not
# /tmp, whose sticky bit the trust rule does not accept); bats runs as the invoking
# user with a clean environment. TAP on stdout. When the CLIs are not
# installed the runner says so and reports a TAP skip, never a silent pass.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [BATS-OPTION...]" >&2; exit 2; }
build=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

skip_all() {
        echo "agents/run.sh: skipping the agent CLI suite: $*" >&2
        echo "1..1"
        echo "ok 1 agent CLIs # skip $*"
        exit 0
}

bin="$(cd "$build" && pwd)/glove"
[ -x "$bin" ] || { echo "agents/run.sh: $bin is missing (run make build)" >&2; exit 2; }
command -v bats >/dev/null || { echo "agents/run.sh: bats is not installed (scripts/deps.sh)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "agents/run.sh: openssl is not installed (scripts/deps.sh)" >&2; exit 2; }
for cli in codex claude pi copilot opencode; do
        [ -e "$repo/tests/node_modules/.bin/$cli" ] ||
                skip_all "tests/node_modules/.bin/$cli is not installed (scripts/deps.sh test installs tests/package-lock.json)"
done

work=$(mktemp -d "$("$here/../integration/cell.sh" base "$build")/glove-agents.XXXXXX")
cleanup() {
        rm -rf "$work/node_modules"
        chmod -R u+rwX "$work" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT
chmod 0755 "$work"
mkdir "$work/suite" "$work/agents" "$work/bin" "$work/tmp"
chmod 0755 "$work/tmp"
cp "$here/agents.bats" "$repo/tests/integration/helpers.bash" "$work/suite/"
cp -r "$repo/tests/integration/lib" "$work/suite/lib"
cp -r "$here/." "$work/agents/"
chmod -R a+rX,go-w "$work/suite" "$work/agents"
nm=$work/node_modules
if cp -al "$repo/tests/node_modules" "$nm" 2>/dev/null &&
        [ -z "$(find "$nm" -type f ! -perm -o+r -print -quit)" ] &&
        [ -z "$(find "$nm" -perm /022 ! -type l -print -quit)" ]; then
        find "$nm" -type d -exec chmod 0755 {} +
else
        rm -rf "$nm"
        cp -r "$repo/tests/node_modules" "$nm"
        chmod -R a+rX,go-w "$nm"
fi
cp "$bin" "$work/bin/glove"
# gloved and the programs found next to it (glove-keeper, which gloved execs
# for each managed session; glove-mcp-stdio).
for extra in "$(dirname "$bin")"/gloved "$(dirname "$bin")"/glove-keeper "$(dirname "$bin")"/glove-mcp-stdio; do
        if [ -f "$extra" ] && [ -x "$extra" ]; then cp "$extra" "$work/bin/"; fi
done
chmod 0755 "$work/bin" "$work/bin"/*

mode=root
[ "$(id -u)" -eq 0 ] || mode=unprivileged
env_vars=(
        "GLOVE=$work/bin/glove"
        "GLOVE_MODE=$mode"
        "GLOVE_AGENTS=$work/agents"
        "GLOVE_IT_LIB=$work/suite/lib"
        "GLOVE_NODE_MODULES=$nm"
        "TMPDIR=$work/tmp"
        "BATS_TMPDIR=$work/tmp"
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        "LANG=C.UTF-8"
        "HOME=${HOME:-/root}" "USER=$(id -un)" "LOGNAME=$(id -un)"
)
[ -n "${ASAN_OPTIONS:-}" ] && env_vars+=("ASAN_OPTIONS=$ASAN_OPTIONS")
[ -n "${UBSAN_OPTIONS:-}" ] && env_vars+=("UBSAN_OPTIONS=$UBSAN_OPTIONS")
echo "# glove agent CLI suite: binary $work/bin/glove, as uid $(id -u)" >&2
cd "$work/suite"
set +e
env -i "${env_vars[@]}" bats --tap "$@" "$work/suite/agents.bats" </dev/null
rc=$?
set -e
exit $rc
