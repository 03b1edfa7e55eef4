/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What manifest.c shares with its unit test: the walker with its entry
 * bound as a parameter, so the bound can be proved on a small tree
 * (GLOVE_MANIFEST_ENTRIES_MAX is 100000 entries).
 */

#include <stddef.h>
#include <stdint.h>

#include "glove/supervisor/manifest.h"

/* As glove_manifest_build, with at most max_entries entries (the root
 * included; max_entries <= GLOVE_MANIFEST_ENTRIES_MAX). */
int glove_manifest_build_bounded(int dir_fd, uint64_t max_file_bytes, size_t max_entries,
                                 struct glove_manifest **out, struct glove_error *err);
