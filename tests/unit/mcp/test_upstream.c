/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for glove/mcp/upstream.h: spec parsing with an explicit
 * environment, a start that fails leaving nothing behind, and a real
 * upstream (tests/agents/mcp-upstream.py) initialized and listed on an
 * sd-event loop, its bad entries dropped, nothing left after free. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/mcp/jsonrpc.h"
#include "glove/mcp/upstream.h"

static int count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));)
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

static bool no_children(void) {
        return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static void test_spec_parse(void **state) {
        (void)state;
        const char *env[] = {"PATH=/nonexistent:/usr/bin:/bin", "HOME=/h", "SECRET=s", NULL};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        assert_int_equal(glove_mcp_upstream_spec_parse("py=sh,-c,true", env, &s, &err), 0);
        assert_string_equal(s.name, "py");
        assert_string_equal(s.argv[0], "sh");
        assert_string_equal(s.argv[2], "true");
        assert_null(s.argv[3]);
        assert_true(strcmp(s.path, "/usr/bin/sh") == 0 || strcmp(s.path, "/bin/sh") == 0);
        const char *specs[] = {"py:SECRET", "other:HOME"};
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, specs, 2, &err), 0);
        assert_string_equal(s.envp[0], "PATH=/nonexistent:/usr/bin:/bin");
        assert_string_equal(s.envp[1], "HOME=/h");
        assert_string_equal(s.envp[2], "SECRET=s");
        assert_null(s.envp[3]);
        glove_mcp_upstream_spec_free(&s);

        /* The message names the value; the flag is the CLI's business. */
        assert_int_equal(glove_mcp_upstream_spec_parse("Bad=x", env, &s, &err), -EINVAL);
        assert_string_equal(err.code, "upstream.bad_spec");
        assert_int_equal(strncmp(err.message, "Bad=x: ", 7), 0);
        glove_mcp_upstream_spec_free(&s);
        glove_error_clear(&err);

        /* PATH is the given one, not the process's. */
        const char *nopath[] = {"PATH=/nonexistent", NULL};
        assert_int_equal(glove_mcp_upstream_spec_parse("py=sh", nopath, &s, &err), -ENOENT);
        assert_string_equal(err.code, "upstream.not_found");
        glove_mcp_upstream_spec_free(&s);
        glove_error_clear(&err);

        assert_int_equal(glove_mcp_upstream_spec_parse("py=/bin/sh", env, &s, &err), 0);
        const char *unset[] = {"py:UNSET_VARIABLE"};
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, unset, 1, &err), -EINVAL);
        assert_string_equal(err.code, "upstream.env_unset");
        assert_int_equal(strncmp(err.message, "py:UNSET_VARIABLE: ", 19), 0);
        glove_mcp_upstream_spec_free(&s);
}

struct seen {
        int ready, dead, exited, dropped, oversized, responses;
        int raw, drained, invalid;       /* the fast path: offered, reads drained, invalid lines */
        bool raw_take;                   /* what raw_response answers */
        int64_t raw_id;
        char raw_value[256];
        bool dropped_nul;
        char why[512];
        bool oversized_has_id;
        int64_t oversized_id, response_id;
        uint64_t oversized_bytes;
        /* ops->stderr_line: the lines (as handed over), whether each was
         * cut, and how many dead and exited reports came before each. */
        int lines;
        char line[8][GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX + 1];
        size_t line_len[8];
        bool line_cut[8];
        int dead_before[8], exited_before[8];
};

static int on_record(void *userdata, struct glove_mcp_upstream *u, const char *event, json_t *fields) {
        (void)u;
        struct seen *s = userdata;
        if (strcmp(event, "upstream_invalid_message") == 0)
                s->invalid++;
        if (strcmp(event, "tool_dropped") == 0) {
                s->dropped++;
                json_t *tool = json_object_get(fields, "tool");
                if (json_is_string(tool) && json_string_length(tool) == 10 && memcmp(json_string_value(tool), "bad\0hidden", 10) == 0)
                        s->dropped_nul = true;
        }
        json_decref(fields);
        return 0;
}

static void on_ready(void *userdata, struct glove_mcp_upstream *u, bool changed) {
        (void)changed;
        struct seen *s = userdata;
        if (glove_mcp_upstream_state(u) == GLOVE_MCP_UPSTREAM_READY)
                s->ready++;
}

static void on_message(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        (void)u;
        struct seen *s = userdata;
        if (m->kind == GLOVE_MCP_RESPONSE) {
                s->responses++;
                s->response_id = json_integer_value(m->id);
        }
}

static void on_oversized(void *userdata, struct glove_mcp_upstream *u, const int64_t *id, uint64_t bytes) {
        (void)u;
        struct seen *s = userdata;
        s->oversized++;
        s->oversized_has_id = id != NULL;
        s->oversized_id = id ? *id : 0;
        s->oversized_bytes = bytes;
}

static void on_dead(void *userdata, struct glove_mcp_upstream *u, const char *why, bool protocol) {
        (void)u;
        (void)protocol;
        struct seen *s = userdata;
        s->dead++;
        snprintf(s->why, sizeof(s->why), "%s", why);
}

static void on_exited(void *userdata, struct glove_mcp_upstream *u) {
        (void)u;
        ((struct seen *)userdata)->exited++;
}

static bool name_valid(const char *name, size_t len) {
        /* What a policy rule could name: [A-Za-z0-9_-], 1..128 bytes. */
        if (len == 0 || len > 128)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(name[i] == '_' || name[i] == '-' || (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
                      (name[i] >= '0' && name[i] <= '9')))
                        return false;
        return true;
}

static const struct glove_mcp_upstream_ops ops = {
        .record = on_record, .ready = on_ready, .message = on_message, .dead = on_dead, .exited = on_exited,
};

static void test_start_missing_program_leaves_nothing(void **state) {
        (void)state;
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        struct seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &ops, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        assert_int_equal(glove_mcp_upstream_spec_parse("gone=/nonexistent/mcp-server,x", NULL, &s, &err), 0);
        int before = count_fds();
        struct glove_mcp_upstream *u = (void *)1;
        assert_true(glove_mcp_upstream_new(e, &s, &cfg, &u, &err) < 0);
        assert_null(u);
        assert_string_equal(err.code, "upstream.start");
        assert_non_null(strstr(err.message, "upstream gone: cannot execute /nonexistent/mcp-server"));
        assert_int_equal(count_fds(), before);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

static void test_real_upstream_listed(void **state) {
        (void)state;
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        int before = count_fds();
        struct seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &ops, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY ",--odd-names,--page,3", env, &s, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, NULL, 0, &err), 0);
        struct glove_mcp_upstream *u = NULL;
        assert_int_equal(glove_mcp_upstream_new(e, &s, &cfg, &u, &err), 0);
        assert_true(glove_mcp_upstream_pid(u) > 0);
        for (int i = 0; i < 2000 && !seen.ready && !seen.dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen.dead, 0);
        assert_int_equal(seen.ready, 1);
        assert_true(glove_mcp_upstream_listed(u));
        assert_true(glove_mcp_upstream_has_tool(u, "echo"));
        assert_false(glove_mcp_upstream_has_tool(u, "bad"));
        /* Both twins, the NUL names, the 129-byte name, 42, the nameless. */
        assert_false(glove_mcp_upstream_has_tool(u, "twin"));
        assert_true(seen.dropped_nul);
        assert_int_equal(seen.dropped, 9);
        glove_mcp_upstream_free(u);
        assert_int_equal(count_fds(), before);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

/* An answer over max_frame (id after the long text, as the TypeScript SDK
 * writes it) is skipped and handed to ops->oversized with its id; the
 * upstream stays READY and its next answer comes through. */
static void test_oversized_answer_skipped(void **state) {
        (void)state;
        static const struct glove_mcp_upstream_ops ops2 = {
                .record = on_record, .ready = on_ready, .message = on_message, .oversized = on_oversized, .dead = on_dead,
                .exited = on_exited,
        };
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        struct seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 4096, .tool_name_valid = name_valid, .ops = &ops2, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY, env, &s, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, NULL, 0, &err), 0);
        struct glove_mcp_upstream *u = NULL;
        assert_int_equal(glove_mcp_upstream_new(e, &s, &cfg, &u, &err), 0);
        for (int i = 0; i < 2000 && !seen.ready && !seen.dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen.ready, 1);
        int64_t big = glove_mcp_upstream_next_id(u);
        json_t *id = json_integer(big);
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "tools/call",
                                                         json_pack("{s:s,s:{s:i,s:b}}", "name", "flood", "arguments", "bytes",
                                                                   1000000, "id_last", 1)));
        json_decref(id);
        for (int i = 0; i < 2000 && !seen.oversized && !seen.dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen.dead, 0);
        assert_int_equal(seen.oversized, 1);
        assert_true(seen.oversized_has_id);
        assert_true(seen.oversized_id == big);
        assert_true(seen.oversized_bytes > 1000000);
        assert_int_equal(seen.responses, 0);
        int64_t small = glove_mcp_upstream_next_id(u);
        id = json_integer(small);
        glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "tools/call",
                                                         json_pack("{s:s,s:{s:s}}", "name", "echo", "arguments", "text", "after")));
        json_decref(id);
        for (int i = 0; i < 2000 && !seen.responses && !seen.dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen.responses, 1);
        assert_true(seen.response_id == small);
        assert_int_equal(glove_mcp_upstream_state(u), GLOVE_MCP_UPSTREAM_READY);
        glove_mcp_upstream_free(u);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

static bool on_raw(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len,
                   const struct glove_mcp_raw_response *r) {
        (void)u;
        struct seen *s = userdata;
        assert_true(r->value_off + r->value_len <= len);
        s->raw++;
        s->raw_id = r->id;
        snprintf(s->raw_value, sizeof(s->raw_value), "%.*s", (int)r->value_len, line + r->value_off);
        return s->raw_take;
}

static void on_drained(void *userdata, struct glove_mcp_upstream *u) {
        (void)u;
        ((struct seen *)userdata)->drained++;
}

static int64_t call(struct glove_mcp_upstream *u, const char *tool, json_t *args) {
        int64_t n = glove_mcp_upstream_next_id(u);
        json_t *id = json_integer(n);
        assert_int_equal(glove_mcp_upstream_send(u, glove_mcp_rpc_request(id, "tools/call",
                                                                          json_pack("{s:s,s:o}", "name", tool, "arguments", args))),
                         0);
        json_decref(id);
        return n;
}

static void run_until(sd_event *e, const struct seen *seen, const int *counter, int want) {
        for (int i = 0; i < 2000 && *counter < want && !seen->dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen->dead, 0);
        assert_int_equal(*counter, want);
}

/* The fast path of responses: a response is offered to ops->raw_response
 * with its id and its value's bytes as the upstream wrote them; declined,
 * it goes to ops->message decoded; a line the strict decoder refuses is
 * offered to neither. Requests sent while held reach the upstream once
 * released. */
static void test_raw_responses_and_hold(void **state) {
        (void)state;
        static const struct glove_mcp_upstream_ops ops3 = {
                .record = on_record, .ready = on_ready, .message = on_message, .dead = on_dead, .exited = on_exited,
                .raw_response = on_raw, .drained = on_drained,
        };
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        struct seen seen = {.raw_take = true};
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &ops3, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY ",--raw", env, &s, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, NULL, 0, &err), 0);
        struct glove_mcp_upstream *u = NULL;
        assert_int_equal(glove_mcp_upstream_new(e, &s, &cfg, &u, &err), 0);
        run_until(e, &seen, &seen.ready, 1);
        /* initialize and tools/list went the tree's way. */
        assert_int_equal(seen.raw, 0);

        int64_t id = call(u, "raw", json_pack("{s:[s]}", "lines", "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{ \"n\" : 0.1 }}"));
        run_until(e, &seen, &seen.raw, 1);
        assert_true(seen.raw_id == id);
        assert_string_equal(seen.raw_value, "{ \"n\" : 0.1 }");
        assert_int_equal(seen.responses, 0);
        assert_true(seen.drained >= 1);

        /* Declined: decoded and handed to message. */
        seen.raw_take = false;
        id = call(u, "echo", json_pack("{s:s}", "text", "slow"));
        run_until(e, &seen, &seen.responses, 1);
        assert_int_equal(seen.raw, 2);
        assert_true(seen.response_id == id);
        seen.raw_take = true;

        /* Refused by the decoder: neither. */
        id = call(u, "raw", json_pack("{s:[s,s]}", "lines", "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"a\":1,\"a\":2}}",
                                      "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{\"ok\":true}}"));
        run_until(e, &seen, &seen.raw, 3);
        assert_int_equal(seen.invalid, 1);
        assert_string_equal(seen.raw_value, "{\"ok\":true}");
        assert_int_equal(seen.responses, 1);

        /* Held: queued, then written at release. */
        glove_mcp_upstream_hold(u, true);
        int64_t a = call(u, "echo", json_pack("{s:s}", "text", "a"));
        int64_t b = call(u, "echo", json_pack("{s:s}", "text", "b"));
        glove_mcp_upstream_hold(u, false);
        run_until(e, &seen, &seen.raw, 5);
        assert_true(seen.raw_id == a || seen.raw_id == b);
        assert_int_equal(glove_mcp_upstream_state(u), GLOVE_MCP_UPSTREAM_READY);
        glove_mcp_upstream_free(u);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

static void on_stderr_line(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len, bool cut) {
        (void)u;
        struct seen *s = userdata;
        assert_true(len <= GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX);
        if (s->lines >= 8)
                return;
        memcpy(s->line[s->lines], line, len);
        s->line_len[s->lines] = len;
        s->line_cut[s->lines] = cut;
        s->dead_before[s->lines] = s->dead;
        s->exited_before[s->lines] = s->exited;
        s->lines++;
}

/* With ops->stderr_line the process's stderr is read by the client: line
 * by line, CR LF as LF, any byte kept (NUL too), a line over the bound cut
 * (its rest dropped, cut set), the last line without a newline handed over
 * at end of file; and all of it before the upstream is reported dead. */
static void test_stderr_lines(void **state) {
        (void)state;
        static const struct glove_mcp_upstream_ops ops4 = {
                .record = on_record, .ready = on_ready, .message = on_message, .dead = on_dead, .exited = on_exited,
                .stderr_line = on_stderr_line,
        };
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        int before = count_fds();
        struct seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 4096, .tool_name_valid = name_valid, .ops = &ops4, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_error err = {0};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        /* No comma in the script: the spec splits at commas. */
        assert_int_equal(glove_mcp_upstream_spec_parse("sh=/bin/sh,-c,printf 'one\\r\\ntwo\\n' >&2; "
                                                       "head -c 3000 /dev/zero | tr '\\000' x >&2; "
                                                       "printf '\\na\\000b\\nlast' >&2; exit 3",
                                                       env, &s, &err),
                         0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&s, env, NULL, 0, &err), 0);
        struct glove_mcp_upstream *u = NULL;
        assert_int_equal(glove_mcp_upstream_new(e, &s, &cfg, &u, &err), 0);
        for (int i = 0; i < 2000 && !seen.exited; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        assert_int_equal(seen.exited, 1);
        assert_int_equal(seen.lines, 5);
        assert_int_equal(seen.line_len[0], 3);
        assert_memory_equal(seen.line[0], "one", 3);
        assert_int_equal(seen.line_len[1], 3);
        assert_memory_equal(seen.line[1], "two", 3);
        assert_int_equal(seen.line_len[2], GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX);
        assert_true(seen.line_cut[2]);
        assert_true(seen.line[2][0] == 'x' && seen.line[2][GLOVE_MCP_UPSTREAM_STDERR_LINE_MAX - 1] == 'x');
        assert_int_equal(seen.line_len[3], 3);
        assert_memory_equal(seen.line[3], "a\0b", 3);
        assert_false(seen.line_cut[3]);
        assert_int_equal(seen.line_len[4], 4);
        assert_memory_equal(seen.line[4], "last", 4);
        for (int i = 0; i < 5; i++) {
                assert_int_equal(seen.dead_before[i], 0);
                assert_int_equal(seen.exited_before[i], 0);
        }
        assert_int_equal(seen.dead, 1);
        glove_mcp_upstream_free(u);
        assert_int_equal(count_fds(), before);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

/* ------------------------------------------------------------------ eras */

struct era_seen {
        struct seen base;
        int invalid, listen_ended, changed;
        json_t *last;                    /* the last response handed over (a copy) */
};

static int era_record(void *userdata, struct glove_mcp_upstream *u, const char *event, json_t *fields) {
        (void)u;
        struct era_seen *s = userdata;
        if (strcmp(event, "upstream_invalid_message") == 0)
                s->invalid++;
        if (strcmp(event, "upstream_listen_ended") == 0)
                s->listen_ended++;
        if (strcmp(event, "upstream_ready") == 0)
                assert_string_equal(json_string_value(json_object_get(fields, "era")),
                                    glove_mcp_upstream_modern(u) ? "modern" : "legacy");
        json_decref(fields);
        return 0;
}

static void era_ready(void *userdata, struct glove_mcp_upstream *u, bool changed) {
        struct era_seen *s = userdata;
        if (glove_mcp_upstream_state(u) == GLOVE_MCP_UPSTREAM_READY)
                s->base.ready++;
        s->changed += changed;
}

static void era_message(void *userdata, struct glove_mcp_upstream *u, struct glove_mcp_message *m) {
        (void)u;
        struct era_seen *s = userdata;
        if (m->kind != GLOVE_MCP_RESPONSE)
                return;
        s->base.responses++;
        json_decref(s->last);
        s->last = json_deep_copy(m->root);
}

static bool era_raw(void *userdata, struct glove_mcp_upstream *u, const char *line, size_t len,
                    const struct glove_mcp_raw_response *r) {
        (void)u;
        (void)len;
        struct era_seen *s = userdata;
        s->base.raw++;
        json_decref(s->last);
        s->last = json_loadb(line, len, 0, NULL);
        (void)r;
        return true;
}

static void era_dead(void *userdata, struct glove_mcp_upstream *u, const char *why, bool protocol) {
        (void)u;
        struct era_seen *s = userdata;
        s->base.dead++;
        s->base.raw_take = protocol; /* reused: whether it was a protocol failure */
        snprintf(s->base.why, sizeof(s->base.why), "%s", why);
}

static void era_exited(void *userdata, struct glove_mcp_upstream *u) {
        (void)u;
        ((struct era_seen *)userdata)->base.exited++;
}

static const struct glove_mcp_upstream_ops era_ops = {
        .record = era_record, .ready = era_ready, .message = era_message, .dead = era_dead, .exited = era_exited,
        .raw_response = era_raw,
};

static struct glove_mcp_upstream *era_start(sd_event *e, struct glove_mcp_upstream_spec *s, struct glove_mcp_upstream_config *cfg,
                                            const char *text) {
        struct glove_error err = {0};
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        assert_int_equal(glove_mcp_upstream_spec_parse(text, env, s, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(s, env, NULL, 0, &err), 0);
        struct glove_mcp_upstream *u = NULL;
        assert_int_equal(glove_mcp_upstream_new(e, s, cfg, &u, &err), 0);
        return u;
}

static void era_wait(sd_event *e, struct era_seen *seen, const int *counter, int want) {
        for (int i = 0; i < 2000 && *counter < want && !seen->base.dead; i++)
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
}

static const char *last_reason(const struct era_seen *s) {
        return json_string_value(json_object_get(json_object_get(json_object_get(s->last, "error"), "data"), "reason"));
}

/* A 2026-07-28-only upstream (mcp-upstream.py --era modern answers
 * initialize -32022 and every request without the envelope -32602):
 * discovered after initialize's error, listed with the envelope; a
 * complete result takes the fast path; input_required reaches the caller
 * as it is (the gateway decides it), an unknown resultType as an error, on
 * record; a tagged list_changed
 * on the listen relists it. */
static void test_modern_upstream(void **state) {
        (void)state;
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        int before = count_fds();
        struct era_seen seen = {0};
        json_t *caps = json_pack("{s:{}}", "elicitation");
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &era_ops,
                                                .userdata = &seen, .capabilities = caps};
        struct glove_mcp_upstream_spec s;
        struct glove_mcp_upstream *u = era_start(e, &s, &cfg, "py=python3," MCP_UPSTREAM_PY ",--era,modern");
        era_wait(e, &seen, &seen.base.ready, 1);
        assert_int_equal(seen.base.dead, 0);
        assert_int_equal(seen.base.ready, 1);
        assert_true(glove_mcp_upstream_modern(u));
        assert_string_equal(glove_mcp_upstream_protocol_version(u), "2026-07-28");
        assert_true(glove_mcp_upstream_has_tool(u, "echo"));
        assert_true(glove_mcp_upstream_offers(u, "tools", "listChanged"));

        /* A complete result: the fast path, as the upstream wrote it. */
        call(u, "echo", json_pack("{s:s}", "text", "hi"));
        era_wait(e, &seen, &seen.base.raw, 1);
        assert_int_equal(seen.base.raw, 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(seen.last, "result"), "resultType")), "complete");

        /* input_required: the caller's to decide (the gateway's mrtr.c),
         * as the upstream wrote it and on no record here. */
        call(u, "mrtr", json_object());
        era_wait(e, &seen, &seen.base.responses, 1);
        assert_int_equal(seen.invalid, 0); /* not an invalid message of the upstream */
        assert_string_equal(json_string_value(json_object_get(json_object_get(seen.last, "result"), "resultType")),
                            "input_required");
        assert_string_equal(json_string_value(json_object_get(json_object_get(seen.last, "result"), "requestState")), "s");

        call(u, "weird", json_object());
        era_wait(e, &seen, &seen.base.responses, 2);
        assert_int_equal(seen.invalid, 1);
        assert_string_equal(last_reason(&seen), "upstream_invalid_result");

        /* grow: a list_changed tagged with the listen's id; listed again. */
        call(u, "grow", json_object());
        era_wait(e, &seen, &seen.changed, 1);
        assert_int_equal(seen.changed, 1);
        assert_true(glove_mcp_upstream_has_tool(u, "extra"));
        assert_int_equal(seen.base.dead, 0);
        assert_int_equal(seen.invalid, 1);

        /* No notification but notifications/cancelled reaches it. */
        assert_int_equal(glove_mcp_upstream_send(u, glove_mcp_rpc_request(NULL, "notifications/roots/list_changed", NULL)), 0);
        json_decref(seen.last);
        glove_mcp_upstream_free(u);
        assert_int_equal(count_fds(), before);
        assert_true(no_children());
        glove_mcp_upstream_spec_free(&s);
        json_decref(caps);
        sd_event_unref(e);
}

/* A -32022 to server/discover naming 2026-07-28 is asked once more. */
static void test_modern_upstream_discover_retried(void **state) {
        (void)state;
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        struct era_seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &era_ops, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_mcp_upstream *u = era_start(e, &s, &cfg, "py=python3," MCP_UPSTREAM_PY ",--era,modern-retry");
        era_wait(e, &seen, &seen.base.ready, 1);
        assert_int_equal(seen.base.dead, 0);
        assert_true(glove_mcp_upstream_modern(u));
        glove_mcp_upstream_free(u);
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

/* A legacy upstream stays legacy (no probe); one that refuses initialize
 * and server/discover fails its start, the why naming both answers. */
static void test_era_legacy_and_neither(void **state) {
        (void)state;
        sd_event *e = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        struct era_seen seen = {0};
        struct glove_mcp_upstream_config cfg = {.max_frame = 65536, .tool_name_valid = name_valid, .ops = &era_ops, .userdata = &seen};
        struct glove_mcp_upstream_spec s;
        struct glove_mcp_upstream *u = era_start(e, &s, &cfg, "py=python3," MCP_UPSTREAM_PY);
        era_wait(e, &seen, &seen.base.ready, 1);
        assert_int_equal(seen.base.ready, 1);
        assert_false(glove_mcp_upstream_modern(u));
        assert_string_equal(glove_mcp_upstream_protocol_version(u), "2025-11-25");
        glove_mcp_upstream_free(u);
        glove_mcp_upstream_spec_free(&s);

        memset(&seen, 0, sizeof(seen));
        u = era_start(e, &s, &cfg, "py=python3," MCP_UPSTREAM_PY ",--era,neither,--init,error");
        era_wait(e, &seen, &seen.base.dead, 1);
        assert_int_equal(seen.base.dead, 1);
        assert_true(seen.base.raw_take); /* a protocol failure */
        assert_non_null(strstr(seen.base.why, "initialize was answered with an error (code -32603: initialize refused"));
        assert_non_null(strstr(seen.base.why, "server/discover with an error (code -32601: method not found)"));
        assert_false(glove_mcp_upstream_modern(u));
        glove_mcp_upstream_free(u);
        glove_mcp_upstream_spec_free(&s);
        sd_event_unref(e);
}

/* The resultType of a raw result, without decoding it. */
static void test_result_complete(void **state) {
        (void)state;
        static const struct {
                const char *v;
                bool complete;
        } cases[] = {
                {"{}", true},
                {" { } ", true},
                {"{\"content\":[{\"type\":\"text\",\"text\":\"resultType\\\"\"}]}", true},
                {"{\"resultType\":\"complete\",\"ttlMs\":0}", true},
                {"{\"a\":{\"resultType\":\"input_required\"},\"resultType\" : \"complete\"}", true},
                {"{\"resultType\":\"input_required\",\"requestState\":\"s\"}", false},
                {"{\"x\":1,\"resultType\":\"pending\"}", false},
                {"{\"resultType\":\"complet\\u0065\"}", false},   /* escaped: the tree decides */
                {"{\"result\\u0054ype\":\"complete\"}", false},   /* an escaped key: the tree decides */
                {"{\"resultType\":null}", false},
                {"[]", false},
                {"\"complete\"", false},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_int_equal(glove_mcp_upstream_result_complete(cases[i].v, strlen(cases[i].v)), cases[i].complete);
}

int main(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_parse),
                cmocka_unit_test(test_start_missing_program_leaves_nothing),
                cmocka_unit_test(test_real_upstream_listed),
                cmocka_unit_test(test_oversized_answer_skipped),
                cmocka_unit_test(test_raw_responses_and_hold),
                cmocka_unit_test(test_stderr_lines),
                cmocka_unit_test(test_modern_upstream),
                cmocka_unit_test(test_modern_upstream_discover_retried),
                cmocka_unit_test(test_era_legacy_and_neither),
                cmocka_unit_test(test_result_complete),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
