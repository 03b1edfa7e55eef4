#!/usr/bin/env bats
# glove init (issue 26; docs/exposures.md): the project is walked from /
# without following a link and must lie beneath a root of the exposure
# policy glove setup --path-root wrote; glove init authenticates with the
# owner secret; with a gloved started with the exposure options, init, list,
# revoke and init again give generation 2 under the same identifier.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        export XDG_CONFIG_HOME=$T/xdg/config XDG_RUNTIME_DIR=$T/xdg/run XDG_STATE_HOME=$T/xdg/state
        CFG=$XDG_CONFIG_HOME/glove RUN=$XDG_RUNTIME_DIR/glove STATE=$XDG_STATE_HOME/glove
        XP=$CFG/exposure-policy.json
        mkdir -m 0755 "$T/root" "$T/root/proj" "$T/other"
}

teardown() {
        gloved_teardown
        return 0
}

@test "init: --help is complete; usage errors exit 125 before anything is read" {
        g init --help
        expect_status 0
        for w in --label --ttl --mode --runtime --list --revoke --json owner-secret "Exit status"; do
                [[ "$output" == *"$w"* ]] || fail "--help does not mention $w"
        done
        for bad in "--bogus" "--list $T/root/proj" "--revoke exp-1 $T/root/proj" "--list --revoke x" \
                "--ttl 1500ms" "--ttl 0" "--mode write" "a b" "--label"; do
                # shellcheck disable=SC2086
                g -125 init $bad
                expect_status 125
                [[ "$stderr" == "glove: usage.init: "* ]] || fail "$bad: $stderr"
        done
        # Each message names what is wrong: the PROJECT, not the ID; the
        # repeated value; forms of --ttl that init takes (no 500ms).
        g -125 init "$T/root/proj" --revoke exp-1
        [[ "$stderr" == "glove: usage.init: --revoke takes no PROJECT (got \"$T/root/proj\")"* ]] || fail "$stderr"
        g -125 init --list --mode read
        [[ "$stderr" == "glove: usage.init: --list takes no --mode"* ]] || fail "$stderr"
        g -125 init --ttl 500ms
        [[ "$stderr" == "glove: usage.init: --ttl 500ms: expected whole seconds"*"30s, 90m, 24h"* ]] || fail "$stderr"
        [[ "$stderr" != *500ms,* && "$stderr" != *"unit ms"* ]] || fail "--ttl suggests milliseconds: $stderr"
        g -125 init --mode read --mode read
        [[ "$stderr" == "glove: usage.init: --mode read is given twice"* ]] || fail "$stderr"
        g -125 init --runtime x --runtime x
        [[ "$stderr" == "glove: usage.init: --runtime x is given twice"* ]] || fail "$stderr"
        g -125 init --revoke a --revoke b
        [[ "$stderr" == "glove: usage.init: --revoke is given twice"* ]] || fail "$stderr"
        # Values travel as JSON strings: one that is not UTF-8 is refused,
        # never dropped from the request.
        g -125 init --label $'\xff' "$T/root/proj"
        [[ "$stderr" == "glove: usage.init: --label takes UTF-8 text"* ]] || fail "$stderr"
        g -125 init --runtime=$'a\xc3' "$T/root/proj"
        [[ "$stderr" == "glove: usage.init: --runtime takes UTF-8 text"* ]] || fail "$stderr"
}

@test "init: refuses no policy, a symbolic link anywhere, a project outside the roots, and a gloved without exposures" {
        g setup
        expect_status 0
        g init "$T/root/proj"
        expect_status 1
        [[ "$stderr" == "glove: init.no_policy: $XP does not exist"*"; what to do: "*"glove setup --path-root"* ]] ||
                fail "no policy: $stderr"
        g setup --path-root "$T/root"
        expect_status 0
        # A link as an ancestor, as the project itself, and reached relatively.
        ln -s "$T/root" "$T/alias"
        ln -s proj "$T/root/plink"
        g init "$T/alias/proj"
        expect_status 1
        [[ "$stderr" == "glove: init.symlink: $T/alias is a symbolic link"* ]] || fail "ancestor link: $stderr"
        g init "$T/root/plink"
        expect_status 1
        [[ "$stderr" == "glove: init.symlink: $T/root/plink is a symbolic link"* ]] || fail "final link: $stderr"
        cd "$T/other"
        g init ../alias/proj
        expect_status 1
        [[ "$stderr" == "glove: init.symlink: $T/alias is a symbolic link"* ]] || fail "relative link: $stderr"
        g init ../other
        expect_status 1
        [[ "$stderr" == "glove: init.outside_roots: $T/other is beneath no root of $XP (roots: $T/root); what to do: "* ]] ||
                fail "outside: $stderr"
        g init "$T/root/missing"
        expect_status 1
        [[ "$stderr" == "glove: init.missing: $T/root/missing does not exist"* ]] || fail "missing: $stderr"
        # Beneath the root, but gloved is not running with exposures.
        cd "$T/root/proj"
        g init
        expect_status 1
        [[ "$stderr" == "glove: init.no_owner_secret: $RUN/owner-secret does not exist: "*"; what to do: "*"--path-exposure-policy"* ]] ||
                fail "no owner secret: $stderr"
        g init --list
        expect_status 1
        [[ "$stderr" == "glove: init.no_owner_secret: "* ]] || fail "--list without owner secret: $stderr"
}

@test "init: with gloved, init, list, revoke and init again give generation 2; the catalog has no path" {
        require_gloved
        grep -q -- --path-exposure-policy "$GLOVED" || skip "this gloved has no path exposures"
        g setup --path-root "$T/root"
        expect_status 0
        RT=$RUN ST=$STATE GD_ERR=$T/gloved.err
        "$GLOVED" --runtime-dir "$RUN" --state-dir "$STATE" --session-policy "$CFG/session-policy.json" \
                --path-exposure-policy "$XP" --path-exposure-journal "$STATE/exposures.journal" \
                2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RUN" "$GD_PID"
        [ "$(stat -c %a "$RUN/owner-secret")" = 600 ] || fail "owner-secret is not 0600"
        g init "$T/root/proj" --label demo --ttl 1h --mode read
        expect_status 0
        [[ "$output" =~ ^exposed\ $T/root/proj\ as\ (exp-[0-9a-f]{32})\ generation\ 1\ \(modes\ read,\ expires\ 20[0-9-]+T[0-9:]+Z\)$ ]] ||
                fail "init: $output"
        id=${BASH_REMATCH[1]}
        g init "$T/root/proj"
        expect_status 1
        [[ "$stderr" == "glove: exposure.live: "*"; what to do: "*"--revoke"* ]] || fail "a second init: $stderr"
        g init --list --json
        expect_status 0
        [ "$(jq -c --arg id "$id" '.exposures[] | select(.exposure_id == $id) | [.generation, .state, .path, .label]' <<<"$output")" = \
                "[1,\"live\",\"$T/root/proj\",\"demo\"]" ] || fail "list: $output"
        g init --revoke "$id"
        expect_status 0
        [ "$output" = "revoked $id generation 1" ] || fail "revoke: $output"
        g init --list
        expect_status 0
        [[ "$output" == "$id generation 1 revoked $T/root/proj label demo (modes read, expires "* ]] || fail "list: $output"
        cd "$T/root/proj"
        g init --json
        expect_status 0
        [ "$(jq -c '[.exposure_id, .generation, .state]' <<<"$output")" = "[\"$id\",2,\"live\"]" ] ||
                fail "re-init: $output"
        # The controller's catalog (bootstrap secret) names no path.
        if "$GLOVE" ctl --help | grep -q exposures; then
                ctl --json exposures
                expect_status 0
                [[ "$output" != *"$T"* ]] || fail "the catalog shows a path: $output"
                [ "$(jq -r '.exposures[0].generation' <<<"$output")" = 2 ] || fail "catalog: $output"
        fi
}
