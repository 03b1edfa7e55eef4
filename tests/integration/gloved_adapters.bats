#!/usr/bin/env bats
# Native adapters in gloved's managed sessions (issue 11, part A;
# docs/session-policy.md, "Native adapters and discovery"): runtime
# discovery through a symbolic-link entry runs the canonical file, pinned;
# untrusted search directories are refused with a listing of each directory
# and why; adapter runtimes see HOME and their managed variable; a policy
# that sets HOME for an adapter is refused. The agents are tiny dash
# scripts; the policies are written by tests/integration/lib/managed_fs.py.

load helpers
load "$GLOVE_IT_LIB/gloved"

FS="$LIB/managed_fs.py"
SESSCTL="$LIB/sessctl.py"

setup() {
        T=$BATS_TEST_TMPDIR
        umask 022
        require_gloved
        mkdir -m 700 -p "$T/cfg"
}

teardown() {
        gloved_teardown
        [ -z "${STICKY:-}" ] || rm -rf -- "$STICKY"
        return 0
}

# ---------------------------------------------------------------- helpers

# chain_trusted DIR: DIR and every ancestor are owned by root or this user
# and writable by neither group nor others (sticky or not: /tmp fails): the
# trust rule gloved applies, so that a refusal below is for the reason the
# test sets up, and an acceptance is not luck.
chain_trusted() {
        local d=$1 me st uid mode m
        me=$(id -u)
        while :; do
                [ -L "$d" ] && fail "test setup: $d is a symbolic link"
                st=$(stat -c '%u %a' "$d") || fail "stat $d"
                read -r uid mode <<<"$st"
                [ "$uid" = 0 ] || [ "$uid" = "$me" ] ||
                        fail "test setup: $d is owned by uid $uid, so the test directories cannot pass the trust rule"
                m=$((8#$mode))
                if (((m & 8#022) != 0)); then
                        fail "test setup: $d (mode $mode) is group- or other-writable"
                fi
                [ "$d" = / ] && return 0
                d=$(dirname "$d")
        done
}

# fs_gloved SPEC_JSON: writes the policy and starts gloved with a store and
# a materialization root; skips, saying why, when managed sessions are not
# operational for this user.
fs_gloved() {
        grep -q -- --materialization-root "$GLOVED" ||
                skip "this gloved has no managed runtime (--materialization-root unknown)"
        "$PY" "$FS" policy "$T/cfg/policy.json" "$1"
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json" --session-store "$T/cfg/sessions.journal" \
                --materialization-root "$T/mat"
        ctl --json capabilities
        expect_status 0
        if [[ "$output" == *'"lifecycle_operational":false'* ]]; then
                [[ "$output" == *'"agent_runtime_adapter_schema_version":0'* ]] ||
                        fail "adapter schema 1 advertised without an operational runtime: $output"
                skip "managed sessions are not operational for uid $(id -u) (no delegated cgroup)"
        fi
        [[ "$output" == *'"agent_runtime_adapter_schema_version":1'* ]] ||
                fail "an operational runtime must advertise agent_runtime_adapter_schema_version 1: $output"
}

# new_fs ID TEMPLATE: a plan without grants, created (not started).
new_fs() {
        "$PY" "$FS" plan "$T/cfg/$1.plan" "$T/cfg/policy.json" "$2" '[]' 60000
        ctl create-session --session-id "$1" --idempotency-key "k-$1" --controller-digest "$CDIGEST" \
                --plan "$T/cfg/$1.plan"
        expect_status 0
}

status_field() {
        "$GLOVE" ctl --runtime-dir "$RT" --json session-status "$1" |
                "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

wait_state() {
        local idx st=""
        for ((idx = 0; idx < ${3:-20} * 10; idx++)); do
                st=$(status_field "$1" 's["state"]')
                [ "$st" = "$2" ] && return 0
                sleep 0.1
        done
        fail "session $1 is $st, not $2"
}

# run_managed ID TEMPLATE: creates and starts the session, waits for its end;
# output/lines are what the agent printed (CR stripped).
run_managed() {
        new_fs "$1" "$2"
        ctl start "$1"
        expect_status 0
        run --separate-stderr timeout -k 5 60 "$PY" "$SESSCTL" watch "$RT" "$1"
        [ "$status" -eq 0 ] || fail "watch failed: $output $stderr"
        "$PY" -c '
import json, sys
for l in sys.argv[1].splitlines():
    if l.startswith("output "):
        sys.stdout.write(json.loads(l[7:]).replace("\r", ""))' "$output" >"$T/$1.out"
        wait_state "$1" exited
        output=$(cat "$T/$1.out")
        mapfile -t lines <"$T/$1.out"
}

# binding ID: the launch binding of ID's terminal receipt (compact JSON).
binding() {
        "$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
r = [e["envelope"]["receipt"] for e in p["envelopes"] if e["envelope"]["session_id"] == sys.argv[1] and e["envelope"]["kind"] == "session.terminal"]
print(json.dumps(r[-1]["launch_binding"]))' "$1"
}

# kept_binding ID: the whole launch binding gloved keeps for ID (compact
# JSON), after checking that ID's receipt commits to it by digest.
kept_binding() {
        local f=$ST/bindings/$1.json d
        [ -f "$f" ] || fail "no kept binding for $1"
        d=$("$GLOVE" ctl --runtime-dir "$RT" --json receipts --limit 256 | jq -r --arg id "$1" \
                '[.envelopes[].envelope | select(.session_id == $id and .kind == "session.terminal")][-1].receipt.launch_binding_digest')
        [ "$d" = "$(sha256sum <"$f" | cut -d' ' -f1)" ] || fail "$1: the receipt's digest $d is not the kept binding's"
        jq -c . "$f"
}

# start_fails ID CODE: the start fails while preparing with CODE; STARTERR is
# gloved's line about it (code and message).
start_fails() {
        new_fs "$1" "$2"
        ctl start "$1"
        local idx
        STARTERR=""
        for ((idx = 0; idx < 100; idx++)); do
                STARTERR=$(grep -F "session $1: " "$GD_ERR" | grep -F "$3" || true)
                [ -n "$STARTERR" ] && break
                sleep 0.1
        done
        [ -n "$STARTERR" ] || fail "no $3 for $1 on gloved's stderr: $(cat "$GD_ERR")"
        wait_state "$1" failed
        [ "$(status_field "$1" 's["history"][-1]["reason"]')" = "$3" ] ||
                fail "the failed transition's reason is not $3: $(status_field "$1" 's["history"]')"
}

# agent_script PATH: a dash script that says which file runs and what it sees.
agent_script() {
        cat >"$1" <<'EOF'
#!/bin/sh
echo "exe=$0"
echo "marker=canonical-agent"
echo "home=${HOME-unset} codex_home=${CODEX_HOME-unset}"
EOF
        chmod 0755 "$1"
}

# ---------------------------------------------------------------- discovery

@test "gloved adapters: discovery through a symbolic-link entry runs the canonical file, pinned, and the receipt says so" {
        mkdir -p "$T/trust/empty" "$T/trust/bin" "$T/trust/pkg/codex/bin"
        chmod -R 0755 "$T/trust"
        agent_script "$T/trust/pkg/codex/bin/codex.js"
        ln -s ../pkg/codex/bin/codex.js "$T/trust/bin/codex"
        # A decoy: a link in the search directory is followed to its
        # canonical file; the decoy named like the link target is not run.
        agent_script "$T/trust/bin/codex.js"
        chain_trusted "$T/trust/bin"
        fs_gloved "{\"templates\":[{\"id\":\"cx\",\"runtime_id\":\"codex\",\"discovery\":\"codex\",
                \"search_paths\":[\"$T/trust/empty\",\"$T/trust/bin\"],\"argv\":[],
                \"environment\":[\"PATH=/usr/bin:/bin\"]}]}"
        run_managed d1 cx
        local canon=$T/trust/pkg/codex/bin/codex.js
        expect_line "exe=$canon"
        expect_line "marker=canonical-agent"
        expect_line "home=/home/agent codex_home=/home/agent/.codex"
        local b
        # The receipt names the adapter without its executable's host path.
        b=$(binding d1)
        "$PY" -c '
import json, sys
b = json.loads(sys.argv[1])
assert b["adapter"]["executable"] == {"discovered": True}, b["adapter"]
assert "argv" not in b and len(b["executable_digest"]) == 64, b
assert not any(m["kind"] == "executable" for m in b["mounts"]), b["mounts"]
assert sys.argv[2] not in json.dumps(b), b
' "$b" "$T/trust" || fail "receipt binding: $b"
        b=$(kept_binding d1)
        "$PY" -c '
import json, os, sys
b, canon = json.loads(sys.argv[1]), sys.argv[2]
st = os.stat(canon)
a = b["adapter"]
assert a["runtime_id"] == "codex" and a["home"] == "/home/agent", a
assert a["managed_environment"] == ["CODEX_HOME=/home/agent/.codex"], a
assert a["skills_dir"] == "/home/agent/.codex/skills", a
x = a["executable"]
assert x == {"path": canon, "dev": st.st_dev, "ino": st.st_ino, "discovered": True}, (x, st)
assert b["argv"][0] == canon, b["argv"]
m = [m for m in b["mounts"] if m["kind"] == "executable"]
assert len(m) == 1 and m[0]["target"] == canon and m[0]["read_only"] is True, m
assert m[0]["source"]["ino"] == st.st_ino, m
assert "CODEX_HOME" in b["environment_names"] and "HOME" in b["environment_names"], b["environment_names"]
' "$b" "$canon" || fail "binding: $b"
}

@test "gloved adapters: the discovered executable is bound read-only: the agent cannot change it on the host" {
        mkdir -p "$T/trust/bin" "$T/trust/pkg"
        chmod -R 0755 "$T/trust"
        printf '%s\n' '#!/bin/sh' 'echo "exe=$0"' 'if echo x >>"$0" 2>/dev/null; then echo wrote; else echo refused; fi' \
                >"$T/trust/pkg/pi"
        chmod 0755 "$T/trust/pkg/pi"
        ln -s ../pkg/pi "$T/trust/bin/pi"
        chain_trusted "$T/trust/bin"
        local before
        before=$(sha256sum <"$T/trust/pkg/pi")
        fs_gloved "{\"templates\":[{\"id\":\"p\",\"runtime_id\":\"pi\",\"discovery\":\"pi\",
                \"search_paths\":[\"$T/trust/bin\"],\"argv\":[]}]}"
        run_managed p1 p
        expect_line "exe=$T/trust/pkg/pi"
        expect_line "refused"
        [ "$(sha256sum <"$T/trust/pkg/pi")" = "$before" ] || fail "the agent changed its executable on the host"
}

@test "gloved adapters: untrusted search directories are refused, each listed with why: group-writable, other-writable ancestor, no executable, not executable" {
        mkdir -p "$T/d/gw" "$T/d/ow/bin" "$T/d/none" "$T/d/noexec"
        chmod 0755 "$T/d" "$T/d/ow/bin" "$T/d/none" "$T/d/noexec"
        chmod 0775 "$T/d/gw"
        chmod 0777 "$T/d/ow"
        agent_script "$T/d/gw/codex"
        agent_script "$T/d/ow/bin/codex"
        agent_script "$T/d/noexec/codex"
        chmod 0644 "$T/d/noexec/codex"
        chain_trusted "$T/d/none"
        fs_gloved "{\"templates\":[
                {\"id\":\"a\",\"runtime_id\":\"codex\",\"discovery\":\"codex\",\"search_paths\":[\"$T/d/gw\",\"$T/d/ow/bin\"],\"argv\":[]},
                {\"id\":\"b\",\"runtime_id\":\"codex\",\"discovery\":\"codex\",\"search_paths\":[\"$T/d/none\",\"$T/d/noexec\"],\"argv\":[]}]}"
        start_fails f1 a launch.discovery_failed
        [[ "$STARTERR" == *"$T/d/gw: it is writable by group (mode 0775)"* ]] || fail "group-writable not listed: $STARTERR"
        [[ "$STARTERR" == *"$T/d/ow/bin: $T/d/ow is writable by group and others (mode 0777)"* ]] ||
                fail "other-writable ancestor not listed: $STARTERR"
        start_fails f2 b launch.discovery_failed
        [[ "$STARTERR" == *"$T/d/none: no codex there"* ]] || fail "empty directory not listed: $STARTERR"
        [[ "$STARTERR" == *"$T/d/noexec: codex is not executable (mode 0644)"* ]] || fail "non-executable not listed: $STARTERR"
        [[ "$(status_field f2 's["history"][-1]["reason"]')" = launch.discovery_failed ]]
}

@test "gloved adapters: a search directory beneath a sticky world-writable ancestor (/tmp) is refused, naming the ancestor" {
        [ "$(stat -c %a /tmp)" = 1777 ] || skip "/tmp here is not a sticky world-writable directory (mode $(stat -c %a /tmp))"
        # The directory itself is this user's and 0755: only its sticky
        # ancestor, where any user can create entries, makes it untrusted.
        STICKY=$(mktemp -d /tmp/glove-sticky.XXXXXX)
        chmod 0755 "$STICKY"
        agent_script "$STICKY/codex"
        fs_gloved "{\"templates\":[{\"id\":\"s\",\"runtime_id\":\"codex\",\"discovery\":\"codex\",
                \"search_paths\":[\"$STICKY\"],\"argv\":[]}]}"
        start_fails k1 s launch.discovery_failed
        [[ "$STARTERR" == *"$STICKY: /tmp is writable by group and others (mode 1777)"* ]] ||
                fail "the sticky ancestor is not named: $STARTERR"
}

@test "gloved adapters: a search directory owned by another uid, and a symbolic-link search directory, are refused" {
        is_root || skip "making a directory owned by another uid needs root (chown)"
        mkdir -p "$T/o/other" "$T/o/real"
        chmod 0755 "$T/o" "$T/o/other" "$T/o/real"
        agent_script "$T/o/other/claude"
        agent_script "$T/o/real/claude"
        chown 4242:4242 "$T/o/other"
        ln -s real "$T/o/link"
        chain_trusted "$T/o/real"
        fs_gloved "{\"templates\":[{\"id\":\"c\",\"runtime_id\":\"claude-code\",\"discovery\":\"claude-code\",
                \"search_paths\":[\"$T/o/link\",\"$T/o/other\"],\"argv\":[]}]}"
        start_fails o1 c launch.discovery_failed
        [[ "$STARTERR" == *"$T/o/other: it is owned by uid 4242, neither root nor the service user (uid 0)"* ]] ||
                fail "other owner not listed: $STARTERR"
        [[ "$STARTERR" == *"$T/o/link: it is a symbolic link"* ]] || fail "symbolic-link directory not listed: $STARTERR"
}

# ---------------------------------------------------------------- managed environment

@test "gloved adapters: each adapter runtime sees HOME and its own managed variable; a plain runtime sees neither variable" {
        local script='echo "h=${HOME-} c=${CODEX_HOME-} x=${XDG_CONFIG_HOME-} p=${COPILOT_HOME-}"; test -d "$HOME" && test -w "$HOME" && echo home-writable'
        local t="" rt
        for rt in codex opencode copilot pi claude-code pyrt; do
                t+="${t:+,}$("$PY" -c 'import json,sys; print(json.dumps({"id": "e-" + sys.argv[1], "runtime_id": sys.argv[1], "argv": ["/usr/bin/dash", "-c", sys.argv[2]]}))' "$rt" "$script")"
        done
        fs_gloved "{\"templates\":[$t]}"
        run_managed m1 e-codex
        expect_line "h=/home/agent c=/home/agent/.codex x= p="
        expect_line "home-writable"
        run_managed m2 e-opencode
        expect_line "h=/home/agent c= x=/home/agent/.config p="
        run_managed m3 e-copilot
        expect_line "h=/home/agent c= x= p=/home/agent/.copilot"
        run_managed m4 e-pi
        expect_line "h=/home/agent c= x= p="
        run_managed m5 e-claude-code
        expect_line "h=/home/agent c= x= p="
        run_managed m6 e-pyrt
        expect_line "h=/home/agent c= x= p="
        "$PY" -c 'import json,sys; b=json.loads(sys.argv[1]); assert "adapter" not in b, b' "$(kept_binding m6)" ||
                fail "a plain runtime's binding has an adapter object"
        "$PY" -c '
import json, sys
b = json.loads(sys.argv[1])
a = b["adapter"]
assert a["runtime_id"] == "opencode" and a["managed_environment"] == ["XDG_CONFIG_HOME=/home/agent/.config"], a
assert a["executable"]["path"] == "/usr/bin/dash" and a["executable"]["discovered"] is False, a
assert any(m["kind"] == "executable" and m["target"] == "/usr/bin/dash" for m in b["mounts"]), b["mounts"]
' "$(kept_binding m2)" || fail "opencode binding: $(kept_binding m2)"
}

@test "gloved adapters: a policy whose adapter template sets HOME (or CODEX_HOME) is refused at start, naming the entry" {
        local sp
        sp=$("$PY" -c 'import json,sys; print(json.dumps({"templates": [{"id": "h", "runtime_id": "codex", "argv": ["/usr/bin/true"], "environment": ["HOME=/root", "PATH=/usr/bin:/bin"]}]}))')
        "$PY" "$FS" policy "$T/cfg/policy.json" "$sp"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/cfg/policy.json"
        expect_status 1
        [[ "$stderr" == *"policy.managed_environment"* ]] || fail "HOME for an adapter must be refused: $stderr"
        [[ "$stderr" == *'$.runtime_templates[0].launch.environment[0]'* ]] || fail "the entry is not named: $stderr"
        sp=$("$PY" -c 'import json,sys; print(json.dumps({"templates": [{"id": "h", "runtime_id": "codex", "argv": ["/usr/bin/true"], "environment": ["CODEX_HOME=/root/.codex"]}]}))')
        "$PY" "$FS" policy "$T/cfg/policy.json" "$sp"
        gloved_fails --runtime-dir "$T/r" --state-dir "$T/s" --session-policy "$T/cfg/policy.json"
        expect_status 1
        [[ "$stderr" == *"policy.managed_environment"* ]] || fail "CODEX_HOME for codex must be refused: $stderr"
        # The same HOME for a runtime outside the adapter table is the template's own business.
        sp=$("$PY" -c 'import json,sys; print(json.dumps({"templates": [{"id": "h", "runtime_id": "pyrt", "argv": ["/usr/bin/true"], "environment": ["HOME=/root"]}]}))')
        "$PY" "$FS" policy "$T/cfg/policy.json" "$sp"
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json"
}
