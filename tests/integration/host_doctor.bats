#!/usr/bin/env bats
# glove doctor (issue 12, "Commands"; docs/host.md): the --json shape, the
# exit status against the needed items, the XDG items before and after
# glove setup, gloved reachable and what it advertises, and the difference
# between root and uid 65534 on cgroup delegation, checked against what
# glove exec itself does with an explicit limit.

load helpers
load "$GLOVE_IT_LIB/gloved"

ITEMS="user_namespaces seccomp cgroup_delegation cgroup_version openat2 landlock retained_images config_dir runtime_dir state_dir receipt_key session_policy path_roots exposure_policy gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        export XDG_CONFIG_HOME=$T/xdg/config XDG_RUNTIME_DIR=$T/xdg/run XDG_STATE_HOME=$T/xdg/state
        CFG=$XDG_CONFIG_HOME/glove RUN=$XDG_RUNTIME_DIR/glove STATE=$XDG_STATE_HOME/glove
}

teardown() {
        gloved_teardown
        [ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
        return 0
}

# item NAME [FIELD]: a field (status) of one item of the --json report in $output.
item() { jq -r --arg n "$1" --arg f "${2:-status}" '.items[] | select(.item == $n) | .[$f]' <<<"$output"; }

# doctor_json: glove doctor --json, whatever its exit status.
doctor_json() { run --separate-stderr timeout -k 5 60 "$GLOVE" doctor --json; }

@test "doctor: --json shape, every item once, exit status 0 exactly when a default glove exec runs (ready or degraded)" {
        doctor_json
        [ "$status" -eq 0 ] || [ "$status" -eq 1 ] || fail "exit status must be 0 or 1"
        [ "${#lines[@]}" -eq 1 ] || fail "--json prints one line"
        jq -e '(keys == ["items","ready","uid","verdict"]) and (.ready | type == "boolean") and
                (.uid | type == "number") and (.verdict | IN("ready","degraded","not_ready"))' \
                <<<"$output" >/dev/null || fail "top-level shape"
        jq -e 'all(.items[]; (keys == ["detail","fix","item","required","status"]) and
                (.status | IN("ok","missing","wrong")) and (.required | type == "boolean") and
                (.detail | type == "string" and length > 0) and
                (if .status == "ok" then .fix == null else (.fix | type == "string" and length > 0) end))' \
                <<<"$output" >/dev/null || fail "item shape"
        [ "$(jq -r '[.items[].item] | join(" ")' <<<"$output")" = "$ITEMS" ] || fail "items or their order"
        [ "$(jq -r '[.items[] | select(.required) | .item] | join(" ")' <<<"$output")" = \
                "user_namespaces seccomp cgroup_delegation" ] || fail "needed items"
        [ "$(jq -r .uid <<<"$output")" = "$(id -u)" ] || fail "uid"
        want_ready=$(jq -r 'all(.items[] | select(.required); .status == "ok")' <<<"$output")
        [ "$(jq -r .ready <<<"$output")" = "$want_ready" ] || fail "ready must follow the needed items"
        # Degraded: only cgroup delegation is not ok (glove exec warns limits.degraded and runs).
        verdict=$(jq -r 'if .ready then "ready" elif all(.items[] | select(.required and .status != "ok");
                .item == "cgroup_delegation") then "degraded" else "not_ready" end' <<<"$output")
        [ "$(jq -r .verdict <<<"$output")" = "$verdict" ] || fail "verdict $(jq -r .verdict <<<"$output"), want $verdict"
        if [ "$verdict" = not_ready ]; then expect_status 1; else expect_status 0; fi
        g doctor
        [ "$status" -eq "$([ "$verdict" = not_ready ] && echo 1 || echo 0)" ] || fail "text and json disagree"
        [[ "${lines[-1]}" == "glove doctor: ${verdict/_/ }:"* ]] || fail "the last line must say $verdict"
}

@test "doctor: cgroup delegation agrees with what glove exec does with an explicit limit" {
        doctor_json
        st=$(item cgroup_delegation)
        gx --memory 64M -- /bin/true
        if [ "$st" = ok ]; then
                expect_status 0
        else
                expect_glove_error 125
                [ "$(glove_error_code)" = cgroup.not_delegated ] || [ "$(glove_error_code)" = cgroup.unavailable ] ||
                        fail "glove exec refused with another code"
                [[ "$(item cgroup_delegation detail)" == *"uid $(id -u)"* ]] || fail "doctor must name the uid"
                # Without a limit glove exec runs, degraded: doctor says so.
                gx -- /bin/true
                expect_status 0
                [[ "$stderr" == *"glove: warning: limits.degraded: "* ]] || fail "no limits.degraded warning: $stderr"
                doctor_json
                expect_status 0
                [ "$(jq -r .verdict <<<"$output")" = degraded ] || fail "verdict must be degraded"
        fi
}

@test "doctor: root and uid 65534 differ on cgroup delegation, and doctor says so" {
        is_root || skip "needs root to run doctor as both root and uid 65534 (GLOVE_MODE=$GLOVE_MODE)"
        doctor_json
        [ "$(item cgroup_version)" = ok ] || skip "no cgroup hierarchy carries the controllers here: $(item cgroup_version detail)"
        [ "$(item cgroup_delegation)" = ok ] || fail "root must be able to create run cgroups: $(item cgroup_delegation detail)"
        expect_status 0
        [ "$(jq -r .ready <<<"$output")" = true ] || fail "root must be ready"
        mkdir -m 0700 "$T/nobody" && chown 65534:65534 "$T/nobody"
        run --separate-stderr env HOME="$T/nobody" XDG_CONFIG_HOME="$T/nobody/c" XDG_STATE_HOME="$T/nobody/s" \
                XDG_RUNTIME_DIR="$T/nobody/r" setpriv --reuid=65534 --regid=65534 --clear-groups "$GLOVE" doctor --json
        # Not delegated (this harness puts the root cell in no cgroup of
        # 65534's): a default glove exec runs degraded, and doctor says so.
        expect_status 0
        [ "$(jq -r .uid <<<"$output")" = 65534 ] || fail "not run as 65534"
        [ "$(jq -r .verdict <<<"$output")" = degraded ] || fail "65534's verdict must be degraded"
        [ "$(item cgroup_delegation)" = wrong ] || fail "65534 must be told its cgroups are not delegated"
        [[ "$(item cgroup_delegation detail)" == "cgroup.not_delegated: cgroups are not delegated to uid 65534"* ]] ||
                fail "the detail must say why"
        [[ "$(item cgroup_delegation fix)" == *"Delegate=memory pids cpu"* ]] || fail "the fix must name delegation"
        [ "$(item user_namespaces)" = ok ] || fail "65534 has user namespaces on this host"
        [ "$(jq -r .ready <<<"$output")" = false ] || fail "65534 must not be ready"
        run --separate-stderr env HOME="$T/nobody" XDG_RUNTIME_DIR="$T/nobody/r" \
                setpriv --reuid=65534 --regid=65534 --clear-groups "$GLOVE" doctor
        expect_status 0
        expect_line "glove doctor: degraded: a default glove exec runs, with a limits.degraded warning, without cgroup_delegation (wrong): memory and pids are not limited and CPU time only per process; delegated cgroups would add hard memory, pids and CPU-time limits on the whole sandbox (and allow --memory, --pids and --cpu-time)"
        # What doctor promises: that exec runs, and warns.
        run --separate-stderr env HOME="$T/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups \
                "$GLOVE" exec -- /bin/true
        expect_status 0
        [[ "$stderr" == "glove: warning: limits.degraded: no delegated cgroup for uid 65534"* ]] ||
                fail "65534's glove exec must run degraded: $stderr"
        # gloved run by 65534 with doctor's command line cannot run managed
        # sessions here: doctor, ctl capabilities and a refused start say why.
        # (Beside the test's own directory, which uid 65534 cannot reach.)
        NOBODY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/doctor-nobody.XXXXXX")
        local n=$NOBODY_DIR
        mkdir -m 0700 "$n/r" && chown 65534:65534 "$n" "$n/r"
        local nenv=(HOME="$n" XDG_CONFIG_HOME="$n/c" XDG_STATE_HOME="$n/s" XDG_RUNTIME_DIR="$n/r")
        nob() { run --separate-stderr env "${nenv[@]}" setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
        nob "$GLOVE" setup
        expect_status 0
        nob "$GLOVE" doctor --json
        local cmd
        cmd=$(item gloved fix)
        cmd=${cmd##*or run it directly: }
        [[ "$cmd" == "$(dirname "$GLOVE")/gloved --runtime-dir $n/r/glove "* ]] || fail "fix: $(item gloved fix)"
        GD_ERR=$T/gloved.err
        env "${nenv[@]}" setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh -c "exec $cmd" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$n/r/glove" "$GD_PID"
        nob "$GLOVE" doctor --json
        [ "$(item gloved)" = wrong ] || fail "a gloved that cannot run sessions must be wrong: $(item gloved detail)"
        [[ "$(item gloved detail)" == *"lifecycle_operational false (managed sessions are not operational: cgroup.not_delegated: "* ]] ||
                fail "detail: $(item gloved detail)"
        [[ "$(item gloved fix)" == "it cannot run managed sessions without delegated cgroups: "* ]] || fail "fix: $(item gloved fix)"
        nob "$GLOVE" ctl capabilities
        expect_status 0
        [[ "$output" == *$'\nlifecycle operational: no (managed sessions are not operational: cgroup.not_delegated: '* ]] ||
                fail "ctl capabilities: $output"
        nob "$GLOVE" ctl start s1
        expect_status 1
        [[ "$stderr" == "glove: method_not_found: start_session is not advertised by this service: managed sessions are not operational: cgroup.not_delegated: "*"; what to do: run gloved with delegated cgroups "* ]] ||
                fail "ctl start: $stderr"
}

@test "doctor: the XDG items are missing before setup, ok after, and wrong with a bad mode (left as it was)" {
        doctor_json
        for i in config_dir runtime_dir state_dir receipt_key session_policy path_roots gloved; do
                [ "$(item $i)" = missing ] || fail "$i must be missing before setup"
        done
        [[ "$(item config_dir fix)" == "run glove setup" ]] || fail "the fix must be glove setup"
        g setup
        expect_status 0
        doctor_json
        for i in config_dir runtime_dir state_dir receipt_key session_policy path_roots; do
                [ "$(item $i)" = ok ] || fail "$i must be ok after setup: $(item $i detail)"
        done
        [[ "$(item session_policy detail)" == *"revision 1, max_plan_ttl_ms 600000"* ]] || fail "policy detail"
        chmod 0750 "$CFG"
        doctor_json
        [ "$(item config_dir)" = wrong ] || fail "a 0750 config dir must be wrong"
        [[ "$(item config_dir detail)" == *"mode 0750"* ]] || fail "detail must give the mode"
        [[ "$(item config_dir fix)" == *"chmod 0700 $CFG"* ]] || fail "fix must say how"
        [ "$(stat -c %a "$CFG")" = 750 ] || fail "doctor changed the mode"
        chmod 0700 "$CFG"
        # A policy whose digest does not match its launch fields is wrong.
        jq '.runtime_templates[0].launch.arguments = ["changed"]' "$CFG/session-policy.json" >"$T/p"
        install -m 600 "$T/p" "$CFG/session-policy.json"
        doctor_json
        [ "$(item session_policy)" = wrong ] || fail "a changed launch must be wrong"
        [[ "$(item session_policy detail)" == policy.adapter_digest_mismatch:* ]] || fail "the loader's code"
        chmod 0644 "$CFG/session-policy.json"
        doctor_json
        [[ "$(item session_policy detail)" == policy.file_mode:* ]] || fail "the loader's file check"
        chmod 0600 "$STATE/receipt.key"
        truncate -s 31 "$STATE/receipt.key"
        doctor_json
        [ "$(item receipt_key)" = wrong ] || fail "a 31-byte key must be wrong"
}

@test "doctor: gloved reachable, with what it advertises" {
        require_gloved
        g setup
        expect_status 0
        RT=$RUN ST=$STATE GD_ERR=$T/gloved.err
        "$GLOVED" --runtime-dir "$RUN" --state-dir "$STATE" --session-policy "$CFG/session-policy.json" \
                2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RUN" "$GD_PID"
        # It answers but cannot run sessions: wrong, with the command line
        # it should run with (the user unit's ExecStart=, for a shell).
        local want="$(dirname "$GLOVE")/gloved --runtime-dir $RUN --state-dir $STATE --session-policy $CFG/session-policy.json --session-store $STATE/sessions.journal --materialization-root $STATE/sessions"
        doctor_json
        [ "$(item gloved)" = wrong ] || fail "a gloved without a store must not be ok: $(item gloved detail)"
        [[ "$(item gloved detail)" == "gloved 0."*" at $RUN/gloved.sock: policy revision 1, lifecycle_operational false (gloved was started without --session-store FILE and --materialization-root DIR),"*"validate_plan"* ]] ||
                fail "the detail must give the version, revision, why not operational and methods: $(item gloved detail)"
        [[ "$(item gloved fix)" == *"or run it directly: $want" ]] || fail "fix: $(item gloved fix)"
        stop_gloved
        doctor_json
        [ "$(item gloved)" = missing ] || fail "a stopped gloved must be missing"
        [[ "$(item gloved fix)" == "start it: glove daemon install, then glove daemon start"*"or run it directly: $want" ]] ||
                fail "fix: $(item gloved fix)"
        # The printed command runs a gloved doctor calls ok (or, without
        # delegated cgroups, wrong for that reason alone).
        local fix
        fix=$(item gloved fix)
        # shellcheck disable=SC2294 # the command is doctor's text, for a shell
        eval "exec ${fix##*or run it directly: }" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RUN" "$GD_PID"
        doctor_json
        if [[ "$(item gloved detail)" == *"lifecycle_operational false (managed sessions are not operational: cgroup."* ]]; then
                [ "$(item gloved)" = wrong ] && [[ "$(item gloved fix)" == *"delegated cgroups"* ]] ||
                        fail "not operational for cgroups: $(item gloved fix)"
        else
                [ "$(item gloved)" = ok ] || fail "gloved run with doctor's command must be ok: $(item gloved detail)"
                [[ "$(item gloved detail)" == *"lifecycle_operational true,"*"start_session"* ]] || fail "$(item gloved detail)"
        fi
}

@test "doctor: --help lists every item; bad usage exits 125" {
        g doctor --help
        expect_status 0
        for w in $ITEMS --json "Exit status"; do
                [[ "$output" == *"$w"* ]] || fail "--help does not mention $w"
        done
        g -125 doctor --bogus
        expect_status 125
        [[ "$stderr" == "glove: usage.doctor: "* ]] || fail "usage error line"
        g -125 doctor extra
        expect_status 125
}
