/* SPDX-License-Identifier: Apache-2.0 */
/* The exposure policy writer of glove setup and the project canonicalizer
 * of glove init (include/glove/host/exposures.h, docs/exposures.md). */
#include "glove/host/exposures.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/path.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/policy.h"

/* Longest root_id made from a directory name, bytes (room for "-NN"). */
#define ROOT_ID_STEM_MAX 100

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "setup.no_memory", "out of memory");
}

static bool id_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
}

static bool id_taken(const json_t *roots, const char *id) {
        size_t i;
        json_t *r;
        json_array_foreach(roots, i, r) if (strcmp(json_string_value(json_object_get(r, "root_id")), id) == 0) return true;
        return false;
}

/* The root_id of path: its last component as an identifier, unique among
 * roots' ids. */
static void make_root_id(const char *path, const json_t *roots, char out[GLOVE_POLICY_IDENTIFIER_MAX + 1]) {
        const char *last = strrchr(path, '/');
        last = last ? last + 1 : path;
        char stem[ROOT_ID_STEM_MAX + 1];
        size_t n = 0;
        for (; last[n] && n < ROOT_ID_STEM_MAX; n++)
                stem[n] = id_char(last[n]) ? last[n] : '-';
        stem[n] = '\0';
        if (n == 0)
                snprintf(stem, sizeof(stem), "root");
        snprintf(out, GLOVE_POLICY_IDENTIFIER_MAX + 1, "%s", stem);
        for (unsigned k = 2; id_taken(roots, out); k++)
                snprintf(out, GLOVE_POLICY_IDENTIFIER_MAX + 1, "%s-%u", stem, k);
}

static int cmp_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_roots(const void *a, const void *b) {
        const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
        return strcmp(json_string_value(json_object_get(x, "root_id")), json_string_value(json_object_get(y, "root_id")));
}

/* The default access tuples, sorted by (access, materialization), each
 * pair as src/supervisor/policy.c's access rules allow it: writes are
 * isolated copies, ephemeral_write is removed, retained_write kept. */
static json_t *default_modes(void) {
        static const char *const t[][3] = {
                { "ephemeral_write", "copy", "remove" },
                { "read", "bind", "remove" },
                { "retained_write", "copy", "retain" },
        };
        json_t *a = json_array();
        for (size_t i = 0; a && i < sizeof(t) / sizeof(t[0]); i++)
                if (json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:I}", "access", t[i][0], "materialization",
                                                       t[i][1], "cleanup_policy", t[i][2], "max_bytes",
                                                       (json_int_t)GLOVE_HOST_EXPOSURE_MAX_BYTES)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *runtime_array(const char *const *runtimes, size_t n) {
        _cleanup_free_ const char **v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return NULL;
        memcpy(v, runtimes, n * sizeof(*v));
        qsort(v, n, sizeof(*v), cmp_strings);
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if ((i == 0 || strcmp(v[i - 1], v[i]) != 0) && json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static int encode(json_t *doc, char **out, size_t *out_len, struct glove_error *err) {
        _cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!text)
                return no_memory(err);
        size_t n = strlen(text);
        char *buf = malloc(n + 2);
        if (!buf)
                return no_memory(err);
        memcpy(buf, text, n);
        buf[n] = '\n';
        buf[n + 1] = '\0';
        *out = buf;
        *out_len = n + 1;
        return 0;
}

static int check_decodes(const char *text, size_t len, struct glove_error *err) {
        struct glove_exposure_policy *p = NULL;
        int r = glove_exposure_policy_decode(text, len, &p, NULL, 0, err);
        glove_exposure_policy_free(p);
        return r;
}

int glove_host_exposure_policy_extend(const char *old, size_t old_len, const char *const *roots, size_t n_roots,
                                      const char *const *runtimes, size_t n_runtimes, char **out, size_t *out_len,
                                      size_t *n_added, struct glove_error *err) {
        *out = NULL;
        *out_len = 0;
        *n_added = 0;
        _cleanup_json_ json_t *doc = NULL;
        if (old) {
                int r = check_decodes(old, old_len, err);
                if (r < 0)
                        return r;
                doc = json_loadb(old, old_len, JSON_REJECT_DUPLICATES, NULL);
                if (!doc)
                        return no_memory(err);
        } else {
                doc = json_pack("{s:i,s:[]}", "schema_version", GLOVE_EXPOSURE_SCHEMA_VERSION, "roots");
                if (!doc)
                        return no_memory(err);
        }
        json_t *list = json_object_get(doc, "roots");
        for (size_t i = 0; i < n_roots; i++) {
                const char *path = roots[i];
                bool same = false;
                size_t k;
                json_t *e;
                json_array_foreach(list, k, e) {
                        const char *p = json_string_value(json_object_get(e, "path"));
                        const char *id = json_string_value(json_object_get(e, "root_id"));
                        if (strcmp(p, path) == 0) {
                                same = true;
                                break;
                        }
                        if (glove_path_is_beneath(path, p) || glove_path_is_beneath(p, path))
                                return glove_error_set(err, EEXIST, "setup.root_overlap",
                                                       "--path-root %s overlaps root %s (%s) of the exposure policy: "
                                                       "roots may not contain one another",
                                                       path, id, p);
                }
                if (same)
                        continue;
                if (n_runtimes == 0)
                        return glove_error_set(err, ENOENT, "setup.no_runtimes",
                                               "the session policy has no runtime template, so a new root "
                                               "--path-root %s would allow no runtime",
                                               path);
                char id[GLOVE_POLICY_IDENTIFIER_MAX + 1];
                make_root_id(path, list, id);
                json_t *modes = default_modes();
                json_t *rt = runtime_array(runtimes, n_runtimes);
                json_t *entry = modes && rt ? json_pack("{s:s,s:s,s:s,s:I,s:o,s:o}", "root_id", id, "path", path,
                                                        "target_path", GLOVE_HOST_EXPOSURE_TARGET_PATH, "max_ttl_secs",
                                                        (json_int_t)GLOVE_HOST_EXPOSURE_MAX_TTL_SECS, "access", modes,
                                                        "runtime_template_ids", rt)
                                            : NULL;
                if (!entry) {
                        if (!(modes && rt)) {
                                json_decref(modes);
                                json_decref(rt);
                        }
                        return no_memory(err);
                }
                if (json_array_append_new(list, entry) < 0)
                        return no_memory(err);
                (*n_added)++;
        }
        if (*n_added == 0 && old) {
                char *copy = malloc(old_len + 1);
                if (!copy)
                        return no_memory(err);
                memcpy(copy, old, old_len);
                copy[old_len] = '\0';
                *out = copy;
                *out_len = old_len;
                return 0;
        }
        /* Sorted by root_id, as the decoder requires. */
        size_t n = json_array_size(list);
        _cleanup_free_ json_t **v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return no_memory(err);
        for (size_t i = 0; i < n; i++)
                v[i] = json_incref(json_array_get(list, i));
        qsort(v, n, sizeof(*v), cmp_roots);
        json_array_clear(list);
        for (size_t i = 0; i < n; i++)
                json_array_append_new(list, v[i]);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = encode(doc, &text, &len, err);
        if (r < 0)
                return r;
        r = check_decodes(text, len, err);
        if (r < 0)
                return r;
        *out = TAKE_PTR(text);
        *out_len = len;
        return 0;
}

int glove_host_init_canonicalize(const char *project, const char *cwd, char **out, struct glove_error *err) {
        *out = NULL;
        if (!project || !*project)
                return glove_error_set(err, EINVAL, "init.path", "the project path is empty");
        _cleanup_free_ char *norm = NULL;
        struct glove_error e = { 0 };
        if (glove_path_normalize(project, cwd, &norm, &e) < 0)
                return glove_error_set(err, EINVAL, "init.path", "%s: %s", project, e.message);
        _cleanup_close_ int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "init.path", "/: %s", strerror(errno));
        /* Walk each component: O_PATH | O_NOFOLLOW opens a link itself,
         * which fstat then shows; nothing is read from any directory. */
        size_t len = strlen(norm);
        size_t at = 1;
        while (at < len) {
                size_t end = at;
                while (end < len && norm[end] != '/')
                        end++;
                char name[NAME_MAX + 1];
                if (end - at > NAME_MAX)
                        return glove_error_set(err, ENAMETOOLONG, "init.path", "%.*s: a component is too long",
                                               (int)end, norm);
                memcpy(name, norm + at, end - at);
                name[end - at] = '\0';
                int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        int e2 = errno;
                        if (e2 == ENOENT)
                                return glove_error_set(err, ENOENT, "init.missing", "%.*s does not exist", (int)end,
                                                       norm);
                        return glove_error_set(err, e2, "init.path", "%.*s: %s", (int)end, norm, strerror(e2));
                }
                struct stat st;
                if (fstat(fd, &st) < 0) {
                        int e2 = errno;
                        close(fd);
                        return glove_error_set(err, e2, "init.path", "%.*s: %s", (int)end, norm, strerror(e2));
                }
                if (S_ISLNK(st.st_mode)) {
                        close(fd);
                        return glove_error_set(err, ELOOP, "init.symlink",
                                               "%.*s is a symbolic link: glove init follows none; name the real "
                                               "directory",
                                               (int)end, norm);
                }
                if (!S_ISDIR(st.st_mode)) {
                        close(fd);
                        return glove_error_set(err, ENOTDIR, "init.not_directory", "%.*s is not a directory",
                                               (int)end, norm);
                }
                close(dir);
                dir = fd;
                at = end + 1;
        }
        *out = TAKE_PTR(norm);
        return 0;
}
