#!/usr/bin/env bats
# Managed sessions on exposed projects (issue "Dynamic path exposures and
# glove init", Tests; docs/exposures.md): the owner enrolls a project with
# glove init, a plan names it by exposure id and generation, and the agent
# works on its copy (host tree byte-identical), its read bind (read-only)
# or its retained image (which keeps the change). A project or root
# replaced between init and start, racing starts in a loop, never reaches
# the agent, nor does a directory from outside the root bind-mounted
# beneath the project (the start is exposure.cross_device); revoked, expired and superseded generations are refused at
# validate, create and start; no catalog, receipt or control answer holds
# the project's path, its root or an inode.

load helpers
load "$GLOVE_IT_LIB/gloved"

FS="$LIB/managed_fs.py"
SESSCTL="$LIB/sessctl.py"

setup() {
        T=$(realpath "$BATS_TEST_TMPDIR")
        require_gloved
        grep -q -- --path-exposure-policy "$GLOVED" || skip "this gloved has no path exposures"
        install -d -m 700 "$T/cfg" "$T/xcfg" "$T/xcfg/glove" "$T/xs"
        mkdir -p "$T/src/proj/sub"
        printf 'original a\n' >"$T/src/proj/a.txt"
        printf 'original b\n' >"$T/src/proj/sub/b.txt"
        printf 'bye\n' >"$T/src/proj/gone.txt"
        XPOL=$T/xcfg/glove/exposure-policy.json
        jq -n --arg root "$T/src" '{schema_version: 1, roots: [{root_id: "src", path: $root,
                target_path: "/workspace", max_ttl_secs: 3600,
                access: [{access: "ephemeral_write", materialization: "copy", cleanup_policy: "remove",
                          max_bytes: 8388608},
                         {access: "read", materialization: "bind", cleanup_policy: "remove", max_bytes: 8388608},
                         {access: "retained_write", materialization: "copy", cleanup_policy: "retain",
                          max_bytes: 8388608}],
                runtime_template_ids: ["x-edit", "x-keep", "x-read"]}]}' >"$XPOL"
        chmod 600 "$XPOL"
}

teardown() {
        [ -n "${XMNT:-}" ] && umount -l "$XMNT" 2>/dev/null
        gloved_teardown
        [ -n "${SWAP_PID:-}" ] && kill "$SWAP_PID" 2>/dev/null
        return 0
}

# x_gloved: the session policy (three dash agents working in /workspace)
# and gloved with a store, a materialization root and path exposures.
x_gloved() {
        local edit='cd /workspace || exit 9; cat a.txt; echo "agent was here" >>a.txt; echo new >new.txt; rm gone.txt; echo edited'
        local read='cat /workspace/a.txt; cat /workspace/marker /workspace/sub/b.txt 2>/dev/null; if echo x >/workspace/w 2>/dev/null; then echo WROTE; else echo refused; fi'
        local keep='echo "kept by the agent" >/workspace/note.txt && echo kept'
        local spec
        spec=$(jq -nc --arg e "$edit" --arg r "$read" --arg k "$keep" '{templates: [
                {id: "x-edit", argv: ["/usr/bin/dash", "-c", $e]},
                {id: "x-keep", argv: ["/usr/bin/dash", "-c", $k]},
                {id: "x-read", argv: ["/usr/bin/dash", "-c", $r]}]}')
        "$PY" "$FS" policy "$T/cfg/policy.json" "$spec"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat" --path-exposure-policy "$XPOL"
                --path-exposure-journal "$T/xs/exposures.journal")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        [[ "$output" == *'"lifecycle_operational":true'* ]] ||
                skip "managed sessions are not operational for uid $(id -u): $output"
        ANSWERS=$T/answers
        echo "$output" >>"$ANSWERS"
}

# init ARGS...: glove init as the owner of this gloved.
init() {
        run --separate-stderr env XDG_CONFIG_HOME="$T/xcfg" "$GLOVE" init --runtime-dir "$RT" "$@"
}

# enroll: glove init of $T/src/proj; sets XID and XGEN.
enroll() {
        init "$T/src/proj" --json "$@"
        expect_status 0
        XID=$(jq -r .exposure_id <<<"$output")
        XGEN=$(jq -r .generation <<<"$output")
        [[ "$XID" =~ ^exp-[0-9a-f]{32}$ ]] || fail "glove init gave no exposure: $output"
}

# xplan ID TEMPLATE ACCESS MATERIALIZATION CLEANUP [GEN [OFFSET_MS [TTL_SECS]]]:
# a plan for TEMPLATE granting the exposure, in $T/cfg/ID.plan.
xplan() {
        local g
        g=$(jq -nc --arg id "$XID" --argjson gen "${6:-$XGEN}" --arg a "$3" --arg m "$4" --arg c "$5" \
                --argjson ttl "${8:-60}" '[{exposure_id: $id, exposure_generation: $gen, access: $a,
                   materialization: $m, cleanup_policy: $c, max_bytes: 4194304, ttl_secs: $ttl}]')
        "$PY" "$FS" plan "$T/cfg/$1.plan" "$T/cfg/policy.json" "$2" "$g" "${7:-60000}"
}

# call METHOD PARAMS: one controller request; $output is the response.
call() {
        run --separate-stderr timeout -k 5 60 "$PY" "$SESSCTL" call "$RT" "$@"
        [ "$status" -eq 0 ] || fail "sessctl call $1 failed"
        echo "$output" >>"$ANSWERS"
}

# create ID: create_session for $T/cfg/ID.plan; $output is the response.
create() {
        call create_session "$(jq -nc --arg id "$1" --rawfile plan "$T/cfg/$1.plan" \
                '{session_id: $id, idempotency_key: ("k-" + $id), controller_plan_digest: ("1" * 64), plan: $plan}')"
}

# run_session ID: create and start ID and wait for its end; OUT its output.
run_session() {
        create "$1"
        jq -e .result <<<"$output" >/dev/null || fail "create_session $1: $output"
        call start_session "{\"session_id\":\"$1\"}"
        jq -e .result <<<"$output" >/dev/null || return 1
        local i s
        for ((i = 0; i < 300; i++)); do
                call session_status "{\"session_id\":\"$1\"}"
                s=$(jq -r .result.state <<<"$output")
                [ "$s" = exited ] || [ "$s" = failed ] && break
                sleep 0.1
        done
        run --separate-stderr timeout -k 5 60 "$PY" "$SESSCTL" watch "$RT" "$1"
        OUT=$(sed -n 's/^output //p' <<<"$output" | jq -r .)
        echo "$output" >>"$ANSWERS"
}

# error_code: the error code of the response in $output.
error_code() {
        jq -r '.error.data.reasons[0].code // .error.code // .result.reasons[0].code // "none"' <<<"$output"
}

# host_listing DIR: every entry with its type, mode, size, mtime and digest.
host_listing() {
        (cd "$1" && find . -printf '%p %y %m %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

# no_leak: no answer gloved gave (capabilities, catalog, validate, create,
# start, status, attach, receipts) holds the project's or root's path or
# inode, or a source identity.
no_leak() {
        "$GLOVE" ctl --runtime-dir "$RT" --json exposures >>"$ANSWERS"
        call receipts_page '{"after_sequence":0,"limit":256}'
        local ino rino
        ino=$(stat -c %i "$T/src/proj")
        rino=$(stat -c %i "$T/src")
        ! grep -F -e "$T/src" -e "src/proj" "$ANSWERS" || fail "an answer names the project or its root"
        for n in "$ino" "$rino"; do
                ! grep -E "\"(ino|dev|inode)\":$n\b" "$ANSWERS" || fail "an answer holds inode $n"
                if [ "$n" -ge 100000 ]; then
                        ! grep -wF "$n" "$ANSWERS" || fail "an answer holds inode $n"
                fi
        done
        ! grep -F '"root_id"' "$ANSWERS" || fail "an answer names a root id"
}

@test "exposures: an agent edits its copy of an exposed project (host byte-identical), reads its bind read-only, and keeps a change in a retained image that the owner applies through the exposure; nothing leaks" {
        x_gloved
        enroll --label proj
        host_listing "$T/src" >"$T/before"
        xplan e1 x-edit ephemeral_write copy remove
        call validate_plan "$(jq -nc --rawfile plan "$T/cfg/e1.plan" '{plan: $plan}')"
        jq -e '.result.valid == true' <<<"$output" >/dev/null || fail "the plan is not valid: $output"
        run_session e1 || fail "start e1: $output"
        [[ "$OUT" == *"original a"*"edited"* ]] || fail "the agent did not edit its copy: $OUT"
        host_listing "$T/src" >"$T/after"
        diff "$T/before" "$T/after" >&2 || fail "the host tree changed"
        # The read bind: readable, and writing is refused.
        xplan r1 x-read read bind remove
        run_session r1 || fail "start r1: $output"
        [[ "$OUT" == *"original a"*refused* ]] || fail "the read bind: $OUT"
        # The receipt commits the exposure's id, generation and scope digest,
        # and no source identity.
        local digest
        digest=$("$GLOVE" ctl --runtime-dir "$RT" --json exposures | jq -r --arg id "$XID" '.exposures[] | select(.exposure_id == $id) | .scope_digest')
        [[ "$digest" =~ ^[0-9a-f]{64}$ ]] || fail "no scope digest in the catalog"
        call receipts_page '{"after_sequence":0,"limit":256}'
        jq -e --arg id "$XID" --arg d "$digest" --argjson g "$XGEN" '[.result.envelopes[].envelope.receipt
                | select(.launch_binding != null) | .launch_binding.mounts[]
                | select(.exposure_id == $id)] | length == 2 and all(.exposure_generation == $g
                and .scope_digest == $d and (has("source") | not))' <<<"$output" >/dev/null ||
                fail "the receipts do not commit the exposure: $output"
        if [ -e /dev/loop-control ] && is_root && ! grep -q "retained.no_" "$GD_ERR"; then
                xplan k1 x-keep retained_write copy retain
                run_session k1 || fail "start k1: $output"
                [[ "$OUT" == *kept* ]] || fail "the retained session: $OUT"
                local img=$T/mat/images/k1/$XID.ext4
                [ -f "$img" ] || fail "no retained image at $img"
                if command -v debugfs >/dev/null; then
                        run debugfs -R 'cat /note.txt' "$img"
                        [[ "$output" == *"kept by the agent"* ]] || fail "the change is not in the image: $output"
                fi
                host_listing "$T/src" >"$T/after"
                diff "$T/before" "$T/after" >&2 || fail "the host tree changed"
                # A second retained session, then the owner applies the
                # first (issue 30): the exposure's project is reopened
                # through the registry's recovery lookup, once gloved, which
                # holds the exposure journal, has stopped.
                xplan k2 x-edit retained_write copy retain
                run_session k2 || fail "start k2: $output"
        fi
        no_leak
        if [ -e /dev/loop-control ] && is_root && ! grep -q "retained.no_" "$GD_ERR"; then
                stop_gloved
                mkdir -m 700 "$T/ap"
                mkdir -m 755 "$T/trust"
                "$GLOVE" apply --keygen "$T/ap/k" --key-id owner >"$T/ap/entry.json" || fail "keygen"
                jq -c '{schema: "glove.apply-trust.v1", keys: [.]}' "$T/ap/entry.json" >"$T/trust/t.json"
                chmod 644 "$T/trust/t.json"
                local apply=("$GLOVE" apply --trust-policy "$T/trust/t.json" --journal "$T/ap/apply.journal"
                        --materialization-root "$T/mat" --path-exposure-policy "$XPOL"
                        --path-exposure-journal "$T/xs/exposures.journal")
                run --separate-stderr "${apply[@]}" k1 --key "$T/ap/k"
                [ "$status" -eq 0 ] || fail "apply k1: $stderr"
                [ "$(cat "$T/src/proj/note.txt")" = "kept by the agent" ] || fail "the exposure's project did not get the change"
                [ "$(cat "$T/src/proj/a.txt")" = "original a" ] || fail "apply changed what the agent did not"
                # The project k2 started from is no longer there (k1's apply
                # replaced the entry): refused, nothing consumed.
                run --separate-stderr "${apply[@]}" k2 --key "$T/ap/k"
                [ "$status" -eq 1 ] && [[ "$stderr" == *"apply.stale_baseline"* ]] || fail "apply k2: $status $stderr"
                if grep -q "agent was here" "$T/src/proj/a.txt"; then fail "a stale stage reached the project"; fi
        fi
}

@test "exposures: a project or root replaced between init and start, by a directory or a link, is exposure.changed; a swap racing starts never reaches the agent" {
        x_gloved
        enroll
        # Replaced by another directory.
        mv "$T/src/proj" "$T/src/proj.old"
        mkdir "$T/src/proj"
        echo evil >"$T/src/proj/a.txt"
        xplan c1 x-read read bind remove
        create c1
        call start_session '{"session_id":"c1"}'
        [ "$(error_code)" = exposure.changed ] || fail "a replaced project must be exposure.changed: $output"
        # Replaced by a link to the original.
        rm -r "$T/src/proj"
        ln -s "$T/src/proj.old" "$T/src/proj"
        xplan c2 x-read read bind remove
        create c2
        call start_session '{"session_id":"c2"}'
        [ "$(error_code)" = exposure.changed ] || fail "a project replaced by a link must be exposure.changed: $output"
        rm "$T/src/proj"
        mv "$T/src/proj.old" "$T/src/proj"
        # The root replaced (moved away, a new one in its place).
        mv "$T/src" "$T/src.old"
        mkdir -p "$T/src/proj"
        xplan c3 x-read read bind remove
        create c3
        call start_session '{"session_id":"c3"}'
        [ "$(error_code)" = exposure.changed ] || fail "a replaced root must be exposure.changed: $output"
        rm -r "$T/src"
        mv "$T/src.old" "$T/src"
        # A loop exchanging the project with a look-alike while sessions
        # start: each one either sees the original or is refused.
        mkdir "$T/src/evil"
        echo evil >"$T/src/evil/a.txt"
        echo evil-marker >"$T/src/evil/marker"
        "$PY" -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
while True:
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE
' "$T/src/proj" "$T/src/evil" &
        SWAP_PID=$!
        local i ok=0 refused=0
        for i in $(seq 1 12); do
                xplan s$i x-read read bind remove
                if run_session s$i; then
                        if [[ "$OUT" == *evil* ]]; then
                                fail "session s$i saw the look-alike: $OUT"
                        fi
                        [[ "$OUT" == *"original a"* ]] && ok=$((ok + 1)) || refused=$((refused + 1))
                else
                        [[ "$(error_code)" == exposure.changed ]] || fail "s$i: $output"
                        refused=$((refused + 1))
                fi
        done
        kill "$SWAP_PID"
        wait "$SWAP_PID" 2>/dev/null || true
        SWAP_PID=
        echo "# racing starts: $ok saw the original, $refused refused" >&3
        no_leak
}

@test "exposures: a directory from outside the root bind-mounted beneath the project never reaches the agent (exposure.cross_device)" {
        is_root || skip "bind mounting needs root"
        x_gloved
        enroll
        mkdir "$T/outside"
        echo OUTSIDE-SECRET >"$T/outside/b.txt"
        mount --bind "$T/outside" "$T/src/proj/sub" || fail "bind mount failed"
        XMNT=$T/src/proj/sub
        local m id tpl acc mat
        for m in "r1 x-read read bind" "e1 x-edit ephemeral_write copy"; do
                read -r id tpl acc mat <<<"$m"
                xplan "$id" "$tpl" "$acc" "$mat" remove
                if run_session "$id"; then
                        fail "$id started with a mount beneath the project: $OUT"
                fi
                [ "$(error_code)" = exposure.cross_device ] || fail "$id: expected exposure.cross_device: $output"
                [[ "$output" != *"$T"* ]] || fail "$id: the refusal names a host path: $output"
        done
        umount "$XMNT"
        XMNT=
        # Unmounted, the same read session sees the project's own sub/.
        xplan r2 x-read read bind remove
        run_session r2 || fail "start r2: $output"
        [[ "$OUT" == *"original a"*"original b"* && "$OUT" != *OUTSIDE* ]] || fail "the read bind: $OUT"
        no_leak
}

@test "exposures: revoked, expired and superseded generations are refused at validate, create and start" {
        x_gloved
        enroll --ttl 40s
        local g1=$XGEN
        xplan v1 x-read read bind remove "$g1" 30000 1
        create v1
        jq -e .result <<<"$output" >/dev/null || fail "create v1: $output"
        # A grant outliving the exposure (plan expiry + ttl_secs).
        xplan v0 x-read read bind remove "$g1" 60000
        call validate_plan "$(jq -nc --rawfile plan "$T/cfg/v0.plan" '{plan: $plan}')"
        [ "$(error_code)" = plan.exposure_expires_too_soon ] || fail "a grant outliving the exposure: $output"
        # Revoked: start and validate refuse it.
        init --revoke "$XID" --json
        expect_status 0
        call start_session '{"session_id":"v1"}'
        [ "$(error_code)" = exposure.revoked ] || fail "start after revoke: $output"
        xplan v2 x-read read bind remove "$g1" 30000 1
        call validate_plan "$(jq -nc --rawfile plan "$T/cfg/v2.plan" '{plan: $plan}')"
        [ "$(error_code)" = plan.exposure_revoked ] || fail "validate after revoke: $output"
        # Re-enrolled: the next generation; the old one is superseded.
        enroll --ttl 2s
        [ "$XGEN" -eq $((g1 + 1)) ] || fail "re-enrollment gave generation $XGEN, not $((g1 + 1))"
        create v2
        [ "$(error_code)" = plan.exposure_superseded ] || fail "create with the old generation: $output"
        # Expired by gloved's clock (no expire record needed).
        sleep 2.2
        xplan v3 x-read read bind remove "$XGEN" 2500 1
        create v3
        [ "$(error_code)" = plan.exposure_expired ] || fail "create after expiry: $output"
        "$GLOVE" ctl --runtime-dir "$RT" --json exposures | jq -e --arg id "$XID" \
                '.exposures[] | select(.exposure_id == $id) | .state == "expired"' >/dev/null ||
                fail "the catalog does not show the exposure expired"
        # gloved restarted: the journal (with the expire record start
        # appends) replays to the same list.
        init --list --json
        local before=$output
        stop_gloved
        start_gloved "$T/g" "${GD_ARGS[@]}"
        init --list --json
        [ "$output" = "$before" ] || fail "the list changed across a restart: $before -> $output"
        stop_gloved
        start_gloved "$T/g" "${GD_ARGS[@]}"
        init --list --json
        [ "$output" = "$before" ] || fail "the list changed across a second restart: $before -> $output"
        no_leak
}
