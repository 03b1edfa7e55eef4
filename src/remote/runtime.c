/* SPDX-License-Identifier: Apache-2.0 */
/* The construction-only remote runtime (see glove/remote/runtime.h). */
#include "glove/remote/runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct glove_remote_runtime {
        char container_identity[GLOVE_REMOTE_IDENTITY_MAX + 1];
        char container_image_digest[GLOVE_REMOTE_DIGEST_LEN + 1];
};

int glove_remote_runtime_new(const struct glove_remote_backend *b, struct glove_remote_runtime **out,
                             struct glove_error *err) {
        struct glove_remote_runtime *rt = calloc(1, sizeof(*rt));
        if (!rt)
                return glove_error_set(err, ENOMEM, "remote.no_memory", "out of memory");
        memcpy(rt->container_identity, b->container_identity, sizeof(rt->container_identity));
        memcpy(rt->container_image_digest, b->container_image_digest, sizeof(rt->container_image_digest));
        *out = rt;
        return 0;
}

void glove_remote_runtime_free(struct glove_remote_runtime *rt) {
        free(rt);
}

bool glove_remote_runtime_lifecycle_operational(const struct glove_remote_runtime *rt) {
        (void)rt;
        return false;
}

const char *glove_remote_runtime_container_identity(const struct glove_remote_runtime *rt) {
        return rt->container_identity;
}

const char *glove_remote_runtime_container_image_digest(const struct glove_remote_runtime *rt) {
        return rt->container_image_digest;
}

json_t *glove_remote_runtime_capabilities(const struct glove_remote_runtime *rt) {
        return json_pack("{s:s,s:s,s:b,s:i,s:[],s:[],s:b,s:s,s:s,s:s}", "construction", "validated",
                         "sandbox_backend", GLOVE_REMOTE_SANDBOX_BACKEND, "lifecycle_operational",
                         glove_remote_runtime_lifecycle_operational(rt), "agent_runtime_adapter_schema_version", 0,
                         "managed_runtime_ids", "resource_mechanisms", "verified_receipts", false,
                         "container_identity", rt->container_identity, "container_image_digest",
                         rt->container_image_digest, "host_key_algorithm", GLOVE_REMOTE_HOST_KEY_ALGORITHM);
}
