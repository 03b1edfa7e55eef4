/* SPDX-License-Identifier: Apache-2.0 */
/* Policy queries for capabilities (see policy_query.h). */
#include "glove/supervisor/policy_query.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *glove_supervisor_policy_managed_runtime_ids(const struct glove_supervisor_policy *p) {
        json_t *out = json_array();
        if (!out || !p)
                return out;
        int backend = sv_enum_find(&sv_backend_names, "linux_production");
        const char **ids = calloc(p->n_templates + 1, sizeof(*ids));
        if (!ids) {
                json_decref(out);
                return NULL;
        }
        size_t n = 0;
        for (size_t i = 0; i < p->n_templates; i++)
                if (p->templates[i].has_launch && p->templates[i].backend == backend)
                        ids[n++] = p->templates[i].runtime_id;
        qsort(ids, n, sizeof(*ids), cmp);
        for (size_t i = 0; i < n; i++)
                if ((i == 0 || strcmp(ids[i], ids[i - 1]) != 0) && json_array_append_new(out, json_string(ids[i])) < 0) {
                        json_decref(out);
                        out = NULL;
                        break;
                }
        free(ids);
        return out;
}
