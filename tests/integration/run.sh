#!/usr/bin/env bash
# Integration suite runner.
#
#   tests/integration/run.sh BUILD_DIR MODE [BATS-OPTION...]
#                                   MODE = root | unprivileged
#
# Runs every tests/integration/*.bats with bats (TAP on stdout) against
# BUILD_DIR/glove. The suite, its host helpers and the probe agents
# (tests/agents/) are copied into a fresh temporary directory that both root
# and the unprivileged user can use, because the checkout may live in a 0700
# directory; so are the binaries under test. In unprivileged mode bats runs
# under `setpriv --reuid=65534 --regid=65534 --clear-groups` with HOME set to
# a directory that user owns.
#
# Tests see:
#   GLOVE          absolute path of (a copy of) the glove binary under test
#   GLOVE_MODE     root | unprivileged
#   GLOVE_AGENTS   directory holding the probe agents (grant it with --read)
#   GLOVE_IT_LIB   directory holding host-side helper programs
#   GLOVE_NODE_MODULES  tests/node_modules (npm MCP peers), empty if not installed
#   GLOVE_FIXTURES the MCP fixtures of tests/fixtures/{interop,conformance}
#                  (the interop client, the reference server and its bridge)
#
# When a mode cannot run on this host (no unprivileged user namespaces, or
# root mode as a non-root user), the runner says why and reports a TAP skip:
# never a silent pass.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR root|unprivileged [BATS-OPTION...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$1 mode=$2
shift 2
bats_opts=("$@") # e.g. --filter 'grants:' or --timing, handed to bats
case "$mode" in root|unprivileged) ;; *) usage ;; esac

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
nobody_uid=65534 nobody_gid=65534

skip_all() { # reason...
        local reason="$*"
        echo "run.sh: skipping the $mode integration suite: $reason" >&2
        echo "1..1"
        echo "ok 1 integration suite ($mode) # skip $reason"
        exit 0
}

[ -d "$build" ] || { echo "run.sh: build directory $build does not exist" >&2; exit 2; }
bin="$(cd "$build" && pwd)/glove"
[ -x "$bin" ] || { echo "run.sh: $bin is missing or not executable (run make build)" >&2; exit 2; }
command -v bats >/dev/null || { echo "run.sh: bats is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
[ -x /usr/bin/python3 ] || { echo "run.sh: /usr/bin/python3 is required by the probes" >&2; exit 2; }

if [ "$mode" = root ] && [ "$(id -u)" -ne 0 ]; then
        skip_all "root mode needs to be started as root (running as uid $(id -u))"
fi

# One fresh directory that both users can traverse; each user writes only in
# the subdirectories it owns.
work=$(mktemp -d /tmp/glove-it.XXXXXX)
cleanup() {
        # node_modules may be hard links to the checkout: never chmod those.
        rm -rf "$work/node_modules"
        # Directories made read-only by tests would stop rm; give write back first.
        chmod -R u+rwX "$work" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT
chmod 0755 "$work"
mkdir "$work/suite" "$work/agents" "$work/bin" "$work/home" "$work/tmp" "$work/fixtures"
cp "$here"/*.bats "$here"/helpers.bash "$work/suite/"
# readme.bats runs the README's quickstart from the README itself.
cp "$repo/README.md" "$work/suite/"
# ... and the example agents its blocks name (examples/).
cp -r "$repo/examples" "$work/suite/examples"
cp -r "$here/lib" "$work/suite/lib"
cp -r "$repo/tests/agents/." "$work/agents/"
cp -r "$repo/tests/fixtures/interop" "$repo/tests/fixtures/conformance" "$work/fixtures/"
chmod -R a+rX,go-w "$work/suite" "$work/agents" "$work/fixtures"
# The npm test peers (tests/node_modules, from tests/package-lock.json via
# scripts/deps.sh), when installed: hard links (fast) when the file system
# allows and every file is world-readable already (hard links share modes, so
# only the new directories are chmod'ed), else a copy.
node_modules=""
if [ -d "$repo/tests/node_modules" ]; then
        node_modules=$work/node_modules
        if cp -al "$repo/tests/node_modules" "$node_modules" 2>/dev/null &&
                [ -z "$(find "$node_modules" -type f ! -perm -o+r -print -quit)" ]; then
                find "$node_modules" -type d -exec chmod a+rx {} +
        else
                rm -rf "$node_modules"
                cp -r "$repo/tests/node_modules" "$node_modules"
                chmod -R a+rX "$node_modules"
        fi
fi

# Private copies of the binaries (glove, any glove-* helper, gloved) in a
# world-readable directory: the unprivileged user must be able to run them,
# and a rebuild during the run cannot swap a binary under the tests.
cp "$bin" "$work/bin/glove"
for extra in "$(dirname "$bin")"/glove-* "$(dirname "$bin")"/gloved; do
        if [ -f "$extra" ] && [ -x "$extra" ]; then cp "$extra" "$work/bin/"; fi
done
chmod 0755 "$work/bin" "$work/bin"/*
bin="$work/bin/glove"

run_as=()
if [ "$mode" = unprivileged ]; then
        if [ "$(id -u)" -eq 0 ]; then
                chown "$nobody_uid:$nobody_gid" "$work/home" "$work/tmp"
                chmod 0700 "$work/home" "$work/tmp"
                run_as=(setpriv --reuid="$nobody_uid" --regid="$nobody_gid" --clear-groups)
        fi
        # Can this user create a user namespace at all? If not, say why.
        if ! why=$(cd / && "${run_as[@]}" unshare --user --map-root-user /bin/true 2>&1); then
                skip_all "unprivileged user namespaces are unavailable on this host: ${why:-unshare failed}" \
                        "(see /proc/sys/user/max_user_namespaces, kernel.unprivileged_userns_clone," \
                        "kernel.apparmor_restrict_unprivileged_userns)"
        fi
fi

env_vars=(
        "GLOVE=$bin"
        "GLOVE_MODE=$mode"
        "GLOVE_AGENTS=$work/agents"
        "GLOVE_IT_LIB=$work/suite/lib"
        "GLOVE_NODE_MODULES=$node_modules"
        "GLOVE_FIXTURES=$work/fixtures"
        "TMPDIR=$work/tmp"
        "BATS_TMPDIR=$work/tmp"
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        "LANG=C.UTF-8"
)
if [ "$mode" = unprivileged ]; then
        env_vars+=("HOME=$work/home" "USER=nobody" "LOGNAME=nobody")
else
        env_vars+=("HOME=${HOME:-/root}" "USER=$(id -un)" "LOGNAME=$(id -un)")
fi
[ -n "${TERM:-}" ] && env_vars+=("TERM=$TERM")
[ -n "${ASAN_OPTIONS:-}" ] && env_vars+=("ASAN_OPTIONS=$ASAN_OPTIONS")
[ -n "${UBSAN_OPTIONS:-}" ] && env_vars+=("UBSAN_OPTIONS=$UBSAN_OPTIONS")

echo "# glove integration suite: binary $bin, mode $mode, as uid $([ ${#run_as[@]} -gt 0 ] && echo $nobody_uid || id -u)" >&2
cd "$work/suite"
set +e
# stdin from /dev/null: the suite must not depend on (or steal) a terminal.
"${run_as[@]}" env -i "${env_vars[@]}" bats --tap "${bats_opts[@]}" "$work/suite" </dev/null
rc=$?
set -e
exit $rc
