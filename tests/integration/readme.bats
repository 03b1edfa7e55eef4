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
