#!/usr/bin/env bats
# Filesystem perimeter: what the agent can read and write, tried from inside
# with real programs (coreutils, sh, python3), each with a positive control.

load helpers

setup() {
        T=$BATS_TEST_TMPDIR
}

teardown() {
        kill_tracked
        [ -n "${HOME_SECRET:-}" ] && rm -f "$HOME_SECRET"
        [ -n "${VT:-}" ] && rm -rf "$VT"
        return 0
}

@test "filesystem: /etc/shadow, gshadow and sudoers do not exist inside" {
        if is_root; then
                # Positive control: on the host, root can read /etc/shadow.
                [ -r /etc/shadow ] || skip "host has no readable /etc/shadow"
        fi
        gx -- /bin/cat /etc/shadow
        expect_status 1
        [[ "$stderr" == *"/etc/shadow: No such file or directory"* ]] || fail "cat must report ENOENT"

        gx "${PROBE[@]}" read /etc/shadow read /etc/gshadow read /etc/sudoers exists /etc/sudoers.d read /etc/passwd
        expect_status 0
        expect_line "read /etc/shadow ENOENT"
        expect_line "read /etc/gshadow ENOENT"
        expect_line "read /etc/sudoers ENOENT"
        expect_line "exists /etc/sudoers.d no"
        # Positive control: the curated /etc is there and readable.
        [[ "$output" == *"read /etc/passwd ok:"* ]] || fail "/etc/passwd must be readable inside"
}

@test "filesystem: no ssh keys or host secrets in the curated /etc" {
        gx -- /bin/sh -c 'ls -d /etc/ssh/ssh_host_* /etc/ssh/*key* /etc/ssl/private 2>/dev/null; echo end'
        expect_status 0
        expect_output "end"
}

@test "filesystem: /etc/passwd and /etc/group are synthetic; the user is agent" {
        gx -- /bin/sh -c 'id -un; id -gn; cat /etc/passwd'
        expect_status 0
        [ "${lines[0]}" = agent ] || fail "id -un must be agent"
        grep -qE "^agent:[^:]*:$(inside_uid):$(inside_gid):[^:]*:/home/agent:[^:]*\$" <<<"$output" ||
                fail "passwd must map uid $(inside_uid) to agent with HOME /home/agent"
        # Host accounts are not copied in (the host has e.g. _apt, cloudsdk).
        local u
        for u in $(cut -d: -f1 /etc/passwd); do
                case "$u" in root | nobody | agent) continue ;; esac
                if grep -q "^$u:" <<<"$output"; then fail "host account $u is visible in the synthetic passwd"; fi
        done
}

@test "filesystem: a secret in the invoker's home is invisible" {
        [ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ] || skip "invoker HOME ($HOME) is not a writable directory"
        HOME_SECRET=$(mktemp "$HOME/.glove-it-secret.XXXXXX")
        echo "home-secret-$$" >"$HOME_SECRET"
        # Positive control: the invoker reads it on the host.
        [ "$(cat "$HOME_SECRET")" = "home-secret-$$" ]

        gx -- /bin/cat "$HOME_SECRET"
        expect_status 1
        [[ "$stderr" == *"No such file or directory"* ]] || fail "cat must report ENOENT"
        expect_no_text "home-secret-$$"

        gx "${PROBE[@]}" read "$HOME_SECRET" exists "$HOME"
        expect_line "read $HOME_SECRET ENOENT"
        if [ "$HOME" != /home/agent ]; then expect_line "exists $HOME no"; fi
}

@test "filesystem: the host's /home is invisible; HOME is /home/agent, private and empty" {
        # The host has /home entries (here at least one user directory).
        gx -- /bin/sh -c 'ls -A /home; echo "HOME=$HOME"; ls -A "$HOME" | wc -l; echo x >"$HOME/f" && cat "$HOME/f"; pwd'
        expect_status 0
        expect_output "$(printf 'agent\nHOME=/home/agent\n0\nx\n/home/agent')"

        # Private per run: a second run does not see the first run's file.
        gx -- /bin/ls -A /home/agent
        expect_status 0
        expect_output ""
}

@test "filesystem: /sys, /run, /root and /var are absent" {
        # Positive control: they exist on the host.
        local d
        for d in /sys /run /root /var; do [ -e "$d" ] || skip "host has no $d"; done
        gx "${PROBE[@]}" exists /sys exists /run exists /root exists /var exists /usr exists /etc
        expect_status 0
        expect_line "exists /sys no"
        expect_line "exists /run no"
        expect_line "exists /root no"
        expect_line "exists /var no"
        expect_line "exists /usr yes"
        expect_line "exists /etc yes"
}

@test "filesystem: the root, /usr and /etc are read-only (EROFS), the workspace is writable" {
        mkd "$T/ws"
        gx --workspace "$T/ws" "${PROBE[@]}" \
                create /glove-probe create /usr/glove-probe create /usr/bin/glove-probe \
                create /etc/glove-probe mkdir /newdir create /home/glove-probe create "$T/ws/ok"
        expect_status 0
        expect_line "create /glove-probe EROFS"
        expect_line "create /usr/glove-probe EROFS"
        expect_line "create /usr/bin/glove-probe EROFS"
        expect_line "create /etc/glove-probe EROFS"
        expect_line "mkdir /newdir EROFS"
        expect_line "create /home/glove-probe EROFS"
        expect_line "create $T/ws/ok ok"
        # Nothing reached the host; the workspace file did.
        [ ! -e /usr/glove-probe ] && [ ! -e /usr/bin/glove-probe ] && [ ! -e /etc/glove-probe ]
        [ "$(cat "$T/ws/ok")" = "written by probe" ]
}

@test "filesystem: existing files in /usr and /etc cannot be modified" {
        local before
        before=$(sha256sum /usr/bin/true | cut -d' ' -f1)
        gx "${PROBE[@]}" append /usr/bin/true append /etc/passwd unlink /usr/bin/true
        expect_status 0
        local f
        for f in /usr/bin/true /etc/passwd; do
                # EROFS where the agent owns the inode (root mode maps uid 0),
                # EACCES where it does not: never ok.
                [[ "$output" == *"append $f EROFS"* || "$output" == *"append $f EACCES"* ]] ||
                        fail "append to $f must fail with EROFS or EACCES"
        done
        [[ "$output" == *"unlink /usr/bin/true EROFS"* || "$output" == *"unlink /usr/bin/true EACCES"* ]] ||
                fail "unlink /usr/bin/true must fail"
        [ "$(sha256sum /usr/bin/true | cut -d' ' -f1)" = "$before" ]
}

@test "filesystem: sh redirection into /usr fails with Read-only file system" {
        gx -- /bin/sh -c 'echo pwned > /usr/glove-sh-probe'
        [ "$status" -ne 0 ] || fail "writing into /usr must fail"
        [[ "$stderr" == *"Read-only file system"* ]] || fail "sh must report EROFS"
        [ ! -e /usr/glove-sh-probe ]
}

@test "filesystem: writes outside any grant do not reach the host (grant under /tmp)" {
        mkd "$T/granted" "$T/sibling"
        gx --write "$T/granted" "${PROBE[@]}" \
                create "$T/outside" create "$T/sibling/x" mkdir "$T/newdir" create "$T/granted/inside"
        expect_status 0
        # The grant's parent lies in the private /tmp (a write there may succeed
        # but stays private); the host sibling does not exist inside.
        expect_line "create $T/sibling/x ENOENT"
        expect_line "create $T/granted/inside ok"
        [ ! -e "$T/outside" ] && [ ! -e "$T/sibling/x" ] && [ ! -e "$T/newdir" ]
        [ -f "$T/granted/inside" ]
}

@test "filesystem: writes outside any grant do not reach the host (grant outside /tmp)" {
        [ -d /var/tmp ] && [ -w /var/tmp ] || skip "/var/tmp is not writable on this host"
        VT=$(mktemp -d /var/tmp/glove-it.XXXXXX)
        mkd "$VT/granted" "$VT/sibling"
        gx --write "$VT/granted" "${PROBE[@]}" \
                create "$VT/outside" create "$VT/sibling/x" mkdir "$VT/newdir" create "$VT/granted/inside" \
                list /var list /var/tmp
        expect_status 0
        # The grant's ancestors are a read-only skeleton holding only the path.
        expect_line "create $VT/outside EROFS"
        expect_line "create $VT/sibling/x ENOENT"
        expect_line "mkdir $VT/newdir EROFS"
        expect_line "create $VT/granted/inside ok"
        expect_line "list /var/tmp ok:$(basename "$VT")"
        [ ! -e "$VT/outside" ] && [ ! -e "$VT/sibling/x" ] && [ ! -e "$VT/newdir" ] ||
                fail "a write outside the grant reached the host"
        [ -f "$VT/granted/inside" ] || fail "the write inside the grant did not reach the host"
}

@test "filesystem: /tmp inside is private and writable" {
        local hostfile
        hostfile=$(mktemp /tmp/glove-it-hostfile.XXXXXX)
        echo host >"$hostfile"
        local name=glove-it-inner.$$.$RANDOM
        gx -- /bin/sh -c "ls -A /tmp; echo inner >/tmp/$name && cat /tmp/$name; echo \$TMPDIR"
        rm -f "$hostfile"
        expect_status 0
        expect_output "$(printf 'inner\n/tmp')"
        [ ! -e "/tmp/$name" ] || { rm -f "/tmp/$name"; fail "/tmp inside is the host's /tmp"; }
}

@test "filesystem: /dev holds only the minimal device set" {
        gx -- /bin/sh -c 'cd /dev && ls -A'
        expect_status 0
        local e
        for e in null zero full random urandom tty pts ptmx shm; do
                expect_line "$e"
        done
        for e in "${lines[@]}"; do
                case "$e" in
                null | zero | full | random | urandom | tty | pts | ptmx | shm) ;;
                fd | stdin | stdout | stderr) ;; # the conventional /proc/self links
                *) fail "unexpected /dev entry: $e" ;;
                esac
        done
        # Host devices are absent.
        gx "${PROBE[@]}" exists /dev/kmsg exists /dev/mem exists /dev/sda exists /dev/vda exists /dev/console exists /dev/fuse
        expect_line "exists /dev/kmsg no"
        expect_line "exists /dev/mem no"
        expect_line "exists /dev/console no"
        expect_line "exists /dev/fuse no"
}

@test "filesystem: the minimal devices work (null, zero, full, urandom, ptmx)" {
        gx -- /bin/sh -c 'echo x >/dev/null && head -c 4 /dev/zero | od -An -tx1 | tr -d " " && head -c 16 /dev/urandom | wc -c; head -c 1 /dev/zero >/dev/full'
        expect_status 1
        expect_output "$(printf '00000000\n16')"
        [[ "$stderr" == *"No space left on device"* ]] || fail "/dev/full must give ENOSPC"
        gx "${PROBE[@]}" openpty
        expect_status 0
        [[ "$output" == "openpty ok:/dev/pts/"* ]] || fail "a PTY must be obtainable inside"
}

@test "filesystem: /proc is the sandbox's own (no host processes)" {
        gx -- /bin/sh -c 'ls /proc | grep -E "^[0-9]+$" | sort -n | tr "\n" " "'
        expect_status 0
        local p
        for p in $output; do
                [ "$p" -le 10 ] || fail "pid $p inside looks like a host pid"
        done
        [[ " $output " == *" 1 "* && " $output " == *" 2 "* ]] || fail "pids 1 and 2 must exist"
}

@test "filesystem: a read grant is readable and not writable (EROFS)" {
        mkd "$T/ro"
        echo "ro-content" >"$T/ro/file"
        gx --read "$T/ro" "${PROBE[@]}" read "$T/ro/file" append "$T/ro/file" create "$T/ro/new" unlink "$T/ro/file"
        expect_status 0
        expect_line "read $T/ro/file ok:ro-content"
        expect_line "append $T/ro/file EROFS"
        expect_line "create $T/ro/new EROFS"
        expect_line "unlink $T/ro/file EROFS"
        [ "$(cat "$T/ro/file")" = "ro-content" ] && [ ! -e "$T/ro/new" ]
}

@test "filesystem: a single-file read grant exposes that file only" {
        mkd "$T/d"
        echo one >"$T/d/one"
        echo two >"$T/d/two"
        gx --read "$T/d/one" "${PROBE[@]}" read "$T/d/one" read "$T/d/two" append "$T/d/one"
        expect_status 0
        expect_line "read $T/d/one ok:one"
        expect_line "read $T/d/two ENOENT"
        expect_line "append $T/d/one EROFS"
}

@test "filesystem: a write grant is writable and the host sees the result, owned by the invoker" {
        mkd "$T/rw"
        echo old >"$T/rw/existing"
        gx --write "$T/rw" -- /bin/sh -c "echo new >>'$T/rw/existing' && mkdir '$T/rw/sub' && echo made >'$T/rw/sub/f' && rm '$T/rw/existing' && echo done"
        expect_status 0
        expect_output done
        [ ! -e "$T/rw/existing" ] && [ "$(cat "$T/rw/sub/f")" = made ]
        [ "$(stat -c %u "$T/rw/sub/f")" = "$(id -u)" ] || fail "files written inside must belong to the invoker on the host"
}

@test "filesystem: host-wide kernel settings under /proc/sys cannot be opened for writing (core_pattern...)" {
        # Opening for writing never writes: it only asks whether a write would
        # be let through. kernel.core_pattern is host-wide: whoever sets it to
        # '|/path' has that path run as host root on the next crash.
        if is_root; then
                # Positive control: on the host, root can.
                "$PY" -c 'import os; os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY))' ||
                        skip "even host root cannot open core_pattern for writing here"
        fi
        gx "${PROBE[@]}" openw /proc/sys/kernel/core_pattern openw /proc/sys/kernel/modprobe \
                openw /proc/sys/kernel/usermodehelper/bset openw /proc/sys/vm/drop_caches \
                openw /proc/sys/fs/suid_dumpable openw /proc/sys/kernel/randomize_va_space
        expect_status 0
        local l
        for l in "${lines[@]}"; do
                [[ "$l" == *" ok" ]] && fail "a host-wide kernel setting is writable: $l"
        done
        return 0
}

@test "filesystem: nothing host-wide under /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus is writable" {
        gx "${PROBE[@]}" writable-walk /proc/sys writable-walk /proc/sysrq-trigger writable-walk /proc/irq writable-walk /proc/bus
        expect_status 0
        local l bad=()
        for l in "${lines[@]}"; do
                [[ "$l" == "writable "* ]] || continue
                case "${l#writable }" in
                # Settings of the sandbox's own namespaces (pid, uts, ipc,
                # net, user) change nothing outside it.
                /proc/sys/kernel/ns_last_pid | /proc/sys/kernel/hostname | /proc/sys/kernel/domainname) ;;
                /proc/sys/kernel/msg* | /proc/sys/kernel/sem | /proc/sys/kernel/shm* | /proc/sys/kernel/auto_msgmni) ;;
                /proc/sys/fs/mqueue/* | /proc/sys/net/* | /proc/sys/user/*) ;;
                *) bad+=("${l#writable }") ;;
                esac
        done
        if [ "${#bad[@]}" -ne 0 ]; then
                # (the full list is long: show a sample)
                echo "FAIL: ${#bad[@]} host-wide /proc entries can be opened for writing, e.g.:" >&2
                printf '  %s\n' "${bad[@]:0:12}" >&2
                return 1
        fi
}

@test "filesystem: init's /proc entries (root, cwd, fds) give no way out" {
        local log=$BATS_TEST_TMPDIR/audit.jsonl
        gx --audit-log "$log" "${PROBE[@]}" list /proc/1/root/root read /proc/1/root/etc/shadow list /proc/1/cwd fdscan 1
        expect_status 0
        expect_no_line "list /proc/1/root/root ok"
        [[ "$output" != *"read /proc/1/root/etc/shadow ok"* ]] || fail "init's root exposes /etc/shadow"
        # Whatever init holds open must not be a host path the agent lacks.
        [[ "$output" != *"$BATS_TEST_TMPDIR"* ]] || fail "init exposes a host path through its descriptors"
        [[ "$output" != *"ok:/root"* && "$output" != *"ok:/home/"[!a]* ]] || fail "init exposes a host directory"
}

@test "filesystem: /dev/shm is private to the sandbox" {
        [ -d /dev/shm ] && [ -w /dev/shm ] || skip "the host has no writable /dev/shm"
        local hostshm name=glove-it-inner.$$.$RANDOM
        hostshm=$(mktemp /dev/shm/glove-it-host.XXXXXX)
        gx "${PROBE[@]}" exists "$hostshm" create "/dev/shm/$name"
        rm -f "$hostshm"
        expect_status 0
        expect_line "exists $hostshm no"
        expect_line "create /dev/shm/$name ok"
        [ ! -e "/dev/shm/$name" ] || { rm -f "/dev/shm/$name"; fail "/dev/shm inside is the host's"; }
}

@test "filesystem: /dev/pts is a new instance: the host's terminals are not reachable" {
        # Keep a pseudo-terminal open on the host while the agent looks.
        local ready=$BATS_TEST_TMPDIR/pty
        "$PY" -c 'import os, sys, time
m, s = os.openpty(); open(sys.argv[1], "w").write(os.ttyname(s) + "\n"); time.sleep(30)' "$ready" 3>&- &
        track_pid $!
        wait_for "$ready" '^/dev/pts/[0-9]+$' 10
        local pty
        pty=$(cat "$ready")
        gx "${PROBE[@]}" list /dev/pts exists "$pty" openw "$pty"
        expect_status 0
        expect_line "list /dev/pts ok:ptmx"
        expect_no_line "openw $pty ok"
}

@test "filesystem: the host's device nodes cannot be changed (chmod /dev/null)" {
        # Same mode as now: harmless even where it is wrongly allowed.
        local d args=()
        for d in null zero full random urandom tty; do
                [ -e "/dev/$d" ] && args+=(chmod "/dev/$d" "$(stat -c %a "/dev/$d")")
        done
        gx "${PROBE[@]}" "${args[@]}"
        expect_status 0
        local l
        for l in "${lines[@]}"; do
                [[ "$l" == *" ok" ]] && fail "the agent can change a host device node: $l"
        done
        return 0
}
