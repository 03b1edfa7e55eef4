/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Scope-bound cleanup helpers built on __attribute__((cleanup)), in the style
 * of systemd and crun. A variable declared with one of these attributes is
 * released when it leaves scope; TAKE_PTR / TAKE_FD (or glove_fd_take) hand
 * ownership on and leave the variable empty so nothing is released twice.
 * Descriptors owned together: struct glove_fd_pair (_cleanup_fd_pair_) and
 * struct glove_fd_vec (_cleanup_fd_vec_). A child process:
 * glove/base/child.h (_cleanup_child_).
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void glove_freep(void *p) {
        free(*(void **)p);
}

/* Closes the descriptor if it is >= 0; preserves errno. */
static inline void glove_closep(int *fd) {
        if (fd && *fd >= 0) {
                int saved = errno;
                (void)close(*fd);
                errno = saved;
        }
}

static inline void glove_fclosep(FILE **f) {
        if (f && *f) {
                int saved = errno;
                (void)fclose(*f);
                errno = saved;
        }
}

static inline void glove_json_decrefp(json_t **j) {
        if (j && *j)
                json_decref(*j);
}

#define _cleanup_free_ _cleanup_(glove_freep)
#define _cleanup_close_ _cleanup_(glove_closep)
#define _cleanup_fclose_ _cleanup_(glove_fclosep)
#define _cleanup_json_ _cleanup_(glove_json_decrefp)

/* Returns the pointer and sets the variable to NULL (ownership moves). */
#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) _taken = (p); \
                (p) = NULL;                \
                _taken;                    \
        })

/* Returns the descriptor and sets the variable to -1 (ownership moves). */
#define TAKE_FD(fd)                 \
        ({                          \
                int _taken = (fd);  \
                (fd) = -1;          \
                _taken;             \
        })

#define GLOVE_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Returns *fd and sets *fd to -1: ownership of the descriptor moves to the
 * caller, so a _cleanup_close_ variable (or a pair or vector slot) no longer
 * closes it. fd must not be NULL. Returns -1 when the slot was empty.
 */
static inline int glove_fd_take(int *fd) {
        int taken = *fd;
        *fd = -1;
        return taken;
}

/* Closes every descriptor of fds[0..n) that is >= 0 and sets each slot to -1;
 * preserves errno. fds may be NULL when n is 0. */
static inline void glove_fd_vec_close(int *fds, size_t n) {
        int saved = errno;
        for (size_t i = 0; i < n; i++) {
                if (fds[i] >= 0)
                        (void)close(fds[i]);
                fds[i] = -1;
        }
        errno = saved;
}

/*
 * Two descriptors owned together, such as the ends of a pipe (fd[0] the read
 * end, fd[1] the write end) or of a socket pair. Empty slots are -1; start a
 * variable with GLOVE_FD_PAIR_INIT. glove_fd_pair_pipe and
 * glove_fd_pair_socketpair (fd.h) fill one.
 */
struct glove_fd_pair {
        int fd[2];
};

#define GLOVE_FD_PAIR_INIT { { -1, -1 } }

/* Closes both ends that are >= 0 and sets them to -1; preserves errno. */
static inline void glove_fd_pair_close(struct glove_fd_pair *p) {
        if (p)
                glove_fd_vec_close(p->fd, 2);
}

/*
 * A bounded set of descriptors owned together (for example every pipe end of
 * one child's standard streams). At most GLOVE_FD_VEC_MAX descriptors; n
 * counts the slots in use, and a slot emptied by glove_fd_take holds -1.
 * Start a variable with GLOVE_FD_VEC_INIT ({ .n = 0 }).
 */
#define GLOVE_FD_VEC_MAX 16

struct glove_fd_vec {
        size_t n;
        int fd[GLOVE_FD_VEC_MAX];
};

#define GLOVE_FD_VEC_INIT { .n = 0 }

/*
 * Appends fd to v. Returns 0, or -EBADF when fd < 0 or -ENOSPC when v already
 * holds GLOVE_FD_VEC_MAX slots; on failure the descriptor is not taken (the
 * caller still owns it).
 */
static inline int glove_fd_vec_push(struct glove_fd_vec *v, int fd) {
        if (fd < 0)
                return -EBADF;
        if (v->n >= GLOVE_FD_VEC_MAX)
                return -ENOSPC;
        v->fd[v->n++] = fd;
        return 0;
}

/* Closes every descriptor v holds and empties it (n = 0); preserves errno. */
static inline void glove_fd_vec_clear(struct glove_fd_vec *v) {
        if (v) {
                glove_fd_vec_close(v->fd, v->n < GLOVE_FD_VEC_MAX ? v->n : GLOVE_FD_VEC_MAX);
                v->n = 0;
        }
}

#define _cleanup_fd_pair_ _cleanup_(glove_fd_pair_close)
#define _cleanup_fd_vec_ _cleanup_(glove_fd_vec_clear)
