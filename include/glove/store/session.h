/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The managed-session lifecycle state machine (spec session-policy.md,
 * "Durable identity"):
 *
 *   created → preparing → starting → running → stopping → exited
 *   └──────────────(any non-terminal state)───────────────→ failed
 *
 * exited and failed are terminal. A transition is allowed from a state to
 * its successor in the chain, or from any non-terminal state to failed.
 * Requesting the state a session is already in is idempotent (no record is
 * appended). Pure functions; the durable side is in store.h.
 *
 * Stable error codes:
 *   session.unknown_state       a name that is not one of the seven states
 *   session.invalid_transition  not the successor and not failed (-EINVAL)
 *   session.terminal            the session is exited or failed (-EINVAL)
 */

#include <stdbool.h>

#include "glove/base/error.h"

enum glove_store_session_state {
        GLOVE_STORE_SESSION_CREATED = 0,
        GLOVE_STORE_SESSION_PREPARING,
        GLOVE_STORE_SESSION_STARTING,
        GLOVE_STORE_SESSION_RUNNING,
        GLOVE_STORE_SESSION_STOPPING,
        GLOVE_STORE_SESSION_EXITED,
        GLOVE_STORE_SESSION_FAILED,
        GLOVE_STORE_SESSION_STATE_COUNT,
};

/* The state's name ("created", ...); "unknown" for an out-of-range value.
 * Static storage. */
const char *glove_store_session_state_name(enum glove_store_session_state s);

/*
 * Parses a state name (exact, lowercase) into *out. Returns 0, or -EINVAL
 * with session.unknown_state.
 */
int glove_store_session_state_parse(const char *name, enum glove_store_session_state *out,
                                      struct glove_error *err);

/* True for exited and failed. */
bool glove_store_session_state_terminal(enum glove_store_session_state s);

/*
 * Decides a requested transition from → to:
 *   returns 1   the transition is allowed and must be recorded;
 *   returns 0   to == from: idempotent, nothing to record;
 *   returns -EINVAL with session.terminal (from is terminal and to differs)
 *   or session.invalid_transition (anything else).
 */
int glove_store_session_transition_check(enum glove_store_session_state from,
                                           enum glove_store_session_state to, struct glove_error *err);
