/* SPDX-License-Identifier: Apache-2.0 */
/* The sealed guest-channel capability (see glove/channel/capability.h). */
#include "glove/channel/capability.h"

#include <string.h>

static bool set_ok(const char *const *ids, size_t n) {
        return (ids || n == 0) && n <= GLOVE_CHANNEL_CAPABILITY_RUNTIMES_MAX;
}

static bool intersect(const char *const *a, size_t na, const char *const *b, size_t nb) {
        for (size_t i = 0; i < na; i++)
                for (size_t j = 0; j < nb; j++)
                        if (a[i] && b[j] && strcmp(a[i], b[j]) == 0)
                                return true;
        return false;
}

static const char *refusal(const struct glove_channel_composition *c) {
        if (!c || !set_ok(c->endpoint_runtime_ids, c->n_endpoint_runtime_ids) ||
            !set_ok(c->adapter_runtime_ids, c->n_adapter_runtime_ids))
                return "channel.capability_invalid";
        if (!c->transport_id)
                return "channel.capability_pathname";
        if (strcmp(c->transport_id, GLOVE_CHANNEL_TRANSPORT_INHERITED) != 0)
                return "channel.capability_transport";
        if (!c->binding_id)
                return "channel.capability_unbound";
        if (!c->adapter_binding_id || strcmp(c->binding_id, c->adapter_binding_id) != 0)
                return "channel.capability_binding_mismatch";
        const char *digest = glove_channel_host_catalog_digest(c->catalog);
        if (!digest)
                return "channel.capability_catalog_unfrozen";
        if (!c->expected_catalog_digest || strcmp(digest, c->expected_catalog_digest) != 0)
                return "channel.capability_catalog_drifted";
        if (!c->factory_constructed)
                return "channel.capability_no_factory";
        if (!c->runtime_linux)
                return "channel.capability_runtime";
        if (!intersect(c->endpoint_runtime_ids, c->n_endpoint_runtime_ids, c->adapter_runtime_ids,
                       c->n_adapter_runtime_ids))
                return "channel.capability_no_intersection";
        if (!c->endpoints_rechecked)
                return "channel.capability_drifted";
        return NULL;
}

int glove_channel_capability(const struct glove_channel_composition *c, const char **why) {
        const char *code = refusal(c);
        if (why)
                *why = code;
        return code ? 0 : 1;
}
