/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/control/session.h"

#include <errno.h>
#include <string.h>

static const char *const names[GLOVE_CONTROL_SESSION_STATE_COUNT] = {
        [GLOVE_CONTROL_SESSION_CREATED] = "created",   [GLOVE_CONTROL_SESSION_PREPARING] = "preparing",
        [GLOVE_CONTROL_SESSION_STARTING] = "starting", [GLOVE_CONTROL_SESSION_RUNNING] = "running",
        [GLOVE_CONTROL_SESSION_STOPPING] = "stopping", [GLOVE_CONTROL_SESSION_EXITED] = "exited",
        [GLOVE_CONTROL_SESSION_FAILED] = "failed",
};

const char *glove_control_session_state_name(enum glove_control_session_state s) {
        if ((unsigned)s >= GLOVE_CONTROL_SESSION_STATE_COUNT)
                return "unknown";
        return names[s];
}

int glove_control_session_state_parse(const char *name, enum glove_control_session_state *out,
                                      struct glove_error *err) {
        for (unsigned i = 0; name && i < GLOVE_CONTROL_SESSION_STATE_COUNT; i++)
                if (strcmp(name, names[i]) == 0) {
                        *out = (enum glove_control_session_state)i;
                        return 0;
                }
        return glove_error_set(err, EINVAL, "session.unknown_state", "\"%.40s\" is not a session state",
                               name ? name : "(null)");
}

bool glove_control_session_state_terminal(enum glove_control_session_state s) {
        return s == GLOVE_CONTROL_SESSION_EXITED || s == GLOVE_CONTROL_SESSION_FAILED;
}

int glove_control_session_transition_check(enum glove_control_session_state from,
                                           enum glove_control_session_state to, struct glove_error *err) {
        if ((unsigned)from >= GLOVE_CONTROL_SESSION_STATE_COUNT || (unsigned)to >= GLOVE_CONTROL_SESSION_STATE_COUNT)
                return glove_error_set(err, EINVAL, "session.unknown_state", "state out of range");
        if (from == to)
                return 0;
        if (glove_control_session_state_terminal(from))
                return glove_error_set(err, EINVAL, "session.terminal", "the session is %s; it cannot become %s",
                                       names[from], names[to]);
        if (to == GLOVE_CONTROL_SESSION_FAILED || (unsigned)to == (unsigned)from + 1)
                return 1;
        return glove_error_set(err, EINVAL, "session.invalid_transition", "a %s session cannot become %s",
                               names[from], names[to]);
}
