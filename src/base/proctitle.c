/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/proctitle.h"

#include <string.h>

static char *area;
static size_t area_len;

void glove_proctitle_init(int argc, char **argv) {
        if (argc <= 0 || !argv || !argv[0])
                return;
        /* The kernel lays argv's strings out back to back. */
        char *end = argv[0];
        for (int i = 0; i < argc && argv[i]; i++)
                if (argv[i] == end)
                        end = argv[i] + strlen(argv[i]) + 1;
        area = argv[0];
        area_len = (size_t)(end - argv[0]);
}

void glove_proctitle_set(const char *title) {
        if (!area || area_len == 0)
                return;
        memset(area, 0, area_len);
        size_t n = strlen(title);
        if (n >= area_len)
                n = area_len - 1;
        memcpy(area, title, n);
}
