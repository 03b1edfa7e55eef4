/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for glove/kernel/gateway.h: a gateway driven with a socketpair
 * as the agent and tests/agents/mcp-upstream.py as its upstream, on one
 * sd-event loop: READY once listed, tools/list names UPSTREAM.TOOL without
 * the entries no rule could name, a denied call answers data.reason
 * policy_denied without reaching the upstream, an allowed one is correlated
 * back, and free leaves no descriptor or child behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/kernel/gateway.h"
#include "glove/mcp/jsonrpc.h"

static int count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));)
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

struct agent {
        sd_event *event;
        struct glove_kernel_gateway *gw;
        int fd;              /* the agent's end of the socketpair */
        char buf[1 << 20];
        size_t len;
        int ready, failed, finished, left_out;
        struct glove_error err;
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
        } else if (event == GLOVE_KERNEL_GATEWAY_LEFT_OUT) {
                a->left_out++;
                a->err = *err;
        } else
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

/* Runs the loop until the gateway answered id; returns the answer. */
static json_t *agent_answer(struct agent *a, int id) {
        for (int i = 0; i < 2000; i++) {
                char *nl;
                while ((nl = memchr(a->buf, '\n', a->len))) {
                        size_t n = (size_t)(nl - a->buf);
                        json_t *m = json_loadb(a->buf, n, 0, NULL);
                        memmove(a->buf, nl + 1, a->len - n - 1);
                        a->len -= n + 1;
                        assert_non_null(m);
                        json_t *jid = json_object_get(m, "id");
                        if (json_is_integer(jid) && json_integer_value(jid) == id)
                                return m;
                        json_decref(m);
                }
                ssize_t r = read(a->fd, a->buf + a->len, sizeof(a->buf) - a->len);
                if (r > 0) {
                        a->len += (size_t)r;
                        continue;
                }
                assert_true(r < 0 && errno == EAGAIN);
                assert_true(sd_event_run(a->event, 10 * 1000) >= 0);
        }
        fail_msg("no answer to request %d", id);
        return NULL;
}

static bool has_name(const json_t *tools, const char *name) {
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return true;
        return false;
}

static void test_gateway(void **state) {
        (void)state;
        static struct agent a;
        memset(&a, 0, sizeof(a));
        /* Counted around the loop too: a source left behind would keep the
         * loop (and its descriptors) alive. */
        int before = count_fds();
        assert_int_equal(sd_event_new(&a.event), 0);
        struct glove_policy *policy = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_policy_new(&policy), 0);
        assert_int_equal(glove_policy_allow(policy, "py.*", &err), 0);
        assert_int_equal(glove_policy_deny(policy, "py.sleep", &err), 0);
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        struct glove_mcp_upstream_spec spec;
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY ",--odd-names", env, &spec, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&spec, env, NULL, 0, &err), 0);
        struct glove_kernel_gateway_config cfg = {
                .policy = policy,
                .upstreams = &spec,
                .n_upstreams = 1,
                .call_timeout_ms = 20000,
                .max_frame = 65536,
                .notify = on_notify,
                .userdata = &a,
        };
        assert_int_equal(glove_kernel_gateway_new(a.event, &cfg, &a.gw, &err), 0);
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        a.fd = sp[1];
        assert_int_equal(fcntl(a.fd, F_SETFL, O_NONBLOCK), 0);
        int wfd = fcntl(sp[0], F_DUPFD_CLOEXEC, 0);
        assert_true(wfd >= 0);
        assert_int_equal(glove_kernel_gateway_attach_agent(a.gw, sp[0], wfd, &err), 0);
        pump(&a, &a.ready);
        assert_int_equal(a.failed, 0);
        assert_int_equal(a.ready, 1);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
        json_t *m = agent_answer(&a, 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(m, "result"), "protocolVersion")), "2025-06-18");
        json_decref(m);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        m = agent_answer(&a, 2);
        json_t *tools = json_object_get(json_object_get(m, "result"), "tools");
        assert_true(json_is_array(tools));
        assert_true(has_name(tools, "py.echo"));
        assert_false(has_name(tools, "py.sleep")); /* denied: not shown */
        assert_false(has_name(tools, "py.twin"));
        assert_false(has_name(tools, "py.star*"));
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) assert_int_equal(strncmp(json_string_value(json_object_get(t, "name")), "py.", 3), 0);
        json_decref(m);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"py.sleep\",\"arguments\":{\"ms\":1}}}");
        m = agent_answer(&a, 3);
        json_t *e = json_object_get(m, "error");
        assert_int_equal(json_integer_value(json_object_get(e, "code")), GLOVE_RPC_POLICY_DENIED);
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "reason")), "policy_denied");
        json_decref(m);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"py.echo\",\"arguments\":{\"text\":\"hi\"}}}");
        m = agent_answer(&a, 4);
        json_t *content = json_object_get(json_object_get(m, "result"), "content");
        assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")), "hi");
        json_decref(m);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"nope.echo\"}}");
        m = agent_answer(&a, 5);
        e = json_object_get(m, "error");
        assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "reason")), "unknown_tool");
        json_decref(m);

        /* The agent leaves: the upstream is asked to end and is reaped. */
        glove_kernel_gateway_agent_exited(a.gw);
        pump(&a, &a.finished);
        assert_int_equal(a.finished, 1);
        assert_int_equal(a.failed, 0);

        glove_kernel_gateway_free(a.gw);
        close(a.fd);
        assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
        glove_mcp_upstream_spec_free(&spec);
        glove_policy_free(policy);
        sd_event_unref(a.event);
        assert_int_equal(count_fds(), before);
}

/* The next message the gateway sent the agent. */
static json_t *agent_next(struct agent *a) {
        for (int i = 0; i < 2000; i++) {
                char *nl = memchr(a->buf, '\n', a->len);
                if (nl) {
                        size_t n = (size_t)(nl - a->buf);
                        json_t *m = json_loadb(a->buf, n, 0, NULL);
                        memmove(a->buf, nl + 1, a->len - n - 1);
                        a->len -= n + 1;
                        assert_non_null(m);
                        return m;
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

/* Server-to-client requests: a granted one reaches the agent with a
 * "glove-" id and its answer returns to the upstream; one not granted is
 * answered by the gateway (policy_denied) and never reaches the agent. */
static void test_client_requests(void **state) {
        (void)state;
        static struct agent a;
        memset(&a, 0, sizeof(a));
        assert_int_equal(sd_event_new(&a.event), 0);
        struct glove_policy *policy = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_policy_new(&policy), 0);
        assert_int_equal(glove_policy_allow(policy, "py.*", &err), 0);
        assert_int_equal(glove_policy_allow_client(policy, "py:sampling", &err), 0);
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        struct glove_mcp_upstream_spec spec;
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY, env, &spec, &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_build_env(&spec, env, NULL, 0, &err), 0);
        struct glove_kernel_gateway_config cfg = {
                .policy = policy, .upstreams = &spec, .n_upstreams = 1, .call_timeout_ms = 20000,
                .max_frame = 65536, .notify = on_notify, .userdata = &a,
        };
        assert_int_equal(glove_kernel_gateway_new(a.event, &cfg, &a.gw, &err), 0);
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        a.fd = sp[1];
        assert_int_equal(fcntl(a.fd, F_SETFL, O_NONBLOCK), 0);
        int wfd = fcntl(sp[0], F_DUPFD_CLOEXEC, 0);
        assert_int_equal(glove_kernel_gateway_attach_agent(a.gw, sp[0], wfd, &err), 0);
        pump(&a, &a.ready);
        assert_int_equal(a.ready, 1);

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
                       "\"capabilities\":{\"sampling\":{},\"roots\":{}}}}");
        json_decref(agent_answer(&a, 1));
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"py.ask\","
                       "\"arguments\":{\"method\":\"sampling/createMessage\"}}}");
        json_t *q = agent_next(&a);
        assert_string_equal(json_string_value(json_object_get(q, "method")), "sampling/createMessage");
        const char *gid = json_string_value(json_object_get(q, "id"));
        assert_non_null(gid);
        assert_int_equal(strncmp(gid, "glove-", 6), 0);
        char reply[256];
        snprintf(reply, sizeof(reply), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"model\":\"unit-model\"}}", gid);
        json_decref(q);
        agent_send(&a, reply);
        json_t *m = agent_answer(&a, 2);
        const char *text = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text"));
        assert_non_null(text);
        assert_non_null(strstr(text, "unit-model"));
        json_decref(m);

        /* roots is not granted: the gateway answers, the agent sees only
         * the call's result. */
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"py.ask\","
                       "\"arguments\":{\"method\":\"roots/list\"}}}");
        m = agent_next(&a);
        assert_int_equal(json_integer_value(json_object_get(m, "id")), 3);
        text = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text"));
        assert_non_null(strstr(text, "policy_denied"));
        json_decref(m);

        glove_kernel_gateway_agent_exited(a.gw);
        pump(&a, &a.finished);
        glove_kernel_gateway_free(a.gw);
        close(a.fd);
        glove_mcp_upstream_spec_free(&spec);
        glove_policy_free(policy);
        sd_event_unref(a.event);
}

/* An upstream that never initializes: the startup bound fails the gateway
 * naming it, and free (with the process still running) reaps it. */
static void test_startup_timeout(void **state) {
        (void)state;
        static struct agent a;
        memset(&a, 0, sizeof(a));
        /* Counted around the loop too: a source left behind would keep the
         * loop (and its descriptors) alive. */
        int before = count_fds();
        assert_int_equal(sd_event_new(&a.event), 0);
        struct glove_policy *policy = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_policy_new(&policy), 0);
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        struct glove_mcp_upstream_spec spec;
        assert_int_equal(glove_mcp_upstream_spec_parse("quiet=python3," MCP_UPSTREAM_PY ",--init,silent", env, &spec, &err), 0);
        struct glove_kernel_gateway_config cfg = {
                .policy = policy, .upstreams = &spec, .n_upstreams = 1, .call_timeout_ms = 200, .max_frame = 65536,
                .notify = on_notify, .userdata = &a,
        };
        assert_int_equal(glove_kernel_gateway_new(a.event, &cfg, &a.gw, &err), 0);
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        assert_int_equal(glove_kernel_gateway_attach_agent(a.gw, sp[0], fcntl(sp[0], F_DUPFD_CLOEXEC, 0), &err), 0);
        pump(&a, &a.failed);
        assert_int_equal(a.ready, 0);
        assert_int_equal(a.failed, 1);
        assert_string_equal(a.err.code, "upstream.start");
        assert_non_null(strstr(a.err.message, "upstream quiet did not finish initializing"));
        glove_kernel_gateway_free(a.gw);
        close(sp[1]);
        assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
        glove_mcp_upstream_spec_free(&spec);
        glove_policy_free(policy);
        sd_event_unref(a.event);
        assert_int_equal(count_fds(), before);
}

/* The same with the silent upstream optional: it is left out at the bound
 * (LEFT_OUT, then READY), its tools are absent, a call of one answers
 * upstream_unavailable, and initialize's instructions name it. */
static void test_startup_optional_left_out(void **state) {
        (void)state;
        static struct agent a;
        memset(&a, 0, sizeof(a));
        int before = count_fds();
        assert_int_equal(sd_event_new(&a.event), 0);
        struct glove_policy *policy = NULL;
        struct glove_error err = {0};
        assert_int_equal(glove_policy_new(&policy), 0);
        assert_int_equal(glove_policy_allow(policy, "py.echo", &err), 0);
        assert_int_equal(glove_policy_allow(policy, "quiet.echo", &err), 0);
        const char *env[] = {"PATH=/usr/bin:/bin", NULL};
        struct glove_mcp_upstream_spec specs[2];
        assert_int_equal(glove_mcp_upstream_spec_parse("py=python3," MCP_UPSTREAM_PY, env, &specs[0], &err), 0);
        assert_int_equal(glove_mcp_upstream_spec_parse("quiet=python3," MCP_UPSTREAM_PY ",--init,silent", env, &specs[1], &err), 0);
        const bool optional[2] = {false, true};
        struct glove_kernel_gateway_config cfg = {
                .policy = policy, .upstreams = specs, .n_upstreams = 2, .upstream_optional = optional, .call_timeout_ms = 300,
                .max_frame = 65536, .notify = on_notify, .userdata = &a,
        };
        assert_int_equal(glove_kernel_gateway_new(a.event, &cfg, &a.gw, &err), 0);
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        a.fd = sp[1];
        assert_int_equal(fcntl(a.fd, F_SETFL, O_NONBLOCK), 0);
        assert_int_equal(glove_kernel_gateway_attach_agent(a.gw, sp[0], fcntl(sp[0], F_DUPFD_CLOEXEC, 0), &err), 0);
        pump(&a, &a.ready);
        assert_int_equal(a.failed, 0);
        assert_int_equal(a.ready, 1);
        assert_int_equal(a.left_out, 1);
        assert_string_equal(a.err.code, "upstream.left_out");
        assert_non_null(strstr(a.err.message, "upstream quiet did not finish initializing"));

        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
        json_t *m = agent_answer(&a, 1);
        const char *instr = json_string_value(json_object_get(json_object_get(m, "result"), "instructions"));
        assert_non_null(instr);
        assert_non_null(strstr(instr, "without the upstream quiet"));
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        m = agent_answer(&a, 2);
        json_t *tools = json_object_get(json_object_get(m, "result"), "tools");
        assert_true(has_name(tools, "py.echo"));
        assert_false(has_name(tools, "quiet.echo"));
        json_decref(m);
        agent_send(&a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"quiet.echo\"}}");
        m = agent_answer(&a, 3);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "error"), "code")), GLOVE_RPC_UPSTREAM_UNAVAILABLE);
        json_decref(m);

        glove_kernel_gateway_agent_exited(a.gw);
        pump(&a, &a.finished);
        assert_int_equal(a.finished, 1);
        glove_kernel_gateway_free(a.gw);
        close(a.fd);
        assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
        glove_mcp_upstream_spec_free(&specs[0]);
        glove_mcp_upstream_spec_free(&specs[1]);
        glove_policy_free(policy);
        sd_event_unref(a.event);
        assert_int_equal(count_fds(), before);
}

int main(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_gateway),
                cmocka_unit_test(test_client_requests),
                cmocka_unit_test(test_startup_timeout),
                cmocka_unit_test(test_startup_optional_left_out),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
