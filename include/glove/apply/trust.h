/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Apply authorization: its schema, the Ed25519 keys that sign it, and the
 * root-controlled trust policy that says which keys count (issue 30; spec
 * session-policy.md: "The apply authorization schema, root-controlled
 * Ed25519 trust-policy loader ..."; docs/retained-changes.md). Signatures
 * are Ed25519 (RFC 8032) by libcrypto.
 *
 * Trust policy file (default GLOVE_APPLY_TRUST_POLICY_DEFAULT), JSON:
 *   {"schema":"glove.apply-trust.v1",
 *    "keys":[{"key_id":ID,"public_key":BASE64}...]}
 * ID: 1..64 bytes of [A-Za-z0-9._-]; BASE64: standard base64 (RFC 4648,
 * padded) of the 32-byte raw Ed25519 public key; 1..64 keys, ids and keys
 * unique; no other member.
 *
 * Key file (written by glove_apply_key_generate), JSON, mode 0600, owned by
 * the caller, one link:
 *   {"key_id":ID,"private_key":BASE64,"schema":"glove.apply-key.v1"}
 * BASE64: the 32-byte Ed25519 private key (seed).
 *
 * Authorization (canonical JSON, glove/base/json.h), every member required:
 *   {"baseline_manifest_digest":HEX64,"expires_at_ms":INT,"grant":NAME,
 *    "grant_id":SESSION "/" NAME,"issued_at_ms":INT,"key_id":ID,
 *    "nonce":HEX64,"schema":"glove.apply-authorization.v1",
 *    "session_id":SESSION,"stage_manifest_digest":HEX64}
 * NAME is the grant's alias or exposure id, SESSION the session id (both
 * identifiers of 1..128 bytes of [A-Za-z0-9._-], not "." or "..").
 * 0 <= issued_at_ms <= expires_at_ms <= issued_at_ms + GLOVE_APPLY_AUTH_TTL_MAX_MS.
 * The signed message is "glove.apply.authorization.v1\0" || the canonical
 * bytes; the authorization digest is SHA-256 over that same message, in
 * lowercase hex.
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/base/error.h"

#define GLOVE_APPLY_TRUST_POLICY_DEFAULT "/etc/glove/apply-trust.json"
#define GLOVE_APPLY_TRUST_MAX_BYTES (64 * 1024)
#define GLOVE_APPLY_KEYS_MAX 64
#define GLOVE_APPLY_KEY_ID_MAX 64
#define GLOVE_APPLY_NAME_MAX 128
#define GLOVE_APPLY_HEX_SIZE 65
#define GLOVE_APPLY_SIGNATURE_LEN 64
/* An authorization is valid for at most one hour. */
#define GLOVE_APPLY_AUTH_TTL_MAX_MS (3600LL * 1000)
/* Bytes of a canonical authorization. */
#define GLOVE_APPLY_AUTH_MAX_BYTES 2048

struct glove_apply_trust;
struct glove_apply_key;

/*
 * Loads the trust policy at path (absolute). The file must be a regular
 * file, one link, owned by root (uid 0), not writable by group or others,
 * at most GLOVE_APPLY_TRUST_MAX_BYTES; its directory and every ancestor up
 * to / must be owned by root and not writable by group or others, except an
 * ancestor other than the file's own directory with the sticky bit (/tmp).
 * The checks are made on the descriptors that are then read (opened one
 * component at a time, O_NOFOLLOW: a symbolic link anywhere is refused).
 * The path must be absolute and normalized (no empty, "." or ".."
 * component, no trailing slash: apply.trust_invalid).
 * Codes: apply.trust_missing (-ENOENT; another error of open(2), such as
 * -EACCES or -ENOTDIR, with the same code), apply.trust_insecure (-EPERM; the
 * message names the object and what is wrong), apply.trust_invalid
 * (-EINVAL; what and where), apply.no_memory. *out is owned by the caller.
 */
int glove_apply_trust_load(const char *path, struct glove_apply_trust **out, struct glove_error *err);

void glove_apply_trust_free(struct glove_apply_trust *t);

/* The number of keys and key i's id (borrowed), for reports. */
size_t glove_apply_trust_count(const struct glove_apply_trust *t);
const char *glove_apply_trust_key_id(const struct glove_apply_trust *t, size_t i);

/*
 * Verifies sig (64 bytes) over msg[0..len) with the key key_id of t.
 * Codes: apply.untrusted_key (-EPERM: t lists no key key_id),
 * apply.bad_signature (-EPERM), apply.crypto (-EIO: libcrypto failed).
 */
int glove_apply_trust_verify(const struct glove_apply_trust *t, const char *key_id, const void *msg, size_t len,
                             const uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], struct glove_error *err);

/*
 * Creates a new key file at path (O_EXCL, 0600; never overwrites:
 * -EEXIST apply.key_exists) for key_id, from 32 random bytes, written and
 * fsync'd. Codes: apply.key_invalid (bad key_id), apply.key_write (-errno),
 * apply.crypto.
 */
int glove_apply_key_generate(const char *path, const char *key_id, struct glove_error *err);

/*
 * Loads the key file at path: regular file, one link, owned by the caller
 * (geteuid), mode without group or other bits (apply.key_insecure),
 * at most 4 KiB, the schema above (apply.key_invalid). apply.key_missing
 * (-ENOENT; another error of open(2) with the same code). A symbolic link
 * or a file that is not regular is apply.key_insecure. *out owned by the
 * caller (glove_apply_key_free).
 */
int glove_apply_key_load(const char *path, struct glove_apply_key **out, struct glove_error *err);

void glove_apply_key_free(struct glove_apply_key *k);

/* The key's id (borrowed) and its public key as padded base64 (45 bytes with the NUL). */
const char *glove_apply_key_id(const struct glove_apply_key *k);
int glove_apply_key_public(const struct glove_apply_key *k, char out[45], struct glove_error *err);

/* Signs msg[0..len) (Ed25519): sig gets 64 bytes. apply.crypto. */
int glove_apply_key_sign(const struct glove_apply_key *k, const void *msg, size_t len,
                         uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], struct glove_error *err);

struct glove_apply_authorization {
        char schema[40];                          /* "glove.apply-authorization.v1" */
        char session_id[GLOVE_APPLY_NAME_MAX + 1];
        char grant[GLOVE_APPLY_NAME_MAX + 1];
        char grant_id[2 * GLOVE_APPLY_NAME_MAX + 2]; /* session_id "/" grant */
        char baseline_manifest_digest[GLOVE_APPLY_HEX_SIZE];
        char stage_manifest_digest[GLOVE_APPLY_HEX_SIZE];
        char key_id[GLOVE_APPLY_KEY_ID_MAX + 1];
        char nonce[GLOVE_APPLY_HEX_SIZE];
        int64_t issued_at_ms, expires_at_ms;
};

/*
 * The canonical bytes of a (every member checked as above; grant_id must
 * equal session_id "/" grant): *out (malloc'd, NUL-terminated, *len bytes
 * without the NUL). apply.authorization_invalid (-EINVAL, which member),
 * apply.no_memory.
 */
int glove_apply_authorization_encode(const struct glove_apply_authorization *a, char **out, size_t *len,
                                     struct glove_error *err);

/*
 * Decodes canonical bytes buf[0..len) (at most GLOVE_APPLY_AUTH_MAX_BYTES;
 * canonical, every member present, no other, each valid as above) into *a.
 * apply.authorization_invalid.
 */
int glove_apply_authorization_decode(const char *buf, size_t len, struct glove_apply_authorization *a,
                                     struct glove_error *err);

/* The signed message of canonical bytes: "glove.apply.authorization.v1\0"
 * || buf (*msg malloc'd, *msg_len bytes). apply.no_memory;
 * apply.authorization_invalid when len > GLOVE_APPLY_AUTH_MAX_BYTES. */
int glove_apply_authorization_message(const char *buf, size_t len, uint8_t **msg, size_t *msg_len,
                                      struct glove_error *err);

/* SHA-256 of the signed message, lowercase hex. apply.crypto. */
int glove_apply_authorization_digest(const char *buf, size_t len, char out[GLOVE_APPLY_HEX_SIZE],
                                     struct glove_error *err);

/*
 * Checks a signed authorization: buf decodes (decode above), now_ms is
 * within [issued_at_ms, expires_at_ms] (apply.authorization_expired,
 * -EPERM; not yet valid is the same code), and sig verifies with its key_id
 * in t (glove_apply_trust_verify's codes). The signature is checked before
 * the time, so a changed authorization is apply.bad_signature whatever its
 * times. *a is filled on success only.
 */
int glove_apply_authorization_verify(const struct glove_apply_trust *t, const char *buf, size_t len,
                                     const uint8_t sig[GLOVE_APPLY_SIGNATURE_LEN], int64_t now_ms,
                                     struct glove_apply_authorization *a, struct glove_error *err);
