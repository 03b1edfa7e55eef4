#!/usr/bin/env bash
# One cell of the integration matrix: a build's binaries run by one user.
#
#   tests/integration/cell.sh prepare BUILD_DIR MODE DIR
#   tests/integration/cell.sh run DIR FILE|all [BATS-OPTION...]
#   tests/integration/cell.sh cleanup DIR
#   tests/integration/cell.sh base BUILD_DIR
#
# MODE = root | unprivileged.
#
# prepare makes DIR (which must not exist; its parent must be traversable by
# every user, /tmp for instance) into a self-contained copy of the suite that
# both root and the unprivileged user can use, because the checkout may live
# in a 0700 directory: the suite, its host helpers, the probe agents
# (tests/agents/), the MCP fixtures, the README, docs/ and examples/, the
# npm test peers (hard links when possible) and private copies of the
# binaries (a rebuild during the run cannot swap a binary under the tests). In
# unprivileged mode, started as root, it also delegates a cgroup subtree to
# uid 65534 the way systemd does for a user service (see delegate_cgroups
# below), so limits and managed sessions are proved for an unprivileged user
# too. Exit 0 when the cell can run; 3, with the reason as the only line on
# stdout, when this host cannot run it (no unprivileged user namespaces, or
# root mode as a non-root user): the caller reports a skip, never a pass.
#
# run starts bats (TAP on stdout) on one file of DIR's suite, or on the whole
# suite for "all", under a clean environment; in unprivileged mode under
# `setpriv --reuid=65534 --regid=65534 --clear-groups`, with a HOME of its
# own per file, inside the delegated cgroup. Standard input is /dev/null.
#
# cleanup removes DIR and the delegated cgroups (ending what a killed test
# left in them).
#
# base prints the directory the callers make their cells in: every user can
# traverse it and no ancestor is writable by anyone but root, because
# discovery's trust rule refuses a directory beneath one (a sticky /tmp
# included) and the adapter and policy tests need a trusted chain above
# theirs, and outside the system directories a writable grant may not touch
# (/var included). $GLOVE_IT_BASE when set; as root /srv/glove-it (made 0755);
# otherwise, where only skips can follow, BUILD_DIR.
#
# Tests see:
#   GLOVE          absolute path of (a copy of) the glove binary under test
#   GLOVE_MODE     root | unprivileged
#   GLOVE_AGENTS   directory holding the probe agents (grant it with --read)
#   GLOVE_IT_LIB   directory holding host-side helper programs
#   GLOVE_NODE_MODULES  tests/node_modules (npm MCP peers), empty if not installed
#   GLOVE_FIXTURES the MCP fixtures of tests/fixtures/{interop,conformance}
#                  and the Cloudflare OS session policy template
#                  (cloudflare-os-session-policy.json)
set -euo pipefail

nobody_uid=65534 nobody_gid=65534
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The .bats files to copy: this directory's, or GLOVE_IT_SUITE's (the
# harness's own self-test, tests/harness/selftest.sh, uses that).
suite_src=${GLOVE_IT_SUITE:-$here}

usage() {
        echo "usage: $0 prepare BUILD_DIR root|unprivileged DIR | run DIR FILE|all [BATS-OPTION...] | cleanup DIR | base BUILD_DIR" >&2
        exit 2
}

# ------------------------------------------------------------ cgroups

# The v1 hierarchies Glove uses (docs/limits.md, "Which cgroup backend"):
# memory, pids and cpuacct are required, freezer is joined when writable.
v1_controllers=(memory pids cpuacct freezer)

# v1_mount CONTROLLER: the mount point of the v1 hierarchy that carries it.
v1_mount() {
        awk -v c="$1" '$0 ~ / - cgroup / {
                n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) { print $5; exit } }' /proc/self/mountinfo
}

# self_cgroup CONTROLLER: this process's cgroup in that v1 hierarchy.
self_cgroup() {
        awk -F: -v c="$1" '{ n = split($2, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) { print $3; exit } }' /proc/self/cgroup
}

# delegate_cgroups DIR: as root, make one cgroup per hierarchy, owned by uid
# 65534, and list it in DIR/cgroups.
#
# v2 (when the cgroup2 hierarchy's root offers memory, pids and cpu; the
# root is the one cgroup that may hand controllers down while it holds
# processes): DIR/cgroups gets D under that root, delegated as systemd does
# with Delegate=yes
# (D, cgroup.procs, cgroup.subtree_control and cgroup.threads owned by the
# uid, the three controllers enabled in D's subtree_control) and D/runner,
# the uid's leaf that the suite runs in; Glove's run cgroups then go beside
# it in D. (This host has the hybrid layout, so this path is written to
# systemd's delegation rules but is not exercised here.)
#
# v1: for every hierarchy of v1_controllers that is mounted, a directory
# under this process's own cgroup, with its cgroup.procs and tasks, owned
# by the uid: Glove makes its run cgroups under it (required: memory, pids,
# cpuacct; freezer when present).
#
# What this cannot do is not an error: the cell then runs without, and the
# tests that need a cgroup skip and say why.
delegate_cgroups() {
        local dir=$1 name
        # Not "glove-…": that prefix names run cgroups (sweeps, leftover checks).
        name=nobody-it.$$.$RANDOM
        : >"$dir/cgroups"
        local v2mnt
        v2mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
        if [ -n "$v2mnt" ] && [ -e "$v2mnt/cgroup.procs" ]; then
                local parent=$v2mnt
                local have
                have=$(cat "$parent/cgroup.controllers" 2>/dev/null || true)
                if [[ " $have " == *" memory "* && " $have " == *" pids "* && " $have " == *" cpu "* ]]; then
                        local d=$parent/$name
                        if echo "+memory +pids +cpu" >"$parent/cgroup.subtree_control" 2>/dev/null &&
                                mkdir "$d" && echo "+memory +pids +cpu" >"$d/cgroup.subtree_control" &&
                                mkdir "$d/runner"; then
                                chown "$nobody_uid:$nobody_gid" "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" \
                                        "$d/cgroup.threads" "$d/runner" "$d/runner/cgroup.procs" \
                                        "$d/runner/cgroup.threads" "$d/runner/cgroup.subtree_control"
                                echo "$d" >>"$dir/cgroups"
                                echo "$d/runner/cgroup.procs" >"$dir/cgroup_procs"
                                return 0
                        fi
                        rmdir "$d/runner" "$d" 2>/dev/null || true
                fi
        fi
        local c mnt cur d procs=()
        for c in "${v1_controllers[@]}"; do
                mnt=$(v1_mount "$c")
                [ -n "$mnt" ] || continue
                cur=$(self_cgroup "$c")
                d=$mnt${cur%/}/$name
                if mkdir "$d" 2>/dev/null; then
                        chown "$nobody_uid:$nobody_gid" "$d" "$d/cgroup.procs" "$d/tasks"
                        echo "$d" >>"$dir/cgroups"
                        procs+=("$d/cgroup.procs")
                fi
        done
        if [ ${#procs[@]} -gt 0 ]; then printf '%s\n' "${procs[@]}" >"$dir/cgroup_procs"; fi
}

# remove_cgroup D: end every process left in D and below (naming them: the
# suite should leave none), then remove D (deepest first; rmdir removes
# only an empty cgroup). Cgroup files read as size 0: read their content.
remove_cgroup() {
        local d=$1 i sub procs p
        [ -d "$d" ] || return 0
        for i in $(seq 1 25); do
                local left=0
                while read -r sub; do
                        procs=$(cat "$sub/cgroup.procs" 2>/dev/null) || continue
                        [ -n "$procs" ] || continue
                        left=1
                        for p in $procs; do
                                [ "$i" -gt 1 ] || echo "cell.sh: left in $sub at the end: $(ps -o pid=,args= -p "$p" 2>/dev/null | cut -c1-160)" >&2
                                kill -KILL "$p" 2>/dev/null || true
                        done
                done < <(find "$d" -depth -type d 2>/dev/null)
                [ $left = 1 ] || break
                sleep 0.2
        done
        find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [ ! -d "$d" ] || echo "cell.sh: could not remove the cgroup $d" >&2
}

# ------------------------------------------------------------ prepare

prepare() { # build mode dir
        local build=$1 mode=$2 work=$3
        case "$mode" in root|unprivileged) ;; *) usage ;; esac
        [ -d "$build" ] || { echo "cell.sh: build directory $build does not exist" >&2; exit 2; }
        local bin
        bin="$(cd "$build" && pwd)/glove"
        [ -x "$bin" ] || { echo "cell.sh: $bin is missing or not executable (run make build)" >&2; exit 2; }
        command -v bats >/dev/null || { echo "cell.sh: bats is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
        [ -x /usr/bin/python3 ] || { echo "cell.sh: /usr/bin/python3 is required by the probes" >&2; exit 2; }
        if [ "$mode" = root ] && [ "$(id -u)" -ne 0 ]; then
                echo "root mode needs to be started as root (running as uid $(id -u))"
                exit 3
        fi
        mkdir "$work"
        chmod 0755 "$work"
        echo "$mode" >"$work/mode"
        mkdir "$work/suite" "$work/agents" "$work/bin" "$work/home" "$work/tmp" "$work/fixtures"
        cp "$suite_src"/*.bats "$here"/helpers.bash "$work/suite/"
        # readme.bats runs the shell blocks of the README and of docs/*.md
        # from the pages themselves, and the example agents they name
        # (examples/).
        cp "$repo/README.md" "$work/suite/"
        cp -r "$repo/docs" "$work/suite/docs"
        cp -r "$repo/examples" "$work/suite/examples"
        cp -r "$here/lib" "$work/suite/lib"
        # lib/refinement.py computes the refinement digests with the vectors' own code.
        cp "$repo/tests/vectors/refinement_vectors.py" "$work/suite/lib/"
        cp -r "$repo/tests/agents/." "$work/agents/"
        cp -r "$repo/tests/fixtures/interop" "$repo/tests/fixtures/conformance" "$work/fixtures/"
        cp "$repo/tests/fixtures/cloudflare-os-session-policy.json" "$work/fixtures/"
        chmod -R a+rX,go-w "$work/suite" "$work/agents" "$work/fixtures"
        # The npm test peers (tests/node_modules, from tests/package-lock.json
        # via scripts/deps.sh), when installed: hard links (fast) when the
        # file system allows and every file is world-readable already (hard
        # links share modes, so only the new directories are chmod'ed), else
        # a copy.
        local nm=""
        if [ -d "$repo/tests/node_modules" ]; then
                nm=$work/node_modules
                if cp -al "$repo/tests/node_modules" "$nm" 2>/dev/null &&
                        [ -z "$(find "$nm" -type f ! -perm -o+r -print -quit)" ]; then
                        find "$nm" -type d -exec chmod a+rx {} +
                else
                        rm -rf "$nm"
                        cp -r "$repo/tests/node_modules" "$nm"
                        chmod -R a+rX "$nm"
                fi
        fi
        cp "$bin" "$work/bin/glove"
        local extra
        for extra in "$(dirname "$bin")"/glove-* "$(dirname "$bin")"/gloved; do
                if [ -f "$extra" ] && [ -x "$extra" ]; then cp "$extra" "$work/bin/"; fi
        done
        chmod 0755 "$work/bin" "$work/bin"/*
        : >"$work/cgroups"
        if [ "$mode" = unprivileged ] && [ "$(id -u)" -eq 0 ]; then
                chown "$nobody_uid:$nobody_gid" "$work/home" "$work/tmp"
                chmod 0700 "$work/home" "$work/tmp"
                echo "$nobody_uid:$nobody_gid" >"$work/run_as"
        fi
        if [ "$mode" = unprivileged ]; then
                # Can this user create a user namespace at all? If not, say why.
                local why
                if ! why=$(cd / && as_user "$work" unshare --user --map-root-user /bin/true 2>&1); then
                        echo "unprivileged user namespaces are unavailable on this host: ${why:-unshare failed}" \
                                "(see /proc/sys/user/max_user_namespaces, kernel.unprivileged_userns_clone," \
                                "kernel.apparmor_restrict_unprivileged_userns)" | tr '\n' ' '
                        echo
                        exit 3
                fi
                if [ "$(id -u)" -eq 0 ]; then delegate_cgroups "$work"; fi
        fi
        {
                printf '%s\0' "GLOVE=$work/bin/glove" "GLOVE_MODE=$mode" "GLOVE_AGENTS=$work/agents" \
                        "GLOVE_IT_LIB=$work/suite/lib" "GLOVE_NODE_MODULES=$nm" "GLOVE_FIXTURES=$work/fixtures" \
                        "TMPDIR=$work/tmp" "BATS_TMPDIR=$work/tmp" \
                        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "LANG=C.UTF-8"
                if [ "$mode" = root ]; then
                        printf '%s\0' "HOME=${HOME:-/root}" "USER=$(id -un)" "LOGNAME=$(id -un)"
                else
                        printf '%s\0' "USER=nobody" "LOGNAME=nobody"
                fi
                [ -z "${TERM:-}" ] || printf '%s\0' "TERM=$TERM"
                [ -z "${ASAN_OPTIONS:-}" ] || printf '%s\0' "ASAN_OPTIONS=$ASAN_OPTIONS"
                [ -z "${UBSAN_OPTIONS:-}" ] || printf '%s\0' "UBSAN_OPTIONS=$UBSAN_OPTIONS"
        } >"$work/env"
}

# as_user DIR CMD...: CMD as the cell's user (setpriv when the cell runs as
# uid 65534 and we are root).
as_user() {
        local work=$1
        shift
        if [ -s "$work/run_as" ]; then
                setpriv --reuid="$nobody_uid" --regid="$nobody_gid" --clear-groups "$@"
        else
                "$@"
        fi
}

# ------------------------------------------------------------ run

run_file() { # dir file|all bats-options...
        local work=$1 file=$2
        shift 2
        [ -f "$work/env" ] || { echo "cell.sh: $work is not a prepared cell" >&2; exit 2; }
        local mode target
        mode=$(cat "$work/mode")
        if [ "$file" = all ]; then target=$work/suite; else target=$work/suite/$file; fi
        [ -e "$target" ] || { echo "cell.sh: no test file $file in $work/suite" >&2; exit 2; }
        local -a env_vars=()
        mapfile -d '' env_vars <"$work/env"
        if [ "$mode" = unprivileged ]; then
                # A HOME of its own for each file, so files running at the
                # same time never share one.
                local home
                home=$work/home/${file%.bats}
                if [ -s "$work/run_as" ]; then
                        install -d -m 0700 -o "$nobody_uid" -g "$nobody_gid" "$home"
                else
                        install -d -m 0700 "$home"
                fi
                env_vars+=("HOME=$home")
        fi
        echo "# glove integration cell: binary $work/bin/glove, mode $mode, file $file, as uid $([ -s "$work/run_as" ] && echo $nobody_uid || id -u)" >&2
        cd "$work/suite"
        # Enter the delegated cgroups (as root, before dropping to the uid),
        # then become the cell's user.
        local -a enter=()
        if [ -s "$work/cgroup_procs" ]; then
                enter=(/bin/sh -c 'while read -r f; do echo $$ >"$f" || exit 1; done <"$0"; shift; exec "$@"' \
                        "$work/cgroup_procs" _)
        fi
        local -a cmd=()
        if [ -s "$work/run_as" ]; then cmd=(setpriv --reuid="$nobody_uid" --regid="$nobody_gid" --clear-groups); fi
        "${enter[@]}" "${cmd[@]}" env -i "${env_vars[@]}" bats --tap "$@" "$target" </dev/null
}

cleanup() { # dir
        local work=$1 d
        [ -d "$work" ] || return 0
        if [ -f "$work/cgroups" ]; then
                while read -r d; do remove_cgroup "$d"; done <"$work/cgroups"
        fi
        # node_modules may be hard links to the checkout: never chmod those.
        rm -rf "$work/node_modules"
        # Directories made read-only by tests would stop rm; give write back first.
        chmod -R u+rwX "$work" 2>/dev/null || true
        rm -rf "$work"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
base() { # build_dir
        if [ -n "${GLOVE_IT_BASE:-}" ]; then
                echo "$GLOVE_IT_BASE"
        elif [ "$(id -u)" = 0 ]; then
                mkdir -p /srv/glove-it
                chown 0:0 /srv/glove-it
                chmod 0755 /srv/glove-it
                echo /srv/glove-it
        else
                (cd "$1" && pwd -P)
        fi
}

case "$cmd" in
prepare) [ $# -eq 3 ] || usage; prepare "$@" ;;
run) [ $# -ge 2 ] || usage; run_file "$@" ;;
cleanup) [ $# -eq 1 ] || usage; cleanup "$1" ;;
base) [ $# -eq 1 ] || usage; base "$1" ;;
*) usage ;;
esac
