#!/usr/bin/env bats
# Every shell block of the README and of every page under docs/ runs as
# pasted (issues 14 and 25): the blocks are taken from the pages themselves
# (```sh, ```bash, ```console; tests/integration/lib/shell_blocks.py), with
# only /tmp pointed at this run's scratch directory and a checkout made of
# the binaries under test, tests/ and examples/. A block preceded by
# <!-- not-run: REASON --> is not run (at most two a page); the README's
# gloved quickstart ("A session end to end") and its "Operate it" block have
# tests of their own that also check what they print. The docs pages are
# found by globbing docs/*.md, so a new page is covered without a change
# here. Run once, as root in the normal build (tests/integration/matrix):
# what the blocks do is proved for each cell by the other files.

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

# The README blocks that have a test of their own below (which runs them as
# pasted and checks what they print); the generic test leaves them to it.
DEDICATED_BLOCKS=("A session end to end" "## Operate it")
DEDICATED_ARGS=()
for _d in "${DEDICATED_BLOCKS[@]}"; do DEDICATED_ARGS+=(--dedicated "$_d"); done

# dedicated_block TEXT OUT: the README's first shell block after a line
# holding TEXT, written to OUT.
dedicated_block() {
        local readme="$BATS_TEST_DIRNAME/README.md" f
        [ -f "$readme" ] || fail "README.md was not copied next to the suite"
        rm -rf "$T/dedicated"
        "$PY" "$LIB/shell_blocks.py" "${DEDICATED_ARGS[@]}" "$T/dedicated" "$readme" >/dev/null ||
                fail "the README's shell blocks cannot be read"
        for f in "$T/dedicated/README.md"/*.meta; do
                if [[ "$(cut -f3 "$f")" == "dedicated: $1" ]]; then
                        cp "${f%.meta}.sh" "$2"
                        return 0
                fi
        done
        fail "no README block follows '$1'"
}

# make_checkout DIR: the fresh checkout the pages assume, with the built
# binaries under build/ (make is already done), tests/ (integration/lib,
# agents/, fixtures/, node_modules/) and a real copy of
# examples/ (the agents read it inside their sandbox, where the checkout's
# own path is not granted).
make_checkout() {
        local co=$1 f
        [ -d "$BATS_TEST_DIRNAME/examples" ] || fail "examples/ was not copied next to the suite"
        mkdir -p "$co/build" "$co/tests/integration" "$co/tests/fixtures"
        ln -s "$GLOVE" "$co/build/glove"
        ln -s "$GLOVED" "$co/build/gloved"
        ln -s "$LIB" "$co/tests/integration/lib"
        ln -s "$AGENTS" "$co/tests/agents"
        for f in "$GLOVE_FIXTURES"/*; do ln -s "$f" "$co/tests/fixtures/"; done
        if [ -n "${GLOVE_NODE_MODULES:-}" ]; then ln -s "$GLOVE_NODE_MODULES" "$co/tests/node_modules"; fi
        cp -r "$BATS_TEST_DIRNAME/examples" "$co/examples"
}

# run_page_blocks NAME DIR N: runs the N shell blocks of page NAME, which
# shell_blocks.py wrote into DIR, in page order in one bash -e, as a reader
# pastes them into one terminal (a variable or a background job of one
# block is there for the next), as a fresh user (a HOME, XDG_RUNTIME_DIR and
# TMPDIR of the page's own) from the top of a checkout of the page's own.
# The first block that fails ends the page: the blocks after it are not
# reached. Sets RAN, NOTRUN and SKIPPED to the counts and FAILED to what
# failed (empty when nothing did); says on fd 3 what it did with each block.
run_page_blocks() {
        local name=$1 blocks=$2 nblocks=$3
        local out=$T/pages/$name
        RAN=0 NOTRUN=0 SKIPPED=0 FAILED=""
        local idx line context what torun=()
        for ((idx = 1; idx <= nblocks; idx++)); do
                IFS=$'\t' read -r line context what <"$blocks/$idx.meta"
                case "$what" in
                not-run:*)
                        echo "# $name block $idx (line $line, $context): $what" >&3
                        NOTRUN=$((NOTRUN + 1))
                        continue
                        ;;
                dedicated:*)
                        echo "# $name block $idx (line $line, $context): run by its own test" >&3
                        continue
                        ;;
                esac
                if grep -q "tests/node_modules" "$blocks/$idx.sh" && [ -z "${GLOVE_NODE_MODULES:-}" ]; then
                        echo "# $name block $idx (line $line): skipped: tests/node_modules is not installed (scripts/deps.sh)" >&3
                        SKIPPED=$((SKIPPED + 1))
                        continue
                fi
                torun+=("$idx")
        done
        [ "${#torun[@]}" -gt 0 ] || return 0
        local co=$out/checkout
        mkdir -p "$out/home" "$out/run" "$out/tmp"
        chmod 0700 "$out/home" "$out/run"
        make_checkout "$co"
        # Scratch paths instead of the host's /tmp, so that two runs never
        # share a file.
        for idx in "${torun[@]}"; do
                sed "s|/tmp/|$out/tmp/|g" "$blocks/$idx.sh" >"$out/$idx.run"
        done
        # The page as one script: each block sourced with its output in
        # N.out and N.err, its number in "at" while it runs.
        {
                echo 'cd "$1"'
                # make is already done (the binaries are the ones under test).
                echo 'make() { if [ $# -eq 0 ]; then echo "make: build/glove is built already"; else echo "make $*: not run here" >&2; return 1; fi; }'
                echo 'trap "kill \$(jobs -p) 2>/dev/null || true" EXIT'
                for idx in "${torun[@]}"; do
                        echo "echo $idx >'$out/at'"
                        echo ". '$out/$idx.run' >'$out/$idx.out' 2>'$out/$idx.err'"
                done
                echo "echo done >'$out/at'"
        } >"$out/page.sh"
        # A fresh user's environment with the built binaries on PATH.
        local t0=$SECONDS
        run --separate-stderr env -i PATH="$co/build:/usr/bin:/bin" HOME="$out/home" \
                XDG_RUNTIME_DIR="$out/run" TMPDIR="$out/tmp" LANG=C.UTF-8 \
                timeout -k 5 240 bash -e "$out/page.sh" "$co" </dev/null
        echo "# $name: $((SECONDS - t0)) s for its blocks" >&3
        local at
        at=$(cat "$out/at" 2>/dev/null || echo "${torun[0]}")
        for idx in "${torun[@]}"; do
                IFS=$'\t' read -r line context what <"$blocks/$idx.meta"
                if [ "$at" = done ] || [ "$idx" -lt "$at" ]; then
                        echo "# $name block $idx (line $line): ran" >&3
                        RAN=$((RAN + 1))
                elif [ "$idx" -eq "$at" ]; then
                        if grep -q cgroup.not_delegated "$out/$idx.out" "$out/$idx.err"; then
                                echo "# $name block $idx (line $line): skipped: cgroups are not delegated to uid $(id -u)" >&3
                                SKIPPED=$((SKIPPED + 1))
                        else
                                FAILED+="$name block $idx (line $line, $context) failed ($status): $(cat "$out/$idx.out") // $(cat "$out/$idx.err")"$'\n'
                        fi
                else
                        echo "# $name block $idx (line $line): not reached" >&3
                        SKIPPED=$((SKIPPED + 1))
                fi
        done
}

@test "README: the gloved quickstart runs a managed session end to end as pasted" {
        dedicated_block "A session end to end" "$T/quickstart.sh"
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
        for w in "session s1: created" "session s1: preparing" "accepted 5 bytes" "got:hello" "got:quit" "status 7" "ok:"; do
                [[ "$output" == *"$w"* ]] || fail "the quickstart's output lacks '$w': $output // $stderr"
        done
}

@test "README: the Operate it block (setup, doctor, policy, daemon) runs as pasted" {
        [ -n "${GLOVE_NODE_MODULES:-}" ] || skip "tests/node_modules is not installed (scripts/deps.sh): the block stages the npm codex package"
        dedicated_block "## Operate it" "$T/operate.sh"
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

@test "README: every shell block runs as pasted on a fresh checkout (blocks marked not-run excepted)" {
        local readme="$BATS_TEST_DIRNAME/README.md"
        [ -f "$readme" ] || fail "README.md was not copied next to the suite"
        local counts
        counts=$("$PY" "$LIB/shell_blocks.py" "${DEDICATED_ARGS[@]}" "$T/blocks" "$readme") ||
                fail "the README's shell blocks cannot be read"
        run_page_blocks README.md "$T/blocks/README.md" "${counts#README.md }"
        [ -z "$FAILED" ] || fail "$FAILED"
        echo "# README: $RAN blocks ran, $SKIPPED skipped, $NOTRUN not run by marker" >&3
        [ "$RAN" -ge 2 ] || fail "only $RAN README blocks ran"
        # What the quickstarts' agents leave behind.
        grep -q "done: Count the Python files" "$T/pages/README.md/tmp/out/answer.txt" || fail "examples/agent.py wrote no answer"
}

@test "docs: every page's shell blocks run as pasted on a fresh checkout (blocks marked not-run excepted)" {
        [ -d "$BATS_TEST_DIRNAME/docs" ] || fail "docs/ was not copied next to the suite"
        # Every page at once (one python), then the pages with blocks.
        local counts=() page name n failed="" pages=0 ran=0 notrun=0 skipped=0
        mapfile -t counts < <("$PY" "$LIB/shell_blocks.py" "$T/blocks" "$BATS_TEST_DIRNAME"/docs/*.md ||
                echo "the docs pages' shell blocks cannot be read")
        for page in "${counts[@]}"; do
                name=${page% *} n=${page##* }
                [[ "$n" =~ ^[0-9]+$ ]] || fail "$page"
                pages=$((pages + 1))
                [ "$n" -gt 0 ] || continue
                run_page_blocks "$name" "$T/blocks/$name" "$n" </dev/null
                failed+=$FAILED
                ran=$((ran + RAN)) notrun=$((notrun + NOTRUN)) skipped=$((skipped + SKIPPED))
        done
        [ "$pages" -ge 10 ] || fail "only $pages pages found under docs/"
        echo "# docs: $pages pages, $ran blocks ran, $skipped skipped, $notrun not run by marker" >&3
        [ -z "$failed" ] || fail "$failed"
        [ "$ran" -ge 5 ] || fail "only $ran docs blocks ran"
}

@test "docs: the block runner can fail: a failing block, a misplaced marker and a third not-run marker are reported" {
        mkdir -p "$T/fake"
        printf '%s\n' '# Fake' '```sh' 'X=1' '```' '## Second' '```console' '$ [ "$X" = 1 ] && false' 'output' '```' \
                '```sh' 'echo never' '```' >"$T/fake/fake.md"
        "$PY" "$LIB/shell_blocks.py" "$T/blocks" "$T/fake/fake.md" >"$T/counts"
        [ "$(cat "$T/counts")" = "fake.md 3" ] || fail "blocks: $(cat "$T/counts")"
        run_page_blocks fake.md "$T/blocks/fake.md" 3 3>/dev/null
        [ "$RAN" -eq 1 ] && [ "$SKIPPED" -eq 1 ] || fail "ran $RAN, skipped $SKIPPED"
        [[ "$FAILED" == "fake.md block 2 (line 6, ## Second) failed"* ]] || fail "the failing block was not reported: $FAILED"
        printf '%s\n' '<!-- not-run: a reason -->' 'text' '```sh' 'true' '```' >"$T/fake/misplaced.md"
        run "$PY" "$LIB/shell_blocks.py" "$T/blocks2" "$T/fake/misplaced.md"
        [ "$status" -eq 1 ] && [[ "$output" == *"misplaced.md line 1: a not-run marker must be on the line right before"* ]] ||
                fail "a misplaced marker was not refused: $output"
        printf '<!-- not-run: r -->\n```sh\ntrue\n```\n%.0s' 1 2 3 >"$T/fake/three.md"
        run "$PY" "$LIB/shell_blocks.py" "$T/blocks3" "$T/fake/three.md"
        [ "$status" -eq 1 ] && [[ "$output" == *"three.md line 9: more than 2 blocks are marked not-run"* ]] ||
                fail "a third not-run marker was not refused: $output"
}
