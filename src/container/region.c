/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/container/region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "internal.h"

void glove_mount_table_free(struct glove_mount_table *t) {
        free(t->text);
        free(t->rows);
        *t = (struct glove_mount_table){0};
}

/* Parses "MAJ:MIN" into *dev. */
void glove_mountinfo_unescape(char *s) {
        char *w = s;
        for (char *r = s; *r;) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else {
                        *w++ = *r++;
                }
        }
        *w = '\0';
}

static bool parse_devno(const char *s, dev_t *dev) {
        char *end;
        errno = 0;
        unsigned long maj = strtoul(s, &end, 10);
        if (errno || end == s || *end != ':')
                return false;
        const char *m = end + 1;
        unsigned long min = strtoul(m, &end, 10);
        if (errno || end == m || *end != '\0')
                return false;
        *dev = makedev(maj, min);
        return true;
}

int glove_mount_table_parse(struct glove_mount_table *t, char *text, struct glove_error *err) {
        *t = (struct glove_mount_table){.text = text};
        size_t cap = 0;
        char *save_line = NULL;
        for (char *line = strtok_r(text, "\n", &save_line); line; line = strtok_r(NULL, "\n", &save_line)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... */
                char *save = NULL, *field[5] = {0};
                char *tok = strtok_r(line, " ", &save);
                for (int i = 0; tok && i < 5; i++) {
                        field[i] = tok;
                        if (i < 4)
                                tok = strtok_r(NULL, " ", &save);
                }
                struct glove_mount_row row;
                if (!field[4] || !parse_devno(field[2], &row.dev) || field[3][0] != '/' || field[4][0] != '/') {
                        glove_mount_table_free(t);
                        return glove_error_set(err, EPROTO, "grant.mountinfo", "/proc/self/mountinfo: a malformed line");
                }
                glove_mountinfo_unescape(field[3]);
                glove_mountinfo_unescape(field[4]);
                row.root = field[3];
                row.point = field[4];
                if (t->count >= GLOVE_REGION_MOUNTS_MAX) {
                        glove_mount_table_free(t);
                        return glove_error_set(err, E2BIG, "grant.mountinfo",
                                               "/proc/self/mountinfo lists more than %d mounts; cannot tell what a "
                                               "grant reaches",
                                               GLOVE_REGION_MOUNTS_MAX);
                }
                if (t->count == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        struct glove_mount_row *n = realloc(t->rows, ncap * sizeof(*n));
                        if (!n) {
                                glove_mount_table_free(t);
                                return glove_error_set(err, ENOMEM, "grant.mountinfo", "out of memory");
                        }
                        t->rows = n;
                        cap = ncap;
                }
                t->rows[t->count++] = row;
        }
        return 0;
}

int glove_mount_table_read(struct glove_mount_table *t, struct glove_error *err) {
        *t = (struct glove_mount_table){0};
        char *text = NULL;
        size_t len = 0;
        struct glove_error rerr = {0};
        int r = glove_file_read_bounded(AT_FDCWD, "/proc/self/mountinfo", 0, GLOVE_REGION_MOUNTINFO_MAX, &text, &len,
                                        &rerr);
        if (r < 0)
                return glove_error_set(err, -r, "grant.mountinfo",
                                       "cannot read /proc/self/mountinfo (at most %d bytes) to tell what a grant "
                                       "reaches: %s",
                                       GLOVE_REGION_MOUNTINFO_MAX, rerr.message);
        return glove_mount_table_parse(t, text, err);
}

void glove_regions_free(struct glove_region *r, size_t n) {
        for (size_t i = 0; i < n && r; i++)
                free(r[i].path);
        free(r);
}

/* root joined with rest ("" or "/..."), into a new string. */
static char *join(const char *root, const char *rest) {
        size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
        size_t sl = strlen(rest);
        if (rl + sl + 2 > GLOVE_PATH_MAX * 2)
                return NULL;
        char *p = malloc(rl + sl + 2);
        if (!p)
                return NULL;
        memcpy(p, root, rl);
        memcpy(p + rl, rest, sl);
        p[rl + sl] = '\0';
        if (rl + sl == 0)
                strcpy(p, "/");
        return p;
}

int glove_mount_table_region(const struct glove_mount_table *t, const char *norm, struct glove_region *out,
                             struct glove_error *err) {
        const struct glove_mount_row *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < t->count; i++) {
                const struct glove_mount_row *m = &t->rows[i];
                if (!glove_path_is_beneath(norm, m->point))
                        continue;
                size_t l = strlen(m->point);
                if (!best || l >= best_len) {
                        best = m;
                        best_len = l;
                }
        }
        if (!best)
                return glove_error_set(err, ENOENT, "grant.mountinfo", "%s: no mount in /proc/self/mountinfo holds it",
                                       norm);
        const char *rest = strcmp(best->point, "/") == 0 ? norm : norm + best_len;
        if (strcmp(rest, "/") == 0)
                rest = "";
        out->dev = best->dev;
        out->path = join(best->root, rest);
        if (!out->path)
                return glove_error_set(err, ENOMEM, "grant.mountinfo", "%s: out of memory", norm);
        return 0;
}

int glove_mount_table_grant_regions(const struct glove_mount_table *t, const char *norm, struct glove_region **out,
                                    size_t *n, struct glove_error *err) {
        *out = NULL;
        *n = 0;
        size_t below = 0;
        for (size_t i = 0; i < t->count; i++)
                if (strcmp(t->rows[i].point, norm) != 0 && glove_path_is_beneath(t->rows[i].point, norm))
                        below++;
        struct glove_region *r = calloc(below + 1, sizeof(*r));
        if (!r)
                return glove_error_set(err, ENOMEM, "grant.mountinfo", "out of memory");
        int rc = glove_mount_table_region(t, norm, &r[0], err);
        if (rc < 0) {
                free(r);
                return rc;
        }
        size_t k = 1;
        for (size_t i = 0; i < t->count; i++) {
                const struct glove_mount_row *m = &t->rows[i];
                if (strcmp(m->point, norm) == 0 || !glove_path_is_beneath(m->point, norm))
                        continue;
                r[k].dev = m->dev;
                r[k].path = strdup(m->root);
                if (!r[k].path) {
                        glove_regions_free(r, k);
                        return glove_error_set(err, ENOMEM, "grant.mountinfo", "out of memory");
                }
                k++;
        }
        *out = r;
        *n = k;
        return 0;
}

bool glove_region_beneath(const struct glove_region *a, const struct glove_region *b) {
        return a->dev == b->dev && glove_path_is_beneath(a->path, b->path);
}

bool glove_region_overlaps(const struct glove_region *a, const struct glove_region *b) {
        return glove_region_beneath(a, b) || glove_region_beneath(b, a);
}
