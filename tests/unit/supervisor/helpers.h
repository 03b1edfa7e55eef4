/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Shared by the supervisor unit tests: fixture files and manifests. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name tests/fixtures/supervisor"
#endif

/* Plans in tests/fixtures/supervisor/plan are validated at this time
 * (generate.py's NOW_MS, 2026-01-01T00:00:00Z). */
#define FIXTURE_NOW_MS 1767225600000LL

/* Reads FIXTURE_DIR/rel into a malloc'd buffer (NUL-terminated, *len
 * excludes the NUL). Aborts the test on failure. */
static inline char *fixture_read(const char *rel, size_t *len) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, rel);
        FILE *f = fopen(path, "rb");
        if (!f) {
                fprintf(stderr, "cannot open fixture %s: %s\n", path, strerror(errno));
                abort();
        }
        size_t cap = 4096, n = 0;
        char *buf = malloc(cap);
        for (;;) {
                if (n + 1 >= cap)
                        buf = realloc(buf, cap *= 2);
                size_t k = fread(buf + n, 1, cap - n - 1, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        buf[n] = '\0';
        *len = n;
        return buf;
}

/* One manifest line split into words (modified in place). */
struct manifest_line {
        char *words[16];
        size_t n;
};

/* Reads FIXTURE_DIR/dir/MANIFEST; returns the number of entries, lines in
 * *out and the text they point into in *text (both malloc'd, caller frees). */
static inline size_t manifest_read(const char *dir, struct manifest_line **out, char **text_out) {
        char rel[256];
        size_t len;
        snprintf(rel, sizeof(rel), "%s/MANIFEST", dir);
        char *text = fixture_read(rel, &len);
        size_t n = 0, cap = 16;
        struct manifest_line *lines = calloc(cap, sizeof(*lines));
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                if (n == cap)
                        lines = realloc(lines, (cap *= 2) * sizeof(*lines));
                struct manifest_line *l = &lines[n++];
                l->n = 0;
                for (char *s2 = NULL, *w = strtok_r(line, " ", &s2); w && l->n < 16; w = strtok_r(NULL, " ", &s2))
                        l->words[l->n++] = w;
        }
        *out = lines;
        *text_out = text;
        return n;
}
