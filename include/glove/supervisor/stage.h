/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A retained grant's frozen stage, opened for reading (issue 30;
 * docs/retained-changes.md; spec session-policy.md: "Retained changes are
 * staged and inspected separately from host mutation"): the baseline file
 * prepare wrote (ROOT/images/SESSION/NAME.baseline.json) and the image
 * itself, attached to a read-only loop device and mounted read-only
 * (nosuid, nodev, noexec, noload: a journal left by a crash is not
 * replayed) as a detached mount (fsopen/fsmount): it is in no mount
 * namespace, needs no mount point, and goes with its last descriptor (the
 * loop device with it, autoclear). Nothing is ever mounted writable and the
 * source is never touched.
 */

#include <stdint.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/supervisor/manifest.h"

struct glove_supervisor_stage {
        json_t *baseline;                   /* the baseline file (owned): schema glove.retained-baseline.v1 */
        struct glove_manifest *at_start;    /* the stage's manifest when the agent started (owned) */
        struct glove_manifest *source;      /* the source's manifest before the copy (owned); NULL: no source */
        int fd;                             /* O_RDONLY|O_DIRECTORY of the stage's root, or -1 */
        uint64_t image_ino, image_size;     /* the image file, as recorded */
};

/*
 * Opens the stage of grant (alias or exposure id) of session beneath the
 * materialization root root_fd: reads and checks the baseline file
 * (regular, one link, owner-only, at most 64 MiB, schema, session and grant
 * as named, both manifests valid: retained.baseline_invalid), refuses an
 * image still mounted writable (the session is running, or its keeper has
 * not let go: retained.in_use, -EBUSY), opens the image read-only and
 * requires the recorded inode and at most the recorded size
 * (retained.image_changed), and mounts it as above (retained.mount, -errno).
 * With mount false only the baseline is read (fd -1). Codes also
 * retained.no_stage (-ENOENT: no baseline for that session and grant, e.g.
 * a stage made before issue 30 or already cleaned up), retained.no_memory.
 * *out owned by the caller (glove_supervisor_stage_close).
 */
int glove_supervisor_stage_open(int root_fd, const char *session, const char *grant, bool mount,
                                struct glove_supervisor_stage **out, struct glove_error *err);

void glove_supervisor_stage_close(struct glove_supervisor_stage *s);

/*
 * What changed in an opened stage (mount true) since the agent started:
 * builds the stage's manifest now (*now, owned; bounded by the image size)
 * and its difference from s->at_start (*changes, glove_manifest_diff's
 * object). The manifest walker's codes.
 */
int glove_supervisor_stage_changes(const struct glove_supervisor_stage *s, struct glove_manifest **now,
                                   json_t **changes, struct glove_error *err);

struct glove_supervisor_runtime_config;

/*
 * Inspection of every retained grant of a stored plan (the session must have
 * ended; the caller checks): for each, in plan order,
 *   {"grant":NAME,"baseline":{"source_manifest_digest":HEX|null,
 *    "stage_manifest_digest":HEX},"stage_manifest_digest":HEX (now),
 *    "changes":DIFF,"apply_refusal":null|{"code","message"}}
 * (apply_refusal: what glove_manifest_check_apply says of the stage now,
 * with its root's owner)
 * where DIFF is glove_manifest_diff's object plus "counts" ({"added",
 * "removed","modified","mode_changed"}: every list's full length) and
 * "truncated": each grant's lists hold, in that order, only the entries
 * whose compact JSON fits in its share of 512 KiB (split evenly between
 * the retained grants), so that the result
 * fits one control frame whatever the agent left (glove apply --changes
 * lists every entry, owner-local);
 * or, for a grant whose stage cannot be opened,
 *   {"grant":NAME,"error":{"code","message"}}
 * in *result = {"session_id","grants":[...]} (owned). Grants other than
 * retained_write are not listed. Errors: launch.invalid_plan, retained.no_memory.
 */
int glove_supervisor_retained_changes(const struct glove_supervisor_runtime_config *cfg, const char *session_id,
                                      const char *plan, size_t plan_len, json_t **result, struct glove_error *err);
