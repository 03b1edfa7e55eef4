#!/usr/bin/env bats
# glove daemon: the generated systemd user units (gloved.service,
# gloved.socket) are what systemd accepts, bind the gloved next to glove to
# the XDG directories, are written atomically and idempotently, and run:
# gloved started through systemd-socket-activate on the socket unit's
# ListenStream= address with the service unit's ExecStart= answers glove ctl.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        export XDG_CONFIG_HOME=$T/config XDG_STATE_HOME=$T/state XDG_RUNTIME_DIR=$T/run
        mkdir -p -m 0700 "$XDG_CONFIG_HOME/glove" "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR"
        UNITS=$XDG_CONFIG_HOME/systemd/user
}

teardown() {
        gloved_teardown
        return 0
}

daemon() {
        run --separate-stderr timeout --foreground -k 5 60 "$GLOVE" daemon "$@"
}

with_policy() {
        install_policy "$XDG_CONFIG_HOME/glove/session-policy.json"
}

# verify FILE...: systemd-analyze verify (man pages are checked by
# man_pages.bats, not here: they are not installed on this host's MANPATH).
verify() {
        command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (package systemd)"
        run --separate-stderr systemd-analyze verify --man=no "$@"
}

@test "daemon: install --write-only --socket writes both units, systemd-analyze verify accepts them" {
        with_policy
        daemon install --write-only --socket
        expect_status 0
        expect_line "wrote $UNITS/gloved.service (gloved $(dirname "$GLOVE")/gloved)"
        expect_line "wrote $UNITS/gloved.socket (listening on $XDG_RUNTIME_DIR/glove/gloved.sock)"
        [ "$(stat -c %a "$UNITS/gloved.service")" = 644 ] || fail "unit mode $(stat -c %a "$UNITS/gloved.service")"
        grep -qx "Type=notify" "$UNITS/gloved.service" || fail "not Type=notify"
        grep -qx "KillMode=process" "$UNITS/gloved.service" || fail "keepers would not survive a restart"
        grep -qx "PrivateUsers=yes" "$UNITS/gloved.service" || fail "no PrivateUsers="
        grep -qx "PrivateMounts=yes" "$UNITS/gloved.service" || fail "no PrivateMounts="
        grep -qx "Delegate=cpu memory pids" "$UNITS/gloved.service" || fail "no Delegate="
        local want="ExecStart=$(dirname "$GLOVE")/gloved --runtime-dir $XDG_RUNTIME_DIR/glove --state-dir $XDG_STATE_HOME/glove --session-policy $XDG_CONFIG_HOME/glove/session-policy.json --session-store $XDG_STATE_HOME/glove/sessions.journal --materialization-root $XDG_STATE_HOME/glove/sessions"
        grep -qxF "$want" "$UNITS/gloved.service" || { grep ExecStart "$UNITS/gloved.service" >&2; fail "ExecStart differs"; }
        grep -qxF "ListenStream=$XDG_RUNTIME_DIR/glove/gloved.sock" "$UNITS/gloved.socket" || fail "ListenStream differs"
        ls -A "$UNITS" | grep -q '\.tmp$' && fail "a temporary file was left behind"
        # verify exits 0 on settings it ignores: it passes only with nothing
        # said on stderr either.
        verify "$UNITS/gloved.service" "$UNITS/gloved.socket"
        [ "$status" -eq 0 ] && [ -z "$stderr" ] ||
                { echo "$stderr" >&2; fail "systemd-analyze verify refused or warned about the generated units"; }
        # The check can fail: a setting systemd ignores is reported, and a
        # missing gloved is refused.
        sed 's/^Type=notify$/Type=notify-bogus/' "$UNITS/gloved.service" >"$T/gloved.service"
        verify "$T/gloved.service"
        [[ "$stderr" == *"notify-bogus"* ]] || fail "systemd-analyze verify said nothing of a broken setting"
        sed "s|^ExecStart=[^ ]*|ExecStart=$T/no-such-gloved|" "$UNITS/gloved.service" >"$T/gloved.service"
        verify "$T/gloved.service"
        [ "$status" -ne 0 ] || fail "systemd-analyze verify accepted a unit whose gloved is missing"
}

@test "daemon: with an exposure policy the unit also gives gloved the exposure policy and journal" {
        with_policy
        install -m 600 /dev/null "$XDG_CONFIG_HOME/glove/exposure-policy.json"
        daemon install --write-only
        expect_status 0
        grep -q "^ExecStart=.* --materialization-root $XDG_STATE_HOME/glove/sessions --path-exposure-policy $XDG_CONFIG_HOME/glove/exposure-policy.json --path-exposure-journal $XDG_STATE_HOME/glove/exposures.journal\$" \
                "$UNITS/gloved.service" || { grep ExecStart "$UNITS/gloved.service" >&2; fail "no exposure options"; }
}

@test "daemon: DelegateSubgroup= only from systemd 254 on; the fallback says why" {
        with_policy
        daemon install --write-only
        expect_status 0
        local v
        v=$(systemctl --version 2>/dev/null | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
        # --write-only still reads the version (systemctl --version needs no
        # manager), so it writes what status then calls up to date.
        if [ -n "$v" ] && [ "$v" -lt 254 ]; then
                grep -q "^# No DelegateSubgroup=glove-host: it needs systemd >= 254 and this manager is $v;" \
                        "$UNITS/gloved.service" || fail "--write-only: no fallback comment naming systemd $v"
        fi
        daemon status
        [[ "$output" == *"gloved.service: installed (up to date)"* ]] || fail "--write-only's unit is not up to date: $output"
        # Without --write-only the version is asked (systemctl --version) even
        # when no user manager runs; the unit is written before systemctl fails.
        rm "$UNITS/gloved.service"
        daemon install
        [ -f "$UNITS/gloved.service" ] || fail "install did not write the unit"
        if [ -n "$v" ] && [ "$v" -ge 254 ]; then
                grep -qx "DelegateSubgroup=glove-host" "$UNITS/gloved.service" || fail "systemd $v: no DelegateSubgroup="
        else
                grep -q "^# No DelegateSubgroup=glove-host: it needs systemd >= 254 and this manager is $v;" \
                        "$UNITS/gloved.service" || fail "systemd $v: no fallback comment naming the version"
                expect_line "systemd $v: no DelegateSubgroup= (needs 254); gloved runs in the delegated unit cgroup"
        fi
        if [ "$status" -ne 0 ]; then
                # No user manager reachable (this host's containers): said so.
                expect_status 1
                [[ "$stderr" == *"glove: daemon.systemctl_failed: systemctl --user daemon-reload"* ]] ||
                        fail "the systemctl failure is not named: $stderr"
        fi
}

@test "daemon: a second install changes nothing and says so; uninstall removes both units" {
        with_policy
        daemon install --write-only --socket
        expect_status 0
        local before
        before=$(stat -c %i:%Y "$UNITS/gloved.service")
        daemon install --write-only --socket
        expect_status 0
        expect_line "unchanged $UNITS/gloved.service (gloved $(dirname "$GLOVE")/gloved)"
        [ "$(stat -c %i:%Y "$UNITS/gloved.service")" = "$before" ] || fail "the unit was rewritten"
        # Without --socket the socket unit is dropped.
        daemon install --write-only
        expect_status 0
        expect_line "removed $UNITS/gloved.socket"
        [ ! -e "$UNITS/gloved.socket" ] || fail "gloved.socket is still there"
        daemon uninstall
        expect_line "removed $UNITS/gloved.service"
        [ ! -e "$UNITS/gloved.service" ] || fail "gloved.service is still there"
        daemon uninstall
        expect_status 0
        expect_line "not installed: no gloved.service in $UNITS"
}

@test "daemon: a glove in a build tree prefers an installed gloved in PATH, else warns that make clean removes the unit's" {
        with_policy
        # A build tree (build.ninja and meson-private/ beside glove) and an
        # installed gloved, both copies of this cell's.
        local tree=$T/tree pfx=$T/prefix/bin
        mkdir -p "$tree/meson-private" "$pfx"
        : >"$tree/build.ninja"
        cp "$GLOVE" "$tree/glove"
        cp "$(dirname "$GLOVE")/gloved" "$tree/gloved"
        chmod 0755 "$T/prefix" "$pfx" "$tree" "$tree/glove" "$tree/gloved"
        run --separate-stderr env PATH=/usr/bin:/bin "$tree/glove" daemon install --write-only
        expect_status 0
        expect_line "wrote $UNITS/gloved.service (gloved $tree/gloved)"
        [[ "$stderr" == "glove: warning: daemon.build_tree_gloved: the unit runs $tree/gloved, inside the build tree $tree, which make clean removes"*"make install"* ]] ||
                fail "no warning that the unit points into a build tree: $stderr"
        # With an installed gloved in PATH, that one, and no warning.
        cp "$tree/gloved" "$pfx/gloved"
        run --separate-stderr env PATH="$pfx:/usr/bin:/bin" "$tree/glove" daemon install --write-only
        expect_status 0
        expect_line "wrote $UNITS/gloved.service (gloved $pfx/gloved)"
        expect_line "gloved: the installed $pfx/gloved, found in PATH, not the build tree's $tree/gloved"
        [ -z "$stderr" ] || fail "a warning with an installed gloved: $stderr"
        grep -q "^ExecStart=$pfx/gloved --runtime-dir " "$UNITS/gloved.service" || fail "the unit does not run $pfx/gloved"
        # One that others could replace is passed over.
        chmod g+w "$pfx/gloved"
        run --separate-stderr env PATH="$pfx:/usr/bin:/bin" "$tree/glove" daemon install --write-only
        expect_line "wrote $UNITS/gloved.service (gloved $tree/gloved)"
        [[ "$stderr" == *"daemon.build_tree_gloved"* ]] || fail "no warning once the installed gloved is group-writable: $stderr"
        # A glove outside a build tree runs its sibling, whatever PATH holds.
        chmod g-w "$pfx/gloved"
        run --separate-stderr env PATH="$pfx:/usr/bin:/bin" "$GLOVE" daemon install --write-only
        expect_status 0
        [[ "$output" == *"$UNITS/gloved.service (gloved $(dirname "$GLOVE")/gloved)"* ]] ||
                fail "a glove outside a build tree did not run its sibling gloved"
        [ -z "$stderr" ] || fail "a warning outside a build tree: $stderr"
}

@test "daemon: status --json reports installed, up-to-date, enabled and active states" {
        with_policy
        daemon status --json
        expect_status 3
        "$PY" - "$output" <<'EOF' || fail "status before install: $output"
import json, sys
s = json.loads(sys.argv[1])
assert s["service"]["installed"] is False and s["socket"]["installed"] is False, s
assert s["service"]["active"] in ("inactive", "unknown", "failed"), s
assert s["manager"] in ("reachable", "unreachable"), s
assert s["manager"] == "reachable" or s["manager_error"], s
EOF
        daemon install --write-only --socket
        daemon status --json
        expect_status 3
        "$PY" - "$output" "$UNITS" "$(dirname "$GLOVE")/gloved" <<'EOF' || fail "status after install: $output"
import json, sys
s = json.loads(sys.argv[1])
assert s["unit_dir"] == sys.argv[2] and s["gloved"] == sys.argv[3], s
assert s["service"]["installed"] is True and s["socket"]["installed"] is True, s
assert s["socket"]["up_to_date"] is True, s
EOF
        echo "# edited" >>"$UNITS/gloved.socket"
        daemon status --json
        "$PY" - "$output" <<'EOF' || fail "status after an edit: $output"
import json, sys
s = json.loads(sys.argv[1])
assert s["socket"]["up_to_date"] is False, s
EOF
        daemon status
        expect_line "gloved.socket: installed (differs from what install writes now), $(
                "$PY" -c 'import json,sys; s=json.loads(sys.argv[1])["socket"]; print(s["enabled"] + ", " + s["active"])' \
                        "$("$GLOVE" daemon status --json)")"
}

@test "daemon: refusals: no policy, a group-writable unit directory, unknown words" {
        daemon install --write-only
        expect_status 125
        [[ "$stderr" == "glove: daemon.no_policy: $XDG_CONFIG_HOME/glove/session-policy.json: "*"run glove setup first" ]] ||
                fail "stderr: $stderr"
        [ ! -e "$UNITS/gloved.service" ] || fail "a unit was written without a policy"
        with_policy
        mkdir -p "$UNITS"
        chmod 0775 "$UNITS"
        daemon install --write-only
        expect_status 1
        [[ "$stderr" == "glove: daemon.unit_dir: $UNITS is writable by group or others (mode 0775); fix: chmod go-w $UNITS" ]] ||
                fail "stderr: $stderr"
        [ ! -e "$UNITS/gloved.service" ] || fail "a unit was written into a group-writable directory"
        daemon frobnicate
        expect_glove_error 125
        [ "$(glove_error_code)" = usage.unknown_command ] || fail "code $(glove_error_code)"
        daemon start --socket
        expect_glove_error 125
        daemon
        expect_glove_error 125
        [ "$(glove_error_code)" = usage.missing_command ] || fail "code $(glove_error_code)"
        unset XDG_RUNTIME_DIR
        daemon install --write-only
        expect_status 125
        [[ "$stderr" == "glove: daemon.no_default_dir: \$XDG_RUNTIME_DIR is not set to an absolute path; gloved keeps its socket there: log in through a session that sets it (pam_systemd: /run/user/$(id -u)), or set XDG_RUNTIME_DIR to an owner-only directory of yours" ]] ||
                fail "stderr: $stderr"
        # status says the same, as glove setup does (host.no_runtime_dir).
        daemon status
        expect_glove_error 125
        [ "$(glove_error_code)" = daemon.no_default_dir ] && [[ "$stderr" == *"or set XDG_RUNTIME_DIR to "* ]] ||
                fail "status without XDG_RUNTIME_DIR: $stderr"
}

@test "daemon: without a user manager, start and stop say so and start prints the command that runs gloved" {
        with_policy
        daemon install --write-only
        expect_status 0
        # A runtime directory with no systemd/private and no bus socket, and
        # no session bus address: certainly no user manager.
        unset DBUS_SESSION_BUS_ADDRESS
        [ ! -e "$XDG_RUNTIME_DIR/systemd/private" ] && [ ! -e "$XDG_RUNTIME_DIR/bus" ] || fail "a manager's socket in a test directory"
        local want="$(dirname "$GLOVE")/gloved --runtime-dir $XDG_RUNTIME_DIR/glove --state-dir $XDG_STATE_HOME/glove --session-policy $XDG_CONFIG_HOME/glove/session-policy.json --session-store $XDG_STATE_HOME/glove/sessions.journal --materialization-root $XDG_STATE_HOME/glove/sessions"
        daemon start
        expect_glove_error 1
        [ "$(glove_error_code)" = daemon.no_user_manager ] || fail "start: $stderr"
        [[ "$stderr" == *"($XDG_RUNTIME_DIR/systemd/private: No such file or directory; $XDG_RUNTIME_DIR/bus: No such file or directory; \$DBUS_SESSION_BUS_ADDRESS is not set)"* ]] ||
                fail "start must say why: $stderr"
        [[ "$stderr" == *"or run gloved directly (glove setup first): $want" ]] || fail "start must print the command: $stderr"
        # The command is the unit's ExecStart= (no quoting needed here).
        grep -qxF "ExecStart=$want" "$UNITS/gloved.service" || fail "the command differs from the unit's ExecStart="
        daemon stop
        expect_glove_error 1
        [ "$(glove_error_code)" = daemon.no_user_manager ] || fail "stop: $stderr"
        daemon status
        expect_status 3
        expect_line "without one, run gloved directly: $want"
}

@test "daemon: gloved socket-activated on the socket unit's address, with the service unit's command line, answers glove ctl" {
        command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate is not installed (package systemd)"
        with_policy
        daemon install --write-only --socket
        expect_status 0
        local listen exec
        listen=$(sed -n 's/^ListenStream=//p' "$UNITS/gloved.socket")
        exec=$(sed -n 's/^ExecStart=//p' "$UNITS/gloved.service")
        [ -n "$listen" ] && [ -n "$exec" ] || fail "no ListenStream= or ExecStart="
        # The socket unit's DirectoryMode=0700 makes this directory.
        mkdir -m 0700 "$XDG_RUNTIME_DIR/glove"
        RT=$XDG_RUNTIME_DIR/glove GD_ERR=$T/gloved.err
        # The words have no quotes here (no spaces in these paths).
        # shellcheck disable=SC2086
        systemd-socket-activate -l "$listen" $exec 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        local i
        for ((i = 0; i < 400; i++)); do
                [ -S "$listen" ] && break
                sleep 0.025
        done
        [ -S "$listen" ] || { cat "$GD_ERR" >&2; fail "systemd-socket-activate did not listen on $listen"; }
        # The first connection starts gloved (it inherits the listening
        # socket); glove ctl reads the secret gloved then writes.
        "$PY" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.close()' "$listen"
        for ((i = 0; i < 400; i++)); do
                [ -f "$RT/bootstrap-secret" ] && break
                sleep 0.025
        done
        ctl capabilities
        expect_status 0
        [[ "$(printf '%s\n' "$output" | grep '^methods:')" == *" validate_plan create_session session_status"* ]] ||
                fail "the unit's --session-policy and --session-store are not in effect: $output"
        grep -qF '"msg":"listening on an activated socket (policy loaded, session store open, 0 sessions, path exposures none)"' "$GD_ERR" ||
                { cat "$GD_ERR" >&2; fail "gloved did not take the activated socket with the unit's options"; }
        [ -f "$XDG_STATE_HOME/glove/sessions.journal" ] || fail "the unit's session store was not opened"
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS"
        [ -S "$listen" ] || fail "gloved removed the socket it did not bind"
}
