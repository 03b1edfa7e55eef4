/* SPDX-License-Identifier: Apache-2.0 */
#include "shown.h"

#include "glove/base/shown.h"

const char *host_shown(const char *s) {
        static char bufs[8][GLOVE_SHOWN_SIZE(1024)];
        static unsigned next;
        return glove_shown(s, bufs[next++ % 8], sizeof(bufs[0]));
}
