/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/log.h"

/* The fake clocks. */
struct clock {
        uint64_t mono_us;
        int64_t real_us;
};

static uint64_t fake_mono(void *ctx) {
        return ((struct clock *)ctx)->mono_us;
}

static int64_t fake_real(void *ctx) {
        return ((struct clock *)ctx)->real_us;
}

/* A log writing JSON to a memfd; *fd is the memfd. */
static struct glove_log *make(struct clock *c, int *fd, enum glove_log_level level, unsigned burst) {
        *fd = memfd_create("log", MFD_CLOEXEC);
        assert_true(*fd >= 0);
        struct glove_log_options o = { .level = level, .sink = GLOVE_LOG_SINK_JSON, .fd = *fd,
                                       .identifier = "gloved", .rate_burst = burst,
                                       .rate_interval_us = 10000000, .monotonic_us = fake_mono,
                                       .realtime_us = fake_real, .clock_ctx = c };
        struct glove_log *log = NULL;
        assert_int_equal(glove_log_new(&o, &log), 0);
        return log;
}

/* Everything written to fd so far (caller frees). */
static char *contents(int fd) {
        off_t n = lseek(fd, 0, SEEK_CUR);
        char *s = calloc(1, (size_t)n + 1);
        assert_non_null(s);
        assert_int_equal(pread(fd, s, (size_t)n, 0), n);
        return s;
}

static size_t lines(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

/* Line i (0-based) of s, without its newline (caller frees). */
static char *line_at(const char *s, size_t i) {
        for (; i > 0; i--) {
                s = strchr(s, '\n');
                assert_non_null(s);
                s++;
        }
        const char *e = strchr(s, '\n');
        assert_non_null(e);
        return strndup(s, (size_t)(e - s));
}

static void test_levels_filter(void **state) {
        (void)state;
        struct clock c = { 0 };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_NOTICE, 0);
        assert_false(glove_log_enabled(log, GLOVE_LOG_INFO));
        assert_true(glove_log_enabled(log, GLOVE_LOG_NOTICE));
        glove_log(log, GLOVE_LOG_DEBUG, "t.debug", NULL, "debug");
        glove_log(log, GLOVE_LOG_INFO, "t.info", NULL, "info");
        glove_log(log, GLOVE_LOG_NOTICE, "t.notice", NULL, "notice");
        glove_log(log, GLOVE_LOG_WARNING, "t.warning", NULL, "warning");
        glove_log(log, GLOVE_LOG_ERROR, "t.error", NULL, "error");
        glove_log(NULL, GLOVE_LOG_ERROR, "t.error", NULL, "to nobody");
        glove_log_free(log);
        _cleanup_free_ char *s = contents(fd);
        close(fd);
        assert_int_equal(lines(s), 3);
        const char *want[] = { "notice", "warning", "error" };
        for (size_t i = 0; i < 3; i++) {
                _cleanup_free_ char *l = line_at(s, i);
                json_error_t je;
                json_t *v = json_loads(l, JSON_REJECT_DUPLICATES, &je);
                assert_non_null(v);
                assert_string_equal(json_string_value(json_object_get(v, "level")), want[i]);
                assert_string_equal(json_string_value(json_object_get(v, "msg")), want[i]);
                json_decref(v);
        }
}

/* The exact line: key order, sorted fields, escaping, dropped fields. */
static void test_json_shape_and_escaping(void **state) {
        (void)state;
        struct clock c = { .real_us = 1700000000123456LL };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_INFO, 0);
        glove_log(log, GLOVE_LOG_WARNING, "session.start_failed",
                  GLOVE_LOG_FIELDS({ "session_id", "s\"1" }, { "a_key", "x/y" }, { "Bad", "no" }, { "msg", "no" },
                                   { "nothing", NULL }, { "session_id", "dup" }),
                  "q\"%s\\ nl\n tab\t ctl\x01 del\x7f bad\xff é 🙂", "uote");
        glove_log_free(log);
        _cleanup_free_ char *s = contents(fd);
        close(fd);
        assert_string_equal(s, "{\"ts\":\"2023-11-14T22:13:20.123456Z\",\"level\":\"warning\","
                               "\"code\":\"session.start_failed\","
                               "\"msg\":\"q\\\"uote\\\\ nl\\n tab\\t ctl\\u0001 del\\u007f bad\\ufffd é 🙂\","
                               "\"a_key\":\"x/y\",\"session_id\":\"s\\\"1\"}\n");
        json_error_t je;
        json_t *v = json_loads(s, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(v);
        assert_string_equal(json_string_value(json_object_get(v, "msg")),
                            "q\"uote\\ nl\n tab\t ctl\x01 del\x7f bad\xef\xbf\xbd é 🙂");
        json_decref(v);
}

static void test_long_message_is_cut(void **state) {
        (void)state;
        struct clock c = { 0 };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_INFO, 0);
        char big[GLOVE_LOG_MESSAGE_MAX + 100];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        big[GLOVE_LOG_MESSAGE_MAX - 4] = '\xc3'; /* a two-byte character across the cut */
        big[GLOVE_LOG_MESSAGE_MAX - 3] = '\xa9';
        glove_log(log, GLOVE_LOG_INFO, "t.big", NULL, "%s", big);
        glove_log_free(log);
        _cleanup_free_ char *s = contents(fd);
        close(fd);
        json_error_t je;
        json_t *v = json_loads(s, 0, &je);
        assert_non_null(v); /* still valid UTF-8 */
        const char *m = json_string_value(json_object_get(v, "msg"));
        assert_true(strlen(m) < GLOVE_LOG_MESSAGE_MAX);
        assert_string_equal(m + strlen(m) - 3, "...");
        json_decref(v);
}

static const char *field(json_t *v, const char *k) {
        return json_string_value(json_object_get(v, k));
}

static void test_rate_limit(void **state) {
        (void)state;
        struct clock c = { .mono_us = 1000 };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_INFO, 3);
        for (int i = 0; i < 5; i++)
                glove_log(log, GLOVE_LOG_WARNING, "conn.refused", NULL, "refused %d", i);
        c.mono_us += 1000000;
        glove_log(log, GLOVE_LOG_INFO, "other", NULL, "other 1");
        glove_log(log, GLOVE_LOG_WARNING, "conn.refused", NULL, "refused 5");
        _cleanup_free_ char *s1 = contents(fd);
        assert_int_equal(lines(s1), 4); /* 3 refused, other; none suppressed reported yet */
        c.mono_us += 9000000; /* the interval of conn.refused has passed */
        glove_log(log, GLOVE_LOG_INFO, "other", NULL, "other 2");
        glove_log(log, GLOVE_LOG_WARNING, "conn.refused", NULL, "refused 6");
        _cleanup_free_ char *s2 = contents(fd);
        assert_int_equal(lines(s2), 7);
        _cleanup_free_ char *l4 = line_at(s2, 4), *l5 = line_at(s2, 5), *l6 = line_at(s2, 6);
        json_error_t je;
        json_t *v = json_loads(l4, 0, &je);
        assert_non_null(v);
        assert_string_equal(field(v, "code"), "log.suppressed");
        assert_string_equal(field(v, "level"), "warning");
        assert_string_equal(field(v, "suppressed_code"), "conn.refused");
        assert_string_equal(field(v, "suppressed_count"), "3");
        assert_non_null(strstr(field(v, "msg"), "3 messages of conn.refused suppressed"));
        json_decref(v);
        assert_non_null(strstr(l5, "\"msg\":\"other 2\""));
        assert_non_null(strstr(l6, "\"msg\":\"refused 6\""));
        /* Over the burst again, then the log ends: free reports the rest. */
        for (int i = 0; i < 4; i++)
                glove_log(log, GLOVE_LOG_WARNING, "conn.refused", NULL, "again %d", i);
        glove_log_free(log);
        _cleanup_free_ char *s3 = contents(fd);
        close(fd);
        assert_int_equal(lines(s3), 7 + 2 + 1); /* refused 6 counted in this interval */
        _cleanup_free_ char *last = line_at(s3, 9);
        assert_non_null(strstr(last, "\"suppressed_count\":\"2\""));
}

/* A tick writes the report once the interval has passed, without a
 * further message. */
static void test_rate_limit_tick(void **state) {
        (void)state;
        struct clock c = { .mono_us = 5 };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_INFO, 1);
        assert_int_equal(glove_log_rate_interval_us(log), 10000000);
        glove_log(log, GLOVE_LOG_WARNING, "flood", NULL, "one");
        glove_log(log, GLOVE_LOG_WARNING, "flood", NULL, "two");
        glove_log_tick(log); /* too early */
        _cleanup_free_ char *s1 = contents(fd);
        assert_int_equal(lines(s1), 1);
        c.mono_us += 10000000;
        glove_log_tick(log);
        _cleanup_free_ char *s2 = contents(fd);
        assert_int_equal(lines(s2), 2);
        assert_non_null(strstr(s2, "\"code\":\"log.suppressed\""));
        assert_non_null(strstr(s2, "\"suppressed_count\":\"1\""));
        glove_log_tick(log); /* reported once */
        glove_log_free(log);
        _cleanup_free_ char *s3 = contents(fd);
        close(fd);
        assert_int_equal(lines(s3), 2);
        glove_log_tick(NULL);
        assert_int_equal(glove_log_rate_interval_us(NULL), 0);
}

/* More distinct codes than slots: every code still gets its burst. */
static void test_rate_limit_many_codes(void **state) {
        (void)state;
        struct clock c = { 0 };
        int fd;
        struct glove_log *log = make(&c, &fd, GLOVE_LOG_INFO, 1);
        for (int i = 0; i < GLOVE_LOG_RATE_CODES + 10; i++) {
                char code[32];
                snprintf(code, sizeof(code), "code.%d", i);
                c.mono_us++;
                glove_log(log, GLOVE_LOG_INFO, code, NULL, "m");
                glove_log(log, GLOVE_LOG_INFO, code, NULL, "m"); /* suppressed */
        }
        glove_log_free(log);
        _cleanup_free_ char *s = contents(fd);
        close(fd);
        /* one message and one report per code */
        assert_int_equal(lines(s), 2 * (GLOVE_LOG_RATE_CODES + 10));
}

/* The journal sink: a fake sd_journal_sendv. */
static char journal[16][256];
static int journal_n;
static int journal_rc;

static int fake_sendv(const struct iovec *iov, int n) {
        journal_n = n;
        for (int i = 0; i < n && i < 16; i++)
                snprintf(journal[i], sizeof(journal[i]), "%.*s", (int)iov[i].iov_len, (const char *)iov[i].iov_base);
        return journal_rc;
}

static void test_journal_sink(void **state) {
        (void)state;
        int fd = memfd_create("log", MFD_CLOEXEC);
        struct glove_log_options o = { .sink = GLOVE_LOG_SINK_JOURNAL, .fd = fd, .identifier = "gloved",
                                       .journal_sendv = fake_sendv };
        struct glove_log *log = NULL;
        assert_int_equal(glove_log_new(&o, &log), 0);
        journal_rc = 0;
        glove_log(log, GLOVE_LOG_WARNING, "keeper.lost", GLOVE_LOG_FIELDS({ "session_id", "s1" }),
                  "session %s: keeper.lost: line\nbreak", "s1");
        assert_int_equal(journal_n, 5);
        assert_string_equal(journal[0], "MESSAGE=session s1: keeper.lost: line\nbreak");
        assert_string_equal(journal[1], "PRIORITY=4");
        assert_string_equal(journal[2], "SYSLOG_IDENTIFIER=gloved");
        assert_string_equal(journal[3], "GLOVE_CODE=keeper.lost");
        assert_string_equal(journal[4], "SESSION_ID=s1");
        _cleanup_free_ char *none = contents(fd);
        assert_string_equal(none, "");
        /* The journal refuses: the message goes to fd as JSON. */
        journal_rc = -ECONNREFUSED;
        glove_log(log, GLOVE_LOG_ERROR, "x.y", NULL, "fallback");
        glove_log_free(log);
        _cleanup_free_ char *s = contents(fd);
        close(fd);
        assert_non_null(strstr(s, "\"level\":\"error\",\"code\":\"x.y\",\"msg\":\"fallback\"}\n"));
}

static void test_sink_choose(void **state) {
        (void)state;
        int fd = memfd_create("stream", MFD_CLOEXEC);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        char js[64];
        snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        assert_int_equal(glove_log_sink_choose(js, fd), GLOVE_LOG_SINK_JOURNAL);
        snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
        assert_int_equal(glove_log_sink_choose(js, fd), GLOVE_LOG_SINK_JSON);
        const char *bad[] = { "", "abc", "1:", ":1", "1:2x", "-1:2", "1:-2", "1 2" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(bad); i++)
                assert_int_equal(glove_log_sink_choose(bad[i], fd), GLOVE_LOG_SINK_JSON);
        assert_int_equal(glove_log_sink_choose(NULL, fd), GLOVE_LOG_SINK_JSON);
        snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        close(fd);
        assert_int_equal(glove_log_sink_choose(js, fd), GLOVE_LOG_SINK_JSON); /* closed */
        assert_int_equal(glove_log_sink_choose(js, -1), GLOVE_LOG_SINK_JSON);
}

static void test_level_names(void **state) {
        (void)state;
        const char *names[] = { "error", "warning", "notice", "info", "debug" };
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(names); i++) {
                enum glove_log_level l;
                assert_int_equal(glove_log_level_parse(names[i], &l), 0);
                assert_int_equal(l, GLOVE_LOG_ERROR + (int)i);
                assert_string_equal(glove_log_level_name(l), names[i]);
        }
        enum glove_log_level l;
        assert_int_equal(glove_log_level_parse("warn", &l), -EINVAL);
        assert_int_equal(glove_log_level_parse(NULL, &l), -EINVAL);
        struct glove_log_options o = { .level = 9 };
        struct glove_log *log = NULL;
        assert_int_equal(glove_log_new(&o, &log), -EINVAL);
        assert_null(log);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_levels_filter),         cmocka_unit_test(test_json_shape_and_escaping),
                cmocka_unit_test(test_long_message_is_cut),   cmocka_unit_test(test_rate_limit),
                cmocka_unit_test(test_rate_limit_many_codes), cmocka_unit_test(test_rate_limit_tick), cmocka_unit_test(test_journal_sink),
                cmocka_unit_test(test_sink_choose),           cmocka_unit_test(test_level_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
