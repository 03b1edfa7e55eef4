/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by test_trust.c and test_authorization.c: a temporary directory
 * under /tmp (a root-owned sticky ancestor), files written with an exact
 * mode, trust policies and key files. Include after <cmocka.h>.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/apply/trust.h"
#include "glove/base/base64.h"

#define FIXTURE_TMP_PREFIX "glove-apply"
#include "../expect.h"
#include "../tmpdir_fixture.h"

/* Writes text to path (created or truncated), then sets exactly mode. */
static inline void fixture_write(const char *path, const char *text, size_t len, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

/* A trust policy listing n keys: ids[i] with public key pubs[i] (base64). */
static inline void fixture_write_policy(const char *path, size_t n, const char *const ids[],
                                        const char *const pubs[], mode_t mode) {
        char text[8192];
        size_t len = (size_t)snprintf(text, sizeof(text), "{\"schema\":\"glove.apply-trust.v1\",\"keys\":[");
        for (size_t i = 0; i < n; i++)
                len += (size_t)snprintf(text + len, sizeof(text) - len, "%s{\"key_id\":\"%s\",\"public_key\":\"%s\"}",
                                        i ? "," : "", ids[i], pubs[i]);
        len += (size_t)snprintf(text + len, sizeof(text) - len, "]}\n");
        assert_true(len < sizeof(text));
        fixture_write(path, text, len, mode);
}

/* A key file for key_id holding the 32-byte seed, mode 0600. */
static inline void fixture_write_key(const char *path, const char *key_id, const uint8_t seed[32]) {
        char b64[45], text[256];
        assert_int_equal(glove_base64_encode_cstr(seed, 32, b64, sizeof(b64)), 44);
        int n = snprintf(text, sizeof(text),
                         "{\"key_id\":\"%s\",\"private_key\":\"%s\",\"schema\":\"glove.apply-key.v1\"}", key_id, b64);
        fixture_write(path, text, (size_t)n, 0600);
}

/* Generates a key file at dir/name for key_id, loads it, and stores its
 * public key in pub. */
static inline struct glove_apply_key *fixture_new_key(const char *dir, const char *name, const char *key_id,
                                                      char pub[45]) {
        char path[FIXTURE_PATH_MAX];
        fixture_join(path, dir, name);
        struct glove_error err = { 0 };
        struct glove_apply_key *k = NULL;
        if (glove_apply_key_generate(path, key_id, &err) < 0 || glove_apply_key_load(path, &k, &err) < 0 ||
            glove_apply_key_public(k, pub, &err) < 0)
                fail_msg("%s: %s: %s", path, err.code, err.message);
        return k;
}

/* Asserts that err's message contains needle. */
#define expect_message(err, needle)                                                                             \
        do {                                                                                                    \
                if (!strstr((err).message, (needle)))                                                           \
                        fail_msg("%s:%d: message \"%s\" lacks \"%s\"", __FILE__, __LINE__, (err).message,      \
                                 (needle));                                                                     \
        } while (0)

#define SKIP_UNLESS_ROOT(why)                                                                                   \
        do {                                                                                                    \
                if (geteuid() != 0) {                                                                           \
                        fprintf(stderr, "skipped: %s\n", (why));                                                \
                        skip();                                                                                 \
                }                                                                                               \
        } while (0)
