/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/audit/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/base/time.h"
#include "glove/base/random.h"

struct fd_path {
        char path[64];
};

static struct fd_path proc_self_fd(int fd) {
        struct fd_path p;
        snprintf(p.path, sizeof(p.path), "/proc/self/fd/%d", fd);
        return p;
}

int glove_audit_open(const char *path, const char *cwd, struct glove_audit_log *log, struct glove_error *err) {
        *log = (struct glove_audit_log){.fd = -1};
        _cleanup_free_ char *norm = NULL;
        int r = glove_path_normalize(path, cwd, &norm, err);
        if (r < 0) {
                glove_error_prefix(err, "%s", path);
                return r;
        }
        /* O_NONBLOCK so that a FIFO without a reader cannot hang the open; it
         * is refused below, and the flag cleared for the regular case. */
        _cleanup_close_ int fd = open(norm, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
        if (fd < 0 && (errno == EISDIR || errno == ENXIO))
                return glove_error_set(err, errno, "audit.file_type", "%s: %s; give a regular file", norm,
                                       errno == EISDIR ? "is a directory" : "is a FIFO or socket");
        if (fd < 0)
                return glove_error_set(err, errno, "audit.open", "%s: %s", norm, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "audit.open", "%s: %s", norm, strerror(errno));
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
                return glove_error_set(err, EINVAL, "audit.file_type", "%s: not a regular file or character device", norm);
        if (fcntl(fd, F_SETFL, O_APPEND) < 0)
                return glove_error_set(err, errno, "audit.open", "%s: %s", norm, strerror(errno));
        /* A record an earlier run could not finish (its file system filled
         * up) is closed with a newline, so it cannot swallow ours. */
        if (S_ISREG(st.st_mode) && st.st_size > 0) {
                _cleanup_close_ int rd = open(proc_self_fd(fd).path, O_RDONLY | O_CLOEXEC);
                char last = '\n';
                if (rd >= 0 && pread(rd, &last, 1, st.st_size - 1) == 1 && last != '\n' && write(fd, "\n", 1) != 1)
                        return glove_error_set(err, errno ? errno : EIO, "audit.append",
                                               "%s: cannot close the torn last record", norm);
        }
        /* The kernel's own name for what was opened, with every link in the
         * directories resolved: the form grants are compared against. */
        char proc[64], canon[GLOVE_PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, canon, sizeof(canon) - 1);
        if (n <= 0 || canon[0] != '/')
                return glove_error_set(err, n < 0 ? errno : EINVAL, "audit.open", "%s: cannot resolve its path", norm);
        canon[n] = '\0';
        log->path = strdup(canon);
        if (!log->path)
                return glove_error_set(err, ENOMEM, "audit.open", "out of memory");
        log->dev = st.st_dev;
        log->ino = st.st_ino;
        log->fd = TAKE_FD(fd);
        return 0;
}

int glove_audit_canonical_path(const char *path, const char *cwd, char **out, struct glove_error *err) {
        *out = NULL;
        _cleanup_free_ char *norm = NULL;
        int r = glove_path_normalize(path, cwd, &norm, err);
        if (r < 0) {
                glove_error_prefix(err, "%s", path);
                return r;
        }
        char *slash = strrchr(norm, '/');
        const char *name = slash + 1;
        if (!*name)
                return glove_error_set(err, EISDIR, "audit.file_type", "%s: is a directory", norm);
        *slash = '\0';
        _cleanup_close_ int dir = open(*norm ? norm : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return glove_error_set(err, errno, "audit.open", "%s/%s: %s", norm, name, strerror(errno));
        char proc[64], canon[GLOVE_PATH_MAX];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dir);
        ssize_t n = readlink(proc, canon, sizeof(canon) - 1);
        if (n <= 0 || canon[0] != '/')
                return glove_error_set(err, n < 0 ? errno : EINVAL, "audit.open", "%s: cannot resolve its directory", path);
        canon[n] = '\0';
        if (asprintf(out, "%s/%s", strcmp(canon, "/") == 0 ? "" : canon, name) < 0) {
                *out = NULL;
                return glove_error_set(err, ENOMEM, "audit.open", "out of memory");
        }
        return 0;
}

void glove_audit_close(struct glove_audit_log *log) {
        glove_closep(&log->fd);
        log->fd = -1;
        free(log->path);
        log->path = NULL;
}

int glove_audit_new_run_id(struct glove_audit_log *log, struct glove_error *err) {
        unsigned char rnd[GLOVE_AUDIT_RUN_ID_BYTES];
        int r = glove_random_bytes(rnd, sizeof(rnd));
        if (r < 0)
                return glove_error_set(err, -r, "audit.run_id", "getrandom: %s", strerror(-r));
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < sizeof(rnd); i++) {
                log->run_id[2 * i] = hex[rnd[i] >> 4];
                log->run_id[2 * i + 1] = hex[rnd[i] & 15];
        }
        log->run_id[GLOVE_AUDIT_RUN_ID_LEN] = '\0';
        return 0;
}

#define RECORD_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* The record object of glove_audit_encode, with "run_id" after "event"
 * when run_id is set: a new reference, or NULL with err set. */
static json_t *record_object(const char *ts, const char *event, const char *run_id, const json_t *fields,
                             struct glove_error *err) {
        _cleanup_json_ json_t *rec = json_object();
        if (!rec || json_object_set_new(rec, "ts", json_string(ts)) < 0 ||
            json_object_set_new(rec, "event", json_string(event)) < 0 ||
            (run_id && json_object_set_new(rec, "run_id", json_string(run_id)) < 0)) {
                glove_error_set(err, EINVAL, "audit.encode", "cannot encode the %s record", event);
                return NULL;
        }
        if (fields) {
                if (!json_is_object(fields)) {
                        glove_error_set(err, EINVAL, "audit.encode", "%s record fields are not an object", event);
                        return NULL;
                }
                const char *key;
                json_t *value;
                json_object_foreach((json_t *)fields, key, value) {
                        if (strcmp(key, "ts") == 0 || strcmp(key, "event") == 0 || (run_id && strcmp(key, "run_id") == 0)) {
                                glove_error_set(err, EINVAL, "audit.encode", "field %s is reserved", key);
                                return NULL;
                        }
                        if (json_object_set(rec, key, value) < 0) {
                                glove_error_set(err, EINVAL, "audit.encode", "cannot encode field %s", key);
                                return NULL;
                        }
                }
        }
        return TAKE_PTR(rec);
}

/* Whether s can stand in a JSON string as it is: printable ASCII but '"'
 * and '\\'. */
static bool plain(const char *s) {
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e || *s == '"' || *s == '\\')
                        return false;
        return true;
}

/* The record's head, {"ts":TS,"event":EVENT[,"run_id":RUN_ID], written
 * into head (size bytes) without building a tree: its length, or 0 when a
 * value is not plain() or it does not fit (the caller then builds the
 * record as a tree). */
static size_t record_head(const char *ts, const char *event, const char *run_id, char *head, size_t size) {
        if (!plain(ts) || !plain(event) || (run_id && !plain(run_id)))
                return 0;
        int n = snprintf(head, size, "{\"ts\":\"%s\",\"event\":\"%s\"%s%s%s", ts, event, run_id ? ",\"run_id\":\"" : "",
                         run_id ? run_id : "", run_id ? "\"" : "");
        return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Checks fields (NULL, or an object none of whose keys is reserved):
 * 0, or -EINVAL with err set. */
static int check_fields(const char *event, const char *run_id, const json_t *fields, struct glove_error *err) {
        if (!fields)
                return 0;
        if (!json_is_object(fields))
                return glove_error_set(err, EINVAL, "audit.encode", "%s record fields are not an object", event);
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)fields, key, value) {
                (void)value;
                if (strcmp(key, "ts") == 0 || strcmp(key, "event") == 0 || (run_id && strcmp(key, "run_id") == 0))
                        return glove_error_set(err, EINVAL, "audit.encode", "field %s is reserved", key);
        }
        return 0;
}

/* Encodes the record of event (ts, event, run_id when set, then fields'
 * members in their order) as one line, its newline included: into
 * buf[0..size) when it fits (*heap NULL), else into a new allocation
 * (*heap, which *line then points to, freed by the caller). When the head
 * is plain (record_head) the head is written by hand and fields encoded
 * once after it (its braces joined to the head's), which is the rule: an
 * audit record is written for every call; else the record is built as a
 * tree and encoded, as glove_audit_encode always did. The bytes are the
 * same either way. *len is the line's length in bytes, at most
 * GLOVE_AUDIT_RECORD_MAX. Returns 0, or a negative errno with err set
 * (audit.encode, audit.too_large, ENOMEM). */
static int encode_line(const char *ts, const char *event, const char *run_id, const json_t *fields, char *buf, size_t size,
                       char **line, size_t *len, char **heap, struct glove_error *err) {
        *line = *heap = NULL;
        *len = 0;
        int r = check_fields(event, run_id, fields, err);
        if (r < 0)
                return r;
        char head[256];
        size_t hlen = record_head(ts, event, run_id, head, sizeof(head));
        _cleanup_json_ json_t *rec = NULL;
        if (!hlen) {
                rec = record_object(ts, event, run_id, fields, err);
                if (!rec)
                        return -EINVAL;
        }
        /* need: the record's bytes without the newline, encoded into out
         * (room bytes) when they fit. */
        size_t need = 0;
        for (int pass = 0; pass < 2; pass++) {
                char *out = pass ? *heap : buf;
                size_t room = pass ? need + 1 : size;
                if (rec) {
                        need = json_dumpb(rec, out, room ? room - 1 : 0, RECORD_FLAGS);
                        if (need == 0)
                                return glove_error_set(err, EINVAL, "audit.encode", "cannot encode the %s record", event);
                } else {
                        /* head, then fields without its "{" (a "," for it), or "}" */
                        size_t fneed = 0;
                        if (fields && json_object_size(fields) > 0) {
                                fneed = json_dumpb(fields, room > hlen ? out + hlen : NULL, room > hlen ? room - hlen - 1 : 0,
                                                   RECORD_FLAGS);
                                if (fneed < 2)
                                        return glove_error_set(err, EINVAL, "audit.encode", "cannot encode the %s record", event);
                                need = hlen + fneed;
                        } else {
                                need = hlen + 1;
                        }
                        if (need + 1 <= room) {
                                memcpy(out, head, hlen);
                                if (fneed)
                                        out[hlen] = ',';
                                else
                                        out[hlen] = '}';
                        }
                }
                if (need + 1 > GLOVE_AUDIT_RECORD_MAX)
                        return glove_error_set(err, EMSGSIZE, "audit.too_large", "%s record of %zu bytes exceeds %d", event,
                                               need + 1, GLOVE_AUDIT_RECORD_MAX);
                if (need + 1 <= room) {
                        out[need] = '\n';
                        *line = out;
                        *len = need + 1;
                        return 0;
                }
                if (pass)
                        break; /* the same value encoded to another length: never expected */
                *heap = malloc(need + 1);
                if (!*heap)
                        return glove_error_set(err, ENOMEM, "audit.encode", "out of memory");
        }
        free(TAKE_PTR(*heap));
        return glove_error_set(err, EINVAL, "audit.encode", "cannot encode the %s record", event);
}

int glove_audit_encode(const char *ts, const char *event, const json_t *fields, char **line, size_t *len,
                       struct glove_error *err) {
        *line = NULL;
        *len = 0;
        char *out, *heap;
        int r = encode_line(ts, event, NULL, fields, NULL, 0, &out, len, &heap, err);
        if (r < 0)
                return r;
        *line = heap;
        return 0;
}

/* Records of up to this many bytes are encoded on the stack (a call record
 * with its arguments digest is about 300). */
#define RECORD_STACK 4096

int glove_audit_append(struct glove_audit_log *log, const char *event, const json_t *fields, struct glove_error *err) {
        if (log->fd < 0)
                return glove_error_set(err, EBADF, "audit.append", "the audit log is closed");
        char ts[GLOVE_TIME_RFC3339_MAX];
        glove_time_now_rfc3339(ts);
        char stack[RECORD_STACK];
        char *line;
        _cleanup_free_ char *heap = NULL;
        size_t len = 0;
        int r = encode_line(ts, event, log->run_id[0] ? log->run_id : NULL, fields, stack, sizeof(stack), &line, &len, &heap,
                            err);
        if (r < 0)
                return r;
        ssize_t n;
        do
                n = write(log->fd, line, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return glove_error_set(err, errno, "audit.append", "appending the %s record to %s: %s", event, log->path,
                                       strerror(errno));
        if ((size_t)n != len)
                return glove_error_set(err, EIO, "audit.append", "short write of the %s record to %s (%zd of %zu bytes)", event,
                                       log->path, n, len);
        return 0;
}

json_t *glove_audit_string(const char *bytes, size_t len) {
        if (glove_json_utf8_valid(bytes, len, NULL) && !memchr(bytes, '\0', len) && !memchr(bytes, '\\', len))
                return json_stringn(bytes, len);
        /* Worst case: every byte becomes four characters. */
        if (len > GLOVE_AUDIT_RECORD_MAX)
                return NULL;
        _cleanup_free_ char *out = malloc(len * 4 + 1);
        if (!out)
                return NULL;
        size_t o = 0, i = 0;
        while (i < len) {
                /* Keep the longest valid UTF-8 sequence starting at i. */
                size_t n = 0;
                unsigned char c = (unsigned char)bytes[i];
                if (c >= 0x01 && c < 0x80 && c != '\\')
                        n = 1;
                else if (c >= 0xC2 && c <= 0xF4) {
                        size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
                        if (i + want <= len && glove_json_utf8_valid(bytes + i, want, NULL))
                                n = want;
                }
                if (n) {
                        memcpy(out + o, bytes + i, n);
                        o += n;
                        i += n;
                } else if (c == '\\') {
                        memcpy(out + o, "\\\\", 2);
                        o += 2;
                        i++;
                } else {
                        o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
                        i++;
                }
        }
        out[o] = '\0';
        return json_stringn(out, o);
}
