#!/usr/bin/env bats
# refinement-eval-v1 through gloved (issue 27; docs/refinement.md): a
# matched pair of real managed sessions (base and candidate skill bundles,
# one fixture each) run by a scripted agent that acts out its skill; the
# fixture is read by gloved and never mounted; each session ends with one
# refinement receipt (never a resource one) that the independent verifier
# accepts, with equal matched-context digests across the pair and the
# verdict the fixture predicts; bad fixtures are refused before the agent
# runs; agents that write invalid UTF-8, flood their terminal, print forged
# results or close their terminal early get the evidence the spec says; a
# gloved killed while the agent runs recovers one refinement receipt. The
# policy, bundles, fixtures and plans come from lib/refinement.py.

load helpers
load "$GLOVE_IT_LIB/gloved"

REF="$LIB/refinement.py"
SESSCTL="$LIB/sessctl.py"
VERIFY="$AGENTS/verify_receipts.py"
ZERO64=0000000000000000000000000000000000000000000000000000000000000000

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        mkdir -m 700 -p "$T/cfg" "$T/lib"
        "$PY" "$REF" policy "$T/cfg/policy.json"
}

teardown() {
        gloved_teardown
        return 0
}

# start_rf [GLOVED-ARGS...]: gloved with a store, a materialization root,
# the bundle root and the given arguments; skips when managed sessions are
# not operational for this user.
start_rf() {
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat" --library-bundle-root "$T/lib" "$@"
        ctl --json capabilities
        expect_status 0
        CAPS=$output
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        jq -e '.refinement_evaluation_protocol_schema_version == 1' <<<"$CAPS" >/dev/null ||
                fail "capabilities do not report refinement-eval-v1: $CAPS"
}

# pair PAIR BASE_MODE CANDIDATE_MODE [EDIT...]: bundles, fixtures, plans;
# sets MC_BASE and MC_CANDIDATE (the matched-context digests committed).
pair() {
        local out
        out=$("$PY" "$REF" pair "$T/lib" "$T/cfg/policy.json" "$T/cfg" "$@") || fail "refinement.py: $out"
        read -r _ MC_BASE MC_CANDIDATE <<<"$out"
}

create() {
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

state() {
        "$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$1\"}" | jq -r .result.state
}

wait_ended() {
        local idx s
        for ((idx = 0; idx < 600; idx++)); do
                s=$(state "$1")
                [ "$s" = exited ] || [ "$s" = failed ] && return 0
                sleep 0.1
        done
        fail "session $1 did not end (state $s)"
}

# run_session ID: create, start, wait for the end.
run_session() {
        create "$1"
        ctl start "$1"
        expect_status 0
        wait_ended "$1"
}

# envelopes ID: the envelopes of ID (compact JSON, one per line).
envelopes() {
        "$PY" "$SESSCTL" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c --arg id "$1" '.result.envelopes[].envelope | select(.session_id == $id)'
}

# receipt ID: the one refinement receipt of ID (fails on a resource one).
receipt() {
        local e
        e=$(envelopes "$1")
        [ "$(grep -c . <<<"$e")" -eq 1 ] || fail "$1 has not exactly one receipt: $e"
        [ "$(jq -r .kind <<<"$e")" = session.refinement ] || fail "$1's receipt is not a refinement receipt: $e"
        RECEIPT=$(jq -c .receipt <<<"$e")
}

receipt_is() {
        jq -e "$1" <<<"$RECEIPT" >/dev/null || fail "receipt is not '$1': $(jq -c '{outcome,evaluator,variant}' <<<"$RECEIPT")"
}

# verify: the independent verifier accepts the whole journal; sets OUTCOMES.
verify() {
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts >"$T/page.json" || fail "glove ctl receipts failed"
        run --separate-stderr "$PY" "$VERIFY" --key "$ST/receipt.key" --anchor "$ZERO64" \
                --page "$T/page.json" --bindings "$ST/bindings" --show-outcomes
        expect_status 0
        OUTCOMES=$output
}

@test "gloved refinement: a matched pair runs, verifies, and gets the verdicts the fixture predicts" {
        start_rf
        pair p1 fail pass
        run_session p1-base
        run_session p1-candidate
        [ "$MC_BASE" = "$MC_CANDIDATE" ] || fail "the pair's matched contexts differ"
        receipt p1-base
        local base=$RECEIPT
        receipt_is ".variant == \"base\" and .matched_context_digest == \"$MC_BASE\""
        receipt_is '.outcome.metrics.passed == false and .outcome.evidence.status == "valid"'
        receipt_is '.outcome.metrics.failed_assertions == ["required_literals"]'
        receipt_is '.outcome.metrics.required_literals == {"missing":[1,2],"total":3}'
        receipt_is '.resource_receipt.termination.kind == "exit" and .projections.selected == .projections.base'
        receipt p1-candidate
        receipt_is ".variant == \"candidate\" and .matched_context_digest == \"$MC_CANDIDATE\""
        receipt_is '.outcome.metrics.passed == true and .outcome.metrics.failed_assertions == []'
        receipt_is '.evaluator == {"complete":true,"defects":[]} and .stream == .outcome.stream'
        receipt_is '.projections.selected == .projections.candidate'
        # The fixture was never mounted: the agent saw one file, and no
        # fixture directory (its first lines are in the stream the receipt
        # digests; the transcript shows them).
        run --separate-stderr timeout --foreground -k 5 60 "$PY" "$SESSCTL" watch "$RT" p1-candidate
        [[ "$output" == *'files: 1\r\nfixtures: absent'* ]] || fail "the agent saw: $output"
        [ "$(state p1-base)" = exited ] && [ "$(state p1-candidate)" = exited ] || fail "not exited"
        local why
        why=$("$GLOVE" ctl --runtime-dir "$RT" --json session-status p1-base | jq -r '.history[-1].reason')
        [ "$why" = refinement.evaluated ] || fail "the terminal transition's reason is $why"
        verify
        grep -q '^p1-base base passed=false evidence=valid' <<<"$OUTCOMES" || fail "verifier: $OUTCOMES"
        grep -q '^p1-candidate candidate passed=true evidence=valid' <<<"$OUTCOMES" || fail "verifier: $OUTCOMES"
        [[ "$OUTCOMES" == *"2 session.refinement receipts"* ]] || fail "verifier: $OUTCOMES"
}
