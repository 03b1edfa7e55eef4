#!/usr/bin/env bats
# Regression tests for what a red-team pass found, each attacking from the
# agent's side (or the host's, where Glove itself was the target).

load helpers

setup() {
        T=$BATS_TEST_TMPDIR
}

# Unmounts whatever a test mounted below its directory (deepest first).
teardown() {
        kill_tracked
        [ "$(id -u)" -eq 0 ] || return 0
        local m
        awk -v t="$T/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
                umount -l "$(printf '%b' "${m//\\/\\0}")" 2>/dev/null || true
        done
}

@test "redteam: Glove's command line (upstream secrets, paths) is not readable in the sandbox's /proc" {
        mkd "$T/marker-GRANT-XYZZY"
        gx --read "$T/marker-GRANT-XYZZY" -- /bin/sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline; echo; done'
        expect_status 0
        expect_no_text XYZZY
        [[ "$output" == glove-init* ]] || fail "PID 1 does not show its fixed title: $output"
        # glove run: an argument given to an upstream never reaches the agent.
        run --separate-stderr timeout --foreground 30 "$GLOVE" run \
                --upstream "py=$PY,$AGENTS/mcp-upstream.py,--log,$T/sk-SECRET-FROM-ARGV.log" --allow 'py.*' \
                --upstream-ro "py:$AGENTS" --upstream-rw "py:$T" \
                -- /bin/sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " " >&2' </dev/null
        [[ "${stderr-}" != *sk-SECRET-FROM-ARGV* ]] || fail "an upstream argument is visible to the agent"
}

@test "redteam: grants under /run, /var/run, \$XDG_RUNTIME_DIR, and of /home are refused before the agent runs" {
        for path in /run /run/user /var/run; do
                gx --read "$path" -- /bin/echo AGENT-RAN
                expect_glove_error 125
                [ "$(glove_error_code)" = grant.restricted ] || fail "--read $path: $(glove_error_code)"
        done
        mkd "$T/xdg"
        run --separate-stderr env XDG_RUNTIME_DIR="$T/xdg" timeout 30 "$GLOVE" exec --read "$T/xdg" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.restricted ] || fail "XDG_RUNTIME_DIR: $(glove_error_code)"
        gx --read /home -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.shadows_home ] || fail "/home: $(glove_error_code)"
        expect_no_text AGENT-RAN
}

@test "redteam: --status-json is refused inside a grant and never replaces a non-regular file" {
        mkd "$T/ws/out"
        gx --workspace "$T/ws" --status-json "$T/ws/out/st.json" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.exposes_status_file ] || fail "$(glove_error_code)"
        mkfifo "$T/fifo"
        gx --status-json "$T/fifo" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ -p "$T/fifo" ] || fail "the FIFO was replaced"
        expect_no_text AGENT-RAN
        # A directory swapped in by anyone after the start changes nothing:
        # the file lands in the directory pinned at start.
        mkd "$T/st"
        gx --status-json "$T/st/s.json" -- /bin/true
        expect_status 0
        [ -s "$T/st/s.json" ] || fail "no status written"
}

@test "redteam: a torn last audit record is closed, so the next run's records stay parseable" {
        printf '{"ts":"x","event":"exit","exit_co' >"$T/audit.jsonl"
        gx --audit-log "$T/audit.jsonl" -- /bin/true
        expect_status 0
        run "$PY" -c 'import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0].startswith("{\"ts\":\"x\"") and lines[-1] == "", lines
events = [json.loads(l)["event"] for l in lines[1:-1]]
assert events == ["launch", "exit"], events' "$T/audit.jsonl"
        expect_status 0
}

@test "redteam: glove ctl refuses to authenticate to a socket served by another uid" {
        [ "$GLOVE_MODE" = root ] || skip "serving a socket as another uid needs root"
        # A directory the other user can reach (the test's own is private).
        local rt
        rt=$(mktemp -d /tmp/glove-rt.XXXXXX)
        chmod 0755 "$rt"
        printf '%064d\n' 0 >"$rt/bootstrap-secret"
        chmod 0644 "$rt/bootstrap-secret"
        chown 65534 "$rt"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c 'import socket, sys, os
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + "/gloved.sock"); s.listen(1)
open(sys.argv[1] + "/ready", "w").close()
c, _ = s.accept(); data = c.recv(4096); open(sys.argv[1] + "/got", "wb").write(data)' "$rt" &
        track_pid $!
        for _ in $(seq 50); do [ -e "$rt/ready" ] && break; sleep 0.1; done
        run --separate-stderr timeout 30 "$GLOVE" ctl --runtime-dir "$rt" capabilities
        local got=no
        sleep 0.3
        [ -s "$rt/got" ] && got=yes
        kill_tracked
        rm -rf "$rt"
        expect_status 125
        [[ "${stderr-}" == *client.wrong_peer* ]] || fail "not refused as the wrong peer: ${stderr-}"
        [ "$got" = no ] || fail "the secret was sent to another user's socket"
}

@test "redteam: a grant on, or holding, a proc/sysfs/cgroup mount is refused (the host's /proc under another name)" {
        [ "$GLOVE_MODE" = root ] || skip "mounting proc and sysfs under a test directory needs root"
        local d=$T/chroot m
        mkdir -p "$d/proc" "$d/sys fs" "$d/data" "$T/plain/disk"
        mount -t proc proc "$d/proc"
        mount -t sysfs sysfs "$d/sys fs"
        mount -t tmpfs -o size=1m tmpfs "$T/plain/disk"
        echo inside-submount >"$T/plain/disk/f"
        # A submount of another kind is carried in (positive control).
        gx --read "$T/plain" -- /bin/cat "$T/plain/disk/f"
        local ctl_status=$status ctl_out=$output
        for m in "--write $d" "--read $d" "--read $d/proc" "--write $d/proc/sys" "--read $d/sys fs" "--workspace $d"; do
                gx "${m%% *}" "${m#* }" -- /bin/sh -c "echo ran >$T/ran"
                expect_status 125
                [[ "$stderr" == "glove: grant.kernel_fs: "* ]] || fail "$m: expected grant.kernel_fs, got: $stderr"
                [ ! -e "$T/ran" ] || fail "$m: the agent ran"
        done
        # The host's /dev bound into a chroot: devtmpfs, known by name.
        if awk '$5 == "/dev" && / - devtmpfs / { found = 1 } END { exit !found }' /proc/self/mountinfo; then
                mkdir -p "$T/devroot/dev"
                mount --bind /dev "$T/devroot/dev"
                gx --read "$T/devroot" -- /bin/true
                expect_status 125
                [[ "$stderr" == *"$T/devroot/dev beneath it is a devtmpfs mount"* ]] ||
                        fail "a devtmpfs beneath a grant was not refused: $stderr"
        fi
        gx --read "$d" -- /bin/true
        [[ "$stderr" == *"$d/proc beneath it is a proc mount"* || "$stderr" == *"$d/sys fs beneath it is a sysfs mount"* ]] ||
                fail "the refusal does not name the submount: $stderr"
        [ "$ctl_status" -eq 0 ] && [ "$ctl_out" = inside-submount ] ||
                fail "a tmpfs beneath a grant was not carried in: status $ctl_status, output $ctl_out"
}

@test "redteam: host-wide kernel resources: no AIO context (fs.aio-max-nr), no file lease, at most 256 PTYs" {
        local f=$T/grant/file
        mkdir -p "$T/grant"
        echo data >"$f"
        gx --read "$T/grant" -- "$PY" -c '
import ctypes, errno, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ctx = ctypes.c_ulong(0)
r = libc.syscall(206, 1, ctypes.byref(ctx))  # io_setup (x86_64)
print("io_setup", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)  # F_SETLEASE
    print("lease ok")
except OSError as e:
    print("lease", errno.errorcode[e.errno])
fds = []
try:
    while len(fds) < 1000:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    print("ptys unbounded")
except OSError as e:
    print("ptys", len(fds), errno.errorcode[e.errno])
' "$f"
        expect_status 0
        expect_line "io_setup ENOSYS"
        expect_line "lease EPERM"
        expect_line "ptys 256 ENOSPC"
}

@test "redteam: root-only host-wide /proc files (slabinfo, vmallocinfo, kpageflags, timer_list, ...) cannot be read" {
        local f present=()
        for f in slabinfo vmallocinfo kpageflags kpagecount kpagecgroup pagetypeinfo timer_list; do
                [ -e "/proc/$f" ] && present+=("$f")
        done
        [ "${#present[@]}" -gt 0 ] || skip "none of these files exists on this kernel"
        gx -- /bin/sh -c 'for f in "$@"; do if head -c 1 "/proc/$f" >/dev/null 2>&1; then echo "$f readable"; else echo "$f denied"; fi; done; head -c 1 /proc/cpuinfo >/dev/null && echo "cpuinfo readable"' sh "${present[@]}"
        expect_status 0
        for f in "${present[@]}"; do expect_line "$f denied"; done
        expect_line "cpuinfo readable"
}

@test "redteam: the agent takes at most half of the invoker's inotify instances and a quarter of its message-queue bytes" {
        local out=$T/out err=$T/err max
        max=$(cat /proc/sys/user/max_inotify_instances)
        spawn_glove "$out" "$err" --wall-time 20000 -- "$PY" -c '
import ctypes, errno, resource, sys, time
libc = ctypes.CDLL(None, use_errno=True)
print("msgqueue", resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0])
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print("inotify", len(fds), errno.errorcode.get(ctypes.get_errno()), flush=True)
time.sleep(30)
'
        wait_for "$out" '^inotify ' 10
        # While the agent holds all it can get, the invoker still gets one.
        "$PY" -c 'import ctypes, sys; fd = ctypes.CDLL(None).inotify_init1(0); sys.exit(0 if fd >= 0 else 1)' ||
                fail "a host process of the invoker could not create an inotify instance while the agent held its share"
        kill -TERM "$GPID"
        wait_exit "$GPID" 10
        grep -qx "inotify $((max / 2)) EMFILE" "$out" || { cat "$out" >&2; fail "the agent got other than $((max / 2)) inotify instances"; }
        local mq
        mq=$(sh -c 'ulimit -q' 2>/dev/null || "$PY" -c 'import resource; print(resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0])')
        grep -qx "msgqueue $((mq / 4))" "$out" || { cat "$out" >&2; fail "RLIMIT_MSGQUEUE inside is not a quarter of $mq"; }
}
