/* SPDX-License-Identifier: Apache-2.0 */
/* glove/remote/runtime.h: the construction-only runtime keeps the identity
 * and digest, is never operational, and its capabilities row is exactly the
 * documented one (no destination, no key). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/remote/runtime.h"
#include "keys.h"

static void test_runtime(void **state) {
        (void)state;
        char key[256];
        tk_key_text("ssh-ed25519", "ssh-ed25519", 32, key, sizeof(key));
        _cleanup_free_ char *doc = tk_document("builder.example.net", 22, "glove", key,
                                               "registry.example.net/glove/runtime@sha256:" HEX64, "sha256:" HEX64, "");
        struct glove_remote_backend b;
        assert_int_equal(glove_remote_backend_decode(doc, strlen(doc), &b, NULL), 0);
        struct glove_remote_runtime *rt = NULL;
        assert_int_equal(glove_remote_runtime_new(&b, &rt, NULL), 0);
        assert_false(glove_remote_runtime_lifecycle_operational(rt));
        assert_false(glove_remote_runtime_lifecycle_operational(NULL));
        assert_string_equal(glove_remote_runtime_container_identity(rt),
                            "registry.example.net/glove/runtime@sha256:" HEX64);
        assert_string_equal(glove_remote_runtime_container_image_digest(rt), "sha256:" HEX64);
        _cleanup_json_ json_t *row = glove_remote_runtime_capabilities(rt);
        _cleanup_free_ char *text = NULL;
        assert_int_equal(glove_json_encode_canonical(row, &text, NULL, NULL), 0);
        assert_string_equal(text, "{\"agent_runtime_adapter_schema_version\":0,\"construction\":\"validated\","
                                  "\"container_identity\":\"registry.example.net/glove/runtime@sha256:" HEX64 "\","
                                  "\"container_image_digest\":\"sha256:" HEX64 "\","
                                  "\"host_key_algorithm\":\"ssh-ed25519\",\"lifecycle_operational\":false,"
                                  "\"managed_runtime_ids\":[],\"resource_mechanisms\":[],"
                                  "\"sandbox_backend\":\"remote_linux_container\",\"verified_receipts\":false}");
        assert_null(strstr(text, "builder"));
        assert_null(strstr(text, "AAAAC3"));
        glove_remote_runtime_free(rt);
        glove_remote_runtime_free(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_runtime) };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
