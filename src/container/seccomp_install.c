/* SPDX-License-Identifier: Apache-2.0 */
/* Installing a filter needs no libseccomp; kept apart from seccomp.c so the
 * launch path does not link it (the program itself is prebuilt). */
#include <errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "glove/container/seccomp.h"

int glove_seccomp_install(const struct sock_fprog *prog) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
                return -errno;
        return 0;
}
