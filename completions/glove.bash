# bash completion for glove(1) and gloved(8).        -*- shell-script -*-
# Installed as PREFIX/share/bash-completion/completions/glove (and loaded for
# gloved through the `complete` line at the end when sourced directly).

_glove_opts_exec='--workspace --read --write --env --audit-log --home-from --cpu-time --memory --pids --nofile --unsafe-write-system-dir --wall-time --disk --output-limit --status-json --tty --egress-allow --egress-allow-private --unix-sockets --help'
_glove_opts_run='--upstream --upstream-env --upstream-optional --allow --deny --allow-arg --allow-prompt --deny-prompt --allow-prompt-arg --allow-resource --deny-resource --upstream-own-names --policy --call-timeout --max-frame --audit-arguments --workspace --read --write --env --audit-log --home-from --cpu-time --memory --pids --nofile --unsafe-write-system-dir --wall-time --disk --output-limit --status-json --egress-allow --egress-allow-private --unix-sockets --help --upstream-allow --upstream-ro --upstream-rw --upstream-egress --upstream-uncontained --upstream-limit --mcp-endpoint --mcp-port --tty'
_glove_opts_ctl='--runtime-dir --json --timeout-ms --help'
_glove_ctl_commands='capabilities plan validate-plan create-session session-status receipts receipts-ack start attach write-stdin resize signal stop cleanup changes guest-queue sessions exposures'
_glove_daemon_commands='install uninstall start stop status'
_glove_policy_commands='detect stage generate explain validate'
_glove_opts_gloved='--runtime-dir --state-dir --session-policy --session-store --materialization-root --library-bundle-root --path-exposure-policy --path-exposure-journal --remote-backend --local-services --receipt-anchor --client-timeout-ms --idle-timeout-ms --max-connections --compact-records --log-level --help --version'

# _glove_value_kind OPTION: "dir", "file" or "word" for an option that takes
# a value, nothing for a flag.
_glove_value_kind() {
        case $1 in
        --workspace | --home-from | --runtime-dir | --state-dir | --materialization-root | --library-bundle-root | --search-path | --directory | --path-root) echo dir ;;
        --read | --write | --audit-log | --status-json | --policy | --session-policy | --session-store | --path-exposure-policy | --path-exposure-journal | --remote-backend | --local-services | --plan | --source | --executable | --read-only | --file) echo file ;;
        --env | --upstream-optional | --cpu-time | --memory | --pids | --nofile | --wall-time | --disk | --output-limit | --egress-allow | --egress-allow-private | --upstream | --upstream-env | --allow | --deny | --allow-arg | --allow-prompt | --deny-prompt | --allow-prompt-arg | --allow-resource | --deny-resource | --upstream-own-names | --call-timeout | --max-frame | --timeout-ms | --receipt-anchor | --client-timeout-ms | --idle-timeout-ms | --max-connections | --compact-records | --log-level | --session-id | --idempotency-key | --controller-digest | --after | --limit | --sequence | --head-mac | --data | --grace | --runtime | --template-id | --arg | --alias | --destination | --template | --profile | --egress | --tool-policy | --expires-in | --upstream-allow | --upstream-ro | --upstream-rw | --upstream-egress | --upstream-uncontained | --upstream-limit | --mcp-endpoint | --mcp-port | --label | --ttl | --mode | --revoke) echo word ;;
        esac
}

_glove_sub_opts() { # COMMAND SUBCOMMAND
        case $1:$2 in
        ctl:plan) echo '--template --profile --egress --tool-policy --expires-in --policy' ;;
        ctl:create-session) echo '--session-id --idempotency-key --controller-digest --plan' ;;
        ctl:receipts) echo '--after --limit' ;;
        ctl:receipts-ack) echo '--sequence --head-mac' ;;
        ctl:attach) echo '--no-stdin' ;;
        ctl:write-stdin) echo '--data' ;;
        ctl:stop) echo '--grace' ;;
        daemon:install) echo '--socket --write-only --help' ;;
        daemon:status) echo '--json --help' ;;
        daemon:*) echo '--help' ;;
        policy:detect) echo '--search-path --json --help' ;;
        policy:stage) echo '--runtime --source --directory --dry-run --yes --json --help' ;;
        policy:generate) echo '--runtime --executable --search-path --template-id --arg --env --read-only --alias --destination --policy --help' ;;
        policy:explain) echo '--file --json --help' ;;
        policy:validate) echo '--file --help' ;;
        esac
}

_glove() {
        local cur prev cmd sub i w kind
        COMPREPLY=()
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        if [ "$COMP_CWORD" -eq 1 ]; then
                COMPREPLY=($(compgen -W 'exec run ctl setup init daemon doctor policy --help --version' -- "$cur"))
                return
        fi
        cmd=${COMP_WORDS[1]}
        # After "--" in exec/run: the contained program and its arguments.
        for ((i = 2; i < COMP_CWORD; i++)); do
                if [ "${COMP_WORDS[i]}" = -- ] && { [ "$cmd" = exec ] || [ "$cmd" = run ]; }; then
                        if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
                                COMPREPLY=($(compgen -c -- "$cur"))
                        else
                                COMPREPLY=($(compgen -f -- "$cur"))
                        fi
                        return
                fi
        done
        kind=$(_glove_value_kind "$prev")
        # glove policy generate --policy is a flag (glove run's takes a file).
        [ "$cmd" = policy ] && [ "$prev" = --policy ] && kind=
        case $kind in
        dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        word) return ;;
        esac
        # The subcommand of ctl, daemon and policy: the first word that is
        # neither an option nor an option's value.
        sub=
        for ((i = 2; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                case $w in
                -*) ;;
                *) [ -z "$(_glove_value_kind "${COMP_WORDS[i - 1]}")" ] && { sub=$w; break; } ;;
                esac
        done
        case $cmd in
        exec) COMPREPLY=($(compgen -W "$_glove_opts_exec --" -- "$cur")) ;;
        run) COMPREPLY=($(compgen -W "$_glove_opts_run --" -- "$cur")) ;;
        setup) COMPREPLY=($(compgen -W '--path-root --json --help' -- "$cur")) ;;
        init)
                COMPREPLY=($(compgen -W '--label --ttl --mode --runtime --runtime-dir --list --revoke --json --help' -- "$cur"))
                [[ $cur != -* ]] && COMPREPLY=($(compgen -d -- "$cur"))
                ;;
        doctor) COMPREPLY=($(compgen -W '--json --help' -- "$cur")) ;;
        ctl)
                if [ -z "$sub" ]; then
                        COMPREPLY=($(compgen -W "$_glove_ctl_commands $_glove_opts_ctl" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_glove_sub_opts ctl "$sub")" -- "$cur"))
                        [ "$sub" = validate-plan ] && [[ $cur != -* ]] && COMPREPLY=($(compgen -f -- "$cur"))
                fi
                ;;
        daemon | policy)
                if [ -z "$sub" ]; then
                        local cmds=_glove_${cmd}_commands
                        COMPREPLY=($(compgen -W "${!cmds} --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_glove_sub_opts "$cmd" "$sub")" -- "$cur"))
                fi
                ;;
        esac
}

_gloved() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        case $(_glove_value_kind "$prev") in
        dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        word) COMPREPLY=(); return ;;
        esac
        COMPREPLY=($(compgen -W "$_glove_opts_gloved" -- "$cur"))
}

complete -F _glove glove
complete -F _gloved gloved
