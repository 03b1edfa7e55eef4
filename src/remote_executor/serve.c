/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/remote_executor/serve.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"

int glove_remote_executor_exit_status(const char *code) {
        if (!code)
                return GLOVE_REMOTE_EXECUTOR_EXIT_OK;
        if (strcmp(code, "executor.usage") == 0)
                return GLOVE_REMOTE_EXECUTOR_EXIT_USAGE;
        if (strncmp(code, "executor.identity_", 18) == 0 || strcmp(code, "executor.self_measure") == 0)
                return GLOVE_REMOTE_EXECUTOR_EXIT_IDENTITY;
        if (strncmp(code, "executor.frame_", 15) == 0 || strcmp(code, "executor.read_failed") == 0)
                return GLOVE_REMOTE_EXECUTOR_EXIT_FRAMING;
        if (strncmp(code, "executor.write_", 15) == 0)
                return GLOVE_REMOTE_EXECUTOR_EXIT_OUTPUT;
        return GLOVE_REMOTE_EXECUTOR_EXIT_INTERNAL;
}

/* {"id":id,"error":{"code":code,"message":message}}; id borrowed (NULL: null). */
static json_t *error_response(json_t *id, const char *code, const char *message) {
        return json_pack("{s:O?,s:{s:s,s:s}}", "id", id, "error", "code", code, "message", message);
}

static bool method_name_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GLOVE_REMOTE_EXECUTOR_METHOD_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
                        return false;
        return true;
}

/* A request whose members are all valid; borrowed from the decoded root. */
struct request {
        json_t *id;
        const char *method;
        int64_t ttl_ms;
        json_t *params; /* NULL when absent */
};

/* Checks every member of root; sets *id to the request's id as soon as it
 * is known valid (so an error can echo it). Returns 0 or -EINVAL with err
 * (executor.request_invalid). */
static int parse_request(json_t *root, struct request *req, json_t **id, struct glove_error *err) {
        struct glove_error e = { 0 };
        int64_t n;
        if (glove_json_get_int(root, "id", NULL, 0, GLOVE_REMOTE_EXECUTOR_ID_MAX, &n, &e) < 0)
                return glove_error_set(err, EINVAL, "executor.request_invalid", "%s; id is an integer 0..2^53",
                                       e.message);
        *id = req->id = json_object_get(root, "id");
        static const char *const keys[] = { "id", "method", "ttl_ms", "params", NULL };
        if (glove_json_check_keys(root, keys, NULL, &e) < 0)
                return glove_error_set(err, EINVAL, "executor.request_invalid",
                                       "%s; a request holds id, method, ttl_ms and params only", e.message);
        if (glove_json_get_int(root, "ttl_ms", NULL, GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS,
                               GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS, &req->ttl_ms, &e) < 0)
                return glove_error_set(err, EINVAL, "executor.request_invalid", "%s; ttl_ms is %d..%d milliseconds",
                                       e.message, GLOVE_REMOTE_EXECUTOR_TTL_MIN_MS, GLOVE_REMOTE_EXECUTOR_TTL_MAX_MS);
        if (glove_json_get_string(root, "method", NULL, GLOVE_REMOTE_EXECUTOR_METHOD_MAX, &req->method, &e) < 0)
                return glove_error_set(err, EINVAL, "executor.request_invalid", "%s", e.message);
        if (!method_name_ok(req->method))
                return glove_error_set(err, EINVAL, "executor.request_invalid",
                                       "$.method is not 1..%d characters of a-z and _",
                                       GLOVE_REMOTE_EXECUTOR_METHOD_MAX);
        req->params = json_object_get(root, "params");
        if (req->params && !json_is_object(req->params))
                return glove_error_set(err, EINVAL, "executor.request_invalid", "$.params is not an object");
        return 0;
}

static json_t *health_result(json_t *id, const struct glove_remote_executor_identity *identity) {
        return json_pack("{s:O,s:{s:s,s:s,s:s}}", "id", id, "result", "status", "not_operational",
                         "executable_sha256", identity->executable_sha256, "image_sha256",
                         identity->image_sha256);
}

int glove_remote_executor_answer(const struct glove_remote_executor_frame *frame, uint64_t now_ms,
                                 const struct glove_remote_executor_identity *identity, json_t **response,
                                 uint64_t *deadline_ms, struct glove_error *err) {
        *response = NULL;
        *deadline_ms = frame->channel_deadline_ms;
        struct glove_error e = { 0 };
        _cleanup_json_ json_t *root = NULL;
        json_t *resp;
        if (glove_json_decode_strict(frame->payload, frame->len, GLOVE_REMOTE_EXECUTOR_FRAME_MAX,
                                     GLOVE_JSON_OBJECT_ONLY | GLOVE_JSON_BOUND_VALUES, &root, &e) < 0) {
                char msg[GLOVE_ERROR_MESSAGE_MAX + 64];
                snprintf(msg, sizeof(msg), "the frame is not one strict JSON object: %s (%s)", e.message, e.code);
                resp = error_response(NULL, "executor.frame_malformed", msg);
                goto out;
        }
        struct request req = { 0 };
        json_t *id = NULL;
        if (parse_request(root, &req, &id, &e) < 0) {
                resp = error_response(id, e.code, e.message);
                goto out;
        }
        uint64_t request_deadline;
        if (glove_remote_executor_ttl_deadline(frame->receive_start_ms, now_ms, req.ttl_ms, &request_deadline,
                                               &e) < 0) {
                /* The request deadline has passed: one attempt, no wait. */
                *deadline_ms = frame->receive_start_ms + (uint64_t)req.ttl_ms;
                resp = error_response(id, e.code, e.message);
                goto out;
        }
        *deadline_ms = request_deadline;
        if (strcmp(req.method, GLOVE_REMOTE_EXECUTOR_METHOD_HEALTH) != 0) {
                char msg[160];
                snprintf(msg, sizeof(msg),
                         "no method %s: this executor is construction evidence only and answers remote_health "
                         "alone",
                         req.method);
                resp = error_response(id, "method_not_found", msg);
        } else if (req.params && json_object_size(req.params) > 0) {
                resp = error_response(id, "executor.request_invalid", "remote_health takes no params");
        } else {
                resp = health_result(id, identity);
        }
out:
        if (!resp)
                return glove_error_set(err, ENOMEM, "executor.no_memory", "cannot build a response");
        *response = resp;
        return 0;
}

/* Encodes msg and writes it as one frame by deadline. */
static int send_response(int out_fd, const struct glove_remote_executor_clock *clock, uint64_t deadline,
                         const json_t *msg, struct glove_error *err) {
        _cleanup_free_ char *s = json_dumps(msg, JSON_COMPACT | JSON_SORT_KEYS);
        if (!s)
                return glove_error_set(err, ENOMEM, "executor.no_memory", "cannot encode a response");
        return glove_remote_executor_frame_write(out_fd, clock, deadline, s, strlen(s), err);
}

/* Writes an error frame (id null) for an error that ends the channel,
 * within the frame's channel deadline; its own failure is not reported (the
 * channel ends with the first error anyway). */
static void send_last_error(int out_fd, const struct glove_remote_executor_clock *clock, uint64_t deadline,
                            const struct glove_error *e) {
        _cleanup_json_ json_t *msg = error_response(NULL, e->code, e->message);
        if (msg)
                (void)send_response(out_fd, clock, deadline, msg, NULL);
}

int glove_remote_executor_serve(int in_fd, int out_fd, const struct glove_remote_executor_clock *clock,
                                uint64_t channel_timeout_ms, const struct glove_remote_executor_identity *identity,
                                struct glove_error *err) {
        if (!clock || !clock->now_ms || !identity)
                return glove_error_set(err, EINVAL, "executor.invalid_argument", "no clock or no identity");
        _cleanup_free_ struct glove_remote_executor_frame *frame = malloc(sizeof(*frame));
        if (!frame)
                return glove_error_set(err, ENOMEM, "executor.no_memory", "cannot allocate a frame buffer");
        for (;;) {
                struct glove_error e = { 0 };
                int r = glove_remote_executor_frame_read(in_fd, clock, channel_timeout_ms, frame, &e);
                if (r == 0)
                        return 0;
                _cleanup_json_ json_t *resp = NULL;
                uint64_t deadline = frame->channel_deadline_ms;
                if (r == -ENODATA) {
                        resp = error_response(NULL, e.code, e.message);
                        if (!resp)
                                return glove_error_set(err, ENOMEM, "executor.no_memory", "cannot build a response");
                } else if (r < 0) {
                        if (strcmp(e.code, "executor.read_failed") != 0)
                                send_last_error(out_fd, clock, deadline, &e);
                        return glove_error_set(err, e.errnum, e.code, "%s", e.message);
                } else {
                        r = glove_remote_executor_answer(frame, clock->now_ms(clock->ctx), identity, &resp,
                                                         &deadline, err);
                        if (r < 0)
                                return r;
                }
                r = send_response(out_fd, clock, deadline, resp, err);
                if (r < 0)
                        return r;
        }
}
