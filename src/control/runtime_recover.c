/* SPDX-License-Identifier: Apache-2.0 */
/* Start-up recovery of sessions an earlier gloved left non-terminal (see
 * runtime.h, glove_control_runtime_recover). */
#include <errno.h>
#include <stdio.h>

#include "glove/base/cleanup.h"
#include "glove/control/runtime.h"
#include "glove/control/session.h"
#include "glove/control/store.h"
#include "glove/supervisor/prepare.h"

/* When the agent was released: the at_ms of the transition to running. */
static int64_t released_at(const struct glove_control_session *s) {
        for (size_t i = 0; i < s->n_history; i++)
                if (s->history[i].to == GLOVE_CONTROL_SESSION_RUNNING)
                        return s->history[i].at_ms;
        return -1;
}

/* Ends one session: host mounts released, receipt appended and synced, then
 * the failed transition. Returns 0 or -errno with err set. */
static int recover_one(const struct glove_control_runtime_options *o, const struct glove_control_session *s,
                       struct glove_error *err) {
        struct glove_error le = { 0 };
        if (o->config && glove_supervisor_release_leftovers(o->config, s->session_id, s->plan, s->plan_len, &le) < 0)
                fprintf(stderr, "gloved: session %s: leftover mounts: %s: %s\n", s->session_id, le.code, le.message);
        struct glove_control_receipt_facts f = {
                .session_id = s->session_id,
                .controller_plan_digest = s->controller_plan_digest,
                .plan_content_digest = s->plan_content_digest,
                .started_at_ms = released_at(s),
                .ended_at_ms = o->now_ms(),
                .termination = GLOVE_CONTROL_TERM_LOST,
                .code = "service.restarted",
                .exit_code = -1,
        };
        _cleanup_json_ json_t *receipt = glove_control_receipt_build(&f);
        if (!receipt)
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory building a receipt");
        int r = glove_control_receipts_append(o->receipts, "session.terminal", s->session_id, receipt, f.ended_at_ms,
                                              NULL, err);
        if (r < 0)
                return r;
        bool appended;
        return glove_control_store_transition(o->store, s->session_id, GLOVE_CONTROL_SESSION_FAILED,
                                              "service.restarted", f.ended_at_ms, &appended, err);
}

int glove_control_runtime_recover(const struct glove_control_runtime_options *o, size_t *recovered,
                                  struct glove_error *err) {
        *recovered = 0;
        if (!o || !o->store || !o->receipts || !o->now_ms)
                return glove_error_set(err, EINVAL, "runtime.invalid_argument", "a store and a receipt journal are needed");
        size_t n = glove_control_store_sessions(o->store);
        for (size_t i = 0; i < n; i++) {
                const struct glove_control_session *s = glove_control_store_at(o->store, i);
                if (!s || s->state == GLOVE_CONTROL_SESSION_CREATED || glove_control_session_state_terminal(s->state))
                        continue;
                int r = recover_one(o, s, err);
                if (r < 0) {
                        glove_error_prefix(err, "session %s", s->session_id);
                        return r;
                }
                (*recovered)++;
        }
        return 0;
}
