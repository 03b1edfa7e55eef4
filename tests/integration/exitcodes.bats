#!/usr/bin/env bats
# Exit codes and the command line: the agent's own code, 128+N for a signal,
# 125 when glove fails (bad usage included), 126 not executable, 127 not
# found; every glove failure is one stderr line `glove: <stable.code>: <msg>`.

load helpers

setup() { T=$BATS_TEST_TMPDIR; }

@test "exit codes: the agent's exit code is glove's (0, 1, 42, 255)" {
        local c
        for c in 0 1 42 255; do
                gx -- /bin/sh -c "exit $c"
                expect_status "$c"
        done
}

@test "exit codes: an agent that kills itself with SIGTERM gives 143" {
        gx -- /bin/sh -c 'kill -TERM $$'
        expect_status 143
}

@test "exit codes: SIGKILL gives 137 and SIGSEGV gives 139" {
        gx -- /bin/sh -c 'kill -KILL $$'
        expect_status 137
        gx -- "$PY" -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'
        expect_status 139
}

@test "exit codes: a missing program gives 127 with one error line" {
        gx -127 -- /nonexistent/program
        expect_glove_error 127
        # A name that would act on the terminal is shown escaped, on one line.
        gx -127 -- $'/nonexistent/x\e]0;owned\a\n\\y'
        expect_glove_error 127
        [[ "$stderr" == *'/nonexistent/x\x1b]0;owned\x07\x0a\\y'* && "$stderr" != *$'\e'* ]] || fail "not escaped: $stderr"
}

@test "exit codes: a bare name is looked up in the sandbox's PATH, not the host's" {
        gx -- sh -c 'exit 5'
        expect_status 5
        gx -- python3 -c 'import sys; print(sys.executable)'
        expect_status 0
        expect_output /usr/bin/python3
        # A tool on glove's own PATH only (like a pyenv shim) is not found.
        mkd "$T/hostbin"
        printf '#!/bin/sh\necho host-tool\n' >"$T/hostbin/glove-host-only-tool"
        chmod +x "$T/hostbin/glove-host-only-tool"
        PATH="$T/hostbin:$PATH" gx -127 -- glove-host-only-tool
        expect_glove_error 127
        expect_no_text host-tool
}

@test "exit codes: a file without execute permission gives 126 with one error line" {
        mkd "$T/ws"
        printf '#!/bin/sh\necho should-not-run\n' >"$T/ws/script"
        chmod 0644 "$T/ws/script"
        gx --workspace "$T/ws" -- "$T/ws/script"
        expect_glove_error 126
        expect_no_text should-not-run
        # Positive control: made executable, it runs.
        chmod 0755 "$T/ws/script"
        gx --workspace "$T/ws" -- "$T/ws/script"
        expect_status 0
        expect_output should-not-run
}

@test "exit codes: a directory as the program gives 126" {
        gx -- /usr/bin
        expect_glove_error 126
}

@test "exit codes: a script with a missing interpreter gives 127 (execve: ENOENT), never runs" {
        mkd "$T/ws"
        printf '#!/nonexistent/interpreter\necho ran\n' >"$T/ws/script"
        chmod 0755 "$T/ws/script"
        gx -127 --workspace "$T/ws" -- "$T/ws/script"
        expect_glove_error 127
        expect_no_text ran
}

@test "usage: exec without a program is refused (125)" {
        gx
        expect_glove_error 125
        gx --read /usr --
        expect_glove_error 125
}

@test "usage: an unknown exec option is refused (125)" {
        gx --bogus-option -- /bin/true
        expect_glove_error 125
}

@test "usage: an option without its argument is refused (125)" {
        gx --workspace
        expect_glove_error 125
        gx --read
        expect_glove_error 125
        gx --audit-log
        expect_glove_error 125
}

@test "usage: an unknown command is refused (125)" {
        g no-such-command
        expect_glove_error 125
}

@test "usage: glove without a command is refused (125) with one error line" {
        g
        expect_glove_error 125
}

@test "cli: glove --version prints the version" {
        g --version
        expect_status 0
        [[ "$output" =~ ^glove\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "expected 'glove X.Y.Z'"
}

@test "cli: glove --help and glove exec --help describe the command and its options" {
        g --help
        expect_status 0
        [[ "$output" == *exec* ]] || fail "glove --help must list exec"
        g exec --help
        expect_status 0
        local opt
        for opt in --workspace --read --write --env --audit-log; do
                [[ "$output" == *"$opt"* ]] || fail "glove exec --help must document $opt"
        done
}
