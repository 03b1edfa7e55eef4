#!/usr/bin/env bats
# The man pages (man/*.scd) and each command's --help name the same long
# options, so neither can drift from the other. A command this glove does
# not know yet is skipped with the reason printed.

load helpers

# page_check PAGE HELP-COMMAND...: every --option of the help output is in
# the page and every --option of the page is in the help output (or in
# the page's list of words that are not its options, in $EXTRA).
page_check() {
        local page=$1
        shift
        local src=$GLOVE_SRC/man/$page.scd
        [ -f "$src" ] || fail "$src is missing"
        [ -f "$GLOVE_BUILD/man/$page" ] || fail "$GLOVE_BUILD/man/$page was not built"
        local help
        collect_help "$@" >"$BATS_TEST_TMPDIR/help" || return 1
        help=$(cat "$BATS_TEST_TMPDIR/help")
        local in_help in_page
        in_help=$(options_of <<<"$help")
        in_page=$(options_of <"$src" | grep -vxF -f <(printf '%s\n' ${EXTRA:-} '') || true)
        local missing extra
        missing=$(comm -23 <(echo "$in_help") <(echo "$in_page"))
        extra=$(comm -13 <(echo "$in_help") <(echo "$in_page"))
        [ -z "$missing" ] || fail "$page: in --help but not in the man page: $(echo $missing)"
        [ -z "$extra" ] || fail "$page: in the man page but not in --help: $(echo $extra)"
        [ -n "$in_help" ] || fail "$page: no options found at all"
}

@test "man: glove(1) matches glove --help" {
        page_check glove.1 glove
}

@test "man: glove-exec(1) matches glove exec --help" {
        page_check glove-exec.1 glove exec
}

@test "man: glove-run(1) matches glove run --help" {
        page_check glove-run.1 glove run
}

@test "man: glove-ctl(1) matches glove ctl --help" {
        page_check glove-ctl.1 glove ctl
}

@test "man: glove-daemon(1) matches glove daemon --help" {
        EXTRA="--user --now" page_check glove-daemon.1 glove daemon
}

@test "man: glove-setup(1) matches glove setup --help" {
        page_check glove-setup.1 glove setup
}

@test "man: glove-doctor(1) matches glove doctor --help" {
        page_check glove-doctor.1 glove doctor
}

@test "man: glove-policy(1) matches glove policy [COMMAND] --help" {
        page_check glove-policy.1 glove policy
}

@test "man: gloved(8) matches gloved --help" {
        page_check gloved.8 gloved
}

@test "man: the check can fail: an option missing from a page is found" {
        local help
        help=$("$GLOVE_BUILD/glove" exec --help)
        in_page=$(options_of <"$GLOVE_SRC/man/glove-exec.1.scd" | grep -vx -- --tty)
        missing=$(comm -23 <(options_of <<<"$help") <(echo "$in_page"))
        [ "$missing" = --tty ] || fail "a removed --tty was not noticed: '$missing'"
}
