#!/usr/bin/env bats
# Grants: --workspace, --read and --write expose exactly the named paths at
# the same absolute path; unsafe grants are refused before the agent runs; a
# symlink swapped in while glove launches never exposes its target.

load helpers

setup() {
        T=$BATS_TEST_TMPDIR
}

teardown() { kill_tracked; }

# refused ARGS...: glove exits 125 with one error line and the agent (which
# would print AGENT-RAN) never ran.
refused() {
        gx "$@" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
}

@test "grants: --workspace is read-write, is the working directory, at the same absolute path" {
        mkd "$T/ws"
        echo input >"$T/ws/in.txt"
        gx --workspace "$T/ws" -- /bin/sh -c 'pwd; cat in.txt; echo out >out.txt; mkdir d && echo f >d/f'
        expect_status 0
        expect_output "$(printf '%s\ninput' "$T/ws")"
        [ "$(cat "$T/ws/out.txt")" = out ] && [ "$(cat "$T/ws/d/f")" = f ]
}

@test "grants: without --workspace the working directory is HOME" {
        gx -- /bin/pwd
        expect_status 0
        expect_output /home/agent
}

@test "grants: repeated --read and --write grants all apply, siblings stay hidden" {
        mkd "$T/a" "$T/b" "$T/c" "$T/hidden"
        echo a >"$T/a/f"
        echo b >"$T/b/f"
        echo secret >"$T/hidden/f"
        gx --read "$T/a" --read "$T/b" --write "$T/c" "${PROBE[@]}" \
                read "$T/a/f" read "$T/b/f" create "$T/c/new" read "$T/hidden/f" list "$T"
        expect_status 0
        expect_line "read $T/a/f ok:a"
        expect_line "read $T/b/f ok:b"
        expect_line "create $T/c/new ok"
        expect_line "read $T/hidden/f ENOENT"
        expect_line "list $T ok:a,b,c"
        expect_no_text secret
}

@test "grants: a nested grant of the same mode is accepted" {
        mkd "$T/outer/inner"
        echo x >"$T/outer/inner/f"
        gx --read "$T/outer" --read "$T/outer/inner" -- /bin/cat "$T/outer/inner/f"
        expect_status 0
        expect_output x
}

@test "grants: a missing path is refused (125)" { refused --read "$T/does-not-exist"; }
@test "grants: a missing --write path is refused (125)" { refused --write "$T/does-not-exist"; }
@test "grants: a missing --workspace is refused (125)" { refused --workspace "$T/does-not-exist"; }
@test "grants: / is refused (125)" { refused --read /; }
@test "grants: / is refused as --write and --workspace (125)" {
        refused --write /
        refused --workspace /
}
@test "grants: /proc and paths under it are refused (125)" {
        refused --read /proc
        refused --read /proc/self/root
        refused --read /proc/1
}
@test "grants: /sys and paths under it are refused (125)" {
        refused --read /sys
        refused --read /sys/kernel
}
@test "grants: /dev and paths under it are refused (125)" {
        refused --read /dev
        refused --write /dev/shm
        refused --read /dev/null
}

@test "grants: a symlink as the last component is refused (125)" {
        mkd "$T/real"
        echo real >"$T/real/f"
        ln -s "$T/real" "$T/link"
        refused --read "$T/link"
        refused --write "$T/link"
        refused --workspace "$T/link"
}

@test "grants: a symlink in an intermediate component is refused (125)" {
        mkd "$T/real/sub"
        ln -s "$T/real" "$T/link"
        refused --read "$T/link/sub"
        refused --write "$T/link/sub"
}

@test "grants: a symlink to a file is refused (125)" {
        echo x >"$T/file"
        ln -s "$T/file" "$T/filelink"
        refused --read "$T/filelink"
}

@test "grants: --read /a --write /a/b (conflicting nested modes) is refused (125)" {
        mkd "$T/a/b"
        refused --read "$T/a" --write "$T/a/b"
}

@test "grants: --write /a --read /a/b (conflicting nested modes) is refused (125)" {
        mkd "$T/a/b"
        refused --write "$T/a" --read "$T/a/b"
}

@test "grants: --read and --write of the same path is refused (125)" {
        mkd "$T/a"
        refused --read "$T/a" --write "$T/a"
}

@test "grants: --workspace W with --read W/sub (conflicting nested modes) is refused (125)" {
        mkd "$T/ws/sub"
        refused --workspace "$T/ws" --read "$T/ws/sub"
}

# race_launch GRANT FLAGFILE RUNS: launch glove RUNS times with --read GRANT,
# printing one verdict per run: refused | real | SECRET | other:<status>:<output>.
race_launch() {
        local grant=$1 flag=$2 runs=$3 i out rc
        for ((i = 0; i < runs; i++)); do
                rc=0
                # In write mode the agent also leaves a file next to the flag.
                out=$(timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "--${RACE_MODE:-read}" "$grant" -- \
                        /bin/sh -c 'cat "$1" && if [ "$2" = write ]; then : >"${1%/*}/written-by-agent"; fi' \
                        sh "$flag" "${RACE_MODE:-read}" 2>/dev/null) || rc=$?
                if [ "$rc" -eq 125 ]; then
                        echo refused
                elif [ "$rc" -eq 0 ] && [ "$out" = REAL ]; then
                        echo real
                elif [[ "$out" == *SECRET* ]]; then
                        echo SECRET
                else
                        echo "other:$rc:$out"
                fi
        done
}

# race SWAPPED GRANT RUNS FLAG [MODE]: flip SWAPPED between a real directory
# and a symlink to a secret directory while glove launches with --MODE GRANT
# (read by default).
race() {
        local swapped=$1 grant=$2 runs=$3 flagrel=$4
        RACE_MODE=${5:-read}
        # Positive controls: the real state shows REAL, the swapped state is refused.
        gx "--$RACE_MODE" "$grant" -- /bin/cat "$flagrel"
        expect_status 0
        expect_output REAL
        "$PY" -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); sys.exit(l.renameat2(-100,sys.argv[1].encode(),-100,sys.argv[2].encode(),2))' "$swapped" "$T/race/alt"
        [ "$(cat "$flagrel")" = SECRET ] || fail "swap did not expose the secret on the host"
        gx "--$RACE_MODE" "$grant" -- /bin/cat "$flagrel"
        expect_glove_error 125
        "$PY" -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); sys.exit(l.renameat2(-100,sys.argv[1].encode(),-100,sys.argv[2].encode(),2))' "$swapped" "$T/race/alt"

        "$PY" "$LIB/flip.py" "$swapped" "$T/race/alt" 120 </dev/null >/dev/null 2>&1 3>&- &
        local flipper=$!
        track_pid "$flipper"
        local verdicts
        verdicts=$(race_launch "$grant" "$flagrel" "$runs")
        kill "$flipper" 2>/dev/null || true
        wait "$flipper" 2>/dev/null || true
        local real refused secret other
        real=$(grep -cx real <<<"$verdicts" || true)
        refused=$(grep -cx refused <<<"$verdicts" || true)
        secret=$(grep -cx SECRET <<<"$verdicts" || true)
        other=$(grep -v -x -e real -e refused -e SECRET <<<"$verdicts" || true)
        echo "# $runs launches: $real showed the real directory, $refused refused, $secret showed the secret" >&3
        [ "$secret" -eq 0 ] || { echo "the secret directory was exposed in $secret of $runs launches" >&2; return 1; }
        [ -z "$other" ] || { echo "unexpected outcomes:" >&2; sort <<<"$other" | uniq -c >&2; return 1; }
        [ "$real" -ge 1 ] || { echo "no launch succeeded: glove refuses even the real directory" >&2; return 1; }
        if [ -n "$(find "$T/race/secret" -name written-by-agent)" ]; then
                echo "the agent wrote into the secret directory" >&2
                return 1
        fi
}

@test "grants: a symlink swapped into an intermediate component during launch never exposes its target" {
        # $T/race/p is a real dir holding data/flag=REAL; $T/race/alt is a
        # symlink to $T/race/secret holding data/flag=SECRET. They are swapped
        # atomically while glove launches with --read $T/race/p/data.
        mkd "$T/race/p/data" "$T/race/secret/data"
        echo REAL >"$T/race/p/data/flag"
        echo SECRET >"$T/race/secret/data/flag"
        ln -s "$T/race/secret" "$T/race/alt"
        race "$T/race/p" "$T/race/p/data" 200 "$T/race/p/data/flag"
}

@test "grants: a symlink swapped into the last component during launch never exposes its target" {
        mkd "$T/race/p" "$T/race/secret"
        echo REAL >"$T/race/p/flag"
        echo SECRET >"$T/race/secret/flag"
        ln -s "$T/race/secret" "$T/race/alt"
        race "$T/race/p" "$T/race/p" 100 "$T/race/p/flag"
}

@test "grants: the agent cannot leave setuid or setgid files on the host" {
        # As root, what the agent writes belongs to host root: a setuid file
        # in a grant would be a setuid-root program for every host user.
        mkd "$T/ws"
        cp /bin/true "$T/ws/prog"
        cp /bin/true "$T/ws/prog2"
        gx --workspace "$T/ws" "${PROBE[@]}" chmod "$T/ws/prog" 4755 chmod "$T/ws/prog2" 2755 \
                create-mode "$T/ws/new" 4755 create-mode "$T/ws/new2" 6755 chmod "$T/ws/prog" 0700
        expect_status 0
        # Positive control: an ordinary chmod works.
        expect_line "chmod $T/ws/prog 0700 ok"
        local found
        found=$(find "$T/ws" -perm /6000 -printf '%m %u %p\n')
        [ -z "$found" ] || fail "setuid/setgid files reached the host: $found"
}

@test "grants: the agent cannot give files in a grant file capabilities" {
        mkd "$T/ws"
        cp /bin/true "$T/ws/prog"
        gx --workspace "$T/ws" "${PROBE[@]}" setfcap "$T/ws/prog"
        expect_status 0
        [ "$output" = "setfcap $T/ws/prog EPERM" ] || fail "setting security.capability must fail with EPERM"
        run "$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "security.capability").hex())' "$T/ws/prog"
        [ "$status" -ne 0 ] || fail "the host file has file capabilities: $output"
}

@test "grants: files the agent creates do not keep setuid/setgid bits via sh and coreutils either" {
        mkd "$T/ws"
        gx --workspace "$T/ws" -- /bin/sh -c 'cp /bin/id ./id && chmod u+s ./id; cp /bin/id ./id2 && chmod g+s ./id2; true'
        local found
        found=$(find "$T/ws" -perm /6000 -printf '%m %u %p\n')
        [ -z "$found" ] || fail "setuid/setgid files reached the host: $found"
}

@test "grants: other spellings of /, /proc, /sys and /dev are refused too (.., //, /./, trailing /)" {
        refused --read /tmp/..
        refused --read //
        refused --read /./
        refused --read /tmp/../proc
        refused --read //proc
        refused --read /proc/
        refused --read /usr/../sys
        refused --read /tmp/../dev/shm
}

@test "grants: a grant path with newline, quote, backslash and a non-UTF-8 byte works and is audited as one JSON line" {
        local d=$T/$'we"ird\nname\\ x\xff'
        mkdir -p "$d"
        echo weird >"$d/f"
        local log=$T/audit.jsonl
        gx --audit-log "$log" --read "$d" -- /bin/cat "$d/f"
        expect_status 0
        expect_output weird
        # Host bytes are logged as documented in include/glove/audit/log.h:
        # valid UTF-8 as is, except that a backslash becomes "\\" and a NUL
        # or invalid byte "\xNN" once anything needs escaping.
        run "$PY" -c '
import json, os, sys
def esc(s):
    if "\\" not in s and "\0" not in s and not any(0xDC80 <= ord(c) <= 0xDCFF for c in s):
        return s
    out = []
    for c in s:
        if c == "\\": out.append("\\\\")
        elif 0xDC80 <= ord(c) <= 0xDCFF: out.append("\\x%02x" % (ord(c) - 0xDC00))
        elif c == "\0": out.append("\\x00")
        else: out.append(c)
    return "".join(out)
recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert [r["event"] for r in recs] == ["launch", "exit"], recs
assert recs[0]["grants"][0]["path"] == esc(sys.argv[2]), (recs[0]["grants"], esc(sys.argv[2]))
print("ok")' "$log" "$d"
        expect_output ok
}

@test "grants: a symlink swapped into a --write grant during launch never exposes its target" {
        mkd "$T/race/p/data" "$T/race/secret/data"
        echo REAL >"$T/race/p/data/flag"
        echo SECRET >"$T/race/secret/data/flag"
        ln -s "$T/race/secret" "$T/race/alt"
        race "$T/race/p" "$T/race/p/data" 100 "$T/race/p/data/flag" write
}

@test "grants: a symlink swapped into a --workspace during launch never exposes its target" {
        mkd "$T/race/p/data" "$T/race/secret/data"
        echo REAL >"$T/race/p/data/flag"
        echo SECRET >"$T/race/secret/data/flag"
        ln -s "$T/race/secret" "$T/race/alt"
        race "$T/race/p" "$T/race/p/data" 60 "$T/race/p/data/flag" workspace
}
