# shellcheck shell=bash
# managed_fs.bash: gloved with a session policy of path aliases, plans with
# path grants and managed sessions run to their end (lib/managed_fs.py), for
# gloved_failures.bats and apply.bats. Needs helpers.bash and gloved.bash
# loaded, T set, and FS pointing at managed_fs.py.

# fs_gloved SPEC_JSON: writes the policy (managed_fs.py policy) and starts
# gloved with a store and the materialization root $T/mat. Skips with the
# reason when managed sessions are not operational for this user.
fs_gloved() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        "$PY" "$FS" policy "$T/cfg/policy.json" "$1"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* ]]; then
                local why
                why=$("$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); print("; ".join(m.get("reason","") for m in c.get("resource_mechanisms_missing",[]))[:300] or "not operational")' "$output" 2>/dev/null || echo "not operational")
                skip "managed sessions are not operational for uid $(id -u): $why"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
        CAPS=$output
}

# need_retained: skips unless gloved built the retained mechanism (root with
# loop-control and mkfs.ext4).
need_retained() {
        [ -e /dev/loop-control ] && is_root || skip "retained images need root and /dev/loop-control"
        grep -q "retained" "$GD_ERR" && grep -q "retained.no_" "$GD_ERR" &&
                skip "gloved did not construct the retained mechanism: $(grep retained "$GD_ERR" | head -1)"
        return 0
}

# new_fs ID TEMPLATE GRANTS_JSON [OFFSET_MS [EGRESS_ID]]: a plan, created (not started).
new_fs() {
        "$PY" "$FS" plan "$T/cfg/$1.plan" "$T/cfg/policy.json" "$2" "$3" "${4:-60000}" "${5:-no-network}"
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# status_field ID EXPR: a Python expression over s (the session-status result).
status_field() {
        "$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" |
                "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

# wait_state ID STATE [SECONDS]
wait_state() {
        local i st=""
        for ((i = 0; i < ${3:-20} * 10; i++)); do
                st=$(status_field "$1" 's["state"]')
                [ "$st" = "$2" ] && return 0
                sleep 0.1
        done
        fail "session $1 is $st, not $2"
}

# probe_template ID ALIASES_CSV OP...: the JSON of a template running the probe.
probe_template() {
        "$PY" -c 'import json,sys; print(json.dumps({"id": sys.argv[1], "argv": ["/usr/bin/python3", sys.argv[3] + "/probe.py"] + sys.argv[4:], "read_only_paths": [sys.argv[3]], "aliases": [a for a in sys.argv[2].split(",") if a]}))' \
                "$1" "$2" "$AGENTS" "${@:3}"
}

# sh_template ID SCRIPT: the JSON of a template running dash -c SCRIPT.
sh_template() {
        "$PY" -c 'import json,sys; print(json.dumps({"id": sys.argv[1], "argv": ["/usr/bin/dash", "-c", sys.argv[2]]}))' "$1" "$2"
}

# run_managed ID TEMPLATE GRANTS_JSON [EGRESS_ID]: creates and starts the session, waits
# for its end and sets output/lines to what the agent printed (CR stripped);
# MSTATE is the final state and MEND the session_ended notice.
run_managed() {
        new_fs "$1" "$2" "$3" 60000 "${4:-no-network}"
        ctl start "$1"
        expect_status 0
        run --separate-stderr timeout -k 5 60 "$PY" "$SESSCTL" watch "$RT" "$1"
        [ "$status" -eq 0 ] || fail "watch failed"
        local raw=$output
        "$PY" -c '
import json, sys
for l in sys.argv[1].splitlines():
    if l.startswith("output "):
        sys.stdout.write(json.loads(l[7:]).replace("\r", ""))' "$raw" >"$T/$1.out"
        MEND=$(grep '^session_ended ' <<<"$raw" || true)
        # A quick agent may have ended before the attach: then the attach
        # result itself carries the termination (attached false).
        if [ -z "$MEND" ]; then
                MEND=$(sed -n 's/^attach //p' <<<"$raw" | jq -c 'select(.result.attached == false) | .result.termination' 2>/dev/null || true)
        fi
        wait_state "$1" exited
        output=$(cat "$T/$1.out")
        mapfile -t lines <"$T/$1.out"
}
