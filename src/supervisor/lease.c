/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credential leases (include/glove/supervisor/lease.h; docs/session-policy.md,
 * "Credential leases").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/fd.h"
#include "glove/base/file.h"
#include "glove/base/json.h"
#include "glove/supervisor/lease.h"
#include "internal.h"
#include "prepare_internal.h"

#define HEX_LEN GLOVE_DIGEST_SHA256_HEX_LEN

/* A secret's bytes: zeroed before they are freed. */
struct secret {
        char *data;
        size_t len;
};

static void secret_clear(struct secret *s) {
        if (s->data) {
                explicit_bzero(s->data, s->len);
                free(s->data);
        }
        s->data = NULL;
        s->len = 0;
}

static int hex_digest(const void *data, size_t len, char out[HEX_LEN + 1], struct glove_error *err) {
        uint8_t d[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256(data, len, d, err);
        if (r < 0)
                return r;
        glove_digest_hex_encode(d, sizeof(d), out, HEX_LEN + 1);
        return 0;
}

static bool hex64_valid(const char *s) {
        if (!s || strlen(s) != HEX_LEN)
                return false;
        for (size_t i = 0; i < HEX_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* A handle that can name a directory of the store: an identifier, and not
 * "." or ".." (which identifiers allow). */
static bool lease_name_ok(const char *h) {
        return h && sv_identifier_valid(h) && strcmp(h, ".") != 0 && strcmp(h, "..") != 0;
}

static int store_err(struct glove_error *err, int e, const char *handle, const char *what) {
        return glove_error_set(err, e, "lease.store", "lease %s: %s: %s", handle, what, strerror(e));
}

/* Opens (creating when missing, mode 0700) the directory name beneath
 * dirfd; it must be a directory of the service user with mode 0700. */
static int open_private_dir(int dirfd, const char *name, const char *handle, int *out, struct glove_error *err) {
        if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                return store_err(err, errno, handle, name);
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return store_err(err, errno, handle, name);
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
                close(fd);
                return glove_error_set(err, EPERM, "lease.store",
                                       "lease %s: %s is not a directory of the service user with mode 0700", handle,
                                       name);
        }
        *out = fd;
        return 0;
}

/* LOCK_EX|LOCK_NB on DIR/lock into *out; create: make the lock file when
 * it is missing (else -ENOENT, "lease.store"). */
static int take_lock(int dirfd, const char *handle, bool create, int *out, struct glove_error *err) {
        const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
        _cleanup_close_ int fd = create ? openat(dirfd, "lock", flags | O_CREAT | O_EXCL, 0600) : -1;
        if (fd >= 0) {
                /* A fresh lock file is 0600 whatever the umask; an existing
                 * one is checked below, never changed. */
                if (fchmod(fd, 0600) < 0)
                        return store_err(err, errno, handle, "lock");
        } else if (create && errno != EEXIST) {
                return store_err(err, errno, handle, "lock");
        } else if ((fd = openat(dirfd, "lock", flags)) < 0) {
                return store_err(err, errno, handle, "lock");
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return store_err(err, errno, handle, "lock");
        if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0600 || st.st_nlink != 1)
                return store_err(err, EINVAL, handle, "lock (not a single-link regular file of mode 0600)");
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return glove_error_set(err, EBUSY, "lease.busy",
                                               "lease %s is held by another live session (one session per handle at a time)",
                                               handle);
                return store_err(err, errno, handle, "flock");
        }
        *out = TAKE_FD(fd);
        return 0;
}

/* Replaces dirfd/name by a new file (0600) holding data, fsync'd. */
static int replace_file(int dirfd, const char *name, const void *data, size_t len, const char *handle,
                        struct glove_error *err) {
        struct glove_error e = { 0 };
        int r = glove_file_replace(dirfd, name, data, len, 0600, GLOVE_FILE_REPLACE_SYNC_DIR, &e);
        return r < 0 ? store_err(err, -r, handle, name) : 0;
}

/* ---- the source ---- */

static int read_source(const struct sv_secret_mount *sm, struct secret *out, struct glove_error *err) {
        const char *h = sm->handle, *p = sm->source_path;
        _cleanup_close_ int fd = -1;
        int r = glove_fd_open_nofollow(p, O_RDONLY | O_NONBLOCK | O_NOCTTY, &fd, NULL);
        if (r == -ELOOP)
                return glove_error_set(err, ELOOP, "lease.symlink",
                                       "lease %s: a component of its source %s is a symbolic link (links are never followed)",
                                       h, p);
        if (r == -ENOENT || r == -ENOTDIR)
                return glove_error_set(err, ENOENT, "lease.missing", "lease %s: its source %s does not exist", h, p);
        if (r < 0)
                return glove_error_set(err, -r, "lease.source", "lease %s: its source %s: %s", h, p, strerror(-r));
        struct stat st, st2;
        if (fstat(fd, &st) < 0)
                return glove_error_set(err, errno, "lease.source", "lease %s: %s: fstat: %s", h, p, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return glove_error_set(err, EINVAL, "lease.file_type", "lease %s: its source %s is not a regular file", h,
                                       p);
        if (st.st_uid != geteuid())
                return glove_error_set(err, EPERM, "lease.owner",
                                       "lease %s: its source %s is owned by uid %u, not by the service user (uid %u)", h,
                                       p, (unsigned)st.st_uid, (unsigned)geteuid());
        if ((st.st_mode & 07777) != 0600)
                return glove_error_set(err, EPERM, "lease.mode", "lease %s: its source %s has mode %04o, not 0600", h, p,
                                       (unsigned)(st.st_mode & 07777));
        if (st.st_nlink != 1)
                return glove_error_set(err, EPERM, "lease.links", "lease %s: its source %s has %lu hard links, not one", h,
                                       p, (unsigned long)st.st_nlink);
        if (st.st_size > GLOVE_LEASE_MAX_BYTES)
                return glove_error_set(err, EFBIG, "lease.too_large",
                                       "lease %s: its source %s holds %lld bytes, more than %d", h, p,
                                       (long long)st.st_size, GLOVE_LEASE_MAX_BYTES);
        r = glove_fd_read_bounded(fd, GLOVE_LEASE_MAX_BYTES, &out->data, &out->len, NULL);
        if (r == -EFBIG)
                return glove_error_set(err, EFBIG, "lease.too_large", "lease %s: its source %s grew past %d bytes", h, p,
                                       GLOVE_LEASE_MAX_BYTES);
        if (r < 0)
                return glove_error_set(err, -r, "lease.source", "lease %s: reading its source %s: %s", h, p,
                                       strerror(-r));
        if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino || st2.st_size != st.st_size ||
            (off_t)out->len != st.st_size || st2.st_mtim.tv_sec != st.st_mtim.tv_sec ||
            st2.st_mtim.tv_nsec != st.st_mtim.tv_nsec || st2.st_nlink != 1 || (st2.st_mode & 07777) != 0600) {
                secret_clear(out);
                return glove_error_set(err, EAGAIN, "lease.changed", "lease %s: its source %s changed while it was read",
                                       h, p);
        }
        return 0;
}

/* ---- the store ---- */

struct record {
        bool present;
        char source_digest[HEX_LEN + 1], version[HEX_LEN + 1];
};

static int read_record(int dirfd, const char *handle, struct record *rec, struct glove_error *err) {
        *rec = (struct record){ 0 };
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = glove_file_read_bounded(dirfd, "record", O_NOFOLLOW | O_NONBLOCK, GLOVE_LEASE_RECORD_MAX, &text, &len, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return store_err(err, -r, handle, "record");
        _cleanup_json_ json_t *o = NULL;
        static const char *const keys[] = { "schema_version", "source_digest", "version", NULL };
        const char *src = NULL, *ver = NULL;
        if (glove_json_decode_canonical(text, len, GLOVE_LEASE_RECORD_MAX, 0, &o, NULL) < 0 || !json_is_object(o) ||
            glove_json_check_keys(o, keys, "$", NULL) < 0 ||
            json_integer_value(json_object_get(o, "schema_version")) != 1 ||
            !hex64_valid(src = json_string_value(json_object_get(o, "source_digest"))) ||
            !hex64_valid(ver = json_string_value(json_object_get(o, "version"))))
                return glove_error_set(err, EINVAL, "lease.store",
                                       "lease %s: its record is damaged (remove the lease directory to import the "
                                       "source anew)",
                                       handle);
        memcpy(rec->source_digest, src, HEX_LEN + 1);
        memcpy(rec->version, ver, HEX_LEN + 1);
        rec->present = true;
        return 0;
}

static int write_record(int dirfd, const char *handle, const struct record *rec, struct glove_error *err) {
        char text[256];
        int n = snprintf(text, sizeof(text), "{\"schema_version\":1,\"source_digest\":\"%s\",\"version\":\"%s\"}",
                         rec->source_digest, rec->version);
        return replace_file(dirfd, "record", text, (size_t)n, handle, err);
}

/* The live copy a previous session left, when it can be taken: a regular
 * file of one link within the bound. *out stays empty otherwise. */
static int read_live(int dirfd, struct secret *out) {
        _cleanup_close_ int fd = openat(dirfd, "live", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid() ||
            st.st_size > GLOVE_LEASE_MAX_BYTES)
                return 0;
        int r = glove_fd_read_bounded(fd, GLOVE_LEASE_MAX_BYTES, &out->data, &out->len, NULL);
        return r == -EFBIG ? 0 : r;
}

/* Stores content as versions/HEX, always written anew under the lock (at
 * most GLOVE_LEASE_MAX_BYTES): a file already there is never trusted by
 * its size. */
static int store_version(int vfd, const char *handle, const char *hex, const struct secret *s,
                         struct glove_error *err) {
        return replace_file(vfd, hex, s->data, s->len, handle, err);
}

/* Reads versions/HEX and checks its digest. */
static int load_version(int vfd, const char *handle, const char *hex, struct secret *out, struct glove_error *err) {
        int r = glove_file_read_bounded(vfd, hex, O_NOFOLLOW | O_NONBLOCK, GLOVE_LEASE_MAX_BYTES, &out->data, &out->len,
                                        NULL);
        if (r < 0)
                return glove_error_set(err, -r, "lease.store",
                                       "lease %s: its current version is unreadable (remove the lease directory to "
                                       "import the source anew): %s",
                                       handle, strerror(-r));
        char got[HEX_LEN + 1];
        if ((r = hex_digest(out->data, out->len, got, err)) < 0)
                return r;
        if (strcmp(got, hex) != 0) {
                secret_clear(out);
                return glove_error_set(err, EINVAL, "lease.store",
                                       "lease %s: its current version does not match its digest (remove the lease "
                                       "directory to import the source anew)",
                                       handle);
        }
        return 0;
}

/* Removes every version but keep. */
static void prune_versions(int vfd, const char *keep) {
        int dfd = fcntl(vfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                if (dfd >= 0)
                        close(dfd);
                return;
        }
        struct dirent *e;
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, keep) != 0)
                        (void)unlinkat(vfd, e->d_name, 0);
        closedir(d);
}

/* The import of lease.h, steps 1 to 3, for sm into le (the lock is held);
 * the live copy is pinned into m. */
static int import(const struct glove_supervisor_runtime_config *cfg, int dirfd, const struct sv_secret_mount *sm,
                  struct sv_lease *le, struct sv_mount *m, struct glove_error *err) {
        const char *h = sm->handle;
        _cleanup_close_ int vfd = -1;
        int r = open_private_dir(dirfd, "versions", h, &vfd, err);
        if (r < 0)
                return r;
        struct record rec;
        if ((r = read_record(dirfd, h, &rec, err)) < 0)
                return r;
        struct secret cur = { 0 }, live = { 0 }, src = { 0 };
        bool changed = false;
        /* 1. a rotation inside the last session */
        r = read_live(dirfd, &live);
        if (r < 0)
                r = store_err(err, -r, h, "live");
        char hex[HEX_LEN + 1];
        if (r >= 0 && live.data && rec.present) {
                r = hex_digest(live.data, live.len, hex, err);
                if (r >= 0 && strcmp(hex, rec.version) != 0) {
                        r = store_version(vfd, h, hex, &live, err);
                        memcpy(rec.version, hex, sizeof(hex));
                        changed = true;
                }
                if (r >= 0) {
                        cur = live;
                        live = (struct secret){ 0 };
                }
        }
        /* 2. the operator's source */
        if (r >= 0)
                r = read_source(sm, &src, err);
        if (r >= 0)
                r = hex_digest(src.data, src.len, hex, err);
        if (r >= 0 && (!rec.present || strcmp(hex, rec.source_digest) != 0)) {
                r = store_version(vfd, h, hex, &src, err);
                memcpy(rec.source_digest, hex, sizeof(hex));
                memcpy(rec.version, hex, sizeof(hex));
                rec.present = changed = true;
                secret_clear(&cur);
                cur = src;
                src = (struct secret){ 0 };
        }
        if (r >= 0 && !cur.data)
                r = load_version(vfd, h, rec.version, &cur, err);
        /* 3. the record, the other versions, a fresh live copy */
        if (r >= 0 && changed)
                r = write_record(dirfd, h, &rec, err);
        if (r >= 0)
                prune_versions(vfd, rec.version);
        if (r >= 0)
                r = replace_file(dirfd, "live", cur.data, cur.len, h, err);
        secret_clear(&cur);
        secret_clear(&live);
        secret_clear(&src);
        if (r < 0)
                return r;
        memcpy(le->version, rec.version, sizeof(le->version));
        _cleanup_close_ int fd = openat(dirfd, "live", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct statx stx;
        if (fd < 0 || statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO | STATX_MNT_ID,
                            &stx) < 0)
                return store_err(err, errno, h, "live");
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s/live", cfg->lease_root, h) >= (int)sizeof(path))
                return glove_error_set(err, ENAMETOOLONG, "lease.store", "lease %s: the lease path is too long", h);
        if (!(m->source = strdup(path)))
                return glove_error_set(err, ENOMEM, "lease.no_memory", "out of memory");
        m->is_dir = false;
        m->read_only = false;
        m->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        m->ino = stx.stx_ino;
        m->mnt_id = stx.stx_mnt_id;
        m->fd = TAKE_FD(fd);
        return 0;
}

static const struct sv_secret_mount *find_mount(const struct glove_supervisor_policy *p, const char *handle,
                                                const char *runtime_id) {
        for (size_t i = 0; i < p->n_secret_mounts; i++)
                if (strcmp(p->secret_mounts[i].handle, handle) == 0 &&
                    strcmp(p->secret_mounts[i].runtime_id, runtime_id) == 0)
                        return &p->secret_mounts[i];
        return NULL;
}

int sv_launch_leases(struct glove_supervisor_launch *l, const json_t *root, const struct sv_template *t,
                     struct glove_error *err) {
        const struct glove_supervisor_runtime_config *cfg = l->cfg;
        const json_t *handles = json_object_get(root, "secret_handles");
        size_t n = json_array_size(handles);
        if (n == 0)
                return 0;
        if (n > GLOVE_LEASE_MAX_PER_LAUNCH)
                return glove_error_set(err, EINVAL, "launch.invalid_plan", "the plan names too many secret handles");
        if (!cfg->lease_root || cfg->lease_root_fd < 0)
                return glove_error_set(err, EOPNOTSUPP, "lease.unavailable",
                                       "the plan names secret handles but this gloved has no lease store");
        /* Every refusal that needs no side effect first. */
        for (size_t i = 0; i < n; i++) {
                const char *h = json_string_value(json_array_get(handles, i));
                if (!h || !sv_identifier_valid(h))
                        return glove_error_set(err, EINVAL, "launch.invalid_plan", "a secret handle of the plan");
                if (!lease_name_ok(h))
                        return glove_error_set(err, EINVAL, "lease.store",
                                               "secret handle %s cannot name a lease directory", h);
                if (!find_mount(cfg->policy, h, t->runtime_id))
                        return glove_error_set(err, EINVAL, "lease.no_mount",
                                               "secret handle %s has no secret_mounts entry for runtime %s", h,
                                               t->runtime_id);
        }
        l->leases = calloc(n, sizeof(*l->leases));
        if (!l->leases)
                return glove_error_set(err, ENOMEM, "lease.no_memory", "out of memory");
        for (size_t i = 0; i < n; i++) {
                const struct sv_secret_mount *sm =
                        find_mount(cfg->policy, json_string_value(json_array_get(handles, i)), t->runtime_id);
                struct sv_lease *le = &l->leases[l->n_leases++];
                *le = (struct sv_lease){ .handle = sm->handle, .target = sm->target_path, .lock_fd = -1 };
                _cleanup_close_ int dirfd = -1;
                int r = open_private_dir(cfg->lease_root_fd, sm->handle, sm->handle, &dirfd, err);
                if (r >= 0)
                        r = take_lock(dirfd, sm->handle, true, &le->lock_fd, err);
                if (r < 0)
                        return r;
                struct sv_mount *m = sv_launch_mount_new(l, MK_LEASE, sm->target_path, err);
                if (!m)
                        return -ENOMEM;
                r = import(cfg, dirfd, sm, le, m, err);
                if (r < 0) {
                        sv_launch_mount_drop_last(l);
                        return r;
                }
        }
        return 0;
}

void sv_launch_leases_unlock(struct glove_supervisor_launch *l) {
        for (size_t i = 0; l && i < l->n_leases; i++)
                if (l->leases[i].lock_fd >= 0) {
                        close(l->leases[i].lock_fd);
                        l->leases[i].lock_fd = -1;
                }
}

void sv_launch_leases_free(struct glove_supervisor_launch *l) {
        sv_launch_leases_unlock(l);
        free(l->leases);
        l->leases = NULL;
        l->n_leases = 0;
}

int sv_launch_leases_binding(const struct glove_supervisor_launch *l, json_t *b) {
        json_t *a = json_array();
        if (!a || json_object_set_new(b, "leases", a) < 0)
                return -1;
        int r = 0;
        for (size_t i = 0; i < l->n_leases; i++) {
                const struct sv_lease *le = &l->leases[i];
                json_t *o = json_object();
                r |= json_array_append_new(a, o);
                if (!o)
                        return -1;
                r |= json_object_set_new(o, "handle", json_string(le->handle));
                r |= json_object_set_new(o, "target", json_string(le->target));
                r |= json_object_set_new(o, "version", json_string(le->version));
        }
        return r ? -1 : 0;
}

size_t glove_supervisor_launch_lease_fds(const struct glove_supervisor_launch *l, int *fds, size_t max) {
        size_t n = 0;
        for (size_t i = 0; l && i < l->n_leases; i++)
                if (l->leases[i].lock_fd >= 0) {
                        if (n < max && fds)
                                fds[n] = l->leases[i].lock_fd;
                        n++;
                }
        return n;
}

/* ---- the sweep at start ---- */

static bool handle_in_policy(const struct glove_supervisor_policy *p, const char *h) {
        for (size_t i = 0; p && i < p->n_secret_mounts; i++)
                if (strcmp(p->secret_mounts[i].handle, h) == 0)
                        return true;
        return false;
}

/* The files of a lease directory (lease.h); their temporaries are swept. */
/* The lock goes last: while it exists, a start that opens the lease meets
 * the sweep's lock (lease.busy) rather than making a new lock file. */
static const char *const lease_files[] = { "record", "live", "lock", NULL };

/* Removes the versions (names of 64 hex digits, and their temporary
 * names) in vfd; nothing else. */
static void remove_versions(int vfd) {
        int dfd = fcntl(vfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                if (dfd >= 0)
                        close(dfd);
                return;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
                char hex[HEX_LEN + 1];
                const char *n = e->d_name;
                if (glove_file_replace_temp_target(n, hex, sizeof(hex))) {
                        /* a temporary of version hex */
                } else {
                        if (strlen(n) != HEX_LEN)
                                continue;
                        memcpy(hex, n, HEX_LEN + 1);
                }
                if (hex64_valid(hex))
                        (void)unlinkat(vfd, n, 0);
        }
        closedir(d);
}

/* Removes lease directory h (its lock held by the caller): only the files a
 * lease has; anything else there keeps the directory (lease.store). */
static int remove_lease(int root, const char *h, struct glove_error *err) {
        _cleanup_close_ int dirfd = openat(root, h, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return store_err(err, errno, h, "open");
        _cleanup_close_ int vfd = openat(dirfd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (vfd >= 0) {
                remove_versions(vfd);
                if (unlinkat(dirfd, "versions", AT_REMOVEDIR) < 0)
                        return store_err(err, errno, h, "versions");
        }
        for (size_t i = 0; lease_files[i]; i++) {
                (void)glove_file_replace_sweep(dirfd, lease_files[i]);
                (void)unlinkat(dirfd, lease_files[i], 0);
        }
        if (unlinkat(root, h, AT_REMOVEDIR) < 0)
                return store_err(err, errno, h, "remove");
        return 0;
}

int glove_supervisor_lease_sweep(const struct glove_supervisor_runtime_config *cfg, json_t **removed, json_t **kept,
                                 struct glove_error *err) {
        if (removed)
                *removed = NULL;
        if (kept)
                *kept = NULL;
        if (!cfg || !cfg->lease_root || cfg->lease_root_fd < 0)
                return 0;
        _cleanup_json_ json_t *rm = json_array(), *kp = json_array();
        if (!rm || !kp)
                return glove_error_set(err, ENOMEM, "lease.no_memory", "out of memory");
        int dfd = fcntl(cfg->lease_root_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                if (dfd >= 0)
                        close(dfd);
                return store_err(err, errno, "(all)", cfg->lease_root);
        }
        int ret = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                const char *h = e->d_name;
                struct stat st;
                if (!lease_name_ok(h) || handle_in_policy(cfg->policy, h) ||
                    fstatat(cfg->lease_root_fd, h, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                _cleanup_close_ int dirfd = openat(cfg->lease_root_fd, h, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int lock = -1;
                struct glove_error e2 = { 0 };
                /* A directory without a lock file is not a lease: left alone,
                 * and no lock file is made in it. */
                if (dirfd >= 0 && faccessat(dirfd, "lock", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                        continue;
                int r = dirfd < 0 ? -errno : take_lock(dirfd, h, false, &lock, &e2);
                if (r == -EBUSY) {
                        json_array_append_new(kp, json_string(h));
                        continue;
                }
                if (r >= 0)
                        r = remove_lease(cfg->lease_root_fd, h, &e2);
                if (r >= 0)
                        json_array_append_new(rm, json_string(h));
                else if (ret == 0) {
                        ret = r;
                        if (err)
                                *err = e2;
                        if (!glove_error_is_set(&e2))
                                store_err(err, -r, h, "open");
                }
        }
        closedir(d);
        if (removed)
                *removed = TAKE_PTR(rm);
        if (kept)
                *kept = TAKE_PTR(kp);
        return ret;
}
