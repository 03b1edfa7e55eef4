/* SPDX-License-Identifier: Apache-2.0 */
/* Installing a filter needs no libseccomp; kept apart from seccomp.c so the
 * launch path does not link it (the program itself is prebuilt). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/container/seccomp.h"

#ifdef __x86_64__
/* x32 system calls carry this bit; the table's filter refuses them. */
#define X32_SYSCALL_BIT 0x40000000U

static int install_unknown_filter(void) {
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* foreign: the table's filter refuses */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 2, 0),
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, glove_seccomp_first_unknown, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = (unsigned short)(sizeof(insns) / sizeof(insns[0])), .filter = insns};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return -errno;
        return 0;
}
#else
static int install_unknown_filter(void) {
        return 0;
}
#endif

int glove_seccomp_install(const struct sock_fprog *prog) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
                return -errno;
        return install_unknown_filter();
}
