/* SPDX-License-Identifier: Apache-2.0 */
/* Method dispatch and capability discovery (see methods.h). */
#include "glove/server/methods.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"

#include "glove/refinement/common.h"
#include "glove/remote/runtime.h"
#include "glove/runtime/runtime.h"
#include "glove/server/server.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/policy.h"
#include "glove/supervisor/policy_query.h"

enum need { NEED_NOTHING, NEED_RECEIPTS, NEED_POLICY, NEED_STORE, NEED_RUNTIME, NEED_EXPOSURES };

/* The connection of the request being dispatched (attach streams). */
static struct glove_server_conn *current_conn;

typedef json_t *(*handler_fn)(struct glove_server_components *c, const struct glove_protocol_request *req);

struct method {
        const char *name;
        enum need need;
        handler_fn fn;
        bool owner; /* an owner method: the owner role only, listed in "owner_methods" */
};

static json_t *error_response(const struct glove_protocol_request *req, const char *code, const char *message,
                              json_t *data) {
        return glove_protocol_response_error(req->id, code, message, data);
}

static json_t *from_error(const struct glove_protocol_request *req, const struct glove_error *e) {
        return error_response(req, e->code ? e->code : "internal", e->message, NULL);
}

static json_t *invalid_params(const struct glove_protocol_request *req, const struct glove_error *e) {
        return error_response(req, "invalid_params", e->message, json_pack("{s:s}", "reason", e->code));
}

/* ---- capabilities ---- */

static json_t *do_capabilities(struct glove_server_components *c, const struct glove_protocol_request *req) {
        static const char *const none[] = { NULL };
        struct glove_error e = { 0 };
        if (glove_json_check_keys(req->params, none, "$.params", &e) < 0)
                return invalid_params(req, &e);
        return glove_protocol_response_result(req->id, glove_server_capabilities(c));
}

/* ---- plans ---- */

static json_t *verdict_reasons(const struct glove_plan_verdict *v) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < v->n_reasons; i++)
                json_array_append_new(list, json_pack("{s:s,s:s}", "code", v->reasons[i].code, "path",
                                                      v->reasons[i].path));
        return list;
}

static int validate(struct glove_server_components *c, const char *plan, size_t len,
                    struct glove_plan_verdict *v, struct glove_error *e) {
        memset(v, 0, sizeof(*v));
        /* Exposure grants are judged by the registry at gloved's now
         * (spec session-policy.md, "Dynamic path exposures"). */
        return glove_supervisor_plan_validate_ex(c->policy, c->exposures, plan, len, c->now_ms(), v, e);
}

static const char *const validate_keys[] = { "plan", NULL };

static int get_plan(const json_t *params, const char **plan, size_t *len, struct glove_error *e) {
        json_t *p = json_object_get(params, "plan");
        int r = glove_json_get_string(params, "plan", "$.params", GLOVE_STORE_PLAN_MAX, plan, e);
        if (r == 0)
                *len = json_string_length(p);
        return r;
}

static json_t *do_validate_plan(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *plan;
        size_t len = 0;
        if (glove_json_check_keys(req->params, validate_keys, "$.params", &e) < 0 ||
            get_plan(req->params, &plan, &len, &e) < 0)
                return invalid_params(req, &e);
        struct glove_plan_verdict v;
        if (validate(c, plan, len, &v, &e) < 0)
                return from_error(req, &e);
        return glove_protocol_response_result(
                req->id, json_pack("{s:b,s:s,s:o,s:I,s:I}", "valid", v.valid, "plan_content_digest",
                                   v.plan_content_digest, "reasons", verdict_reasons(&v), "reasons_total",
                                   (json_int_t)v.n_reasons_total, "policy_revision",
                                   (json_int_t)glove_supervisor_policy_revision(c->policy)));
}

/* ---- sessions ---- */

static const char *const create_keys[] = { "controller_plan_digest", "idempotency_key", "plan", "session_id", NULL };

static json_t *session_summary(const struct glove_store_session *s) {
        return json_pack("{s:s,s:s,s:s,s:s,s:I}", "session_id", s->session_id, "state",
                         glove_store_session_state_name(s->state), "plan_content_digest", s->plan_content_digest,
                         "controller_plan_digest", s->controller_plan_digest, "created_at_ms",
                         (json_int_t)s->created_at_ms);
}

static json_t *do_create_session(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        struct glove_store_create q = { 0 };
        const char *plan;
        if (glove_json_check_keys(req->params, create_keys, "$.params", &e) < 0 ||
            glove_json_get_string(req->params, "session_id", "$.params", GLOVE_STORE_ID_MAX, &q.session_id, &e) < 0 ||
            glove_json_get_string(req->params, "idempotency_key", "$.params", GLOVE_STORE_ID_MAX,
                                  &q.idempotency_key, &e) < 0 ||
            glove_json_get_string(req->params, "controller_plan_digest", "$.params", 64, &q.controller_plan_digest,
                                  &e) < 0 ||
            get_plan(req->params, &plan, &q.plan_len, &e) < 0)
                return invalid_params(req, &e);
        q.plan = plan;
        q.now_ms = c->now_ms();
        const struct glove_store_session *s = NULL;
        bool replayed = false;
        char digest[65] = "";
        /* A retry (known key) or a reused session id is answered by the
         * store without validating the plan again: the retry returns the
         * original record even when the plan's expiry window has passed
         * since, and a conflict is a conflict whatever the plan says. */
        if (glove_store_find_key(c->store, q.idempotency_key) ||
            glove_store_find(c->store, q.session_id)) {
                uint8_t d[GLOVE_DIGEST_SHA256_LEN];
                if (glove_digest_sha256(plan, q.plan_len, d, &e) < 0)
                        return from_error(req, &e);
                glove_digest_hex_encode(d, sizeof(d), digest, sizeof(digest));
        } else {
                /* A new id: not one an earlier session's receipt or kept
                 * binding still names. */
                if (c->runtime && glove_runtime_id_reusable(c->runtime, q.session_id, &e) < 0)
                        return from_error(req, &e);
                struct glove_plan_verdict v;
                if (validate(c, plan, q.plan_len, &v, &e) < 0)
                        return from_error(req, &e);
                if (!v.valid)
                        return error_response(req, "plan.invalid", "the plan does not satisfy the session policy",
                                              json_pack("{s:s,s:o,s:I}", "plan_content_digest", v.plan_content_digest,
                                                        "reasons", verdict_reasons(&v), "reasons_total",
                                                        (json_int_t)v.n_reasons_total));
                snprintf(digest, sizeof(digest), "%s", v.plan_content_digest);
        }
        q.plan_content_digest = digest;
        if (glove_store_create(c->store, &q, &s, &replayed, &e) < 0)
                return from_error(req, &e);
        return glove_protocol_response_result(req->id, session_summary(s));
}

static const char *const status_keys[] = { "session_id", NULL };

static json_t *do_session_status(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        if (glove_json_check_keys(req->params, status_keys, "$.params", &e) < 0 ||
            glove_json_get_string(req->params, "session_id", "$.params", GLOVE_STORE_ID_MAX, &id, &e) < 0)
                return invalid_params(req, &e);
        const struct glove_store_session *s = glove_store_find(c->store, id);
        if (!s)
                return error_response(req, "session.not_found",
                                      "no such session (a session that ended, was cleaned up and whose terminal "
                                      "receipt was acknowledged leaves the store at its next compaction; the "
                                      "receipt archive keeps its record)",
                                      json_pack("{s:s}", "session_id", id));
        json_t *r = session_summary(s);
        json_t *hist = json_array();
        for (size_t i = 0; hist && i < s->n_history; i++) {
                const struct glove_store_session_transition *t = &s->history[i];
                json_array_append_new(hist, json_pack("{s:s,s:s,s:I,s:s,s:I}", "from",
                                                      glove_store_session_state_name(t->from), "to",
                                                      glove_store_session_state_name(t->to), "at_ms",
                                                      (json_int_t)t->at_ms, "reason", t->reason, "sequence",
                                                      (json_int_t)t->seq));
        }
        if (r && hist) {
                json_object_set_new(r, "history", hist);
                json_object_set_new(r, "idempotency_key", json_string(s->idempotency_key));
        } else {
                json_decref(hist);
        }
        return glove_protocol_response_result(req->id, r);
}

/* ---- receipts ---- */

static const char *const page_keys[] = { "after_sequence", "limit", NULL };
static const char *const ack_keys[] = { "head_mac", "sequence", NULL };

static json_t *do_receipts_page(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        int64_t after, limit;
        json_t *page = NULL;
        if (glove_json_check_keys(req->params, page_keys, "$.params", &e) < 0 ||
            glove_json_get_int(req->params, "after_sequence", "$.params", 0, INT64_MAX, &after, &e) < 0 ||
            glove_json_get_int(req->params, "limit", "$.params", 1, GLOVE_STORE_RECEIPTS_PAGE_MAX, &limit, &e) < 0)
                return invalid_params(req, &e);
        if (glove_store_receipts_page(c->receipts, (uint64_t)after, (uint64_t)limit, &page, &e) < 0)
                return from_error(req, &e);
        return glove_protocol_response_result(req->id, page);
}

static json_t *do_receipts_ack(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        int64_t seq;
        const char *mac;
        if (glove_json_check_keys(req->params, ack_keys, "$.params", &e) < 0 ||
            glove_json_get_int(req->params, "sequence", "$.params", 0, INT64_MAX, &seq, &e) < 0 ||
            glove_json_get_string(req->params, "head_mac", "$.params", 64, &mac, &e) < 0)
                return invalid_params(req, &e);
        if (glove_store_receipts_ack(c->receipts, (uint64_t)seq, mac, &e) < 0)
                return from_error(req, &e);
        return glove_protocol_response_result(req->id, json_pack("{s:I}", "acknowledged_sequence", (json_int_t)seq));
}

/* ---- managed sessions ---- */

static const char *const id_keys[] = { "session_id", NULL };
static const char *const stdin_keys[] = { "data_b64", "session_id", NULL };
static const char *const resize_keys[] = { "cols", "rows", "session_id", NULL };
static const char *const signal_keys[] = { "session_id", "signal", NULL };
static const char *const stop_keys[] = { "grace_ms", "session_id", NULL };

static json_t *answer(const struct glove_protocol_request *req, int r, json_t *result, const struct glove_error *e) {
        if (r < 0) {
                json_decref(result);
                return from_error(req, e);
        }
        return glove_protocol_response_result(req->id, result);
}

static int get_id(const struct glove_protocol_request *req, const char *const *keys, const char **id,
                  struct glove_error *e) {
        int r = glove_json_check_keys(req->params, keys, "$.params", e);
        if (r == 0)
                r = glove_json_get_string(req->params, "session_id", "$.params", GLOVE_STORE_ID_MAX, id, e);
        return r;
}

static json_t *do_start_session(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        json_t *res = NULL;
        if (get_id(req, id_keys, &id, &e) < 0)
                return invalid_params(req, &e);
        int r = glove_runtime_start(c->runtime, id, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_attach(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        json_t *res = NULL;
        if (get_id(req, id_keys, &id, &e) < 0)
                return invalid_params(req, &e);
        if (!current_conn)
                return error_response(req, "invalid_params", "attach needs a connection", NULL);
        int r = glove_runtime_attach(c->runtime, glove_server_conn_peer(current_conn), id, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_detach(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        json_t *res = NULL;
        if (get_id(req, id_keys, &id, &e) < 0)
                return invalid_params(req, &e);
        int r = glove_runtime_detach(c->runtime, glove_server_conn_peer(current_conn), id, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_write_stdin(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id, *text;
        json_t *res = NULL;
        if (get_id(req, stdin_keys, &id, &e) < 0 ||
            glove_json_get_string(req->params, "data_b64", "$.params", GLOVE_PROTOCOL_FRAME_MAX, &text, &e) < 0)
                return invalid_params(req, &e);
        _cleanup_free_ uint8_t *data = NULL;
        size_t n = 0;
        size_t tl = json_string_length(json_object_get(req->params, "data_b64"));
        int r = glove_base64_decode(text, tl, GLOVE_RUNTIME_STDIN_MAX, &data, &n);
        if (r == -EMSGSIZE)
                return error_response(req, "stdin.too_large", "write_stdin takes at most 65536 bytes per call",
                                      json_pack("{s:i}", "max_bytes", GLOVE_RUNTIME_STDIN_MAX));
        if (r < 0)
                return error_response(req, "invalid_params", "data_b64 is not base64",
                                      json_pack("{s:s}", "reason", "json.invalid_base64"));
        r = glove_runtime_write_stdin(c->runtime, id, data, n, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_resize(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        int64_t rows, cols;
        json_t *res = NULL;
        if (get_id(req, resize_keys, &id, &e) < 0 ||
            glove_json_get_int(req->params, "rows", "$.params", 1, GLOVE_RUNTIME_WINSIZE_MAX, &rows, &e) < 0 ||
            glove_json_get_int(req->params, "cols", "$.params", 1, GLOVE_RUNTIME_WINSIZE_MAX, &cols, &e) < 0)
                return invalid_params(req, &e);
        int r = glove_runtime_resize(c->runtime, id, (unsigned)rows, (unsigned)cols, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_signal(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id, *name;
        json_t *res = NULL;
        if (get_id(req, signal_keys, &id, &e) < 0 ||
            glove_json_get_string(req->params, "signal", "$.params", 16, &name, &e) < 0) {
                if (json_is_string(json_object_get(req->params, "signal")) && glove_json_check_keys(req->params, signal_keys, "$.params", &e) == 0)
                        return error_response(req, "signal.unknown", "unknown signal name", NULL);
                return invalid_params(req, &e);
        }
        int r = glove_runtime_signal(c->runtime, id, name, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_stop_session(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        int64_t grace = GLOVE_RUNTIME_GRACE_DEFAULT_MS;
        json_t *res = NULL;
        if (get_id(req, stop_keys, &id, &e) < 0 ||
            (json_object_get(req->params, "grace_ms") &&
             glove_json_get_int(req->params, "grace_ms", "$.params", 0, GLOVE_KEEPER_GRACE_MAX_MS, &grace, &e) < 0))
                return invalid_params(req, &e);
        int r = glove_runtime_stop(c->runtime, id, (uint64_t)grace, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_cleanup_session(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        json_t *res = NULL;
        if (get_id(req, id_keys, &id, &e) < 0)
                return invalid_params(req, &e);
        int r = glove_runtime_cleanup(c->runtime, id, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_retained_changes(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id;
        json_t *res = NULL;
        if (get_id(req, id_keys, &id, &e) < 0)
                return invalid_params(req, &e);
        int r = glove_runtime_retained_changes(c->runtime, id, &res, &e);
        return answer(req, r, res, &e);
}

/* #28: a page of a session's guest-channel admission queue
 * (docs/control-protocol.md, "guest_queue"). */
static json_t *do_guest_queue(struct glove_server_components *c, const struct glove_protocol_request *req) {
        static const char *const keys[] = { "after_seq", "limit", "session_id", NULL };
        struct glove_error e = { 0 };
        const char *id;
        int64_t after = 0, limit = 50;
        json_t *res = NULL;
        if (get_id(req, keys, &id, &e) < 0 ||
            (json_object_get(req->params, "after_seq") &&
             glove_json_get_int(req->params, "after_seq", "$.params", 0, INT64_MAX, &after, &e) < 0) ||
            (json_object_get(req->params, "limit") &&
             glove_json_get_int(req->params, "limit", "$.params", 1, 100, &limit, &e) < 0))
                return invalid_params(req, &e);
        int r = glove_runtime_guest_queue(c->runtime, id, (uint64_t)after, (uint32_t)limit, &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_list_sessions(struct glove_server_components *c, const struct glove_protocol_request *req) {
        static const char *const none[] = { NULL };
        struct glove_error e = { 0 };
        if (glove_json_check_keys(req->params, none, "$.params", &e) < 0)
                return invalid_params(req, &e);
        return glove_protocol_response_result(req->id, glove_runtime_list(c->store));
}

/* ---- path exposures (glove/supervisor/exposure.h) ---- */

/* Bounds of the exposure methods' parameters; values within them that the
 * registry refuses answer its exposure.* codes (a label over
 * GLOVE_EXPOSURE_LABEL_MAX bytes is exposure.invalid_label, a ttl_secs over
 * the root's max_ttl_secs exposure.ttl_exceeded). */
#define EXPOSURE_PATH_MAX (PATH_MAX - 1)
#define EXPOSURE_LABEL_PARAM_MAX 4096
#define EXPOSURE_TTL_PARAM_MAX INT32_MAX
#define EXPOSURE_NAME_MAX 128
#define EXPOSURE_ID_PARAM_MAX 128

static const char *const none_keys[] = { NULL };
static const char *const exposure_create_keys[] = { "label", "modes", "path", "runtime_template_ids", "ttl_secs", NULL };
static const char *const exposure_revoke_keys[] = { "exposure_id", "generation", NULL };

/* An optional string member without NUL bytes (absent: *out stays NULL). */
static int opt_string(const json_t *params, const char *key, size_t max, const char **out, struct glove_error *e) {
        if (!json_object_get(params, key))
                return 0;
        int r = glove_json_get_string(params, key, "$.params", max, out, e);
        if (r == 0 && strlen(*out) != json_string_length(json_object_get(params, key)))
                return glove_error_set(e, EINVAL, "json.embedded_nul", "$.params.%s holds a NUL character", key);
        return r;
}

/* The optional array of names params[key] as a NULL-terminated array whose
 * strings are borrowed from params (*out malloc'd; NULL when absent): 1 to
 * max_items distinct strings of 1 to EXPOSURE_NAME_MAX bytes each (a
 * repeated one is invalid_params, naming it and both indexes). */
static int opt_names(const json_t *params, const char *key, size_t max_items, const char ***out,
                     struct glove_error *e) {
        *out = NULL;
        if (!json_object_get(params, key))
                return 0;
        json_t *a;
        int r = glove_json_get_array(params, key, "$.params", max_items, &a, e);
        if (r < 0)
                return r;
        if (json_array_size(a) == 0)
                return glove_error_set(e, EINVAL, "json.out_of_range",
                                       "$.params.%s must name at least one item (leave it out for all the root allows)",
                                       key);
        const char **list = calloc(json_array_size(a) + 1, sizeof(*list));
        if (!list)
                return glove_error_set(e, ENOMEM, "json.no_memory", "out of memory");
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
                char path[GLOVE_JSON_PATH_MAX];
                snprintf(path, sizeof(path), "$.params.%s[%zu]", key, i);
                if ((r = glove_json_as_string(v, path, EXPOSURE_NAME_MAX, &list[i], e)) < 0) {
                        free(list);
                        return r;
                }
                if (list[i][0] == '\0' || strlen(list[i]) != json_string_length(v)) {
                        free(list);
                        return glove_error_set(e, EINVAL, "json.out_of_range", "%s must be a non-empty name", path);
                }
                for (size_t k = 0; k < i; k++)
                        if (strcmp(list[k], list[i]) == 0) {
                                glove_error_set(e, EINVAL, "json.duplicate_item", "%s repeats \"%s\" (also at [%zu])",
                                                path, list[i], k);
                                free(list);
                                return -EINVAL;
                        }
        }
        *out = list;
        return 0;
}

static json_t *do_exposure_catalog(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        if (glove_json_check_keys(req->params, none_keys, "$.params", &e) < 0)
                return invalid_params(req, &e);
        json_t *cat = glove_exposures_catalog(c->exposures, c->now_ms());
        if (!cat)
                return error_response(req, "exposure.no_memory", "out of memory", NULL);
        return glove_protocol_response_result(req->id, cat);
}

static json_t *do_exposure_list(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        if (glove_json_check_keys(req->params, none_keys, "$.params", &e) < 0)
                return invalid_params(req, &e);
        json_t *list = glove_exposures_list(c->exposures, c->now_ms());
        if (!list)
                return error_response(req, "exposure.no_memory", "out of memory", NULL);
        return glove_protocol_response_result(req->id, list);
}

static json_t *do_exposure_create(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        struct glove_exposure_request q = { 0 };
        _cleanup_free_ const char **modes = NULL, **runtimes = NULL;
        if (glove_json_check_keys(req->params, exposure_create_keys, "$.params", &e) < 0 ||
            glove_json_get_string(req->params, "path", "$.params", EXPOSURE_PATH_MAX, &q.path, &e) < 0 ||
            (strlen(q.path) != json_string_length(json_object_get(req->params, "path")) &&
             glove_error_set(&e, EINVAL, "json.embedded_nul", "$.params.path holds a NUL character") < 0) ||
            opt_string(req->params, "label", EXPOSURE_LABEL_PARAM_MAX, &q.label, &e) < 0 ||
            (json_object_get(req->params, "ttl_secs") &&
             glove_json_get_int(req->params, "ttl_secs", "$.params", 1, EXPOSURE_TTL_PARAM_MAX, &q.ttl_secs, &e) < 0) ||
            opt_names(req->params, "modes", GLOVE_EXPOSURE_MAX_MODES, &modes, &e) < 0 ||
            opt_names(req->params, "runtime_template_ids", GLOVE_EXPOSURE_MAX_RUNTIMES, &runtimes, &e) < 0)
                return invalid_params(req, &e);
        q.modes = modes;
        q.runtime_template_ids = runtimes;
        json_t *res = NULL;
        int r = glove_exposures_create(c->exposures, &q, c->now_ms(), &res, &e);
        return answer(req, r, res, &e);
}

static json_t *do_exposure_revoke(struct glove_server_components *c, const struct glove_protocol_request *req) {
        struct glove_error e = { 0 };
        const char *id = NULL;
        int64_t gen = 0;
        if (glove_json_check_keys(req->params, exposure_revoke_keys, "$.params", &e) < 0 ||
            (json_is_string(json_object_get(req->params, "exposure_id")) &&
             opt_string(req->params, "exposure_id", EXPOSURE_ID_PARAM_MAX, &id, &e) < 0) ||
            glove_json_get_string(req->params, "exposure_id", "$.params", EXPOSURE_ID_PARAM_MAX, &id, &e) < 0 ||
            (json_object_get(req->params, "generation") &&
             glove_json_get_int(req->params, "generation", "$.params", 1, INT64_MAX, &gen, &e) < 0))
                return invalid_params(req, &e);
        json_t *res = NULL;
        int r = glove_exposures_revoke(c->exposures, id, gen, c->now_ms(), &res, &e);
        if (r == 0 && !res)
                res = json_object();
        return answer(req, r, res, &e);
}

static json_t *do_authenticate(struct glove_server_components *c, const struct glove_protocol_request *req) {
        (void)c;
        return error_response(req, "auth.already_authenticated", "this connection is already authenticated", NULL);
}

static const struct method methods[] = {
        { "authenticate", NEED_NOTHING, do_authenticate, false },
        { "capabilities", NEED_NOTHING, do_capabilities, false },
        { "receipts_page", NEED_RECEIPTS, do_receipts_page, false },
        { "receipts_ack", NEED_RECEIPTS, do_receipts_ack, false },
        { "validate_plan", NEED_POLICY, do_validate_plan, false },
        { "create_session", NEED_STORE, do_create_session, false },
        { "session_status", NEED_STORE, do_session_status, false },
        { "list_sessions", NEED_STORE, do_list_sessions, false },
        { "start_session", NEED_RUNTIME, do_start_session, false },
        { "attach", NEED_RUNTIME, do_attach, false },
        { "detach", NEED_RUNTIME, do_detach, false },
        { "write_stdin", NEED_RUNTIME, do_write_stdin, false },
        { "resize", NEED_RUNTIME, do_resize, false },
        { "signal", NEED_RUNTIME, do_signal, false },
        { "stop_session", NEED_RUNTIME, do_stop_session, false },
        { "cleanup_session", NEED_RUNTIME, do_cleanup_session, false },
        { "retained_changes", NEED_RUNTIME, do_retained_changes, false },
        { "guest_queue", NEED_RUNTIME, do_guest_queue, false },
        /* Sorted: "owner_methods" lists the owner ones in this order. */
        { "exposure_catalog", NEED_EXPOSURES, do_exposure_catalog, false },
        { "exposure_create", NEED_EXPOSURES, do_exposure_create, true },
        { "exposure_list", NEED_EXPOSURES, do_exposure_list, true },
        { "exposure_revoke", NEED_EXPOSURES, do_exposure_revoke, true },
};

static bool available(const struct glove_server_components *c, const struct method *m) {
        switch (m->need) {
        case NEED_NOTHING:
                return true;
        case NEED_RECEIPTS:
                return c->receipts != NULL;
        case NEED_POLICY:
                return c->policy != NULL;
        case NEED_STORE:
                return c->policy != NULL && c->store != NULL;
        case NEED_RUNTIME:
                /* The remote runtime exists, but it is construction only
                 * (glove_remote_runtime_lifecycle_operational is false), and
                 * these handlers drive the local managed runtime, never a
                 * remote one: unadvertised whatever else is constructed. */
                if (c->remote)
                        return false;
                return c->policy != NULL && c->store != NULL && glove_runtime_operational(c->runtime);
        case NEED_EXPOSURES:
                return c->exposures != NULL;
        }
        return false;
}

/* Why m is not available, into buf (size bytes): the gloved options it was
 * started without, or why the managed runtime is not operational; returns
 * the data.reason word ("option_missing", "runtime_not_operational",
 * "no_receipts"). Only for a method that is not available. */
static const char *unavailable_why(const struct glove_server_components *c, enum need need, char *buf, size_t size) {
        if (need == NEED_RECEIPTS) {
                snprintf(buf, size, "gloved has no receipt journal");
                return "no_receipts";
        }
        if (need == NEED_RUNTIME && c->remote) {
                snprintf(buf, size, "%s", GLOVE_REMOTE_NOT_OPERATIONAL_WHY);
                return GLOVE_REMOTE_NOT_OPERATIONAL_REASON;
        }
        if (need == NEED_EXPOSURES) {
                snprintf(buf, size, "gloved was started without --path-exposure-policy FILE and "
                                    "--path-exposure-journal FILE");
                return "option_missing";
        }
        const char *missing[3];
        size_t n = 0;
        if (!c->policy)
                missing[n++] = "--session-policy FILE";
        if (need >= NEED_STORE && !c->store)
                missing[n++] = "--session-store FILE";
        if (need == NEED_RUNTIME && !c->runtime)
                missing[n++] = "--materialization-root DIR";
        if (n == 0) {
                snprintf(buf, size, "managed sessions are not operational: %s",
                         c->runtime ? glove_runtime_why(c->runtime) : "no managed runtime");
                return "runtime_not_operational";
        }
        int used = snprintf(buf, size, "gloved was started without ");
        for (size_t i = 0; i < n && used >= 0 && (size_t)used < size; i++)
                used += snprintf(buf + used, size - (size_t)used, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                                 missing[i]);
        return "option_missing";
}

bool glove_server_method_advertised(const struct glove_server_components *c, const char *method) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(methods); i++)
                if (strcmp(methods[i].name, method) == 0)
                        return available(c, &methods[i]);
        return false;
}

json_t *glove_server_capabilities(const struct glove_server_components *c) {
        json_t *names = json_array(), *owner = json_array();
        for (size_t i = 0; names && owner && i < GLOVE_ELEMENTSOF(methods); i++)
                if (available(c, &methods[i]))
                        json_array_append_new(methods[i].owner ? owner : names, json_string(methods[i].name));
        if (!owner) {
                json_decref(names);
                return NULL;
        }
        bool plans = glove_server_method_advertised(c, "validate_plan");
        bool store = glove_server_method_advertised(c, "create_session");
        json_t *revision = json_null();
        bool lifecycle = glove_server_method_advertised(c, "start_session");
        json_t *runtimes = NULL, *mech = NULL, *missing = NULL;
        const char *placement = NULL; /* null without a managed runtime */
        if (c->policy)
                revision = json_integer(glove_supervisor_policy_revision(c->policy));
        if (lifecycle)
                runtimes = glove_supervisor_policy_managed_runtime_ids(c->policy);
        if (c->runtime) {
                mech = glove_runtime_mechanisms(c->runtime);
                missing = glove_runtime_mechanisms_missing(c->runtime);
                placement = glove_runtime_cgroup_placement(c->runtime);
        }
        char why[GLOVE_SERVER_WHY_MAX];
        const char *gc_why = "";
        if (!lifecycle)
                (void)unavailable_why(c, NEED_RUNTIME, why, sizeof(why));
        json_t *caps = json_pack("{s:i,s:b,s:o,s:o,s:o,s:o,s:i,s:i,s:i,s:o,s:o,s:s,s:i,s:s}",
                         /* 1 exactly when the Linux managed runtime is
                          * active: adapter runtimes then get their private
                          * home, managed environment and pinned executable
                          * (docs/session-policy.md, "Native adapters"). */
                         "agent_runtime_adapter_schema_version", lifecycle ? GLOVE_SERVER_ADAPTER_SCHEMA_VERSION : 0,
                         "lifecycle_operational", lifecycle,
                         "managed_runtime_ids", runtimes ? runtimes : json_array(), "methods", names,
                         "plan_schema_versions",
                         plans ? json_pack("[i]", GLOVE_SERVER_PLAN_SCHEMA_VERSION) : json_array(),
                         "policy_revision", revision, "protocol_version", GLOVE_SERVER_PROTOCOL_VERSION,
                         "receipt_schema_version", c->receipts ? GLOVE_STORE_RECEIPT_SCHEMA_VERSION : 0,
                         /* 1 exactly when the Linux managed runtime and the
                          * protected library-bundle store are both
                          * constructed (spec session-policy.md, "Capability
                          * activation"; docs/refinement.md). */
                         "refinement_evaluation_protocol_schema_version",
                         lifecycle && c->library_bundle_root ? GLOVE_REFINEMENT_PROTOCOL_SCHEMA_VERSION : 0,
                         "resource_mechanisms",
                         mech ? mech : json_array(), "resource_mechanisms_missing", missing ? missing : json_array(),
                         "service", "gloved", "session_store_schema_version",
                         store ? GLOVE_STORE_SCHEMA_VERSION : 0, "version", GLOVE_VERSION);
        if (caps && (json_object_set_new(caps, "library_bundle_root", json_boolean(lifecycle && c->library_bundle_root)) < 0 ||
                     json_object_set_new(caps, "cgroup_placement", placement ? json_string(placement) : json_null()) < 0 ||
                     json_object_set_new(caps, "lifecycle_reason", lifecycle ? json_null() : json_string(why)) < 0 ||
                     /* Apply is owner-local only (glove apply; spec
                      * session-policy.md: apply schema version 0, apply
                      * operations refused over this socket). */
                     json_object_set_new(caps, "apply_schema_version", json_integer(0)) < 0 ||
                     /* #28: sealed, never inferred from what a registry
                      * holds (docs/guest-channels.md, "Capability"). */
                     json_object_set_new(caps, "guest_channel_schema_version",
                                         json_integer(lifecycle ? glove_runtime_guest_channel_version(c->runtime, &gc_why)
                                                                : 0)) < 0 ||
                     json_object_set_new(caps, "guest_channel_reason",
                                         lifecycle && !gc_why[0] ? json_null()
                                                                 : json_string(lifecycle ? gc_why
                                                                                         : "channel.capability_runtime")) < 0 ||
                     json_object_set_new(caps, "local_services",
                                         c->runtime ? glove_runtime_local_services(c->runtime) ?: json_null()
                                                    : json_null()) < 0 ||
                     json_object_set_new(caps, "path_exposure_schema_version",
                                         json_integer(c->exposures ? GLOVE_EXPOSURE_SCHEMA_VERSION : 0)) < 0 ||
                     json_object_set_new(caps, "remote_backend",
                                         c->remote ? glove_remote_runtime_capabilities(c->remote) : json_null()) < 0 ||
                     json_object_set(caps, "owner_methods", owner) < 0)) {
                json_decref(owner);
                json_decref(caps);
                return NULL;
        }
        json_decref(owner);
        return caps;
}

json_t *glove_server_dispatch_conn(struct glove_server_components *c, struct glove_server_conn *conn,
                                    const struct glove_protocol_request *req) {
        return glove_server_dispatch_role(c, conn, GLOVE_SERVER_ROLE_CONTROLLER, req);
}

json_t *glove_server_dispatch(struct glove_server_components *c, const struct glove_protocol_request *req) {
        return glove_server_dispatch_role(c, NULL, GLOVE_SERVER_ROLE_CONTROLLER, req);
}

static json_t *dispatch(struct glove_server_components *c, enum glove_server_role role,
                        const struct glove_protocol_request *req) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(methods); i++) {
                if (strcmp(methods[i].name, req->method) != 0)
                        continue;
                if (available(c, &methods[i]) && methods[i].owner && role != GLOVE_SERVER_ROLE_OWNER)
                        return error_response(req, "auth.owner_required",
                                              "this method is the owner's: authenticate with RUNTIME/owner-secret "
                                              "(only the owner's tools, e.g. glove init, use it; a controller's "
                                              "bootstrap secret may read exposure_catalog only)",
                                              json_pack("{s:s}", "method", req->method));
                if (available(c, &methods[i]))
                        return methods[i].fn(c, req);
                /* A method of this service that was not constructed: say why. */
                char why[GLOVE_SERVER_WHY_MAX], message[GLOVE_SERVER_WHY_MAX + 128];
                const char *reason = unavailable_why(c, methods[i].need, why, sizeof(why));
                snprintf(message, sizeof(message), "%s is not advertised by this service: %s", methods[i].name, why);
                return error_response(req, "method_not_found", message,
                                      json_pack("{s:s,s:s,s:s}", "method", req->method, "reason", reason, "detail",
                                                why));
        }
        return error_response(req, "method_not_found", "the method is not advertised by this service",
                              json_pack("{s:s}", "method", req->method));
}

json_t *glove_server_dispatch_role(struct glove_server_components *c, struct glove_server_conn *conn,
                                    enum glove_server_role role, const struct glove_protocol_request *req) {
        current_conn = conn;
        json_t *r = dispatch(c, role, req);
        current_conn = NULL;
        return r;
}
