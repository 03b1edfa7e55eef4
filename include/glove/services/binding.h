/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Endpoint identities in JSON, for the managed-launch binding (spec
 * architecture.md, "Guest specialized-channel admission": "The
 * managed-launch binding commits ... both socket identities") and for the
 * keeper, which reopens the endpoint and requires the same identities
 * (endpoint.h, glove_services_endpoint_reopen).
 *
 * The shape, canonical JSON (integers only, keys sorted):
 *   {"dev":N,"ino":N,"mode":N,"nlink":N,"uid":N}
 * dev and ino are 0..2^63-1 (JSON integers are signed 64-bit; a larger
 * value cannot be represented and is refused), uid, mode and nlink
 * 0..2^32-1.
 *
 * Stable error codes:
 *   services.identity_range    a dev or ino above 2^63-1 (-EOVERFLOW)
 *   services.identity_invalid  not an object of exactly those five integer
 *                              members in range (-EINVAL); the message names
 *                              the JSON path
 *   services.no_memory         (-ENOMEM)
 */

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/services/endpoint.h"

/*
 * Stores a new JSON object for *id in *out (caller owns the reference).
 * Errors: services.identity_range, services.no_memory, and
 * services.invalid_argument for a NULL argument.
 */
int glove_services_identity_json(const struct glove_services_identity *id, json_t **out, struct glove_error *err);

/*
 * Decodes v (as glove_services_identity_json makes it) into *out. path
 * names v in messages (NULL means "$"). *out is written only on success.
 */
int glove_services_identity_from_json(const json_t *v, const char *path, struct glove_services_identity *out,
                                      struct glove_error *err);
