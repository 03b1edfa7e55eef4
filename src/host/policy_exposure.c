/* SPDX-License-Identifier: Apache-2.0 */
/* glove policy validate / explain of an exposure policy (docs/exposures.md,
 * docs/host.md): a file whose top-level object has a "roots" member is an
 * exposure policy and is loaded with gloved's exposure policy loader
 * (glove/supervisor/exposure.h); any other file is a session policy. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/number.h"
#include "glove/supervisor/exposure.h"
#include "policy_internal.h"
#include "shown.h"

bool policy_is_exposure_file(const char *file) {
        _cleanup_close_ int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return false;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (glove_fd_read_bounded(fd, GLOVE_EXPOSURE_POLICY_MAX_BYTES, &buf, &len, NULL) < 0)
                return false;
        _cleanup_json_ json_t *o = json_loadb(buf, len, 0, NULL);
        return json_is_object(o) && json_object_get(o, "roots") != NULL;
}

int policy_exposure_validate(const char *file) {
        struct glove_error err = { 0 };
        struct glove_exposure_policy *p = NULL;
        if (glove_exposure_policy_load(file, geteuid(), &p, &err) < 0)
                return policy_refuse(&err);
        size_t n = glove_exposure_policy_root_count(p);
        printf("%s: ok: exposure policy, %zu root%s, sha256 %s\n", host_shown(file), n, n == 1 ? "" : "s",
               glove_exposure_policy_digest(p));
        glove_exposure_policy_free(p);
        return POLICY_EXIT_OK;
}

static void bytes_text(int64_t b, char *buf, size_t size) {
        if (b % (1LL << 30) == 0)
                snprintf(buf, size, "%lld GiB", (long long)(b >> 30));
        else if (b % (1LL << 20) == 0)
                snprintf(buf, size, "%lld MiB", (long long)(b >> 20));
        else
                snprintf(buf, size, "%lld bytes", (long long)b);
}

int policy_exposure_explain(const char *file, bool json) {
        struct glove_error err = { 0 };
        struct glove_exposure_policy *p = NULL;
        if (glove_exposure_policy_load(file, geteuid(), &p, &err) < 0)
                return policy_refuse(&err);
        size_t n = glove_exposure_policy_root_count(p);
        _cleanup_json_ json_t *roots = json_array();
        if (!json)
                printf("%s: exposure policy, %zu root%s; sha256 %s\n", host_shown(file), n, n == 1 ? "" : "s",
                       glove_exposure_policy_digest(p));
        for (size_t i = 0; i < n; i++) {
                const struct glove_exposure_root *r = glove_exposure_policy_root(p, i);
                json_t *modes = json_array(), *rts = json_array();
                char ttl[32];
                glove_duration_format_ms((uint64_t)r->max_ttl_secs * 1000, ttl, sizeof(ttl));
                if (!json)
                        printf("root %s: %s, exposed at %s, for at most %s\n", host_shown(r->root_id),
                               host_shown(r->path), host_shown(r->target_path), ttl);
                for (size_t k = 0; k < r->n_modes; k++) {
                        const struct glove_exposure_mode *m = &r->modes[k];
                        char q[32];
                        bytes_text(m->max_bytes, q, sizeof(q));
                        json_array_append_new(modes, json_pack("{s:s,s:s,s:s,s:I}", "access", m->access,
                                                               "materialization", m->materialization, "cleanup_policy",
                                                               m->cleanup_policy, "max_bytes", (json_int_t)m->max_bytes));
                        if (!json)
                                printf("  mode %s: %s, %s at the end, at most %s%s\n", m->access, m->materialization,
                                       m->cleanup_policy, q,
                                       strcmp(m->access, "retained_write") == 0
                                               ? " (changes are kept for review, never written back by themselves)"
                                               : "");
                }
                if (!json)
                        printf("  runtime templates:");
                for (size_t k = 0; k < r->n_runtimes; k++) {
                        json_array_append_new(rts, json_string(r->runtime_template_ids[k]));
                        if (!json)
                                printf(" %s", host_shown(r->runtime_template_ids[k]));
                }
                if (!json)
                        putchar('\n');
                json_array_append_new(roots, json_pack("{s:s,s:s,s:s,s:I,s:o,s:o}", "root_id", r->root_id, "path",
                                                       r->path, "target_path", r->target_path, "max_ttl_secs",
                                                       (json_int_t)r->max_ttl_secs, "modes", modes,
                                                       "runtime_template_ids", rts));
        }
        if (json) {
                json_t *o = json_pack("{s:s,s:s,s:s,s:O}", "file", file, "kind", "exposure_policy", "sha256",
                                      glove_exposure_policy_digest(p), "roots", roots);
                if (o)
                        json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
                fputc('\n', stdout);
                json_decref(o);
        }
        glove_exposure_policy_free(p);
        return POLICY_EXIT_OK;
}
