#!/usr/bin/env bats
# make install DESTDIR=... PREFIX=/usr puts the binaries, man pages,
# completions and unit templates where a distribution expects them; the
# installed glove runs a contained program and finds the installed gloved
# next to itself; make uninstall removes every file install wrote.

load helpers

@test "install: make install DESTDIR PREFIX=/usr, the installed glove exec works, make uninstall removes it all" {
        local dest=$BATS_TEST_TMPDIR/dest
        run make -C "$GLOVE_SRC" install BUILD="$GLOVE_BUILD" DESTDIR="$dest" PREFIX=/usr
        [ "$status" -eq 0 ] || { echo "$output" >&2; fail "make install failed"; }
        local f
        for f in bin/glove bin/gloved bin/glove-remote-executor libexec/glove/glove-keeper libexec/glove/glove-mcp-stdio \
                share/man/man1/glove.1 share/man/man1/glove-exec.1 share/man/man1/glove-run.1 \
                share/man/man1/glove-ctl.1 share/man/man1/glove-setup.1 share/man/man1/glove-daemon.1 \
                share/man/man1/glove-doctor.1 share/man/man1/glove-policy.1 share/man/man8/gloved.8 \
                share/bash-completion/completions/glove share/zsh/site-functions/_glove \
                share/glove/systemd/gloved.service.in share/glove/systemd/gloved.socket.in; do
                [ -f "$dest/usr/$f" ] || fail "$dest/usr/$f was not installed"
        done
        # gloved finds glove-keeper in its ../libexec/glove (keeper.h).
        [ -x "$dest/usr/bin/../libexec/glove/glove-keeper" ] || fail "glove-keeper is not where gloved looks"
        # Nothing a test or benchmark needs is installed.
        [ ! -e "$dest/usr/bin/glove-bench-pty-read" ] || fail "a benchmark helper was installed"
        [ -z "$(find "$dest" -name 'glove-crashpoint*')" ] || fail "the crash-point shim was installed"
        # The pages render.
        MANWIDTH=80 man -l "$dest/usr/share/man/man1/glove-daemon.1" 2>/dev/null | grep -q "DelegateSubgroup=glove-host" ||
                fail "glove-daemon(1) does not render"
        # The installed glove needs nothing else at run time.
        run "$dest/usr/bin/glove" exec -- /bin/true
        [ "$status" -eq 0 ] || fail "the installed glove exec -- /bin/true exited $status: $output"
        run "$dest/usr/bin/glove" exec -- /bin/sh -c 'exit 7'
        [ "$status" -eq 7 ] || fail "the installed glove exec did not pass the exit status: $status"
        # glove daemon resolves the gloved next to the installed glove.
        export XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/config XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
        export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
        mkdir -p -m 0700 "$XDG_CONFIG_HOME/glove"
        : >"$XDG_CONFIG_HOME/glove/session-policy.json"
        run "$dest/usr/bin/glove" daemon install --write-only
        [ "$status" -eq 0 ] || fail "glove daemon install: $output"
        grep -q "^ExecStart=$dest/usr/bin/gloved " "$XDG_CONFIG_HOME/systemd/user/gloved.service" ||
                fail "the unit does not run the installed gloved"
        # The unit text equals the installed template filled in.
        python3 - "$dest/usr/share/glove/systemd/gloved.service.in" "$XDG_CONFIG_HOME/systemd/user/gloved.service" <<'PYEOF' ||
import re, sys
tmpl, unit = open(sys.argv[1]).read(), open(sys.argv[2]).read()
pattern = ".+?".join(re.escape(part) for part in re.split(r"@[A-Z_]+@", tmpl))
sys.exit(0 if re.fullmatch(pattern, unit, re.S) else 1)
PYEOF
                fail "the unit is not the installed template filled in"

        run make -C "$GLOVE_SRC" uninstall BUILD="$GLOVE_BUILD"
        [ "$status" -eq 0 ] || { echo "$output" >&2; fail "make uninstall failed"; }
        local left
        left=$(find "$dest" ! -type d 2>/dev/null || true)
        [ -z "$left" ] || fail "make uninstall left: $left"
}
