/* SPDX-License-Identifier: Apache-2.0 */
/* The start-up reconciler of gloved (runtime.h,
 * glove_runtime_reconcile; docs/recovery.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "glove/base/base64.h"
#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/base/time.h"
#include "glove/container/grant.h"
#include "glove/container/seccomp.h"
#include "glove/keeper/keeper.h"
#include "glove/net/rule.h"
#include "glove/session/session.h"
#include "glove/supervisor/plan.h"
#include "glove/supervisor/prepare.h"

#include "runtime_internal.h"

/* ---- reconciliation at start (docs/recovery.md) ---- */

static void reconcile_log(struct glove_runtime *rt, const char *id, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void reconcile_log(struct glove_runtime *rt, const char *id, const char *code, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        glove_log(rt->o.log, GLOVE_LOG_NOTICE, code, GLOVE_LOG_FIELDS({ "session_id", id }), "reconcile: %s: %s: %s", id,
                  code, msg);
}

/* Where a recorded mount of a retained image still is what was recorded:
 * the mount at ROOT/mounts/SESSION/ALIAS has the recorded mount id, or
 * nothing is mounted there (the directory's mount is the root's). False
 * when something else is mounted there: it is left alone. */
static bool mounts_match(const struct glove_supervisor_runtime_config *cfg, const char *id, const json_t *mats) {
        struct statx root;
        if (statx(cfg->materialization_root_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &root) < 0)
                return false;
        size_t i;
        const json_t *m;
        json_array_foreach(mats, i, m) {
                const char *alias = json_string_value(json_object_get(m, "alias"));
                if (!alias) /* an exposure's image is named by its exposure_id */
                        alias = json_string_value(json_object_get(m, "exposure_id"));
                if (!alias)
                        continue;
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "mounts/%s/%s", id, alias);
                struct statx x;
                if (statx(cfg->materialization_root_fd, rel, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &x) < 0)
                        continue; /* nothing there */
                uint64_t want = rt_jint(json_object_get(m, "mount"), "mnt_id");
                if (x.stx_mnt_id != root.stx_mnt_id && x.stx_mnt_id != want)
                        return false;
        }
        return true;
}

/* The launch binding a keeper's STEM.binding records, when it is the one
 * whose digest the identity names (new reference, digest into digest);
 * NULL otherwise. */
static json_t *recorded_binding(struct glove_runtime *rt, const char *stem, const json_t *identity, char digest[65]) {
        char rel[96];
        snprintf(rel, sizeof(rel), "keepers/%s.binding", stem);
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        const char *want = json_string_value(json_object_get(identity, "binding_digest"));
        json_t *b = NULL;
        if (rt->o.config && glove_file_read_bounded(rt->o.config->materialization_root_fd, rel, O_NOFOLLOW | O_NONBLOCK,
                                                    256 * 1024, &text, &n, NULL) == 0)
                b = rt_json_object((const uint8_t *)text, n);
        if (b && (glove_runtime_json_digest(b, digest, NULL) < 0 || !want || strcmp(digest, want) != 0)) {
                json_decref(b);
                b = NULL;
        }
        if (!b)
                digest[0] = '\0';
        return b;
}

/* Ends a stored session the reconciler does not adopt: its receipt (unless
 * one is there already), the terminal transition, its host mounts released
 * when they are the ones recorded, its keeper files removed. */
static int reconcile_end(struct glove_runtime *rt, const struct glove_store_session *st,
                         const json_t *identity, struct glove_runtime_receipt_facts *f, const char *reason,
                         const json_t *keeper_outcome, struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = rt->o.config;
        struct glove_error le = { 0 };
        const json_t *mats = json_object_get(identity, "materializations");
        if (!mats || mounts_match(cfg, st->session_id, mats)) {
                if (cfg && glove_supervisor_release_leftovers(cfg, st->session_id, st->plan, st->plan_len, &le) < 0)
                        glove_log(rt->o.log, GLOVE_LOG_WARNING, le.code, GLOVE_LOG_FIELDS({ "session_id", st->session_id }),
                                  "session %s: leftover mounts: %s: %s", st->session_id, le.code, le.message);
        } else {
                reconcile_log(rt, st->session_id, "reconcile.materialization_mismatch",
                              "a mount under the materialization root is not the one recorded: left alone");
        }
        bool appended;
        bool failed = true;
        if (f) {
                f->session_id = st->session_id;
                f->controller_plan_digest = st->controller_plan_digest;
                f->plan_content_digest = st->plan_content_digest;
                f->ended_at_ms = rt->o.now_ms();
                /* The launch binding as its keeper recorded it (and the
                 * identity's digest names it), kept like a live session's;
                 * a session that ran without one readable carries the
                 * stand-in; one that never launched, none (receipt.h). */
                char stem0[40], bd[65];
                rt_keeper_stem(st->session_id, stem0);
                _cleanup_json_ json_t *binding = identity ? recorded_binding(rt, stem0, identity, bd) : NULL;
                if (!binding && identity && json_object_get(identity, "binding_digest")) {
                        reconcile_log(rt, st->session_id, "reconcile.binding_unavailable",
                                      "the launch binding file is missing or does not match its recorded digest");
                        binding = json_pack("{s:s}", "omitted", "binding.unavailable");
                        bd[0] = '\0';
                }
                struct glove_error ke = { 0 };
                if (binding && rt_binding_keep_json(rt, st->session_id, binding, &ke) < 0)
                        reconcile_log(rt, st->session_id, ke.code ? ke.code : "state.binding", "the launch binding could not be kept: %s", ke.message);
                f->launch_binding = binding;
                f->launch_binding_digest = binding && bd[0] ? bd : NULL;
                _cleanup_json_ json_t *receipt = glove_runtime_receipt_build(f);
                if (!receipt)
                        return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory building a receipt");
                int r = rt_receipt_append(rt, st, receipt, binding, f, keeper_outcome, f->ended_at_ms, NULL, NULL,
                                          err);
                if (r < 0)
                        return r;
                failed = f->termination == GLOVE_RUNTIME_TERM_START_FAILED || f->termination == GLOVE_RUNTIME_TERM_LOST;
        } else {
                /* The receipt is there: its state decides. */
                uint64_t seq = 0;
                _cleanup_json_ json_t *rc = NULL;
                if (glove_store_receipts_find(rt->o.receipts, rt_receipt_kind(st), st->session_id, &seq, &rc) == 1) {
                        const json_t *res = rt_resource_receipt(rc);
                        failed = !json_is_string(json_object_get(res, "state")) ||
                                 strcmp(json_string_value(json_object_get(res, "state")), "exited") != 0;
                }
        }
        int r = 0;
        if (!failed && st->state == GLOVE_STORE_SESSION_RUNNING)
                r = glove_store_transition(rt->o.store, st->session_id, GLOVE_STORE_SESSION_STOPPING,
                                                   "session.ended", rt->o.now_ms(), &appended, err);
        if (r == 0)
                r = glove_store_transition(rt->o.store, st->session_id,
                                                   failed ? GLOVE_STORE_SESSION_FAILED : GLOVE_STORE_SESSION_EXITED,
                                                   reason, rt->o.now_ms(), &appended, err);
        char stem[40];
        rt_keeper_stem(st->session_id, stem);
        if (cfg)
                rt_keeper_files_remove(cfg, stem, false);
        return r;
}

/* ABORT now to the keeper of stem, its end awaited with the others at the
 * end of the pass (abort_finish). */
static void abort_later(struct glove_runtime *rt, const char *stem) {
        struct rt_aborts *a = rt->aborts;
        int fd = rt->o.config ? rt_keeper_abort_start(rt->o.config, stem) : -1;
        if (fd < 0)
                return;
        if (!a || a->n >= GLOVE_RUNTIME_ABORTS_MAX) {
                /* No room: ABORT went; the keeper ends on its own. */
                close(fd);
                return;
        }
        a->fd[a->n] = fd;
        snprintf(a->stem[a->n], sizeof(a->stem[a->n]), "%s", stem);
        a->n++;
}

/* Every aborted keeper's end awaited together, then its files removed (a
 * keeper may write its status as it ends). */
static void abort_finish(struct glove_runtime *rt) {
        struct rt_aborts *a = rt->aborts;
        if (!a)
                return;
        rt_keeper_abort_wait(a->fd, a->n);
        for (size_t i = 0; i < a->n; i++)
                rt_keeper_files_remove(rt->o.config, a->stem[i], false);
        a->n = 0;
}

/* When the agent was released: the at_ms of the transition to running. */
int64_t rt_released_at(const struct glove_store_session *s) {
        for (size_t i = 0; i < s->n_history; i++)
                if (s->history[i].to == GLOVE_STORE_SESSION_RUNNING)
                        return s->history[i].at_ms;
        return -1;
}

/* Whether the recorded identity's processes and cgroup are what the host
 * has now. *why names the first difference. */
static bool identity_live(const json_t *id, const char **why) {
        uint64_t t = 0;
        pid_t pid = (pid_t)rt_jint(id, "pid");
        if (pid <= 0 || glove_keeper_proc_start_time(pid, &t) < 0) {
                *why = "PID 1 is gone";
                return false;
        }
        if (t != rt_jint(id, "pid_start_time")) {
                *why = "PID 1's pid belongs to another process (start time differs)";
                return false;
        }
        const json_t *cg = json_object_get(id, "cgroup");
        const char *dir = json_string_value(json_object_get(cg, "dir"));
        struct stat st;
        if (!dir || stat(dir, &st) < 0 || (uint64_t)st.st_ino != rt_jint(cg, "inode")) {
                *why = "the run cgroup is gone or was replaced (inode differs)";
                return false;
        }
        return true;
}

static int adopt(struct glove_runtime *rt, const struct glove_store_session *st, json_t *identity, int fd,
                 struct glove_error *err) {
        struct rt_session *s = calloc(1, sizeof(*s));
        if (!s || !(s->mir = calloc(1, sizeof(*s->mir)))) {
                free(s);
                close(fd);
                return glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
        }
        s->rt = rt;
        s->audit.fd = -1;
        s->kfd = fd;
        s->kq_tail = &s->kq;
        s->adopted = true;
        s->live = true;
        s->stopping = st->state == GLOVE_STORE_SESSION_STOPPING;
        s->started_at_ms = rt_released_at(st);
        snprintf(s->id, sizeof(s->id), "%s", st->session_id);
        rt_keeper_stem(st->session_id, s->stem);
        const json_t *k = json_object_get(identity, "keeper");
        s->keeper_pid = (pid_t)rt_jint(k, "pid");
        s->keeper_start = rt_jint(k, "start_time");
        /* The launch binding, as recorded before release (its digest is in
         * the identity). */
        s->binding = recorded_binding(rt, s->stem, identity, s->binding_digest);
        if (!s->binding) {
                reconcile_log(rt, s->id, "reconcile.binding_unavailable",
                              "the launch binding file is missing or does not match its recorded digest");
                s->binding = json_pack("{s:s}", "omitted", "binding.unavailable");
                s->binding_digest[0] = '\0';
        }
        s->reserved = glove_store_receipts_reserve(rt->o.receipts, GLOVE_RUNTIME_RECEIPT_RESERVE, NULL) == 0;
        s->next = rt->sessions;
        rt->sessions = s;
        rt->live++;
        /* HELLO now; the STATEs of all adopted keepers are awaited
         * together (adopt_wait), so that the one line said is the right one. */
        if (rt_link_send_json(s, GLOVE_KEEPER_HELLO, json_pack("{s:i}", "version", GLOVE_KEEPER_VERSION)) < 0)
                rt_keeper_lost(s);
        return 0;
}

/* One session an earlier gloved left non-terminal. Returns 0 or -errno
 * (receipts.*, journal.*). */
static int reconcile_one(struct glove_runtime *rt, const struct glove_store_session *st, const char *boot,
                         struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = rt->o.config;
        const char *id = st->session_id;
        char stem[40];
        rt_keeper_stem(id, stem);
        _cleanup_json_ json_t *identity = st->runtime ? rt_json_object((const uint8_t *)st->runtime, st->runtime_len) : NULL;
        uint64_t seq = 0;
        if (glove_store_receipts_find(rt->o.receipts, rt_receipt_kind(st), id, &seq, NULL) == 1) {
                /* gloved ended between the receipt and the terminal
                 * transition: never a second receipt. */
                reconcile_log(rt, id, "reconcile.receipt_present", "receipt %llu is there; the terminal transition is recorded",
                              (unsigned long long)seq);
                if (cfg)
                        abort_later(rt, stem);
                return reconcile_end(rt, st, identity, NULL, "reconcile.receipt_present", NULL, err);
        }
        struct glove_runtime_receipt_facts f = { .started_at_ms = rt_released_at(st), .exit_code = -1,
                                                 .termination = GLOVE_RUNTIME_TERM_LOST };
        if (st->state == GLOVE_STORE_SESSION_PREPARING || st->state == GLOVE_STORE_SESSION_STARTING) {
                if (cfg)
                        abort_later(rt, stem);
                reconcile_log(rt, id, "reconcile.start_interrupted", "gloved ended while the session was %s; it never started",
                              glove_store_session_state_name(st->state));
                f.termination = GLOVE_RUNTIME_TERM_START_FAILED;
                f.started_at_ms = -1;
                f.code = "service.restarted";
                return reconcile_end(rt, st, identity, &f, "service.restarted", NULL, err);
        }
        if (!identity || !cfg) {
                reconcile_log(rt, id, "reconcile.no_identity", "no runtime identity was recorded: its sandbox is not looked for");
                f.code = "service.restarted";
                return reconcile_end(rt, st, identity, &f, "service.restarted", NULL, err);
        }
        const char *rec_boot = json_string_value(json_object_get(identity, "boot_id"));
        if (!rec_boot || strcmp(rec_boot, boot) != 0) {
                reconcile_log(rt, id, "reconcile.host_restarted", "recorded boot %s, this boot %s: nothing of it runs",
                              rec_boot ? rec_boot : "?", boot);
                json_t *frozen = NULL;
                struct glove_error fe = { 0 };
                if (glove_supervisor_freeze_retained(cfg, id, json_object_get(identity, "materializations"), &frozen,
                                                     &fe) < 0)
                        reconcile_log(rt, id, fe.code ? fe.code : "materialize.freeze", "%s", fe.message);
                for (size_t i = 0; i < json_array_size(frozen); i++)
                        reconcile_log(rt, id, "reconcile.frozen", "retained image %s mounted read-only for inspection",
                                      json_string_value(json_array_get(frozen, i)));
                json_decref(frozen);
                f.code = "host_restarted";
                /* The images stay mounted read-only: no release. */
                bool appended;
                f.session_id = id;
                f.controller_plan_digest = st->controller_plan_digest;
                f.plan_content_digest = st->plan_content_digest;
                f.ended_at_ms = rt->o.now_ms();
                /* The binding file did not outlive the host (not synced). */
                _cleanup_json_ json_t *lost = json_pack("{s:s}", "omitted", "binding.unavailable");
                f.launch_binding = lost;
                _cleanup_json_ json_t *receipt = lost ? glove_runtime_receipt_build(&f) : NULL;
                int r = receipt ? rt_receipt_append(rt, st, receipt, NULL, &f, NULL, f.ended_at_ms, NULL, NULL, err)
                                : glove_error_set(err, ENOMEM, "runtime.no_memory", "out of memory");
                if (r == 0)
                        r = glove_store_transition(rt->o.store, id, GLOVE_STORE_SESSION_FAILED, "host_restarted",
                                                           f.ended_at_ms, &appended, err);
                rt_keeper_files_remove(cfg, stem, false);
                return r;
        }
        const json_t *k = json_object_get(identity, "keeper");
        pid_t kpid = (pid_t)rt_jint(k, "pid");
        uint64_t kstart = 0;
        bool keeper_alive = kpid > 0 && glove_keeper_proc_start_time(kpid, &kstart) == 0;
        bool keeper_same = keeper_alive && kstart == rt_jint(k, "start_time");
        pid_t peer = 0;
        int fd = keeper_same ? rt_keeper_connect(cfg, stem, &peer) : -ENOENT;
        if (fd >= 0 && peer == kpid) {
                const char *why = NULL;
                if (!identity_live(identity, &why)) {
                        close(fd);
                        reconcile_log(rt, id, "reconcile.identity_mismatch", "%s; nothing was signalled", why);
                        f.code = "identity.mismatch";
                        return reconcile_end(rt, st, identity, &f, "identity.mismatch", NULL, err);
                }
                return adopt(rt, st, identity, fd, err); /* its line comes from adopt_wait */
        }
        if (fd >= 0)
                close(fd);
        if (keeper_alive && !keeper_same) {
                /* The keeper ended and its pid was reused: an outcome it
                 * wrote (its own pid and start time in it) still says how
                 * the session ended. */
                _cleanup_json_ json_t *st_status = rt_status_read(cfg, stem);
                const json_t *sk = json_object_get(st_status, "keeper");
                const json_t *sout = json_object_get(st_status, "outcome");
                if (json_is_object(sout) && rt_jint(sk, "pid") == (uint64_t)kpid &&
                    rt_jint(sk, "start_time") == rt_jint(k, "start_time")) {
                        struct rt_session tmp = { .rt = rt, .started_at_ms = rt_released_at(st),
                                                  .stopping = st->state == GLOVE_STORE_SESSION_STOPPING };
                        rt_outcome_facts(&tmp, sout, &f);
                        reconcile_log(rt, id, "reconcile.ended_while_down", "the session ended while gloved was down (%s)",
                                      glove_runtime_termination_name(f.termination));
                        return reconcile_end(rt, st, identity, &f, "reconcile.ended_while_down", sout, err);
                }
                reconcile_log(rt, id, "reconcile.identity_mismatch",
                              "the keeper's pid %d belongs to another process (start time differs); nothing was signalled",
                              (int)kpid);
                f.code = "identity.mismatch";
                return reconcile_end(rt, st, identity, &f, "identity.mismatch", NULL, err);
        }
        if (keeper_same) {
                reconcile_log(rt, id, "reconcile.identity_mismatch",
                              "the keeper %d lives but its socket does not answer as it; nothing was signalled", (int)kpid);
                f.code = "identity.mismatch";
                return reconcile_end(rt, st, identity, &f, "identity.mismatch", NULL, err);
        }
        /* The keeper is gone; its sandbox died with it. */
        _cleanup_json_ json_t *status = rt_status_read(cfg, stem);
        const json_t *out = json_object_get(status, "outcome");
        struct rt_session tmp = { .rt = rt, .started_at_ms = rt_released_at(st),
                                  .stopping = st->state == GLOVE_STORE_SESSION_STOPPING };
        if (json_is_object(out)) {
                rt_outcome_facts(&tmp, out, &f);
                reconcile_log(rt, id, "reconcile.ended_while_down", "the session ended while gloved was down (%s)",
                              glove_runtime_termination_name(f.termination));
                return reconcile_end(rt, st, identity, &f, "reconcile.ended_while_down", out, err);
        }
        const json_t *u = json_object_get(status, "usage");
        f.code = "keeper.lost";
        f.cpu_time_ms = rt_jint(u, "cpu_time_ms");
        f.output_bytes = rt_jint(u, "output_bytes");
        f.peak_memory_bytes = rt_jint(u, "peak_memory_bytes");
        f.wall_time_ms = rt_jint(u, "wall_time_ms");
        reconcile_log(rt, id, "reconcile.keeper_lost", "keeper %d is gone without an outcome", (int)kpid);
        return reconcile_end(rt, st, identity, &f, "keeper.lost", NULL, err);
}

/* Keeper files no live session owns (a keeper that outlived its session's
 * end by a crash between the terminal transition and its removal, a start
 * aborted while gloved stopped): their keeper, when one still answers, is
 * told ABORT and let go; the files go. One line per stem. */
static void reconcile_orphans(struct glove_runtime *rt) {
        const struct glove_supervisor_runtime_config *cfg = rt->o.config;
        int dfd = cfg ? openat(cfg->materialization_root_fd, "keepers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (dfd < 0)
                return;
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return;
        }
        /* Bounded: the directory holds four files per session at most, and
         * at most this many stems are looked at per start. */
        char stems[GLOVE_RUNTIME_SESSIONS_MAX * 4][40];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < GLOVE_ELEMENTSOF(stems)) {
                const char *dot = strchr(e->d_name, '.');
                size_t len = dot ? (size_t)(dot - e->d_name) : 0;
                if (len != 33 || e->d_name[0] != 'k')
                        continue;
                bool seen = false;
                for (size_t i = 0; i < n && !seen; i++)
                        seen = strncmp(stems[i], e->d_name, len) == 0;
                if (seen)
                        continue;
                memcpy(stems[n], e->d_name, len);
                stems[n++][len] = '\0';
        }
        closedir(d);
        for (size_t i = 0; i < n; i++) {
                bool live = false;
                for (struct rt_session *s = rt->sessions; s && !live; s = s->next)
                        live = s->live && strcmp(s->stem, stems[i]) == 0;
                if (live)
                        continue;
                _cleanup_json_ json_t *status = rt_status_read(cfg, stems[i]);
                const char *id = json_string_value(json_object_get(status, "session_id"));
                const struct glove_store_session *st = id ? glove_store_find(rt->o.store, id) : NULL;
                char want[40];
                if (st) {
                        rt_keeper_stem(st->session_id, want);
                        if (strcmp(want, stems[i]) != 0)
                                st = NULL; /* a status file that names another session: not trusted */
                }
                if (st && !glove_store_session_state_terminal(st->state))
                        continue; /* a session the reconciler kept as it is (an error stopped it) */
                abort_later(rt, stems[i]);
                rt_keeper_files_remove(cfg, stems[i], false);
                reconcile_log(rt, st ? st->session_id : stems[i], "reconcile.orphan_removed",
                              "keeper files of a session that is %s were removed",
                              st ? glove_store_session_state_name(st->state) : "unknown");
        }
}

/* The STATE of every keeper adopted in this pass, awaited together (at
 * most GLOVE_RUNTIME_ABORT_WAIT_MS in all; a keeper slower than
 * that is adopted all the same: its STATE is read on the loop), then one
 * line per adopted session. */
static void adopt_wait(struct glove_runtime *rt) {
        struct pollfd fds[GLOVE_RUNTIME_SESSIONS_MAX];
        struct rt_session *who[GLOVE_RUNTIME_SESSIONS_MAX];
        int64_t deadline = (int64_t)(glove_time_monotonic_us() / 1000) + GLOVE_RUNTIME_ABORT_WAIT_MS;
        for (;;) {
                nfds_t n = 0;
                for (struct rt_session *s = rt->sessions; s && n < GLOVE_ELEMENTSOF(fds); s = s->next)
                        if (s->adopted && s->live && !s->stated && s->kfd >= 0) {
                                fds[n] = (struct pollfd){ .fd = s->kfd, .events = POLLIN };
                                who[n++] = s;
                        }
                int64_t left = deadline - (int64_t)(glove_time_monotonic_us() / 1000);
                if (n == 0 || left <= 0)
                        break;
                int pr = poll(fds, n, (int)left);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0)
                        break;
                for (nfds_t i = 0; i < n; i++) {
                        struct rt_session *s = who[i];
                        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t got = recv(s->kfd, rt_link_buf, sizeof(rt_link_buf), MSG_DONTWAIT | MSG_TRUNC);
                        if (got < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (got <= 0) {
                                rt_keeper_lost(s); /* reconnects when it lives, else ends it */
                                continue;
                        }
                        if ((size_t)got > sizeof(rt_link_buf))
                                continue;
                        (void)rt_link_message(s, rt_link_buf, (size_t)got);
                }
        }
        for (struct rt_session *s = rt->sessions; s; s = s->next) {
                if (!s->adopted || s->adopt_told)
                        continue;
                s->adopt_told = true;
                const char *code = json_string_value(json_object_get(s->termination, "code"));
                if (s->ended)
                        reconcile_log(rt, s->id, code && strcmp(code, "keeper.lost") == 0 ? "reconcile.keeper_lost"
                                                                                      : "reconcile.ended_while_down",
                                      "the keeper %d held the end of the session (receipt %llu)", (int)s->keeper_pid,
                                      (unsigned long long)s->receipt_seq);
                else if (s->released_on_adopt)
                        reconcile_log(rt, s->id, "reconcile.released", "recorded running but never released: released now");
                else
                        reconcile_log(rt, s->id, "reconcile.adopted", "keeper %d%s", (int)s->keeper_pid,
                                      s->stated ? "" : " (its state comes later: it is slow to answer)");
                if (!s->ended && s->stopping)
                        /* gloved ended after recording stopping, maybe before
                         * the keeper heard of it: again (the first grace is
                         * not recorded; the default one). */
                        (void)rt_link_send_json(s, GLOVE_KEEPER_STOP,
                                                json_pack("{s:I}", "grace_ms",
                                                          (json_int_t)GLOVE_RUNTIME_GRACE_DEFAULT_MS));
        }
}

int glove_runtime_reconcile(struct glove_runtime *rt, size_t *acted, struct glove_error *err) {
        *acted = 0;
        char boot[37] = "";
        int r = glove_keeper_boot_id(boot);
        if (r < 0)
                return glove_error_set(err, -r, "reconcile.boot_id", "/proc/sys/kernel/random/boot_id: %s", strerror(-r));
        struct rt_aborts *aborts = calloc(1, sizeof(*aborts));
        rt->aborts = aborts;
        size_t n = glove_store_sessions(rt->o.store);
        for (size_t i = 0; i < n; i++) {
                const struct glove_store_session *st = glove_store_at(rt->o.store, i);
                if (!st || st->state == GLOVE_STORE_SESSION_CREATED || glove_store_session_state_terminal(st->state))
                        continue;
                r = reconcile_one(rt, st, boot, err);
                if (r < 0) {
                        glove_error_prefix(err, "session %s", st->session_id);
                        abort_finish(rt);
                        rt->aborts = NULL;
                        free(aborts);
                        return r;
                }
                (*acted)++;
        }
        adopt_wait(rt);
        reconcile_orphans(rt);
        abort_finish(rt);
        rt->aborts = NULL;
        free(aborts);
        /* Run cgroups whose keeper is gone (empty: the sandbox died with it). */
        glove_cgroup_sweep();
        return 0;
}
