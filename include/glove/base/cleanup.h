/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Scope-bound cleanup helpers built on __attribute__((cleanup)), in the style
 * of systemd and crun. A variable declared with one of these attributes is
 * released when it leaves scope; TAKE_PTR / TAKE_FD hand ownership on and
 * leave the variable empty so nothing is released twice.
 */

#include <errno.h>
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
