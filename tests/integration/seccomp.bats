#!/usr/bin/env bats
# The seccomp filter: each denied syscall is attempted from inside with
# python ctypes (libc.syscall, x86_64 numbers; see tests/agents/probe.py for
# the harmless arguments) and must fail with EPERM. Outside any filter most of
# these calls succeed or fail with another errno, so EPERM is the filter's.

load helpers

# probe_sys NAME...: run the probe for these syscalls; each must be EPERM.
expect_eperm() {
        local args=() n
        for n in "$@"; do args+=(sys "$n"); done
        gx "${PROBE[@]}" "${args[@]}"
        expect_status 0
        for n in "$@"; do expect_line "sys $n EPERM"; done
}

@test "seccomp: mount family denied (mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr)" {
        expect_eperm mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr
}

@test "seccomp: namespace creation and entry denied (unshare, setns, clone with namespace flags)" {
        expect_eperm unshare-newuser unshare-newns unshare-newnet unshare-newpid setns \
                clone-newuser clone-newns clone-newpid clone-newnet clone-newipc clone-newuts clone-newcgroup
}

@test "seccomp: unshare is denied whatever its flags (CLONE_FS)" {
        expect_eperm unshare-fs
}

@test "seccomp: clone3 returns ENOSYS while fork and threads still work" {
        gx "${PROBE[@]}" sys clone3 sys clone-plain fork threads
        expect_status 0
        expect_line "sys clone3 ENOSYS"
        expect_line "sys clone-plain ok"
        expect_line "fork ok:7"
        expect_line "threads ok:ran"
}

@test "seccomp: unshare(1) from util-linux cannot create a namespace" {
        gx -- /usr/bin/unshare -r /bin/true
        [ "$status" -ne 0 ] || fail "unshare -r must fail inside"
        [[ "$stderr" == *"Operation not permitted"* ]] || fail "unshare must report EPERM"
        gx -- /usr/bin/unshare -n /bin/true
        [ "$status" -ne 0 ] || fail "unshare -n must fail inside"
        [[ "$stderr" == *"Operation not permitted"* ]] || fail "unshare must report EPERM"
}

@test "seccomp: keyring syscalls denied (keyctl add_key request_key)" {
        expect_eperm keyctl add_key request_key
}

@test "seccomp: bpf, perf_event_open and userfaultfd denied" {
        expect_eperm bpf perf_event_open userfaultfd
}

@test "seccomp: ptrace and process_vm_readv/writev denied" {
        expect_eperm ptrace process_vm_readv process_vm_writev
}

@test "seccomp: kexec and kernel module syscalls denied" {
        expect_eperm kexec_load kexec_file_load init_module finit_module delete_module
}

@test "seccomp: acct swapon swapoff reboot syslog quotactl denied" {
        expect_eperm acct swapon swapoff reboot syslog quotactl
}

@test "seccomp: open_by_handle_at and name_to_handle_at denied" {
        expect_eperm name_to_handle_at open_by_handle_at
}

@test "seccomp: io_uring denied" {
        expect_eperm io_uring_setup io_uring_enter io_uring_register
}

@test "seccomp: personality other than 0 and 0xffffffff denied" {
        gx "${PROBE[@]}" sys personality-linux32 sys personality-addr-no-randomize sys personality-0 sys personality-query
        expect_status 0
        expect_line "sys personality-linux32 EPERM"
        expect_line "sys personality-addr-no-randomize EPERM"
        expect_line "sys personality-0 ok"
        expect_line "sys personality-query ok"
}

@test "seccomp: TIOCSTI and TIOCLINUX on a terminal are denied" {
        command -v script >/dev/null || skip "script(1) from bsdutils is not installed"
        local cmd
        cmd=$(printf '%q ' timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "${PROBE[@]}" tty)
        run --separate-stderr script -qec "$cmd" /dev/null </dev/null
        output=${output//$'\r'/}
        lines=()
        mapfile -t lines <<<"$output"
        expect_status 0
        # Positive control: stdin is the terminal and ordinary tty ioctls work.
        expect_line "isatty0 yes"
        expect_line "tcgetattr ok"
        expect_line "TIOCSTI EPERM"
        expect_line "TIOCLINUX EPERM"
        # The same commands with bits set above the 32 the kernel reads.
        expect_line "TIOCLINUX-high-bits EPERM"
        expect_line "TIOCSTI-high-bits EPERM"
}

@test "seccomp: x32 syscalls fail with EPERM" {
        gx "${PROBE[@]}" x32 sys getpid
        expect_status 0
        expect_line "x32 EPERM"
        expect_line "sys getpid ok"
}

@test "seccomp: i386 syscalls (int \$0x80) fail with EPERM" {
        # Positive control on the host: does this kernel run i386 syscalls?
        run "$PY" "$AGENTS/probe.py" int80
        [[ "$output" == "int80 ok:"* ]] || skip "the host kernel does not run i386 syscalls ($output)"
        gx "${PROBE[@]}" int80
        expect_status 0
        expect_output "int80 EPERM"
}

@test "seccomp: system calls newer than the filter's table fail with ENOSYS (statmount, listmount, mseal, open_tree_attr, file_setattr)" {
        gx -- "$PY" -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for name, nr in (("statmount", 457), ("listmount", 458), ("mseal", 462), ("open_tree_attr", 467),
                 ("file_setattr", 469), ("nr_1000", 1000), ("futex_requeue", 456)):
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    print(name, "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
'
        expect_status 0
        local n
        for n in statmount listmount mseal open_tree_attr file_setattr nr_1000; do expect_line "$n ENOSYS"; done
        # Positive control: the last call the table knows reaches the kernel,
        # which rejects its null arguments itself.
        [[ "$output" == *"futex_requeue "* && "$output" != *"futex_requeue ENOSYS"* ]] ||
                fail "a known system call was refused with ENOSYS: $output"
}
