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

@test "man: glove-init(1) matches glove init --help" {
        EXTRA="--path-exposure-policy --path-exposure-journal --path-root" page_check glove-init.1 glove init
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

# markup_left PAGE: the lines of the built page (scdoc's troff) where scdoc
# left its markup as text or misread it: a placeholder still written
# _WORD_ or *WORD* (scdoc takes _ and * only at a word's edge: 128+_N_), or
# an underlined or bold run that starts or ends with a space (an underscore
# inside a word, _N_ms, opens a run that a later one closes).
markup_left() {
        grep -nE '\\f[IB][^\\]*[[:space:]]\\fR|\\f[IB][[:space:]]|(^|[^[:alnum:]\\])[_*][A-Z][A-Z0-9]*[_*]($|[^[:alnum:]])' "$1" || true
}

@test "man: every page renders without scdoc markup left over and has EXIT STATUS; gloved(8) has FILES and LOGS" {
        local src page name left pages=0
        for src in "$GLOVE_SRC"/man/*.scd; do
                name=$(basename "$src" .scd)
                page=$GLOVE_BUILD/man/$name
                [ -f "$page" ] || fail "$page was not built"
                left=$(markup_left "$page")
                [ -z "$left" ] || fail "$name: scdoc markup left in the page (man/$name.scd): $left"
                grep -qx '\.SH EXIT STATUS' "$page" || fail "$name: no EXIT STATUS section"
                pages=$((pages + 1))
        done
        [ "$pages" -ge 9 ] || fail "only $pages man pages"
        grep -qx '\.SH FILES' "$GLOVE_BUILD/man/gloved.8" || fail "gloved.8: no FILES section"
        grep -qx '\.SH LOGS' "$GLOVE_BUILD/man/gloved.8" || fail "gloved.8: no LOGS section"
}

# scdoc_page: a page of scdoc text from stdin (a DESCRIPTION), as troff.
scdoc_page() {
        { printf 'p(1)\n\n# NAME\n\np - a test page\n\n# DESCRIPTION\n\n'; cat; } | scdoc
}

@test "man: the markup check can fail: 128+_N_ and _N_ms are found" {
        printf '%s\n' 'a (128+_N_ for signal _N_)' 'b (_N_ms, _N_s or seconds)' 'c _N_ and *--pids* _N_' |
                scdoc_page >"$BATS_TEST_TMPDIR/p.1"
        run markup_left "$BATS_TEST_TMPDIR/p.1"
        [[ "$output" == *"128+_N_"* ]] || fail "128+_N_ not found: $output"
        [[ "$output" == *'\fIN_ms, \fR'* ]] || fail "_N_ms not found: $output"
        [[ "$output" != *"c "* ]] || fail "a well-formed line was taken for markup: $output"
}
