#!/usr/bin/env bats
# glove run: the policy's own inputs are checked (issue 14): a policy file
# that anyone but the invoker could rewrite is refused; a rule naming an
# upstream that does not exist is an error at start; a rule that matches no
# tool the upstream lists is a warning on stderr and in the audit log. Real
# peers: the SDK client inside, server-filesystem from npm outside.

load helpers
load lib/mcp

setup() { mcp_setup; }

# fs_run ARGS...: glove run with server-filesystem on $ROOT as "fs" and the
# SDK client listing the tools.
fs_run() {
        ROOT=$BATS_TEST_TMPDIR/root
        mkdir -p "$ROOT"
        echo "hello from the host" >"$ROOT/hello.txt"
        gr --upstream "fs=$NODE,$FILESYSTEM,$ROOT" --upstream-ro "fs:$ROOT" "$@" "${CLIENT[@]}" \
                '[{"op":"call","tool":"fs.read_text_file","args":{"path":"'"$ROOT/hello.txt"'"},"expect":"ok","text":"hello from the host"}]'
}

@test "run: a world-writable or group-writable --policy file is refused (policy.file_unsafe) before anything runs" {
        local d=$BATS_TEST_TMPDIR/p
        mkdir -m 0700 "$d"
        echo '{"version":1,"allow":["fs.read_text_file"]}' >"$d/policy.json"
        local mode
        for mode in 0666 0646 0664; do
                chmod "$mode" "$d/policy.json"
                fs_run --policy "$d/policy.json"
                expect_run_error 125
                [ "$(run_error_code)" = policy.file_unsafe ] || fail "mode $mode: expected policy.file_unsafe"
                [ ! -s "$CLIENT_OUT" ] || fail "mode $mode: the agent ran"
        done
        # A directory above it that others may write (not sticky): they could
        # replace the file.
        chmod 0644 "$d/policy.json"
        chmod 0777 "$d"
        fs_run --policy "$d/policy.json"
        expect_run_error 125
        [ "$(run_error_code)" = policy.file_unsafe ] || fail "open directory: expected policy.file_unsafe"
        [[ "$RUN_ERROR" == *"directory $d is writable by others"* ]] || fail "the error does not name the directory"
        # Owner-only again: it loads and the allowed call goes through.
        chmod 0700 "$d"
        fs_run --policy "$d/policy.json"
        expect_client_pass
}

@test "run: a rule for an upstream that does not exist is an error at start (policy.unknown_upstream), from the command line and from a policy file" {
        local rule
        for rule in "--allow other.read" "--deny other.*" "--allow-arg other.read:/path=/x"; do
                # shellcheck disable=SC2086
                fs_run --allow fs.read_text_file $rule
                expect_run_error 125
                [ "$(run_error_code)" = policy.unknown_upstream ] || fail "$rule: expected policy.unknown_upstream"
                [[ "$RUN_ERROR" == *"other"* && "$RUN_ERROR" == *"fs"* ]] || fail "$rule: the error names neither the rule nor the upstreams"
                [ ! -s "$CLIENT_OUT" ] || fail "$rule: the agent ran"
        done
        local d=$BATS_TEST_TMPDIR/p
        mkdir -m 0700 "$d"
        echo '{"version":1,"allow":["fs.read_text_file","fss.read_text_file"]}' >"$d/policy.json"
        fs_run --policy "$d/policy.json"
        expect_run_error 125
        [ "$(run_error_code)" = policy.unknown_upstream ] || fail "policy file: expected policy.unknown_upstream"
        [[ "$RUN_ERROR" == *"fss.read_text_file"* ]] || fail "the error does not name the rule"
}

@test "run: a rule matching no tool the upstream lists is a warning on stderr and a policy_warning record; the run goes on" {
        fs_run --audit-log "$AUDIT" --allow fs.read_text_file --allow fs.no_such_tool --deny fs.nor_this \
                --allow-arg "fs.not_there:/path=/x"
        expect_client_pass
        local t
        for t in "allow fs.no_such_tool" "deny fs.nor_this" "arguments fs.not_there"; do
                [[ "$stderr" == *"glove: warning: policy.rule_unmatched: $t matches no tool that upstream fs lists"* ]] ||
                        fail "no warning for $t"
        done
        [[ "$stderr" != *"rule_unmatched: allow fs.read_text_file"* ]] || fail "a matching rule was warned about"
        audit_has '.event == "policy_warning" and .code == "policy.rule_unmatched" and .kind == "allow" and .rule == "fs.no_such_tool" and .upstream == "fs"'
        audit_has '.event == "policy_warning" and .kind == "deny" and .rule == "fs.nor_this"'
        audit_has '.event == "policy_warning" and .kind == "arguments" and .rule == "fs.not_there"'
        audit_lacks '.event == "policy_warning" and .rule == "fs.read_text_file"'
        [ "$(jq -s '[.[] | select(.event == "policy_warning")] | length' "$AUDIT")" -eq 3 ] || fail "expected 3 policy_warning records"
        # A wildcard matches whatever the upstream lists: no warning.
        fs_run --allow 'fs.*'
        expect_client_pass
        [[ "$stderr" != *"rule_unmatched"* ]] || fail "fs.* was warned about"
        [[ "$stderr" != *"run.no_tools"* ]] || fail "a run with --allow was warned that it allows no tool"
}

@test "run: with no allow rule at all (no --allow, no \"allow\" in the --policy file) a run says once that the agent will see no tools" {
        gr --upstream "py=$PY,$UPY" -- /bin/true
        expect_status 0
        [ "$(printf '%s\n' "$stderr" | grep -c run.no_tools)" = 1 ] &&
                [[ "$stderr" == *"glove: warning: run.no_tools: no --allow allows a tool: the agent will see no tools of the 1 upstream (default deny); add --allow NAME.TOOL"* ]] ||
                fail "no single run.no_tools warning: $stderr"
        local d=$BATS_TEST_TMPDIR/p
        mkdir -m 0700 "$d"
        echo '{"version":1,"deny":["py.crash"]}' >"$d/deny.json"
        gr --upstream "py=$PY,$UPY" --policy "$d/deny.json" -- /bin/true
        expect_status 0
        [[ "$stderr" == *"run.no_tools: no --allow and no \"allow\" of the --policy file allows a tool"* ]] ||
                fail "a policy file that allows nothing was not warned about: $stderr"
        # A policy file's "allow" is an allow rule as --allow is.
        echo '{"version":1,"allow":["py.*"]}' >"$d/allow.json"
        gr --upstream "py=$PY,$UPY" --policy "$d/allow.json" -- /bin/true
        expect_status 0
        [[ "$stderr" != *"run.no_tools"* ]] || fail "a policy file that allows tools was warned about: $stderr"
}
