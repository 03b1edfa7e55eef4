/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/store/session.h"

#include <errno.h>
#include <string.h>

static const char *const names[GLOVE_STORE_SESSION_STATE_COUNT] = {
        [GLOVE_STORE_SESSION_CREATED] = "created",   [GLOVE_STORE_SESSION_PREPARING] = "preparing",
        [GLOVE_STORE_SESSION_STARTING] = "starting", [GLOVE_STORE_SESSION_RUNNING] = "running",
        [GLOVE_STORE_SESSION_STOPPING] = "stopping", [GLOVE_STORE_SESSION_EXITED] = "exited",
        [GLOVE_STORE_SESSION_FAILED] = "failed",
};

const char *glove_store_session_state_name(enum glove_store_session_state s) {
        if ((unsigned)s >= GLOVE_STORE_SESSION_STATE_COUNT)
                return "unknown";
        return names[s];
}

int glove_store_session_state_parse(const char *name, enum glove_store_session_state *out,
                                      struct glove_error *err) {
        for (unsigned i = 0; name && i < GLOVE_STORE_SESSION_STATE_COUNT; i++)
                if (strcmp(name, names[i]) == 0) {
                        *out = (enum glove_store_session_state)i;
                        return 0;
                }
        return glove_error_set(err, EINVAL, "session.unknown_state", "\"%.40s\" is not a session state",
                               name ? name : "(null)");
}

bool glove_store_session_state_terminal(enum glove_store_session_state s) {
        return s == GLOVE_STORE_SESSION_EXITED || s == GLOVE_STORE_SESSION_FAILED;
}

int glove_store_session_transition_check(enum glove_store_session_state from,
                                           enum glove_store_session_state to, struct glove_error *err) {
        if ((unsigned)from >= GLOVE_STORE_SESSION_STATE_COUNT || (unsigned)to >= GLOVE_STORE_SESSION_STATE_COUNT)
                return glove_error_set(err, EINVAL, "session.unknown_state", "state out of range");
        if (from == to)
                return 0;
        if (glove_store_session_state_terminal(from))
                return glove_error_set(err, EINVAL, "session.terminal", "the session is %s; it cannot become %s",
                                       names[from], names[to]);
        if (to == GLOVE_STORE_SESSION_FAILED || (unsigned)to == (unsigned)from + 1)
                return 1;
        return glove_error_set(err, EINVAL, "session.invalid_transition", "a %s session cannot become %s",
                               names[from], names[to]);
}
