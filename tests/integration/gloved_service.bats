#!/usr/bin/env bats
# gloved as a service: private directories, per-start secret, capabilities
# derived from what was constructed, durable sessions across restarts,
# strict refusal of a damaged store, clean SIGTERM.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() {
        gloved_teardown
        return 0
}

mode_of() { stat -c %a "$1"; }

@test "gloved: 0700 directories, 0600 secret and socket; SIGTERM ends it cleanly" {
        start_gloved "$T/a"
        [ "$(mode_of "$RT")" = 700 ] || fail "runtime dir mode $(mode_of "$RT")"
        [ "$(mode_of "$ST")" = 700 ] || fail "state dir mode $(mode_of "$ST")"
        [ "$(mode_of "$RT/bootstrap-secret")" = 600 ] || fail "secret mode"
        [ "$(mode_of "$RT/gloved.sock")" = 600 ] || fail "socket mode"
        [ "$(mode_of "$ST/receipt.key")" = 600 ] || fail "receipt key mode"
        grep -qxE '[0-9a-f]{64}' "$RT/bootstrap-secret" || fail "the secret is not 64 lowercase hex"
        ctl capabilities
        expect_status 0
        expect_line "methods: authenticate capabilities receipts_page receipts_ack"
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS after SIGTERM"
        [ ! -e "$RT/gloved.sock" ] || fail "the socket is left behind"
        [ ! -e "$RT/bootstrap-secret" ] || fail "the secret is left behind"
        grep -q "SIGTERM received; stopping" "$GD_ERR" || fail "no stop message"
        # The service is gone: glove ctl says so with 125.
        ctl capabilities
        expect_glove_error 125
        [ "$(glove_error_code)" = client.unreachable ] || fail "expected client.unreachable"
}

@test "gloved: its log is JSON lines (ts, level, code, msg first); --log-level drops the lower levels" {
        JOURNAL_STREAM=1:1 start_gloved "$T/a" # a stream that is not its stderr: JSON
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS after SIGTERM"
        local line n=0
        while IFS= read -r line; do
                n=$((n + 1))
                jq -e 'keys_unsorted[0:4] == ["ts", "level", "code", "msg"] and ([.[] | type] | all(. == "string"))
                       and (.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}Z$"))' \
                        <<<"$line" >/dev/null || fail "not a log line: $line"
        done <"$GD_ERR"
        [ "$n" -eq 2 ] || fail "expected the listening and the stopping line: $(cat "$GD_ERR")"
        jq -s -e 'any(.[]; .level == "info" and .code == "service.listening" and (.msg | startswith("listening on ")))' \
                "$GD_ERR" >/dev/null || fail "no listening line: $(cat "$GD_ERR")"
        jq -s -e 'any(.[]; .level == "notice" and .code == "service.stopping" and .msg == "SIGTERM received; stopping")' \
                "$GD_ERR" >/dev/null || fail "no stopping line: $(cat "$GD_ERR")"
        start_gloved "$T/b" --log-level warning
        stop_gloved
        [ ! -s "$GD_ERR" ] || fail "--log-level warning wrote info or notice lines: $(cat "$GD_ERR")"
        gloved_fails --runtime-dir "$T/c/run" --state-dir "$T/c/state" --log-level verbose
        expect_status 2
        [[ "$stderr" == "gloved: usage.bad_value: --log-level verbose: "* ]] || fail "$stderr"
}

@test "gloved: a fresh secret at every start; the old one is refused" {
        start_gloved "$T/a"
        old=$(cat "$RT/bootstrap-secret")
        stop_gloved
        start_gloved "$T/a"
        new=$(cat "$RT/bootstrap-secret")
        [ "$old" != "$new" ] || fail "the secret did not change across restarts"
        frames exchange --secret "$old" '{"id":1,"method":"capabilities"}'
        expect_status 0
        [ "${lines[0]}" = 'auth {"error":{"code":"auth.failed","data":{},"message":"authentication failed"},"id":0}' ] ||
                fail "old secret not refused"
}

@test "gloved: refuses insecure, relative and unknown settings" {
        mkdir -m 755 "$T/open"
        gloved_fails --runtime-dir "$T/open" --state-dir "$T/s1"
        expect_status 1
        [[ "$stderr" == *"dirs.insecure"*"mode 0755"* ]] || fail "0755 runtime dir must be refused"
        mkdir -m 700 "$T/ok"
        chmod 701 "$T/ok"
        gloved_fails --runtime-dir "$T/r2" --state-dir "$T/ok"
        expect_status 1
        [[ "$stderr" == *"dirs.insecure"* ]] || fail "0701 state dir must be refused"
        gloved_fails --runtime-dir relative/run --state-dir "$T/s3"
        expect_status 2
        [[ "$stderr" == "gloved: usage.bad_value: "* ]] || fail "relative dir must be a usage error"
        local p
        for p in "$T/r7/../r7" "$T/./r7" "$T//r7"; do
                gloved_fails --runtime-dir "$p" --state-dir "$T/s7"
                expect_status 2
                [[ "$stderr" == "gloved: usage.bad_value: --runtime-dir $p is not normalized"*"did you mean $T/r7?" ]] ||
                        fail "$p: expected a usage error naming the normalized path"
                gloved_fails --runtime-dir "$T/r8" --state-dir "$p"
                expect_status 2
        done
        [ ! -e "$T/r7" ] && [ ! -e "$T/s7" ] || fail "a refused start must not create directories"
        gloved_fails --runtime-dir "$T/r4" --state-dir "$T/s4" --session-store "$T/x.journal"
        expect_status 2
        [[ "$stderr" == "gloved: usage.store_needs_policy: "* ]] || fail "store without policy"
        gloved_fails --runtime-dir "$T/r5" --state-dir "$T/s5" --bogus
        expect_status 2
        gloved_fails --runtime-dir "$T/r6" --state-dir "$T/s6" --receipt-anchor ABC
        expect_status 2
        [ ! -e "$T/r6" ] || fail "a refused start must not create directories"
}

@test "gloved: the protected policy is checked before start" {
        mkdir -m 700 "$T/p"
        install -m 644 "$GLOVED_POLICY_SRC" "$T/p/policy.json"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/p/policy.json"
        expect_status 1
        [[ "$stderr" == *"policy.file_mode"* ]] || fail "a 0644 policy must be refused"
        chmod 600 "$T/p/policy.json"
        ln -s "$T/p/policy.json" "$T/p/link.json"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/p/link.json"
        expect_status 1
        [[ "$stderr" == *"policy.file_symlink"* ]] || fail "a symlinked policy must be refused"
        printf '{"schema_version":1}' >"$T/p/bad.json"
        chmod 600 "$T/p/bad.json"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/p/bad.json"
        expect_status 1
        [[ "$stderr" == *"policy.missing_field"* ]] || fail "an incomplete policy must be refused"
}

@test "gloved: one service per runtime directory and per session store" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        start_gloved "$T/a" --session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal"
        gloved_fails --runtime-dir "$RT" --state-dir "$T/other-state"
        expect_status 1
        [[ "$stderr" == *"service.already_running"* ]] || fail "a second gloved on the runtime dir must refuse"
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" --session-policy "$T/p/policy.json" \
                --session-store "$T/p/sessions.journal"
        expect_status 1
        [[ "$stderr" == *"journal.locked"* ]] || fail "a second gloved on the session store must refuse"
        # The first one still serves.
        ctl capabilities
        expect_status 0
}

@test "gloved: capabilities follow what was constructed" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        start_gloved "$T/a"
        ctl --json capabilities
        expect_status 0
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); assert c["methods"]==["authenticate","capabilities","receipts_page","receipts_ack"], c; assert c["plan_schema_versions"]==[] and c["session_store_schema_version"]==0 and c["lifecycle_operational"] is False and c["managed_runtime_ids"]==[] and c["policy_revision"] is None' "$output" ||
                fail "base service capabilities"
        ctl validate-plan "$GLOVED_PLAN_SRC"
        expect_refused method_not_found
        # A method gloved has but was not started for says why, and what to do.
        [[ "$stderr" == "glove: method_not_found: validate_plan is not advertised by this service: gloved was started without --session-policy FILE; what to do: restart gloved with every option (glove doctor prints the command line;"* ]] ||
                fail "the refusal must name the missing option: $stderr"
        stop_gloved

        start_gloved "$T/b" --session-policy "$T/p/policy.json"
        ctl --json capabilities
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); assert c["methods"][-1]=="validate_plan" and len(c["methods"])==5, c; assert c["plan_schema_versions"]==[1] and c["policy_revision"]==7 and c["session_store_schema_version"]==0 and c["lifecycle_reason"]=="gloved was started without --session-store FILE and --materialization-root DIR"' "$output" ||
                fail "policy capabilities"
        ctl capabilities
        expect_line "lifecycle operational: no (gloved was started without --session-store FILE and --materialization-root DIR)"
        ctl create-session --session-id s1 --idempotency-key k1 \
                --controller-digest 1111111111111111111111111111111111111111111111111111111111111111 --plan "$GLOVED_PLAN_SRC"
        expect_refused method_not_found
        [[ "$stderr" == *": create_session is not advertised by this service: gloved was started without --session-store FILE; what to do: "* ]] ||
                fail "create-session must name --session-store: $stderr"
        stop_gloved

        start_gloved "$T/c" --session-policy "$T/p/policy.json" --session-store "$T/p/s.journal"
        ctl --json capabilities
        "$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); assert c["methods"][-3:]==["create_session","session_status","list_sessions"], c; assert c["session_store_schema_version"]==1 and c["lifecycle_operational"] is False and c["resource_mechanisms"]==[]' "$output" ||
                fail "store capabilities"
        ctl start s1
        expect_refused method_not_found
        [[ "$stderr" == *": start_session is not advertised by this service: gloved was started without --materialization-root DIR; what to do: "* ]] ||
                fail "start must name --materialization-root: $stderr"
}

@test "gloved: restart keeps every session" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        args=(--session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal")
        start_gloved "$T/a" "${args[@]}"
        before=()
        for n in 1 2 3; do
                ctl --json create-session --session-id "s-$n" --idempotency-key "k-$n" --controller-digest "$CDIGEST" --plan "$T/plan.json"
                expect_status 0
                before[n]=$output
        done
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS"
        start_gloved "$T/a" "${args[@]}"
        grep -q "3 sessions" "$GD_ERR" || fail "the restarted gloved did not replay 3 sessions"
        for n in 1 2 3; do
                ctl --json session-status "s-$n"
                expect_status 0
                "$PY" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); assert all(a[k]==b[k] for k in b), (a,b); assert a["history"]==[] and a["idempotency_key"]==sys.argv[3]' "$output" "${before[n]}" "k-$n" ||
                        fail "session s-$n changed across the restart"
        done
        # A byte-identical retry after the restart answers the original record.
        ctl --json create-session --session-id s-2 --idempotency-key k-2 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        [ "$output" = "${before[2]}" ] || fail "the retry after restart differs from the original"
}

@test "gloved: a damaged session store refuses start and is left as it was" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        J=$T/p/sessions.journal
        args=(--session-policy "$T/p/policy.json" --session-store "$J")
        start_gloved "$T/a" "${args[@]}"
        ctl create-session --session-id s-1 --idempotency-key k-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        ctl create-session --session-id s-2 --idempotency-key k-2 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        stop_gloved
        cp "$J" "$T/good"
        # damage EXPR: rewrite the journal in place as EXPR of its bytes b.
        damage() {
                "$PY" - "$J" "$1" <<'PYEOF'
import sys
path, expr = sys.argv[1], sys.argv[2]
b = open(path, "rb").read()
b = eval(expr)
with open(path, "r+b") as fh:
    fh.write(b)
    fh.truncate(len(b))
PYEOF
        }
        for spec in 'b[:-1]' 'b[:-40]' 'b+b"\x00"*4' 'b[:200]+bytes([b[200]^1])+b[201:]' 'b[:64]'; do
                cp "$T/good" "$J"
                damage "$spec"
                before=$(sha256sum "$J")
                gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${args[@]}"
                expect_status 1
                [[ "$stderr" == '{"ts":"'*'","level":"error","code":"journal.'* ]] || fail "damage $spec: expected a journal.* refusal"
                [ "$(sha256sum "$J")" = "$before" ] || fail "damage $spec: the store was rewritten"
        done
        cp "$T/good" "$J"
        start_gloved "$T/c" "${args[@]}"
        ctl session-status s-2
        expect_status 0
        expect_line "session s-2: created"
}

@test "gloved: a torn last session record past the seal (crash mid-append) is kept in .torn and cut; sessions intact" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        J=$T/p/sessions.journal
        args=(--session-policy "$T/p/policy.json" --session-store "$J")
        start_gloved "$T/a" "${args[@]}"
        for n in 1 2; do
                ctl create-session --session-id "s-$n" --idempotency-key "k-$n" --controller-digest "$CDIGEST" --plan "$T/plan.json"
                expect_status 0
        done
        stop_gloved
        local size
        size=$(stat -c %s "$J")
        # What an interrupted append leaves: a length prefix announcing 300
        # bytes and 40 of them.
        "$PY" -c 'import sys; open(sys.argv[1], "ab").write((300).to_bytes(4, "big") + b"{" * 40)' "$J"
        start_gloved "$T/b" "${args[@]}"
        grep -q "\"msg\":\"store.torn_tail: .*44 bytes at offset $size" "$GD_ERR" ||
                { cat "$GD_ERR" >&2; fail "no store.torn_tail line naming 44 bytes at offset $size"; }
        [ "$(stat -c %s "$J")" -eq "$size" ] || fail "the torn tail was not cut"
        [ "$(stat -c %s "$J.torn")" -eq 44 ] || fail "the torn bytes were not kept in $J.torn"
        [ "$(stat -c %a "$J.torn")" = 600 ] || fail "$J.torn is not mode 0600"
        for n in 1 2; do
                ctl session-status "s-$n"
                expect_status 0
                expect_line "session s-$n: created"
        done
        ctl create-session --session-id s-3 --idempotency-key k-3 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        stop_gloved
        start_gloved "$T/c" "${args[@]}"
        grep -q "3 sessions" "$GD_ERR" || fail "the next start did not replay 3 sessions"
        ! grep -q torn_tail "$GD_ERR" || fail "a second torn_tail was reported"
}

@test "gloved: replays a store written from the documented format alone" {
        mkdir -m 700 "$T/p"
        install_policy "$T/p/policy.json"
        plan_file "$T/plan.json"
        # An independent writer of docs/control-protocol.md ("Journals").
        "$PY" "$LIB/journal_format.py" store "$T/p/sessions.journal" \
                "doc-1:dk-1:$CDIGEST:$T/plan.json" "doc-2:dk-2:${CDIGEST//1/2}:$T/plan.json"
        start_gloved "$T/a" --session-policy "$T/p/policy.json" --session-store "$T/p/sessions.journal"
        ctl --json session-status doc-2
        expect_status 0
        digest=$(sha256sum <"$T/plan.json" | cut -d' ' -f1)
        [[ "$output" == *"\"plan_content_digest\":\"$digest\""* ]] || fail "the plan digest must survive replay"
        [[ "$output" == *"\"controller_plan_digest\":\"${CDIGEST//1/2}\""* ]] || fail "controller digest"
        # gloved appends to it; the retry of doc-1 returns the stored record.
        ctl create-session --session-id doc-3 --idempotency-key dk-3 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        ctl --json create-session --session-id doc-1 --idempotency-key dk-1 --controller-digest "$CDIGEST" --plan "$T/plan.json"
        expect_status 0
        [[ "$output" == *'"created_at_ms":1,'* ]] || fail "the retry must answer the stored record"
}

@test "gloved: tells systemd when it is ready and when it stops" {
        "$PY" "$LIB/notify_listen.py" "$T/notify.sock" "$T/notify.out" 3>&- &
        track_pid $!
        wait_for_file() { local i; for ((i = 0; i < 200; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
        wait_for_file "$T/notify.out.ready" || fail "the notification listener did not start"
        NOTIFY_SOCKET=$T/notify.sock start_gloved "$T/a"
        wait_for "$T/notify.out" '^READY=1 ' 10
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS"
        wait_for "$T/notify.out" '^STOPPING=1' 10
}

@test "gloved: serves a socket passed by socket activation" {
        command -v systemd-socket-activate >/dev/null ||
                skip "systemd-socket-activate is not installed (package systemd)"
        mkdir -p -m 700 "$T/a/run"
        RT=$T/a/run GD_ERR=$T/a.gloved.err
        # Without --accept the activator execs gloved in its own process.
        systemd-socket-activate -l "$RT/gloved.sock" "$GLOVED" --runtime-dir "$RT" --state-dir "$T/a/state" \
                2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_for_file() { local i; for ((i = 0; i < 200; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
        wait_for_file "$RT/gloved.sock" || fail "the activator did not listen"
        # The first connection starts gloved, which then writes the secret.
        "$PY" -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(3)' \
                "$RT/gloved.sock" 3>&- &
        wait_for_file "$RT/bootstrap-secret" || { cat "$GD_ERR" >&2; fail "gloved did not start on activation"; }
        ctl capabilities
        expect_status 0
        grep -q "listening on an activated socket" "$GD_ERR" || fail "gloved did not use the activated socket"
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS"
        [ ! -e "$RT/bootstrap-secret" ] || fail "the secret is left behind"
}

@test "glove ctl: control characters in what a peer answers are shown as \\xNN, never sent to the terminal" {
        RT=$T/fake
        install -d -m 0700 "$RT"
        # A peer of our own uid that answers the handshake, then capabilities
        # and an error whose strings carry a title-setting and a clear-screen
        # sequence, and a C1 CSI (U+009B).
        "$PY" - "$RT" <<'PYEOF' &
import json, os, socket, struct, sys
d = sys.argv[1]
with open(d + "/bootstrap-secret", "w") as f:
    f.write("a" * 64 + "\n")
os.chmod(d + "/bootstrap-secret", 0o600)
s = socket.socket(socket.AF_UNIX)
s.bind(d + "/gloved.sock")
s.listen(2)
s.settimeout(20)
def rd(c):
    n = struct.unpack(">I", c.recv(4))[0]
    b = b""
    while len(b) < n:
        b += c.recv(n - len(b))
    return json.loads(b)
def wr(c, o):
    b = json.dumps(o).encode()
    c.sendall(struct.pack(">I", len(b)) + b)
evil = "\u001b]0;PWNED\u0007x\u001b[2J\u009b31m"
for answer in ({"result": {"service": "gloved" + evil, "methods": ["ping" + evil], "version": "0.1.0",
                           "protocol_version": 1}},
               {"error": {"code": "x" + evil, "message": "m" + evil}}):
    c, _ = s.accept()
    a = rd(c)
    wr(c, {"id": a["id"], "result": {"authenticated": True, "protocol_version": 1, "service": "gloved"}})
    r = rd(c)
    wr(c, dict(answer, id=r["id"]))
    c.close()
PYEOF
        local fake=$!
        track_pid "$fake"
        local i
        for ((i = 0; i < 100; i++)); do [ -S "$RT/gloved.sock" ] && break; sleep 0.05; done
        ctl capabilities
        expect_status 0
        [[ "$output" != *$'\e'* && "$output" != *$'\a'* && "$output" != *$'\xc2\x9b'* ]] ||
                fail "a control character reached stdout: $(printf '%q' "$output")"
        [[ "$output" == *'gloved\x1b]0;PWNED\x07x\x1b[2J\x9b31m'* ]] || fail "the escaped service name is not shown: $output"
        ctl capabilities
        expect_status 1
        [[ "$stderr" != *$'\e'* && "$stderr" != *$'\a'* ]] || fail "a control character reached stderr: $(printf '%q' "$stderr")"
        [[ "$stderr" == *'m\x1b]0;PWNED\x07x\x1b[2J\x9b31m'* ]] || fail "the escaped message is not shown: $stderr"
        wait "$fake"
}
