/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper's launch (keeper.h, "the executable and its launch";
 * docs/recovery.md, "The keeper"): gloved encodes the session description
 * into a sealed memfd; glove-keeper decodes it into a description of its
 * own (keeper_exe.c starts it and reads the memfd).
 *
 * What travels: the strings and numbers of struct glove_session_desc; the
 * seccomp programs by the name of the prebuilt one; the egress policy as
 * its rules' text (parsed again by glove_net_policy_add_rule); the mount
 * entries the add_mounts hook adds (recorded on an empty plan here,
 * replayed by the same glove_mount_plan_add_* functions there); and the
 * descriptors (channel, listening socket, keepers directory, egress audit
 * log, held lease locks, the inherited stream, the local-service sockets)
 * and the local services' opaque text. Nothing else of gloved's memory reaches the
 * keeper: the exec replaces it.
 */
#include "glove/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/container/mount_plan.h"
#include "glove/container/seccomp.h"
#include "glove/net/rule.h"
#include "keeper_internal.h"
#include "keeper_launch_internal.h"

/* ---- encoding ---- */

static const struct {
        const char *name;
        const struct sock_fprog *prog;
} seccomp_names[] = {
        { "default", &glove_seccomp_prebuilt },
        { "egress", &glove_seccomp_prebuilt_egress },
        { "no_unix", &glove_seccomp_prebuilt_no_unix },
        { "no_unix_egress", &glove_seccomp_prebuilt_no_unix_egress },
        { "managed", &glove_seccomp_prebuilt_managed },
        { "managed_egress", &glove_seccomp_prebuilt_managed_egress },
        { "managed_inherited", &glove_seccomp_prebuilt_managed_inherited },
        { "managed_unix", &glove_seccomp_prebuilt_managed_unix },
};

static const char *seccomp_name(const struct sock_fprog *p) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(seccomp_names); i++)
                if (seccomp_names[i].prog == p)
                        return seccomp_names[i].name;
        return NULL;
}

static const struct sock_fprog *seccomp_prog(const char *name) {
        for (size_t i = 0; name && i < GLOVE_ELEMENTSOF(seccomp_names); i++)
                if (strcmp(seccomp_names[i].name, name) == 0)
                        return seccomp_names[i].prog;
        return NULL;
}


static json_t *jstr_or_null(const char *s) {
        return s ? json_string(s) : json_null();
}

static json_t *strv_json(char *const *v) {
        json_t *a = json_array();
        for (size_t i = 0; a && v && v[i]; i++)
                if (json_array_append_new(a, json_string(v[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}


static json_t *termios_json(const struct termios *t) {
        if (!t)
                return json_null();
        json_t *cc = json_array();
        for (size_t i = 0; cc && i < NCCS; i++)
                json_array_append_new(cc, ju(t->c_cc[i]));
        return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "iflag", ju(t->c_iflag), "oflag", ju(t->c_oflag), "cflag",
                         ju(t->c_cflag), "lflag", ju(t->c_lflag), "cc", cc ? cc : json_null(), "ispeed",
                         ju(cfgetispeed(t)), "ospeed", ju(cfgetospeed(t)));
}

static json_t *egress_json(const struct glove_net_policy *e) {
        if (!e)
                return json_null();
        json_t *a = json_array();
        for (size_t i = 0; a && i < e->n_rules; i++) {
                const struct glove_net_rule *r = &e->rules[i];
                char text[GLOVE_NET_RULE_TEXT_MAX + 8];
                bool v6 = r->host.kind == GLOVE_NET_HOST_IPV6;
                snprintf(text, sizeof(text), v6 ? "%s[%s]:%u" : "%s%s:%u", r->subdomains ? "." : "", r->host.text,
                         (unsigned)r->port);
                json_array_append_new(a, json_pack("{s:s,s:b}", "rule", text, "allow_private", r->allow_private));
        }
        return a;
}

/* An inherited stream is offline, under the filter committed to its
 * descriptor (seccomp.h, GLOVE_SECCOMP_INHERITED). */
static bool inherit_composition_ok(const struct glove_session_desc *d) {
        return !d->has_inherit_fd || (d->seccomp == &glove_seccomp_prebuilt_managed_inherited && !d->egress && !d->mcp_listen);
}

static bool fd_kind(int fd, mode_t want) {
        struct stat st;
        return fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == want;
}

/* Whether fd is a socket of that domain and type (SO_DOMAIN, SO_TYPE). */
static bool socket_is(int fd, int domain, int type) {
        int v = -1;
        socklen_t len = sizeof(v);
        if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || len != sizeof(v) || v != domain)
                return false;
        len = sizeof(v);
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && len == sizeof(v) && v == type;
}

static json_t *desc_json(const struct glove_session_desc *d, struct glove_error *err) {
        if (d->grants && d->grants->count > 0) {
                glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported", "a keeper takes no grant set");
                return NULL;
        }
        if (d->terminal == GLOVE_TERMINAL_STDERR || d->mcp_listen || d->channel_stdin_fd >= 0 ||
            d->channel_stdout_fd >= 0) {
                glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported",
                                "a keeper takes neither a stdio channel nor an MCP listener");
                return NULL;
        }
        const char *sc = seccomp_name(d->seccomp), *sce = d->seccomp_egress ? seccomp_name(d->seccomp_egress) : NULL;
        if (!sc || (d->seccomp_egress && !sce)) {
                glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported",
                                "a keeper takes only the prebuilt seccomp programs");
                return NULL;
        }
        if (!inherit_composition_ok(d)) {
                glove_error_set(err, EOPNOTSUPP, "keeper.launch_unsupported",
                                "an inherited stream goes only with the managed_inherited filter and no egress");
                return NULL;
        }
        json_t *cwd = NULL;
        json_t *mounts = glove_keeper_launch_mounts_json(d, &cwd, err);
        if (!mounts)
                return NULL;
        json_t *o = json_object();
        int bad = !o;
        if (bad) {
                json_decref(mounts);
                json_decref(cwd);
                glove_error_set(err, ENOMEM, "keeper.launch", "out of memory");
                return NULL;
        }
        put(o, "mounts", mounts, &bad);
        put(o, "plan_cwd", cwd, &bad);
        put(o, "argv", strv_json(d->argv), &bad);
        put(o, "envp", strv_json(d->envp), &bad);
        put(o, "cwd", jstr_or_null(d->cwd), &bad);
        put(o, "seccomp", json_string(sc), &bad);
        put(o, "seccomp_egress", jstr_or_null(sce), &bad);
        put(o, "limits",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "cpu_time_ms", ju(d->limits.cpu_time_ms), "memory_bytes",
                      ju(d->limits.memory_bytes), "pids", ju(d->limits.pids), "wall_time_ms", ju(d->limits.wall_time_ms),
                      "disk_bytes", ju(d->limits.disk_bytes), "terminal_output_bytes",
                      ju(d->limits.terminal_output_bytes)),
            &bad);
        put(o, "cgroup_required", json_boolean(d->cgroup_policy == GLOVE_SESSION_CGROUP_REQUIRED), &bad);
        put(o, "cgroup_pin",
            d->cgroup_pin.set ? json_pack("{s:o,s:o}", "dev", ju(d->cgroup_pin.dev), "ino", ju(d->cgroup_pin.ino))
                              : json_null(),
            &bad);
        put(o, "pty", json_boolean(d->terminal == GLOVE_TERMINAL_PTY), &bad);
        put(o, "tty_modes", termios_json(d->tty_modes), &bad);
        put(o, "rows", ju(d->rows), &bad);
        put(o, "cols", ju(d->cols), &bad);
        put(o, "input_closed", json_boolean(d->input_closed), &bad);
        put(o, "transcript_bytes", ju(d->transcript_bytes), &bad);
        put(o, "egress", egress_json(d->egress), &bad);
        put(o, "audit_max_bytes", ju(d->audit_max_bytes), &bad);
        put(o, "egress_upstream", jstr_or_null(d->egress_upstream), &bad);
        put(o, "file_size_max", ju(d->file_size_max), &bad);
        put(o, "nofile", ju(d->nofile), &bad);
        if (bad) {
                json_decref(o);
                glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the launch");
                return NULL;
        }
        return o;
}

int glove_keeper_launch_encode(const struct glove_keeper_args *a, int *memfd, int *fds, size_t *n_fds,
                               struct glove_error *err) {
        *memfd = -1;
        *n_fds = 0;
        if (!a || !a->desc || !a->session_id || !a->stem || a->channel_fd < 0 || a->listen_fd < 0 || a->dir_fd < 0 ||
            (a->n_hold_fds && !a->hold_fds) || a->n_hold_fds > GLOVE_KEEPER_HOLD_FDS_MAX ||
            (a->n_service_fds && !a->service_fds) || a->n_service_fds > GLOVE_KEEPER_SERVICE_FDS_MAX)
                return glove_error_set(err, EINVAL, "keeper.launch", "incomplete keeper arguments");
        if (a->desc->has_inherit_fd && !socket_is(a->desc->inherit_fd, AF_UNIX, SOCK_STREAM))
                return glove_error_set(err, EINVAL, "keeper.launch", "the inherited stream is not an AF_UNIX stream socket");
        for (size_t i = 0; i < a->n_service_fds; i++)
                if (!fd_kind(a->service_fds[i], S_IFSOCK))
                        return glove_error_set(err, EINVAL, "keeper.launch", "service descriptor %zu is not a socket", i);
        size_t svc_len = a->services_json ? strnlen(a->services_json, GLOVE_KEEPER_SERVICES_JSON_MAX + 1) : 0;
        if (svc_len > GLOVE_KEEPER_SERVICES_JSON_MAX)
                return glove_error_set(err, E2BIG, "keeper.launch", "the services text takes more than %u bytes",
                                       GLOVE_KEEPER_SERVICES_JSON_MAX);
        const struct glove_audit_log *au = a->desc->audit && a->desc->audit->fd >= 0 ? a->desc->audit : NULL;
        _cleanup_json_ json_t *desc = desc_json(a->desc, err);
        if (!desc)
                return -(err->errnum ? err->errnum : EINVAL);
        _cleanup_json_ json_t *o =
                json_pack("{s:i,s:s,s:s,s:o,s:b,s:I,s:o,s:O}", "version", GLOVE_KEEPER_LAUNCH_VERSION, "session_id",
                          a->session_id, "stem", a->stem, "cgroup_parent", jstr_or_null(a->cgroup_parent), "cgroup_v2",
                          a->cgroup_v2, "n_hold", (json_int_t)a->n_hold_fds, "audit",
                          au ? json_pack("{s:s?,s:o,s:o,s:s}", "path", au->path, "dev", ju(au->dev), "ino", ju(au->ino),
                                         "run_id", au->run_id)
                             : json_null(),
                          "desc", desc);
        if (o && a->refinement_fixture &&
            json_object_set_new(o, "refinement_fixture",
                                json_stringn(a->refinement_fixture, a->refinement_fixture_len)) < 0)
                return glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the launch");
        if (!o)
                return glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the launch");
        /* The inherited stream and the services follow the held
         * descriptors; services_json is opaque text (jansson refuses
         * invalid UTF-8). */
        json_t *svc = a->services_json ? json_stringn(a->services_json, svc_len) : json_null();
        if (!svc && a->services_json)
                return glove_error_set(err, EINVAL, "keeper.launch", "the services text is not valid UTF-8");
        if (json_object_set_new(o, "inherit", json_boolean(a->desc->has_inherit_fd)) < 0 ||
            json_object_set_new(o, "n_services", json_integer((json_int_t)a->n_service_fds)) < 0 ||
            json_object_set_new(o, "services_json", svc) < 0)
                return glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the launch");
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
        size_t len = text ? strlen(text) : 0;
        if (!text)
                return glove_error_set(err, ENOMEM, "keeper.launch", "out of memory encoding the launch");
        if (len > GLOVE_KEEPER_LAUNCH_MAX)
                return glove_error_set(err, E2BIG, "keeper.launch", "the launch takes %zu bytes, more than %u", len,
                                       GLOVE_KEEPER_LAUNCH_MAX);
        _cleanup_close_ int fd = memfd_create("glove-keeper-launch", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return glove_error_set(err, errno, "keeper.launch", "memfd_create: %s", strerror(errno));
        int r = glove_fd_write_all(fd, text, len);
        if (r < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                return glove_error_set(err, r < 0 ? -r : errno, "keeper.launch", "the launch memfd: %s",
                                       strerror(r < 0 ? -r : errno));
        size_t n = 0;
        fds[n++] = a->channel_fd;
        fds[n++] = a->listen_fd;
        fds[n++] = a->dir_fd;
        if (au)
                fds[n++] = au->fd;
        for (size_t i = 0; i < a->n_hold_fds; i++)
                fds[n++] = a->hold_fds[i];
        if (a->desc->has_inherit_fd)
                fds[n++] = a->desc->inherit_fd;
        for (size_t i = 0; i < a->n_service_fds; i++)
                fds[n++] = a->service_fds[i];
        *n_fds = n;
        *memfd = TAKE_FD(fd);
        return 0;
}

/* ---- decoding ---- */

struct glove_keeper_launch {
        json_t *root; /* owns every string below */
        struct glove_keeper_args args;
        struct glove_session_desc desc;
        struct glove_grant_set grants;
        struct glove_net_policy egress;
        bool have_egress;
        struct glove_audit_log audit;
        struct termios tty;
        const char **argv, **envp;
        const json_t *mounts;
        const char *plan_cwd;
        int hold[GLOVE_KEEPER_HOLD_FDS_MAX];
        int services[GLOVE_KEEPER_SERVICE_FDS_MAX];
};

void glove_keeper_launch_free(struct glove_keeper_launch *l) {
        if (!l)
                return;
        if (l->have_egress)
                glove_net_policy_free(&l->egress);
        free(l->argv);
        free(l->envp);
        json_decref(l->root);
        free(l);
}

const struct glove_keeper_args *glove_keeper_launch_args(const struct glove_keeper_launch *l) {
        return &l->args;
}

/* The keeper's add_mounts: the recorded entries, in order. */
static int launch_add_mounts(struct glove_mount_plan *plan, void *ctx, struct glove_error *err) {
        const struct glove_keeper_launch *l = ctx;
        size_t i;
        const json_t *o;
        json_array_foreach(l->mounts, i, o) {
                int r = glove_keeper_launch_entry_replay(plan, o, err);
                if (r < 0)
                        return r;
        }
        if (l->plan_cwd)
                return glove_mount_plan_set_cwd(plan, l->plan_cwd, err);
        return 0;
}

static int invalid(struct glove_error *err, const char *what) {
        return glove_error_set(err, EINVAL, "keeper.launch_invalid", "the launch's %s is missing or malformed", what);
}

static const char **strv(const json_t *a) {
        if (!json_is_array(a))
                return NULL;
        size_t n = json_array_size(a);
        const char **v = calloc(n + 1, sizeof(*v));
        for (size_t i = 0; v && i < n; i++)
                if (!(v[i] = json_string_value(json_array_get(a, i)))) {
                        free(v);
                        return NULL;
                }
        return v;
}

static int decode_desc(struct glove_keeper_launch *l, const json_t *d, struct glove_error *err) {
        struct glove_session_desc *s = &l->desc;
        s->channel_stdin_fd = -1;
        s->channel_stdout_fd = -1;
        s->mcp_listen_fd = -1;
        glove_grant_set_init(&l->grants);
        s->grants = &l->grants;
        if (!(l->argv = strv(json_object_get(d, "argv"))) || !l->argv[0])
                return invalid(err, "argv");
        if (!(l->envp = strv(json_object_get(d, "envp"))))
                return invalid(err, "envp");
        s->argv = (char *const *)l->argv;
        s->envp = (char *const *)l->envp;
        s->cwd = jget_str(d, "cwd");
        s->seccomp = seccomp_prog(jget_str(d, "seccomp"));
        if (!s->seccomp)
                return invalid(err, "seccomp");
        const char *sce = jget_str(d, "seccomp_egress");
        if (sce && !(s->seccomp_egress = seccomp_prog(sce)))
                return invalid(err, "seccomp_egress");
        const json_t *lim = json_object_get(d, "limits");
        if (jget_u64(lim, "cpu_time_ms", &s->limits.cpu_time_ms) < 0 ||
            jget_u64(lim, "memory_bytes", &s->limits.memory_bytes) < 0 || jget_u64(lim, "pids", &s->limits.pids) < 0 ||
            jget_u64(lim, "wall_time_ms", &s->limits.wall_time_ms) < 0 ||
            jget_u64(lim, "disk_bytes", &s->limits.disk_bytes) < 0 ||
            jget_u64(lim, "terminal_output_bytes", &s->limits.terminal_output_bytes) < 0)
                return invalid(err, "limits");
        s->cgroup_policy = json_is_true(json_object_get(d, "cgroup_required")) ? GLOVE_SESSION_CGROUP_REQUIRED
                                                                                : GLOVE_SESSION_CGROUP_OPTIONAL;
        const json_t *pin = json_object_get(d, "cgroup_pin");
        if (json_is_object(pin)) {
                s->cgroup_pin.set = true;
                if (jget_u64(pin, "dev", &s->cgroup_pin.dev) < 0 || jget_u64(pin, "ino", &s->cgroup_pin.ino) < 0)
                        return invalid(err, "cgroup_pin");
        } else if (!json_is_null(pin)) {
                return invalid(err, "cgroup_pin");
        }
        s->terminal = json_is_true(json_object_get(d, "pty")) ? GLOVE_TERMINAL_PTY : GLOVE_TERMINAL_PIPES;
        const json_t *tm = json_object_get(d, "tty_modes");
        if (json_is_object(tm)) {
                uint64_t v[6];
                const json_t *cc = json_object_get(tm, "cc");
                if (jget_u64(tm, "iflag", &v[0]) < 0 || jget_u64(tm, "oflag", &v[1]) < 0 ||
                    jget_u64(tm, "cflag", &v[2]) < 0 || jget_u64(tm, "lflag", &v[3]) < 0 ||
                    jget_u64(tm, "ispeed", &v[4]) < 0 || jget_u64(tm, "ospeed", &v[5]) < 0 || !json_is_array(cc) ||
                    json_array_size(cc) != NCCS)
                        return invalid(err, "tty_modes");
                memset(&l->tty, 0, sizeof(l->tty));
                l->tty.c_iflag = (tcflag_t)v[0];
                l->tty.c_oflag = (tcflag_t)v[1];
                l->tty.c_cflag = (tcflag_t)v[2];
                l->tty.c_lflag = (tcflag_t)v[3];
                for (size_t i = 0; i < NCCS; i++)
                        l->tty.c_cc[i] = (cc_t)json_integer_value(json_array_get(cc, i));
                (void)cfsetispeed(&l->tty, (speed_t)v[4]);
                (void)cfsetospeed(&l->tty, (speed_t)v[5]);
                s->tty_modes = &l->tty;
        }
        uint64_t rows = 0, cols = 0, tb = 0;
        if (jget_u64(d, "rows", &rows) < 0 || jget_u64(d, "cols", &cols) < 0 || rows > 65535 || cols > 65535 ||
            jget_u64(d, "transcript_bytes", &tb) < 0 || jget_u64(d, "audit_max_bytes", &s->audit_max_bytes) < 0 ||
            jget_u64(d, "file_size_max", &s->file_size_max) < 0 || jget_u64(d, "nofile", &s->nofile) < 0)
                return invalid(err, "numbers");
        s->rows = (unsigned short)rows;
        s->cols = (unsigned short)cols;
        s->transcript_bytes = (size_t)tb;
        s->input_closed = json_is_true(json_object_get(d, "input_closed"));
        s->egress_upstream = jget_str(d, "egress_upstream");
        const json_t *eg = json_object_get(d, "egress");
        if (json_is_array(eg)) {
                glove_net_policy_init(&l->egress);
                l->have_egress = true;
                size_t i;
                const json_t *r;
                json_array_foreach(eg, i, r) {
                        const char *text = jget_str(r, "rule");
                        if (!text)
                                return invalid(err, "egress");
                        int rr = glove_net_policy_add_rule(&l->egress, text, json_is_true(json_object_get(r, "allow_private")),
                                                           err);
                        if (rr < 0)
                                return rr;
                }
                s->egress = &l->egress;
        } else if (!json_is_null(eg)) {
                return invalid(err, "egress");
        }
        l->mounts = json_object_get(d, "mounts");
        if (!json_is_array(l->mounts))
                return invalid(err, "mounts");
        l->plan_cwd = jget_str(d, "plan_cwd");
        if (json_array_size(l->mounts) || l->plan_cwd) {
                s->add_mounts = launch_add_mounts;
                s->add_mounts_ctx = l;
        }
        return 0;
}

/* The held descriptors (from fds[first]), then the inherited stream and the
 * services, and the services' text, into l. */
static int decode_tail(struct glove_keeper_launch *l, const json_t *o, const int *fds, size_t n_fds, size_t first,
                       size_t n_hold, struct glove_error *err) {
        struct glove_keeper_args *a = &l->args;
        const json_t *inh = json_object_get(o, "inherit"), *svc = json_object_get(o, "services_json");
        uint64_t n_svc = 0;
        if (!json_is_boolean(inh))
                return invalid(err, "inherit");
        size_t n_inherit = json_is_true(inh) ? 1 : 0;
        if (jget_u64(o, "n_services", &n_svc) < 0 || n_svc > GLOVE_KEEPER_SERVICE_FDS_MAX ||
            first + n_hold + n_inherit + n_svc > n_fds)
                return invalid(err, "descriptor count");
        if (json_is_string(svc)) {
                size_t len = json_string_length(svc);
                a->services_json = json_string_value(svc);
                if (len > GLOVE_KEEPER_SERVICES_JSON_MAX || strlen(a->services_json) != len)
                        return invalid(err, "services_json");
        } else if (!json_is_null(svc)) {
                return invalid(err, "services_json");
        }
        for (size_t i = 0; i < n_hold; i++)
                l->hold[i] = fds[first + i];
        a->hold_fds = l->hold;
        a->n_hold_fds = n_hold;
        size_t next = first + n_hold;
        if (n_inherit) {
                if (!socket_is(fds[next], AF_UNIX, SOCK_STREAM))
                        return invalid(err, "inherited stream");
                l->desc.has_inherit_fd = true;
                l->desc.inherit_fd = fds[next++];
        }
        for (size_t i = 0; i < n_svc; i++) {
                if (!fd_kind(fds[next + i], S_IFSOCK))
                        return invalid(err, "service descriptors");
                l->services[i] = fds[next + i];
        }
        a->service_fds = n_svc ? l->services : NULL;
        a->n_service_fds = (size_t)n_svc;
        return 0;
}

int glove_keeper_launch_decode(const char *text, size_t len, const int *fds, size_t n_fds,
                               struct glove_keeper_launch **out, struct glove_error *err) {
        *out = NULL;
        struct glove_keeper_launch *l = calloc(1, sizeof(*l));
        if (!l)
                return glove_error_set(err, ENOMEM, "keeper.launch_invalid", "out of memory");
        l->audit.fd = -1;
        int r = glove_json_decode_strict(text, len, GLOVE_KEEPER_LAUNCH_MAX, GLOVE_JSON_OBJECT_ONLY, &l->root, err);
        if (r < 0) {
                err->code = "keeper.launch_invalid";
                glove_keeper_launch_free(l);
                return r;
        }
        const json_t *o = l->root;
        json_t *ver = json_object_get(o, "version");
        uint64_t n_hold = 0;
        struct glove_keeper_args *a = &l->args;
        a->session_id = jget_str(o, "session_id");
        a->stem = jget_str(o, "stem");
        a->cgroup_parent = jget_str(o, "cgroup_parent");
        a->cgroup_v2 = json_is_true(json_object_get(o, "cgroup_v2"));
        const json_t *rf = json_object_get(o, "refinement_fixture");
        if (json_is_string(rf)) {
                a->refinement_fixture = json_string_value(rf);
                a->refinement_fixture_len = json_string_length(rf);
        }
        const json_t *au = json_object_get(o, "audit");
        size_t need = 3 + (json_is_object(au) ? 1 : 0);
        if (!json_is_integer(ver) || json_integer_value(ver) != GLOVE_KEEPER_LAUNCH_VERSION)
                r = invalid(err, "version");
        else if (!a->session_id || !a->stem)
                r = invalid(err, "session_id or stem");
        else if (rf && !json_is_string(rf))
                r = invalid(err, "refinement_fixture");
        else if (jget_u64(o, "n_hold", &n_hold) < 0 || n_hold > GLOVE_KEEPER_HOLD_FDS_MAX || need + n_hold > n_fds)
                r = invalid(err, "descriptor count");
        if (r >= 0) {
                a->channel_fd = fds[0];
                a->listen_fd = fds[1];
                a->dir_fd = fds[2];
                if (!fd_kind(fds[0], S_IFSOCK) || !fd_kind(fds[1], S_IFSOCK) || !fd_kind(fds[2], S_IFDIR))
                        r = invalid(err, "descriptors");
        }
        if (r >= 0 && json_is_object(au)) {
                uint64_t dev = 0, ino = 0;
                const char *run_id = jget_str(au, "run_id");
                struct stat st;
                if (jget_u64(au, "dev", &dev) < 0 || jget_u64(au, "ino", &ino) < 0 || !run_id ||
                    strlen(run_id) >= sizeof(l->audit.run_id) || fstat(fds[3], &st) < 0 ||
                    !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
                        r = invalid(err, "audit");
                else {
                        l->audit.fd = fds[3];
                        l->audit.path = (char *)jget_str(au, "path");
                        l->audit.dev = (dev_t)dev;
                        l->audit.ino = (ino_t)ino;
                        snprintf(l->audit.run_id, sizeof(l->audit.run_id), "%s", run_id);
                        l->desc.audit = &l->audit;
                }
        } else if (r >= 0 && !json_is_null(au)) {
                r = invalid(err, "audit");
        }
        if (r >= 0)
                r = decode_tail(l, o, fds, n_fds, need, (size_t)n_hold, err);
        if (r >= 0)
                r = decode_desc(l, json_object_get(o, "desc"), err);
        if (r >= 0 && !inherit_composition_ok(&l->desc))
                r = invalid(err, "inherited stream's filter");
        if (r < 0) {
                glove_keeper_launch_free(l);
                return r;
        }
        a->desc = &l->desc;
        *out = l;
        return 0;
}
