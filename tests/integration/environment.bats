#!/usr/bin/env bats
# Environment: the agent gets exactly the specified variables, plus the ones
# named with --env; nothing of glove's own environment leaks, not even
# through /proc of the sandbox's init.

load helpers

# genv VAR=VALUE... -- GLOVE-EXEC-ARGS: run glove with exactly this environment.
genv() {
        local vars=()
        while [ "$1" != -- ]; do vars+=("$1"); shift; done
        shift
        run --separate-stderr env -i "${vars[@]}" timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "$@"
}

# Variables glove's own process may legitimately need (sanitizer options).
san_env() {
        [ -n "${ASAN_OPTIONS:-}" ] && echo "ASAN_OPTIONS=$ASAN_OPTIONS"
        [ -n "${UBSAN_OPTIONS:-}" ] && echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"
        return 0
}

@test "environment: exactly PATH HOME TMPDIR TERM LANG GLOVE_SANDBOXED" {
        mapfile -t extra < <(san_env)
        genv "${extra[@]}" PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/somewhere/else TMPDIR=/var/tmp \
                TERM=xterm-256color LANG=de_DE.UTF-8 LC_ALL=C SECRET_TOKEN=hunter2-env \
                LD_LIBRARY_PATH=/nonexistent PYTHONPATH=/nonexistent NODE_OPTIONS=--no-warnings \
                BASH_ENV=/nonexistent SSH_AUTH_SOCK=/tmp/agent.sock -- /usr/bin/env
        expect_status 0
        local sorted
        sorted=$(sort <<<"$output")
        [ "$sorted" = "$(printf '%s\n' GLOVE_SANDBOXED=1 HOME=/home/agent LANG=de_DE.UTF-8 \
                PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color TMPDIR=/tmp | sort)" ] ||
                fail "environment is not exactly the specified set"
}

@test "environment: LANG defaults to C.UTF-8 and TERM is absent when unset" {
        mapfile -t extra < <(san_env)
        genv "${extra[@]}" PATH=/usr/bin:/bin -- "$PY" -c 'import os; print(sorted(os.environ.items()))'
        expect_status 0
        expect_output "[('GLOVE_SANDBOXED', '1'), ('HOME', '/home/agent'), ('LANG', 'C.UTF-8'), ('PATH', '/usr/local/bin:/usr/bin:/bin'), ('TMPDIR', '/tmp')]"
}

@test "environment: a parent variable is invisible to the agent, also via /proc/1/environ and init's memory" {
        local secret=glove-parent-secret-$$-$RANDOM
        mapfile -t extra < <(san_env)
        # The secret reaches the probe on stdin only, never on a command line.
        run --separate-stderr env -i "${extra[@]}" PATH=/usr/bin:/bin GLOVE_IT_SECRET="$secret" API_KEY="$secret" \
                timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "${PROBE[@]}" leak-scan <<<"$secret"
        expect_status 0
        # init (pid 1) is visible and was examined.
        [[ "$output" == *"environ 1 "* ]] || fail "the probe did not examine pid 1"
        local l
        for l in "${lines[@]}"; do
                [[ "$l" == *" LEAK" ]] && fail "the parent's environment leaked: $l"
        done
        return 0
}

@test "environment: --env NAME copies the variable from glove's environment" {
        mapfile -t extra < <(san_env)
        genv "${extra[@]}" PATH=/usr/bin:/bin FOO='a b=c' EMPTY= OTHER=not-copied -- \
                --env FOO --env EMPTY -- "$PY" -c 'import os; print(repr(os.environ.get("FOO")), repr(os.environ.get("EMPTY")), repr(os.environ.get("OTHER")))'
        expect_status 0
        expect_output "'a b=c' '' None"
}

@test "environment: --env preserves a value with newlines and unicode" {
        local v=$'line1\nline2 \xc3\xa9\t$HOME'
        mapfile -t extra < <(san_env)
        genv "${extra[@]}" PATH=/usr/bin:/bin MULTI="$v" -- --env MULTI -- "$PY" -c 'import os,sys; sys.stdout.buffer.write(os.environb[b"MULTI"])'
        expect_status 0
        expect_output "$v"
}

# refused ARGS...: glove refuses (125, one error line) and the agent never ran.
refused() {
        local marker=$BATS_TEST_TMPDIR/ran w=$BATS_TEST_TMPDIR/w
        mkdir -p "$w"
        run --separate-stderr env -i PATH=/usr/bin:/bin SET=1 HOME=/x TMPDIR=/tmp TERM=dumb LANG=C GLOVE_X=1 GLOVE_SANDBOXED=0 \
                timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec --write "$w" "$@" -- /usr/bin/touch "$w/ran"
        expect_glove_error 125
        [ ! -e "$w/ran" ] || fail "the agent ran although glove refused"
}

@test "environment: --env NAME=VALUE is refused (125)" { refused --env SET=2; }
@test "environment: --env of an unset variable is refused (125)" { refused --env GLOVE_IT_UNSET_VARIABLE; }
@test "environment: --env with an empty name is refused (125)" { refused --env ''; }
@test "environment: --env PATH is refused (125)" { refused --env PATH; }
@test "environment: --env HOME is refused (125)" { refused --env HOME; }
@test "environment: --env TMPDIR is refused (125)" { refused --env TMPDIR; }
@test "environment: --env TERM is refused (125)" { refused --env TERM; }
@test "environment: --env LANG is refused (125)" { refused --env LANG; }
@test "environment: --env GLOVE_SANDBOXED is refused (125)" { refused --env GLOVE_SANDBOXED; }
@test "environment: --env GLOVE_anything is refused (125)" { refused --env GLOVE_X; }
