#!/usr/bin/env bats
# --home-from DIR: the private HOME starts as a copy of DIR (issue 14). The
# copy is the agent's to change and is never written back; symbolic links
# in DIR are skipped (never followed: what they point at stays invisible);
# hard links become separate files; FIFOs, sockets and devices are skipped;
# the copy is bounded by --disk, the private HOME's size.

load helpers
load lib/mcp

setup() {
        SEED=$BATS_TEST_TMPDIR/seed
        mkdir -p "$SEED/.config/tool"
        echo "first-run state" >"$SEED/.config/tool/state.json"
        chmod 0600 "$SEED/.config/tool/state.json"
        echo "trusted" >"$SEED/.trust"
        # Readable by the agent in both modes (the invoker's own files).
        chmod -R go-w "$SEED"
}

@test "home-from: a file of DIR is readable and writable inside, owned by the agent; nothing is written back" {
        gx --home-from "$SEED" -- /bin/sh -c '
                cat "$HOME/.config/tool/state.json"
                stat -c "%u:%g %a" "$HOME/.config/tool/state.json"
                echo "changed inside" >"$HOME/.config/tool/state.json" && cat "$HOME/.config/tool/state.json"
                echo "new inside" >"$HOME/new.txt"
                rm "$HOME/.trust"
                cd && pwd'
        expect_status 0
        expect_line "first-run state"
        expect_line "$(inside_uid):$(inside_gid) 600"
        expect_line "changed inside"
        expect_line "/home/agent"
        # Never written back.
        [ "$(cat "$SEED/.config/tool/state.json")" = "first-run state" ] || fail "a change inside reached DIR"
        [ -e "$SEED/.trust" ] || fail "a removal inside reached DIR"
        [ ! -e "$SEED/new.txt" ] || fail "a new file inside reached DIR"
        # A second run starts from DIR again.
        gx --home-from "$SEED" -- /bin/cat /home/agent/.config/tool/state.json
        expect_status 0
        expect_output "first-run state"
}

@test "home-from: a symbolic link in DIR is not followed (its target's content stays invisible); hard links are separate files; FIFOs are skipped" {
        local secret=$BATS_TEST_TMPDIR/outside/secret.txt
        mkdir -p "${secret%/*}"
        echo "host secret 7f3a" >"$secret"
        ln -s "$secret" "$SEED/link-out"
        ln -s "${secret%/*}" "$SEED/dir-link"
        ln "$SEED/.trust" "$SEED/hard"
        mkfifo "$SEED/fifo"
        gx --home-from "$SEED" -- /bin/sh -c '
                cat "$HOME/link-out" "$HOME/dir-link/secret.txt" 2>/dev/null
                for f in link-out dir-link fifo; do [ -e "$HOME/$f" ] || [ -L "$HOME/$f" ] && echo "present $f"; done
                echo "changed" >"$HOME/hard"; cat "$HOME/.trust"'
        expect_status 0
        expect_no_text "host secret 7f3a"
        expect_no_line "present link-out"
        expect_no_line "present dir-link"
        expect_no_line "present fifo"
        # The hard link was copied twice: writing one leaves the other.
        expect_line "trusted"
        [ "$(cat "$SEED/hard")" = trusted ] || fail "a change inside reached DIR through a hard link"
}

@test "home-from: a DIR larger than --disk fails before the agent runs with materialize.quota_exceeded naming --home-from" {
        dd if=/dev/zero of="$SEED/big.bin" bs=1024 count=2048 status=none
        local d=$BATS_TEST_TMPDIR/w
        mkdir "$d"
        gx --write "$d" --disk 1M --home-from "$SEED" -- /bin/sh -c "touch $d/ran"
        expect_glove_error 125
        [ "$(glove_error_code)" = materialize.quota_exceeded ] || fail "expected materialize.quota_exceeded"
        [[ "$stderr" == *"--home-from"* && "$stderr" == *"big.bin"* ]] || fail "the error names neither --home-from nor the file"
        [ ! -e "$d/ran" ] || fail "the agent ran"
        # Within --disk it fits.
        gx --disk 4M --home-from "$SEED" -- /bin/sh -c 'stat -c %s "$HOME/big.bin"'
        expect_status 0
        expect_output "2097152"
}

@test "home-from: refused like a grant: a path with a symbolic link, a file, a missing path; glove run seeds its HOME too" {
        ln -s "$SEED" "$BATS_TEST_TMPDIR/seed-link"
        gx --home-from "$BATS_TEST_TMPDIR/seed-link" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.symlink ] || fail "expected grant.symlink"
        [[ "$stderr" == *"--home-from"* ]] || fail "the error does not name --home-from"
        # It names the link and the resolved path to use instead.
        [[ "$stderr" == *"$BATS_TEST_TMPDIR/seed-link is a symbolic link to $SEED (grants never follow one): use $(realpath "$SEED") instead" ]] ||
                fail "the error does not give the resolved path: $stderr"
        gx --home-from "$SEED/.trust" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = home.not_dir ] || fail "expected home.not_dir"
        gx --home-from "$BATS_TEST_TMPDIR/missing" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.missing_path ] || fail "expected grant.missing_path"
        # The audit log must not be copied in (the agent would read earlier runs' records).
        gx --home-from "$SEED" --audit-log "$SEED/audit.jsonl" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.exposes_audit_log ] || fail "expected grant.exposes_audit_log"
        # glove run: the same private HOME, seeded (the agent here is not an
        # MCP client; it reports what it saw on stderr and exits).
        need_node_modules
        g run --home-from "$SEED" --upstream "fs=$NODE,$FILESYSTEM,$SEED" --upstream-ro "fs:$NODE_MODULES" --upstream-ro "fs:$SEED" -- /bin/sh -c 'cat "$HOME/.trust" >&2'
        expect_status 0
        [[ "$stderr" == *"trusted"* ]] || fail "glove run's HOME was not seeded"
}
