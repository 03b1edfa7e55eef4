#!/usr/bin/env bats
# refinement-eval-v1 through gloved (issue 27; docs/refinement.md): a
# matched pair of real managed sessions (base and candidate skill bundles,
# one fixture each) run by a scripted agent that acts out its skill; the
# fixture is read by gloved and never mounted; each session ends with one
# refinement receipt (never a resource one) that the independent verifier
# accepts, with equal matched-context digests across the pair and the
# verdict the fixture predicts; plans that break the refinement rules are
# refused at validate_plan and create_session; bad fixtures are refused
# before the agent runs; agents that write invalid UTF-8, flood their
# terminal, print forged results, close their terminal early or exit with
# another code get the evidence the spec says; a gloved killed while the
# agent runs recovers one refinement receipt, with the stream its keeper
# observed, whether the agent ended while gloved was down or gloved came
# back at once and adopted it. The policy, bundles, fixtures and plans come
# from lib/refinement.py.

load helpers
load "$GLOVE_IT_LIB/gloved"

REF="$LIB/refinement.py"
SESSCTL="$LIB/sessctl.py"
REC="$LIB/recovery.py"
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
        # A recovery test's sessions outlive gloved: what it left (a keeper,
        # an agent, mounts) is taken away as a host restart would.
        if [ -f "$T/snap" ]; then
                "$PY" "$REC" simulate-reboot "$T/snap" "$T/mat" >&2 || true
        fi
        local f
        for f in "$T"/g.gloved.err.*; do
                [ -f "$f" ] && no_sanitizer_reports "$f"
        done
        return 0
}

# start_rf [GLOVED-ARGS...]: gloved with a store, a materialization root,
# the bundle root and the given arguments; skips when managed sessions are
# not operational for this user.
start_rf() {
        RF_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" --library-bundle-root "$T/lib" "$@")
        start_gloved "$T/g" "${RF_ARGS[@]}"
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

# edit_plan IN OUT PYTHON: OUT is the plan IN (canonical, like IN) after the
# Python statements PYTHON, which change p (the plan, a dict).
edit_plan() {
        "$PY" - "$1" "$2" "$3" <<'PYEOF' || fail "edit_plan: $3"
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(p, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
PYEOF
}

# plan_refused NAME CODE PATH: validate_plan and create_session both refuse
# the plan $T/cfg/NAME.plan with the reason CODE at PATH, and no session of
# it is stored.
plan_refused() {
        local f=$T/cfg/$1.plan id=bad-$1
        ctl validate-plan "$f"
        expect_status 1
        expect_line "reason $2 at $3"
        ctl create-session --session-id "$id" --idempotency-key "k-$id" --controller-digest "$CDIGEST" --plan "$f"
        expect_status 1
        [[ "$stderr" == "glove: plan.invalid: "* ]] || fail "create_session of $1: $stderr"
        expect_line "reason $2 at $3"
        ctl session-status "$id"
        expect_refused session.not_found
}

@test "gloved refinement: plans that break the refinement rules are refused at validate_plan and create_session" {
        start_rf
        pair v1 pass pass
        local good=$T/cfg/v1-base.plan
        ctl validate-plan "$good"
        expect_status 0
        # A third library projection (beside the fixture and the skill).
        edit_plan "$good" "$T/cfg/third.plan" \
                'p["library_projections"].append({"content_digest": "cd" * 32, "destination_alias": "libraries", "projection_id": "zz-extra"})'
        plan_refused third plan.refinement_projection_count '$.library_projections'
        # A path grant (one the policy would allow is beside the point).
        edit_plan "$good" "$T/cfg/grant.plan" \
                'p["path_grants"] = [{"access": "read", "alias": "reference", "cleanup_policy": "retain", "materialization": "bind", "max_bytes": 1024, "ttl_secs": 60}]'
        plan_refused grant plan.refinement_path_grants '$.path_grants[0]'
        # The binding without the protocol: it must not run as an ordinary
        # session with a resource receipt.
        edit_plan "$good" "$T/cfg/noproto.plan" 'del p["evaluation_protocol"]'
        plan_refused noproto plan.refinement_without_protocol '$.evaluation_protocol'
        # The protocol without the binding.
        edit_plan "$good" "$T/cfg/nobinding.plan" 'del p["refinement"]'
        plan_refused nobinding plan.refinement_missing '$.refinement'
        # The base variant's plan projecting the candidate skill instead
        # (entries sorted: fixture, skill-candidate).
        edit_plan "$good" "$T/cfg/unselected.plan" \
                'p["library_projections"] = sorted([p["refinement"]["candidate"] if e == p["refinement"]["base"] else e for e in p["library_projections"]], key=lambda e: e["projection_id"])'
        plan_refused unselected plan.refinement_unselected_projected '$.library_projections[1]'
        # The good plan is still created (the refusals stored nothing).
        create v1-base
        ctl sessions
        expect_status 0
        [ "$(grep -c 'bad-' <<<"$output")" -eq 0 ] || fail "a refused plan left a session: $output"
}

# start_bad ID CODE: creates and starts the session, whose start is to fail
# with CODE (start_session answers, or refuses with CODE).
start_bad() {
        create "$1"
        ctl start "$1"
        if [ "$status" -ne 0 ]; then
                [[ "$stderr" == "glove: $2: "* ]] || fail "start of $1: expected $2, got: $stderr"
        fi
}

# fixture_refused ID CODE: after start_bad ID CODE, the start failed with
# CODE before the agent ran (the reason of its last transition), and the
# session's one receipt is a refinement receipt with invalid evidence, no
# stream, no pass, and the start_failed resource receipt of a session that
# never started.
fixture_refused() {
        wait_ended "$1"
        [ "$(state "$1")" = failed ] || fail "$1 is $(state "$1"), not failed"
        local why
        why=$("$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" | jq -r '.history[-1].reason')
        [ "$why" = "$2" ] || fail "$1 failed with $why, not $2"
        receipt "$1"
        receipt_is ".resource_receipt.termination.kind == \"start_failed\" and .resource_receipt.termination.code == \"$2\""
        receipt_is '.resource_receipt.started_at_ms == null'
        receipt_is '.outcome.evidence.status == "invalid" and .outcome.stream == null and .stream == null'
        receipt_is '.outcome.metrics.passed == false and .evaluator.complete == false'
        grep -F "session $1: " "$GD_ERR" | grep -qF "$2" || fail "gloved said nothing of $2 for $1"
}

@test "gloved refinement: without the bundle store the capability is 0 and a refinement session fails with a refinement receipt" {
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        jq -e '.lifecycle_operational == true and .refinement_evaluation_protocol_schema_version == 0' <<<"$output" \
                >/dev/null || fail "capabilities: $output"
        pair n1 pass pass
        start_bad n1-base launch.bundles_unavailable
        fixture_refused n1-base launch.bundles_unavailable
        receipt_is '.resource_receipt.launch_binding == {"omitted":"binding.none"}'
}

@test "gloved refinement: bad fixtures are refused at start, before the agent runs, with one refinement receipt" {
        start_rf
        local nl=$'\n'
        # f1: a trailing newline (as editors write); an unknown member.
        pair f1 pass pass "append.base=$nl" 'fixture.candidate.extra=1'
        start_bad f1-base refinement.fixture_not_canonical
        start_bad f1-candidate refinement.fixture_unknown_field
        # f2: required literals unsorted; duplicated.
        pair f2 pass pass 'fixture.base.expected.required_literals=["done: 3 files","PASS lint"]' \
                'fixture.candidate.expected.required_literals=["PASS lint","PASS lint"]'
        start_bad f2-base refinement.fixture_unsorted
        start_bad f2-candidate refinement.fixture_duplicate
        # f3: another session's fixture; the candidate's fixture naming the
        # base skill as selected (its digest is not the candidate's: the
        # decoder refuses it before the check against the plan).
        pair f3 pass pass 'fixture.base.session_id="f3-other"' 'fixture.candidate.selected_projection="@base"'
        start_bad f3-base refinement.fixture_mismatch_session
        start_bad f3-candidate refinement.fixture_selected_mismatch
        # f4: the selected skill's digest but another projection id (the
        # check against the plan); another seed than the plan committed.
        pair f4 pass pass 'fixture.base.selected_projection.projection_id="skill-other"' 'fixture.candidate.seed=7'
        start_bad f4-base refinement.fixture_mismatch_selected
        start_bad f4-candidate refinement.fixture_mismatch_matched_context
        # f5: the fixture file changed after the plan committed its digest.
        pair f5 pass pass
        local fx
        fx=$(jq -r .refinement.fixture.content_digest "$T/cfg/f5-base.plan")
        [ -f "$T/lib/$fx.json" ] || fail "no fixture file $fx"
        printf ' ' >>"$T/lib/$fx.json"
        start_bad f5-base bundle.digest_mismatch
        # All started; now each outcome.
        fixture_refused f1-base refinement.fixture_not_canonical
        fixture_refused f1-candidate refinement.fixture_unknown_field
        fixture_refused f2-base refinement.fixture_unsorted
        fixture_refused f2-candidate refinement.fixture_duplicate
        fixture_refused f3-base refinement.fixture_mismatch_session
        fixture_refused f3-candidate refinement.fixture_selected_mismatch
        fixture_refused f4-base refinement.fixture_mismatch_selected
        fixture_refused f4-candidate refinement.fixture_mismatch_matched_context
        fixture_refused f5-base bundle.digest_mismatch
        verify
        [[ "$OUTCOMES" == *"9 session.refinement receipts"* ]] || fail "verifier: $OUTCOMES"
}

# outcome_of ID: runs ID to its end; sets RECEIPT to its one refinement
# receipt; the session exited or failed as its agent made it.
outcome_of() {
        run_session "$1"
        receipt "$1"
}

@test "gloved refinement: invalid UTF-8, a flood, forged results, an early close and exit codes get the evidence the spec says" {
        start_rf
        pair a1 badutf8 flood
        pair a2 forged early
        pair a3 exit3 exit3 'expected.exit_code=3'
        pair a4 exit3 pass
        # A literal holding ESC: its fixture is canonical (\u001b in lower
        # case, as Python writes it) and its matched context Glove's.
        pair a5 fail pass 'expected.forbidden_literals=["\u001b[31m", "Traceback (most recent call last)"]'
        # Every literal printed, then bytes that are not UTF-8: invalid
        # evidence never passes.
        outcome_of a1-base
        receipt_is '.outcome.evidence == {"defects":["invalid_utf8"],"status":"invalid"}'
        receipt_is '.outcome.metrics.required_literals.missing == [] and .outcome.metrics.passed == false'
        receipt_is '.resource_receipt.termination.kind == "exit" and .resource_receipt.exit_code == 0'
        # A flood ended by the terminal output limit: the limit overrides.
        outcome_of a1-candidate
        receipt_is '.resource_receipt.termination.kind == "limit" and .resource_receipt.termination.limit == "terminal_output_bytes"'
        receipt_is '.outcome.metrics.failed_assertions | index("resource_limit") != null and index("termination") != null'
        receipt_is '.outcome.metrics.passed == false and .outcome.observed.resource_limit == true'
        # Forged result JSON changes nothing; the forbidden literal's words
        # apart are not the literal.
        outcome_of a2-base
        receipt_is '.outcome.metrics.passed == false and .outcome.evidence.status == "valid"'
        receipt_is '.outcome.metrics.failed_assertions == ["required_literals"]'
        receipt_is '.outcome.metrics.required_literals == {"missing":[0,1,2],"total":3}'
        receipt_is '.outcome.metrics.forbidden_literals == {"found":[],"total":1}'
        # The terminal closed early, then a clean exit 0: every byte was
        # read to the terminal's end, so the evidence is valid and it passes.
        outcome_of a2-candidate
        receipt_is '.outcome.evidence == {"defects":[],"status":"valid"} and .outcome.metrics.passed == true'
        receipt_is '.resource_receipt.termination.kind == "exit" and .resource_receipt.exit_code == 0'
        # Exit 3 passes where the fixture expects 3, fails where it expects 0.
        outcome_of a3-base
        receipt_is '.outcome.metrics.passed == true and .outcome.observed.exit_code == 3'
        outcome_of a4-base
        receipt_is '.outcome.metrics.passed == false and .outcome.metrics.failed_assertions == ["exit_code"]'
        receipt_is '.outcome.evidence.status == "valid" and .outcome.observed.exit_code == 3'
        # Attaching to the ended session exits with the agent's status,
        # read from the resource receipt inside the refinement receipt.
        ctl attach a4-base --no-stdin
        expect_status 3
        outcome_of a5-candidate
        receipt_is '.outcome.metrics.passed == true and .outcome.metrics.forbidden_literals == {"found":[],"total":2}'
        verify
        grep -q '^a1-base base passed=false evidence=invalid' <<<"$OUTCOMES" || fail "verifier: $OUTCOMES"
        grep -q '^a2-candidate candidate passed=true evidence=valid' <<<"$OUTCOMES" || fail "verifier: $OUTCOMES"
}

# start_rec: start_rf for a recovery test (root: recovery.py inspects and
# clears the host): a snapshot of the host first, so that teardown takes
# away whatever the test leaves, and each gloved's PID for recovery.py.
start_rec() {
        is_root || skip "the recovery tests need root (recovery.py inspects and clears the host); running as uid $(id -u)"
        "$PY" "$REC" snapshot "$T/snap"
        GD_N=0
        start_rf
        echo "$GD_PID" >>"$T/snap.pids"
}

# gd_kill: SIGKILL to gloved (the keepers stay).
gd_kill() {
        kill -KILL "$GD_PID"
        wait_exit "$GD_PID" 10 || fail "gloved survived SIGKILL"
}

# gd_restart: gloved again with start_rf's arguments on the same
# directories, its stderr in a new GD_ERR; waits for its "listening on" line
# (the socket the killed one left does not count).
gd_restart() {
        GD_N=$((GD_N + 1))
        GD_ERR=$T/g.gloved.err.$GD_N
        "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" "${RF_ARGS[@]}" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        echo "$GD_PID" >>"$T/snap.pids"
        local idx
        for ((idx = 0; idx < 400; idx++)); do
                grep -qF '"msg":"listening on ' "$GD_ERR" && return 0
                running "$GD_PID" || fail "gloved exited during start-up: $(cat "$GD_ERR")"
                sleep 0.025
        done
        fail "gloved did not listen within 10 s: $(cat "$GD_ERR")"
}

# wait_started ID: until the agent of ID has printed "started" (it runs).
wait_started() {
        local idx
        for ((idx = 0; idx < 600; idx++)); do
                "$PY" "$SESSCTL" call "$RT" attach "{\"session_id\":\"$1\"}" |
                        jq -r '.result.transcript_b64 // ""' | base64 -d | grep -q '^started' && return 0
                sleep 0.1
        done
        fail "session $1 never printed started"
}

# wait_outcome ID: until the keeper of ID has written its outcome into its
# status file (MAT/keepers/*.status) and no keeper of the test is left.
wait_outcome() {
        local idx
        for ((idx = 0; idx < 600; idx++)); do
                if cat "$T"/mat/keepers/*.status 2>/dev/null |
                        jq -se --arg id "$1" 'any(.[]; .session_id == $id and .outcome != null)' >/dev/null &&
                        [ -z "$("$PY" "$REC" keepers "$T/snap" "$T/mat")" ]; then
                        return 0
                fi
                sleep 0.1
        done
        fail "the keeper of $1 wrote no outcome or did not exit: $(cat "$T"/mat/keepers/*.status 2>&1)"
}

# recovered ID CODE: gloved's stderr has one reconciler line for ID with
# CODE; ID ended with one refinement receipt, valid evidence and a pass
# (the keeper observed the whole stream); nothing of the test is left.
recovered() {
        local n
        n=$(grep -Fc "\"msg\":\"reconcile: $1: reconcile.$2: " "$GD_ERR" || true)
        [ "$n" -eq 1 ] || fail "expected one reconcile.$2 line for $1, got $n: $(grep 'reconcile: ' "$GD_ERR")"
        wait_ended "$1"
        [ "$(state "$1")" = exited ] || fail "$1 is $(state "$1"), not exited"
        receipt "$1"
        receipt_is '.outcome.evidence == {"defects":[],"status":"valid"} and .outcome.metrics.passed == true'
        receipt_is '.evaluator.complete == true and .resource_receipt.termination.kind == "exit"'
        receipt_is '.outcome.metrics.required_literals == {"missing":[],"total":3} and .stream.bytes > 0'
        run --separate-stderr "$PY" "$REC" leftovers "$T/snap" "$T/mat"
        expect_status 0
        verify
        grep -q "^$1 [a-z]* passed=true evidence=valid" <<<"$OUTCOMES" || fail "verifier: $OUTCOMES"
        [[ "$OUTCOMES" == *"1 session.refinement receipts"* ]] || fail "verifier: $OUTCOMES"
}

@test "gloved refinement: gloved killed during an evaluation, restarted after the agent ended, writes one refinement receipt" {
        start_rec
        pair r1 slow pass
        create r1-base
        ctl start r1-base
        expect_status 0
        wait_started r1-base
        gd_kill
        wait_outcome r1-base
        gd_restart
        recovered r1-base ended_while_down
}

@test "gloved refinement: gloved killed during an evaluation and restarted at once adopts it; one refinement receipt" {
        start_rec
        pair r2 slow pass
        create r2-base
        ctl start r2-base
        expect_status 0
        wait_started r2-base
        gd_kill
        gd_restart
        recovered r2-base adopted
}
