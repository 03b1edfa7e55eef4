#!/usr/bin/env bats
# Identity and privileges: no capabilities, no_new_privs, a seccomp filter,
# a non-root mapped uid, and separate namespaces.

load helpers

@test "identity: all capability sets are empty, NoNewPrivs 1, Seccomp 2" {
        gx -- /bin/cat /proc/self/status
        expect_status 0
        expect_line "$(printf 'CapInh:\t0000000000000000')"
        expect_line "$(printf 'CapPrm:\t0000000000000000')"
        expect_line "$(printf 'CapEff:\t0000000000000000')"
        expect_line "$(printf 'CapBnd:\t0000000000000000')"
        expect_line "$(printf 'CapAmb:\t0000000000000000')"
        expect_line "$(printf 'NoNewPrivs:\t1')"
        expect_line "$(printf 'Seccomp:\t2')"
}

@test "identity: the agent process itself (pid 2) has no capabilities either" {
        gx -- "$PY" -c '
import os
for l in open("/proc/%d/status" % os.getpid()):
    if l.startswith(("Cap", "NoNewPrivs", "Seccomp:", "Uid", "Gid")):
        print(l.rstrip())'
        expect_status 0
        local u g
        u=$(inside_uid) g=$(inside_gid)
        expect_line "$(printf 'CapEff:\t0000000000000000')"
        expect_line "$(printf 'CapBnd:\t0000000000000000')"
        expect_line "$(printf 'NoNewPrivs:\t1')"
        expect_line "$(printf 'Seccomp:\t2')"
        expect_line "$(printf 'Uid:\t%s\t%s\t%s\t%s' "$u" "$u" "$u" "$u")"
        expect_line "$(printf 'Gid:\t%s\t%s\t%s\t%s' "$g" "$g" "$g" "$g")"
}

@test "identity: uid and gid are mapped as specified and never 0" {
        gx -- /bin/sh -c 'id -u; id -g; id -un; tr -s " " <"/proc/self/uid_map"; tr -s " " <"/proc/self/gid_map"'
        expect_status 0
        local out_uid out_gid
        out_uid=$(id -u) out_gid=$(id -g)
        [ "${lines[0]}" = "$(inside_uid)" ] || fail "inside uid must be $(inside_uid)"
        [ "${lines[1]}" = "$(inside_gid)" ] || fail "inside gid must be $(inside_gid)"
        [ "${lines[0]}" != 0 ] && [ "${lines[1]}" != 0 ] || fail "the agent must never be uid/gid 0"
        [ "${lines[2]}" = agent ] || fail "the user is named agent"
        # uid_map lines read "inside outside count" (leading blanks squeezed).
        [ "$(echo ${lines[3]})" = "$(inside_uid) $out_uid 1" ] || fail "uid_map must be '$(inside_uid) $out_uid 1'"
        [ "$(echo ${lines[4]})" = "$(inside_gid) $out_gid 1" ] || fail "gid_map must be '$(inside_gid) $out_gid 1'"
}

@test "identity: the agent cannot become root (setuid(0), unshare -r)" {
        gx "${PROBE[@]}" setuid0
        expect_status 0
        # EPERM without CAP_SETUID, or EINVAL because uid 0 is not even mapped.
        [ "$output" = "setuid0 EPERM" ] || [ "$output" = "setuid0 EINVAL" ] || fail "setuid(0) must fail"
        gx -- /usr/bin/unshare --map-root-user /usr/bin/id -u
        [ "$status" -ne 0 ] || fail "unshare --map-root-user must fail"
        expect_no_line 0
}

@test "identity: the hostname is glove and cannot be changed" {
        gx "${PROBE[@]}" sethostname evil
        expect_output "sethostname evil EPERM"
        gx -- /bin/sh -c 'uname -n; cat /proc/sys/kernel/hostname'
        expect_status 0
        expect_output "$(printf 'glove\nglove')"
        [ "$(uname -n)" != evil ]
}

@test "identity: user, pid, mount, net, ipc, uts and cgroup namespaces differ from the host's" {
        local ns host=()
        for ns in user pid mnt net ipc uts cgroup; do
                host+=("$ns=$(readlink /proc/self/ns/$ns)")
        done
        gx -- /bin/sh -c 'for ns in user pid mnt net ipc uts cgroup; do echo "$ns=$(readlink /proc/self/ns/$ns)"; done'
        expect_status 0
        [ "${#lines[@]}" -eq 7 ] || fail "expected 7 namespace links"
        local i
        for i in "${!host[@]}"; do
                [[ "${lines[$i]}" == "${host[$i]%%=*}="*:\[*\] ]] || fail "unreadable namespace link: ${lines[$i]}"
                [ "${lines[$i]}" != "${host[$i]}" ] || fail "shares the host's namespace: ${host[$i]}"
        done
}

@test "identity: SysV IPC objects of the host are invisible" {
        command -v ipcmk >/dev/null || skip "ipcmk (util-linux) is not installed"
        local id
        id=$(ipcmk -Q 2>/dev/null | grep -oE '[0-9]+$') || skip "cannot create a message queue on the host"
        # Positive control: visible on the host.
        ipcs -q -i "$id" 2>/dev/null | grep -q "msqid=$id\$" || { ipcrm -q "$id"; fail "host cannot see its own queue"; }
        gx -- /bin/sh -c "ipcs -q -i $id 2>/dev/null | grep -q 'msqid=$id\$' && echo visible || echo invisible; ipcmk -Q >/dev/null && echo own-ok"
        ipcrm -q "$id"
        expect_status 0
        expect_output "$(printf 'invisible\nown-ok')"
}

@test "identity: the cgroup namespace hides the host's cgroup path" {
        [ -r /proc/self/cgroup ] || skip "no /proc/self/cgroup on the host"
        gx -- /bin/cat /proc/self/cgroup
        expect_status 0
        local l
        for l in "${lines[@]}"; do
                [ "${l#*:*:}" = / ] || fail "the agent sees a cgroup path other than its own root: $l"
        done
        return 0
}
