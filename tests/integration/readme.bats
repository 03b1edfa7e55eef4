#!/usr/bin/env bats
# Every shell block of the README runs as pasted (issue 14): the blocks are
# taken from README.md itself (```sh, ```bash, ```console), with only /tmp
# pointed at this run's scratch directory and a checkout made of the binaries
# under test, tests/ and examples/. A block preceded by
# <!-- not-run: REASON --> is not run (at most two); the gloved quickstart
# ("A session end to end") and the "Operate it" block have tests of their own
# that also check what they print.

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
        # "codex-cli": the staged closure ran codex --version under glove exec.
        for w in "receipt_key" "ready" "codex:" "codex-cli " "ok: revision 1" "codex-safe (runtime codex" \
                "wrote $T/home/.config/systemd/user/gloved.service" "gloved.service: installed (up to date)"; do
                [[ "$output" == *"$w"* ]] || fail "the block's output lacks '$w': $output // $stderr"
        done
        [ "$(stat -c %a "$T/home/.config/glove/session-policy.json")" = 600 ] || fail "setup's policy is not 0600"
}

# The README blocks that have a test of their own above (which runs them as
# pasted and checks what they print); the generic test leaves them to it.
DEDICATED_BLOCKS=("A session end to end" "## Operate it")

@test "README: every shell block runs as pasted on a fresh checkout (blocks marked not-run excepted)" {
        local readme="$BATS_TEST_DIRNAME/README.md"
        [ -f "$readme" ] || fail "README.md was not copied next to the suite"
        [ -d "$BATS_TEST_DIRNAME/examples" ] || fail "examples/ was not copied next to the suite"
        # Each ```sh, ```bash or ```console block (console: the lines after
        # "$ ") becomes T/blocks/N.sh, with N.meta: its line, the text before
        # it that names it (the last heading, or the paragraph that dedicated
        # tests find it by) and the reason of a <!-- not-run: REASON -->
        # marker on the line right before it.
        "$PY" - "$readme" "$T/blocks" <<'PYEOF'
import os, re, sys
lines = open(sys.argv[1]).read().split("\n")
out = sys.argv[2]
os.makedirs(out)
n, i, context, notrun = 0, 0, "", None
while i < len(lines):
    line = lines[i]
    m = re.match(r"```(\S*)\s*$", line)
    if m:
        lang, start, body = m.group(1), i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if lang in ("sh", "bash", "console"):
            if lang == "console":
                body = [l[2:] for l in body if l.startswith("$ ")]
            n += 1
            open(os.path.join(out, "%d.sh" % n), "w").write("\n".join(body) + "\n")
            open(os.path.join(out, "%d.meta" % n), "w").write("%d\t%s\t%s\n" % (start, context, notrun or ""))
        elif notrun:
            sys.exit("README line %d: a not-run marker before a %s block, which is never run" % (start, lang or "plain"))
        notrun = None
    else:
        m = re.match(r"<!-- not-run: (.+) -->\s*$", line)
        if m:
            notrun = m.group(1)
        elif line.strip():
            if notrun:
                sys.exit("README line %d: a not-run marker must be right before its block" % i)
            if line.startswith("#") or "A session end to end" in line:
                context = line.strip()
    i += 1
print(n)
PYEOF
        local nblocks
        nblocks=$(ls "$T/blocks"/*.sh | wc -l)
        [ "$nblocks" -ge 5 ] || fail "only $nblocks shell blocks found in the README"
        # The fresh checkout the README assumes, with the built binaries.
        local co=$T/checkout
        mkdir -p "$co/build" "$co/tests/integration" "$co/tests/agents" "$T/home" "$T/run" "$T/tmp"
        chmod 0700 "$T/home" "$T/run"
        ln -s "$GLOVE" "$co/build/glove"
        ln -s "$GLOVED" "$co/build/gloved"
        ln -s "$LIB" "$co/tests/integration/lib"
        ln -s "$AGENTS/verify_receipts.py" "$co/tests/agents/verify_receipts.py"
        [ -n "${GLOVE_NODE_MODULES:-}" ] && ln -s "$GLOVE_NODE_MODULES" "$co/tests/node_modules"
        # A real copy: the agents read them inside their sandbox, where the
        # checkout's own path is not granted.
        cp -r "$BATS_TEST_DIRNAME/examples" "$co/examples"
        local idx meta line context reason ran=0 notrun=0 skipped=0 d
        for ((idx = 1; idx <= nblocks; idx++)); do
                IFS=$'\t' read -r line context reason <"$T/blocks/$idx.meta"
                if [ -n "$reason" ]; then
                        echo "# README block $idx (line $line, $context): not run: $reason" >&3
                        notrun=$((notrun + 1))
                        continue
                fi
                for d in "${DEDICATED_BLOCKS[@]}"; do
                        if [[ "$context" == *"$d"* ]]; then
                                echo "# README block $idx (line $line, $context): run by its own test above" >&3
                                continue 2
                        fi
                done
                if grep -q "tests/node_modules" "$T/blocks/$idx.sh" && [ -z "${GLOVE_NODE_MODULES:-}" ]; then
                        echo "# README block $idx (line $line): skipped: tests/node_modules is not installed (scripts/deps.sh)" >&3
                        skipped=$((skipped + 1))
                        continue
                fi
                # Scratch paths instead of the host's /tmp, so that the root
                # and the unprivileged runs never share a file.
                sed "s|/tmp/|$T/tmp/|g" "$T/blocks/$idx.sh" >"$T/blocks/$idx.run"
                # A fresh user's environment with the built binaries on PATH;
                # make is already done (the binaries are the ones under test).
                run --separate-stderr env -i PATH="$co/build:/usr/bin:/bin" HOME="$T/home" XDG_RUNTIME_DIR="$T/run" \
                        TMPDIR="$T/tmp" LANG=C.UTF-8 timeout -k 5 120 bash -e -c '
                        cd "$1"
                        make() { if [ $# -eq 0 ]; then echo "make: build/glove is built already"; else echo "make $*: not run here" >&2; return 1; fi; }
                        trap "kill \$(jobs -p) 2>/dev/null || true" EXIT
                        . "$2"' bash "$co" "$T/blocks/$idx.run"
                if [ "$status" -ne 0 ]; then
                        if [[ "$output$stderr" == *cgroup.not_delegated* ]]; then
                                echo "# README block $idx (line $line): skipped: cgroups are not delegated to uid $(id -u)" >&3
                                skipped=$((skipped + 1))
                                continue
                        fi
                        fail "README block $idx (line $line, $context) failed ($status): $output // $stderr"
                fi
                ran=$((ran + 1))
        done
        echo "# README: $ran blocks ran, $skipped skipped, $notrun not run by marker" >&3
        [ "$notrun" -le 2 ] || fail "$notrun blocks are marked not-run: keep that list short"
        [ "$ran" -ge 2 ] || fail "only $ran README blocks ran"
        # What the quickstarts' agents leave behind.
        grep -q "done: Count the Python files" "$T/tmp/out/answer.txt" || fail "examples/agent.py wrote no answer"
}
