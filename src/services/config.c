/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's local-service configuration (glove/services/config.h).
 */
#include "glove/services/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "internal.h"

struct glove_services_config {
        size_t n;
        struct glove_services_config_endpoint ep[GLOVE_SERVICES_MAX_ENDPOINTS];
};

static const struct glove_protected_file_codes file_codes = {
        .path_relative = "services.file_path_relative", .symlink = "services.file_symlink",
        .open = "services.file_open", .not_regular = "services.file_not_regular", .owner = "services.file_owner",
        .mode = "services.file_mode", .links = "services.file_links", .too_large = "services.file_too_large",
        .no_memory = "services.no_memory", .read = "services.file_read", .changed = "services.file_changed",
};

/* [a-z0-9] first, then [a-z0-9_-] (and '.' when dots), 1..max bytes. */
bool svc_name_valid(const char *s, size_t max, bool dots) {
        if (!s)
                return false;
        size_t n = strnlen(s, max + 1);
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (i > 0)
                        ok = ok || c == '_' || c == '-' || (dots && c == '.');
                if (!ok)
                        return false;
        }
        return true;
}

bool glove_services_identifier_valid(const char *s) {
        return svc_name_valid(s, GLOVE_SERVICES_ALIAS_MAX, false);
}

bool glove_services_socket_path_valid(const char *path) {
        if (!path || path[0] != '/')
                return false;
        size_t len = strnlen(path, GLOVE_SERVICES_SOCKET_PATH_MAX + 1);
        if (len > GLOVE_SERVICES_SOCKET_PATH_MAX || len < 2)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
                        return false;
        const char *p = path + 1;
        for (;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!slash)
                        return true;
                p = slash + 1;
        }
}

/* ---- strict member access with services.config_* codes ---- */

static int check_keys(const json_t *obj, const char *const keys[], const char *path, struct glove_error *err) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)obj, key, v) {
                bool known = false;
                for (size_t i = 0; keys[i]; i++)
                        known = known || strcmp(key, keys[i]) == 0;
                if (!known) {
                        char p[GLOVE_JSON_PATH_MAX];
                        glove_json_path_member(p, sizeof(p), path, key);
                        return glove_error_set(err, EINVAL, "services.config_unknown_field",
                                               "%s: unknown member (allowed: the ones of config.h only)", p);
                }
        }
        return 0;
}

static const char *type_name(json_type t) {
        switch (t) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        default:
                return "another type";
        }
}

/* Stores obj.key in *out (borrowed) when present and of type t; a missing
 * member is an error only when required (then *out stays NULL). */
static int member(const json_t *obj, const char *key, const char *path, json_type t, bool required, json_t **out,
                  struct glove_error *err) {
        *out = NULL;
        char p[GLOVE_JSON_PATH_MAX];
        glove_json_path_member(p, sizeof(p), path, key);
        json_t *v = json_object_get(obj, key);
        if (!v) {
                if (!required)
                        return 0;
                return glove_error_set(err, EINVAL, "services.config_missing_field", "%s: missing", p);
        }
        if (json_typeof(v) != t)
                return glove_error_set(err, EINVAL, "services.config_type", "%s: must be %s", p, type_name(t));
        *out = v;
        return 0;
}

/* Copies the string v (at path) into dst when it is a valid name. */
static int copy_name(const json_t *v, const char *path, size_t max, bool dots, char *dst, const char *what,
                     struct glove_error *err) {
        if (!json_is_string(v))
                return glove_error_set(err, EINVAL, "services.config_type", "%s: must be a string", path);
        const char *s = json_string_value(v);
        if (strlen(s) != json_string_length(v) || !svc_name_valid(s, max, dots))
                return glove_error_set(err, EINVAL, "services.config_identifier",
                                       "%s: not %s ([a-z0-9][a-z0-9%s_-], 1..%zu bytes)", path, what,
                                       dots ? "." : "", max);
        memcpy(dst, s, strlen(s) + 1);
        return 0;
}

/* strcmp order of a after prev: 0 in order, else a code. */
static int order(const char *prev, const char *cur, const char *path, const char *what, struct glove_error *err) {
        int c = strcmp(prev, cur);
        if (c == 0)
                return glove_error_set(err, EINVAL, "services.config_duplicate", "%s: duplicate %s \"%s\"", path,
                                       what, cur);
        if (c > 0)
                return glove_error_set(err, EINVAL, "services.config_unsorted",
                                       "%s: %s \"%s\" sorts before \"%s\" (strict byte order required)", path, what,
                                       cur, prev);
        return 0;
}

static int decode_runtime_ids(const json_t *arr, const char *path, struct glove_services_config_endpoint *ep,
                              struct glove_error *err) {
        size_t n = json_array_size(arr);
        if (n == 0)
                return glove_error_set(err, EINVAL, "services.config_empty", "%s: at least one runtime ID is required",
                                       path);
        if (n > GLOVE_SERVICES_MAX_RUNTIME_IDS)
                return glove_error_set(err, E2BIG, "services.config_too_many", "%s: %zu runtime IDs (at most %d)",
                                       path, n, GLOVE_SERVICES_MAX_RUNTIME_IDS);
        for (size_t i = 0; i < n; i++) {
                char p[GLOVE_JSON_PATH_MAX];
                glove_json_path_index(p, sizeof(p), path, i);
                int r = copy_name(json_array_get(arr, i), p, GLOVE_SERVICES_RUNTIME_ID_MAX, false, ep->runtime_ids[i],
                                  "a runtime identifier", err);
                if (r < 0)
                        return r;
                if (i > 0 && (r = order(ep->runtime_ids[i - 1], ep->runtime_ids[i], p, "runtime ID", err)) < 0)
                        return r;
        }
        ep->n_runtime_ids = n;
        return 0;
}

static int decode_endpoint(const json_t *v, const char *path, struct glove_services_config_endpoint *ep,
                           struct glove_error *err) {
        static const char *const keys[] = { "alias", "socket_path", "runtime_ids", "guest_channel", NULL };
        if (!json_is_object(v))
                return glove_error_set(err, EINVAL, "services.config_type", "%s: must be an object", path);
        int r = check_keys(v, keys, path, err);
        if (r < 0)
                return r;
        char p[GLOVE_JSON_PATH_MAX];
        json_t *m;
        if ((r = member(v, "alias", path, JSON_STRING, true, &m, err)) < 0)
                return r;
        glove_json_path_member(p, sizeof(p), path, "alias");
        if ((r = copy_name(m, p, GLOVE_SERVICES_ALIAS_MAX, false, ep->alias, "an alias identifier", err)) < 0)
                return r;
        if ((r = member(v, "socket_path", path, JSON_STRING, true, &m, err)) < 0)
                return r;
        glove_json_path_member(p, sizeof(p), path, "socket_path");
        const char *sp = json_string_value(m);
        if (strlen(sp) != json_string_length(m) || !glove_services_socket_path_valid(sp))
                return glove_error_set(err, EINVAL, "services.config_path",
                                       "%s: must be an absolute, lexically normal path (no \"//\", \".\" or \"..\" "
                                       "component, no trailing \"/\", no control byte) of at most %d bytes",
                                       p, GLOVE_SERVICES_SOCKET_PATH_MAX);
        memcpy(ep->socket_path, sp, strlen(sp) + 1);
        if ((r = member(v, "runtime_ids", path, JSON_ARRAY, true, &m, err)) < 0)
                return r;
        glove_json_path_member(p, sizeof(p), path, "runtime_ids");
        if ((r = decode_runtime_ids(m, p, ep, err)) < 0)
                return r;
        if ((r = member(v, "guest_channel", path, JSON_STRING, false, &m, err)) < 0)
                return r;
        if (m) {
                glove_json_path_member(p, sizeof(p), path, "guest_channel");
                if ((r = copy_name(m, p, GLOVE_SERVICES_GUEST_CHANNEL_MAX, true, ep->guest_channel,
                                   "a guest-channel binding", err)) < 0)
                        return r;
                ep->has_guest_channel = true;
        }
        return 0;
}

static int decode_root(const json_t *root, struct glove_services_config *c, struct glove_error *err) {
        static const char *const keys[] = { "schema_version", "endpoints", NULL };
        int r = check_keys(root, keys, "$", err);
        if (r < 0)
                return r;
        json_t *m;
        if ((r = member(root, "schema_version", "$", JSON_INTEGER, true, &m, err)) < 0)
                return r;
        if (json_integer_value(m) != GLOVE_SERVICES_SCHEMA_VERSION)
                return glove_error_set(err, EINVAL, "services.config_schema_version",
                                       "$.schema_version: %lld is not supported (only %d)",
                                       (long long)json_integer_value(m), GLOVE_SERVICES_SCHEMA_VERSION);
        if ((r = member(root, "endpoints", "$", JSON_ARRAY, true, &m, err)) < 0)
                return r;
        size_t n = json_array_size(m);
        if (n == 0)
                return glove_error_set(err, EINVAL, "services.config_empty",
                                       "$.endpoints: at least one endpoint is required (without local services, "
                                       "start gloved without --local-services)");
        if (n > GLOVE_SERVICES_MAX_ENDPOINTS)
                return glove_error_set(err, E2BIG, "services.config_too_many", "$.endpoints: %zu endpoints (at most %d)",
                                       n, GLOVE_SERVICES_MAX_ENDPOINTS);
        for (size_t i = 0; i < n; i++) {
                char p[GLOVE_JSON_PATH_MAX];
                glove_json_path_index(p, sizeof(p), "$.endpoints", i);
                if ((r = decode_endpoint(json_array_get(m, i), p, &c->ep[i], err)) < 0)
                        return r;
                if (i > 0) {
                        char pa[GLOVE_JSON_PATH_MAX];
                        glove_json_path_member(pa, sizeof(pa), p, "alias");
                        if ((r = order(c->ep[i - 1].alias, c->ep[i].alias, pa, "alias", err)) < 0)
                                return r;
                }
                /* One upstream, one alias: two aliases of one socket would
                 * be two listeners for an adapter-bound one, and two names
                 * for one service otherwise. */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(c->ep[j].socket_path, c->ep[i].socket_path) == 0) {
                                char ps[GLOVE_JSON_PATH_MAX];
                                glove_json_path_member(ps, sizeof(ps), p, "socket_path");
                                return glove_error_set(err, EINVAL, "services.config_duplicate",
                                                       "%s: the socket of endpoint %s again", ps, c->ep[j].alias);
                        }
        }
        c->n = n;
        return 0;
}

int glove_services_config_decode(const char *text, size_t len, struct glove_services_config **out,
                                 struct glove_error *err) {
        if (!out || (!text && len > 0))
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no configuration text or output");
        *out = NULL;
        if (len > GLOVE_SERVICES_CONFIG_MAX_BYTES)
                return glove_error_set(err, EMSGSIZE, "services.config_too_large",
                                       "$: %zu bytes (at most %d)", len, GLOVE_SERVICES_CONFIG_MAX_BYTES);
        struct glove_error jerr = { 0 };
        _cleanup_json_ json_t *root = NULL;
        int r = glove_json_decode_strict(text, len, GLOVE_SERVICES_CONFIG_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &root,
                                         &jerr);
        if (r < 0) {
                const char *code = "services.config_invalid_json";
                if (jerr.code && strcmp(jerr.code, "json.duplicate_key") == 0)
                        code = "services.config_duplicate";
                else if (jerr.code && strcmp(jerr.code, "json.no_memory") == 0)
                        code = "services.no_memory";
                return glove_error_set(err, -r, code, "%s", jerr.message);
        }
        _cleanup_free_ struct glove_services_config *c = calloc(1, sizeof(*c));
        if (!c)
                return glove_error_set(err, ENOMEM, "services.no_memory", "out of memory");
        if ((r = decode_root(root, c, err)) < 0)
                return r;
        *out = TAKE_PTR(c);
        return 0;
}

int glove_services_config_load(const char *path, uid_t owner_uid, struct glove_services_config **out,
                               struct glove_error *err) {
        if (!out || !path)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no configuration path or output");
        *out = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = glove_file_load_protected(path, owner_uid, GLOVE_SERVICES_CONFIG_MAX_BYTES, &file_codes, NULL, &buf,
                                          &n, err);
        if (r < 0)
                return r;
        r = glove_services_config_decode(buf, n, out, err);
        if (r < 0)
                glove_error_prefix(err, "%s", path);
        return r;
}

size_t glove_services_config_count(const struct glove_services_config *c) {
        return c ? c->n : 0;
}

const struct glove_services_config_endpoint *glove_services_config_endpoint(const struct glove_services_config *c,
                                                                            size_t i) {
        return c && i < c->n ? &c->ep[i] : NULL;
}

const char *glove_services_config_guest_channel(const struct glove_services_config *c, size_t i) {
        const struct glove_services_config_endpoint *ep = glove_services_config_endpoint(c, i);
        return ep && ep->has_guest_channel ? ep->guest_channel : NULL;
}

bool glove_services_config_find(const struct glove_services_config *c, const char *alias, size_t *index) {
        if (!c || !alias)
                return false;
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->ep[i].alias, alias) == 0) {
                        if (index)
                                *index = i;
                        return true;
                }
        return false;
}

bool glove_services_config_allows(const struct glove_services_config *c, size_t i, const char *runtime_id) {
        const struct glove_services_config_endpoint *ep = glove_services_config_endpoint(c, i);
        if (!ep || !runtime_id)
                return false;
        for (size_t j = 0; j < ep->n_runtime_ids; j++)
                if (strcmp(ep->runtime_ids[j], runtime_id) == 0)
                        return true;
        return false;
}

void glove_services_config_free(struct glove_services_config *c) {
        free(c);
}
