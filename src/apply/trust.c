/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root-controlled Ed25519 trust policy and the apply key files
 * (glove/apply/trust.h; docs/retained-changes.md, "Trust policy, keys and
 * authorization"). Ed25519 is RFC 8032, by libcrypto.
 */
#include "glove/apply/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "trust_internal.h"

#define TRUST_SCHEMA "glove.apply-trust.v1"
#define KEY_SCHEMA "glove.apply-key.v1"
#define ED25519_KEY_LEN 32
/* Padded base64 of a 32-byte key, without the NUL. */
#define KEY_B64_LEN GLOVE_BASE64_LEN(ED25519_KEY_LEN)
/* The largest key file accepted. */
#define KEY_FILE_MAX 4096

struct trust_key {
        char id[GLOVE_APPLY_KEY_ID_MAX + 1];
        uint8_t pub[ED25519_KEY_LEN];
};

struct glove_apply_trust {
        size_t n;
        struct trust_key keys[];
};

struct glove_apply_key {
        char id[GLOVE_APPLY_KEY_ID_MAX + 1];
        EVP_PKEY *pkey;
};

bool glove_apply_identifier_valid(const char *s, size_t max_len, bool refuse_dots) {
        if (!s)
                return false;
        size_t n = strnlen(s, max_len + 1);
        if (n == 0 || n > max_len)
                return false;
        if (refuse_dots && (strcmp(s, ".") == 0 || strcmp(s, "..") == 0))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}

/* Records a libcrypto failure (the first queued reason) as apply.crypto and
 * empties libcrypto's error queue. */
static int crypto_error(struct glove_error *err, const char *what) {
        char reason[256] = "no reason given";
        unsigned long e = ERR_get_error();
        if (e != 0)
                ERR_error_string_n(e, reason, sizeof(reason));
        ERR_clear_error();
        return glove_error_set(err, EIO, "apply.crypto", "Ed25519: %s failed: %s", what, reason);
}

static int no_memory(struct glove_error *err) {
        return glove_error_set(err, ENOMEM, "apply.no_memory", "out of memory");
}

/* ---- the trust policy: the walk from / ---- */

/* The path must be absolute and normalized: no empty, "." or ".."
 * component, no trailing slash, each component at most NAME_MAX. */
static int trust_path_check(const char *path, struct glove_error *err) {
        if (!path || path[0] != '/')
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: the trust policy path must be absolute",
                                       path && *path ? path : "(empty)");
        size_t len = strnlen(path, PATH_MAX);
        if (len >= PATH_MAX)
                return glove_error_set(err, ENAMETOOLONG, "apply.trust_invalid",
                                       "the trust policy path is longer than %d bytes", PATH_MAX - 1);
        const char *p = path + 1;
        for (;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                               "%s: the trust policy path must be normalized (no empty, \".\" or "
                                               "\"..\" component, no trailing slash); name the file itself",
                                               path);
                if (!slash)
                        return 0;
                p = slash + 1;
        }
}

/*
 * Checks the directory open at fd, named by path[0..name_len) (name_len 0
 * means "/"): owned by root, not writable by group or others; the sticky bit
 * excuses the write bits only when own is false (an ancestor, not the
 * directory that holds the file).
 */
static int trust_dir_check(int fd, const char *path, size_t name_len, bool own, struct glove_error *err) {
        int shown = name_len == 0 ? 1 : (int)name_len;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "apply.trust_missing", "%.*s: fstat: %s", shown, path,
                                       strerror(errno));
        if (st.st_uid != 0)
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%.*s: directory on the trust policy's path is owned by uid %u, not root: "
                                       "chown root and chmod go-w it, or keep the trust policy under root-owned "
                                       "directories",
                                       shown, path, (unsigned)st.st_uid);
        mode_t w = st.st_mode & (S_IWGRP | S_IWOTH);
        if (w == 0)
                return 0;
        if (own)
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%.*s: the trust policy's own directory is writable by group or others "
                                       "(mode %04o; a sticky bit does not excuse it here): chmod go-w it, or move "
                                       "the trust policy into a root-owned directory that only root can write",
                                       shown, path, (unsigned)(st.st_mode & 07777));
        if (!(st.st_mode & S_ISVTX))
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%.*s: directory on the trust policy's path is writable by group or others "
                                       "without the sticky bit (mode %04o): chmod go-w it",
                                       shown, path, (unsigned)(st.st_mode & 07777));
        return 0;
}

/* Opens the next directory component comp of path (which ends at
 * path[end]) beneath dfd, without following a link. */
static int trust_open_dir(int dfd, const char *comp, const char *path, size_t end, int *out,
                          struct glove_error *err) {
        int fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                *out = fd;
                return 0;
        }
        int e = errno;
        struct stat st;
        if ((e == ENOTDIR || e == ELOOP) && fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%.*s: is a symbolic link on the trust policy's path; name the real "
                                       "directories (links are never followed)",
                                       (int)end, path);
        if (e == ENOENT)
                return glove_error_set(err, ENOENT, "apply.trust_missing",
                                       "%.*s: no such directory; create the trust policy %s (root-owned, "
                                       "chmod go-w)",
                                       (int)end, path, path);
        return glove_error_set(err, e, "apply.trust_missing", "%.*s: cannot open: %s", (int)end, path,
                               strerror(e));
}

/* Checks the trust policy file open at fd. */
static int trust_file_check(int fd, const char *path, struct glove_error *err) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "apply.trust_missing", "%s: fstat: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%s: the trust policy is not a regular file; replace it with one", path);
        if (st.st_uid != 0)
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%s: the trust policy is owned by uid %u, not root: chown root and chmod "
                                       "go-w it",
                                       path, (unsigned)st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%s: the trust policy is writable by group or others (mode %04o): chmod "
                                       "go-w it",
                                       path, (unsigned)(st.st_mode & 07777));
        if (st.st_nlink != 1)
                return glove_error_set(err, EPERM, "apply.trust_insecure",
                                       "%s: the trust policy has %ju hard links (another name could be in a "
                                       "directory others control): give it a single link (copy it and rename "
                                       "the copy over it)",
                                       path, (uintmax_t)st.st_nlink);
        if (st.st_size > GLOVE_APPLY_TRUST_MAX_BYTES)
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: the trust policy is %jd bytes, more than the %d allowed", path,
                                       (intmax_t)st.st_size, GLOVE_APPLY_TRUST_MAX_BYTES);
        return 0;
}

/*
 * Opens the trust policy one component at a time from /, checking every
 * directory and then the file on the descriptors that are used; *out gets
 * the file's descriptor (O_RDONLY).
 */
static int trust_open(const char *path, int *out, struct glove_error *err) {
        int r = trust_path_check(path, err);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return glove_error_set(err, errno, "apply.trust_missing", "/: cannot open: %s", strerror(errno));
        const char *p = path + 1;
        char comp[NAME_MAX + 1];
        for (;;) {
                const char *slash = strchr(p, '/');
                r = trust_dir_check(dfd, path, (size_t)(p - 1 - path), slash == NULL, err);
                if (r < 0)
                        return r;
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                memcpy(comp, p, n);
                comp[n] = '\0';
                if (!slash)
                        break;
                int next = -1;
                r = trust_open_dir(dfd, comp, path, (size_t)(slash - path), &next, err);
                if (r < 0)
                        return r;
                close(dfd);
                dfd = next;
                p = slash + 1;
        }
        _cleanup_close_ int fd = openat(dfd, comp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                if (e == ELOOP)
                        return glove_error_set(err, EPERM, "apply.trust_insecure",
                                               "%s: the trust policy is a symbolic link; name the file itself "
                                               "(links are never followed)",
                                               path);
                if (e == ENOENT)
                        return glove_error_set(err, ENOENT, "apply.trust_missing",
                                               "%s: no trust policy; create it (root-owned, chmod go-w) listing "
                                               "the public keys that may sign apply authorizations",
                                               path);
                return glove_error_set(err, e, "apply.trust_missing", "%s: cannot open: %s", path, strerror(e));
        }
        r = trust_file_check(fd, path, err);
        if (r < 0)
                return r;
        *out = TAKE_FD(fd);
        return 0;
}

/* ---- the trust policy: its JSON ---- */

static int trust_invalid(struct glove_error *err, const char *path, const struct glove_error *je) {
        return glove_error_set(err, EINVAL, "apply.trust_invalid", "%s: %s (%s)", path, je->message, je->code);
}

/* Decodes one element of "keys" into *k. */
static int trust_parse_key(const json_t *v, size_t i, const char *path, struct trust_key *k,
                           struct glove_error *err) {
        static const char *const allowed[] = { "key_id", "public_key", NULL };
        char at[GLOVE_JSON_PATH_MAX];
        (void)glove_json_path_index(at, sizeof(at), "$.keys", i);
        struct glove_error je = { 0 };
        const char *id = NULL, *pub = NULL;
        if (!json_is_object(v))
                return glove_error_set(err, EINVAL, "apply.trust_invalid", "%s: %s: must be an object", path, at);
        if (glove_json_check_keys(v, allowed, at, &je) < 0 ||
            glove_json_get_string(v, "key_id", at, GLOVE_APPLY_KEY_ID_MAX + 1, &id, &je) < 0 ||
            glove_json_get_string(v, "public_key", at, KEY_B64_LEN + 1, &pub, &je) < 0)
                return trust_invalid(err, path, &je);
        if (!glove_apply_identifier_valid(id, GLOVE_APPLY_KEY_ID_MAX, false))
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: %s.key_id: must be 1 to %d characters of A-Z a-z 0-9 . _ -", path, at,
                                       GLOVE_APPLY_KEY_ID_MAX);
        uint8_t raw[GLOVE_BASE64_DECODED_MAX(KEY_B64_LEN + 4)];
        size_t plen = strlen(pub);
        ssize_t n = plen <= KEY_B64_LEN ? glove_base64_decode_into(pub, plen, raw) : -EINVAL;
        if (n != ED25519_KEY_LEN)
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: %s.public_key: must be the padded standard base64 (RFC 4648) of a "
                                       "32-byte raw Ed25519 public key (44 characters); %s",
                                       path, at, n < 0 ? "this is not valid base64" : "this decodes to another length");
        memcpy(k->id, id, strlen(id) + 1);
        memcpy(k->pub, raw, ED25519_KEY_LEN);
        return 0;
}

static int trust_parse(const char *text, size_t len, const char *path, struct glove_apply_trust **out,
                       struct glove_error *err) {
        static const char *const allowed[] = { "keys", "schema", NULL };
        struct glove_error je = { 0 };
        _cleanup_json_ json_t *root = NULL;
        const char *schema = NULL;
        json_t *keys = NULL;
        if (glove_json_decode_strict(text, len, GLOVE_APPLY_TRUST_MAX_BYTES, GLOVE_JSON_OBJECT_ONLY, &root, &je) < 0 ||
            glove_json_check_keys(root, allowed, NULL, &je) < 0 ||
            glove_json_get_string(root, "schema", NULL, 64, &schema, &je) < 0 ||
            glove_json_get_array(root, "keys", NULL, GLOVE_APPLY_KEYS_MAX, &keys, &je) < 0)
                return je.errnum == ENOMEM ? no_memory(err) : trust_invalid(err, path, &je);
        if (strcmp(schema, TRUST_SCHEMA) != 0)
                return glove_error_set(err, EINVAL, "apply.trust_invalid", "%s: $.schema: must be \"%s\"", path,
                                       TRUST_SCHEMA);
        size_t n = json_array_size(keys);
        if (n == 0)
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: $.keys: lists no key; list 1 to %d public keys", path,
                                       GLOVE_APPLY_KEYS_MAX);
        _cleanup_free_ struct glove_apply_trust *t = calloc(1, sizeof(*t) + n * sizeof(t->keys[0]));
        if (!t)
                return no_memory(err);
        for (size_t i = 0; i < n; i++) {
                int r = trust_parse_key(json_array_get(keys, i), i, path, &t->keys[i], err);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++) {
                        if (strcmp(t->keys[j].id, t->keys[i].id) == 0)
                                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                                       "%s: $.keys[%zu].key_id: \"%s\" is also $.keys[%zu]'s; key "
                                                       "ids must be unique",
                                                       path, i, t->keys[i].id, j);
                        if (memcmp(t->keys[j].pub, t->keys[i].pub, ED25519_KEY_LEN) == 0)
                                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                                       "%s: $.keys[%zu].public_key: the same key as $.keys[%zu]; "
                                                       "list each public key once",
                                                       path, i, j);
                }
        }
        t->n = n;
        *out = TAKE_PTR(t);
        return 0;
}

int glove_apply_trust_load(const char *path, struct glove_apply_trust **out, struct glove_error *err) {
        *out = NULL;
        _cleanup_close_ int fd = -1;
        int r = trust_open(path, &fd, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct glove_error re = { 0 };
        r = glove_fd_read_bounded(fd, GLOVE_APPLY_TRUST_MAX_BYTES, &text, &len, &re);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r == -EFBIG)
                return glove_error_set(err, EINVAL, "apply.trust_invalid",
                                       "%s: the trust policy is more than %d bytes", path, GLOVE_APPLY_TRUST_MAX_BYTES);
        if (r < 0)
                return glove_error_set(err, -r, "apply.trust_missing", "%s: read: %s", path, strerror(-r));
        return trust_parse(text, len, path, out, err);
}

void glove_apply_trust_free(struct glove_apply_trust *t) {
        free(t);
}

size_t glove_apply_trust_count(const struct glove_apply_trust *t) {
        return t ? t->n : 0;
}

const char *glove_apply_trust_key_id(const struct glove_apply_trust *t, size_t i) {
        return t && i < t->n ? t->keys[i].id : NULL;
}

int glove_apply_trust_verify(const struct glove_apply_trust *t, const char *key_id, const void *msg, size_t len,
                             const uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], struct glove_error *err) {
        const struct trust_key *k = NULL;
        for (size_t i = 0; t && key_id && i < t->n && !k; i++)
                if (strcmp(t->keys[i].id, key_id) == 0)
                        k = &t->keys[i];
        if (!k) {
                bool shown = glove_apply_identifier_valid(key_id, GLOVE_APPLY_KEY_ID_MAX, false);
                return glove_error_set(err, EPERM, "apply.untrusted_key",
                                       "the trust policy lists no key \"%s\": sign with a listed key, or have root "
                                       "add its public key to the trust policy",
                                       shown ? key_id : "(invalid id)");
        }
        EVP_PKEY *pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, k->pub, ED25519_KEY_LEN);
        if (!pkey)
                return crypto_error(err, "loading the public key");
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        int r = 0;
        if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pkey) != 1) {
                r = crypto_error(err, "starting the verification");
        } else if (EVP_DigestVerify(ctx, sig, GLOVE_APPLY_SIGNATURE_LEN, msg ? msg : (const void *)"", len) != 1) {
                ERR_clear_error();
                r = glove_error_set(err, EPERM, "apply.bad_signature",
                                    "the signature does not verify with key \"%s\" of the trust policy: the "
                                    "authorization was changed, or signed by another key",
                                    k->id);
        }
        EVP_MD_CTX_free(ctx);
        EVP_PKEY_free(pkey);
        return r;
}

/* ---- key files ---- */

/* The directory part of path (".", "/" or a prefix) and its last component. */
static int key_split(const char *path, char **dir, const char **base, struct glove_error *err) {
        const char *slash = strrchr(path, '/');
        *base = slash ? slash + 1 : path;
        if (**base == '\0' || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
                return glove_error_set(err, EINVAL, "apply.key_write", "%s: name a file, not a directory", path);
        *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        return *dir ? 0 : no_memory(err);
}

/* Writes text to a new file base in dfd (O_EXCL, 0600), fsync'd; on
 * failure nothing is left behind. */
static int key_write_new(int dfd, const char *base, const char *path, const char *text, size_t len,
                         struct glove_error *err) {
        _cleanup_close_ int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                int e = errno;
                if (e == EEXIST)
                        return glove_error_set(err, EEXIST, "apply.key_exists",
                                               "%s: exists already; a key file is never overwritten: choose "
                                               "another path or remove the old key first",
                                               path);
                return glove_error_set(err, e, "apply.key_write", "%s: cannot create: %s", path, strerror(e));
        }
        int r = fchmod(fd, 0600) < 0 ? -errno : 0;
        if (r == 0)
                r = glove_fd_write_all(fd, text, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlinkat(dfd, base, 0);
                return glove_error_set(err, -r, "apply.key_write", "%s: cannot write: %s", path, strerror(-r));
        }
        return 0;
}

int glove_apply_key_generate(const char *path, const char *key_id, struct glove_error *err) {
        if (!glove_apply_identifier_valid(key_id, GLOVE_APPLY_KEY_ID_MAX, false))
                return glove_error_set(err, EINVAL, "apply.key_invalid",
                                       "the key id must be 1 to %d characters of A-Z a-z 0-9 . _ -",
                                       GLOVE_APPLY_KEY_ID_MAX);
        if (!path || !*path)
                return glove_error_set(err, EINVAL, "apply.key_write", "no key file path given");
        _cleanup_free_ char *dir = NULL;
        const char *base = NULL;
        int r = key_split(path, &dir, &base, err);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return glove_error_set(err, errno, "apply.key_write", "%s: cannot open the directory: %s", dir,
                                       strerror(errno));
        uint8_t seed[ED25519_KEY_LEN];
        struct glove_error re = { 0 };
        if (glove_digest_random(seed, sizeof(seed), &re) < 0)
                return glove_error_set(err, EIO, "apply.crypto", "random bytes for the key: %s", re.message);
        char b64[KEY_B64_LEN + 1];
        (void)glove_base64_encode_cstr(seed, sizeof(seed), b64, sizeof(b64));
        explicit_bzero(seed, sizeof(seed));
        char text[256];
        int n = snprintf(text, sizeof(text), "{\"key_id\":\"%s\",\"private_key\":\"%s\",\"schema\":\"%s\"}\n",
                         key_id, b64, KEY_SCHEMA);
        explicit_bzero(b64, sizeof(b64));
        r = key_write_new(dfd, base, path, text, (size_t)n, err);
        explicit_bzero(text, sizeof(text));
        if (r < 0)
                return r;
        if (fsync(dfd) < 0)
                return glove_error_set(err, errno, "apply.key_write", "%s: fsync of its directory: %s", path,
                                       strerror(errno));
        return 0;
}

/* Opens the key file and checks its shape and ownership. */
static int key_open(const char *path, int *out, struct glove_error *err) {
        if (!path || !*path)
                return glove_error_set(err, EINVAL, "apply.key_missing", "no key file path given");
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                if (e == ELOOP)
                        return glove_error_set(err, EPERM, "apply.key_insecure",
                                               "%s: is a symbolic link; name the key file itself", path);
                if (e == ENOENT)
                        return glove_error_set(err, ENOENT, "apply.key_missing",
                                               "%s: no such key file; make one with a new key", path);
                return glove_error_set(err, e, "apply.key_missing", "%s: cannot open: %s", path, strerror(e));
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "apply.key_missing", "%s: fstat: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EPERM, "apply.key_insecure", "%s: is not a regular file", path);
        if (st.st_uid != geteuid())
                return glove_error_set(err, EPERM, "apply.key_insecure",
                                       "%s: owned by uid %u, not by you (uid %u): a key must be your own file",
                                       path, (unsigned)st.st_uid, (unsigned)geteuid());
        if (st.st_mode & 077)
                return glove_error_set(err, EPERM, "apply.key_insecure",
                                       "%s: group or others have permissions on it (mode %04o): chmod 0600 it, "
                                       "and make a new key if others may have read it",
                                       path, (unsigned)(st.st_mode & 07777));
        if (st.st_nlink != 1)
                return glove_error_set(err, EPERM, "apply.key_insecure",
                                       "%s: has %ju hard links; a key file must have one", path,
                                       (uintmax_t)st.st_nlink);
        if (st.st_size > KEY_FILE_MAX)
                return glove_error_set(err, EINVAL, "apply.key_invalid", "%s: more than %d bytes; not a key file",
                                       path, KEY_FILE_MAX);
        *out = TAKE_FD(fd);
        return 0;
}

/* Decodes the key file's JSON into k->id and a seed. */
static int key_parse(const char *text, size_t len, const char *path, struct glove_apply_key *k,
                     uint8_t seed[ED25519_KEY_LEN], struct glove_error *err) {
        static const char *const allowed[] = { "key_id", "private_key", "schema", NULL };
        struct glove_error je = { 0 };
        _cleanup_json_ json_t *root = NULL;
        const char *id = NULL, *priv = NULL, *schema = NULL;
        /* The decoder's messages may quote the text: keep a key's bytes out
         * of them. */
        if (glove_json_decode_strict(text, len, KEY_FILE_MAX, GLOVE_JSON_OBJECT_ONLY, &root, &je) < 0)
                return je.errnum == ENOMEM ? no_memory(err)
                                           : glove_error_set(err, EINVAL, "apply.key_invalid",
                                                             "%s: not a JSON object (%s); a key file is "
                                                             "{\"key_id\",\"private_key\",\"schema\"}",
                                                             path, je.code);
        if (glove_json_check_keys(root, allowed, NULL, &je) < 0 ||
            glove_json_get_string(root, "schema", NULL, 64, &schema, &je) < 0 ||
            glove_json_get_string(root, "key_id", NULL, GLOVE_APPLY_KEY_ID_MAX + 1, &id, &je) < 0 ||
            glove_json_get_string(root, "private_key", NULL, KEY_B64_LEN + 1, &priv, &je) < 0)
                return je.errnum == ENOMEM ? no_memory(err)
                                           : glove_error_set(err, EINVAL, "apply.key_invalid", "%s: %s (%s)", path,
                                                             je.message, je.code);
        /* Decoded first, so that the text is wiped whatever is wrong next
         * (jansson frees without zeroing). */
        uint8_t raw[GLOVE_BASE64_DECODED_MAX(KEY_B64_LEN + 4)];
        size_t plen = strlen(priv);
        ssize_t n = plen <= KEY_B64_LEN ? glove_base64_decode_into(priv, plen, raw) : -EINVAL;
        explicit_bzero((char *)priv, plen);
        if (n == ED25519_KEY_LEN)
                memcpy(seed, raw, ED25519_KEY_LEN);
        explicit_bzero(raw, sizeof(raw));
        if (strcmp(schema, KEY_SCHEMA) != 0)
                return glove_error_set(err, EINVAL, "apply.key_invalid", "%s: $.schema: must be \"%s\"", path,
                                       KEY_SCHEMA);
        if (!glove_apply_identifier_valid(id, GLOVE_APPLY_KEY_ID_MAX, false))
                return glove_error_set(err, EINVAL, "apply.key_invalid",
                                       "%s: $.key_id: must be 1 to %d characters of A-Z a-z 0-9 . _ -", path,
                                       GLOVE_APPLY_KEY_ID_MAX);
        if (n != ED25519_KEY_LEN)
                return glove_error_set(err, EINVAL, "apply.key_invalid",
                                       "%s: $.private_key: must be the padded standard base64 of a 32-byte "
                                       "Ed25519 private key",
                                       path);
        memcpy(k->id, id, strlen(id) + 1);
        return 0;
}

int glove_apply_key_load(const char *path, struct glove_apply_key **out, struct glove_error *err) {
        *out = NULL;
        _cleanup_close_ int fd = -1;
        int r = key_open(path, &fd, err);
        if (r < 0)
                return r;
        char *text = NULL;
        size_t len = 0;
        struct glove_error re = { 0 };
        r = glove_fd_read_bounded(fd, KEY_FILE_MAX, &text, &len, &re);
        if (r == -ENOMEM)
                return no_memory(err);
        if (r == -EFBIG)
                return glove_error_set(err, EINVAL, "apply.key_invalid", "%s: more than %d bytes; not a key file",
                                       path, KEY_FILE_MAX);
        if (r < 0)
                return glove_error_set(err, -r, "apply.key_missing", "%s: read: %s", path, strerror(-r));
        struct glove_apply_key *k = calloc(1, sizeof(*k));
        uint8_t seed[ED25519_KEY_LEN];
        r = k ? key_parse(text, len, path, k, seed, err) : no_memory(err);
        explicit_bzero(text, len);
        free(text);
        if (r == 0) {
                k->pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, ED25519_KEY_LEN);
                if (!k->pkey)
                        r = crypto_error(err, "loading the private key");
        }
        explicit_bzero(seed, sizeof(seed));
        if (r < 0) {
                glove_apply_key_free(k);
                return r;
        }
        *out = k;
        return 0;
}

void glove_apply_key_free(struct glove_apply_key *k) {
        if (!k)
                return;
        EVP_PKEY_free(k->pkey);
        explicit_bzero(k, sizeof(*k));
        free(k);
}

const char *glove_apply_key_id(const struct glove_apply_key *k) {
        return k ? k->id : NULL;
}

int glove_apply_key_public(const struct glove_apply_key *k, char out[45], struct glove_error *err) {
        uint8_t pub[ED25519_KEY_LEN];
        size_t n = sizeof(pub);
        if (!k || !k->pkey || EVP_PKEY_get_raw_public_key(k->pkey, pub, &n) != 1 || n != ED25519_KEY_LEN)
                return crypto_error(err, "reading the public key");
        (void)glove_base64_encode_cstr(pub, sizeof(pub), out, KEY_B64_LEN + 1);
        return 0;
}

int glove_apply_key_sign(const struct glove_apply_key *k, const void *msg, size_t len,
                         uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], struct glove_error *err) {
        if (!k || !k->pkey)
                return glove_error_set(err, EINVAL, "apply.crypto", "Ed25519: no key to sign with");
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        size_t n = GLOVE_APPLY_SIGNATURE_LEN;
        int r = 0;
        if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) != 1 ||
            EVP_DigestSign(ctx, sig, &n, msg ? msg : (const void *)"", len) != 1 || n != GLOVE_APPLY_SIGNATURE_LEN)
                r = crypto_error(err, "signing");
        EVP_MD_CTX_free(ctx);
        return r;
}
