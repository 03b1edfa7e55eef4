/* SPDX-License-Identifier: Apache-2.0 */
/* Policy sections beyond the spec's example: egress_policies and
 * secret_mounts (spec session-policy.md, "Cloudflare OS development
 * template": named egress policies with allow_private; credential policies
 * naming owner-protected source files behind opaque handles). Both are
 * optional and default to empty. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/supervisor/adapter.h"
#include "internal.h"

#define P(x) "policy." x

/* The managed private home of native adapters (spec "Filesystem and launch
 * binding": Glove creates /home/agent). Secret leases are mounted beneath it. */
#define SV_MANAGED_HOME "/home/agent"

static const char *const egress_keys[] = { "policy_id", "targets", NULL };
static const char *const target_keys[] = { "allow_private", "host", "port", NULL };
static const char *const secret_keys[] = { "handle", "runtime_id", "source_path", "target_path", NULL };

static int no_memory(struct sv_ctx *c) {
        c->oom = true;
        return glove_error_set(c->err, ENOMEM, P("no_memory"), "out of memory decoding the policy");
}

/* Optional top-level array: absent means empty. */
static int get_optional_items(struct sv_ctx *c, const json_t *root, const char *key, size_t max, size_t elem,
                              json_t **arr, void **items, size_t *n) {
        *n = 0;
        *items = NULL;
        *arr = NULL;
        if (!json_object_get(root, key))
                return 0;
        int r = sv_get_array(c, root, key, NULL, max, arr);
        if (r < 0)
                return r;
        *n = json_array_size(*arr);
        *items = calloc(*n ? *n : 1, elem);
        return *items ? 0 : no_memory(c);
}

/* ---- egress hosts ---- */

static bool ipv4_private(const uint8_t a[4]) {
        return a[0] == 0 || a[0] == 10 || a[0] == 127 || (a[0] == 100 && (a[1] & 0xc0) == 64) ||
               (a[0] == 169 && a[1] == 254) || (a[0] == 172 && (a[1] & 0xf0) == 16) ||
               (a[0] == 192 && a[1] == 168) || a[0] >= 224;
}

static bool ipv6_private(const uint8_t a[16]) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const uint8_t zero[15] = { 0 };
        if (memcmp(a, mapped, sizeof(mapped)) == 0)
                return ipv4_private(a + 12);
        if (memcmp(a, zero, sizeof(zero)) == 0 && (a[15] == 0 || a[15] == 1)) /* :: and ::1 */
                return true;
        return (a[0] & 0xfe) == 0xfc ||                 /* fc00::/7 unique local */
               (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || /* fe80::/10 link local */
               a[0] == 0xff;                            /* multicast */
}

static bool dns_name_valid(const char *h) {
        size_t label = 0;
        char prev = '.';
        for (const char *s = h; *s; s++) {
                char ch = *s;
                if (ch == '.') {
                        if (label == 0 || prev == '-')
                                return false;
                        label = 0;
                } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-') {
                        if ((label == 0 && ch == '-') || ++label > 63)
                                return false;
                } else {
                        return false;
                }
                prev = ch;
        }
        if (label == 0 || prev == '-')
                return false;
        /* An all-numeric last label reads as an (invalid) address, never a
         * name (RFC 3696 section 2). */
        const char *last = strrchr(h, '.');
        last = last ? last + 1 : h;
        return strspn(last, "0123456789") != strlen(last);
}

/* Classifies host: -1 invalid, 0 public (as far as the text shows), 1
 * private/loopback/link-local/multicast/unspecified. IP literals must be in
 * the canonical form inet_ntop writes (so one address has one spelling). */
static int host_class(const char *h) {
        uint8_t a[16];
        char back[INET6_ADDRSTRLEN];
        if (inet_pton(AF_INET, h, a) == 1)
                return inet_ntop(AF_INET, a, back, sizeof(back)) && strcmp(back, h) == 0 ? ipv4_private(a) : -1;
        if (inet_pton(AF_INET6, h, a) == 1)
                return inet_ntop(AF_INET6, a, back, sizeof(back)) && strcmp(back, h) == 0 ? ipv6_private(a) : -1;
        if (!dns_name_valid(h))
                return -1;
        size_t n = strlen(h);
        return strcmp(h, "localhost") == 0 || (n > 10 && strcmp(h + n - 10, ".localhost") == 0);
}

static int decode_target(struct sv_ctx *c, const json_t *o, const char *path, struct sv_egress_target *t) {
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, target_keys, path);
        if (r >= 0)
                r = sv_get_string(c, o, "host", path, GLOVE_POLICY_MAX_HOSTNAME, &t->host);
        if (r >= 0)
                r = sv_get_int(c, o, "port", path, 1, 65535, &t->port);
        if (r >= 0)
                r = sv_get_bool(c, o, "allow_private", path, &t->allow_private);
        if (r < 0)
                return r;
        char hp[GLOVE_JSON_PATH_MAX];
        sv_path_member(hp, path, "host");
        int cls = host_class(t->host);
        if (cls < 0)
                return sv_fail(c, P("invalid_host"), hp,
                               "host must be a lowercase DNS name or a canonical IPv4/IPv6 literal (no wildcard)");
        if (cls > 0 && !t->allow_private)
                return sv_fail(c, P("egress_private_address"), hp,
                               "private, loopback or link-local host requires allow_private true");
        return 0;
}

static int decode_egress_policy(struct sv_ctx *c, const struct glove_supervisor_policy *p, const json_t *o,
                                const char *path, struct sv_egress_policy *e) {
        char mp[GLOVE_JSON_PATH_MAX];
        json_t *arr;
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, egress_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "policy_id", path, &e->id);
        sv_path_member(mp, path, "policy_id");
        if (r >= 0 && !sv_strings_contain(&p->egress_policy_ids, e->id))
                r = sv_fail(c, P("unknown_egress_policy"), mp, "policy_id is not listed in egress_policy_ids");
        if (r >= 0)
                r = sv_get_array(c, o, "targets", path, GLOVE_POLICY_MAX_EGRESS_TARGETS, &arr);
        if (r < 0)
                return r;
        sv_path_member(mp, path, "targets");
        e->n_targets = json_array_size(arr);
        e->targets = calloc(e->n_targets ? e->n_targets : 1, sizeof(*e->targets));
        if (!e->targets)
                return no_memory(c);
        for (size_t i = 0; i < e->n_targets; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, mp, i);
                r = decode_target(c, json_array_get(arr, i), ep, &e->targets[i]);
                if (r < 0)
                        return r;
                if (i == 0)
                        continue;
                const struct sv_egress_target *a = &e->targets[i - 1], *b = &e->targets[i];
                int cmp = strcmp(a->host, b->host);
                if (cmp == 0)
                        cmp = a->port < b->port ? -1 : a->port > b->port;
                if (cmp >= 0)
                        return sv_fail(c, cmp == 0 ? P("array_duplicate") : P("array_unsorted"), ep,
                                       "targets must be sorted by (host, port), each once");
        }
        return 0;
}

static const char *egress_key(const void *items, size_t i) {
        return ((const struct sv_egress_policy *)items)[i].id;
}

int sv_decode_egress_policies(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_optional_items(c, root, "egress_policies", GLOVE_POLICY_MAX_EGRESS_POLICIES, sizeof(*p->egress),
                                   &arr, &items, &p->n_egress);
        if (r < 0)
                return r;
        p->egress = items;
        for (size_t i = 0; i < p->n_egress; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.egress_policies", i);
                r = decode_egress_policy(c, p, json_array_get(arr, i), ep, &p->egress[i]);
                if (r < 0)
                        return r;
        }
        return sv_check_sorted(c, "$.egress_policies", p->n_egress, egress_key, p->egress);
}

/* ---- secret_mounts ---- */

static bool runtime_known(const struct glove_supervisor_policy *p, const char *runtime_id) {
        for (size_t i = 0; i < p->n_templates; i++)
                if (strcmp(p->templates[i].runtime_id, runtime_id) == 0)
                        return true;
        return false;
}

static int decode_secret(struct sv_ctx *c, const struct glove_supervisor_policy *p, const json_t *o,
                         const char *path, struct sv_secret_mount *s) {
        char mp[GLOVE_JSON_PATH_MAX];
        int r = sv_as_object(c, o, path);
        if (r >= 0)
                r = sv_check_keys(c, o, secret_keys, path);
        if (r >= 0)
                r = sv_get_identifier(c, o, "handle", path, &s->handle);
        sv_path_member(mp, path, "handle");
        if (r >= 0 && !sv_strings_contain(&p->secret_handles, s->handle))
                r = sv_fail(c, P("unknown_secret_handle"), mp, "handle is not listed in secret_handles");
        if (r >= 0)
                r = sv_get_identifier(c, o, "runtime_id", path, &s->runtime_id);
        sv_path_member(mp, path, "runtime_id");
        if (r >= 0 && !runtime_known(p, s->runtime_id))
                r = sv_fail(c, P("unknown_runtime_id"), mp, "no runtime template has this runtime_id");
        if (r >= 0)
                r = sv_get_string(c, o, "source_path", path, GLOVE_LAUNCH_MAX_PATH, &s->source_path);
        sv_path_member(mp, path, "source_path");
        if (r >= 0)
                r = sv_check_host_path(c, s->source_path, mp);
        if (r >= 0)
                r = sv_get_string(c, o, "target_path", path, GLOVE_LAUNCH_MAX_PATH, &s->target_path);
        sv_path_member(mp, path, "target_path");
        if (r >= 0)
                r = sv_check_abs_path(c, s->target_path, mp);
        if (r >= 0 && (!glove_path_is_beneath(s->target_path, SV_MANAGED_HOME) ||
                       strcmp(s->target_path, SV_MANAGED_HOME) == 0))
                r = sv_fail(c, P("secret_target_outside_home"), mp,
                            "target_path must lie strictly beneath " SV_MANAGED_HOME);
        /* The adapter's skills directory and the chain Glove creates down to
         * it are Glove's: a lease at, beneath or above it would cover the
         * projected SKILL.md files (the binding would commit skills the CLI
         * never sees, the CLI would read the credential as a skill) or a
         * directory the sandbox makes. */
        const struct glove_supervisor_adapter *ad = r >= 0 ? glove_supervisor_adapter_find(s->runtime_id) : NULL;
        if (ad && sv_paths_overlap(s->target_path, ad->skills_dir))
                r = sv_fail(c, P("secret_target_skills"), mp,
                            "target_path overlaps the %s adapter's skills directory %s (at, beneath or above it)",
                            s->runtime_id, ad->skills_dir);
        /* Nor a sandbox target every session of a template may have (an
         * alias's or a projection destination's target_path). */
        for (size_t i = 0; r >= 0 && i < p->n_aliases + p->n_destinations; i++) {
                const char *t = i < p->n_aliases ? p->aliases[i].target_path
                                                 : p->destinations[i - p->n_aliases].target_path;
                if (sv_paths_overlap(s->target_path, t))
                        r = sv_fail(c, P("secret_target_overlap"), mp, "target_path overlaps the sandbox target %s", t);
        }
        return r;
}

static const char *secret_key(const void *items, size_t i) {
        return ((const struct sv_secret_mount *)items)[i].handle;
}

int sv_decode_secret_mounts(struct sv_ctx *c, const json_t *root, struct glove_supervisor_policy *p) {
        json_t *arr;
        void *items;
        int r = get_optional_items(c, root, "secret_mounts", GLOVE_POLICY_MAX_SECRET_MOUNTS,
                                   sizeof(*p->secret_mounts), &arr, &items, &p->n_secret_mounts);
        if (r < 0)
                return r;
        p->secret_mounts = items;
        for (size_t i = 0; i < p->n_secret_mounts; i++) {
                char ep[GLOVE_JSON_PATH_MAX];
                sv_path_index(ep, "$.secret_mounts", i);
                r = decode_secret(c, p, json_array_get(arr, i), ep, &p->secret_mounts[i]);
                if (r < 0)
                        return r;
        }
        r = sv_check_sorted(c, "$.secret_mounts", p->n_secret_mounts, secret_key, p->secret_mounts);
        if (r < 0)
                return r;
        /* Two leases of one runtime cannot share or nest their targets. */
        for (size_t i = 0; i < p->n_secret_mounts; i++)
                for (size_t k = 0; k < i; k++) {
                        const struct sv_secret_mount *a = &p->secret_mounts[k], *b = &p->secret_mounts[i];
                        if (strcmp(a->runtime_id, b->runtime_id) != 0 ||
                            !sv_paths_overlap(a->target_path, b->target_path))
                                continue;
                        char ep[GLOVE_JSON_PATH_MAX];
                        snprintf(ep, sizeof(ep), "$.secret_mounts[%zu].target_path", i);
                        return sv_fail(c, P("target_overlap"), ep, "overlaps secret_mounts[%zu] of the same runtime",
                                       k);
                }
        return 0;
}
