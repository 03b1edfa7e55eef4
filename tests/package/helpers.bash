# Helpers for tests/package/*.bats.

fail() {
        echo "FAIL: $*" >&2
        return 1
}

# options_of: the sorted, unique long options (--word) in standard input.
options_of() {
        grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u
}

# collect_help glove [COMMAND] | gloved: the --help text of the built
# command; for glove policy, also of each policy subcommand that has one.
# A command this glove does not know skips the test, saying so.
collect_help() {
        local bin=$GLOVE_BUILD/$1
        shift
        local out rc=0
        out=$("$bin" "$@" --help 2>&1) || rc=$?
        if [ "$rc" -ne 0 ]; then
                if [[ "$out" == *usage.unknown_command* ]]; then
                        skip "$(basename "$bin") $*: not in this build yet ($out)"
                fi
                fail "$(basename "$bin") $* --help exited $rc: $out"
                return 1
        fi
        printf '%s\n' "$out"
        if [ "${1:-}" = policy ]; then
                local sub
                for sub in detect stage generate explain validate; do
                        "$bin" policy "$sub" --help 2>/dev/null || true
                done
        fi
}
