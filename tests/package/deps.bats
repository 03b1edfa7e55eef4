#!/usr/bin/env bats
# What make installs: the build targets (make, make build, make asan, make
# install) need only the Debian build packages and never run npm; the test
# targets install the npm test peers with --ignore-scripts and run only the
# install scripts scripts/deps.sh names. Runs on a copy of the Makefile and
# scripts/deps.sh (no node_modules, so the old deps.sh would have run npm ci),
# with fake npm, dpkg-query, apt-get, meson and ninja on PATH that record
# their arguments: nothing is installed or built.

load helpers

setup() {
        src=$BATS_TEST_TMPDIR/src
        fake=$BATS_TEST_TMPDIR/bin
        calls=$BATS_TEST_TMPDIR/calls
        mkdir -p "$src/scripts" "$src/tests" "$fake"
        cp "$GLOVE_SRC/Makefile" "$src/"
        cp "$GLOVE_SRC/scripts/deps.sh" "$src/scripts/"
        cp "$GLOVE_SRC/tests/package.json" "$GLOVE_SRC/tests/package-lock.json" "$src/tests/"
        local tool
        for tool in npm apt-get meson ninja; do
                printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$tool" "$calls" >"$fake/$tool"
        done
        # The fake npm ci makes node_modules as the real one does.
        cat >>"$fake/npm" <<'EOF'
if [ "$1" = ci ]; then mkdir -p node_modules && : >node_modules/.package-lock.json; fi
EOF
        # Every Debian package is installed.
        cat >"$fake/dpkg-query" <<'EOF'
#!/bin/sh
for p; do case "$p" in -*) ;; *) printf '%s\tinstall ok installed\n' "$p" ;; esac; done
EOF
        chmod +x "$fake"/*
        : >"$calls"
}

@test "deps: make build, make asan and make install run neither npm nor the test packages' install" {
        run env PATH="$fake:$PATH" make -C "$src" --no-print-directory build asan install \
                BUILD="$BATS_TEST_TMPDIR/b" ASAN_BUILD="$BATS_TEST_TMPDIR/a" DESTDIR="$BATS_TEST_TMPDIR/d"
        [ "$status" -eq 0 ] || fail "make build asan install (fake meson and ninja) exited $status: $output"
        grep -q '^meson setup' "$calls" || fail "the fake meson was not used: $(cat "$calls")"
        if grep -q '^npm' "$calls"; then fail "a build target ran npm: $(grep '^npm' "$calls")"; fi
        [ ! -e "$src/tests/node_modules" ] || fail "a build target made tests/node_modules"
        grep -q '^apt-get' "$calls" && fail "apt-get ran with every package installed: $(cat "$calls")"
        # Without dpkg's answer the build packages are what is missing, and
        # no test package is among them.
        printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"
        run env PATH="$fake:$PATH" "$src/scripts/deps.sh" build
        local wanted
        wanted=$(printf '%s\n' "$output" | sed -n 's/^deps.sh: installing //p' | tr ' ' '\n')
        echo "$wanted" | grep -qx build-essential || fail "deps.sh build did not name the build packages: $output"
        echo "$wanted" | grep -qx scdoc || fail "deps.sh build did not name scdoc: $output"
        local p
        for p in bats nodejs npm parallel bubblewrap; do
                if echo "$wanted" | grep -qx "$p"; then fail "deps.sh build wants the test package $p: $output"; fi
        done
}

@test "deps: make test-deps runs npm ci --ignore-scripts, then only the named packages' scripts, and only when the lockfile is newer" {
        run env PATH="$fake:$PATH" make -C "$src" --no-print-directory test-deps
        [ "$status" -eq 0 ] || fail "make test-deps exited $status: $output"
        local npm_calls
        npm_calls=$(grep '^npm' "$calls")
        [ "$(echo "$npm_calls" | sed -n 1p)" = "npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error" ] ||
                fail "npm ci was not the first call, with --ignore-scripts: $npm_calls"
        [ "$(echo "$npm_calls" | sed -n 2p)" = "npm rebuild --prefer-offline --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code opencode-ai node" ] ||
                fail "npm rebuild did not run the three named packages' scripts: $npm_calls"
        [ "$(echo "$npm_calls" | wc -l)" -eq 2 ] || fail "npm ran more than twice: $npm_calls"
        # node_modules is now newer than the lockfile: nothing to do.
        : >"$calls"
        run env PATH="$fake:$PATH" "$src/scripts/deps.sh" test
        [ "$status" -eq 0 ] || fail "deps.sh test exited $status: $output"
        if grep -q '^npm' "$calls"; then fail "npm ran with node_modules up to date: $(cat "$calls")"; fi
        # A lockfile newer than node_modules is installed again.
        touch -d '+1 minute' "$src/tests/package-lock.json"
        run env PATH="$fake:$PATH" "$src/scripts/deps.sh" test
        [ "$status" -eq 0 ] || fail "deps.sh test exited $status: $output"
        grep -q '^npm ci --ignore-scripts' "$calls" || fail "a newer lockfile was not installed: $(cat "$calls")"
}

@test "deps: a failed npm rebuild leaves node_modules stale, so the next run installs again" {
        cat >>"$fake/npm" <<'EOF'
[ "$1" = rebuild ] && exit 1
exit 0
EOF
        run env PATH="$fake:$PATH" "$src/scripts/deps.sh" test
        [ "$status" -ne 0 ] || fail "deps.sh test succeeded although npm rebuild failed"
        [ ! -e "$src/tests/node_modules/.package-lock.json" ] ||
                fail "node_modules/.package-lock.json was left behind: the next run would skip npm"
}
