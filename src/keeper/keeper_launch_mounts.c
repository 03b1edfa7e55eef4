/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper launch's mount entries (keeper_launch.c): the entries gloved's
 * add_mounts hook adds, recorded on an empty plan and written as JSON, and
 * replayed on the keeper's plan by the same glove_mount_plan_add_*
 * functions.
 */
#include "glove/keeper/keeper.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <jansson.h>
#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/container/mount_plan.h"
#include "glove/container/seccomp.h"
#include "glove/net/rule.h"
#include "keeper_internal.h"
#include "keeper_launch_internal.h"

/* An empty plan (no standard perimeter), as glove_mount_plan_new leaves its
 * data: offset 0 holds "". */
static struct glove_mount_plan *plan_empty(void) {
        struct glove_mount_plan *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->data = calloc(1, 4096);
        if (!p->data) {
                free(p);
                return NULL;
        }
        p->data_len = 1;
        p->data_cap = 4096;
        return p;
}

static void plan_freep(struct glove_mount_plan **p) {
        glove_mount_plan_free(*p);
}
#define _cleanup_plan_ __attribute__((cleanup(plan_freep)))

static const char *pstr(const struct glove_mount_plan *p, uint32_t off) {
        return glove_mount_plan_str(p, off);
}

/* "/" + a stored destination. */
static int abs_path(char *out, size_t cap, const char *rel) {
        return snprintf(out, cap, "/%s", rel) >= (int)cap ? -ENAMETOOLONG : 0;
}

/* One entry of the hook's as JSON; NULL with err set for a kind the
 * launch does not carry. */
static json_t *entry_json(const struct glove_mount_plan *p, const struct glove_mount_entry *e, struct glove_error *err) {
        char dest[GLOVE_PATH_MAX + 2];
        if (abs_path(dest, sizeof(dest), pstr(p, e->dest)) < 0) {
                glove_error_set(err, ENAMETOOLONG, "keeper.launch", "a mount destination is too long");
                return NULL;
        }
        json_t *o = json_object();
        int bad = !o;
        if (bad)
                goto out;
        put(o, "dest", json_string(dest), &bad);
        switch (e->kind) {
        case GLOVE_MOUNT_BIND:
                if (!(e->flags & GLOVE_MOUNT_F_GRANT) || !e->name || !e->source)
                        goto unsupported;
                put(o, "kind", json_string("pinned_bind"), &bad);
                put(o, "source", json_string(pstr(p, e->source)), &bad);
                put(o, "dev", ju(e->dev), &bad);
                put(o, "ino", ju(e->ino), &bad);
                put(o, "is_dir", json_boolean(e->flags & GLOVE_MOUNT_F_DIR), &bad);
                put(o, "read_only", json_boolean(e->attrs & MOUNT_ATTR_RDONLY), &bad);
                put(o, "label", json_string(pstr(p, e->name)), &bad);
                put(o, "private", json_boolean(e->flags & GLOVE_MOUNT_F_PRIVATE), &bad);
                break;
        case GLOVE_MOUNT_TREE:
                put(o, "kind", json_string("tree"), &bad);
                put(o, "size", ju(e->size), &bad);
                put(o, "uid", ju(e->uid), &bad);
                put(o, "gid", ju(e->gid), &bad);
                put(o, "source", e->source ? json_string(pstr(p, e->source)) : json_null(), &bad);
                put(o, "dev", ju(e->dev), &bad);
                put(o, "ino", ju(e->ino), &bad);
                put(o, "label", e->name ? json_string(pstr(p, e->name)) : json_null(), &bad);
                put(o, "skip_links", json_boolean(e->flags & GLOVE_MOUNT_F_SKIP_LINKS), &bad);
                put(o, "private", json_boolean(e->flags & GLOVE_MOUNT_F_PRIVATE), &bad);
                break;
        case GLOVE_MOUNT_DIR:
                put(o, "kind", json_string("dir"), &bad);
                put(o, "mode", ju(e->mode), &bad);
                put(o, "uid", ju(e->uid), &bad);
                put(o, "gid", ju(e->gid), &bad);
                break;
        case GLOVE_MOUNT_FILE: {
                put(o, "kind", json_string("file"), &bad);
                put(o, "mode", ju(e->mode), &bad);
                put(o, "owned", json_boolean(e->flags & GLOVE_MOUNT_F_OWNED), &bad);
                put(o, "uid", ju(e->uid), &bad);
                put(o, "gid", ju(e->gid), &bad);
                char *b64 = glove_base64_encode(p->data + e->bytes, e->bytes_len);
                put(o, "data", b64 ? json_string(b64) : NULL, &bad);
                free(b64);
                break;
        }
        case GLOVE_MOUNT_SYMLINK:
                put(o, "kind", json_string("symlink"), &bad);
                put(o, "target", json_string(pstr(p, e->source)), &bad);
                break;
        default:
                goto unsupported;
        }
out:
        if (bad) {
                json_decref(o);
                glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the mounts");
                return NULL;
        }
        return o;
unsupported:
        json_decref(o);
        glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported",
                        "mount entry kind %d at %s cannot be handed to a keeper", (int)e->kind, dest);
        return NULL;
}



/* Replays one entry (entry_json's) into plan through the public adders. */
int glove_keeper_launch_entry_replay(struct glove_mount_plan *plan, const json_t *o, struct glove_error *err) {
        const char *kind = jget_str(o, "kind"), *dest = jget_str(o, "dest");
        uint64_t dev = 0, ino = 0, size = 0, uid = 0, gid = 0, mode = 0;
        (void)jget_u64(o, "dev", &dev);
        (void)jget_u64(o, "ino", &ino);
        (void)jget_u64(o, "size", &size);
        (void)jget_u64(o, "uid", &uid);
        (void)jget_u64(o, "gid", &gid);
        (void)jget_u64(o, "mode", &mode);
        if (!kind || !dest)
                return glove_error_set(err, EINVAL, "keeper.launch_invalid", "a mount entry without kind or dest");
        bool private = json_is_true(json_object_get(o, "private"));
        if (strcmp(kind, "pinned_bind") == 0) {
                int r = glove_mount_plan_add_pinned_bind(plan, dest, jget_str(o, "source"), (dev_t)dev, (ino_t)ino,
                                                         json_is_true(json_object_get(o, "is_dir")),
                                                         json_is_true(json_object_get(o, "read_only")),
                                                         jget_str(o, "label"), err);
                if (r == 0 && private)
                        plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_PRIVATE;
                return r;
        }
        if (strcmp(kind, "tree") == 0) {
                int r = glove_mount_plan_add_tree(plan, dest, size, (uid_t)uid, (gid_t)gid, jget_str(o, "source"),
                                                  (dev_t)dev, (ino_t)ino, jget_str(o, "label"), err);
                if (r == 0 && json_is_true(json_object_get(o, "skip_links")))
                        plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_SKIP_LINKS;
                if (r == 0 && private)
                        plan->entries[plan->count - 1].flags |= GLOVE_MOUNT_F_PRIVATE;
                return r;
        }
        if (strcmp(kind, "dir") == 0)
                return glove_mount_plan_add_dir(plan, dest, (uint32_t)mode, (uid_t)uid, (gid_t)gid, err);
        if (strcmp(kind, "symlink") == 0) {
                const char *t = jget_str(o, "target");
                if (!t)
                        return glove_error_set(err, EINVAL, "keeper.launch_invalid", "a symlink without target");
                return glove_mount_plan_add_symlink(plan, dest, t, err);
        }
        if (strcmp(kind, "file") == 0) {
                const char *b64 = jget_str(o, "data");
                uint8_t *data = NULL;
                size_t n = 0;
                if (!b64 || glove_base64_decode(b64, strlen(b64), GLOVE_MOUNT_FILE_MAX, &data, &n) < 0)
                        return glove_error_set(err, EINVAL, "keeper.launch_invalid", "a file entry's data is not base64");
                int r = json_is_true(json_object_get(o, "owned"))
                                ? glove_mount_plan_add_owned_file(plan, dest, data, n, (uint32_t)mode, (uid_t)uid,
                                                                  (gid_t)gid, err)
                                : glove_mount_plan_add_file(plan, dest, data, n, (uint32_t)mode, err);
                free(data);
                return r;
        }
        return glove_error_set(err, EINVAL, "keeper.launch_invalid", "mount entry kind %s is unknown", kind);
}

/* Whether entries a[i] of pa and b[j] of pb are the same mount. */
static bool entry_same(const struct glove_mount_plan *pa, const struct glove_mount_entry *a,
                       const struct glove_mount_plan *pb, const struct glove_mount_entry *b) {
        if (a->kind != b->kind || a->flags != b->flags || a->attrs != b->attrs || a->size != b->size ||
            a->mode != b->mode || a->uid != b->uid || a->gid != b->gid || a->dev != b->dev || a->ino != b->ino ||
            a->bytes_len != b->bytes_len || (a->code == NULL) != (b->code == NULL) ||
            (a->code && strcmp(a->code, b->code) != 0) || (a->label == NULL) != (b->label == NULL) ||
            (a->label && strcmp(a->label, b->label) != 0))
                return false;
        const uint32_t oa[] = { a->dest, a->source, a->options, a->name }, ob[] = { b->dest, b->source, b->options, b->name };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(oa); i++)
                if ((oa[i] == 0) != (ob[i] == 0) || strcmp(pstr(pa, oa[i]), pstr(pb, ob[i])) != 0)
                        return false;
        return memcmp(pa->data + a->bytes, pb->data + b->bytes, a->bytes_len) == 0;
}

/* The hook's entries as a JSON array, checked by one replay. */
json_t *glove_keeper_launch_mounts_json(const struct glove_session_desc *d, json_t **cwd, struct glove_error *err) {
        *cwd = json_null();
        json_t *arr = json_array();
        if (!arr) {
                glove_error_set(err, ENOMEM, "keeper.launch", "out of memory");
                return NULL;
        }
        if (!d->add_mounts)
                return arr;
        _cleanup_plan_ struct glove_mount_plan *p = plan_empty();
        _cleanup_plan_ struct glove_mount_plan *q = plan_empty();
        if (!p || !q) {
                json_decref(arr);
                glove_error_set(err, ENOMEM, "keeper.launch", "out of memory");
                return NULL;
        }
        if (d->add_mounts(p, d->add_mounts_ctx, err) < 0) {
                json_decref(arr);
                return NULL;
        }
        for (size_t i = 0; i < p->count; i++) {
                json_t *o = entry_json(p, &p->entries[i], err);
                if (!o || json_array_append_new(arr, o) < 0 || glove_keeper_launch_entry_replay(q, o, err) < 0 || q->count != i + 1 ||
                    !entry_same(p, &p->entries[i], q, &q->entries[i])) {
                        json_decref(arr);
                        if (!glove_error_is_set(err))
                                glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported",
                                                "mount entry %zu (/%s) does not come back equal from its launch", i,
                                                pstr(p, p->entries[i].dest));
                        return NULL;
                }
        }
        if (p->cwd) {
                json_decref(*cwd);
                *cwd = json_string(pstr(p, p->cwd));
        }
        return arr;
}
