/* SPDX-License-Identifier: Apache-2.0 */
/* The text form of retained changes (include/glove/protocol/changes.h). */
#include "glove/protocol/changes.h"

#include <limits.h>
#include <string.h>

#include "glove/base/shown.h"

const char *const glove_changes_kinds[4] = { "removed", "modified", "mode_changed", "added" };

static void print_one(FILE *out, const char *kind, const json_t *x) {
        char path[GLOVE_SHOWN_SIZE(PATH_MAX)]; /* a manifest path is shorter */
        const char *raw = json_string_value(json_object_get(x, "path"));
        glove_shown_name(raw, path, sizeof(path));
        if (strcmp(kind, "mode_changed") == 0) {
                fprintf(out, "  %-12s %s %04llo -> %04llo%s\n", kind, path,
                        (unsigned long long)json_integer_value(json_object_get(x, "before")),
                        (unsigned long long)json_integer_value(json_object_get(x, "after")),
                        raw && strcmp(raw, ".") == 0 ? " (glove apply keeps the source root's mode)" : "");
        } else if (strcmp(kind, "added") == 0) {
                json_int_t mode = json_integer_value(json_object_get(x, "mode"));
                const char *type = json_string_value(json_object_get(x, "type"));
                fprintf(out, "  %-12s %s%s %04llo%s\n", kind, path, type && strcmp(type, "dir") == 0 ? "/" : "",
                        (unsigned long long)mode, mode & 02 ? " (writable by anyone)" : "");
        } else {
                fprintf(out, "  %-12s %s\n", kind, path);
        }
}

void glove_changes_print_entries(FILE *out, const json_t *changes) {
        for (size_t k = 0; k < 4; k++) {
                size_t i;
                const json_t *x;
                json_array_foreach(json_object_get(changes, glove_changes_kinds[k]), i, x)
                        print_one(out, glove_changes_kinds[k], x);
        }
}
