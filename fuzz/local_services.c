/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/services/config.c src/channel/intent.c src/channel/host.c src/adapters/sage/sage.c
/*
 * libFuzzer target: what an operator's file or an agent's frame feeds the
 * local services and guest channels (docs/local-services.md,
 * docs/guest-channels.md): the local-services file
 * (glove_services_config_decode), a guest-channel intent's structure
 * (channel_intent_decode, what the observation server applies to every
 * frame) and a Sage observation body (glove_sage_observation_validate).
 * The first byte chooses the decoder; the rest is its input. Built and run
 * by scripts/fuzz.sh; seeds in fuzz/corpus/local_services/.
 *
 * Invariants besides memory safety: a refusal names a code of the decoder's
 * module (services.*, channel.*, adapters.*); a decoded configuration's
 * endpoints are sorted by alias with valid identifiers and absolute socket
 * paths; a decoded intent's body is an object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/adapters/sage.h"
#include "glove/base/json.h"
#include "glove/services/config.h"
#include "../src/channel/channel_internal.h"

static void refused(const struct glove_error *err, const char *prefix) {
        if (!err->code || strncmp(err->code, prefix, strlen(prefix)) != 0)
                abort();
}

static void config(const uint8_t *data, size_t size) {
        struct glove_services_config *c = NULL;
        struct glove_error err = { 0 };
        if (glove_services_config_decode((const char *)data, size, &c, &err) < 0) {
                refused(&err, "services.");
                return;
        }
        size_t n = glove_services_config_count(c);
        for (size_t i = 0; i < n; i++) {
                const struct glove_services_config_endpoint *e = glove_services_config_endpoint(c, i);
                if (!glove_services_identifier_valid(e->alias) || e->socket_path[0] != '/' || e->n_runtime_ids == 0)
                        abort();
                if (i > 0 && strcmp(glove_services_config_endpoint(c, i - 1)->alias, e->alias) >= 0)
                        abort();
        }
        glove_services_config_free(c);
}

static void intent(const uint8_t *data, size_t size) {
        struct channel_intent in = { 0 };
        struct glove_error err = { 0 };
        if (channel_intent_decode(data, size, &in, &err) < 0) {
                refused(&err, "channel.");
                channel_intent_release(&in);
                return;
        }
        if (!json_is_object(in.body) || !in.schema_id || !in.key || in.ttl_ms < 1)
                abort();
        channel_intent_release(&in);
}

static void body(const uint8_t *data, size_t size) {
        json_t *j = NULL;
        if (glove_json_decode_strict((const char *)data, size, 1 << 16, 0, &j, NULL) < 0)
                return;
        struct glove_error err = { 0 };
        if (glove_sage_observation_validate(j, &err) < 0)
                refused(&err, "adapters.");
        json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        switch (data[0] % 3) {
        case 0:
                config(data + 1, size - 1);
                break;
        case 1:
                intent(data + 1, size - 1);
                break;
        default:
                body(data + 1, size - 1);
                break;
        }
        return 0;
}
