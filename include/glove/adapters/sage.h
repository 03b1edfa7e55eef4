/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Sage guest-channel adapter (spec architecture.md, "Guest
 * specialized-channel admission"; spec session-policy.md, "Guest
 * observation channels and Sage guest proposals"). Guest-channel semantics
 * enter Glove only through this opaque binding: an endpoint whose
 * guest_channel names GLOVE_SAGE_BINDING_ID carries Sage observations; an
 * unbound endpoint (even one allowed for pi) is a generic proxy.
 *
 * The adapter registers exactly one schema, "sage.glove-observation.v1":
 * a bounded, non-signing observation. Proposal and mutation schemas are
 * not registered (dormant until an authenticated activation path exists),
 * so the registry refuses them (channel.schema_unregistered).
 *
 * Observation body (the intent's "body"; canonical JSON object, at most
 * GLOVE_SAGE_BODY_MAX canonical bytes; intents live at most
 * GLOVE_SAGE_TTL_MAX_MS):
 *   {"kind":"progress"|"status"|"note",
 *    "seq":0..2^31-1,
 *    "summary":STRING,            1..GLOVE_SAGE_SUMMARY_MAX bytes of UTF-8,
 *                                 no control character (U+0000..U+001F,
 *                                 U+007F..U+009F)
 *    "tags":[TAG,...]}            optional; 0..GLOVE_SAGE_TAGS_MAX tags,
 *                                 strictly increasing (bytewise: sorted,
 *                                 unique); TAG = [a-z0-9][a-z0-9._-]{0,63}
 * Nothing else: no signature, key or signer member (non-signing).
 *
 * Stable error codes (struct glove_error; -EINVAL):
 *   adapters.binding_unsupported    a binding other than GLOVE_SAGE_BINDING_ID
 *   adapters.sage_body_not_object   the body is not a JSON object
 *   adapters.sage_body_signature    a signature-like member ("signature",
 *                                   "signatures", "sig", "signer",
 *                                   "public_key", "key_id"): observations
 *                                   are non-signing
 *   adapters.sage_body_unknown_member any other member than the four
 *   adapters.sage_body_kind         kind missing, not a string, or not one of the three
 *   adapters.sage_body_seq          seq missing, not an integer, or out of range
 *   adapters.sage_body_summary      summary missing, not a string, empty,
 *                                   too long, or with a control character
 *   adapters.sage_body_tags         tags not an array, too many, a tag not
 *                                   a TAG, or not strictly increasing
 * and the admission table's codes (glove/channel/host.h) from register.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/channel/host.h"

/* The exact opaque binding an endpoint names in guest_channel. */
#define GLOVE_SAGE_BINDING_ID "sage.glove-observation.v1"
/* The transport the Sage adapter selects (GLOVE_CHANNEL_TRANSPORT_INHERITED). */
#define GLOVE_SAGE_TRANSPORT_ID "inherited-stream-v1"
/* The adapter-owned selector the agent gets with its descriptor map: the
 * alias of its observation stream (docs/guest-channels.md). */
#define GLOVE_SAGE_SELECTOR_ENV "GLOVE_LOCAL_SERVICE_SAGE_ALIAS"
/* The one schema the adapter registers. */
#define GLOVE_SAGE_OBSERVATION_SCHEMA "sage.glove-observation.v1"
/* Bounds of the observation schema. */
#define GLOVE_SAGE_BODY_MAX 2048
#define GLOVE_SAGE_TTL_MAX_MS 600000u
#define GLOVE_SAGE_SUMMARY_MAX 512
#define GLOVE_SAGE_TAGS_MAX 8
#define GLOVE_SAGE_TAG_MAX 64
#define GLOVE_SAGE_SEQ_MAX 2147483647

/*
 * Registers the observation schema (GLOVE_SAGE_OBSERVATION_SCHEMA, body
 * bound GLOVE_SAGE_BODY_MAX, ttl bound GLOVE_SAGE_TTL_MAX_MS, validator
 * glove_sage_observation_validate) in h, which must not be frozen yet.
 * Returns 0 or the table's error unchanged (channel.host_frozen,
 * channel.register_duplicate, ...): the host must propagate it.
 */
int glove_sage_register(struct glove_channel_host *h, struct glove_error *err);

/*
 * Resolves an endpoint's guest_channel binding: NULL → *bound = false and 0
 * (a generic proxy, no channel); exactly GLOVE_SAGE_BINDING_ID → *bound =
 * true and 0; anything else → -EINVAL with adapters.binding_unsupported
 * (gloved refuses to start), *bound = false.
 */
int glove_sage_resolve(const char *binding, bool *bound, struct glove_error *err);

/*
 * The adapter's runtime set, canonical (sorted, unique): {"claude-code",
 * "pi"}. Static storage; *n receives the count (n may be NULL).
 */
const char *const *glove_sage_runtime_ids(size_t *n);

/*
 * The observation schema's validator (the descriptor's validate; see the
 * body above). Pure and thread-safe. Returns 0 or -EINVAL with an
 * adapters.sage_body_* code.
 */
int glove_sage_observation_validate(const json_t *body, struct glove_error *err);
