#!/usr/bin/env bats
# Messages with a count agree with it (issue 14: "1 reasons", "1 sessions"):
# one is singular, anything else plural.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() { gloved_teardown; }

@test "plurals: gloved counts 1 session, 2 sessions; glove ctl counts 1 reason" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        plan_file "$T/expired.json" -1000
        local args=(--session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal")
        start_gloved "$T/a" "${args[@]}"
        grep -q "session store open, 0 sessions," "$GD_ERR" || { cat "$GD_ERR" >&2; fail "no '0 sessions,'"; }
        # An expired plan has exactly one reason.
        ctl validate-plan "$T/expired.json"
        expect_status 1
        expect_line 'reason plan.expired at $.expires_at_ms'
        [[ "$stderr" == *"(1 reason)"* ]] || fail "expected '(1 reason)'"
        ctl create-session --session-id s-1 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        stop_gloved
        start_gloved "$T/b" "${args[@]}"
        grep -q "session store open, 1 session," "$GD_ERR" || { cat "$GD_ERR" >&2; fail "no '1 session,'"; }
        ctl create-session --session-id s-2 --idempotency-key k-2 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        stop_gloved
        start_gloved "$T/c" "${args[@]}"
        grep -q "session store open, 2 sessions," "$GD_ERR" || { cat "$GD_ERR" >&2; fail "no '2 sessions,'"; }
}
