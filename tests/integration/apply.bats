#!/usr/bin/env bats
# Retained-change apply (issue 30; docs/retained-changes.md): a managed
# session works on a retained copy of its source; the owner inspects what
# changed (glove ctl changes), then applies it under a signed, single-use
# authorization (glove apply), atomically (renameat2 RENAME_EXCHANGE), with
# the old source kept until cleanup. Every refusal happens before anything
# is consumed; a SIGKILL of glove apply at each durable step is followed by
# recovery that reaches the right terminal state or reports the transaction
# ambiguous, never a half-applied tree. Retained images need root and loop
# devices: the root cell only.

load helpers
load "$GLOVE_IT_LIB/gloved"
load "$GLOVE_IT_LIB/managed_fs"

FS="$LIB/managed_fs.py"
SESSCTL="$LIB/sessctl.py"
CRASHPOINT="$(dirname "$GLOVE")/glove-crashpoint.so"

setup() {
        T=$BATS_TEST_TMPDIR
        require_gloved
        [ -e /dev/loop-control ] && is_root || skip "retained images need root and /dev/loop-control"
        mkdir -m 700 -p "$T/cfg" "$T/ap"
        # The trust policy: root-owned, in a root-owned directory nobody
        # else can write (its parent, the test's temporary directory, is
        # root's own 0700 directory).
        mkdir -m 755 "$T/trust"
        "$GLOVE" apply --keygen "$T/ap/owner.key" --key-id owner >"$T/entry.json" || fail "keygen failed"
        "$GLOVE" apply --keygen "$T/ap/other.key" --key-id other >/dev/null || fail "keygen failed"
        "$PY" -c 'import json,sys; print(json.dumps({"schema":"glove.apply-trust.v1","keys":[json.load(open(sys.argv[1]))]}))' \
                "$T/entry.json" >"$T/trust/apply-trust.json"
        chmod 644 "$T/trust/apply-trust.json"
        APPLY=("$GLOVE" apply --trust-policy "$T/trust/apply-trust.json" --journal "$T/ap/apply.journal"
                --materialization-root "$T/mat")
}

teardown() {
        gloved_teardown
        [ -n "${SMALL:-}" ] && umount "$SMALL" 2>/dev/null
        return 0
}

# policy ALIAS... : gloved with one retained alias per name, each at
# $T/src/NAME, and the template "edit" running the shell script $T/edit.sh.
policy() {
        local a aliases="" grants="" sep=""
        for a in "$@"; do
                aliases+="$sep{\"alias\":\"$a\",\"host_path\":\"$T/src/$a\",\"target_path\":\"/w/$a\",
                        \"access\":[{\"access\":\"retained_write\",\"materialization\":\"copy\",\"max_bytes\":16777216}]}"
                sep=,
        done
        fs_gloved "{\"aliases\":[$aliases],\"templates\":[{\"id\":\"edit\",\"argv\":[\"/usr/bin/dash\",\"$T/edit.sh\"],
                \"read_only_paths\":[\"$T/edit.sh\"],\"aliases\":[$(printf '"%s",' "$@" | sed 's/,$//')]}]}"
        need_retained
}

# grants ALIAS...: the plan's path grants.
grants() {
        local a out="" sep=""
        for a in "$@"; do
                out+="$sep{\"alias\":\"$a\",\"access\":\"retained_write\",\"materialization\":\"copy\",\"max_bytes\":16777216}"
                sep=,
        done
        echo "[$out]"
}

# source NAME: a small project at $T/src/NAME.
source_tree() {
        mkdir -p "$T/src/$1/sub"
        echo "old a" >"$T/src/$1/a.txt"
        echo "old b" >"$T/src/$1/sub/b.txt"
        echo "delete me" >"$T/src/$1/del.txt"
        # A name whose bytes sort before "." (the manifest's root).
        echo dash >"$T/src/$1/-dash"
        # Each source its own: stage manifests are single-use too.
        echo "$1" >"$T/src/$1/name"
        chmod 755 "$T/src/$1"
}

# The agent's edits, on every alias it has.
edit_script() {
        cat >"$T/edit.sh" <<'EOF'
if [ -d /w/many ]; then
        # 2000 entries with 250-byte names: more than one control frame
        # could list (glove ctl changes lists a bounded part).
        /usr/bin/python3 -c 'import os
for i in range(2000): open("/w/many/%04d" % i + "x" * 246, "w").close()'
fi
[ -d /w/p ] && echo autosave >"/w/p/#autosave#"
for d in /w/*; do
        echo "new a" >"$d/a.txt"
        rm "$d/del.txt"
        echo "added" >"$d/new.txt"
        chmod 600 "$d/sub/b.txt"
done
echo edited
EOF
}

# session ID ALIAS...: a finished session that edited those aliases.
session() {
        local id=$1
        shift
        run_managed "$id" edit "$(grants "$@")"
        expect_line edited
}

# A JSON field of $output: jq-like path through python.
field() {
        printf '%s' "$output" | "$PY" -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# The image of SESSION/ALIAS mounted writable at $T/rw, for planting
# what the agent could have left; unplant undoes the mount.
plant() {
        LOOP=$(losetup -f --show "$T/mat/images/$1/$2.ext4")
        mkdir -p "$T/rw"
        mount "$LOOP" "$T/rw"
}
unplant() {
        umount "$T/rw"
        losetup -d "$LOOP" 2>/dev/null || true
}

expect_code() { # CODE: the last run failed with exit 1 and this code
        [ "$status" -eq 1 ] || fail "expected exit 1 ($1), got $status: ${stderr:-$output}"
        [[ "${stderr:-$output}" == *"glove: $1: "* ]] || fail "expected $1, got: ${stderr:-$output}"
}

@test "apply: a managed session's retained change is inspected, applied atomically, and the old source kept until cleanup" {
        source_tree p
        source_tree many
        edit_script
        policy p many
        session s1 p many
        # The stage started as a copy of the source; the source is untouched.
        [ "$(cat "$T/src/p/a.txt")" = "old a" ] || fail "the session wrote to its source"
        [ -f "$T/mat/images/s1/p.baseline.json" ] || fail "no baseline was recorded"
        # Inspection: read-only, through gloved.
        ctl changes s1
        expect_status 0
        [[ "$output" == *"p: 5 changes, 4 unchanged: 1 removed, 1 modified, 1 mode_changed, 2 added"* &&
                "$output" == *"many: 2004 changes"* ]] || fail "changes: $output"
        # An added entry shows its mode.
        expect_line "  added        #autosave# 0600"
        expect_line "  added        new.txt 0600"
        expect_line "  removed      del.txt"
        expect_line "  modified     a.txt"
        expect_line "  mode_changed sub/b.txt 0644 -> 0600"
        ctl --json changes s1
        expect_status 0
        # Grants in plan order (canonical: by alias); each has its share.
        [ "$(field grants.1.grant)" = p ] && [ "$(field grants.1.changes.added.1.path)" = new.txt ] || fail "json: $output"
        # Each grant once; what does not fit one frame is counted, not listed,
        # and glove apply --changes lists it all (owner-local).
        local text
        text=$("$GLOVE" ctl --runtime-dir "$RT" changes s1)
        [ "$(grep -c '^p: ' <<<"$text")" = 1 ] && [ "$(grep -c '^many: ' <<<"$text")" = 1 ] ||
                fail "a grant is not printed exactly once: $(head -20 <<<"$text")"
        [[ "$text" == *"more not listed: "*" added (glove apply --changes s1 lists every one)"* ]] ||
                fail "no truncation note: $(tail -3 <<<"$text")"
        # Additions cannot push a change to the source's own files out of the
        # listing: many's 2001 additions are cut, its modification is shown.
        [ "$(field grants.0.changes.modified.0.path)" = a.txt ] && [ "$(field grants.0.changes.removed.0.path)" = del.txt ] ||
                fail "many's own changes were not listed first: $(field grants.0.changes.counts)"
        [ "$(grep -c '^  modified     a.txt$' <<<"$text")" = 2 ] || fail "a modification is hidden: $(grep -c . <<<"$text") lines"
        [ "$(field grants.0.changes.counts.added)" = 2001 ] && [ "$(field grants.0.changes.truncated)" = true ] ||
                fail "many: $(field grants.0.changes.counts)"
        [ "$(field grants.1.changes.truncated)" = false ] || fail "p was cut short by many"
        local listed
        listed=$(field grants.0.changes.added | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
        [ "$listed" -gt 100 ] && [ "$listed" -lt 2001 ] || fail "many: $listed entries listed"
        run --separate-stderr "${APPLY[@]}" --changes s1 --grant many --json
        [ "$status" -eq 0 ] || fail "apply --changes: $stderr"
        [ "$(field changes.added | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 2001 ] ||
                fail "apply --changes does not list every entry"
        # Nothing is left mounted by the inspection.
        grep -F -- "$T/mat" /proc/self/mountinfo && fail "the inspection left a mount"
        # gloved never applies: schema 0, and no such method.
        ctl --json capabilities
        [ "$(field apply_schema_version)" = 0 ] || fail "apply_schema_version: $output"
        [[ "$(field methods)" != *apply* ]] || fail "gloved advertises an apply method: $(field methods)"
        run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/owner.key"
        expect_code apply.grant_ambiguous
        run --separate-stderr "${APPLY[@]}" s1 --grant p --key "$T/ap/owner.key"
        [ "$status" -eq 0 ] || fail "apply failed: $stderr"
        [[ "$output" == *": applied"* ]] || fail "apply: $output"
        [[ "$output" == *"added        new.txt"* ]] || fail "apply did not say what changed: $output"
        # The source is the stage now: contents and child modes from it, the
        # root's mode kept.
        [ "$(cat "$T/src/p/a.txt")" = "new a" ] && [ "$(cat "$T/src/p/new.txt")" = added ] && [ ! -e "$T/src/p/del.txt" ] &&
                [ "$(cat "$T/src/p/#autosave#")" = autosave ] && [ "$(cat "$T/src/p/-dash")" = dash ] ||
                fail "the source is not the stage: $(ls -la "$T/src/p")"
        [ "$(stat -c %a "$T/src/p/sub/b.txt")" = 600 ] && [ "$(stat -c %a "$T/src/p")" = 755 ] ||
                fail "modes: $(stat -c '%n %a' "$T/src/p" "$T/src/p/sub/b.txt")"
        [ ! -e "$T/src/p/lost+found" ] || fail "ext4's lost+found reached the source"
        # The old source is recoverable until cleanup.
        local old
        old=$(ls -A "$T/src" | grep '^\.glove-apply-')
        [ "$(cat "$T/src/$old/a.txt")" = "old a" ] && [ "$(cat "$T/src/$old/del.txt")" = "delete me" ] ||
                fail "the old source is not kept: $(ls -la "$T/src")"
        # Single use: the same grant again.
        run --separate-stderr "${APPLY[@]}" s1 --grant p --key "$T/ap/owner.key"
        expect_code apply.replayed_grant
        # Cleanup refuses what is not the old source (a file in its place),
        # records nothing, then removes the old source, and again is a no-op.
        mv "$T/src/$old" "$T/src/$old.real"
        echo decoy >"$T/src/$old"
        run --separate-stderr "${APPLY[@]}" --cleanup s1 --grant p
        expect_code apply.remove
        [ "$(cat "$T/src/$old")" = decoy ] || fail "cleanup touched what was not the old source"
        rm "$T/src/$old"
        mv "$T/src/$old.real" "$T/src/$old"
        run --separate-stderr "${APPLY[@]}" --cleanup s1 --grant p
        [ "$status" -eq 0 ] || fail "cleanup: $stderr"
        [ ! -e "$T/src/$old" ] || fail "cleanup left the old source"
        run --separate-stderr "${APPLY[@]}" --cleanup s1 --grant p
        [ "$status" -eq 0 ] || fail "a second cleanup: $stderr"
        [ "$(cat "$T/src/p/a.txt")" = "new a" ] || fail "cleanup touched the source"
}

@test "apply: every refusal before the reservation consumes nothing (stale source, keys, trust policy, what the stage holds, room)" {
        source_tree p
        # q's source holds what the stage cannot carry (a setgid directory).
        source_tree q
        chmod 2755 "$T/src/q/sub"
        edit_script
        policy p q
        session s1 p
        session s2 q
        # Inspection says it; apply refuses it.
        ctl --json changes s2
        [[ "$output" == *'"apply_refusal":{"code":"apply.source_unsupported","message":"sub: the source'\''s entry has mode 2755'* ]] ||
                fail "changes does not say the source cannot be carried: $output"
        run --separate-stderr "${APPLY[@]}" s2 --key "$T/ap/owner.key"
        expect_code apply.source_unsupported
        # A key the trust policy does not list.
        run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/other.key"
        expect_code apply.untrusted_key
        # A trust policy the owner could rewrite (not root's).
        cp "$T/trust/apply-trust.json" "$T/ap/owned-trust.json"
        chown 65534 "$T/ap/owned-trust.json"
        run --separate-stderr "$GLOVE" apply --trust-policy "$T/ap/owned-trust.json" --journal "$T/ap/apply.journal" \
                --materialization-root "$T/mat" s1 --key "$T/ap/owner.key"
        expect_code apply.trust_insecure
        chmod 666 "$T/trust/apply-trust.json"
        run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/owner.key"
        expect_code apply.trust_insecure
        chmod 644 "$T/trust/apply-trust.json"
        # An authorization for another stage than this one.
        run --separate-stderr "${APPLY[@]}" --authorize s1 --key "$T/ap/owner.key" --output "$T/ap/auth.json"
        [ "$status" -eq 0 ] || fail "authorize: $stderr"
        # What apply accepts only: each offence planted in the stage, refused
        # by its code, then removed.
        local what
        for what in symlink hardlink fifo device setuid xattr acl sparse; do
                plant s1 p
                case $what in
                symlink) ln -s a.txt "$T/rw/link" ;;
                hardlink) ln "$T/rw/a.txt" "$T/rw/hard" ;;
                fifo) mkfifo "$T/rw/fifo" ;;
                device) mknod "$T/rw/dev" c 1 3 ;;
                setuid) chmod 4755 "$T/rw/a.txt" ;;
                xattr) "$PY" -c 'import os,sys; os.setxattr(sys.argv[1], "user.glove", b"x")' "$T/rw/a.txt" ;;
                acl) # user:1000:r-- as a POSIX access ACL (its xattr form)
                        "$PY" -c 'import os,struct,sys
e = [(1, 6, 0xffffffff), (2, 4, 1000), (4, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 4, 0xffffffff)]
os.setxattr(sys.argv[1], "system.posix_acl_access", struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e))' "$T/rw/a.txt" ;;
                sparse) truncate -s 1M "$T/rw/sparse" ;;
                esac
                unplant
                # Inspection says it before apply does.
                ctl --json changes s1
                [[ "$output" == *'"apply_refusal":{"code":"apply.'* ]] || fail "$what: changes does not say apply would refuse: $output"
                run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/owner.key"
                case $what in
                symlink) expect_code apply.symlink ;;
                hardlink) expect_code apply.hard_link ;;
                fifo | device) expect_code apply.special_file ;;
                setuid) expect_code apply.special_mode ;;
                xattr | acl) expect_code apply.xattr ;;
                sparse) expect_code apply.sparse ;;
                esac
                plant s1 p
                rm -f "$T/rw/link" "$T/rw/hard" "$T/rw/fifo" "$T/rw/dev" "$T/rw/sparse"
                chmod 644 "$T/rw/a.txt"
                "$PY" -c 'import os,sys
for n in ("user.glove", "system.posix_acl_access"):
    try: os.removexattr(sys.argv[1], n)
    except OSError: pass' "$T/rw/a.txt"
                unplant
        done
        # While a writable loop device still backs the image (the session's
        # own file system, written back after its lazy unmount; here the
        # planting mount), a read-only mount of the file could read it as it
        # was: inspection and apply wait a moment, then refuse.
        plant s1 p
        ctl changes s1
        [[ "$output" == "p: retained.in_use: p: "*"still live"* ]] ||
                fail "an inspection read an image a writable loop device backs: $output $stderr"
        expect_status 1
        ctl --json changes s1
        expect_status 1
        [ "$(jq -r '.grants[0].error.code' <<<"$output")" = retained.in_use ] || fail "--json: $output"
        run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/owner.key"
        expect_code retained.in_use
        unplant
        # A name that would act on a terminal reaches the owner escaped, in
        # apply's refusal and in its full listing; an added entry anyone may
        # write is flagged.
        local evil=$'x\e]0;pwned\a\e[2J\n  removed      sub'
        plant s1 p
        ln -s a.txt "$T/rw/$evil"
        unplant
        run --separate-stderr "${APPLY[@]}" s1 --key "$T/ap/owner.key"
        expect_code apply.symlink
        [[ "$stderr" == *'x\x1b]0;pwned\x07\x1b[2J\x0a  removed      sub is a symbolic link'* ]] || fail "refusal: $stderr"
        plant s1 p
        rm "$T/rw/$evil"
        echo evil >"$T/rw/$evil"
        chmod 666 "$T/rw/$evil"
        # Look-alikes: a zero width space after a's name, and a name padded
        # with spaces until a terminal would wrap it into a forged line.
        local zw=$'a.txt\xe2\x80\x8b' pad="w$(printf '%66s' '')  removed      main.py"
        echo zw >"$T/rw/$zw"
        echo pad >"$T/rw/$pad"
        chmod 644 "$T/rw/$zw" "$T/rw/$pad"
        unplant
        run --separate-stderr "${APPLY[@]}" --changes s1
        [ "$status" -eq 0 ] || fail "apply --changes: $stderr"
        [[ "$output" == *'  added        x\x1b]0;pwned\x07\x1b[2J\x0a\x20\x20removed\x20\x20\x20\x20\x20\x20sub 0666 (writable by anyone)'* ]] ||
                fail "listing: $output"
        [[ "$output" != *$'\e'* && "$(grep -c '^  removed      sub' <<<"$output")" = 0 ]] || fail "a raw name reached the owner: $output"
        [[ "$output" == *'  added        a.txt\u{200B} 0644'* ]] || fail "an invisible character was not shown: $output"
        [[ "$output" == *'  added        w\x20\x20'*'\x20\x20removed\x20\x20\x20\x20\x20\x20main.py 0644'* ]] ||
                fail "a padded name was not shown: $output"
        plant s1 p
        rm "$T/rw/$evil" "$T/rw/$zw" "$T/rw/$pad"
        unplant
        # What an exchange would lose of the source, done by someone else
        # after the session started (the manifest digest does not cover it):
        # refused, named, nothing consumed.
        for what in owner group xattr hardlink append immutable-root; do
                local at=a.txt
                case $what in
                owner) chown 12345 "$T/src/p/a.txt" ;;
                group) chgrp 12345 "$T/src/p/a.txt" ;;
                xattr) "$PY" -c 'import os,sys; os.setxattr(sys.argv[1], "user.glove", b"x")' "$T/src/p/a.txt" ;;
                hardlink) ln "$T/src/p/a.txt" "$T/outside-name" ;;
                append) chattr +a "$T/src/p/a.txt" || skip "chattr +a: not on this file system" ;;
                immutable-root) chattr +i "$T/src/p" || skip "chattr +i: not on this file system"; at=. ;;
                esac
                run --separate-stderr "${APPLY[@]}" s1 --authorization "$T/ap/auth.json"
                chattr -a "$T/src/p/a.txt" 2>/dev/null
                chattr -i "$T/src/p" 2>/dev/null
                expect_code apply.source_unsupported
                [[ "$stderr" == *": $at: the source's "* ]] || fail "$what: $stderr"
                chown 0:0 "$T/src/p/a.txt"
                "$PY" -c 'import os,sys
try: os.removexattr(sys.argv[1], "user.glove")
except OSError: pass' "$T/src/p/a.txt"
                rm -f "$T/outside-name"
        done
        # The authorization names the stage as it was: still the same after
        # the offences were removed, so it applies... but not while the
        # source changed since the stage was taken.
        echo "the owner's own edit" >"$T/src/p/a.txt"
        run --separate-stderr "${APPLY[@]}" s1 --authorization "$T/ap/auth.json"
        expect_code apply.stale_baseline
        [ "$(cat "$T/src/p/a.txt")" = "the owner's own edit" ] || fail "a stale apply touched the source"
        ls -A "$T/src" | grep -q '^\.glove-apply-' && fail "a refusal left a candidate"
        # None of these consumed the grant: once the source is back, the
        # same authorization applies.
        echo "old a" >"$T/src/p/a.txt"
        run --separate-stderr "${APPLY[@]}" s1 --authorization "$T/ap/auth.json"
        [ "$status" -eq 0 ] || fail "apply after the refusals: $stderr"
        # And the same authorization once more is a replay.
        run --separate-stderr "${APPLY[@]}" s1 --authorization "$T/ap/auth.json"
        expect_code apply.replayed_authorization
}

@test "apply: a source file system without room for the staged tree is apply.no_space" {
        # The alias's parent is a 32 MiB tmpfs: the staged tree plus the
        # 64 MiB reserve cannot fit.
        SMALL=$T/small
        mkdir -p "$SMALL"
        mount -t tmpfs -o size=32m,mode=0755 glove-it-apply "$SMALL"
        mkdir -p "$SMALL/proj/sub"
        echo "old a" >"$SMALL/proj/a.txt"
        echo "old b" >"$SMALL/proj/sub/b.txt"
        echo "delete me" >"$SMALL/proj/del.txt"
        edit_script
        fs_gloved "{\"aliases\":[{\"alias\":\"q\",\"host_path\":\"$SMALL/proj\",\"target_path\":\"/w/q\",
                \"access\":[{\"access\":\"retained_write\",\"materialization\":\"copy\",\"max_bytes\":16777216}]}],
                \"templates\":[{\"id\":\"edit\",\"argv\":[\"/usr/bin/dash\",\"$T/edit.sh\"],
                \"read_only_paths\":[\"$T/edit.sh\"],\"aliases\":[\"q\"]}]}"
        need_retained
        session s2 q
        run --separate-stderr "${APPLY[@]}" s2 --key "$T/ap/owner.key"
        expect_code apply.no_space
        [ "$(cat "$SMALL/proj/a.txt")" = "old a" ] || fail "the source changed"
}

# crash MATCH WHEN ALIAS: glove apply killed by the crash-point shim at the
# journal write holding MATCH.
crash() {
        [ -f "$CRASHPOINT" ] || fail "the crash-point shim $CRASHPOINT is missing"
        run --separate-stderr env LD_PRELOAD="$CRASHPOINT" GLOVE_CRASH_MATCH="$1" GLOVE_CRASH_WHEN="$2" \
                GLOVE_CRASH_PATH=apply.journal GLOVE_CRASH_REPORT="$T/crash.report" \
                "${APPLY[@]}" s3 --grant "$3" --key "$T/ap/owner.key"
        [ "$status" -eq 137 ] || fail "glove apply was not killed at $1 ($2): status $status: $stderr"
}

recover() {
        run --separate-stderr "${APPLY[@]}" --recover --json
        [ "$status" -eq 0 ] || fail "recover: $stderr"
}

candidates() { ls -A "$T/src" | grep -c '^\.glove-apply-' || true; }

@test "apply: SIGKILL after the reservation, the preparation, the exchange and the receipt, each recovered to the right state" {
        local a
        for a in r1 p1 x1 t1 u1 d1 twin; do source_tree "$a"; done
        # twin's source is t1's exactly, so its stage is too.
        echo t1 >"$T/src/twin/name"
        edit_script
        policy r1 p1 x1 t1 u1 d1 twin
        session s3 r1 p1 x1 t1 u1 d1 twin
        # --discard ends one prepared transaction whose exchange never
        # happened: the candidate removed, failed, the source intact.
        crash '"type":"prepared"' synced d1
        [ "$(candidates)" -eq 1 ] || fail "no candidate after the preparation: $(ls -A "$T/src")"
        run --separate-stderr "${APPLY[@]}" --discard s3 --grant d1
        [ "$status" -eq 0 ] && [[ "$output" == *": failed apply.interrupted"* ]] || fail "discard: $status $output $stderr"
        [ "$(candidates)" -eq 0 ] || fail "the candidate was not discarded"
        [ "$(cat "$T/src/d1/a.txt")" = "old a" ] || fail "the source changed"
        run --separate-stderr "${APPLY[@]}" --discard s3 --grant d1
        expect_code apply.not_prepared
        # After the reservation: nothing was prepared; failed, source intact.
        crash '"type":"reserved"' synced r1
        recover
        [[ "$output" == *'"code":"apply.interrupted","grant_id":"s3/r1","state":"failed"'* ]] ||
                fail "reserved: $output"
        [ "$(cat "$T/src/r1/a.txt")" = "old a" ] || fail "the source changed"
        # After the preparation: the candidate is there; discarded, failed.
        crash '"type":"prepared"' synced p1
        [ "$(candidates)" -eq 1 ] || fail "no candidate after the preparation: $(ls -A "$T/src")"
        recover
        [[ "$output" == *'"grant_id":"s3/p1","state":"failed"'* ]] || fail "prepared: $output"
        [ "$(candidates)" -eq 0 ] || fail "the candidate was not discarded"
        [ "$(cat "$T/src/p1/a.txt")" = "old a" ] || fail "the source changed"
        # After the exchange, before its record: recovery proves it by inode
        # and ends it applied; the old source is kept.
        crash '"type":"committed"' before x1
        recover
        [[ "$output" == *'"grant_id":"s3/x1","state":"applied"'* ]] || fail "exchanged: $output"
        [ "$(cat "$T/src/x1/a.txt")" = "new a" ] || fail "the exchange is not in place"
        [ "$(candidates)" -eq 1 ] || fail "the old source is not kept"
        # After the receipt: nothing left to do.
        crash '"type":"terminal"' synced t1
        recover
        [[ "$output" != *'s3/t1'* ]] || fail "a finished transaction was touched again: $output"
        [ "$(cat "$T/src/t1/a.txt")" = "new a" ] || fail "applied, but the source is not the stage"
        # A stage identical to an applied one is a replay of its manifest.
        run --separate-stderr "${APPLY[@]}" s3 --grant twin --key "$T/ap/owner.key"
        expect_code apply.replayed_manifest
        # A state that cannot be proven (the candidate moved away after the
        # preparation) is ambiguous: reported, consumed, never retried.
        crash '"type":"prepared"' synced u1
        local cand
        cand=$(grep -lx u1 "$T"/src/.glove-apply-*/name)
        [ -n "$cand" ] || fail "no candidate of u1: $(ls -A "$T/src")"
        mv "$(dirname "$cand")" "$T/elsewhere"
        recover
        [[ "$output" == *'"code":"apply.state_unproven","grant_id":"s3/u1","state":"ambiguous"'* ]] || fail "ambiguous: $output"
        recover
        [[ "$output" == *'"grant_id":"s3/u1","state":"ambiguous"'* ]] || fail "ambiguous is not reported again: $output"
        [ "$(cat "$T/src/u1/a.txt")" = "old a" ] || fail "an ambiguous transaction touched the source"
        run --separate-stderr "${APPLY[@]}" s3 --grant u1 --key "$T/ap/owner.key"
        expect_code apply.replayed_grant
}
