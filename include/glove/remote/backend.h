/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The remote backend configuration of gloved (spec architecture.md,
 * "Construction-only remote backend"; spec session-policy.md, "Capability
 * activation"; docs/remote-backend.md documents the file and every code).
 *
 * The configuration is its own protected file (gloved --remote-backend
 * FILE): a regular file owned by the service user, mode exactly 0600, one
 * hard link, no symbolic link as its last component, at most
 * GLOVE_REMOTE_FILE_MAX bytes, read through one descriptor whose metadata
 * must not change while it is read (the rules of the session policy). Its
 * text is strict JSON (RFC 8259, duplicate keys refused, unknown members
 * refused):
 *
 *   {"schema": "glove.remote-backend-v1",
 *    "remote_backend": {
 *      "ssh_destination": {"host": HOST, "port": 1..65535, "user": USER},
 *      "host_key": "ssh-ed25519 BASE64",
 *      "container_identity": "NAME@sha256:<64 lowercase hex>",
 *      "container_image_digest": "sha256:<64 lowercase hex>"}}
 *
 * A top-level "apple_container" member (Apple Container configuration) is
 * remote.backend_conflict: the two backends are mutually exclusive.
 *
 * Nothing here resolves a name, opens a socket, runs a program or touches
 * a container: the values are checked lexically. Daemon-safe: no globals,
 * no printing, no environment.
 *
 * Stable codes (err->code), each message starting with the JSON path of the
 * offending value ("$.remote_backend.host_key: ...") or the file's path:
 *   remote.file_path_relative  the path is not absolute
 *   remote.file_symlink        the last component is a symbolic link
 *   remote.file_open           it cannot be opened (missing, permission)
 *   remote.file_not_regular    not a regular file
 *   remote.file_owner          not owned by the service user
 *   remote.file_mode           mode is not exactly 0600
 *   remote.file_links          more than one hard link
 *   remote.file_too_large      larger than GLOVE_REMOTE_FILE_MAX
 *   remote.file_read           reading failed
 *   remote.file_changed        the file changed while it was read
 *   remote.invalid_json        malformed JSON, trailing data, invalid UTF-8,
 *                              a NUL, nesting too deep, not an object
 *   remote.duplicate_key       an object holds a key twice
 *   remote.unknown_field       a member the schema does not define
 *   remote.missing_field       a required member is absent
 *   remote.wrong_type          a member of another JSON type
 *   remote.too_long            a string longer than its bound
 *   remote.unsupported_schema  "schema" is not "glove.remote-backend-v1"
 *   remote.backend_conflict    "apple_container" beside "remote_backend"
 *   remote.destination_host    ssh_destination.host is not a lowercase DNS
 *                              name (LDH labels) or a canonical IPv4/IPv6
 *                              literal
 *   remote.destination_port    ssh_destination.port outside 1..65535 (or
 *                              not an integer)
 *   remote.destination_user    ssh_destination.user is not a POSIX portable
 *                              user name
 *   remote.host_key_type       host_key names another key type than
 *                              ssh-ed25519 (ssh-rsa, ecdsa-sha2-*, sk-*,
 *                              certificates, ...)
 *   remote.host_key_invalid    host_key is not exactly "ssh-ed25519 " and
 *                              the strict base64 of an RFC 8709 key blob
 *   remote.image_tagged        container_identity carries a tag
 *   remote.image_invalid       container_identity is not NAME@sha256:HEX
 *                              by the OCI reference grammar (upper-case
 *                              hex, another algorithm, a second '@',
 *                              empty components, trailing text, ...)
 *   remote.image_digest_invalid  container_image_digest is not
 *                              sha256:<64 lowercase hex>
 *   remote.image_digest_mismatch the identity's digest differs from
 *                              container_image_digest
 *   remote.no_memory           out of memory
 * Each returns -EINVAL (the file_* codes: -errno as the system said, or
 * -EPERM / -EFBIG / -EAGAIN; no_memory -ENOMEM).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"

/* The "schema" value of the file. */
#define GLOVE_REMOTE_BACKEND_SCHEMA "glove.remote-backend-v1"
/* Largest file accepted, bytes. */
#define GLOVE_REMOTE_FILE_MAX (64 * 1024)
/* Longest ssh_destination.host, bytes (RFC 1035 name without the root dot). */
#define GLOVE_REMOTE_HOST_MAX 253
/* Longest ssh_destination.user, bytes (the useradd(8) limit). */
#define GLOVE_REMOTE_USER_MAX 32
/* Longest repository name of container_identity, bytes (registry host and
 * port, '/', path: the limit the OCI distribution spec notes clients keep). */
#define GLOVE_REMOTE_IMAGE_NAME_MAX 255
/* "sha256:" and 64 hex digits. */
#define GLOVE_REMOTE_DIGEST_LEN 71
/* Longest container_identity: name, '@', digest. */
#define GLOVE_REMOTE_IDENTITY_MAX (GLOVE_REMOTE_IMAGE_NAME_MAX + 1 + GLOVE_REMOTE_DIGEST_LEN)
/* The only host key algorithm accepted (RFC 8709). */
#define GLOVE_REMOTE_HOST_KEY_ALGORITHM "ssh-ed25519"
/* An Ed25519 public key, bytes (RFC 8032). */
#define GLOVE_REMOTE_ED25519_KEY_LEN 32
/* The key blob: string "ssh-ed25519" and string key (RFC 4253 section 6.6,
 * RFC 8709 section 4): 4 + 11 + 4 + 32 bytes. */
#define GLOVE_REMOTE_HOST_KEY_BLOB_LEN 51
/* "ssh-ed25519 " and the padded base64 of the blob (68 characters). */
#define GLOVE_REMOTE_HOST_KEY_TEXT_LEN (11 + 1 + 68)
/* Bound on the host_key string accepted before it is judged, bytes. */
#define GLOVE_REMOTE_HOST_KEY_MAX 8192

/* A validated configuration: plain values, owns nothing. */
struct glove_remote_backend {
        char host[GLOVE_REMOTE_HOST_MAX + 1];
        uint16_t port;
        char user[GLOVE_REMOTE_USER_MAX + 1];
        /* The Ed25519 key, and its "ssh-ed25519 BASE64" text as given (the
         * only spelling strict base64 allows). */
        uint8_t host_key[GLOVE_REMOTE_ED25519_KEY_LEN];
        char host_key_text[GLOVE_REMOTE_HOST_KEY_TEXT_LEN + 1];
        char container_identity[GLOVE_REMOTE_IDENTITY_MAX + 1];
        char container_image_digest[GLOVE_REMOTE_DIGEST_LEN + 1];
};

/*
 * Decodes and validates the file's text data[0..len) (at most
 * GLOVE_REMOTE_FILE_MAX bytes) into *out (written only on success). Checks,
 * in order: JSON, top-level members (apple_container first:
 * remote.backend_conflict), schema, then remote_backend's members:
 * ssh_destination (host, port, user), host_key, container_image_digest,
 * container_identity (its digest compared last). The first offence is
 * reported. Returns 0 or a negative errno with one of the codes above.
 */
int glove_remote_backend_decode(const void *data, size_t len, struct glove_remote_backend *out,
                                struct glove_error *err);

/*
 * Opens path (absolute) without following a final symbolic link, checks it
 * is a regular file of owner_uid, mode 0600, one link, at most
 * GLOVE_REMOTE_FILE_MAX bytes, reads it through the same descriptor,
 * checks that nothing of its identity or metadata changed, and decodes it
 * (glove_remote_backend_decode). Errors: the remote.file_* codes, then the
 * decoder's, the message prefixed with path.
 */
int glove_remote_backend_load(const char *path, uid_t owner_uid, struct glove_remote_backend *out,
                              struct glove_error *err);

/*
 * The single-value checks the decoder uses; json_path names the value in
 * messages. Each returns 0 or -EINVAL with its code.
 *
 * glove_remote_check_host: a lowercase DNS name by the LDH rule (labels of
 *   1..63 bytes of [a-z0-9-], not starting or ending with '-', the last
 *   label not all digits, at most GLOVE_REMOTE_HOST_MAX bytes, no trailing
 *   dot), or an IPv4 or IPv6 literal in the form inet_ntop(3) writes (no
 *   brackets, no zone). So never '-' first, no whitespace, '%', '@', ':'
 *   outside an IPv6 literal, or any other ssh_config token character.
 *   Nothing is resolved (inet_pton only). Code remote.destination_host.
 * glove_remote_check_user: 1..GLOVE_REMOTE_USER_MAX bytes of the POSIX
 *   portable filename set [A-Za-z0-9._-], not starting with '-'. Code
 *   remote.destination_user.
 * glove_remote_check_host_key: text is exactly "ssh-ed25519 " and the
 *   strict base64 (RFC 4648, padded) of a blob that is uint32 11,
 *   "ssh-ed25519", uint32 32 and 32 bytes, nothing more; the key goes to
 *   key (may be NULL). Another first word made of key-type characters is
 *   remote.host_key_type, anything else remote.host_key_invalid.
 * glove_remote_check_digest: "sha256:" and 64 lowercase hex.
 *   Code remote.image_digest_invalid.
 * glove_remote_check_identity: NAME@sha256:<64 lowercase hex>, NAME by the
 *   OCI distribution reference grammar: an optional registry host (DNS
 *   labels, '.'-separated, or an IPv4 literal, or a bracketed IPv6
 *   literal; recognised as a host by a '.', a ':' or "localhost" in the
 *   first of several components) with an optional :port (1..65535), then
 *   '/'-separated path components of [a-z0-9]+ joined by '.', '_', "__"
 *   or runs of '-'; at most GLOVE_REMOTE_IMAGE_NAME_MAX bytes. A ':TAG'
 *   after the last '/' is remote.image_tagged; anything else outside the
 *   grammar is remote.image_invalid.
 */
int glove_remote_check_host(const char *host, const char *json_path, struct glove_error *err);
int glove_remote_check_user(const char *user, const char *json_path, struct glove_error *err);
int glove_remote_check_host_key(const char *text, const char *json_path, uint8_t key[GLOVE_REMOTE_ED25519_KEY_LEN],
                                struct glove_error *err);
int glove_remote_check_digest(const char *digest, const char *json_path, struct glove_error *err);
int glove_remote_check_identity(const char *identity, const char *json_path, struct glove_error *err);
