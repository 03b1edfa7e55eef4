/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Temporary directories for unit tests that work on real files and sockets
 * (tests/unit/apply, tests/unit/services): define FIXTURE_TMP_PREFIX (e.g.
 * "glove-svc") before including. Include after <cmocka.h>.
 */

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FIXTURE_TMP_PREFIX
#error "define FIXTURE_TMP_PREFIX before including tmpdir_fixture.h"
#endif

#define FIXTURE_PATH_MAX 256

/* Makes a new 0700 directory /tmp/PREFIX-NAME.XXXXXX (a root-owned sticky
 * ancestor) and stores its path in dir. */
static inline void fixture_tmpdir(char dir[FIXTURE_PATH_MAX], const char *name) {
        snprintf(dir, FIXTURE_PATH_MAX, "/tmp/" FIXTURE_TMP_PREFIX "-%s.XXXXXX", name);
        assert_non_null(mkdtemp(dir));
}

static inline int fixture_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)ftw;
        if (flag == FTW_DP || flag == FTW_D)
                (void)rmdir(p);
        else
                (void)unlink(p);
        return 0;
}

/* Removes dir and everything in it (links not followed). */
static inline void fixture_rm_rf(const char *dir) {
        (void)nftw(dir, fixture_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir "/" name into out. */
static inline void fixture_join(char out[FIXTURE_PATH_MAX], const char *dir, const char *name) {
        int n = snprintf(out, FIXTURE_PATH_MAX, "%s/%s", dir, name);
        assert_true(n > 0 && n < FIXTURE_PATH_MAX);
}
