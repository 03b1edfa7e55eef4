/* SPDX-License-Identifier: Apache-2.0 */
/* Library bundles: the file checks and the strict decoder
 * (include/glove/supervisor/bundle.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/supervisor/bundle.h"

/* Sorted: the index is the enum value. */
static const char *const kind_names[] = { "behavior", "prompt", "skill", "template", "workflow" };

const char *glove_bundle_kind_name(int k) {
        return k >= 0 && (size_t)k < GLOVE_ELEMENTSOF(kind_names) ? kind_names[k] : NULL;
}

static bool hex64(const char *s) {
        if (!s || strlen(s) != GLOVE_DIGEST_SHA256_HEX_LEN)
                return false;
        for (size_t i = 0; s[i]; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

bool glove_bundle_key_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > GLOVE_BUNDLE_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];
                bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
                if (!alnum && (i == 0 || !(ch == '.' || ch == '_' || ch == ':' || ch == '-')))
                        return false;
        }
        return true;
}

void glove_bundle_free(struct glove_bundle *b) {
        if (!b)
                return;
        if (b->fd >= 0)
                close(b->fd);
        json_decref(b->root);
        free(b->entries);
        free(b);
}

/* ---- decoding ---- */

static int fail(struct glove_error *err, int e, const char *code, const char *what, const char *path,
                const char *text) {
        return glove_error_set(err, e, code, "%s: %s: %s", what, path, text);
}

/* The first "prompt_ref" member anywhere in v (depth already bounded by the
 * strict decoder); its path goes to buf. */
static bool find_prompt_ref(const json_t *v, const char *path, char *buf, size_t cap) {
        char p[GLOVE_JSON_PATH_MAX];
        if (json_is_object(v)) {
                const char *k;
                const json_t *x;
                json_object_foreach((json_t *)v, k, x) {
                        glove_json_path_member(p, sizeof(p), path, k);
                        if (strcmp(k, "prompt_ref") == 0) {
                                snprintf(buf, cap, "%s", p);
                                return true;
                        }
                        if (find_prompt_ref(x, p, buf, cap))
                                return true;
                }
        } else if (json_is_array(v)) {
                size_t i;
                const json_t *x;
                json_array_foreach(v, i, x) {
                        glove_json_path_index(p, sizeof(p), path, i);
                        if (find_prompt_ref(x, p, buf, cap))
                                return true;
                }
        }
        return false;
}

/* Exactly the members of keys[] (NULL-terminated), all present. */
static int check_members(const json_t *o, const char *const keys[], const char *what, const char *path,
                         struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)o, k, x) {
                bool known = false;
                for (size_t i = 0; keys[i] && !known; i++)
                        known = strcmp(keys[i], k) == 0;
                if (!known) {
                        glove_json_path_member(p, sizeof(p), path, k);
                        return fail(err, EINVAL, "bundle.unknown_field", what, p, "not a member of the bundle format");
                }
        }
        for (size_t i = 0; keys[i]; i++)
                if (!json_object_get(o, keys[i])) {
                        glove_json_path_member(p, sizeof(p), path, keys[i]);
                        return fail(err, EINVAL, "bundle.missing_field", what, p, "required");
                }
        return 0;
}

/* A string member of o, 1..max bytes (0: unbounded but for the file's). */
static int get_str(const json_t *o, const char *key, size_t max, const char *what, const char *path,
                   const char **out, size_t *len, struct glove_error *err) {
        char p[GLOVE_JSON_PATH_MAX];
        glove_json_path_member(p, sizeof(p), path, key);
        const json_t *v = json_object_get(o, key);
        if (!json_is_string(v))
                return fail(err, EINVAL, "bundle.wrong_type", what, p, "must be a string");
        size_t n = json_string_length(v);
        if (max && (n == 0 || n > max))
                return glove_error_set(err, EINVAL, "bundle.wrong_type", "%s: %s: must be 1..%zu bytes", what, p, max);
        *out = json_string_value(v);
        if (len)
                *len = n;
        return 0;
}

static int get_hex(const json_t *o, const char *key, const char *what, const char *path, const char **out,
                   struct glove_error *err) {
        int r = get_str(o, key, GLOVE_DIGEST_SHA256_HEX_LEN, what, path, out, NULL, err);
        if (r < 0)
                return r;
        if (!hex64(*out)) {
                char p[GLOVE_JSON_PATH_MAX];
                glove_json_path_member(p, sizeof(p), path, key);
                return fail(err, EINVAL, "bundle.invalid_hex", what, p, "must be 64 lowercase hex characters");
        }
        return 0;
}

static const char *const top_keys[] = { "entries", "schema_version", "source_library_ref", "source_manifest_digest",
                                        NULL };
static const char *const entry_keys[] = { "content", "content_digest", "key", "kind", NULL };

static int decode_entry(struct glove_bundle *b, size_t i, const char *what, struct glove_error *err) {
        char path[GLOVE_JSON_PATH_MAX];
        glove_json_path_index(path, sizeof(path), "$.entries", i);
        const json_t *o = json_array_get(json_object_get(b->root, "entries"), i);
        if (!json_is_object(o))
                return fail(err, EINVAL, "bundle.wrong_type", what, path, "an entry must be an object");
        int r = check_members(o, entry_keys, what, path, err);
        if (r < 0)
                return r;
        struct glove_bundle_entry *e = &b->entries[i];
        const char *kind;
        char p[GLOVE_JSON_PATH_MAX];
        if ((r = get_str(o, "key", GLOVE_BUNDLE_KEY_MAX, what, path, &e->key, NULL, err)) < 0 ||
            (r = get_str(o, "kind", 0, what, path, &kind, NULL, err)) < 0 ||
            (r = get_str(o, "content", 0, what, path, &e->content, &e->content_len, err)) < 0 ||
            (r = get_hex(o, "content_digest", what, path, &e->content_digest, err)) < 0)
                return r;
        if (!glove_bundle_key_valid(e->key)) {
                glove_json_path_member(p, sizeof(p), path, "key");
                return glove_error_set(err, EINVAL, "bundle.invalid_key",
                                       "%s: %s: a key is 1..%d bytes of [A-Za-z0-9._:-] starting with a letter or digit",
                                       what, p, GLOVE_BUNDLE_KEY_MAX);
        }
        int k = -1;
        for (size_t j = 0; j < GLOVE_ELEMENTSOF(kind_names); j++)
                if (strcmp(kind_names[j], kind) == 0)
                        k = (int)j;
        if (k < 0) {
                glove_json_path_member(p, sizeof(p), path, "kind");
                return fail(err, EINVAL, "bundle.unknown_kind", what, p,
                            "not one of skill, behavior, prompt, template, workflow (unknown kinds fail closed)");
        }
        e->kind = (enum glove_bundle_kind)k;
        for (size_t j = 0; j < i; j++)
                if (strcmp(b->entries[j].key, e->key) == 0) {
                        glove_json_path_member(p, sizeof(p), path, "key");
                        return glove_error_set(err, EINVAL, "bundle.duplicate_entry", "%s: %s: key %s is also entry %zu",
                                               what, p, e->key, j);
                }
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        if ((r = glove_digest_sha256(e->content, e->content_len, d, err)) < 0)
                return r;
        glove_digest_hex_encode(d, sizeof(d), hex, sizeof(hex));
        if (strcmp(hex, e->content_digest) != 0) {
                glove_json_path_member(p, sizeof(p), path, "content_digest");
                return fail(err, EINVAL, "bundle.content_digest", what, p, "is not the SHA-256 of content");
        }
        return 0;
}

static const char *json_code(const char *code) {
        static const char *const map[][2] = {
                { "json.not_canonical", "bundle.not_canonical" }, { "json.duplicate_key", "bundle.duplicate_key" },
                { "json.too_deep", "bundle.too_deep" },           { "json.invalid_utf8", "bundle.invalid_utf8" },
                { "json.too_large", "bundle.too_large" },         { "json.no_memory", "bundle.no_memory" },
                { "json.too_many_values", "bundle.too_many_entries" },
        };
        for (size_t i = 0; code && i < GLOVE_ELEMENTSOF(map); i++)
                if (strcmp(code, map[i][0]) == 0)
                        return map[i][1];
        return "bundle.malformed";
}

int glove_bundle_decode(const void *data, size_t len, const char *what, struct glove_bundle **out,
                        struct glove_error *err) {
        *out = NULL;
        what = what ? what : "bundle";
        _cleanup_json_ json_t *root = NULL;
        struct glove_error je = { 0 };
        int r = glove_json_decode_canonical(data, len, GLOVE_BUNDLE_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY | GLOVE_JSON_BOUND_VALUES,
                                            &root, &je);
        if (r < 0)
                return glove_error_set(err, -r, json_code(je.code), "%s: %s", what, je.message);
        char p[GLOVE_JSON_PATH_MAX];
        if (find_prompt_ref(root, "$", p, sizeof(p)))
                return fail(err, EINVAL, "bundle.prompt_ref", what, p, "prompt references are rejected");
        if ((r = check_members(root, top_keys, what, "$", err)) < 0)
                return r;
        const json_t *sv = json_object_get(root, "schema_version");
        if (!json_is_integer(sv))
                return fail(err, EINVAL, "bundle.wrong_type", what, "$.schema_version", "must be an integer");
        if (json_integer_value(sv) != 1)
                return fail(err, EINVAL, "bundle.schema_version", what, "$.schema_version", "must be 1");
        const json_t *entries = json_object_get(root, "entries");
        if (!json_is_array(entries))
                return fail(err, EINVAL, "bundle.wrong_type", what, "$.entries", "must be an array");
        size_t n = json_array_size(entries);
        if (n > GLOVE_BUNDLE_MAX_ENTRIES)
                return glove_error_set(err, E2BIG, "bundle.too_many_entries", "%s: $.entries: more than %d entries",
                                       what, GLOVE_BUNDLE_MAX_ENTRIES);
        struct glove_bundle *b = calloc(1, sizeof(*b));
        if (!b || !(b->entries = calloc(n ? n : 1, sizeof(*b->entries)))) {
                free(b);
                return glove_error_set(err, ENOMEM, "bundle.no_memory", "out of memory");
        }
        b->fd = -1;
        b->root = TAKE_PTR(root);
        b->n_entries = n;
        r = get_str(b->root, "source_library_ref", GLOVE_BUNDLE_REF_MAX, what, "$", &b->source_library_ref, NULL, err);
        if (r >= 0)
                r = get_hex(b->root, "source_manifest_digest", what, "$", &b->source_manifest_digest, err);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = decode_entry(b, i, what, err);
        if (r < 0) {
                glove_bundle_free(b);
                return r;
        }
        *out = b;
        return 0;
}

/* ---- the file ---- */

int glove_bundle_file_open(int root_fd, const char *digest, uid_t owner, int *fd, struct stat *st,
                           struct glove_error *err) {
        *fd = -1;
        if (!hex64(digest))
                return glove_error_set(err, EINVAL, "bundle.invalid_digest",
                                       "a bundle digest is 64 lowercase hex characters");
        char name[GLOVE_DIGEST_SHA256_HEX_LEN + 8];
        snprintf(name, sizeof(name), "%s.json", digest);
        _cleanup_close_ int f = -1;
        int r = glove_fd_open_beneath(root_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, &f,
                                      NULL);
        if (r == -ENOENT)
                return glove_error_set(err, ENOENT, "bundle.missing", "bundle %s: no such file in the bundle root", digest);
        if (r == -ELOOP)
                return glove_error_set(err, ELOOP, "bundle.symlink",
                                       "bundle %s: the name is a symbolic link (links are never followed)", digest);
        if (r < 0)
                return glove_error_set(err, -r, "bundle.open", "bundle %s: %s", digest, strerror(-r));
        if (fstat(f, st) < 0)
                return glove_error_set(err, errno, "bundle.open", "bundle %s: fstat: %s", digest, strerror(errno));
        if (!S_ISREG(st->st_mode))
                return glove_error_set(err, EINVAL, "bundle.file_type", "bundle %s: not a regular file", digest);
        if ((st->st_mode & 07777) != 0600)
                return glove_error_set(err, EPERM, "bundle.mode", "bundle %s: mode %04o, must be exactly 0600", digest,
                                       (unsigned)(st->st_mode & 07777));
        if (st->st_uid != owner)
                return glove_error_set(err, EPERM, "bundle.owner", "bundle %s: owned by uid %u, not the service user %u",
                                       digest, (unsigned)st->st_uid, (unsigned)owner);
        if (st->st_nlink != 1)
                return glove_error_set(err, EPERM, "bundle.links", "bundle %s: %ju hard links, must be one", digest,
                                       (uintmax_t)st->st_nlink);
        if ((uint64_t)st->st_size > GLOVE_BUNDLE_MAX_BYTES)
                return glove_error_set(err, EFBIG, "bundle.too_large", "bundle %s: %jd bytes, more than %zu", digest,
                                       (intmax_t)st->st_size, GLOVE_BUNDLE_MAX_BYTES);
        *fd = TAKE_FD(f);
        return 0;
}

static bool same_ts(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               same_ts(a->st_mtim, b->st_mtim) && same_ts(a->st_ctim, b->st_ctim) && a->st_mode == b->st_mode &&
               a->st_uid == b->st_uid && a->st_nlink == b->st_nlink;
}

int glove_bundle_file_verify(int root_fd, const char *digest, int fd, const struct stat *st, char **data,
                             size_t *len, struct glove_error *err) {
        *data = NULL;
        *len = 0;
        if (!hex64(digest))
                return glove_error_set(err, EINVAL, "bundle.invalid_digest",
                                       "a bundle digest is 64 lowercase hex characters");
        if (lseek(fd, 0, SEEK_SET) < 0)
                return glove_error_set(err, errno, "bundle.read", "bundle %s: lseek: %s", digest, strerror(errno));
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        struct glove_error re = { 0 };
        int r = glove_fd_read_bounded(fd, GLOVE_BUNDLE_MAX_BYTES, &buf, &n, &re);
        if (r == -EFBIG)
                return glove_error_set(err, EFBIG, "bundle.too_large", "bundle %s: more than %zu bytes", digest,
                                       GLOVE_BUNDLE_MAX_BYTES);
        if (r < 0)
                return glove_error_set(err, -r, "bundle.read", "bundle %s: %s", digest, re.message);
        struct stat now, named;
        char name[GLOVE_DIGEST_SHA256_HEX_LEN + 8];
        snprintf(name, sizeof(name), "%s.json", digest);
        if (fstat(fd, &now) < 0 || !same_file(st, &now) || (uint64_t)now.st_size != n ||
            fstatat(root_fd, name, &named, AT_SYMLINK_NOFOLLOW) < 0 || named.st_dev != now.st_dev ||
            named.st_ino != now.st_ino)
                return glove_error_set(err, ESTALE, "bundle.changed",
                                       "bundle %s: the file changed or was replaced while it was checked", digest);
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        char hex[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        if ((r = glove_digest_sha256(buf, n, d, err)) < 0)
                return r;
        glove_digest_hex_encode(d, sizeof(d), hex, sizeof(hex));
        if (strcmp(hex, digest) != 0)
                return glove_error_set(err, EINVAL, "bundle.digest_mismatch",
                                       "bundle %s: its content has SHA-256 %s, not its name", digest, hex);
        *data = TAKE_PTR(buf);
        *len = n;
        return 0;
}

int glove_bundle_load(int root_fd, const char *digest, uid_t owner, struct glove_bundle **out,
                      struct glove_error *err) {
        return glove_bundle_load_within(root_fd, digest, owner, GLOVE_BUNDLE_MAX_BYTES, out, err);
}

int glove_bundle_load_within(int root_fd, const char *digest, uid_t owner, uint64_t budget,
                             struct glove_bundle **out, struct glove_error *err) {
        *out = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r = glove_bundle_file_open(root_fd, digest, owner, &fd, &st, err);
        if (r < 0)
                return r;
        /* Refused before a byte is read: a launch's reading is bounded. */
        if ((uint64_t)st.st_size > budget)
                return glove_error_set(err, EFBIG, "bundle.launch_too_large",
                                       "bundle %s: %jd bytes, more than the %ju bytes this launch may still read", digest,
                                       (intmax_t)st.st_size, (uintmax_t)budget);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if ((r = glove_bundle_file_verify(root_fd, digest, fd, &st, &data, &len, err)) < 0)
                return r;
        char what[GLOVE_DIGEST_SHA256_HEX_LEN + 16];
        snprintf(what, sizeof(what), "bundle %s", digest);
        struct glove_bundle *b;
        if ((r = glove_bundle_decode(data, len, what, &b, err)) < 0)
                return r;
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &stx) == 0)
                b->mnt_id = stx.stx_mnt_id;
        memcpy(b->digest, digest, sizeof(b->digest));
        b->dev = st.st_dev;
        b->ino = st.st_ino;
        b->size = len;
        b->fd = TAKE_FD(fd);
        *out = b;
        return 0;
}

/* ---- the skills-projection digest ---- */

static int put_u32(struct glove_digest_sha256 *h, uint32_t v, struct glove_error *err) {
        uint8_t be[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
        return glove_digest_sha256_update(h, be, sizeof(be), err);
}

static int put_str(struct glove_digest_sha256 *h, const char *s, struct glove_error *err) {
        size_t n = strlen(s);
        int r = put_u32(h, (uint32_t)n, err);
        return r < 0 ? r : glove_digest_sha256_update(h, s, n, err);
}

int glove_bundle_skills_digest(const char *skills_dir, const struct glove_bundle_skill_ref *skills, size_t n,
                               char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *h = NULL;
        int r = glove_digest_sha256_init(&h, err);
        r = r < 0 ? r : put_str(h, "glove.skills-projection", err);
        r = r < 0 ? r : put_str(h, skills_dir, err);
        r = r < 0 ? r : put_u32(h, (uint32_t)n, err);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = put_str(h, skills[i].key, err);
                r = r < 0 ? r : put_str(h, skills[i].path, err);
                r = r < 0 ? r : put_str(h, skills[i].content_digest, err);
        }
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        r = r < 0 ? r : glove_digest_sha256_final(h, d, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(d, sizeof(d), out, GLOVE_DIGEST_SHA256_HEX_LEN + 1);
        return 0;
}
