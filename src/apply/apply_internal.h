/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to src/apply: the source side (source.c) shared by the
 * transaction (apply.c) and recovery (recover.c). */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/apply/apply.h"
#include "glove/supervisor/manifest.h"

/* The source's parent, reopened by descriptor, and the source's name in it. */
struct ap_parent {
        int fd; /* O_PATH|O_DIRECTORY, owned; -1 */
        char name[256];
};

/* Reopens the parent recorded in a baseline's "source" object: an alias's
 * by its path, without following links, required to be the recorded
 * parent (dev, ino; else apply.stale_baseline); an exposure's through
 * glove_exposures_recover_parent. apply.no_source for a null source,
 * apply.source_missing, apply.exposures_unavailable, exposure.*. */
int ap_open_parent(const struct glove_apply_context *c, const json_t *source, struct ap_parent *out,
                   struct glove_error *err);
void ap_parent_close(struct ap_parent *p);

/* The directory entry name of parent_fd, not followed: its identity, or
 * false when it is absent or not a directory. */
bool ap_entry(int parent_fd, const char *name, uint64_t *dev, uint64_t *ino);

/* The stale-baseline check: p's entry is still the recorded source object
 * (source "dev", "ino") and its manifest digest is recorded's, and the
 * source as it is now holds nothing an exchange would lose
 * (glove_manifest_check_carried for this process's uid and gid).
 * apply.stale_baseline, apply.source_missing, apply.source_unsupported. */
int ap_check_baseline(const struct ap_parent *p, const json_t *source, const struct glove_manifest *recorded,
                      struct glove_error *err);

/* The space check of the staged tree on parent_fd's file system. apply.no_space. */
int ap_check_space(int parent_fd, const struct glove_manifest *stage, struct glove_error *err);

/* The candidate's entry name of a transaction: ".glove-apply-" TXID[0..16). */
void ap_candidate_name(const char *txid, char out[64]);

/* The receipt of transaction tx ending with outcome and code (NULL when
 * applied). New reference, NULL when out of memory. */
json_t *ap_receipt(const struct glove_apply_tx *tx, const char *outcome, const char *code, int64_t at_ms);

/* Ends transaction tx: a "terminal" record with its receipt. */
int ap_terminal(const struct glove_apply_context *c, const struct glove_apply_tx *tx, const char *outcome,
                const char *code, json_t **receipt_out, struct glove_error *err);

int64_t ap_now(const struct glove_apply_context *c);
