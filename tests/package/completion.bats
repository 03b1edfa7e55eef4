#!/usr/bin/env bats
# Bash and zsh completion: bash-completion loads completions/glove.bash by
# its installed name and completes commands, options (exactly those --help
# lists) and values; zsh's compinit picks up _glove for glove and gloved, and
# _glove names every option --help lists.

load helpers

BASH_COMPLETION=/usr/share/bash-completion/bash_completion

setup() {
        [ -f "$BASH_COMPLETION" ] || skip "bash-completion is not installed (scripts/deps.sh installs it)"
        # The installed layout: bash-completion looks in
        # $XDG_DATA_HOME/bash-completion/completions/COMMAND.
        export XDG_DATA_HOME=$BATS_TEST_TMPDIR/share
        mkdir -p "$XDG_DATA_HOME/bash-completion/completions"
        cp "$GLOVE_SRC/completions/glove.bash" "$XDG_DATA_HOME/bash-completion/completions/glove"
        ln -s glove "$XDG_DATA_HOME/bash-completion/completions/gloved"
}

# complete_words WORD...: what bash completes for the last WORD (the
# command line typed so far), one candidate a line, sorted.
complete_words() {
        bash --norc --noprofile -c '
                source "$1"; shift
                __load_completion "$1" || { echo "bash-completion did not load a completion for $1" >&2; exit 1; }
                fn=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\).*/\1/p")
                [ -n "$fn" ] || { echo "no completion function for $1" >&2; exit 1; }
                COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
                COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                printf "%s\n" "${COMPREPLY[@]}"' _ "$BASH_COMPLETION" "$@" | sort -u
}

# help_options ARGS...: the long options of `ARGS --help`.
help_options() {
        local bin=$GLOVE_BUILD/$1
        shift
        "$bin" "$@" --help | options_of
}

@test "bash: glove e completes to exec; glove d to daemon and doctor" {
        run complete_words glove e
        [ "$status" -eq 0 ] && [ "$output" = exec ] || fail "glove e -> '$output'"
        run complete_words glove d
        [ "$output" = "$(printf 'daemon\ndoctor')" ] || fail "glove d -> '$output'"
}

@test "bash: glove exec -- completes exactly the options of glove exec --help (and --)" {
        run complete_words glove exec --
        [ "$status" -eq 0 ] || fail "$output"
        diff <(printf '%s\n' "$output" | grep -vx -- --) <(help_options glove exec) ||
                fail "the completed options differ from glove exec --help"
        printf '%s\n' "$output" | grep -qx -- -- || fail "-- is not offered"
}

@test "bash: glove run, glove ctl and gloved options match their --help" {
        diff <(complete_words glove run -- | grep -vx -- --) <(help_options glove run) ||
                fail "glove run: completion differs from --help"
        # glove ctl: the global options, then each command's own.
        local ctl
        ctl=$( { complete_words glove ctl --; for c in plan create-session receipts receipts-ack attach write-stdin stop; do
                complete_words glove ctl "$c" --; done; } | sort -u)
        diff <(echo "$ctl") <(help_options glove ctl) || fail "glove ctl: completion differs from --help"
        diff <(complete_words gloved --) <(help_options gloved) || fail "gloved: completion differs from --help"
        local d
        d=$( { complete_words glove daemon install --; complete_words glove daemon status --; } | sort -u)
        diff <(echo "$d") <(help_options glove daemon) || fail "glove daemon: completion differs from --help"
}

# known COMMAND: glove knows COMMAND (setup, doctor and policy come from
# other parts of the tree); else the caller skips, saying so.
known() {
        ! "$GLOVE_BUILD/glove" "$1" --help 2>&1 | grep -q usage.unknown_command
}

@test "bash: glove setup, doctor and policy options match their --help" {
        local c checked=""
        for c in setup init doctor; do
                known "$c" || continue
                diff <(complete_words glove "$c" --) <(help_options glove "$c") ||
                        fail "glove $c: completion differs from --help"
                checked="$checked $c"
        done
        if known policy; then
                local comp help s
                comp=$(for s in detect stage generate explain validate; do complete_words glove policy "$s" --; done | sort -u)
                help=$( { help_options glove policy; for s in detect stage generate explain validate; do
                        "$GLOVE_BUILD/glove" policy "$s" --help 2>/dev/null | options_of; done; } | sort -u)
                diff <(echo "$comp") <(echo "$help") || fail "glove policy: completion differs from --help"
                checked="$checked policy"
        fi
        [ -n "$checked" ] || skip "glove setup, doctor and policy are not in this build yet"
}

@test "bash: subcommands and values" {
        run complete_words glove ctl rec
        [ "$output" = "$(printf 'receipts\nreceipts-ack')" ] || fail "glove ctl rec -> '$output'"
        run complete_words glove ctl --runtime-dir /tmp st
        [ "$output" = "$(printf 'start\nstop')" ] || fail "a value was taken for the command: '$output'"
        run complete_words glove daemon ins
        [ "$output" = install ] || fail "glove daemon ins -> '$output'"
        local v=$BATS_TEST_TMPDIR/values
        mkdir -p "$v/dir.d"
        : >"$v/file.f"
        run complete_words glove exec --workspace "$v/"
        [ "$output" = "$v/dir.d" ] || fail "--workspace offers more than directories: '$output'"
        run complete_words glove exec --read "$v/f"
        [ "$output" = "$v/file.f" ] || fail "--read -> '$output'"
        # After --, the contained program: a command name.
        run complete_words glove exec --read /usr -- tru
        printf '%s\n' "$output" | grep -qx true || fail "glove exec -- tru -> '$output'"
}

@test "zsh: compinit binds _glove to glove and gloved, and _glove names every option of --help" {
        command -v zsh >/dev/null || skip "zsh is not installed (scripts/deps.sh installs it)"
        zsh -n "$GLOVE_SRC/completions/_glove" || fail "_glove is not valid zsh"
        mkdir -p "$BATS_TEST_TMPDIR/zfunc"
        cp "$GLOVE_SRC/completions/_glove" "$BATS_TEST_TMPDIR/zfunc/"
        run zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$2"; print -r -- "$_comps[glove] $_comps[gloved]"' \
                _ "$BATS_TEST_TMPDIR/zfunc" "$BATS_TEST_TMPDIR/zcompdump"
        [ "$output" = "_glove _glove" ] || fail "compinit: '$output'"
        local missing="" o
        for args in "" exec run ctl daemon setup init doctor policy; do
                # shellcheck disable=SC2086
                for o in $(help_options glove $args); do
                        [ "$args" = run ] && [ "$o" = --tty ] && continue
                        grep -qF -- "$o[" "$GLOVE_SRC/completions/_glove" || missing="$missing glove $args $o;"
                done
        done
        for o in $(help_options gloved); do
                grep -qF -- "$o[" "$GLOVE_SRC/completions/_glove" || missing="$missing gloved $o;"
        done
        [ -z "$missing" ] || fail "not in _glove:$missing"
}
