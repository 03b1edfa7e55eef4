/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-keeper's main (keeper.h): reads the launch gloved left on
 * descriptor 3 (keeper_exe.c starts it, keeper_launch.c decodes it) and runs
 * it (glove_keeper_run). A file of its own so that the keeper links nothing
 * of gloved's side (the executable's digest: libcrypto).
 */
#include "glove/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/shown.h"
#include "keeper_internal.h"

#define N_FDS_MAX GLOVE_KEEPER_LAUNCH_FDS_MAX

static bool fd_kind(int fd, mode_t want) {
        struct stat st;
        return fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == want;
}

/* ---- glove-keeper ---- */

/* A launch that cannot be run: said on the log and, when the channel is
 * there, as an ENDED setup_failed so that gloved's receipt names it. */
_Noreturn static void main_fail(const struct glove_error *e) {
        char shown[GLOVE_SHOWN_SIZE(GLOVE_ERROR_MESSAGE_MAX)];
        fprintf(stderr, "glove-keeper: %s: %s\n", e->code ? e->code : "keeper.launch_invalid",
                glove_shown(e->message, shown, sizeof(shown)));
        int ch = GLOVE_KEEPER_LAUNCH_FD + 1;
        if (fd_kind(ch, S_IFSOCK)) {
                char buf[256];
                int n = snprintf(buf, sizeof(buf),
                                 "%c{\"error_code\":\"%s\",\"kind\":\"setup_failed\",\"limit\":null,\"released\":false,"
                                 "\"value\":0}",
                                 GLOVE_KEEPER_ENDED, e->code ? e->code : "keeper.launch_invalid");
                if (n > 0 && (size_t)n < sizeof(buf))
                        (void)send(ch, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        _exit(1);
}

_Noreturn void glove_keeper_main(void) {
        struct glove_error e = { 0 };
        int fd = GLOVE_KEEPER_LAUNCH_FD;
        struct stat st;
        int seals = fcntl(fd, F_GET_SEALS);
        int want = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || seals < 0 || (seals & want) != want || st.st_size <= 0 ||
            st.st_size > GLOVE_KEEPER_LAUNCH_MAX) {
                glove_error_set(&e, EINVAL, "keeper.launch_invalid",
                                "descriptor %d is not a sealed launch of at most %u bytes (glove-keeper is started by "
                                "gloved only)",
                                fd, GLOVE_KEEPER_LAUNCH_MAX);
                main_fail(&e);
        }
        char *text = malloc((size_t)st.st_size);
        if (!text || pread(fd, text, (size_t)st.st_size, 0) != st.st_size) {
                glove_error_set(&e, EIO, "keeper.launch_invalid", "the launch could not be read");
                main_fail(&e);
        }
        close(fd);
        /* The descriptors that came with it follow the memfd; the launch
         * says how many (each is checked for its kind). */
        int fds[N_FDS_MAX];
        size_t n = N_FDS_MAX;
        for (size_t i = 0; i < n; i++)
                fds[i] = GLOVE_KEEPER_LAUNCH_FD + 1 + (int)i;
        struct glove_keeper_launch *l = NULL;
        if (glove_keeper_launch_decode(text, (size_t)st.st_size, fds, n, &l, &e) < 0)
                main_fail(&e);
        free(text);
        glove_keeper_run(glove_keeper_launch_args(l)); /* l lives until _exit */
}
