/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifests of a directory tree (glove/supervisor/manifest.h; issue 30, spec
 * session-policy.md, the retained-change and apply paragraphs): the no-follow
 * walker, the manifest digest, the stored JSON form, what apply accepts, and
 * the difference of two manifests.
 *
 * The walk is depth-first and recursive (at most GLOVE_MANIFEST_DEPTH_MAX
 * levels, one directory stream open per level). Every name is looked at with
 * fstatat(AT_SYMLINK_NOFOLLOW), then opened relative to its parent's
 * descriptor with openat2 (no symbolic link, no magic link, not beneath, no
 * mount crossed), and the opened object must be what was looked at (type,
 * dev, ino). Directories and regular files are opened to be read; symbolic
 * links and special files with O_PATH | O_NOFOLLOW, which never opens a
 * device or waits on a FIFO. Extended attributes are listed on the opened
 * directories and files (flistxattr); symbolic links and special files are
 * recorded without (xattr false): an O_PATH descriptor cannot list them,
 * and apply refuses those entries whatever their attributes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/digest.h"
#include "glove/base/json.h"
#include "glove/base/path.h"
#include "glove/supervisor/manifest.h"
#include "manifest_internal.h"

#define MANIFEST_SCHEMA "glove.manifest.v1"
/* Bytes read from a file at a time while it is hashed. */
#define READ_CHUNK (128 * 1024)

static const char *const type_names[] = {
        [GLOVE_MANIFEST_DIR] = "dir",
        [GLOVE_MANIFEST_FILE] = "file",
        [GLOVE_MANIFEST_SYMLINK] = "symlink",
        [GLOVE_MANIFEST_FIFO] = "fifo",
        [GLOVE_MANIFEST_SOCKET] = "socket",
        [GLOVE_MANIFEST_CHAR] = "char_device",
        [GLOVE_MANIFEST_BLOCK] = "block_device",
};

static const char *type_name(enum glove_manifest_type t) {
        return (size_t)t < GLOVE_ELEMENTSOF(type_names) ? type_names[t] : "unknown";
}

static int type_from_name(const char *s, enum glove_manifest_type *out) {
        for (size_t i = 0; i < GLOVE_ELEMENTSOF(type_names); i++)
                if (strcmp(s, type_names[i]) == 0) {
                        *out = (enum glove_manifest_type)i;
                        return 0;
                }
        return -EINVAL;
}

static int type_of_mode(mode_t mode, enum glove_manifest_type *out) {
        switch (mode & S_IFMT) {
        case S_IFDIR: *out = GLOVE_MANIFEST_DIR; return 0;
        case S_IFREG: *out = GLOVE_MANIFEST_FILE; return 0;
        case S_IFLNK: *out = GLOVE_MANIFEST_SYMLINK; return 0;
        case S_IFIFO: *out = GLOVE_MANIFEST_FIFO; return 0;
        case S_IFSOCK: *out = GLOVE_MANIFEST_SOCKET; return 0;
        case S_IFCHR: *out = GLOVE_MANIFEST_CHAR; return 0;
        case S_IFBLK: *out = GLOVE_MANIFEST_BLOCK; return 0;
        default: return -EINVAL;
        }
}

void glove_manifest_free(struct glove_manifest *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                free(m->v[i].path);
        free(m->v);
        free(m);
}

static void manifest_freep(struct glove_manifest **m) {
        if (m)
                glove_manifest_free(*m);
}
#define _cleanup_manifest_ _cleanup_(manifest_freep)

/* ---- the digest ---- */

/* The digest form of one entry: {"mode","path","sha256","size","type"}. */
static json_t *entry_digest_form(const struct glove_manifest_entry *e) {
        return json_pack("{s:I,s:s,s:s,s:I,s:s}", "mode", (json_int_t)e->mode, "path", e->path, "sha256", e->sha256,
                         "size", (json_int_t)e->size, "type", type_name(e->type));
}

/*
 * SHA-256 of "glove.manifest.v1\0" || the canonical JSON of the array of
 * digest forms. The array's canonical text is "[" e1 "," e2 ... "]" with each
 * element's canonical text (JSON_COMPACT puts nothing else between them), so
 * it is fed one element at a time rather than built whole.
 */
static int compute_digest(const struct glove_manifest_entry *v, size_t n, char out[GLOVE_MANIFEST_DIGEST_HEX_SIZE],
                          struct glove_error *err) {
        _cleanup_digest_sha256_ struct glove_digest_sha256 *sha = NULL;
        int r = glove_digest_sha256_init(&sha, err);
        if (r < 0)
                return r;
        static const char domain[] = MANIFEST_SCHEMA; /* its NUL is part of the domain */
        if ((r = glove_digest_sha256_update(sha, domain, sizeof(domain), err)) < 0 ||
            (r = glove_digest_sha256_update(sha, "[", 1, err)) < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *o = entry_digest_form(&v[i]);
                if (!o)
                        return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory (the digest of %s)",
                                               v[i].path);
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                if ((r = glove_json_encode_canonical(o, &text, &len, err)) < 0)
                        return r;
                if ((i > 0 && (r = glove_digest_sha256_update(sha, ",", 1, err)) < 0) ||
                    (r = glove_digest_sha256_update(sha, text, len, err)) < 0)
                        return r;
        }
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        if ((r = glove_digest_sha256_update(sha, "]", 1, err)) < 0 || (r = glove_digest_sha256_final(sha, md, err)) < 0)
                return r;
        return glove_digest_hex_encode(md, sizeof(md), out, GLOVE_MANIFEST_DIGEST_HEX_SIZE);
}

/* ---- the walk ---- */

struct walk {
        struct glove_manifest *m;
        size_t cap, max_entries;
        uint64_t max_file_bytes;
        dev_t dev;                              /* the root's file system */
        char path[GLOVE_MANIFEST_PATH_MAX + 1]; /* the current entry's relative path */
        size_t path_len;
        struct glove_digest_sha256 *sha;        /* reused for every file */
        uint8_t *buf;                           /* READ_CHUNK bytes */
        struct glove_error *err;
};

static const char *cur_path(const struct walk *w) {
        return w->path_len ? w->path : ".";
}

static int open_beneath(int dirfd, const char *name, int flags) {
        struct open_how how = {
                /* openat2 refuses O_PATH with any flag but these. */
                .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY)),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        for (int tries = 0;; tries++) {
                int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                /* EAGAIN: a rename raced the lookup; the kernel asks to retry. */
                if (errno != EAGAIN || tries >= 8)
                        return -errno;
        }
}

static int changed(struct walk *w, const char *what) {
        return glove_error_set(w->err, ESTALE, "manifest.changed", "%s %s while the manifest was built; try again",
                               cur_path(w), what);
}

static int io_error(struct walk *w, int e, const char *what) {
        return glove_error_set(w->err, e, "manifest.io", "%s: %s: %s", cur_path(w), what, glove_errno_text(e));
}

static int crosses_mount(struct walk *w) {
        return glove_error_set(w->err, EXDEV, "manifest.crosses_mount",
                               "%s is a mount point (or on another file system) beneath the tree; a manifest does not "
                               "cross mounts",
                               cur_path(w));
}

/* The failure of opening the current entry (-errno from open_beneath). */
static int open_failed(struct walk *w, int r) {
        switch (-r) {
        case EXDEV:
                return crosses_mount(w);
        case ENOENT:
        case ELOOP:
        case ENOTDIR:
                return changed(w, "was replaced");
        default:
                return io_error(w, -r, "open");
        }
}

static bool same_object(const struct stat *a, const struct stat *b) {
        return (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT) && a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Appends an entry for the current path with the opened object's st. */
static int add_entry(struct walk *w, const struct stat *st, struct glove_manifest_entry **out) {
        struct glove_manifest *m = w->m;
        if (m->n >= w->max_entries)
                return glove_error_set(w->err, E2BIG, "manifest.too_large",
                                       "the tree has more than %zu entries (at %s)", w->max_entries, cur_path(w));
        if (m->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 64;
                struct glove_manifest_entry *v = reallocarray(m->v, cap, sizeof(*v));
                if (!v)
                        return glove_error_set(w->err, ENOMEM, "manifest.no_memory", "out of memory at %s",
                                               cur_path(w));
                m->v = v;
                w->cap = cap;
        }
        struct glove_manifest_entry *e = &m->v[m->n];
        *e = (struct glove_manifest_entry){
                .mode = (uint32_t)(st->st_mode & 07777),
                .nlink = (uint32_t)st->st_nlink,
                .uid = (uint32_t)st->st_uid,
                .gid = (uint32_t)st->st_gid,
        };
        (void)type_of_mode(st->st_mode, &e->type);
        if (!(e->path = strdup(cur_path(w))))
                return glove_error_set(w->err, ENOMEM, "manifest.no_memory", "out of memory at %s", cur_path(w));
        m->n++;
        *out = e;
        return 0;
}

/* Records whether the directory or file open as fd has extended
 * attributes, and its inode flags (FS_IOC_GETFLAGS; 0 where the file
 * system keeps none). */
static int list_xattr(struct walk *w, int fd, struct glove_manifest_entry *e) {
        ssize_t n = flistxattr(fd, NULL, 0);
        if (n < 0 && errno != ENOTSUP)
                return io_error(w, errno, "listing extended attributes");
        e->xattr = n > 0;
        int flags = 0;
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
                if (errno != ENOTTY && errno != ENOTSUP && errno != EINVAL)
                        return io_error(w, errno, "reading inode flags");
                flags = 0;
        }
        e->flags = (uint32_t)flags;
        return 0;
}

/* Hashes the opened regular file fd (st from fstat) into e. */
static int hash_file(struct walk *w, int fd, const struct stat *st, struct glove_manifest_entry *e) {
        uint64_t size = (uint64_t)st->st_size;
        if (w->max_file_bytes && (size > w->max_file_bytes || w->m->file_bytes > w->max_file_bytes - size))
                return glove_error_set(w->err, EFBIG, "manifest.too_large",
                                       "the files of the tree hold more than %llu bytes (at %s)",
                                       (unsigned long long)w->max_file_bytes, cur_path(w));
        int r = glove_digest_sha256_reset(w->sha, w->err);
        if (r < 0)
                return r;
        uint64_t off = 0;
        for (;;) {
                ssize_t k = pread(fd, w->buf, READ_CHUNK, (off_t)off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return io_error(w, errno, "read");
                if (k == 0)
                        break;
                off += (uint64_t)k;
                if (off > size)
                        return changed(w, "grew");
                if ((r = glove_digest_sha256_update(w->sha, w->buf, (size_t)k, w->err)) < 0)
                        return r;
        }
        struct stat after;
        if (fstat(fd, &after) < 0)
                return io_error(w, errno, "stat");
        if (off != size || after.st_size != st->st_size || after.st_mtim.tv_sec != st->st_mtim.tv_sec ||
            after.st_mtim.tv_nsec != st->st_mtim.tv_nsec || after.st_ctim.tv_sec != st->st_ctim.tv_sec ||
            after.st_ctim.tv_nsec != st->st_ctim.tv_nsec)
                return changed(w, "changed while it was read");
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        if ((r = glove_digest_sha256_final(w->sha, md, w->err)) < 0)
                return r;
        (void)glove_digest_hex_encode(md, sizeof(md), e->sha256, sizeof(e->sha256));
        /* An empty file has no hole (and SEEK_HOLE at its end is ENXIO). */
        off_t hole = size ? lseek(fd, 0, SEEK_HOLE) : 0;
        if (hole < 0)
                return io_error(w, errno, "looking for holes");
        e->sparse = size && hole < st->st_size;
        e->size = size;
        w->m->file_bytes += size;
        return list_xattr(w, fd, e);
}

/* Records the symbolic link opened as fd (O_PATH): its target's length and digest. */
static int hash_link(struct walk *w, int fd, const struct stat *st, struct glove_manifest_entry *e) {
        char target[GLOVE_PATH_MAX];
        ssize_t n = readlinkat(fd, "", target, sizeof(target));
        if (n < 0)
                return io_error(w, errno, "readlink");
        if ((size_t)n >= sizeof(target) || (st->st_size > 0 && n != st->st_size))
                return changed(w, "changed while it was read");
        e->size = (uint64_t)n;
        uint8_t md[GLOVE_DIGEST_SHA256_LEN];
        int r = glove_digest_sha256(target, (size_t)n, md, w->err);
        if (r < 0)
                return r;
        (void)glove_digest_hex_encode(md, sizeof(md), e->sha256, sizeof(e->sha256));
        return 0;
}

static int walk_dir(struct walk *w, int dfd, unsigned depth);

/* One name of the directory dirfd (depth: that directory's level). */
static int walk_entry(struct walk *w, int dirfd, const char *name, unsigned depth) {
        struct stat st, ost;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? changed(w, "was removed") : io_error(w, errno, "stat");
        if (st.st_dev != w->dev)
                return crosses_mount(w);
        bool dir = S_ISDIR(st.st_mode), reg = S_ISREG(st.st_mode);
        if (dir && depth + 1 > GLOVE_MANIFEST_DEPTH_MAX)
                return glove_error_set(w->err, ELOOP, "manifest.too_deep",
                                       "%s is more than %d directories beneath the root", cur_path(w),
                                       GLOVE_MANIFEST_DEPTH_MAX);
        /* O_NONBLOCK: should a file have become a FIFO since fstatat, the
         * open does not wait for a writer (and it is refused below). */
        int flags = dir ? O_RDONLY | O_DIRECTORY : reg ? O_RDONLY | O_NONBLOCK : O_PATH;
        _cleanup_close_ int fd = open_beneath(dirfd, name, flags);
        if (fd < 0)
                return open_failed(w, fd);
        if (fstat(fd, &ost) < 0)
                return io_error(w, errno, "stat");
        if (!same_object(&st, &ost))
                return changed(w, "was replaced");
        struct glove_manifest_entry *e = NULL;
        int r = add_entry(w, &ost, &e);
        if (r < 0)
                return r;
        if (reg)
                return hash_file(w, fd, &ost, e);
        if (S_ISLNK(ost.st_mode))
                return hash_link(w, fd, &ost, e);
        if (!dir)
                return 0;
        if ((r = list_xattr(w, fd, e)) < 0)
                return r;
        return walk_dir(w, TAKE_FD(fd), depth + 1);
}

/* Walks the opened directory dfd (taken) at level depth, the current path
 * being its own. */
static int walk_dir(struct walk *w, int dfd, unsigned depth) {
        DIR *d = fdopendir(dfd);
        if (!d) {
                int e = errno;
                close(dfd);
                return io_error(w, e, "reading the directory");
        }
        size_t len = w->path_len;
        int r = 0;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno)
                                r = io_error(w, errno, "reading the directory");
                        break;
                }
                const char *name = de->d_name;
                if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                        continue;
                size_t nl = strlen(name), add = nl + (len ? 1 : 0);
                if (len + add > GLOVE_MANIFEST_PATH_MAX) {
                        r = glove_error_set(w->err, ENAMETOOLONG, "manifest.too_large",
                                            "a name in %s makes a path longer than %d bytes", cur_path(w),
                                            GLOVE_MANIFEST_PATH_MAX);
                        break;
                }
                if (!glove_json_utf8_valid(name, nl, NULL)) {
                        r = glove_error_set(w->err, EILSEQ, "manifest.bad_name",
                                            "a name in %s is not UTF-8; a manifest holds only UTF-8 names",
                                            cur_path(w));
                        break;
                }
                if (len)
                        w->path[len] = '/';
                memcpy(w->path + len + (len ? 1 : 0), name, nl + 1);
                w->path_len = len + add;
                r = walk_entry(w, dirfd(d), name, depth);
                w->path_len = len;
                w->path[len] = '\0';
                if (r < 0)
                        break;
        }
        w->path_len = len;
        w->path[len] = '\0';
        closedir(d);
        return r;
}

int glove_manifest_path_cmp(const char *a, const char *b) {
        bool ra = strcmp(a, ".") == 0, rb = strcmp(b, ".") == 0;
        if (ra || rb)
                return ra && rb ? 0 : ra ? -1 : 1;
        return strcmp(a, b);
}

static int entry_cmp(const void *a, const void *b) {
        return glove_manifest_path_cmp(((const struct glove_manifest_entry *)a)->path,
                                       ((const struct glove_manifest_entry *)b)->path);
}

int glove_manifest_build_bounded(int dir_fd, uint64_t max_file_bytes, size_t max_entries,
                                 struct glove_manifest **out, struct glove_error *err) {
        if (!out)
                return glove_error_set(err, EINVAL, "manifest.io", "no output for the manifest");
        *out = NULL;
        _cleanup_manifest_ struct glove_manifest *m = calloc(1, sizeof(*m));
        _cleanup_free_ uint8_t *buf = malloc(READ_CHUNK);
        _cleanup_digest_sha256_ struct glove_digest_sha256 *sha = NULL;
        if (!m || !buf)
                return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
        int r = glove_digest_sha256_init(&sha, err);
        if (r < 0)
                return r;
        struct walk w = {.m = m, .max_entries = max_entries, .max_file_bytes = max_file_bytes, .sha = sha,
                         .buf = buf, .err = err};
        struct stat st, ost;
        if (fstat(dir_fd, &st) < 0)
                return io_error(&w, errno, "stat");
        if (!S_ISDIR(st.st_mode))
                return io_error(&w, ENOTDIR, "the root");
        w.dev = st.st_dev;
        int fd = open_beneath(dir_fd, ".", O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return open_failed(&w, fd);
        if (fstat(fd, &ost) < 0 || !same_object(&st, &ost)) {
                close(fd);
                return changed(&w, "was replaced");
        }
        struct glove_manifest_entry *root = NULL;
        if ((r = add_entry(&w, &ost, &root)) < 0 || (r = list_xattr(&w, fd, root)) < 0) {
                close(fd);
                return r;
        }
        if ((r = walk_dir(&w, fd, 0)) < 0)
                return r;
        qsort(m->v, m->n, sizeof(*m->v), entry_cmp);
        if ((r = compute_digest(m->v, m->n, m->digest, err)) < 0)
                return r;
        *out = TAKE_PTR(m);
        return 0;
}

int glove_manifest_build(int dir_fd, uint64_t max_file_bytes, struct glove_manifest **out, struct glove_error *err) {
        return glove_manifest_build_bounded(dir_fd, max_file_bytes, GLOVE_MANIFEST_ENTRIES_MAX, out, err);
}

/* ---- the stored form ---- */

json_t *glove_manifest_to_json(const struct glove_manifest *m) {
        _cleanup_json_ json_t *entries = json_array();
        if (!m || !entries)
                return NULL;
        for (size_t i = 0; i < m->n; i++) {
                const struct glove_manifest_entry *e = &m->v[i];
                json_t *o = json_pack("{s:I,s:I,s:I,s:s,s:s,s:I,s:b,s:s,s:I,s:b}", "gid", (json_int_t)e->gid, "mode",
                                      (json_int_t)e->mode, "nlink", (json_int_t)e->nlink, "path", e->path, "sha256",
                                      e->sha256, "size", (json_int_t)e->size, "sparse", (int)e->sparse, "type",
                                      type_name(e->type), "uid", (json_int_t)e->uid, "xattr", (int)e->xattr);
                if (!o || json_array_append_new(entries, o) < 0)
                        return NULL;
        }
        return json_pack("{s:s,s:O,s:I,s:s}", "digest", m->digest, "entries", entries, "file_bytes",
                         (json_int_t)m->file_bytes, "schema", MANIFEST_SCHEMA);
}

/* Re-reports a json.* error (or any) as manifest.invalid. */
static int invalid_from(struct glove_error *err, const struct glove_error *local) {
        return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s", local->message);
}

/* A relative path as the walker writes it: "." or '/'-separated names, none
 * empty, ".", ".." or with a NUL, at most GLOVE_MANIFEST_DEPTH_MAX + 1 deep. */
static bool path_form_ok(const char *p) {
        if (strcmp(p, ".") == 0)
                return true;
        unsigned parts = 0;
        for (const char *s = p;; s++) {
                const char *end = strchrnul(s, '/');
                size_t n = (size_t)(end - s);
                if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
                if (++parts > GLOVE_MANIFEST_DEPTH_MAX + 1)
                        return false;
                if (!*end)
                        return true;
                s = end;
        }
}

static bool hex_ok(const char *s) {
        if (strlen(s) != GLOVE_DIGEST_SHA256_HEX_LEN)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

static int entry_from_json(const json_t *o, const char *jpath, struct glove_manifest_entry *e,
                           struct glove_error *err) {
        static const char *const keys[] = {"gid", "mode", "nlink", "path", "sha256", "size", "sparse",
                                           "type", "uid", "xattr", NULL};
        struct glove_error local = {0};
        const char *path = NULL, *sha = NULL, *type = NULL;
        int64_t gid, mode, nlink, size, uid;
        if (!json_is_object(o))
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s is not an object", jpath);
        if (glove_json_check_keys(o, keys, jpath, &local) < 0 ||
            glove_json_get_int(o, "gid", jpath, 0, UINT32_MAX, &gid, &local) < 0 ||
            glove_json_get_int(o, "mode", jpath, 0, 07777, &mode, &local) < 0 ||
            glove_json_get_int(o, "nlink", jpath, 0, UINT32_MAX, &nlink, &local) < 0 ||
            glove_json_get_string(o, "path", jpath, GLOVE_MANIFEST_PATH_MAX, &path, &local) < 0 ||
            glove_json_get_string(o, "sha256", jpath, GLOVE_DIGEST_SHA256_HEX_LEN, &sha, &local) < 0 ||
            glove_json_get_int(o, "size", jpath, 0, INT64_MAX, &size, &local) < 0 ||
            glove_json_get_bool(o, "sparse", jpath, &e->sparse, &local) < 0 ||
            glove_json_get_string(o, "type", jpath, 16, &type, &local) < 0 ||
            glove_json_get_int(o, "uid", jpath, 0, UINT32_MAX, &uid, &local) < 0 ||
            glove_json_get_bool(o, "xattr", jpath, &e->xattr, &local) < 0)
                return invalid_from(err, &local);
        if (type_from_name(type, &e->type) < 0)
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s.type: unknown type", jpath);
        if (!path_form_ok(path))
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s.path: not a relative path",
                                       jpath);
        bool hashed = e->type == GLOVE_MANIFEST_FILE || e->type == GLOVE_MANIFEST_SYMLINK;
        if (hashed ? !hex_ok(sha) : sha[0] != '\0')
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s.sha256: %s", jpath,
                                       hashed ? "not 64 lowercase hex" : "must be empty for this type");
        if (!hashed && size != 0)
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s.size: must be 0 for this type",
                                       jpath);
        if (e->sparse && e->type != GLOVE_MANIFEST_FILE)
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s.sparse: only files are sparse",
                                       jpath);
        e->mode = (uint32_t)mode;
        e->nlink = (uint32_t)nlink;
        e->size = (uint64_t)size;
        e->uid = (uint32_t)uid;
        e->gid = (uint32_t)gid;
        memcpy(e->sha256, sha, strlen(sha) + 1);
        if (!(e->path = strdup(path)))
                return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
        return 0;
}

static const struct glove_manifest_entry *find_entry(const struct glove_manifest *m, const char *path) {
        struct glove_manifest_entry key = {.path = (char *)path};
        return bsearch(&key, m->v, m->n, sizeof(*m->v), entry_cmp);
}

/* Every entry but the root has its parent directory among the entries. */
static int check_parents(const struct glove_manifest *m, struct glove_error *err) {
        for (size_t i = 1; i < m->n; i++) {
                const char *p = m->v[i].path, *slash = strrchr(p, '/');
                if (!slash)
                        continue;
                _cleanup_free_ char *parent = strndup(p, (size_t)(slash - p));
                if (!parent)
                        return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
                const struct glove_manifest_entry *e = find_entry(m, parent);
                if (!e || e->type != GLOVE_MANIFEST_DIR)
                        return glove_error_set(err, EINVAL, "manifest.invalid",
                                               "manifest: $.entries[%zu]: its parent is not a directory entry", i);
        }
        return 0;
}

int glove_manifest_from_json(const json_t *j, struct glove_manifest **out, struct glove_error *err) {
        static const char *const keys[] = {"digest", "entries", "file_bytes", "schema", NULL};
        if (!out)
                return glove_error_set(err, EINVAL, "manifest.invalid", "no output for the manifest");
        *out = NULL;
        struct glove_error local = {0};
        const char *schema = NULL, *digest = NULL;
        json_t *entries = NULL;
        int64_t file_bytes;
        if (!json_is_object(j))
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: $ is not an object");
        if (glove_json_check_keys(j, keys, NULL, &local) < 0 ||
            glove_json_get_string(j, "schema", NULL, 64, &schema, &local) < 0 ||
            glove_json_get_string(j, "digest", NULL, GLOVE_DIGEST_SHA256_HEX_LEN, &digest, &local) < 0 ||
            glove_json_get_int(j, "file_bytes", NULL, 0, INT64_MAX, &file_bytes, &local) < 0 ||
            glove_json_get_array(j, "entries", NULL, GLOVE_MANIFEST_ENTRIES_MAX, &entries, &local) < 0)
                return invalid_from(err, &local);
        if (strcmp(schema, MANIFEST_SCHEMA) != 0)
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: $.schema is not %s",
                                       MANIFEST_SCHEMA);
        if (!hex_ok(digest))
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: $.digest is not 64 lowercase hex");
        size_t n = json_array_size(entries);
        _cleanup_manifest_ struct glove_manifest *m = calloc(1, sizeof(*m));
        if (!m || (n && !(m->v = calloc(n, sizeof(*m->v)))))
                return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
                char jpath[64];
                snprintf(jpath, sizeof(jpath), "$.entries[%zu]", i);
                int r = entry_from_json(json_array_get(entries, i), jpath, &m->v[i], err);
                if (r < 0)
                        return r;
                m->n = i + 1;
                const struct glove_manifest_entry *e = &m->v[i];
                if (i == 0 ? strcmp(e->path, ".") != 0 || e->type != GLOVE_MANIFEST_DIR
                           : glove_manifest_path_cmp(m->v[i - 1].path, e->path) >= 0)
                        return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: %s: %s", jpath,
                                               i == 0 ? "the first entry must be the root directory \".\""
                                                      : "entries are not sorted by path, or repeat a path");
                if (e->type == GLOVE_MANIFEST_FILE)
                        sum += e->size;
        }
        if (n == 0)
                return glove_error_set(err, EINVAL, "manifest.invalid", "manifest: $.entries has no root entry");
        if (sum != (uint64_t)file_bytes)
                return glove_error_set(err, EINVAL, "manifest.invalid",
                                       "manifest: $.file_bytes is not the sum of the files' sizes");
        int r = check_parents(m, err);
        if (r < 0)
                return r;
        m->file_bytes = sum;
        if ((r = compute_digest(m->v, m->n, m->digest, err)) < 0)
                return r;
        if (strcmp(m->digest, digest) != 0)
                return glove_error_set(err, EINVAL, "manifest.invalid",
                                       "manifest: $.digest is not the digest of the entries (tampered or damaged)");
        *out = TAKE_PTR(m);
        return 0;
}

/* ---- what apply accepts ---- */

int glove_manifest_check_apply(const struct glove_manifest *m, uid_t owner, struct glove_error *err) {
        for (size_t i = 0; m && i < m->n; i++) {
                const struct glove_manifest_entry *e = &m->v[i];
                const char *p = e->path;
                if (e->type == GLOVE_MANIFEST_SYMLINK)
                        return glove_error_set(err, EPERM, "apply.symlink",
                                               "%s is a symbolic link; apply takes only regular files and "
                                               "directories",
                                               p);
                if (e->type != GLOVE_MANIFEST_FILE && e->type != GLOVE_MANIFEST_DIR)
                        return glove_error_set(err, EPERM, "apply.special_file",
                                               "%s is a %s; apply takes only regular files and directories", p,
                                               type_name(e->type));
                if (e->type == GLOVE_MANIFEST_FILE && e->nlink > 1)
                        return glove_error_set(err, EPERM, "apply.hard_link",
                                               "%s has %u hard links; apply takes only single-link files", p,
                                               e->nlink);
                if (e->mode & 07000)
                        return glove_error_set(err, EPERM, "apply.special_mode",
                                               "%s has mode %04o (setuid, setgid or sticky); apply takes none of "
                                               "these bits",
                                               p, e->mode);
                if (e->xattr)
                        return glove_error_set(err, EPERM, "apply.xattr",
                                               "%s has extended attributes or an ACL; apply takes none", p);
                if (e->sparse)
                        return glove_error_set(err, EPERM, "apply.sparse",
                                               "%s is a sparse file; apply takes only fully allocated files", p);
                if (e->uid != (uint32_t)owner)
                        return glove_error_set(err, EPERM, "apply.foreign_owner",
                                               "%s belongs to uid %u, not to the service (uid %u)", p, e->uid,
                                               (unsigned)owner);
        }
        return 0;
}

int glove_manifest_check_carried(const struct glove_manifest *m, uid_t uid, gid_t gid, struct glove_error *err) {
        for (size_t i = 0; m && i < m->n; i++) {
                const struct glove_manifest_entry *e = &m->v[i];
                const char *p = e->path;
                if (e->type == GLOVE_MANIFEST_SYMLINK)
                        continue;
                if (e->type != GLOVE_MANIFEST_FILE && e->type != GLOVE_MANIFEST_DIR)
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source holds a %s, which the stage could not carry; an "
                                               "exchange would drop it",
                                               p, type_name(e->type));
                if (e->uid != (uint32_t)uid || e->gid != (uint32_t)gid)
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source's entry belongs to uid %u, group %u; the applied "
                                               "tree would belong to uid %u, group %u (who applies), so an "
                                               "exchange would change its ownership: chown it, or copy the "
                                               "change by hand",
                                               p, e->uid, e->gid, (unsigned)uid, (unsigned)gid);
                if (e->mode & 07000)
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source's entry has mode %04o; the stage carries no setuid, "
                                               "setgid or sticky bit, so an exchange would drop it",
                                               p, e->mode);
                if (e->xattr)
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source's entry has extended attributes or an ACL, which "
                                               "the stage does not carry; an exchange would drop them",
                                               p);
                if (e->flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source's entry is %s (chattr +%c), which the stage does "
                                               "not carry: an exchange would drop it, and could not remove the "
                                               "old source; clear it (chattr -%c) or copy the change by hand",
                                               p, e->flags & FS_IMMUTABLE_FL ? "immutable" : "append-only",
                                               e->flags & FS_IMMUTABLE_FL ? 'i' : 'a',
                                               e->flags & FS_IMMUTABLE_FL ? 'i' : 'a');
                if (e->type == GLOVE_MANIFEST_FILE && e->nlink > 1)
                        return glove_error_set(err, EPERM, "apply.source_unsupported",
                                               "%s: the source's file has %u hard links; the applied file would "
                                               "be a new one, apart from its other names",
                                               p, e->nlink);
        }
        return 0;
}

/* ---- the difference ---- */

static json_t *diff_form(const struct glove_manifest_entry *e) {
        return json_pack("{s:s,s:s,s:I,s:I,s:s}", "path", e->path, "type", type_name(e->type), "mode",
                         (json_int_t)e->mode, "size", (json_int_t)e->size, "sha256", e->sha256);
}

static int append(json_t *a, json_t *v) {
        return v && json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

int glove_manifest_diff(const struct glove_manifest *base, const struct glove_manifest *cur, json_t **out,
                        struct glove_error *err) {
        if (!base || !cur || !out)
                return glove_error_set(err, EINVAL, "manifest.invalid", "no manifest to compare");
        *out = NULL;
        _cleanup_json_ json_t *added = json_array(), *removed = json_array(), *modified = json_array(),
                              *mode_changed = json_array();
        if (!added || !removed || !modified || !mode_changed)
                return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
        size_t i = 0, k = 0;
        json_int_t unchanged = 0;
        int r = 0;
        while (r == 0 && (i < base->n || k < cur->n)) {
                int c = i == base->n ? 1 : k == cur->n ? -1 : glove_manifest_path_cmp(base->v[i].path, cur->v[k].path);
                if (c < 0) {
                        r = append(removed, diff_form(&base->v[i++]));
                        continue;
                }
                if (c > 0) {
                        r = append(added, diff_form(&cur->v[k++]));
                        continue;
                }
                const struct glove_manifest_entry *b = &base->v[i++], *a = &cur->v[k++];
                bool mod = b->type != a->type || b->size != a->size || strcmp(b->sha256, a->sha256) != 0;
                bool chmod = b->mode != a->mode;
                if (mod)
                        r = append(modified, json_pack("{s:s,s:o,s:o}", "path", a->path, "before", diff_form(b),
                                                       "after", diff_form(a)));
                if (r == 0 && chmod)
                        r = append(mode_changed, json_pack("{s:s,s:I,s:I}", "path", a->path, "before",
                                                           (json_int_t)b->mode, "after", (json_int_t)a->mode));
                if (!mod && !chmod)
                        unchanged++;
        }
        if (r == 0)
                *out = json_pack("{s:O,s:O,s:O,s:O,s:I}", "added", added, "removed", removed, "modified", modified,
                                 "mode_changed", mode_changed, "unchanged", unchanged);
        if (!*out)
                return glove_error_set(err, ENOMEM, "manifest.no_memory", "out of memory");
        return 0;
}
