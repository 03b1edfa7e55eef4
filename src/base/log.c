/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/base/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "glove/base/fd.h"
#include "glove/base/time.h"

#define KEY_MAX 64
#define IDENT_MAX 64

struct rate_slot {
        char code[KEY_MAX + 1];
        uint64_t start_us;  /* the interval's first message */
        uint64_t count;     /* messages of this interval, written or not */
        uint64_t suppressed;
        bool used;
};

struct glove_log {
        struct glove_log_options o;
        char ident[IDENT_MAX + 1];
        pthread_mutex_t mu;
        struct rate_slot slots[GLOVE_LOG_RATE_CODES];
};

static const char *const level_names[] = {
        [GLOVE_LOG_ERROR] = "error", [GLOVE_LOG_WARNING] = "warning", [GLOVE_LOG_NOTICE] = "notice",
        [GLOVE_LOG_INFO] = "info",   [GLOVE_LOG_DEBUG] = "debug",
};

const char *glove_log_level_name(enum glove_log_level level) {
        if (level < GLOVE_LOG_ERROR || level > GLOVE_LOG_DEBUG)
                return "?";
        return level_names[level];
}

int glove_log_level_parse(const char *name, enum glove_log_level *out) {
        for (int l = GLOVE_LOG_ERROR; name && l <= GLOVE_LOG_DEBUG; l++)
                if (strcmp(name, level_names[l]) == 0) {
                        *out = (enum glove_log_level)l;
                        return 0;
                }
        return -EINVAL;
}

static uint64_t mono_us(const struct glove_log *log) {
        if (log->o.monotonic_us)
                return log->o.monotonic_us(log->o.clock_ctx);
        return glove_time_monotonic_us();
}

static int64_t real_us(const struct glove_log *log) {
        if (log->o.realtime_us)
                return log->o.realtime_us(log->o.clock_ctx);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int glove_log_new(const struct glove_log_options *o, struct glove_log **out) {
        *out = NULL;
        enum glove_log_level level = o->level ? o->level : GLOVE_LOG_INFO;
        if (level < GLOVE_LOG_ERROR || level > GLOVE_LOG_DEBUG ||
            (o->sink != GLOVE_LOG_SINK_JSON && o->sink != GLOVE_LOG_SINK_JOURNAL))
                return -EINVAL;
        struct glove_log *log = calloc(1, sizeof(*log));
        if (!log)
                return -ENOMEM;
        log->o = *o;
        log->o.level = level;
        if (!log->o.rate_burst)
                log->o.rate_burst = GLOVE_LOG_RATE_BURST_DEFAULT;
        if (!log->o.rate_interval_us)
                log->o.rate_interval_us = GLOVE_LOG_RATE_INTERVAL_US_DEFAULT;
        snprintf(log->ident, sizeof(log->ident), "%s", o->identifier ? o->identifier : "glove");
        log->o.identifier = log->ident;
        if (pthread_mutex_init(&log->mu, NULL) != 0) {
                free(log);
                return -ENOMEM;
        }
        *out = log;
        return 0;
}

bool glove_log_enabled(const struct glove_log *log, enum glove_log_level level) {
        return log && level <= log->o.level;
}

/* ---- text ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4, cp = c & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

/* Cuts s (NUL-terminated, in a buffer of size bytes) to at most max bytes
 * at a UTF-8 boundary, ending in "..." when cut. */
static void cut(char *s, size_t max) {
        size_t n = strlen(s);
        if (n <= max || max < 4)
                return;
        size_t end = max - 3;
        while (end > 0 && ((unsigned char)s[end] & 0xc0) == 0x80)
                end--;
        memcpy(s + end, "...", 4);
}

/* Appends s (n bytes) to out as the inside of a JSON string; returns the
 * new end. out must have room for 6 * n bytes. */
static char *json_escape(char *out, const char *s, size_t n) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        while (i < n) {
                unsigned char c = p[i];
                if (c == '"' || c == '\\') {
                        *out++ = '\\';
                        *out++ = (char)c;
                        i++;
                } else if (c == '\n' || c == '\t' || c == '\r') {
                        *out++ = '\\';
                        *out++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
                        i++;
                } else if (c < 0x20 || c == 0x7f) {
                        memcpy(out, "\\u00", 4);
                        out[4] = hex[c >> 4];
                        out[5] = hex[c & 15];
                        out += 6;
                        i++;
                } else {
                        size_t l = utf8_len(p + i, n - i);
                        if (l == 0) {
                                memcpy(out, "\\ufffd", 6); /* an invalid byte */
                                out += 6;
                                i++;
                        } else {
                                memcpy(out, p + i, l);
                                out += l;
                                i += l;
                        }
                }
        }
        return out;
}

static bool key_ok(const char *k) {
        size_t n = k ? strlen(k) : 0;
        if (n == 0 || n > KEY_MAX || k[0] < 'a' || k[0] > 'z')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
                        return false;
        static const char *const reserved[] = { "ts", "level", "code", "msg" };
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
                if (strcmp(k, reserved[i]) == 0)
                        return false;
        return true;
}

/* The valid fields, sorted by key (duplicates: the first kept). */
static size_t collect(const struct glove_log_field *fields, struct glove_log_field *out) {
        size_t n = 0;
        for (size_t i = 0; fields && fields[i].key && n < GLOVE_LOG_FIELDS_MAX; i++) {
                if (!fields[i].value || !key_ok(fields[i].key))
                        continue;
                size_t j = n;
                bool dup = false;
                for (size_t k = 0; k < n; k++)
                        dup |= strcmp(out[k].key, fields[i].key) == 0;
                if (dup)
                        continue;
                while (j > 0 && strcmp(out[j - 1].key, fields[i].key) > 0) {
                        out[j] = out[j - 1];
                        j--;
                }
                out[j] = fields[i];
                n++;
        }
        return n;
}

static size_t vlen(const char *v) {
        return strnlen(v, GLOVE_LOG_VALUE_MAX);
}

/* ---- sinks ---- */

static void write_json(struct glove_log *log, enum glove_log_level level, const char *code,
                       const struct glove_log_field *f, size_t nf, const char *msg) {
        size_t cap = 128 + 6 * (strlen(msg) + vlen(code));
        for (size_t i = 0; i < nf; i++)
                cap += 8 + strlen(f[i].key) + 6 * vlen(f[i].value);
        char *line = malloc(cap);
        if (!line)
                return;
        int64_t us = real_us(log);
        struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
        char when[GLOVE_TIME_RFC3339_MAX];
        if (glove_time_format_rfc3339(&ts, when) < 0)
                snprintf(when, sizeof(when), "1970-01-01T00:00:00.000000Z");
        char *p = line;
        p += sprintf(p, "{\"ts\":\"%s\",\"level\":\"%s\",\"code\":\"", when, glove_log_level_name(level));
        p = json_escape(p, code, vlen(code));
        p = stpcpy(p, "\",\"msg\":\"");
        p = json_escape(p, msg, strlen(msg));
        *p++ = '"';
        for (size_t i = 0; i < nf; i++) {
                p += sprintf(p, ",\"%s\":\"", f[i].key);
                p = json_escape(p, f[i].value, vlen(f[i].value));
                *p++ = '"';
        }
        p = stpcpy(p, "}\n");
        (void)glove_fd_write_all(log->o.fd, line, (size_t)(p - line));
        free(line);
}

/* "NAME=value" in a new string (value cut at max bytes). */
static char *entry(const char *name, const char *value, size_t max) {
        char *s = NULL;
        if (asprintf(&s, "%s=%.*s", name, (int)max, value) < 0)
                return NULL;
        return s;
}

static int write_journal(struct glove_log *log, enum glove_log_level level, const char *code,
                         const struct glove_log_field *f, size_t nf, const char *msg) {
        char *e[4 + GLOVE_LOG_FIELDS_MAX] = { 0 };
        struct iovec iov[4 + GLOVE_LOG_FIELDS_MAX];
        char prio[2] = { (char)('0' + level), '\0' };
        size_t n = 0;
        e[n++] = entry("MESSAGE", msg, GLOVE_LOG_MESSAGE_MAX);
        e[n++] = entry("PRIORITY", prio, 1);
        e[n++] = entry("SYSLOG_IDENTIFIER", log->ident, IDENT_MAX);
        e[n++] = entry("GLOVE_CODE", code, GLOVE_LOG_VALUE_MAX);
        for (size_t i = 0; i < nf; i++) {
                char key[KEY_MAX + 1];
                size_t k = 0;
                for (; f[i].key[k]; k++)
                        key[k] = (char)(f[i].key[k] >= 'a' && f[i].key[k] <= 'z' ? f[i].key[k] - 'a' + 'A'
                                                                                   : f[i].key[k]);
                key[k] = '\0';
                e[n++] = entry(key, f[i].value, GLOVE_LOG_VALUE_MAX);
        }
        int r = 0;
        for (size_t i = 0; i < n; i++) {
                if (!e[i])
                        r = -ENOMEM;
                else
                        iov[i] = (struct iovec){ .iov_base = e[i], .iov_len = strlen(e[i]) };
        }
        if (r == 0)
                r = log->o.journal_sendv(iov, (int)n);
        for (size_t i = 0; i < n; i++)
                free(e[i]);
        return r;
}

static void emit(struct glove_log *log, enum glove_log_level level, const char *code,
                 const struct glove_log_field *fields, const char *msg) {
        struct glove_log_field f[GLOVE_LOG_FIELDS_MAX];
        size_t nf = collect(fields, f);
        if (log->o.sink == GLOVE_LOG_SINK_JOURNAL && log->o.journal_sendv &&
            write_journal(log, level, code, f, nf, msg) >= 0)
                return;
        write_json(log, level, code, f, nf, msg);
}

/* ---- the rate limit ---- */

static void report_suppressed(struct glove_log *log, struct rate_slot *s) {
        if (!s->suppressed)
                return;
        char n[24], secs[24];
        snprintf(n, sizeof(n), "%" PRIu64, s->suppressed);
        snprintf(secs, sizeof(secs), "%" PRIu64, log->o.rate_interval_us / 1000000);
        char msg[256];
        snprintf(msg, sizeof(msg), "%s messages of %s suppressed (more than %u in %s s)", n, s->code,
                 log->o.rate_burst, secs);
        emit(log, GLOVE_LOG_WARNING, "log.suppressed",
             GLOVE_LOG_FIELDS({ "suppressed_code", s->code }, { "suppressed_count", n }), msg);
        s->suppressed = 0;
}

/* The reports whose interval has passed. */
static void report_due(struct glove_log *log, uint64_t now) {
        for (size_t i = 0; i < GLOVE_LOG_RATE_CODES; i++) {
                struct rate_slot *s = &log->slots[i];
                if (s->used && s->suppressed && now - s->start_us >= log->o.rate_interval_us)
                        report_suppressed(log, s);
        }
}

/* True when a message of code may be written now. */
static bool admit(struct glove_log *log, const char *code, uint64_t now) {
        struct rate_slot *s = NULL, *free_slot = NULL, *oldest = NULL;
        for (size_t i = 0; i < GLOVE_LOG_RATE_CODES; i++) {
                struct rate_slot *t = &log->slots[i];
                if (t->used && strncmp(t->code, code, KEY_MAX) == 0) {
                        s = t;
                        break;
                }
                if (!t->used) {
                        if (!free_slot)
                                free_slot = t;
                } else if (!oldest || t->start_us < oldest->start_us) {
                        oldest = t;
                }
        }
        if (!s) {
                s = free_slot ? free_slot : oldest;
                if (s->used)
                        report_suppressed(log, s);
                *s = (struct rate_slot){ .used = true, .start_us = now };
                snprintf(s->code, sizeof(s->code), "%s", code);
        }
        if (now - s->start_us >= log->o.rate_interval_us) {
                report_suppressed(log, s);
                s->start_us = now;
                s->count = 0;
        }
        if (++s->count <= log->o.rate_burst)
                return true;
        s->suppressed++;
        return false;
}

void glove_log(struct glove_log *log, enum glove_log_level level, const char *code,
               const struct glove_log_field *fields, const char *fmt, ...) {
        if (!glove_log_enabled(log, level))
                return;
        if (!code || !*code)
                code = "log.no_code";
        char msg[GLOVE_LOG_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (n < 0)
                snprintf(msg, sizeof(msg), "(unformattable message)");
        else if ((size_t)n >= sizeof(msg)) {
                msg[sizeof(msg) - 1] = '\0';
                cut(msg, sizeof(msg) - 2);
        }
        pthread_mutex_lock(&log->mu);
        uint64_t now = mono_us(log);
        report_due(log, now);
        if (admit(log, code, now))
                emit(log, level, code, fields, msg);
        pthread_mutex_unlock(&log->mu);
}

void glove_log_flush(struct glove_log *log) {
        if (!log)
                return;
        pthread_mutex_lock(&log->mu);
        for (size_t i = 0; i < GLOVE_LOG_RATE_CODES; i++)
                if (log->slots[i].used)
                        report_suppressed(log, &log->slots[i]);
        pthread_mutex_unlock(&log->mu);
}

void glove_log_tick(struct glove_log *log) {
        if (!log)
                return;
        pthread_mutex_lock(&log->mu);
        report_due(log, mono_us(log));
        pthread_mutex_unlock(&log->mu);
}

uint64_t glove_log_rate_interval_us(const struct glove_log *log) {
        return log ? log->o.rate_interval_us : 0;
}

void glove_log_free(struct glove_log *log) {
        if (!log)
                return;
        glove_log_flush(log);
        pthread_mutex_destroy(&log->mu);
        free(log);
}

enum glove_log_sink glove_log_sink_choose(const char *journal_stream, int fd) {
        if (!journal_stream || !*journal_stream)
                return GLOVE_LOG_SINK_JSON;
        char *end;
        errno = 0;
        if (journal_stream[0] < '0' || journal_stream[0] > '9')
                return GLOVE_LOG_SINK_JSON;
        unsigned long long dev = strtoull(journal_stream, &end, 10);
        if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
                return GLOVE_LOG_SINK_JSON;
        unsigned long long ino = strtoull(end + 1, &end, 10);
        if (errno || *end)
                return GLOVE_LOG_SINK_JSON;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return GLOVE_LOG_SINK_JSON;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino ? GLOVE_LOG_SINK_JOURNAL
                                                                                           : GLOVE_LOG_SINK_JSON;
}
