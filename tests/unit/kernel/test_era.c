/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for glove/kernel/era.h and the gateway's dual-era service
 * (issue 23; docs/mcp-mediation.md, "Protocol revisions"): the era of a
 * request by its _meta, -32022 and -32602 for malformed modern requests,
 * server/discover, "resultType" (inserted into the upstream's bytes on the
 * fast path), "ttlMs"/"cacheScope" on cacheable results, the reserved _meta
 * keys kept from the upstream, the methods 2026-07-28 removed, era mixing
 * on a channel of its own (and not on a shared one), and the audit records
 * of both eras. The gateway runs tests/agents/mcp-upstream.py. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/kernel/era.h"
#include "glove/kernel/gateway.h"
#include "glove/mcp/jsonrpc.h"
#include "glove/mcp/response_scan.h"
#include "glove/mcp/frame.h"
#include <dirent.h>

/* ------------------------------------------------------------------ pure helpers */

static json_t *load(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        if (!j)
                fail_msg("bad test JSON %s: %s", text, e.text);
        return j;
}

static enum glove_kernel_era era_of(const char *params) {
        json_t *p = load(params);
        enum glove_kernel_era e = glove_kernel_era_of(p);
        json_decref(p);
        return e;
}

static void test_classify(void **state) {
        (void)state;
        assert_int_equal(glove_kernel_era_of(NULL), GLOVE_KERNEL_ERA_LEGACY);
        assert_int_equal(era_of("[1]"), GLOVE_KERNEL_ERA_LEGACY);
        assert_int_equal(era_of("{}"), GLOVE_KERNEL_ERA_LEGACY);
        assert_int_equal(era_of("{\"_meta\":{\"progressToken\":1}}"), GLOVE_KERNEL_ERA_LEGACY);
        assert_int_equal(era_of("{\"_meta\":\"io.modelcontextprotocol/protocolVersion\"}"), GLOVE_KERNEL_ERA_LEGACY);
        /* Only the key of the version decides: clientCapabilities alone is legacy. */
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/clientCapabilities\":{}}}"), GLOVE_KERNEL_ERA_LEGACY);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                "\"io.modelcontextprotocol/clientCapabilities\":{}}}"),
                         GLOVE_KERNEL_ERA_MODERN);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}"), GLOVE_KERNEL_ERA_BAD_CAPS);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                "\"io.modelcontextprotocol/clientCapabilities\":[]}}"),
                         GLOVE_KERNEL_ERA_BAD_CAPS);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\","
                                "\"io.modelcontextprotocol/clientCapabilities\":{}}}"),
                         GLOVE_KERNEL_ERA_BAD_VERSION);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\\u0000x\","
                                "\"io.modelcontextprotocol/clientCapabilities\":{}}}"),
                         GLOVE_KERNEL_ERA_BAD_VERSION);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":20260728}}"), GLOVE_KERNEL_ERA_BAD_VERSION);
        assert_int_equal(era_of("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":null}}"), GLOVE_KERNEL_ERA_BAD_VERSION);
}

static void test_errors(void **state) {
        (void)state;
        json_t *id = json_integer(7);
        json_t *p = load("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\"}}");
        json_t *m = glove_kernel_era_error(id, p, GLOVE_KERNEL_ERA_BAD_VERSION);
        json_t *want = load("{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32022,\"message\":\"Unsupported protocol version\","
                            "\"data\":{\"reason\":\"unsupported_protocol_version\","
                            "\"rule\":\"params._meta.io.modelcontextprotocol/protocolVersion\","
                            "\"supported\":[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\",\"2024-11-05\"],"
                            "\"requested\":\"1900-01-01\"}}}");
        assert_true(json_equal(m, want));
        json_decref(m);
        json_decref(want);
        json_decref(p);
        /* Not a string: its JSON text. */
        p = load("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":{\"v\":[1,2]}}}");
        m = glove_kernel_era_error(id, p, GLOVE_KERNEL_ERA_BAD_VERSION);
        json_t *data = json_object_get(json_object_get(m, "error"), "data");
        assert_string_equal(json_string_value(json_object_get(data, "requested")), "{\"v\":[1,2]}");
        json_decref(m);
        json_decref(p);
        /* A string with NUL stays that string. */
        p = load("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\\u0000x\"}}");
        m = glove_kernel_era_error(id, p, GLOVE_KERNEL_ERA_BAD_VERSION);
        data = json_object_get(json_object_get(m, "error"), "data");
        assert_int_equal(json_string_length(json_object_get(data, "requested")), 12);
        json_decref(m);
        json_decref(p);
        p = load("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}");
        m = glove_kernel_era_error(id, p, GLOVE_KERNEL_ERA_BAD_CAPS);
        json_t *e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
        assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "io.modelcontextprotocol/clientCapabilities"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "reason")), "invalid_params");
        json_decref(m);
        assert_null(glove_kernel_era_error(id, p, GLOVE_KERNEL_ERA_MODERN));
        json_decref(p);
        json_decref(id);
}

static void strip_case(const char *in, const char *out) {
        json_t *p = load(in), *want = load(out);
        glove_kernel_era_strip(p);
        char *got = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
        if (!json_equal(p, want))
                fail_msg("strip %s gave %s", in, got);
        free(got);
        json_decref(p);
        json_decref(want);
}

static void test_strip(void **state) {
        (void)state;
        strip_case("{\"name\":\"x\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                   "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"debug\"}}",
                   "{\"name\":\"x\"}");
        strip_case("{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"progressToken\":5,"
                   "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\"},\"com.example/k\":true,\"traceparent\":\"t\"}}",
                   "{\"_meta\":{\"progressToken\":5,\"com.example/k\":true,\"traceparent\":\"t\"}}");
        strip_case("{\"_meta\":{}}", "{}"); /* emptied or empty: gone */
        strip_case("{\"_meta\":7}", "{\"_meta\":7}");
        strip_case("{\"a\":{\"_meta\":{\"io.modelcontextprotocol/x\":1}}}", "{\"a\":{\"_meta\":{\"io.modelcontextprotocol/x\":1}}}");
        glove_kernel_era_strip(NULL);
}

static void test_complete(void **state) {
        (void)state;
        json_t *r = load("{\"tools\":[]}");
        assert_int_equal(glove_kernel_era_complete(r, true), 0);
        json_t *want = load("{\"tools\":[],\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\"}");
        assert_true(json_equal(r, want));
        json_decref(r);
        json_decref(want);
        r = load("{\"resultType\":\"input_required\",\"ttlMs\":5,\"cacheScope\":\"public\"}");
        want = json_deep_copy(r);
        assert_int_equal(glove_kernel_era_complete(r, true), 0);
        assert_true(json_equal(r, want));
        json_decref(r);
        json_decref(want);
        r = load("{}");
        assert_int_equal(glove_kernel_era_complete(r, false), 0);
        want = load("{\"resultType\":\"complete\"}");
        assert_true(json_equal(r, want));
        json_decref(r);
        json_decref(want);
        r = load("[1]");
        assert_int_equal(glove_kernel_era_complete(r, true), 0);
        assert_int_equal(json_array_size(r), 1);
        json_decref(r);
}

/* The insertion applied to value, compared with want (NULL: -EINVAL). */
static void insert_case(const char *value, bool cacheable, const char *want) {
        char ins[64], out[1024];
        size_t at = 99;
        int n = glove_kernel_era_insert(value, strlen(value), cacheable, ins, sizeof(ins), &at);
        if (!want) {
                assert_int_equal(n, -EINVAL);
                return;
        }
        assert_true(n >= 0);
        assert_true(at <= strlen(value));
        snprintf(out, sizeof(out), "%.*s%.*s%s", (int)at, value, n, ins, value + at);
        if (strcmp(out, want) != 0)
                fail_msg("insert into %s gave %s, not %s", value, out, want);
        /* What it gives is JSON whenever it was. */
        json_t *j = json_loads(out, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(j);
        json_decref(j);
}

static void test_insert(void **state) {
        (void)state;
        insert_case("{}", false, "{\"resultType\":\"complete\"}");
        insert_case("{ }", false, "{\"resultType\":\"complete\" }");
        insert_case("{\"content\":[]}", false, "{\"resultType\":\"complete\",\"content\":[]}");
        insert_case("{\"content\":[]}", true, "{\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\",\"content\":[]}");
        /* Already there at the top: left alone (nothing inserted). */
        insert_case("{\"content\":[],\"resultType\":\"input_required\"}", false, "{\"content\":[],\"resultType\":\"input_required\"}");
        insert_case("{\"ttlMs\":10,\"resultType\":\"complete\"}", true,
                    "{\"cacheScope\":\"private\",\"ttlMs\":10,\"resultType\":\"complete\"}");
        /* Only top-level keys count: nested ones and string values do not. */
        insert_case("{\"a\":{\"resultType\":\"x\"},\"b\":\"resultType\",\"c\":[\"resultType\",{\"resultType\":1}]}", false,
                    "{\"resultType\":\"complete\",\"a\":{\"resultType\":\"x\"},\"b\":\"resultType\",\"c\":[\"resultType\",{\"resultType\":1}]}");
        /* Odd formatting the scanner accepts: whitespace everywhere, braces
         * and escaped quotes in strings, numbers, literals. */
        insert_case(" \t{ \"t\" :\t\"a}\\\"b,{\" , \"n\":-1.5e3 ,\"l\":[true,false,null,{}] ,\r\n\"resultType\" : \"complete\" } ", false,
                    " \t{ \"t\" :\t\"a}\\\"b,{\" , \"n\":-1.5e3 ,\"l\":[true,false,null,{}] ,\r\n\"resultType\" : \"complete\" } ");
        insert_case("{\"x\":\"\\\\\",\"y\":0}", false, "{\"resultType\":\"complete\",\"x\":\"\\\\\",\"y\":0}");
        /* Not an object: nothing to mark. */
        insert_case("[1,2]", false, "[1,2]");
        insert_case("null", false, "null");
        insert_case("\"s\"", false, "\"s\"");
        /* Text the scanner never vouches for: refused, the caller decodes. */
        insert_case("{\"a\\u0062\":1}", false, NULL);
        insert_case("{\"a\":1", false, NULL);
        insert_case("{\"a\" 1}", false, NULL);
        insert_case("{\"a\":1 \"b\":2}", false, NULL);
        insert_case("{1:2}", false, NULL);
        char small[4];
        size_t at;
        assert_int_equal(glove_kernel_era_insert("{}", 2, true, small, sizeof(small), &at), -ENOSPC);
}

/* The differential property of the insertion for one line: when the
 * scanner vouches for it as a result, the insertion never refuses it, and
 * the value with the text inserted decodes to what the tree path gives
 * (glove_kernel_era_complete on the decoded value). Returns whether it was
 * such a line. */
static bool insert_differential(const char *line, size_t len) {
        struct glove_mcp_raw_response r;
        if (glove_mcp_response_scan(line, len, 1 << 20, &r) != 1 || r.is_error)
                return false;
        for (int cacheable = 0; cacheable < 2; cacheable++) {
                char ins[64];
                size_t at;
                const char *v = line + r.value_off;
                int n = glove_kernel_era_insert(v, r.value_len, cacheable, ins, sizeof(ins), &at);
                if (n < 0)
                        fail_msg("the insertion refused a value the scanner vouched for: %.*s", (int)len, line);
                assert_true(at <= r.value_len);
                size_t total = r.value_len + (size_t)n;
                char *out = malloc(total + 1);
                assert_non_null(out);
                memcpy(out, v, at);
                memcpy(out + at, ins, (size_t)n);
                memcpy(out + at + n, v + at, r.value_len - at);
                json_t *got = json_loadb(out, total, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
                json_t *want = json_loadb(v, r.value_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
                assert_non_null(want);
                assert_int_equal(glove_kernel_era_complete(want, cacheable), 0);
                if (!got || !json_equal(got, want))
                        fail_msg("inserting into %.*s gave %.*s", (int)r.value_len, v, (int)total, out);
                json_decref(got);
                json_decref(want);
                free(out);
        }
        return true;
}

static void test_insert_differential(void **state) {
        (void)state;
        size_t taken = 0;
        DIR *d = opendir(FUZZ_CORPUS "/mcp_response_scan");
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.')
                        continue;
                char path[512], buf[1 << 16];
                snprintf(path, sizeof(path), "%s/%s", FUZZ_CORPUS "/mcp_response_scan", e->d_name);
                FILE *f = fopen(path, "r");
                assert_non_null(f);
                size_t n = fread(buf, 1, sizeof(buf), f);
                fclose(f);
                taken += insert_differential(buf, n);
        }
        closedir(d);
        /* Deterministic mutations of odd results: each byte replaced by
         * each of a few bytes that change the structure. */
        static const char *const seeds[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{ \"a\" : [1, {\"resultType\":\"x\"}], \"b\":\"}\\\"{\" ,\"ttlMs\":3 }}",
                "{\"result\":{},\"jsonrpc\":\"2.0\",\"id\":2}",
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"x\":[{\"resultType\":1}] , \"resultType\" :\"complete\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"cacheScope\":\"public\",\"n\":-0.5e-3,\"t\":true,\"z\":null}}",
        };
        static const char subst[] = " {}[]\",:\\0a";
        for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
                size_t len = strlen(seeds[s]);
                taken += insert_differential(seeds[s], len);
                char buf[256];
                for (size_t i = 0; i < len; i++)
                        for (size_t k = 0; k < sizeof(subst) - 1; k++) {
                                memcpy(buf, seeds[s], len);
                                buf[i] = subst[k];
                                taken += insert_differential(buf, len);
                        }
        }
        assert_true(taken > 50); /* the property was tried, not skipped */
}

/* ------------------------------------------------------------------ the gateway */

struct agent {
        sd_event *event;
        struct glove_kernel_gateway *gw;
        int fd;
        char buf[1 << 20];
        size_t len;
        int ready, failed, finished;
        struct glove_error err;
        struct glove_mcp_upstream_spec spec;
        struct glove_policy *policy;
        struct glove_audit_log audit;
        char audit_path[64], log_path[64];
};

static int on_notify(struct glove_kernel_gateway *gw, enum glove_kernel_gateway_event event, const struct glove_error *err,
                     void *userdata) {
        (void)gw;
        struct agent *a = userdata;
        if (event == GLOVE_KERNEL_GATEWAY_READY)
                a->ready++;
        else if (event == GLOVE_KERNEL_GATEWAY_FAILED) {
                a->failed++;
                a->err = *err;
        } else if (event == GLOVE_KERNEL_GATEWAY_FINISHED)
                a->finished++;
        return 0;
}

static void pump(struct agent *a, int *flag) {
        for (int i = 0; i < 2000 && !*flag && !a->failed; i++)
                assert_true(sd_event_run(a->event, 10 * 1000) >= 0);
}

static void agent_send(struct agent *a, const char *line) {
        size_t n = strlen(line);
        assert_int_equal(write(a->fd, line, n), (ssize_t)n);
        assert_int_equal(write(a->fd, "\n", 1), 1);
}

/* The next line the gateway wrote the agent (malloc'd, no newline). */
static char *agent_line(struct agent *a) {
        for (int i = 0; i < 2000; i++) {
                char *nl = memchr(a->buf, '\n', a->len);
                if (nl) {
                        size_t n = (size_t)(nl - a->buf);
                        char *s = strndup(a->buf, n);
                        memmove(a->buf, nl + 1, a->len - n - 1);
                        a->len -= n + 1;
                        return s;
                }
                ssize_t r = read(a->fd, a->buf + a->len, sizeof(a->buf) - a->len);
                if (r > 0) {
                        a->len += (size_t)r;
                        continue;
                }
                assert_true(r < 0 && errno == EAGAIN);
                assert_true(sd_event_run(a->event, 10 * 1000) >= 0);
        }
        fail_msg("no message from the gateway");
        return NULL;
}

/* The text of the gateway's answer to id (other messages skipped). */
static char *answer_text(struct agent *a, int id) {
        for (;;) {
                char *s = agent_line(a);
                json_t *m = json_loads(s, 0, NULL);
                assert_non_null(m);
                json_t *jid = json_object_get(m, "id");
                bool hit = json_is_integer(jid) && json_integer_value(jid) == id && !json_object_get(m, "method");
                json_decref(m);
                if (hit)
                        return s;
                free(s);
        }
}

static json_t *answer(struct agent *a, int id) {
        char *s = answer_text(a, id);
        json_t *m = json_loads(s, 0, NULL);
        free(s);
        return m;
}

/* No answer comes within a few loop turns (a notification is not answered). */
static void no_message(struct agent *a) {
        for (int i = 0; i < 20; i++)
                assert_true(sd_event_run(a->event, 5 * 1000) >= 0);
        ssize_t r = read(a->fd, a->buf + a->len, sizeof(a->buf) - a->len);
        assert_true(r < 0 && errno == EAGAIN);
        assert_int_equal(a->len, 0);
}

static void start(struct agent *a, bool shared) {
        memset(a, 0, sizeof(*a));
        assert_int_equal(sd_event_new(&a->event), 0);
        struct glove_error err = {0};
        assert_int_equal(glove_policy_new(&a->policy), 0);
        assert_int_equal(glove_policy_allow(a->policy, "py.*", &err), 0);
        assert_int_equal(glove_policy_deny(a->policy, "py.sleep", &err), 0);
        assert_int_equal(glove_policy_allow_client(a->policy, "py:sampling", &err), 0);
        snprintf(a->audit_path, sizeof(a->audit_path), "/tmp/glove-era-audit-%d", (int)getpid());
        snprintf(a->log_path, sizeof(a->log_path), "/tmp/glove-era-up-%d", (int)getpid());
        unlink(a->audit_path);
        unlink(a->log_path);
        assert_int_equal(glove_audit_open(a->audit_path, "/", &a->audit, &err), 0);
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        char spec[256];
        snprintf(spec, sizeof(spec), "py=python3," MCP_UPSTREAM_PY ",--raw,--log,%s", a->log_path);
        assert_int_equal(glove_mcp_upstream_spec_parse(spec, env, &a->spec, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&a->spec, env, NULL, 0, &err), 0);
        struct glove_kernel_gateway_config cfg = {
                .policy = a->policy, .upstreams = &a->spec, .n_upstreams = 1, .call_timeout_ms = 20000,
                .max_frame = 65536, .audit = &a->audit, .shared_channel = shared, .notify = on_notify, .userdata = a,
        };
        assert_int_equal(glove_kernel_gateway_new(a->event, &cfg, &a->gw, &err), 0);
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        a->fd = sp[1];
        assert_int_equal(fcntl(a->fd, F_SETFL, O_NONBLOCK), 0);
        int wfd = fcntl(sp[0], F_DUPFD_CLOEXEC, 0);
        assert_true(wfd >= 0);
        assert_int_equal(glove_kernel_gateway_attach_agent(a->gw, sp[0], wfd, &err), 0);
        pump(a, &a->ready);
        assert_int_equal(a->failed, 0);
        assert_int_equal(a->ready, 1);
}

static void stop(struct agent *a) {
        glove_kernel_gateway_agent_exited(a->gw);
        pump(a, &a->finished);
        assert_int_equal(a->finished, 1);
        glove_kernel_gateway_free(a->gw);
        close(a->fd);
        glove_mcp_upstream_spec_free(&a->spec);
        glove_policy_free(a->policy);
        glove_audit_close(&a->audit);
        sd_event_unref(a->event);
        unlink(a->audit_path);
        unlink(a->log_path);
}

/* Every audit record so far, an array. */
static json_t *records(struct agent *a) {
        json_t *all = json_array();
        FILE *f = fopen(a->audit_path, "r");
        assert_non_null(f);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0)
                json_array_append_new(all, load(line));
        free(line);
        fclose(f);
        return all;
}

/* The records of event whose "id" is id. */
static json_t *record_of(json_t *all, const char *event, int id) {
        size_t i;
        json_t *r;
        json_array_foreach(all, i, r) {
                if (strcmp(json_string_value(json_object_get(r, "event")), event) == 0 &&
                    json_integer_value(json_object_get(r, "id")) == id)
                        return r;
        }
        return NULL;
}

/* What the upstream received (its --log), one string. */
static char *upstream_log(struct agent *a) {
        FILE *f = fopen(a->log_path, "r");
        assert_non_null(f);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
        return text;
}

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":\"1\"}"

/* A tools/call of py.raw writing line (a JSON string's contents). */
static void raw_call(struct agent *a, int id, bool modern, const char *line) {
        char req[2048];
        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{%s\"name\":\"py.raw\",\"arguments\":{\"lines\":[\"%s\"]}}}",
                 id, modern ? META "}," : "", line);
        agent_send(a, req);
}

static void expect_raw(struct agent *a, int id, bool modern, const char *line, const char *want) {
        raw_call(a, id, modern, line);
        char *got = answer_text(a, id);
        if (strcmp(got, want) != 0)
                fail_msg("answer %s, not %s", got, want);
        free(got);
}

static void test_modern_requests(void **state) {
        (void)state;
        static struct agent a;
        start(&a, false);

        /* server/discover: every revision, the capabilities initialize would
         * announce, Glove's serverInfo, cacheable. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}}");
        json_t *m = answer(&a, 1);
        json_t *r = json_object_get(m, "result");
        json_t *versions = glove_kernel_era_supported();
        assert_true(json_equal(json_object_get(r, "supportedVersions"), versions));
        json_decref(versions);
        assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
        assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), 0);
        assert_true(json_is_integer(json_object_get(r, "ttlMs")));
        assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "private");
        assert_true(json_object_get(json_object_get(r, "capabilities"), "tools") != NULL);
        json_t *info = json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo");
        assert_string_equal(json_string_value(json_object_get(info, "name")), "glove");
        assert_null(json_object_get(r, "serverInfo"));
        assert_null(json_object_get(r, "protocolVersion"));
        json_decref(m);

        /* tools/list: its own answer, marked and cacheable. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META "}}}");
        m = answer(&a, 2);
        r = json_object_get(m, "result");
        assert_true(json_array_size(json_object_get(r, "tools")) > 0);
        assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
        assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), 0);
        assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "private");
        json_decref(m);

        /* A gathered list (no upstream offers resources: empty), marked too. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\",\"params\":{" META "}}}");
        m = answer(&a, 3);
        json_t *want = load("{\"resources\":[],\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\"}");
        assert_true(json_equal(json_object_get(m, "result"), want));
        json_decref(want);
        json_decref(m);

        /* tools/call allowed: the upstream's result gains resultType; the
         * reserved keys never reach the upstream, progressToken does. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{" META
                       ",\"progressToken\":\"tok\",\"com.example/x\":1},\"name\":\"py.echo\",\"arguments\":{\"text\":\"hi\"}}}");
        m = answer(&a, 4);
        r = json_object_get(m, "result");
        assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")), "hi");
        assert_null(json_object_get(r, "ttlMs")); /* not cacheable */
        json_decref(m);
        char *log = upstream_log(&a);
        assert_null(strstr(log, "io.modelcontextprotocol"));
        assert_non_null(strstr(log, "\"progressToken\":\"tok\""));
        assert_non_null(strstr(log, "\"com.example/x\":1"));
        /* Only reserved keys: _meta is gone altogether. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.echo\",\"arguments\":{\"text\":\"bare\"}}}");
        json_decref(answer(&a, 5));
        log = upstream_log(&a);
        char *bare = strstr(log, "\"bare\"");
        assert_non_null(bare);
        char *eol = strchr(bare, '\n');
        char *sol = bare;
        while (sol > log && sol[-1] != '\n')
                sol--;
        assert_null(memmem(sol, (size_t)(eol - sol), "_meta", 5));

        /* Refused by policy: the same error as for a legacy call. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.sleep\",\"arguments\":{\"ms\":1}}}");
        char *modern_deny = answer_text(&a, 6);
        json_t *md = json_loads(modern_deny, 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(md, "error"), "code")), GLOVE_RPC_POLICY_DENIED);
        assert_null(json_object_get(md, "result"));
        assert_null(strstr(modern_deny, "resultType"));
        json_decref(md);
        free(modern_deny);

        /* -32022: an unknown version, a legacy one, not a string. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                       "\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        m = answer(&a, 7);
        json_t *e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32022);
        assert_string_equal(json_string_value(json_object_get(e, "message")), "Unsupported protocol version");
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "requested")), "1900-01-01");
        assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(e, "data"), "supported"), 0)),
                            "2026-07-28");
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"_meta\":{"
                       "\"io.modelcontextprotocol/protocolVersion\":2026},\"name\":\"py.echo\",\"arguments\":{\"text\":\"no\"}}}");
        m = answer(&a, 8);
        e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32022);
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "requested")), "2026");
        json_decref(m);
        /* -32602: no clientCapabilities. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"_meta\":{"
                       "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"},\"name\":\"py.echo\",\"arguments\":{\"text\":\"no\"}}}");
        m = answer(&a, 9);
        e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
        assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "clientCapabilities"));
        json_decref(m);
        assert_null(strstr(upstream_log(&a), "\"no\"")); /* neither reached the upstream */

        /* Removed methods: -32601 with modern _meta; a removed
         * notification is ignored (no answer) and on record. */
        const char *removed[] = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"};
        for (int i = 0; i < 5; i++) {
                char req[512];
                snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{\"uri\":\"x\",\"level\":\"info\"," META "}}}",
                         20 + i, removed[i]);
                agent_send(&a, req);
                m = answer(&a, 20 + i);
                assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")), -32601);
                json_decref(m);
        }
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{" META "}}}");
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\",\"params\":{" META "}}}");
        no_message(&a);
        /* subscriptions/listen without its filter: -32602. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"subscriptions/listen\",\"params\":{" META "}}}");
        m = answer(&a, 30);
        e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
        json_decref(m);

        /* A granted sampling request of the upstream, while the agent spoke
         * only 2026-07-28: answered to the upstream as agent_unsupported. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.ask\",\"arguments\":{\"method\":\"sampling/createMessage\"}}}");
        m = answer(&a, 31);
        const char *asked = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text"));
        assert_non_null(asked);
        assert_non_null(strstr(asked, "agent_unsupported"));
        json_decref(m);

        /* initialize after modern requests: -32600, never answered as a session. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":32,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                       "\"capabilities\":{},\"clientInfo\":{\"name\":\"l\",\"version\":\"1\"}}}");
        m = answer(&a, 32);
        e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32600);
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "reason")), "era_mixed");
        json_decref(m);
        /* Legacy requests without initialize are still served as before. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":33,\"method\":\"tools/list\"}");
        m = answer(&a, 33);
        assert_null(json_object_get(json_object_get(m, "result"), "resultType"));
        json_decref(m);

        /* The records: era_refused for every refusal of an era; the policy
         * refusal as a legacy one would be. */
        json_t *all = records(&a);
        json_t *deny = record_of(all, "call", 6);
        assert_non_null(deny);
        assert_string_equal(json_string_value(json_object_get(deny, "decision")), "deny");
        assert_string_equal(json_string_value(json_object_get(deny, "tool")), "py.sleep");
        assert_string_equal(json_string_value(json_object_get(deny, "reason")), "policy_denied");
        assert_null(json_object_get(deny, "protocol_version"));
        assert_non_null(record_of(all, "call", 4));
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 7), "reason")),
                            "unsupported_protocol_version");
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 9), "reason")), "invalid_params");
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 20), "reason")), "method_removed");
        assert_null(record_of(all, "era_refused", 30)); /* a listen without its filter: -32602, not an era matter */
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 32), "reason")), "era_mixed");
        assert_null(record_of(all, "call", 8));
        size_t i, notes = 0;
        json_t *rec;
        json_array_foreach(all, i, rec) {
                if (strcmp(json_string_value(json_object_get(rec, "event")), "era_refused") == 0 &&
                    json_is_null(json_object_get(rec, "id")))
                        notes++;
        }
        assert_int_equal(notes, 2);
        json_t *cr = NULL;
        json_array_foreach(all, i, rec) {
                if (strcmp(json_string_value(json_object_get(rec, "event")), "client_request") == 0)
                        cr = rec;
        }
        assert_non_null(cr);
        assert_string_equal(json_string_value(json_object_get(cr, "reason")), "agent_unsupported");
        json_decref(all);
        stop(&a);
}

/* The next notification method the gateway wrote (others skipped). */
static json_t *notification(struct agent *a, const char *method) {
        for (;;) {
                char *s = agent_line(a);
                json_t *m = json_loads(s, 0, NULL);
                free(s);
                assert_non_null(m);
                const char *mm = json_string_value(json_object_get(m, "method"));
                if (mm && strcmp(mm, method) == 0 && !json_object_get(m, "id"))
                        return m;
                json_decref(m);
        }
}

static json_int_t subscription_of(const json_t *m) {
        json_t *id = json_object_get(json_object_get(json_object_get(m, "params"), "_meta"), "io.modelcontextprotocol/subscriptionId");
        return json_is_integer(id) ? json_integer_value(id) : -1;
}

/* subscriptions/listen: acknowledged with the kinds Glove honours (tools:
 * the upstream announces listChanged; prompts: none does; resource
 * subscriptions: never), the tools list_changed comes tagged with the
 * listen's id, its id cannot be reused while it is open, and after
 * notifications/cancelled it gets nothing more; both ends on record. */
static void test_listen(void **state) {
        (void)state;
        static struct agent a;
        start(&a, false);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"subscriptions/listen\",\"params\":{" META
                       "},\"notifications\":{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourceSubscriptions\":[\"x\"]}}}");
        json_t *ack = notification(&a, "notifications/subscriptions/acknowledged");
        assert_int_equal(subscription_of(ack), 40);
        json_t *want = json_pack("{s:b}", "toolsListChanged", 1);
        assert_true(json_equal(json_object_get(json_object_get(ack, "params"), "notifications"), want));
        json_decref(want);
        json_decref(ack);
        /* Its id is in use: a request reusing it is refused (an error with
         * id null, data.id naming it, as for any id in flight). */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"tools/list\",\"params\":{" META "}}}");
        char *line = agent_line(&a);
        json_t *m = json_loads(line, 0, NULL);
        free(line);
        assert_true(json_is_null(json_object_get(m, "id")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(m, "error"), "data"), "id")), 40);
        json_decref(m);
        /* grow: the upstream's list_changed, listed again, on the listen. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\",\"params\":{" META "},\"name\":\"py.grow\",\"arguments\":{}}}");
        /* The agent spoke only 2026-07-28: no untagged broadcast. */
        json_t *n = notification(&a, "notifications/tools/list_changed");
        assert_int_equal(subscription_of(n), 40);
        json_decref(n);
        /* Cancelled: the next change reaches only the listen opened since
         * (43), never 40 (both would be sent by the same change). */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META "},\"requestId\":40}}");
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":43,\"method\":\"subscriptions/listen\",\"params\":{" META
                       "},\"notifications\":{\"toolsListChanged\":true}}}");
        json_decref(notification(&a, "notifications/subscriptions/acknowledged"));
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{" META "},\"name\":\"py.grow\",\"arguments\":{}}}");
        n = notification(&a, "notifications/tools/list_changed");
        assert_int_equal(subscription_of(n), 43);
        json_decref(n);
        no_message(&a);
        json_t *all = records(&a);
        size_t i;
        json_t *r;
        int opened = 0, closed = 0;
        json_array_foreach(all, i, r) {
                if (strcmp(json_string_value(json_object_get(r, "event")), "listen") != 0)
                        continue;
                const char *phase = json_string_value(json_object_get(r, "phase"));
                opened += strcmp(phase, "open") == 0 && json_is_true(json_object_get(r, "resource_subscriptions_refused"));
                closed += strcmp(phase, "close") == 0 && strcmp(json_string_value(json_object_get(r, "how")), "cancelled") == 0;
        }
        assert_int_equal(opened, 1); /* 40 asked for resource subscriptions, 43 did not */
        assert_int_equal(closed, 1);
        json_decref(all);
        stop(&a);
}

/* The fast path: the upstream's bytes, with resultType inserted after the
 * brace for a modern request, unchanged for a legacy one and for errors. */
static void test_fast_path(void **state) {
        (void)state;
        static struct agent a;
        start(&a, false);
        expect_raw(&a, 1, true, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{}}",
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}");
        expect_raw(&a, 2, true, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{ \\\"content\\\" : [ {\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"}{,\\\"} ] ,\\\"n\\\":1.0e2 }}",
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"resultType\":\"complete\", \"content\" : [ {\"type\":\"text\",\"text\":\"}{,\"} ] ,\"n\":1.0e2 }}");
        expect_raw(&a, 3, true, "{\\\"result\\\":{\\\"content\\\":[],\\\"resultType\\\":\\\"complete\\\"},\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@}",
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],\"resultType\":\"complete\"}}");
        expect_raw(&a, 4, true, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"error\\\":{\\\"code\\\":-1,\\\"message\\\":\\\"m\\\"}}",
                   "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-1,\"message\":\"m\"}}");
        expect_raw(&a, 5, true, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{\\\"a\\\":{\\\"resultType\\\":1}}}",
                   "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"resultType\":\"complete\",\"a\":{\"resultType\":1}}}");
        /* Legacy: byte for byte. */
        expect_raw(&a, 6, false, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{ }}",
                   "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{ }}");
        expect_raw(&a, 7, false, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{\\\"content\\\" : [] }}",
                   "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\" : [] }}");
        /* A line the scanner leaves to the tree path (a key written with an
         * escape): marked there. */
        raw_call(&a, 8, true, "{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":@ID@,\\\"result\\\":{\\\"k\\\\u0065y\\\":1}}");
        json_t *m = answer(&a, 8);
        json_t *want = load("{\"key\":1,\"resultType\":\"complete\"}");
        assert_true(json_equal(json_object_get(m, "result"), want));
        json_decref(want);
        json_decref(m);
        stop(&a);
}

/* initialize first: a modern request is refused (-32600) and never
 * reaches an upstream; on a shared channel the gateway lets both be. */
/* inputResponses and requestState answer an input_required result: a
 * modern request's without a seal Glove gave (none here), and a legacy
 * request's at all, are refused, on record, and never reach an upstream
 * as an answer nobody gave. */
static void test_forged_input_responses(void **state) {
        (void)state;
        static struct agent a;
        start(&a, false);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.echo\",\"arguments\":{\"text\":\"forged-modern\"},\"inputResponses\":{\"k\":"
                       "{\"action\":\"accept\"}}}}");
        json_t *m = answer(&a, 1);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")), -32602);
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"py.echo\","
                       "\"arguments\":{\"text\":\"forged-legacy\"},\"requestState\":\"x\"}}");
        m = answer(&a, 2);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")), -32602);
        json_decref(m);
        assert_null(strstr(upstream_log(&a), "forged"));
        json_t *all = records(&a);
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 1), "rule")), "params.requestState");
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 2), "rule")), "params.inputResponses");
        assert_non_null(record_of(all, "era_refused", 2));
        assert_null(record_of(all, "call", 1));
        json_decref(all);
        stop(&a);
}

static void test_mixing(void **state) {
        (void)state;
        static struct agent a;
        start(&a, false);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
        json_t *m = answer(&a, 1);
        json_t *caps = json_deep_copy(json_object_get(json_object_get(m, "result"), "capabilities"));
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.echo\",\"arguments\":{\"text\":\"mixed\"}}}");
        m = answer(&a, 2);
        json_t *e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), -32600);
        assert_string_equal(json_string_value(json_object_get(e, "message")), "modern request on a legacy session");
        json_decref(m);
        assert_null(strstr(upstream_log(&a), "mixed"));
        json_t *all = records(&a);
        assert_string_equal(json_string_value(json_object_get(record_of(all, "era_refused", 2), "reason")), "era_mixed");
        assert_null(record_of(all, "call", 2));
        json_decref(all);
        /* Legacy results stay as they were. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"py.echo\",\"arguments\":{\"text\":\"old\"}}}");
        char *text = answer_text(&a, 3);
        assert_null(strstr(text, "resultType"));
        free(text);
        stop(&a);

        start(&a, true);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}}");
        m = answer(&a, 1);
        json_t *dcaps = json_deep_copy(json_object_get(json_object_get(m, "result"), "capabilities"));
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
        m = answer(&a, 2);
        assert_non_null(json_object_get(m, "result"));
        /* discover announces what initialize does, less what 2026-07-28
         * clients cannot use through Glove: resources.subscribe (resource
         * subscriptions on subscriptions/listen) and logging (per-request
         * logLevel); listChanged stays (on subscriptions/listen). */
        json_t *want = json_deep_copy(json_object_get(json_object_get(m, "result"), "capabilities"));
        json_object_del(want, "logging");
        json_object_del(json_object_get(want, "resources"), "subscribe");
        assert_true(json_equal(dcaps, want));
        json_decref(want);
        assert_true(json_is_true(json_object_get(json_object_get(dcaps, "tools"), "listChanged")));
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{" META
                       "},\"name\":\"py.echo\",\"arguments\":{\"text\":\"shared\"}}}");
        m = answer(&a, 3);
        assert_string_equal(json_string_value(json_object_get(json_object_get(m, "result"), "resultType")), "complete");
        json_decref(m);
        json_decref(dcaps);
        json_decref(caps);
        stop(&a);
}

int main(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify), cmocka_unit_test(test_errors),    cmocka_unit_test(test_strip),
                cmocka_unit_test(test_complete), cmocka_unit_test(test_insert), cmocka_unit_test(test_insert_differential),    cmocka_unit_test(test_modern_requests),
                cmocka_unit_test(test_listen),
                cmocka_unit_test(test_fast_path), cmocka_unit_test(test_mixing), cmocka_unit_test(test_forged_input_responses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
