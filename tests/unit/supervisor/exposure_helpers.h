/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Shared by the exposure unit tests: a private temporary tree with a root
 * ("src"), a journal directory ("state") and a directory outside the root
 * ("outside"), a policy naming the root, and a registry over them. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/supervisor/exposure.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define TTL_MAX 3600

struct xenv {
        char base[512], root[600], state[600], outside[600], journal[700];
        char policy_text[4096];
        struct glove_exposure_policy *policy;
        struct glove_exposures *x;
        const char *restricted[2];
};

static inline void xmkdir(const char *path) {
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
                fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
                abort();
        }
}

/* path = base/rel, made as a directory. */
static inline void xsub(const struct xenv *e, const char *rel, char *out, size_t cap) {
        snprintf(out, cap, "%s/%s", e->root, rel);
}

static inline void xpolicy_text(struct xenv *e, const char *root_path) {
        snprintf(e->policy_text, sizeof(e->policy_text),
                 "{\"roots\":[{\"access\":["
                 "{\"access\":\"ephemeral_write\",\"cleanup_policy\":\"remove\",\"materialization\":\"copy\","
                 "\"max_bytes\":1000},"
                 "{\"access\":\"read\",\"cleanup_policy\":\"remove\",\"materialization\":\"bind\",\"max_bytes\":2000},"
                 "{\"access\":\"retained_write\",\"cleanup_policy\":\"retain\",\"materialization\":\"copy\","
                 "\"max_bytes\":3000}],"
                 "\"max_ttl_secs\":%d,\"path\":\"%s\",\"root_id\":\"src\","
                 "\"runtime_template_ids\":[\"codex-safe\",\"pi-safe\"],\"target_path\":\"/workspace\"}],"
                 "\"schema_version\":1}",
                 TTL_MAX, root_path);
}

static inline int xopen(struct xenv *e, int64_t now, struct glove_error *err) {
        struct glove_exposures_options o = {
                .policy = e->policy, .journal_path = e->journal, .owner = getuid(), .restricted = e->restricted,
        };
        return glove_exposures_open(&o, now, &e->x, err);
}

static inline struct xenv *xenv_new(void) {
        struct xenv *e = calloc(1, sizeof(*e));
        const char *tmp = getenv("TMPDIR");
        if (!tmp || tmp[0] != '/')
                tmp = "/tmp";
        snprintf(e->base, sizeof(e->base), "%s/glove-exposure-test.XXXXXX", tmp);
        if (!mkdtemp(e->base))
                abort();
        chmod(e->base, 0700);
        snprintf(e->root, sizeof(e->root), "%s/src", e->base);
        snprintf(e->state, sizeof(e->state), "%s/state", e->base);
        snprintf(e->outside, sizeof(e->outside), "%s/outside", e->base);
        snprintf(e->journal, sizeof(e->journal), "%s/exposures.journal", e->state);
        xmkdir(e->root);
        xmkdir(e->state);
        xmkdir(e->outside);
        e->restricted[0] = e->state;
        xpolicy_text(e, e->root);
        struct glove_error err = { 0 };
        if (glove_exposure_policy_decode(e->policy_text, strlen(e->policy_text), &e->policy, NULL, 0, &err) < 0) {
                fprintf(stderr, "policy: %s: %s\n", err.code, err.message);
                abort();
        }
        return e;
}

static inline int xrm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        (void)st;
        (void)flag;
        (void)f;
        return remove(p) < 0 ? 0 : 0;
}

static inline void xenv_free(struct xenv *e) {
        glove_exposures_close(e->x);
        glove_exposure_policy_free(e->policy);
        nftw(e->base, xrm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(e);
}

/* Creates base/src/rel as a directory and enrolls it with the defaults. */
static inline int xcreate(struct xenv *e, const char *rel, int64_t now, json_t **res, struct glove_error *err) {
        char p[1024];
        xsub(e, rel, p, sizeof(p));
        xmkdir(p);
        struct glove_exposure_request req = { .path = p };
        return glove_exposures_create(e->x, &req, now, res, err);
}

/* err, cleared (glove_error_set keeps the first error). */
static inline struct glove_error *fresh(struct glove_error *err) {
        glove_error_clear(err);
        return err;
}

/* The exposure_id and generation of an owner or catalog entry. */
static inline const char *xid(const json_t *entry) {
        return json_string_value(json_object_get(entry, "exposure_id"));
}
