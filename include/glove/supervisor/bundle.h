/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Library bundles: the strict file checks and decoder (issue 11, "Library
 * bundles"; spec session-policy.md, "Protected files", "Filesystem and
 * launch binding" and "Remaining boundary"; spec architecture.md, "Library
 * projection"; docs/session-policy.md, "Library bundles and skills").
 *
 * A bundle is the regular file ROOT/<sha256>.json beneath gloved's
 * --library-bundle-root, its name the lowercase hex SHA-256 of its bytes.
 * Its content is canonical JSON (glove/base/json.h), exactly
 *
 *   {"entries":[{"content":STR,"content_digest":HEX64,"key":KEY,"kind":KIND},...],
 *    "schema_version":1,"source_library_ref":STR,"source_manifest_digest":HEX64}
 *
 *   entries         0 .. GLOVE_BUNDLE_MAX_ENTRIES objects, keys unique (any order)
 *   key             1 .. GLOVE_BUNDLE_KEY_MAX bytes of [A-Za-z0-9._:-], the first
 *                   an ASCII letter or digit (safe as one path component: never
 *                   ".", "..", hidden, or holding '/')
 *   kind            skill | behavior | prompt | template | workflow
 *   content         a string (no NUL), content_digest its SHA-256 in lowercase hex
 *   source_library_ref  1 .. GLOVE_BUNDLE_REF_MAX bytes
 *   source_manifest_digest  64 lowercase hex
 * A member named "prompt_ref" anywhere is refused before anything else about
 * the shape (prompt references stay rejected).
 *
 * Stable error codes (struct glove_error.code; messages name the digest and
 * a JSON path, never content):
 *   bundle.invalid_digest    the requested digest is not 64 lowercase hex (-EINVAL)
 *   bundle.missing           no such file beneath the root (-ENOENT)
 *   bundle.symlink           the name is a symbolic link (-ELOOP)
 *   bundle.open              any other failure opening it (-errno)
 *   bundle.file_type         not a regular file (-EINVAL)
 *   bundle.mode              permission bits other than exactly 0600 (-EPERM)
 *   bundle.owner             not owned by the service user (-EPERM)
 *   bundle.links             more than one hard link (-EPERM)
 *   bundle.too_large         more than GLOVE_BUNDLE_MAX_BYTES (-EFBIG)
 *   bundle.read              reading it failed (-errno)
 *   bundle.changed           its identity or metadata (dev, ino, size, mtime,
 *                            ctime, mode, owner, links) changed while it was
 *                            checked, or the name no longer names the file read (-ESTALE)
 *   bundle.digest_mismatch   the SHA-256 of its bytes is not its name (-EINVAL)
 *   bundle.not_canonical     valid JSON that is not the canonical form (-EINVAL)
 *   bundle.duplicate_key     an object with the same key twice, escaped or not (-EINVAL)
 *   bundle.too_deep          nesting deeper than GLOVE_JSON_MAX_DEPTH (-EINVAL)
 *   bundle.invalid_utf8      bytes that are not UTF-8 (-EINVAL)
 *   bundle.malformed         any other JSON failure (syntax, NUL, reals, not an object) (-EINVAL)
 *   bundle.prompt_ref        a "prompt_ref" member anywhere (-EINVAL)
 *   bundle.unknown_field     a member not in the format (-EINVAL)
 *   bundle.missing_field     a required member is absent (-EINVAL)
 *   bundle.wrong_type        a member has another type, or a string is out of
 *                            its bounds (-EINVAL)
 *   bundle.schema_version    schema_version is not 1 (-EINVAL)
 *   bundle.invalid_hex       a digest member is not 64 lowercase hex (-EINVAL)
 *   bundle.too_many_entries  more than GLOVE_BUNDLE_MAX_ENTRIES entries, or text that
 *                            may hold more than GLOVE_JSON_MAX_VALUES values (-E2BIG)
 *   bundle.invalid_key       an entry key that is not a safe key (-EINVAL)
 *   bundle.duplicate_entry   two entries with the same key (-EINVAL)
 *   bundle.unknown_kind      a kind outside the five (fails closed) (-EINVAL)
 *   bundle.content_digest    an entry's content_digest is not SHA-256(content) (-EINVAL)
 *   bundle.launch_too_large  (glove_bundle_load_within) larger than what the launch
 *                            may still read (-EFBIG)
 *   bundle.no_memory         (-ENOMEM)
 *
 * Threading: no shared state; distinct bundles may be loaded concurrently.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/digest.h"
#include "glove/base/error.h"

/* Largest bundle file, in bytes (16 MiB). */
#define GLOVE_BUNDLE_MAX_BYTES ((size_t)16 << 20)
/* Most entries in one bundle. */
#define GLOVE_BUNDLE_MAX_ENTRIES 4096
/* Longest entry key, in bytes. */
#define GLOVE_BUNDLE_KEY_MAX 128
/* Longest source_library_ref, in bytes. */
#define GLOVE_BUNDLE_REF_MAX 1024

enum glove_bundle_kind {
        GLOVE_BUNDLE_BEHAVIOR,
        GLOVE_BUNDLE_PROMPT,
        GLOVE_BUNDLE_SKILL,
        GLOVE_BUNDLE_TEMPLATE,
        GLOVE_BUNDLE_WORKFLOW,
};

/* One entry; strings borrowed from the bundle's decoded tree. */
struct glove_bundle_entry {
        const char *key;
        enum glove_bundle_kind kind;
        const char *content;  /* NUL-terminated; content_len bytes */
        size_t content_len;
        const char *content_digest; /* 64 lowercase hex */
};

/* A decoded (and, from glove_bundle_load, verified) bundle; owned by the
 * caller, released with glove_bundle_free. */
struct glove_bundle {
        json_t *root;                  /* owns every string below */
        const char *source_library_ref;
        const char *source_manifest_digest;
        struct glove_bundle_entry *entries; /* n_entries, in file order */
        size_t n_entries;
        /* glove_bundle_load only (zero / -1 otherwise): */
        char digest[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int fd;                        /* the verified file, O_RDONLY (owned), or -1 */
        uint64_t dev, ino, mnt_id, size;
};

/* The name of kind k ("skill", ...); NULL for a value outside the enum. */
const char *glove_bundle_kind_name(int k);

/* True when s is a safe entry key (see the top of this header). */
bool glove_bundle_key_valid(const char *s);

/*
 * Decodes data[0..len) (at most GLOVE_BUNDLE_MAX_BYTES) strictly as a bundle
 * into a new *out (caller frees). The codes from bundle.not_canonical on;
 * what is named in messages is what (e.g. the digest; NULL: "bundle").
 * Returns 0 or -errno with err set; *out is NULL on failure.
 */
int glove_bundle_decode(const void *data, size_t len, const char *what, struct glove_bundle **out,
                        struct glove_error *err);

/*
 * The file checks of a bundle, in steps so that each can be observed.
 * glove_bundle_file_open opens "<digest>.json" relative to root_fd (an
 * O_DIRECTORY descriptor of the pinned root) with openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and O_RDONLY | O_NOFOLLOW |
 * O_NONBLOCK | O_CLOEXEC, then fstat: regular, mode exactly 0600, owned by
 * owner, one link, at most GLOVE_BUNDLE_MAX_BYTES. *fd and *st get the
 * descriptor (caller closes) and its status.
 * glove_bundle_file_verify reads the whole file through fd (from offset 0,
 * at most GLOVE_BUNDLE_MAX_BYTES), fstat's it again and requires the same
 * dev, ino, size, mtime, ctime, mode, owner and link count as st and that
 * the name still names that inode, then requires SHA-256(bytes) == digest.
 * *data (caller frees) and *len get the bytes.
 * Codes bundle.invalid_digest .. bundle.digest_mismatch.
 */
int glove_bundle_file_open(int root_fd, const char *digest, uid_t owner, int *fd, struct stat *st,
                           struct glove_error *err);
int glove_bundle_file_verify(int root_fd, const char *digest, int fd, const struct stat *st, char **data,
                             size_t *len, struct glove_error *err);

/*
 * All of it: file_open, file_verify, decode. *out keeps the verified
 * descriptor and identity (dev, ino, mount id, size) for the pinned mount.
 * Returns 0 or -errno with err set (every code above).
 */
int glove_bundle_load(int root_fd, const char *digest, uid_t owner, struct glove_bundle **out,
                      struct glove_error *err);

/*
 * glove_bundle_load with a budget: a file larger than budget bytes (checked
 * after file_open's fstat, before any byte is read) is refused with
 * bundle.launch_too_large (-EFBIG). A launch passes what it may still read
 * of GLOVE_SUPERVISOR_BUNDLES_MAX_BYTES (prepare.h); glove_bundle_load is
 * this with budget GLOVE_BUNDLE_MAX_BYTES.
 */
int glove_bundle_load_within(int root_fd, const char *digest, uid_t owner, uint64_t budget,
                             struct glove_bundle **out, struct glove_error *err);

/* One expanded skill, as the skills-projection digest commits it. */
struct glove_bundle_skill_ref {
        const char *key;            /* the entry key */
        const char *path;           /* <skills_dir>/<key>/SKILL.md inside the sandbox */
        const char *content_digest; /* 64 lowercase hex */
};

/*
 * The skills_projection_digest (docs/digests.md): SHA-256 over
 * str("glove.skills-projection") || str(skills_dir) || u32(n) || for each
 * skill in skills[0..n) (the caller sorts them by key bytes):
 * str(key) || str(path) || str(content_digest); str(s) is a 4-byte
 * big-endian length and the bytes. skills_dir is "" for a runtime that is no
 * adapter. out gets 64 lowercase hex and a NUL. Returns 0 or -errno
 * (digest.*).
 */
int glove_bundle_skills_digest(const char *skills_dir, const struct glove_bundle_skill_ref *skills, size_t n,
                               char out[GLOVE_DIGEST_SHA256_HEX_LEN + 1], struct glove_error *err);

/* Frees b (closing its descriptor). NULL is a no-op. */
void glove_bundle_free(struct glove_bundle *b);
