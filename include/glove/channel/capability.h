/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The sealed guest-channel capability (spec architecture.md, "Guest
 * specialized-channel admission" and "Historical synthetic status
 * milestone"; spec session-policy.md, "Guest observation channels and Sage
 * guest proposals"): capability discovery advertises observation ingress
 * (schema version 1) only for the exact inherited-stream composition. This
 * is a pure function over an explicit description of that composition: it
 * infers nothing from registry storage or pointer presence, does no I/O and
 * keeps no state. The caller (gloved's composition) fills the description
 * from what it constructed and rechecked just now.
 *
 * Endpoint checks are construction and drift evidence, not
 * process-authentication evidence.
 */

#include <stdbool.h>
#include <stddef.h>

#include "glove/channel/host.h"

/* The only transport that can carry the capability: one inherited
 * connected AF_UNIX stream socketpair per adapter-bound alias. */
#define GLOVE_CHANNEL_TRANSPORT_INHERITED "inherited-stream-v1"

struct glove_channel_composition {
        /* The adapter's transport selector: GLOVE_CHANNEL_TRANSPORT_INHERITED,
         * or NULL for the compatibility pathname transport. */
        const char *transport_id;
        /* The endpoint's opaque guest_channel binding, or NULL (unbound). */
        const char *binding_id;
        /* The exact binding the adapter resolves (e.g. GLOVE_SAGE_BINDING_ID). */
        const char *adapter_binding_id;
        /* The frozen admission table the registries are built on. */
        const struct glove_channel_host *catalog;
        /* The catalog digest the composition committed (64 lowercase hex). */
        const char *expected_catalog_digest;
        /* The preparer-owned proxy factory exists. */
        bool factory_constructed;
        /* The concrete Linux lifecycle runtime, operational, with complete
         * resource mechanisms. */
        bool runtime_linux;
        /* The endpoint's allowed runtime ids, and the adapter's runtime set
         * (any order; at most 64 entries each are looked at). */
        const char *const *endpoint_runtime_ids;
        size_t n_endpoint_runtime_ids;
        const char *const *adapter_runtime_ids;
        size_t n_adapter_runtime_ids;
        /* Every endpoint parent is descriptor-pinned and its socket identity
         * was rechecked now. */
        bool endpoints_rechecked;
};

/* Most runtime ids looked at in each set; a larger set is refused. */
#define GLOVE_CHANNEL_CAPABILITY_RUNTIMES_MAX 64

/*
 * Returns 1 only for the exact composition: transport_id is
 * "inherited-stream-v1", binding_id is non-NULL and equal to
 * adapter_binding_id, the catalog is frozen and its digest equals
 * expected_catalog_digest, the factory is constructed, the runtime is the
 * Linux one, the endpoint and adapter runtime sets intersect, and the
 * endpoints were rechecked. Returns 0 otherwise and, when why is not NULL,
 * stores the first failing condition's stable code (a static string), in
 * this order:
 *   channel.capability_invalid          c is NULL, or a runtime set is NULL
 *                                       with a count, or larger than
 *                                       GLOVE_CHANNEL_CAPABILITY_RUNTIMES_MAX
 *   channel.capability_pathname         transport_id NULL (compatibility pathname transport)
 *   channel.capability_transport        another transport_id
 *   channel.capability_unbound          binding_id NULL (a generic proxy)
 *   channel.capability_binding_mismatch binding_id differs from adapter_binding_id (or that is NULL)
 *   channel.capability_catalog_unfrozen catalog NULL or not frozen
 *   channel.capability_catalog_drifted  the catalog digest differs from expected_catalog_digest (or that is NULL)
 *   channel.capability_no_factory       factory_constructed false
 *   channel.capability_runtime          runtime_linux false (generic, remote, Apple, not operational)
 *   channel.capability_no_intersection  no runtime id is in both sets
 *   channel.capability_drifted          endpoints_rechecked false
 * On 1, *why is set to NULL.
 */
int glove_channel_capability(const struct glove_channel_composition *c, const char **why);
