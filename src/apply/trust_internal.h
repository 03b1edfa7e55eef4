/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by trust.c and authorization.c (not a public contract). */

#include <stdbool.h>
#include <stddef.h>

/*
 * True when s is an identifier of glove/apply/trust.h: 1..max_len bytes of
 * [A-Za-z0-9._-]; with refuse_dots, also not "." or "..". s may be NULL
 * (false).
 */
bool glove_apply_identifier_valid(const char *s, size_t max_len, bool refuse_dots);
