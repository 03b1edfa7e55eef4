/* SPDX-License-Identifier: Apache-2.0 */
/* Random bytes from the kernel (random.h). */
#include "glove/base/random.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>

int glove_random_bytes(void *buf, size_t len) {
        uint8_t *p = buf;
        size_t got = 0;
        while (got < len) {
                ssize_t n = getrandom(p + got, len - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)n;
        }
        return 0;
}
