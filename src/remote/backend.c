/* SPDX-License-Identifier: Apache-2.0 */
/* The remote backend file: loading, strict decoding and the lexical checks
 * of its values (see glove/remote/backend.h). */
#include "glove/remote/backend.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "glove/base/shown.h"

/* ---- the file ---- */

static const struct glove_protected_file_codes remote_file_codes = {
        .path_relative = "remote.file_path_relative", .symlink = "remote.file_symlink", .open = "remote.file_open",
        .not_regular = "remote.file_not_regular", .owner = "remote.file_owner", .mode = "remote.file_mode",
        .links = "remote.file_links", .too_large = "remote.file_too_large", .no_memory = "remote.no_memory",
        .read = "remote.file_read", .changed = "remote.file_changed",
};

int glove_remote_backend_load(const char *path, uid_t owner_uid, struct glove_remote_backend *out,
                              struct glove_error *err) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = glove_file_load_protected(path, owner_uid, GLOVE_REMOTE_FILE_MAX, &remote_file_codes, NULL, &buf, &n,
                                          err);
        if (r < 0)
                return r;
        r = glove_remote_backend_decode(buf, n, out, err);
        if (r < 0)
                glove_error_prefix(err, "%s", path);
        return r;
}

/* ---- single values ---- */

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_lower_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* LDH labels of [a-z0-9-] (or [A-Za-z0-9-] when upper is true), 1..63
 * bytes, no '-' at either end, '.'-separated, s[0..n). */
static bool ldh_name(const char *s, size_t n, bool upper) {
        size_t label = 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c == '.') {
                        if (label == 0 || s[i - 1] == '-')
                                return false;
                        label = 0;
                } else if (is_lower_alnum(c) || (upper && c >= 'A' && c <= 'Z') || c == '-') {
                        if ((label == 0 && c == '-') || ++label > 63)
                                return false;
                } else {
                        return false;
                }
        }
        return label > 0 && s[n - 1] != '-';
}

/* True when s is an address literal of family af in inet_ntop's spelling. */
static bool canonical_ip(int af, const char *s) {
        unsigned char a[16];
        char back[INET6_ADDRSTRLEN];
        return inet_pton(af, s, a) == 1 && inet_ntop(af, a, back, sizeof(back)) && strcmp(back, s) == 0;
}

int glove_remote_check_host(const char *host, const char *jp, struct glove_error *err) {
        size_t n = host ? strlen(host) : 0;
        if (n == 0 || n > GLOVE_REMOTE_HOST_MAX)
                return glove_error_set(err, EINVAL, "remote.destination_host", "%s: must be 1 to %d bytes", jp,
                                       GLOVE_REMOTE_HOST_MAX);
        unsigned char a[16];
        if (canonical_ip(AF_INET, host)) {
                (void)inet_pton(AF_INET, host, a);
                /* 0.0.0.0/8 ("this host": a connect reaches the local
                 * machine), 224.0.0.0/4 multicast, 240.0.0.0/4 reserved and
                 * the broadcast address name no remote host. */
                if (a[0] == 0 || a[0] >= 224)
                        return glove_error_set(err, EINVAL, "remote.destination_host",
                                               "%s: %s is an unspecified, multicast, reserved or broadcast "
                                               "address, not a remote host", jp, host);
                return 0;
        }
        if (canonical_ip(AF_INET6, host)) {
                (void)inet_pton(AF_INET6, host, a);
                static const unsigned char unspecified[16] = { 0 };
                if (memcmp(a, unspecified, 16) == 0 || a[0] == 0xff)
                        return glove_error_set(err, EINVAL, "remote.destination_host",
                                               "%s: %s is the unspecified or a multicast address, not a remote "
                                               "host", jp, host);
                return 0;
        }
        if (inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1)
                return glove_error_set(err, EINVAL, "remote.destination_host",
                                       "%s: an address literal must be written as inet_ntop writes it "
                                       "(one spelling per address)", jp);
        if (!ldh_name(host, n, false))
                return glove_error_set(err, EINVAL, "remote.destination_host",
                                       "%s: must be a lowercase DNS name (labels of a-z, 0-9 and '-', not starting "
                                       "or ending with '-', no trailing dot) or a canonical IPv4/IPv6 literal "
                                       "without brackets or zone; nothing is resolved", jp);
        const char *last = strrchr(host, '.');
        last = last ? last + 1 : host;
        if (strspn(last, "0123456789") == strlen(last))
                return glove_error_set(err, EINVAL, "remote.destination_host",
                                       "%s: an all-numeric last label reads as an address, not a name", jp);
        return 0;
}

int glove_remote_check_user(const char *user, const char *jp, struct glove_error *err) {
        size_t n = user ? strlen(user) : 0;
        if (n == 0 || n > GLOVE_REMOTE_USER_MAX || user[0] == '-' ||
            strspn(user, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n)
                return glove_error_set(err, EINVAL, "remote.destination_user",
                                       "%s: must be 1 to %d characters of A-Z a-z 0-9 . _ - (the POSIX portable "
                                       "user name set), not starting with '-'", jp, GLOVE_REMOTE_USER_MAX);
        return 0;
}

static uint32_t be32(const uint8_t *p) {
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int glove_remote_check_host_key(const char *text, const char *jp, uint8_t key[GLOVE_REMOTE_ED25519_KEY_LEN],
                                struct glove_error *err) {
        static const char alg[] = GLOVE_REMOTE_HOST_KEY_ALGORITHM;
        const size_t alg_len = sizeof(alg) - 1;
        if (!text)
                text = "";
        size_t n = strlen(text);
        size_t word = strcspn(text, " ");
        if (word != alg_len || text[word] != ' ' || strncmp(text, alg, alg_len) != 0) {
                /* A first word of key-type characters names another
                 * algorithm (ssh-rsa, ecdsa-sha2-nistp256,
                 * sk-ssh-ed25519@openssh.com, a certificate type). */
                bool type_word = word > 0 && word <= 64 && text[word] == ' ';
                for (size_t i = 0; type_word && i < word; i++)
                        type_word = is_alnum(text[i]) || strchr("-_.@+", text[i]);
                if (type_word) {
                        char shown[GLOVE_SHOWN_SIZE(64)];
                        char w[65];
                        memcpy(w, text, word);
                        w[word] = '\0';
                        return glove_error_set(err, EINVAL, "remote.host_key_type",
                                               "%s: the key type is %s; only ssh-ed25519 host keys are accepted "
                                               "(take the server's /etc/ssh/ssh_host_ed25519_key.pub)",
                                               jp, glove_shown(w, shown, sizeof(shown)));
                }
                return glove_error_set(err, EINVAL, "remote.host_key_invalid",
                                       "%s: must be exactly \"ssh-ed25519 BASE64\" (one space, no comment)", jp);
        }
        const char *b64 = text + alg_len + 1;
        size_t blen = n - alg_len - 1;
        uint8_t blob[GLOVE_BASE64_DECODED_MAX(GLOVE_REMOTE_HOST_KEY_TEXT_LEN)];
        if (blen != GLOVE_REMOTE_HOST_KEY_TEXT_LEN - alg_len - 1)
                return glove_error_set(err, EINVAL, "remote.host_key_invalid",
                                       "%s: the key is %zu characters of base64, an ssh-ed25519 key is 68 (one "
                                       "space after the type, no comment, nothing trailing)", jp, blen);
        ssize_t got = glove_base64_decode_into(b64, blen, blob);
        if (got < 0)
                return glove_error_set(err, EINVAL, "remote.host_key_invalid",
                                       "%s: the key is not strict base64 (RFC 4648, padded)", jp);
        if (got != GLOVE_REMOTE_HOST_KEY_BLOB_LEN || be32(blob) != alg_len || memcmp(blob + 4, alg, alg_len) != 0 ||
            be32(blob + 4 + alg_len) != GLOVE_REMOTE_ED25519_KEY_LEN)
                return glove_error_set(err, EINVAL, "remote.host_key_invalid",
                                       "%s: the key blob is not string \"ssh-ed25519\" and a 32-byte key "
                                       "(RFC 8709 section 4)", jp);
        if (key)
                memcpy(key, blob + 4 + alg_len + 4, GLOVE_REMOTE_ED25519_KEY_LEN);
        return 0;
}

int glove_remote_check_digest(const char *d, const char *jp, struct glove_error *err) {
        if (!d || strlen(d) != GLOVE_REMOTE_DIGEST_LEN || strncmp(d, "sha256:", 7) != 0 || !is_lower_hex(d + 7, 64))
                return glove_error_set(err, EINVAL, "remote.image_digest_invalid",
                                       "%s: must be \"sha256:\" and 64 lowercase hex digits", jp);
        return 0;
}

/* The OCI separator rule: path-component := [a-z0-9]+ (separator
 * [a-z0-9]+)*, separator := [_.] | "__" | [-]+. */
static bool path_component(const char *s, size_t n) {
        size_t i = 0;
        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        while (i < n) {
                if (is_lower_alnum(s[i])) {
                        i++;
                        continue;
                }
                size_t j = i;
                while (j < n && !is_lower_alnum(s[j]))
                        j++;
                size_t k = j - i;
                bool ok = (k == 1 && (s[i] == '.' || s[i] == '_')) || (k == 2 && s[i] == '_' && s[i + 1] == '_') ||
                          strspn(s + i, "-") >= k;
                if (!ok)
                        return false;
                i = j;
        }
        return true;
}

/* host[:port] of a reference's first component, s[0..n). */
static bool registry_host(const char *s, size_t n) {
        const char *port = NULL;
        size_t hn = n;
        if (n > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (!close || close - s < 2 || (size_t)(close - s) - 1 >= INET6_ADDRSTRLEN)
                        return false;
                char lit[INET6_ADDRSTRLEN];
                unsigned char a[16];
                memcpy(lit, s + 1, (size_t)(close - s) - 1);
                lit[close - s - 1] = '\0';
                if (inet_pton(AF_INET6, lit, a) != 1)
                        return false;
                hn = (size_t)(close - s) + 1;
                if (hn < n && s[hn] != ':')
                        return false;
                port = hn < n ? s + hn + 1 : NULL;
        } else {
                const char *colon = memchr(s, ':', n);
                if (colon) {
                        hn = (size_t)(colon - s);
                        port = colon + 1;
                }
                if (hn == 0 || !ldh_name(s, hn, true))
                        return false;
        }
        if (port) {
                size_t pn = (size_t)(s + n - port);
                if (pn == 0 || pn > 5 || port[0] == '0' || strspn(port, "0123456789") < pn)
                        return false;
                unsigned long v = strtoul(port, NULL, 10);
                if (v < 1 || v > 65535)
                        return false;
        }
        return true;
}

/* The tag grammar: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
static bool tag_word(const char *s, size_t n) {
        if (n == 0 || n > 128 || !(is_alnum(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(is_alnum(s[i]) || strchr("_.-", s[i])))
                        return false;
        return true;
}

static int image_invalid(struct glove_error *err, const char *jp, const char *why) {
        return glove_error_set(err, EINVAL, "remote.image_invalid",
                               "%s: %s; expected an untagged NAME@sha256:<64 lowercase hex> (OCI reference "
                               "grammar: optional registry host[:port]/, lowercase path components)", jp, why);
}

static int check_name(const char *s, size_t n, const char *jp, struct glove_error *err) {
        if (n == 0)
                return image_invalid(err, jp, "the name before '@' is empty");
        if (n > GLOVE_REMOTE_IMAGE_NAME_MAX)
                return image_invalid(err, jp, "the name is longer than 255 bytes");
        const char *slash = memrchr(s, '/', n);
        const char *tail = slash ? slash + 1 : s;
        const char *colon = memchr(tail, ':', (size_t)(s + n - tail));
        if (colon) {
                if (!tag_word(colon + 1, (size_t)(s + n - colon - 1)))
                        return image_invalid(err, jp, "the last path component holds a ':' that starts no valid tag");
                char tag[129];
                size_t tl = (size_t)(s + n - colon - 1);
                memcpy(tag, colon + 1, tl); /* the tag grammar: printable ASCII only */
                tag[tl] = '\0';
                return glove_error_set(err, EINVAL, "remote.image_tagged",
                                       "%s: carries the tag \":%s\"; a tag can be moved to another image, so only "
                                       "an untagged NAME@sha256:<digest> is accepted (remove the tag)",
                                       jp, tag);
        }
        const char *p = s, *end = s + n;
        const char *first_end = memchr(s, '/', n);
        if (first_end) {
                size_t fl = (size_t)(first_end - s);
                bool host = memchr(s, '.', fl) || memchr(s, ':', fl) || (fl == 9 && memcmp(s, "localhost", 9) == 0) ||
                            (fl > 0 && s[0] == '[');
                if (host) {
                        if (!registry_host(s, fl))
                                return image_invalid(err, jp, "the registry host[:port] is malformed");
                        p = first_end + 1;
                }
        }
        while (p <= end) {
                const char *e = memchr(p, '/', (size_t)(end - p));
                if (!e)
                        e = end;
                if (!path_component(p, (size_t)(e - p)))
                        return image_invalid(err, jp,
                                             e == p ? "a path component is empty"
                                                    : "a path component is not [a-z0-9]+ joined by '.', '_', '__' or "
                                                      "'-' runs (upper case is not allowed)");
                p = e + 1;
        }
        return 0;
}

int glove_remote_check_identity(const char *id, const char *jp, struct glove_error *err) {
        if (!id)
                return image_invalid(err, jp, "missing");
        size_t n = strlen(id);
        if (strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/:@[]") != n)
                return image_invalid(err, jp, "it holds a character outside the reference grammar (whitespace, "
                                              "control or other punctuation)");
        const char *at = strchr(id, '@');
        if (!at) {
                const char *slash = strrchr(id, '/');
                if (strchr(slash ? slash : id, ':'))
                        return glove_error_set(err, EINVAL, "remote.image_tagged",
                                               "%s: is a tagged reference without a digest; only an untagged "
                                               "NAME@sha256:<digest> is accepted", jp);
                return image_invalid(err, jp, "it is not pinned by a digest (no '@sha256:')");
        }
        if (strchr(at + 1, '@'))
                return image_invalid(err, jp, "it holds a second '@'");
        int r = check_name(id, (size_t)(at - id), jp, err);
        if (r < 0)
                return r;
        const char *d = at + 1;
        if (strncmp(d, "sha256:", 7) != 0)
                return image_invalid(err, jp, "the digest algorithm is not sha256");
        if (strlen(d + 7) != 64)
                return image_invalid(err, jp, "the digest is not exactly 64 hex digits (nothing may follow it)");
        if (!is_lower_hex(d + 7, 64))
                return image_invalid(err, jp, "the digest is not lowercase hex (upper case is refused)");
        return 0;
}

/* ---- the document ---- */

/* A getter's json.* code as a remote.* one; value_code for the value's
 * own faults (too long, out of range), NULL: remote.too_long. (A NUL never
 * gets here: the strict decoder refuses "\u0000".) */
static int from_json(const struct glove_error *je, const char *value_code, struct glove_error *err) {
        const char *c = je->code ? je->code : "";
        const char *code = "remote.invalid_json";
        if (strcmp(c, "json.missing_field") == 0)
                code = "remote.missing_field";
        else if (strcmp(c, "json.wrong_type") == 0 || strcmp(c, "json.not_object") == 0)
                code = "remote.wrong_type";
        else if (strcmp(c, "json.unknown_field") == 0)
                code = "remote.unknown_field";
        else if (strcmp(c, "json.duplicate_key") == 0)
                code = "remote.duplicate_key";
        else if (strcmp(c, "json.no_memory") == 0 || je->errnum == ENOMEM)
                code = "remote.no_memory";
        else if (strcmp(c, "json.too_long") == 0 || strcmp(c, "json.out_of_range") == 0 ||
                 strcmp(c, "json.not_integer") == 0)
                code = value_code ? value_code : "remote.too_long";
        return glove_error_set(err, je->errnum ? je->errnum : EINVAL, code, "%s", je->message);
}

static int get_str(const json_t *o, const char *key, const char *path, size_t max, const char *value_code,
                   const char **out, struct glove_error *err) {
        struct glove_error je = { 0 };
        if (glove_json_get_string(o, key, path, max, out, &je) < 0)
                return from_json(&je, value_code, err);
        return 0;
}

static int keys(const json_t *o, const char *const allowed[], const char *path, struct glove_error *err) {
        struct glove_error je = { 0 };
        if (glove_json_check_keys(o, allowed, path, &je) < 0)
                return from_json(&je, NULL, err);
        return 0;
}

static int get_obj(const json_t *o, const char *key, const char *path, json_t **out, struct glove_error *err) {
        struct glove_error je = { 0 };
        if (glove_json_get_object(o, key, path, out, &je) < 0)
                return from_json(&je, NULL, err);
        return 0;
}

static int decode_destination(const json_t *rb, struct glove_remote_backend *b, struct glove_error *err) {
        static const char *const dest_keys[] = { "host", "port", "user", NULL };
        static const char path[] = "$.remote_backend.ssh_destination";
        json_t *d;
        const char *host, *user;
        int64_t port;
        struct glove_error je = { 0 };
        int r = get_obj(rb, "ssh_destination", "$.remote_backend", &d, err);
        if (r == 0)
                r = keys(d, dest_keys, path, err);
        if (r == 0)
                r = get_str(d, "host", path, GLOVE_REMOTE_HOST_MAX, "remote.destination_host", &host, err);
        if (r == 0)
                r = glove_remote_check_host(host, "$.remote_backend.ssh_destination.host", err);
        /* A port of another type is a bad port too (not a missing one). */
        if (r == 0 && glove_json_get_int(d, "port", path, 1, 65535, &port, &je) < 0)
                r = glove_error_set(err, EINVAL,
                                    strcmp(je.code, "json.missing_field") == 0 ? "remote.missing_field"
                                                                               : "remote.destination_port",
                                    "%s (an integer 1..65535)", je.message);
        if (r == 0)
                r = get_str(d, "user", path, GLOVE_REMOTE_USER_MAX, "remote.destination_user", &user, err);
        if (r == 0)
                r = glove_remote_check_user(user, "$.remote_backend.ssh_destination.user", err);
        if (r < 0)
                return r;
        memcpy(b->host, host, strlen(host) + 1);
        b->port = (uint16_t)port;
        memcpy(b->user, user, strlen(user) + 1);
        return 0;
}

static int decode_backend(const json_t *rb, struct glove_remote_backend *b, struct glove_error *err) {
        static const char *const rb_keys[] = { "container_identity", "container_image_digest", "host_key",
                                               "ssh_destination", NULL };
        static const char path[] = "$.remote_backend";
        const char *key, *identity, *digest;
        int r = keys(rb, rb_keys, path, err);
        if (r == 0)
                r = decode_destination(rb, b, err);
        if (r == 0)
                r = get_str(rb, "host_key", path, GLOVE_REMOTE_HOST_KEY_MAX, "remote.host_key_invalid", &key, err);
        if (r == 0)
                r = glove_remote_check_host_key(key, "$.remote_backend.host_key", b->host_key, err);
        if (r == 0)
                r = get_str(rb, "container_image_digest", path, GLOVE_REMOTE_DIGEST_LEN, "remote.image_digest_invalid",
                            &digest, err);
        if (r == 0)
                r = glove_remote_check_digest(digest, "$.remote_backend.container_image_digest", err);
        if (r == 0)
                r = get_str(rb, "container_identity", path, GLOVE_REMOTE_IDENTITY_MAX, "remote.image_invalid",
                            &identity, err);
        if (r == 0)
                r = glove_remote_check_identity(identity, "$.remote_backend.container_identity", err);
        if (r < 0)
                return r;
        const char *suffix = strchr(identity, '@') + 1;
        if (strcmp(suffix, digest) != 0)
                return glove_error_set(err, EINVAL, "remote.image_digest_mismatch",
                                       "$.remote_backend.container_identity: its digest %.*s... differs from "
                                       "container_image_digest %.*s...; both must name the same image",
                                       19, suffix, 19, digest);
        memcpy(b->host_key_text, key, strlen(key) + 1);
        memcpy(b->container_identity, identity, strlen(identity) + 1);
        memcpy(b->container_image_digest, digest, strlen(digest) + 1);
        return 0;
}

int glove_remote_backend_decode(const void *data, size_t len, struct glove_remote_backend *out,
                                struct glove_error *err) {
        static const char *const top_keys[] = { "remote_backend", "schema", NULL };
        if (!out)
                return glove_error_set(err, EINVAL, "remote.invalid_json", "no output pointer");
        _cleanup_json_ json_t *root = NULL;
        struct glove_error je = { 0 };
        if (glove_json_decode_strict(data, len, GLOVE_REMOTE_FILE_MAX, GLOVE_JSON_OBJECT_ONLY, &root, &je) < 0) {
                const char *code = "remote.invalid_json";
                if (je.code && strcmp(je.code, "json.duplicate_key") == 0)
                        code = "remote.duplicate_key";
                else if (je.errnum == ENOMEM)
                        code = "remote.no_memory";
                /* The decoder fails before a tree exists: the message
                 * locates the defect by line and column under "$". */
                return glove_error_set(err, je.errnum, code, "%s%s", je.message[0] == '$' ? "" : "$: ",
                                       je.message);
        }
        /* Before unknown members: the Apple Container section is known, and
         * refused beside this one. */
        if (json_object_get(root, "apple_container"))
                return glove_error_set(err, EINVAL, "remote.backend_conflict",
                                       "$.apple_container: Apple Container configuration and remote_backend are "
                                       "mutually exclusive; configure one backend");
        const char *schema;
        json_t *rb;
        int r = keys(root, top_keys, "$", err);
        if (r == 0)
                r = get_str(root, "schema", "$", 64, NULL, &schema, err);
        if (r == 0 && strcmp(schema, GLOVE_REMOTE_BACKEND_SCHEMA) != 0)
                r = glove_error_set(err, EINVAL, "remote.unsupported_schema",
                                    "$.schema: expected \"" GLOVE_REMOTE_BACKEND_SCHEMA "\"");
        if (r == 0)
                r = get_obj(root, "remote_backend", "$", &rb, err);
        struct glove_remote_backend b = { 0 };
        if (r == 0)
                r = decode_backend(rb, &b, err);
        if (r == 0)
                *out = b;
        return r;
}
