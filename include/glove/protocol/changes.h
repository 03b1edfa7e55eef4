/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The text form of a retained grant's changes (docs/retained-changes.md,
 * "Inspecting"), shared by `glove ctl changes` and `glove apply`, so the
 * owner reads the same lines from both.
 */

#include <stdio.h>

#include <jansson.h>

/* The order changes are listed and trimmed in: what happened to the
 * source's own entries (bounded by the source) before what the agent
 * added (unbounded). */
extern const char *const glove_changes_kinds[4];

/*
 * Writes one line per entry of changes' lists ({"removed","modified",
 * "mode_changed","added"}: arrays of the manifest difference, see
 * glove_manifest_diff) to out, in glove_changes_kinds order, each path
 * through glove_shown_name (docs/threat-model.md, "Terminal"):
 *   "  added        PATH[/] MODE[ (writable by anyone)]"  (/ for a directory)
 *   "  removed      PATH"
 *   "  modified     PATH"
 *   "  mode_changed PATH BEFORE -> AFTER[ (glove apply keeps the source root's mode)]"
 * Missing or mistyped members print as "?" or 0; nothing is allocated.
 */
void glove_changes_print_entries(FILE *out, const json_t *changes);
