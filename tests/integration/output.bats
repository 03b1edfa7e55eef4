#!/usr/bin/env bats
# What happens to the agent's input and output at the edges (issue "One
# session engine"; found by the red team after the engine rewrite): end of
# Glove's input reaches an agent on a PTY; a failed write to Glove's stdout is
# never silent.

load helpers

@test "output: --tty with a pipe as stdin: the agent on its PTY reads the input, then end of file" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c 'printf "abc\n" | "$1" exec --tty -- /bin/cat' _ "$GLOVE"
        expect_status 0
        [[ "$output" == *abc* ]] || fail "the input did not reach the agent"
}

@test "output: --tty with a partial last line as stdin still ends the agent's input" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c 'printf "no newline" | "$1" exec --tty -- /bin/cat' _ "$GLOVE"
        expect_status 0
        [[ "$output" == *"no newline"* ]] || fail "the partial line did not reach the agent"
}

@test "output: --tty with /dev/null as stdin: the agent reads end of file at once" {
        run --separate-stderr timeout --foreground -k 5 20 "$GLOVE" exec --tty -- /bin/cat </dev/null
        expect_status 0
}

@test "output: a full stdout stops the agent with output.write (125), never a silent success" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c '"$1" exec -- /bin/sh -c "echo hello; sleep 30" >/dev/full' _ "$GLOVE"
        expect_glove_error 125
        [ "$(glove_error_code)" = output.write ] || fail "expected output.write, got: $stderr"
        [[ "$stderr" == *"No space left on device"* ]] || fail "the reason is missing: $stderr"
}

@test "output: stdout whose reader went away gives the agent SIGPIPE, as in a pipeline (141)" {
        run --separate-stderr timeout --foreground -k 5 20 bash -c '"$1" exec -- /usr/bin/yes | head -c 10 >/dev/null; echo "glove=${PIPESTATUS[0]}"' _ "$GLOVE"
        expect_status 0
        expect_line "glove=141"
}
