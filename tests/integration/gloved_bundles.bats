#!/usr/bin/env bats
# gloved's library bundles and skills (issue 11, "Library bundles"): a
# managed session of an adapter runtime (codex, claude-code) sees each
# verified bundle read-only at <target>/<sha256>.json and its `skill`
# entries as SKILL.md in the adapter's native directory, writable; a runtime
# that is no adapter gets the bundle and no skills; the terminal receipt
# commits the projections and the skills-projection digest; bad bundle
# files and a plan with projections but no bundle root are refused at start
# with their stable codes. The policy, bundles and probe agent come from
# tests/integration/lib/bundles.py.

load helpers
load "$GLOVE_IT_LIB/gloved"

BUNDLES="$LIB/bundles.py"
SESSCTL="$LIB/sessctl.py"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        grep -q -- --library-bundle-root "$GLOVED" || fail "this gloved has no --library-bundle-root"
        mkdir -m 700 -p "$T/cfg" "$T/lib"
        "$PY" "$BUNDLES" policy "$T/cfg/policy.json"
}

teardown() {
        gloved_teardown
        return 0
}

# start_bd [GLOVED-ARGS...]: gloved with a store, a materialization root and
# the given arguments; skips, saying why, when managed sessions are not
# operational for this user.
start_bd() {
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" "$@")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        CAPS=$output
        if [[ "$output" == *'"lifecycle_operational":false'* && "$output" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
}

# bundle KEY=KIND:CONTENT...: writes a bundle into $T/lib; sets D.
bundle() {
        D=$("$PY" "$BUNDLES" bundle "$T/lib" "$@") || fail "bundle: $D"
}

# new_session ID TEMPLATE DIGEST...: creates (does not start) the session.
new_session() {
        local id=$1 tid=$2
        shift 2
        "$PY" "$BUNDLES" plan "$T/cfg/policy.json" "$T/cfg/$id.plan" "$tid" "$@"
        ctl create-session --session-id "$id" --idempotency-key "k-$id" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$id.plan"
        expect_status 0
}

state() {
        "$PY" "$SESSCTL" call "$RT" session_status "{\"session_id\":\"$1\"}" | jq -r .result.state
}

# wait_ended ID: until the session is exited or failed.
wait_ended() {
        local idx s
        for ((idx = 0; idx < 600; idx++)); do
                s=$(state "$1")
                [ "$s" = exited ] || [ "$s" = failed ] && return 0
                sleep 0.1
        done
        fail "session $1 did not end (state $s)"
}

# receipt ID: the terminal receipt of ID (compact JSON).
receipt() {
        "$PY" "$SESSCTL" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c --arg id "$1" '.result.envelopes[].envelope | select(.session_id == $id and .kind == "session.terminal") | .receipt'
}

# run_probe ID TEMPLATE DIGEST...: runs the probe agent to its end; sets
# PROBE (its JSON report) and RECEIPT.
run_probe() {
        new_session "$@"
        ctl start "$1"
        expect_status 0
        wait_ended "$1"
        [ "$(state "$1")" = exited ] || fail "$1 did not exit: $(state "$1"); $(tail -5 "$GD_ERR")"
        run --separate-stderr timeout --foreground -k 5 60 "$PY" "$SESSCTL" watch "$RT" "$1"
        expect_status 0
        local o
        o=$(sed -n 's/^output //p' <<<"$output" | jq -r .)
        PROBE=$(sed -n 's/^probe //p' <<<"$o" | tr -d '\r')
        [ -n "$PROBE" ] || fail "no probe report: $o"
        RECEIPT=$(receipt "$1")
        [ -n "$RECEIPT" ] || fail "no receipt for $1"
}

probe_is() {
        jq -e "$1" <<<"$PROBE" >/dev/null || fail "probe is not '$1': $PROBE"
}

receipt_is() {
        jq -e "$1" <<<"$RECEIPT" >/dev/null || fail "receipt is not '$1': $(jq -c .launch_binding <<<"$RECEIPT")"
}

# start_fails ID CODE: start_session is accepted, then the session fails
# with CODE (the reason of its last transition and its receipt's code).
start_fails() {
        ctl start "$1"
        if [ "$status" -ne 0 ]; then
                [[ "$stderr" == "glove: $2: "* ]] || fail "start of $1: expected $2, got: $stderr"
        fi
        wait_ended "$1"
        [ "$(state "$1")" = failed ] || fail "$1 is $(state "$1"), not failed"
        local why
        why=$("$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" | jq -r '.history[-1].reason')
        [ "$why" = "$2" ] || fail "$1 failed with $why, not $2"
        RECEIPT=$(receipt "$1")
        receipt_is ".termination.kind == \"start_failed\" and .termination.code == \"$2\""
        grep -F "session $1: " "$GD_ERR" | grep -qF "$2" || fail "gloved said nothing of $2 for $1"
}

SKILL='# Review\nRead the diff twice.\n'
SKILL_TEXT=$'# Review\nRead the diff twice.\n'

# check_adapter ID TEMPLATE SKILLS_DIR
check_adapter() {
        bundle "review=skill:$SKILL" "tone=behavior:be terse" "plan=workflow:step 1"
        local d=$D
        bundle "lint=skill:lint everything"
        local d2=$D
        run_probe "$1" "$2" "$d" "$d2"
        # Each bundle at the target, byte for byte, and read-only.
        local b
        for b in "$d" "$d2"; do
                probe_is ".bundles[\"$b.json\"].sha256 == \"$b\""
                probe_is ".bundles[\"$b.json\"].write == \"EROFS\""
                probe_is ".bundles[\"$b.json\"].unlink != \"ok\""
        done
        [ -f "$T/lib/$d.json" ] || fail "the host bundle is gone"
        # Exactly the skill entries, verbatim, in the native directory; the
        # directory and the files are the agent's to write.
        probe_is ".skills[\"$3\"] | keys == [\"lint\",\"review\"]"
        jq -e --arg want "$SKILL_TEXT" ".skills[\"$3\"].review == \$want" <<<"$PROBE" >/dev/null ||
                fail "SKILL.md differs: $PROBE"
        probe_is ".skills[\"$3\"].lint == \"lint everything\""
        probe_is ".writable[\"$3\"] == \"ok\""
        probe_is '.skills | length == 1'
        # The receipt commits the projections in plan order and the skills.
        receipt_is ".launch_binding.projections == [
                {\"content_digest\":\"$d\",\"destination_alias\":\"libraries\",\"projection_id\":\"p1\",\"target\":\"/opt/glove-library/$d.json\"},
                {\"content_digest\":\"$d2\",\"destination_alias\":\"libraries\",\"projection_id\":\"p2\",\"target\":\"/opt/glove-library/$d2.json\"}]"
        local rd ld want
        rd=$(printf '# Review\nRead the diff twice.\n' | sha256sum | cut -c1-64)
        ld=$(printf 'lint everything' | sha256sum | cut -c1-64)
        want=$("$PY" "$BUNDLES" skills-digest "$3" "review=$rd" "lint=$ld")
        receipt_is ".launch_binding.skills_projection_digest == \"$want\""
        receipt_is "[.launch_binding.skills[] | .path] == [\"$3/lint/SKILL.md\",\"$3/review/SKILL.md\"]"
        receipt_is "[.launch_binding.mounts[] | select(.kind == \"library_bundle\") | .target] | sort == ([\"/opt/glove-library/$d.json\",\"/opt/glove-library/$d2.json\"] | sort)"
        receipt_is '[.launch_binding.mounts[] | select(.kind == "library_bundle") | .read_only] | all'
}

@test "gloved bundles: codex sees its bundles read-only and its skills in ~/.codex/skills; the receipt commits them" {
        start_bd --library-bundle-root "$T/lib"
        [[ "$CAPS" == *'"library_bundle_root":true'* ]] || fail "capabilities do not report the bundle root: $CAPS"
        check_adapter c1 codex-probe /home/agent/.codex/skills
}

@test "gloved bundles: claude-code gets its skills in ~/.claude/skills" {
        start_bd --library-bundle-root "$T/lib"
        check_adapter k1 claude-probe /home/agent/.claude/skills
}

@test "gloved bundles: a runtime that is no adapter gets the bundle but no skills" {
        start_bd --library-bundle-root "$T/lib"
        bundle "review=skill:$SKILL"
        run_probe n1 plain-probe "$D"
        probe_is ".bundles[\"$D.json\"].sha256 == \"$D\" and .bundles[\"$D.json\"].write == \"EROFS\""
        probe_is '.skills == {}'
        receipt_is '.launch_binding.skills == []'
        receipt_is ".launch_binding.skills_projection_digest == \"$("$PY" "$BUNDLES" skills-digest "")\""
        receipt_is '.launch_binding.projections | length == 1'
}

@test "gloved bundles: bad bundle files are refused at start with their codes" {
        start_bd --library-bundle-root "$T/lib"
        bundle "a=skill:mode"
        chmod 644 "$T/lib/$D.json"
        new_session f-mode codex-probe "$D"
        start_fails f-mode bundle.mode
        bundle "a=skill:links"
        ln "$T/lib/$D.json" "$T/lib/extra-link"
        new_session f-links codex-probe "$D"
        start_fails f-links bundle.links
        bundle "a=skill:symlink"
        mv "$T/lib/$D.json" "$T/lib/real"
        ln -s real "$T/lib/$D.json"
        new_session f-link codex-probe "$D"
        start_fails f-link bundle.symlink
        bundle "a=skill:changed"
        printf ' ' >>"$T/lib/$D.json"
        new_session f-digest codex-probe "$D"
        start_fails f-digest bundle.digest_mismatch
        bundle "a=script:echo"
        new_session f-kind codex-probe "$D"
        start_fails f-kind bundle.unknown_kind
        local c
        c=$(printf 'x' | sha256sum | cut -c1-64)
        bundle --raw "{\"entries\":[{\"content\":\"x\",\"content_digest\":\"$c\",\"key\":\"a\",\"kind\":\"prompt\",\"prompt_ref\":\"r\"}],\"schema_version\":1,\"source_library_ref\":\"l\",\"source_manifest_digest\":\"$c\"}"
        new_session f-ref codex-probe "$D"
        start_fails f-ref bundle.prompt_ref
        new_session f-missing codex-probe 2222222222222222222222222222222222222222222222222222222222222222
        start_fails f-missing bundle.missing
        # Two projections giving one skill key.
        bundle "same=skill:one"
        local d1=$D
        bundle "same=skill:two"
        new_session f-dup codex-probe "$d1" "$D"
        start_fails f-dup bundle.duplicate_skill
}

@test "gloved bundles: a plan with projections and no bundle root is launch.bundles_unavailable" {
        start_bd
        [[ "$CAPS" == *'"library_bundle_root":false'* ]] || fail "capabilities report a bundle root: $CAPS"
        bundle "a=skill:x"
        new_session u1 codex-probe "$D"
        start_fails u1 launch.bundles_unavailable
}

@test "gloved bundles: the bundle root must be an existing owner-only directory" {
        local base=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/s.journal"
                --materialization-root "$T/mat" --runtime-dir "$T/run" --state-dir "$T/state")
        chmod 755 "$T/lib"
        gloved_fails "${base[@]}" --library-bundle-root "$T/lib"
        [ "$status" -ne 0 ] || fail "gloved started with a 0755 bundle root"
        [[ "$stderr" == *--library-bundle-root* && "$stderr" == *dirs.insecure* ]] || fail "unexpected: $stderr"
        gloved_fails "${base[@]}" --library-bundle-root "$T/absent"
        [ "$status" -ne 0 ] || fail "gloved started with a missing bundle root"
        [[ "$stderr" == *--library-bundle-root* ]] || fail "unexpected: $stderr"
        [ ! -e "$T/absent" ] || fail "gloved created the bundle root"
        gloved_fails --session-policy "$T/cfg/policy.json" --library-bundle-root "$T/lib"
        [[ "$stderr" == *usage.bundle_root_needs_runtime* ]] || fail "unexpected: $stderr"
}

# history ID: the states the session went through, comma-separated.
history() {
        "$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" | jq -r '[.history[].to] | join(",")'
}

@test "gloved bundles: one launch expands at most 64 skills; a bundle of hundreds is bundle.too_many_skills with its receipt" {
        start_bd --library-bundle-root "$T/lib"
        D=$("$PY" "$BUNDLES" many-skills "$T/lib" 64) || fail "$D"
        run_probe s64 codex-probe "$D"
        probe_is '.skills["/home/agent/.codex/skills"] | length == 64'
        receipt_is '.launch_binding.skills | length == 64'
        local n
        for n in 65 380 4096; do
                D=$("$PY" "$BUNDLES" many-skills "$T/lib" $n) || fail "$D"
                new_session "s$n" codex-probe "$D"
                start_fails "s$n" bundle.too_many_skills
                [ "$(receipt "s$n" | wc -l)" = 1 ] || fail "s$n has not exactly one receipt"
        done
}

@test "gloved bundles: a binding a receipt cannot hold is refused before the sandbox is made (start.binding_too_large), with its one receipt" {
        start_bd --library-bundle-root "$T/lib"
        bundle "tone=behavior:be terse"
        # 128 projections (the plan's bound) with 128-byte ids to a
        # destination with a long alias and target: about 90 KiB of binding.
        BUNDLES_DEST=long BUNDLES_ID_PAD=128 new_session big "plain-probe" "$D*128"
        start_fails big start.binding_too_large
        receipt_is '.started_at_ms == null and .launch_binding.omitted_bytes > 57344'
        [ "$(receipt big | wc -l)" = 1 ] || fail "big has not exactly one receipt"
        # Refused as prepared: the session never reached starting.
        [ "$(history big)" = preparing,failed ] || fail "big went $(history big)"
}

# opens_during ID TEMPLATE DIGEST...: runs the probe session while counting
# the opens of $T/lib/$WATCHED.json; sets OPENS.
opens_during() {
        rm -f "$T/ready"
        "$PY" "$BUNDLES" watch-opens "$T/lib/$WATCHED.json" "$T/ready" >"$T/opens" &
        local w=$! i
        for ((i = 0; i < 100; i++)); do
                [ -e "$T/ready" ] && break
                sleep 0.1
        done
        [ -e "$T/ready" ] || fail "the watcher did not start"
        run_probe "$@"
        kill -TERM $w
        wait $w || fail "the watcher failed"
        OPENS=$(cat "$T/opens")
}

@test "gloved bundles: a bundle named by many projections is read once per launch" {
        start_bd --library-bundle-root "$T/lib"
        bundle "tone=behavior:be terse"
        WATCHED=$D
        opens_during r1 plain-probe "$D"
        local one=$OPENS
        [ "$one" -ge 1 ] || fail "no open of the bundle was seen ($one)"
        opens_during r64 plain-probe "$D*64"
        [ "$OPENS" = "$one" ] || fail "64 projections opened the bundle $OPENS times, one opened it $one times"
        receipt_is '.launch_binding.projections | length == 64'
        receipt_is '[.launch_binding.mounts[] | select(.kind == "library_bundle")] | length == 1'
}

@test "gloved bundles: the distinct bundles of one launch are at most 32 MiB together (bundle.launch_too_large)" {
        start_bd --library-bundle-root "$T/lib"
        local a b c
        a=$("$PY" "$BUNDLES" big-bundle "$T/lib" aaa 11) || fail "$a"
        b=$("$PY" "$BUNDLES" big-bundle "$T/lib" bbb 11) || fail "$b"
        c=$("$PY" "$BUNDLES" big-bundle "$T/lib" ccc 11) || fail "$c"
        # Repeats count once: 2 x 11 MiB distinct.
        run_probe ok2 plain-probe "$a*3" "$b*3"
        probe_is ".bundles[\"$a.json\"].sha256 == \"$a\" and .bundles[\"$b.json\"].sha256 == \"$b\""
        new_session over plain-probe "$a" "$b" "$c"
        start_fails over bundle.launch_too_large
        [ "$(receipt over | wc -l)" = 1 ] || fail "over has not exactly one receipt"
}
