#!/usr/bin/env bats
# Host-wide resources and boundaries a red-team pass and a newcomer crossed
# (issue 14): TCP socket memory, the open-file table, the kernel keyring
# listing, line disciplines, writable grants of system directories, grants
# holding a running gloved's runtime directory; per-uid counters the agent
# shares with the invoker's other processes (issue 31): queued signals,
# fanotify groups, pipe buffers, locked shared memory, processes without a
# run cgroup. Each attack is made from inside the sandbox by a real program
# (tests/agents/hostwide.py); the per-uid ones are measured from a host
# process of the invoking uid while the agent holds what it could take.

load helpers
load "$GLOVE_IT_LIB/gloved"

HW=("$PY" "$AGENTS/hostwide.py")

setup() {
        T=$BATS_TEST_TMPDIR
}

teardown() {
        gloved_teardown
        local m
        for m in "${MOUNTED[@]}"; do umount -l "$m" 2>/dev/null || true; done
        return 0
}

MOUNTED=()
# bind_or_skip SRC DEST: a bind mount on the host, undone in teardown; skips
# with the reason where this mode cannot mount (an unprivileged invoker).
bind_or_skip() {
        is_root || skip "uid $(id -u) cannot make the bind mount $2 (the attack needs root)"
        mkdir -p "$2"
        mount --bind "$1" "$2" || skip "mount --bind $1 $2 failed here"
        MOUNTED=("$2" "${MOUNTED[@]}")
}

# start_gloved_dirs RUNTIME STATE: gloved with those directories (as
# start_gloved, which puts both under one base).
start_gloved_dirs() {
        RT=$1 ST=$2 GD_ERR=$T/gloved.err
        "$GLOVED" --runtime-dir "$RT" --state-dir "$ST" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RT" "$GD_PID"
}

# refused_gloved_runtime WHAT: the last gx was refused before the sandbox
# started (125) because its grant reaches a live gloved's directory.
refused_gloved_runtime() {
        expect_glove_error 125 || return 1
        [ "$(glove_error_code)" = grant.gloved_runtime ] || fail "$1: expected grant.gloved_runtime, got: $stderr"
}

# tcp_mem: the host's TCP memory in pages (/proc/net/sockstat "TCP: ... mem N").
tcp_mem() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

# cgroup_or_skip: runs with a cgroup limit need a delegated cgroup.
cgroup_or_skip() {
        local err
        err=$(cd / && "$GLOVE" exec --memory 128M -- /bin/true 2>&1 >/dev/null </dev/null) ||
                skip "no run cgroup for uid $(id -u) on this host (${err%%;*}); the TCP bound is the run cgroup's"
}

# ------------------------------------------------------------ TCP socket memory

@test "hostwide: an egress run's network namespace caps each TCP socket's buffers at 4 MiB (tcp_rmem/tcp_wmem maxima); the host's are untouched" {
        # The agent cannot fill a connection of its own any more (Landlock
        # refuses its listeners: the test below); what each socket to Glove's
        # listeners may queue is its namespace's maxima.
        gx --egress-allow example.com:443 -- /bin/cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem
        expect_status 0
        [[ "${lines[0]}" =~ [[:space:]]4194304$ && "${lines[1]}" =~ [[:space:]]4194304$ ]] || fail "tcp_rmem/tcp_wmem max: $output"
        # The host's own values are untouched.
        [ "$(awk '{print $3}' /proc/sys/net/ipv4/tcp_rmem)" != 4194304 ] || [ "$(awk '{print $3}' /proc/sys/net/ipv4/tcp_wmem)" != 4194304 ] ||
                skip "the host itself uses 4194304 as both maxima"
}

@test "hostwide: an egress run holding every TCP connection it can under --memory 128M pins at most 64 MiB of host TCP memory; its own listeners and self-connects are refused" {
        cgroup_or_skip
        # Unbounded, 8 processes held 4,000 loopback connections of their own
        # (a listener each, filled without reading) and the host's TCP memory
        # grew by 80,000 pages (313 MiB): the kernel admits one packet per
        # connection past the cgroup's socket limit. 4 x 600 tries are
        # enough to pass 64 MiB that way.
        local fifo=$T/fifo out=$T/out err=$T/err before after
        mkfifo "$fifo"
        chmod 0666 "$fifo"
        before=$(tcp_mem)
        "$PY" "$LIB/spawn.py" "$GLOVE" exec --memory 128M --egress-allow example.com:443 --read "$AGENTS" -- \
                "${HW[@]}" tcpmany 4 600 <"$fifo" >"$out" 2>"$err" 3>&- &
        GPID=$!
        track_pid "$GPID"
        exec 7>"$fifo"
        wait_for "$out" '^held ' 60 || { cat "$err" >&2; exec 7>&-; return 1; }
        after=$(tcp_mem)
        exec 7>&-
        wait_exit "$GPID" 30
        echo "# $(tr '\n' ' ' <"$out"); host TCP memory grew by $((after - before)) pages" >&3
        grep -qx 'own EACCES' "$out" || fail "a listener of the agent's own was accepted: $(cat "$out")"
        grep -qx 'self EACCES' "$out" || fail "a self-connected socket was made: $(cat "$out")"
        [ $((after - before)) -lt $(((64 << 20) / 4096)) ] || fail "the host's TCP memory grew by $((after - before)) pages"
}

@test "hostwide: MPTCP and SCTP sockets, which Landlock's TCP ports do not cover, are refused with egress" {
        gx --egress-allow example.com:443 -- "$PY" -c '
import errno, socket
for p in (262, 132):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
        print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode[e.errno])'
        expect_status 0
        expect_line "262 EPERM"
        expect_line "132 EPERM"
}

# ------------------------------------------------------------ open files

@test "hostwide: the agent's descriptors are bounded at 1024 (EMFILE) and the hard limit cannot be raised" {
        gx --read "$AGENTS" -- "${HW[@]}" nofile 5000
        expect_status 0
        expect_line "limit 1024 1024"
        [[ "${lines[0]}" =~ ^opened\ 10[0-9][0-9]\ EMFILE$ ]] || fail "expected EMFILE before 1024 descriptors"
        expect_line "raise EPERM"
}

@test "hostwide: --nofile N sets the bound; above the invoker's hard limit it is refused; a lower invoker limit wins" {
        gx --nofile 64 --read "$AGENTS" -- "${HW[@]}" nofile 5000
        expect_status 0
        expect_line "limit 64 64"
        [[ "${lines[0]}" =~ ^opened\ [0-9]+\ EMFILE$ ]] || fail "expected EMFILE"
        run --separate-stderr bash -c 'ulimit -n 4096 && exec "$@"' sh "$GLOVE" exec --nofile 5000 -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = limits.nofile_above_hard ] || fail "expected limits.nofile_above_hard"
        run --separate-stderr bash -c 'ulimit -n 512 && exec "$@"' sh "$GLOVE" exec --read "$AGENTS" -- "${HW[@]}" nofile 5000
        expect_status 0
        expect_line "limit 512 512"
        gx --nofile 8 -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = usage.bad_number ] || fail "expected usage.bad_number below 16"
}

# ------------------------------------------------------------ kernel keys

@test "hostwide: /proc/keys and /proc/key-users do not list the invoker's kernel keys" {
        local desc=glove-it-key-$$-$RANDOM
        # add_key(2) (x86_64 248) into the invoker's user keyring (-4).
        "$PY" -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(248, b"user", sys.argv[1].encode(), b"secret", 6, ctypes.c_int(-4))
sys.exit(0 if r > 0 else 1)' "$desc" || skip "add_key is not available to uid $(id -u) here"
        grep -q "$desc" /proc/keys || fail "the key is not listed on the host (the test proves nothing)"
        gx --read "$AGENTS" -- "${HW[@]}" keys
        # keyctl(KEYCTL_INVALIDATE=21) of every key with that description.
        "$PY" -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
for line in open("/proc/keys"):
    if sys.argv[1] in line:
        libc.syscall(250, 21, int(line.split()[0], 16))' "$desc"
        expect_status 0
        expect_no_text "$desc"
        expect_line "/proc/keys EACCES"
        expect_line "/proc/key-users EACCES"
}

# ------------------------------------------------------------ terminal ioctls

@test "hostwide: TIOCSETD (line discipline) and TIOCSTI are refused with EPERM, with --tty and without" {
        gx --read "$AGENTS" -- "${HW[@]}" tiocsetd
        expect_status 0
        expect_line "tiocsetd 0 EPERM"
        expect_line "tiocsetd 1 EPERM"
        expect_line "tiocsti EPERM"
        gx --tty --read "$AGENTS" -- "${HW[@]}" tiocsetd
        expect_status 0
        [[ "$output" == *"tiocsetd 0 EPERM"* && "$output" == *"tiocsetd 1 EPERM"* ]] || fail "TIOCSETD on the PTY"
        [[ "$output" == *"tiocsti EPERM"* ]] || fail "TIOCSTI on the PTY"
}

# ------------------------------------------------------------ system directories

@test "hostwide: writable grants of system directories are refused (grant.system_directory); read-only, /tmp and /var/tmp are not" {
        local p
        for p in /usr /etc /usr/local /var/lib /boot /root; do
                [ -d "$p" ] || continue
                gx --write "$p" -- /bin/true
                expect_glove_error 125
                [ "$(glove_error_code)" = grant.system_directory ] || fail "--write $p: expected grant.system_directory"
                [[ "$stderr" == *--unsafe-write-system-dir* ]] || fail "the message names the option"
        done
        gx --workspace /etc -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.system_directory ] || fail "--workspace /etc"
        gx --read /etc/ssl -- /bin/true
        expect_status 0
        local vt
        vt=$(mktemp -d /var/tmp/glove-it.XXXXXX)
        gx --write "$vt" -- /bin/sh -c "echo x > $vt/f"
        rm -rf "$vt"
        expect_status 0
}

@test "hostwide: --unsafe-write-system-dir allows a writable grant beneath a system directory (root)" {
        is_root || skip "only root can make a directory beneath /var/lib to grant"
        local d
        d=$(mktemp -d /var/lib/glove-it.XXXXXX)
        gx --write "$d" -- /bin/sh -c "echo x > $d/f"
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.system_directory ] || { rm -rf "$d"; fail "expected grant.system_directory"; }
        gx --unsafe-write-system-dir --write "$d" -- /bin/sh -c "echo made > $d/f"
        local made
        made=$(cat "$d/f" 2>/dev/null || true)
        rm -rf "$d"
        expect_status 0
        [ "$made" = made ] || fail "the agent did not write through the allowed grant"
}

@test "hostwide: a writable grant of a bind mount of a system directory, or holding one beneath it, is refused (grant.system_directory)" {
        local sysd=/etc/cron.d
        [ -d "$sysd" ] || sysd=/etc/default
        [ -d "$sysd" ] || skip "neither /etc/cron.d nor /etc/default exists here"
        [ ! -e "$sysd/p" ] && [ ! -e /etc/p ] || skip "$sysd/p or /etc/p exists already"
        mkdir -p "$T/x/w"
        bind_or_skip "$sysd" "$T/x/bcron"
        gx --write "$T/x/bcron" -- touch "$T/x/bcron/p"
        [ ! -e "$sysd/p" ] || { rm -f "$sysd/p"; fail "the agent wrote $sysd/p through the bind mount"; }
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.system_directory ] || fail "--write of a bind of $sysd: expected grant.system_directory"
        [[ "$stderr" == *--unsafe-write-system-dir* ]] || fail "the message names the option"
        bind_or_skip /etc "$T/x/w/sub"
        gx --write "$T/x/w" -- touch "$T/x/w/sub/p"
        [ ! -e /etc/p ] || { rm -f /etc/p; fail "the agent wrote /etc/p through the submount"; }
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.system_directory ] || fail "--write of a parent of a bind of /etc"
        [[ "$stderr" == *"through a mount beneath it"* ]] || fail "the message names the submount"
        gx --workspace "$T/x" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.system_directory ] || fail "--workspace of a grandparent"
        # Read-only stays allowed, and so does a writable grant beside the mounts.
        gx --read "$T/x/w" -- /bin/cat "$T/x/w/sub/hostname"
        [ -e /etc/hostname ] && expect_status 0
        mkdir -p "$T/x/w/plain"
        gx --write "$T/x/w/plain" -- touch "$T/x/w/plain/f"
        expect_status 0
}

# ------------------------------------------------------------ gloved's runtime directory

@test "hostwide: grants holding or inside a running gloved's runtime directory are refused (grant.gloved_runtime)" {
        require_gloved
        start_gloved "$T/g"
        gx --read "$T" -- /bin/cat "$RT/bootstrap-secret"
        refused_gloved_runtime "--read of a parent"
        gx --read "$RT/bootstrap-secret" -- /bin/true
        refused_gloved_runtime "--read of the secret"
        gx --write "$T/g" -- /bin/true
        refused_gloved_runtime "--write of a parent"
        stop_gloved
        gx --read "$T" -- /bin/true
        expect_status 0
}

@test "hostwide: a live gloved's state directory cannot be granted nor copied by --home-from (grant.gloved_runtime)" {
        require_gloved
        mkdir -p "$T/home/.local/state"
        start_gloved_dirs "$T/rt" "$T/home/.local/state/glove"
        [ -f "$ST/receipt.key" ] || fail "gloved made no receipt.key (the test proves nothing)"
        gx --read "$ST" -- /bin/cat "$ST/receipt.key"
        refused_gloved_runtime "--read of the state dir"
        gx --read "$ST/leases" -- /bin/true
        [ -d "$ST/leases" ] && refused_gloved_runtime "--read of leases/"
        gx --home-from "$T/home/.local/state" -- /bin/cat /home/agent/glove/receipt.key
        refused_gloved_runtime "--home-from a parent of the state dir"
        gx --read "$T/home/.local" -- /bin/true
        refused_gloved_runtime "--read of a grandparent"
        stop_gloved
        gx --read "$ST" -- /bin/true
        expect_status 0
}

@test "hostwide: a live gloved's runtime directory renamed after it started, or bind-mounted beneath a grant, is refused (grant.gloved_runtime)" {
        require_gloved
        mkdir -p "$T/W" "$T/B"
        start_gloved_dirs "$T/W/rt2" "$T/st"
        mv "$T/W/rt2" "$T/B/rt"
        gx --read "$T/B" -- /bin/cat "$T/B/rt/bootstrap-secret"
        refused_gloved_runtime "--read of the new parent"
        [[ "$stderr" == *"$T/B/rt"* ]] || fail "the message names where the directory is now"
        gx --read "$T/W" -- /bin/true
        expect_status 0
        bind_or_skip "$T/B" "$T/G/sub"
        gx --read "$T/G" -- /bin/cat "$T/G/sub/rt/bootstrap-secret"
        refused_gloved_runtime "--read of a parent of a bind of it"
}

@test "hostwide: only the private directories a live gloved keeps are guarded, not one it has open in passing (a listing of /, a copy walk)" {
        # A stand-in gloved (a process named gloved* holding a bound
        # gloved.sock) that holds / and a project tree as gloved's grant
        # checks and copy walks do for a moment, and one directory tagged as
        # kept, as gloved tags its runtime and state directories.
        mkdir -p "$T/rt" "$T/project/src" "$T/kept/inner" "$T/other"
        chmod 0700 "$T/rt" "$T/kept"
        cat >"$T/fake_gloved.py" <<'PY'
import ctypes, fcntl, os, socket, sys, time
ctypes.CDLL(None).prctl(15, b"gloved-standin", 0, 0, 0)  # PR_SET_NAME
rt, project, kept = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX)
s.bind(rt + "/gloved.sock")
s.listen()
held = [os.open("/", os.O_RDONLY | os.O_DIRECTORY), os.open(project, os.O_RDONLY | os.O_DIRECTORY)]
k = os.open(kept, os.O_RDONLY | os.O_DIRECTORY)
fcntl.fcntl(k, fcntl.F_SETFL, fcntl.fcntl(k, fcntl.F_GETFL) | os.O_NOATIME)
open(rt + "/up", "w").write("up\n")
time.sleep(120)
PY
        "$PY" "$T/fake_gloved.py" "$T/rt" "$T/project" "$T/kept" 2>"$T/fake.err" </dev/null 3>&- &
        track_pid $!
        wait_for "$T/rt/up" up 30 || fail "the stand-in gloved did not start: $(cat "$T/fake.err")"
        [ "$(cat /proc/$!/comm)" = gloved-standin ] || fail "the stand-in is not named gloved* (the test proves nothing)"
        gx --read "$T/other" -- /bin/true
        expect_status 0
        gx --read "$T/project" -- /bin/ls "$T/project"
        expect_status 0
        [[ "$output" == *src* ]] || fail "the project was not readable: $output"
        gx --write "$T/project/src" -- /bin/true
        expect_status 0
        gx --read "$T/kept/inner" -- /bin/true
        refused_gloved_runtime "inside a kept directory"
        gx --read "$T" -- /bin/true
        refused_gloved_runtime "a parent of the stand-in's directories"
}

@test "hostwide: gloved refuses to start with its directories inside a running sandbox's grant (service.exposed_directory)" {
        require_gloved
        local d=$T/rt16
        mkdir -p "$d"
        # The sandbox runs first: the grant check at its start saw no gloved.
        spawn_glove "$T/sb.out" "$T/sb.err" --write "$d" -- /bin/sh -c "echo up > $d/up; exec sleep 120"
        wait_for "$d/up" up 30 || fail "the sandbox did not start: $(cat "$T/sb.err")"
        gloved_fails --runtime-dir "$d/run" --state-dir "$d/state"
        expect_status 1
        [[ "$stderr" == *"service.exposed_directory"* ]] || fail "expected service.exposed_directory: $stderr"
        [ ! -e "$d/state/receipt.key" ] || fail "gloved made its receipt key where the sandbox reaches it"
        [ ! -e "$d/run/bootstrap-secret" ] || fail "gloved wrote its bootstrap secret where the sandbox reaches it"
        # Inside a directory of the grant, or holding it: refused alike.
        mkdir -p "$d/sub"
        gloved_fails --runtime-dir "$T/rt2" --state-dir "$d/sub/state"
        expect_status 1
        [[ "$stderr" == *"service.exposed_directory"* ]] || fail "a state directory deeper in the grant: $stderr"
        # Directories no sandbox reaches: gloved starts while the sandbox runs.
        start_gloved "$T/g"
        [ -f "$ST/receipt.key" ] || fail "gloved beside the sandbox made no receipt key"
        stop_gloved
}

# ------------------------------------------------------------ the audit log and the status file

@test "hostwide: an audit log or status file with a hard link inside a grant is refused (audit.hard_link, status.hard_link)" {
        mkdir -p "$T/logs" "$T/wg"
        gx --audit-log "$T/logs/a.jsonl" -- /bin/true
        expect_status 0
        ln "$T/logs/a.jsonl" "$T/wg/hl.jsonl"
        gx --write "$T/wg" --audit-log "$T/logs/a.jsonl" -- /bin/sh -c "echo forged >> $T/wg/hl.jsonl"
        expect_glove_error 125
        [ "$(glove_error_code)" = audit.hard_link ] || fail "expected audit.hard_link"
        ! grep -q forged "$T/logs/a.jsonl" || fail "the agent appended to the audit log"
        # Hard links anywhere count, not only inside a grant.
        rm "$T/wg/hl.jsonl"
        ln "$T/logs/a.jsonl" "$T/logs/other.jsonl"
        gx --audit-log "$T/logs/a.jsonl" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = audit.hard_link ] || fail "a second name outside the grants"
        rm "$T/logs/other.jsonl"
        gx --write "$T/wg" --audit-log "$T/logs/a.jsonl" -- /bin/true
        expect_status 0
        echo '{}' >"$T/logs/s.json"
        ln "$T/logs/s.json" "$T/wg/s.json"
        gx --write "$T/wg" --status-json "$T/logs/s.json" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = status.hard_link ] || fail "expected status.hard_link"
}

@test "hostwide: an audit log or status file whose directory is bind-mounted beneath a grant is refused (grant.exposes_*)" {
        mkdir -p "$T/logs" "$T/wg"
        bind_or_skip "$T/logs" "$T/wg/sub"
        gx --write "$T/wg" --audit-log "$T/logs/a.jsonl" -- /bin/sh -c "echo forged >> $T/wg/sub/a.jsonl"
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.exposes_audit_log ] || fail "expected grant.exposes_audit_log"
        ! grep -qs forged "$T/logs/a.jsonl" || fail "the agent appended to the audit log"
        gx --read "$T/wg" --status-json "$T/logs/s.json" -- /bin/true
        expect_glove_error 125
        [ "$(glove_error_code)" = grant.exposes_status_file ] || fail "expected grant.exposes_status_file"
        # The same log beside the grant is fine.
        gx --write "$T/wg" --audit-log "$T/other.jsonl" -- /bin/true
        expect_status 0
}

# ------------------------------------------------------------ Unix sockets

# unix_listener PATH: a host process listening on the pathname socket PATH
# that answers every connection with HOST-UNIX.
unix_listener() {
        local ready=$T/ready.$RANDOM
        "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8); s.settimeout(20)
open(sys.argv[2], "w").write("ready\n")
try:
    while True:
        c, _ = s.accept(); c.sendall(b"HOST-UNIX\n"); c.close()
except Exception:
    pass
' "$1" "$ready" 3>&- &
        track_pid $!
        wait_for "$ready" '^ready$' 10
}

@test "hostwide: a pathname Unix socket a host process listens on inside a grant is unreachable (socket EPERM); --unix-sockets reaches it" {
        mkdir -p "$T/g"
        chmod 0755 "$T" "$T/g"
        unix_listener "$T/g/service.sock"
        chmod 0777 "$T/g/service.sock"
        gx --read "$T/g" --read "$AGENTS" -- "${HW[@]}" unix-connect "$T/g/service.sock"
        expect_status 0
        expect_output "socket EPERM"
        gx --egress-allow example.com:443 --read "$T/g" --read "$AGENTS" -- "${HW[@]}" unix-connect "$T/g/service.sock"
        expect_status 0
        expect_output "socket EPERM"
        gx --read "$AGENTS" -- "${HW[@]}" socketpair
        expect_status 0
        expect_output "socketpair ok:y"
        # connect and setsockopt themselves stay for glove exec (EBADF on -1).
        gx "${PROBE[@]}" sys connect sys setsockopt
        expect_status 0
        expect_line "sys connect EBADF"
        expect_line "sys setsockopt EBADF"
        # What --unix-sockets leaves reachable, as documented.
        gx --unix-sockets --read "$T/g" --read "$AGENTS" -- "${HW[@]}" unix-connect "$T/g/service.sock"
        expect_status 0
        expect_output "connect ok:HOST-UNIX"
}

# ------------------------------------------------------------ per-uid counters (issue 31)

# hold_agent OP ARG...: starts `hostwide.py OP ARG...` in a sandbox with its
# stdin on a FIFO kept open by this shell (fd 7) and waits until it says
# "holding" (it has taken what it can); HOUT is its output. release_agent
# lets it end.
hold_agent() {
        local fifo=$T/hold.fifo err=$T/hold.err
        HOUT=$T/hold.out
        mkfifo "$fifo"
        chmod 0666 "$fifo"
        "$PY" "$LIB/spawn.py" "$GLOVE" exec --read "$AGENTS" -- "${HW[@]}" "$@" <"$fifo" >"$HOUT" 2>"$err" 3>&- &
        GPID=$!
        track_pid "$GPID"
        exec 7>"$fifo"
        wait_for "$HOUT" '^holding$' 60 || { cat "$HOUT" "$err" >&2; exec 7>&-; return 1; }
}
release_agent() {
        exec 7>&-
        wait_exit "$GPID" 20
}

# host_proc CMD...: CMD as a host process of the invoking uid, without
# capabilities (root's CAP_SYS_RESOURCE would pass the per-user pipe limit),
# stdin closed (hostwide.py then does not hold what it took).
host_proc() {
        if is_root; then
                setpriv --bounding-set=-all --inh-caps=-all -- "$@" </dev/null
        else
                "$@" </dev/null
        fi
}

@test "hostwide: queued real-time signals and POSIX timers stop at the sandbox's RLIMIT_SIGPENDING (EAGAIN, hard limit fixed); the invoker's host processes can still sigqueue and timer_create" {
        # RLIMIT_SIGPENDING counts per user in every user namespace up to the
        # host's: unbounded, the agent queued the invoker's whole limit
        # (96,360 here) and sigqueue/timer_create failed in every host
        # process of the uid, root's included.
        local soft bound host
        soft=$(ulimit -Si)
        bound=1024
        [ "$soft" = unlimited ] || [ $((soft / 4)) -ge $bound ] || bound=$((soft / 4))
        hold_agent sigfill 200000
        host=$(host_proc "${HW[@]}" sigfill 1024 | tr '\n' ' ')
        release_agent
        echo "# agent (uid limit $soft): $(tr '\n' ' ' <"$HOUT")| host process meanwhile: $host" >&3
        grep -qx "queued $bound EAGAIN" "$HOUT" || fail "the agent was not stopped at $bound queued signals: $(head -1 "$HOUT")"
        grep -qx "timer EAGAIN" "$HOUT" || fail "timer_create was not refused at the bound"
        grep -qx "limit $bound $bound" "$HOUT" || fail "RLIMIT_SIGPENDING inside is not $bound/$bound"
        grep -qx "raise EPERM" "$HOUT" || fail "the agent raised its hard RLIMIT_SIGPENDING"
        [[ "$host" == *"queued 1024 ok"*"timer ok"* ]] || fail "a host process of uid $(id -u) could not queue a signal or make a timer: $host"
}

@test "hostwide: fanotify_init is refused in the sandbox (EPERM); the invoker keeps every fanotify group of its uid" {
        local max host
        max=$(cat /proc/sys/user/max_fanotify_groups 2>/dev/null) || skip "no user.max_fanotify_groups on this kernel (fanotify groups are not counted per user)"
        # Unbounded, the agent took all max_fanotify_groups (128) of the uid.
        hold_agent fanotify 100000
        host=$(host_proc "${HW[@]}" fanotify "$max")
        host=${host%%$'\n'*}
        release_agent
        echo "# agent: $(head -1 "$HOUT"); host process meanwhile (limit $max): $host" >&3
        grep -qx "groups 0 EPERM" "$HOUT" || fail "the agent made fanotify groups: $(head -1 "$HOUT")"
        [[ "$host" =~ ^groups\ ([0-9]+)\  ]] || fail "host: $host"
        [ "${BASH_REMATCH[1]}" -ge $((max / 2)) ] || fail "a host process of uid $(id -u) got ${BASH_REMATCH[1]} of $max fanotify groups"
}

@test "hostwide: the agent cannot grow a pipe past 64 KiB (F_SETPIPE_SZ EPERM); a host process of the invoking uid can still grow one to 1 MiB" {
        local soft host n
        soft=$(cat /proc/sys/fs/pipe-user-pages-soft)
        [ "$soft" -gt 0 ] || skip "fs.pipe-user-pages-soft is 0 here: no per-user soft limit to take"
        # Unbounded, soft/256 one-MiB pipes (64 with the default 16,384
        # pages) took the uid's whole soft limit: the invoker's other
        # processes then failed F_SETPIPE_SZ with EPERM.
        n=$((soft / 256 + 1))
        hold_agent pipes "$n" 1048576
        host=$(host_proc "${HW[@]}" pipes 1 1048576)
        host=${host%%$'\n'*}
        release_agent
        echo "# agent: $(head -1 "$HOUT"); host process meanwhile: $host" >&3
        grep -qx "pipes $n grown 0 EPERM" "$HOUT" || fail "the agent grew pipes: $(head -1 "$HOUT")"
        [ "$host" = "pipes 1 grown 1 ok" ] || fail "a host process of uid $(id -u) could not grow a pipe to 1 MiB: $host"
        # Shrinking, and setting the default size, stay allowed.
        gx --read "$AGENTS" -- "${HW[@]}" pipes 2 65536
        expect_status 0
        expect_line "pipes 2 grown 2 ok"
        gx --read "$AGENTS" -- "${HW[@]}" pipes 2 4096
        expect_status 0
        expect_line "pipes 2 grown 2 ok"
}

@test "hostwide: with the invoker's uid past fs.pipe-user-pages-soft (default-size pipes, no F_SETPIPE_SZ for the uid), the egress relay still carries a 4 MiB tunnel" {
        local soft n port
        soft=$(cat /proc/sys/fs/pipe-user-pages-soft)
        [ "$soft" -gt 0 ] || skip "fs.pipe-user-pages-soft is 0 here: nothing to go past"
        # Default-size pipes cost 16 pages each: soft/16 + 256 of them put
        # the uid past its soft limit (what the seccomp cap cannot prevent,
        # docs/threat-model.md); the relay's own pipes are then two pages and
        # its F_SETPIPE_SZ fails.
        n=$((soft / 16 + 256))
        [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge $((n + 64)) ] || skip "uid $(id -u)'s hard RLIMIT_NOFILE $(ulimit -Hn) is below the $((n + 64)) descriptors the test needs"
        mkdir -p "$T/www"
        head -c $((4 << 20)) /dev/zero >"$T/www/big"
        "$PY" -u -m http.server --bind 127.0.0.1 --directory "$T/www" 0 >"$T/www.out" 2>&1 3>&- &
        track_pid $!
        wait_for "$T/www.out" ' port [0-9]+' 10 || fail "no HTTP server: $(cat "$T/www.out")"
        port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$T/www.out" | head -1)
        gx --nofile $((n + 64)) --egress-allow "127.0.0.1:$port" --read "$AGENTS" -- "${HW[@]}" pipes "$n" 0 \
                /usr/bin/curl -sS -p -o /dev/null -w '%{size_download}\n' "http://127.0.0.1:$port/big" </dev/null
        echo "# agent held $n default-size pipes: $(echo $output)" >&3
        expect_status 0
        expect_line "pipes $n grown 0 ok"
        expect_line "new pipe 8192"
        expect_line "$((4 << 20))"
        expect_line "ran 0"
}

@test "hostwide: shared memory the agent locks (SHM_LOCK) stops at a quarter of the invoker's RLIMIT_MEMLOCK; a host process of the invoking uid can still lock 1 MiB" {
        local soft host quarter
        soft=$(ulimit -Sl)
        [ "$soft" != unlimited ] || skip "RLIMIT_MEMLOCK is unlimited for uid $(id -u): Glove leaves it so, and nothing is counted against a limit"
        quarter=$((soft * 1024 / 4))
        [ "$soft" -ge 4096 ] || skip "uid $(id -u)'s RLIMIT_MEMLOCK ($soft KiB) is below the 4 MiB the test locks in 1 MiB segments"
        # Counted per user up to the host's user namespace: unbounded, the
        # agent locked the invoker's whole limit and SHM_LOCK failed in the
        # invoker's other processes (ENOMEM).
        hold_agent shmlock 100000
        host=$(host_proc "${HW[@]}" shmlock 1)
        host=${host%%$'\n'*}
        release_agent
        echo "# agent (uid limit $soft KiB): $(tr '\n' ' ' <"$HOUT")| host process meanwhile: $host" >&3
        grep -qx "limit $quarter $quarter" "$HOUT" || fail "RLIMIT_MEMLOCK inside is not $quarter/$quarter"
        grep -qxE "locked $((quarter >> 20)) (ENOMEM|EPERM)" "$HOUT" || fail "the agent locked other than $((quarter >> 20)) MiB: $(head -1 "$HOUT")"
        [ "$host" = "locked 1 ok" ] || fail "a host process of uid $(id -u) could not lock 1 MiB: $host"
}

@test "hostwide: without a run cgroup, an unprivileged invoker's agent stops forking at RLIMIT_NPROC (the pids default); the invoker's host processes can still fork" {
        is_root || skip "the test runs glove as a uid of its own, which has no delegated cgroup; switching to it needs root"
        local u=54329 fifo=$T/np.fifo host n
        ! getent passwd "$u" >/dev/null || skip "uid $u exists on this host"
        [ -z "$(ps -o pid= -u "$u")" ] || skip "uid $u has processes on this host"
        # Processes count per uid up to the host's user namespace: unbounded
        # (no pids.max), the agent forked up to the invoker's RLIMIT_NPROC
        # and the invoker's host processes could fork no more.
        HOUT=$T/np.out
        mkfifo "$fifo"
        (cd / && exec setpriv --reuid="$u" --regid="$u" --clear-groups bash -c 'ulimit -u 2000 && exec "$@"' sh \
                "$GLOVE" exec --read "$AGENTS" -- "${HW[@]}" forkfill 5000) <"$fifo" >"$HOUT" 2>"$T/np.err" 3>&- &
        GPID=$!
        track_pid "$GPID"
        exec 7>"$fifo"
        wait_for "$HOUT" '^holding$' 60 || { cat "$HOUT" "$T/np.err" >&2; exec 7>&-; fail "the agent did not report"; }
        host=$(cd / && setpriv --reuid="$u" --regid="$u" --clear-groups bash -c 'ulimit -u 2000 && exec "$@"' sh "${HW[@]}" forkfill 1 </dev/null)
        host=${host%%$'\n'*}
        release_agent
        echo "# agent of uid $u (its limit 2000): $(tr '\n' ' ' <"$HOUT")| host process meanwhile: $host" >&3
        grep -q 'limits.degraded' "$T/np.err" || fail "the run had a cgroup (the test proves nothing): $(cat "$T/np.err")"
        grep -qx "limit 512 512" "$HOUT" || fail "RLIMIT_NPROC inside is not 512"
        [[ "$(head -1 "$HOUT")" =~ ^forked\ ([0-9]+)\ EAGAIN$ ]] || fail "the agent: $(head -1 "$HOUT")"
        n=${BASH_REMATCH[1]}
        [ "$n" -le 512 ] && [ "$n" -ge 400 ] || fail "the agent forked $n processes"
        [ "$host" = "forked 1 ok" ] || fail "a host process of uid $u could not fork: $host"
}
