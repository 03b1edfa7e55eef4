#!/usr/bin/env bats
# The README's gloved quickstart ("A session end to end") runs as pasted:
# the shell block is taken from README.md itself, with only its scratch
# directory (/tmp/glove-*), the build directory and the checkout's tests/
# pointed at this run's copies.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
}

teardown() {
        kill_tracked
        return 0
}

@test "README: the gloved quickstart runs a managed session end to end as pasted" {
        local readme="$BATS_TEST_DIRNAME/README.md"
        [ -f "$readme" ] || fail "README.md was not copied next to the suite"
        # The block after "A session end to end".
        "$PY" - "$readme" "$T/quickstart.sh" <<'PYEOF'
import sys
text = open(sys.argv[1]).read()
start = text.index("A session end to end")
block = text[text.index("```sh\n", start) + 6:]
block = block[:block.index("```")]
open(sys.argv[2], "w").write(block)
PYEOF
        grep -q -- "--materialization-root" "$T/quickstart.sh" || fail "the quickstart does not start managed sessions"
        # The checkout layout the README assumes: build/ and tests/.
        mkdir -p "$T/checkout/build" "$T/checkout/tests/integration" "$T/checkout/tests/agents"
        ln -s "$GLOVE" "$T/checkout/build/glove"
        ln -s "$GLOVED" "$T/checkout/build/gloved"
        ln -s "$LIB" "$T/checkout/tests/integration/lib"
        ln -s "$AGENTS/verify_receipts.py" "$T/checkout/tests/agents/verify_receipts.py"
        sed -i "s|/tmp/glove-|$T/glove-|g" "$T/quickstart.sh"
        # Without delegated cgroups the runtime is not operational (a
        # documented refusal, tested in gloved_sessions.bats).
        run --separate-stderr timeout -k 5 120 bash -c "cd '$T/checkout' && bash '$T/quickstart.sh'"
        if [[ "$output" == *'"lifecycle_operational":false'* || "$stderr" == *"not operational"* ]] &&
                [[ "$stderr" == *cgroup.not_delegated* ]]; then
                skip "cgroups are not delegated to uid $(id -u): managed sessions are not operational"
        fi
        local w
        for w in "session s1: " "accepted 5 bytes" "got:hello" "got:quit" "status 7" "ok:"; do
                [[ "$output" == *"$w"* ]] || fail "the quickstart's output lacks '$w': $output // $stderr"
        done
}

@test "README: the Operate it block (setup, doctor, policy, daemon) runs as pasted" {
        local readme="$BATS_TEST_DIRNAME/README.md"
        [ -f "$readme" ] || fail "README.md was not copied next to the suite"
        [ -n "${GLOVE_NODE_MODULES:-}" ] || skip "tests/node_modules is not installed (scripts/deps.sh): the block stages the npm codex package"
        "$PY" - "$readme" "$T/operate.sh" <<'PYEOF'
import sys
text = open(sys.argv[1]).read()
start = text.index("## Operate it")
block = text[text.index("```sh\n", start) + 6:]
block = block[:block.index("```")]
open(sys.argv[2], "w").write(block)
PYEOF
        grep -q "glove setup" "$T/operate.sh" && grep -q "glove policy stage" "$T/operate.sh" ||
                fail "the block lost its commands"
        mkdir -p "$T/checkout/build" "$T/checkout/tests" "$T/home" "$T/run"
        chmod 0700 "$T/home" "$T/run"
        ln -s "$GLOVE" "$T/checkout/build/glove"
        ln -s "$GLOVED" "$T/checkout/build/gloved"
        ln -s "$GLOVE_NODE_MODULES" "$T/checkout/tests/node_modules"
        # A fresh user: nothing of this machine's configuration. Each command
        # must succeed (bash -e) but the last: daemon status exits 3 while no
        # user manager runs gloved.
        run --separate-stderr env -i PATH=/usr/bin:/bin HOME="$T/home" XDG_RUNTIME_DIR="$T/run" TMPDIR="$T" \
                timeout -k 5 120 bash -e -c "cd '$T/checkout' && . '$T/operate.sh'"
        if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
                if [[ "$output" == *"glove doctor: not ready"* ]] && [[ "$output$stderr" == *cgroup.not_delegated* ]]; then
                        skip "doctor: not ready for uid $(id -u) here (cgroups are not delegated), as it says; the block stops there"
                fi
                fail "the block failed ($status): $output // $stderr"
        fi
        local w
        for w in "receipt_key" "ready" "codex:" "ok: revision 1" "codex-safe (runtime codex" \
                "wrote $T/home/.config/systemd/user/gloved.service" "gloved.service: installed (up to date)"; do
                [[ "$output" == *"$w"* ]] || fail "the block's output lacks '$w': $output // $stderr"
        done
        [ "$(stat -c %a "$T/home/.config/glove/session-policy.json")" = 600 ] || fail "setup's policy is not 0600"
}
