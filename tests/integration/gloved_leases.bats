#!/usr/bin/env bats
# Credential leases in gloved's managed sessions (issue 11, "Credential
# leases"; docs/session-policy.md, "Credential leases"): the policy's secret
# "tok" has an operator source file $T/secret/tok, imported at launch into
# the lease store $ST/leases/tok and bound writable at
# /home/agent/.tok/auth.json. The agent is the small Python program of
# tests/integration/lib/leases.py (read, rotate, hold).

load helpers
load "$GLOVE_IT_LIB/gloved"

LEASES_PY="$LIB/leases.py"
SESSCTL="$LIB/sessctl.py"
TARGET=/home/agent/.tok/auth.json
# Loops count with "idx", never "i" (bats' run assigns a global i).

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        command -v flock >/dev/null || skip "flock(1) (util-linux) is needed to probe the lease lock"
}

teardown() {
        gloved_teardown
        return 0
}

# lease_gloved: the operator's source (0600, "secret-1"), the policy, and
# gloved with a store and a materialization root. Skips, saying why, when
# managed sessions are not operational for this user.
lease_gloved() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        mkdir -m 700 -p "$T/cfg" "$T/secret"
        SRC=$T/secret/tok
        (umask 077 && printf 'secret-1\n' >"$SRC")
        LEASE=$T/g/state/leases/tok
        "$PY" "$LEASES_PY" policy "$T/cfg/policy.json" "$SRC" "$T/g/state/leases"
        GD_ARGS=(--session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal"
                --materialization-root "$T/mat")
        start_gloved "$T/g" "${GD_ARGS[@]}"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* ]]; then
                skip "managed sessions are not operational for uid $(id -u)"
        fi
        [[ "$output" == *'"start_session"'* ]] || fail "gloved does not advertise start_session: $output"
}

# restart_gloved [--kill]: stops gloved (SIGTERM, or SIGKILL: the keepers
# stay) and starts it again on the same directories, waiting for its
# "listening on" line (a socket the old one left does not count).
restart_gloved() {
        if [ "${1:-}" = --kill ]; then
                kill -KILL "$GD_PID"
        else
                kill -TERM "$GD_PID"
        fi
        wait_exit "$GD_PID" 10 || fail "gloved did not exit"
        cp "$GD_ERR" "$T/gloved.err.before-restart"
        start_gloved "$T/g" "${GD_ARGS[@]}" || fail "gloved did not restart: $(cat "$GD_ERR")"
        local idx
        for ((idx = 0; idx < 400; idx++)); do
                grep -qF '"msg":"listening on ' "$GD_ERR" && return 0
                running "$GD_PID" || fail "gloved exited during start-up: $(cat "$GD_ERR")"
                sleep 0.025
        done
        fail "gloved did not listen again: $(cat "$GD_ERR")"
}

# new_s ID MODE: a plan for py-MODE naming the handle "tok", created.
new_s() {
        "$PY" "$LEASES_PY" plan "$T/cfg/$1.plan" "$T/cfg/policy.json" "py-$2"
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

# status_field ID EXPR: a Python expression over s (the session-status result).
status_field() {
        "$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" |
                "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

# wait_state ID STATE...: until the session is in one of the states.
wait_state() {
        local id=$1 idx st=""
        shift
        for ((idx = 0; idx < 600; idx++)); do
                st=$(status_field "$id" 's["state"]')
                for want in "$@"; do
                        [ "$st" = "$want" ] && return 0
                done
                sleep 0.1
        done
        fail "session $id is $st, not $*"
}

# run_s ID MODE: creates and starts the session, waits for its end; it
# must exit 0. OUT: its whole output.
run_s() {
        new_s "$1" "$2"
        ctl start "$1"
        expect_status 0
        wait_state "$1" exited failed
        OUT=$("$PY" "$SESSCTL" watch "$RT" "$1" | sed -n 's/^output //p')
        [ "$(status_field "$1" 's["state"]')" = exited ] ||
                fail "$1 failed: $(status_field "$1" 's["history"]'); $(grep -F "session $1" "$GD_ERR")"
        [ "$(receipt_of "$1" '.termination.kind') $(receipt_of "$1" '.exit_code')" = '"exit" 0' ] ||
                fail "$1 did not exit 0: $(receipt_of "$1" '.termination') $OUT"
}

# refused ID MODE CODE: the session fails before it runs, the reason is CODE
# and gloved's stderr says CODE with a message.
refused() {
        new_s "$1" "$2"
        ctl start "$1"
        expect_status 0
        wait_state "$1" failed
        [ "$(status_field "$1" 's["history"][-1]["reason"]')" = "$3" ] ||
                fail "$1: the reason is not $3: $(status_field "$1" 's["history"]')"
        local idx line=""
        for ((idx = 0; idx < 100; idx++)); do
                line=$(grep -F "session $1: " "$GD_ERR" | grep -F "$3: " || true)
                [ -n "$line" ] && break
                sleep 0.1
        done
        [ -n "$line" ] || fail "gloved did not report $3 for $1: $(cat "$GD_ERR")"
        MSG=$line
}

# receipt_of ID JQ: JQ over the terminal receipt of ID.
receipt_of() {
        "$PY" "$SESSCTL" call "$RT" receipts_page '{"after_sequence":0,"limit":256}' |
                jq -c --arg id "$1" ".result.envelopes[].envelope | select(.session_id == \$id and .kind == \"session.terminal\") | .receipt | $2"
}

# lock_free: the lease's lock can be taken now (nobody holds it).
lock_free() {
        flock -n -s "$LEASE/lock" true
}

sha() { sha256sum | cut -d' ' -f1; }

# ---------------------------------------------------------------- the lease at the target

@test "gloved leases: the token is readable at the target; the source and the lease directory are not reachable; the binding commits handle, target and version only" {
        lease_gloved
        run_s r1 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "the agent did not read the token at $TARGET: $OUT"
        [[ "$OUT" == *"unreachable $SRC ENOENT"* ]] || fail "the source is reachable inside: $OUT"
        [[ "$OUT" == *"unreachable $T/g/state/leases ENOENT"* ]] || fail "the lease store is reachable inside: $OUT"
        [[ "$OUT" == *"unreachable $LEASE ENOENT"* ]] || fail "the lease directory is reachable inside: $OUT"
        [[ "$OUT" != *$'\n'"reachable "* ]] || fail "a host path is reachable: $OUT"
        [[ "$OUT" == *"replace-refused EBUSY"*"unlink-refused EBUSY"* ]] ||
                fail "the bound lease could be replaced or removed: $OUT"
        local v
        v=$(printf 'secret-1\n' | sha)
        [ "$(receipt_of r1 '.launch_binding.leases')" = "[{\"handle\":\"tok\",\"target\":\"$TARGET\",\"version\":\"$v\"}]" ] ||
                fail "binding leases: $(receipt_of r1 '.launch_binding.leases')"
        [ "$(receipt_of r1 '[.launch_binding.mounts[] | select(.kind == "lease") | {target, read_only}]')" = \
                "[{\"target\":\"$TARGET\",\"read_only\":false}]" ] || fail "mounts: $(receipt_of r1 '.launch_binding.mounts')"
        local rc
        rc=$(receipt_of r1 '.')
        [[ "$rc" != *secret-1* ]] || fail "the receipt carries the secret"
        [[ "$rc" != *"$SRC"* ]] || fail "the receipt carries the source path"
        # The store: one version, named by its digest, and the record.
        [ "$(ls "$LEASE/versions")" = "$v" ] || fail "versions: $(ls -la "$LEASE/versions")"
        [ "$(stat -c %a "$LEASE") $(stat -c %a "$LEASE/live") $(stat -c %a "$LEASE/versions/$v")" = "700 600 600" ] ||
                fail "modes: $(ls -la "$LEASE")"
        lock_free || fail "the lock is still held after the session ended"
}

# ---------------------------------------------------------------- rotation

@test "gloved leases: a token the agent rotates is what the next session of the handle sees; the operator's source is unchanged until the operator replaces it, which wins" {
        lease_gloved
        local before
        before=$(stat -c '%i %s %Y %a' "$SRC"; sha <"$SRC")
        run_s w1 rotate
        [[ "$OUT" == *"token=secret-1"*"rotated"* ]] || fail "rotate: $OUT"
        [ "$(stat -c '%i %s %Y %a' "$SRC"; sha <"$SRC")" = "$before" ] || fail "the operator's source changed"
        run_s w2 read
        [[ "$OUT" == *"token=rotated-from-secret-1"* ]] || fail "the next session did not see the rotated token: $OUT"
        local v
        v=$(printf 'rotated-from-secret-1\n' | sha)
        [ "$(receipt_of w2 '.launch_binding.leases[0].version')" = "\"$v\"" ] || fail "version: $(receipt_of w2 '.launch_binding.leases')"
        [ "$(ls "$LEASE/versions")" = "$v" ] || fail "a superseded version is left: $(ls "$LEASE/versions")"
        [ "$(cat "$SRC")" = secret-1 ] || fail "the source is not the operator's any more"
        # A rotation survives a gloved restart too.
        run_s w3 rotate
        restart_gloved
        run_s w4 read
        [[ "$OUT" == *"token=rotated-from-rotated-from-secret-1"* ]] || fail "after a restart: $OUT"
        # The operator replaces the source: the operator's content wins.
        (umask 077 && printf 'secret-2\n' >"$SRC.new" && mv "$SRC.new" "$SRC")
        run_s w5 read
        [[ "$OUT" == *"token=secret-2"* ]] || fail "the operator's new source was not imported: $OUT"
        [ "$(ls "$LEASE/versions")" = "$(printf 'secret-2\n' | sha)" ] || fail "versions: $(ls "$LEASE/versions")"
}

@test "gloved leases: the agent cannot grow its lease on the host past the session's disk_bytes (EFBIG inside); the next start does not take the oversized copy" {
        lease_gloved
        run_s g1 grow
        # disk_bytes is 16 MiB (leases.py LIMITS) and no grant is larger.
        [[ "$OUT" == *"grow-stopped EFBIG 16777216"* ]] || fail "the lease grew past disk_bytes: $OUT"
        [ "$(stat -c %s "$LEASE/live")" -le 16777216 ] || fail "the host copy is $(stat -c %s "$LEASE/live") bytes"
        # Over GLOVE_LEASE_MAX_BYTES (1 MiB): not taken as a rotation.
        run_s g2 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "the oversized copy was taken: ${OUT:0:200}"
        [ "$(stat -c %s "$LEASE/live")" -lt 1048576 ] || fail "the oversized copy is still live"
}

# ---------------------------------------------------------------- the lock

@test "gloved leases: a second session of the handle while one runs is lease.busy; the first is unaffected; the handle is free once it ended" {
        lease_gloved
        new_s h1 hold
        ctl start h1
        expect_status 0
        wait_state h1 running
        ! lock_free || fail "the lock is not held while h1 runs"
        refused h2 read lease.busy
        [ "$(status_field h1 's["state"]')" = running ] || fail "h1 is not running any more"
        ctl stop h1 --grace 1000
        expect_status 0
        wait_state h1 exited failed
        lock_free || fail "the lock is still held after h1 ended"
        run_s h3 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "h3: $OUT"
}

@test "gloved leases: gloved SIGKILLed and restarted: the adopted session still holds the lease (lease.busy); it is released when that session ends" {
        lease_gloved
        new_s a1 hold
        ctl start a1
        expect_status 0
        wait_state a1 running
        restart_gloved --kill
        ! lock_free || fail "the lock went with gloved: the keeper does not hold it"
        grep -q "a1: reconcile.adopted" "$GD_ERR" || fail "a1 was not adopted: $(cat "$GD_ERR")"
        [ "$(status_field a1 's["state"]')" = running ] || fail "a1 is not running after the restart"
        refused a2 read lease.busy
        ctl stop a1 --grace 1000
        expect_status 0
        wait_state a1 exited failed
        lock_free || fail "the lock is still held after the adopted session ended"
        run_s a3 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "a3: $OUT"
}

# ---------------------------------------------------------------- bad sources

@test "gloved leases: a source of mode 0644, with two links, behind a symbolic link, missing, too large, not a regular file, or of another owner is refused with its code" {
        lease_gloved
        chmod 0644 "$SRC"
        refused b1 read lease.mode
        [[ "$MSG" == *"$SRC"*"0644"* ]] || fail "the message: $MSG"
        chmod 0600 "$SRC"
        ln "$SRC" "$T/secret/second"
        refused b2 read lease.links
        rm "$T/secret/second"
        mv "$SRC" "$T/secret/real"
        ln -s "$T/secret/real" "$SRC"
        refused b3 read lease.symlink
        rm "$SRC"
        refused b4 read lease.missing
        (umask 077 && head -c $((1024 * 1024 + 1)) /dev/zero >"$SRC")
        refused b5 read lease.too_large
        rm "$SRC"
        mkfifo -m 0600 "$SRC"
        refused b6 read lease.file_type
        rm "$SRC"
        if is_root; then
                (umask 077 && printf 'secret-1\n' >"$SRC")
                chown 65534:65534 "$SRC"
                refused b7 read lease.owner
                [[ "$MSG" == *"uid 65534"* ]] || fail "the message: $MSG"
        fi
        # None of them touched the lease, nor holds its lock; a good source
        # works again.
        lock_free || fail "a refused start left the lock held"
        rm -f "$SRC"
        (umask 077 && printf 'secret-1\n' >"$SRC")
        run_s b8 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "b8: $OUT"
}

@test "gloved leases: a FIFO, a directory or a 0644 file in place of the store's lock or record is lease.store at once (the start never blocks on it)" {
        lease_gloved
        run_s s0 read
        local f kind fifo_n=0
        for f in lock record; do
                for kind in fifo dir loose; do
                        fifo_n=$((fifo_n + 1))
                        mv "$LEASE/$f" "$T/$f.saved"
                        case $kind in
                        fifo) mkfifo -m 0600 "$LEASE/$f" ;;
                        dir) mkdir -m 0700 "$LEASE/$f" ;;
                        loose) cp "$T/$f.saved" "$LEASE/$f" && chmod 0644 "$LEASE/$f" ;;
                        esac
                        if [ "$f $kind" = "record loose" ]; then
                                # A record's mode is not a lock's: a readable
                                # record is still the store's own data.
                                rm -f "$LEASE/$f"
                                mv "$T/$f.saved" "$LEASE/$f"
                                continue
                        fi
                        refused "s$fifo_n" read lease.store
                        [[ "$MSG" == *"lease.store: lease tok: "* ]] || fail "$f ($kind): the message: $MSG"
                        rm -rf "$LEASE/$f"
                        mv "$T/$f.saved" "$LEASE/$f"
                done
        done
        run_s s9 read
        [[ "$OUT" == *"token=secret-1"* ]] || fail "s9: $OUT"
}

# ---------------------------------------------------------------- cleaning

@test "gloved leases: a lease whose handle left the policy is removed at the next start" {
        lease_gloved
        run_s c1 read
        [ -d "$LEASE" ] || fail "no lease directory"
        "$PY" - "$T/cfg/policy.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["secret_handles"], p["secret_mounts"] = [], []
json.dump(p, open(sys.argv[1], "w"), indent=1)
EOF
        # A directory named like a handle that is no lease (no lock file):
        # left alone, and no lock file is made in it.
        install -d -m 0700 "$T/g/state/leases/notalease"
        printf 'keep\n' >"$T/g/state/leases/notalease/data"
        restart_gloved
        grep -qF '"code":"lease.removed","msg":"lease.removed: tok: ' "$GD_ERR" || fail "no lease.removed line: $(cat "$GD_ERR")"
        [ "$(ls -A "$T/g/state/leases/notalease")" = data ] ||
                fail "the sweep touched a directory that is no lease: $(ls -la "$T/g/state/leases/notalease")"
        [ ! -e "$LEASE" ] || fail "the lease is left: $(ls -la "$LEASE")"
        # Nothing else in the state directory went with it.
        [ -f "$T/g/state/receipt.key" ] && [ -f "$T/g/state/receipts.journal" ] ||
                fail "the sweep removed gloved's own state: $(ls -la "$T/g/state")"
        [ -d "$T/g/state/leases" ] || fail "the lease store itself is gone"
        [ "$(cat "$SRC")" = secret-1 ] || fail "the operator's source was touched"
}
