/* SPDX-License-Identifier: Apache-2.0 */
/* glove setup (include/glove/host/setup.h, docs/host.md). */
#include "glove/host/setup.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/path.h"
#include "glove/store/dirs.h"
#include "glove/store/receipts.h"
#include "glove/host/config.h"
#include "glove/host/dirs.h"
#include "glove/host/exposures.h"
#include "glove/host/guided.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/policy.h"
#include "shown.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 125

static const char usage_text[] =
        "Usage: glove setup [--path-root DIR]... [--json]\n"
        "\n"
        "Prepares this user's Glove files, creating only what is missing:\n"
        "  config directory   $XDG_CONFIG_HOME/glove (default ~/.config/glove), 0700\n"
        "  runtime directory  $XDG_RUNTIME_DIR/glove, 0700\n"
        "  state directory    $XDG_STATE_HOME/glove (default ~/.local/state/glove), 0700\n"
        "  receipt key        STATE/receipt.key, 32 random bytes, 0600 (as gloved makes it)\n"
        "  session policy     CONFIG/session-policy.json, 0600: the guided starter policy\n"
        "  path roots         CONFIG/config.json, 0600: the owner-approved path roots\n"
        "  exposure policy    CONFIG/exposure-policy.json, 0600: each root with its\n"
        "                     defaults for glove init (docs/exposures.md); written when\n"
        "                     --path-root names a root it lacks, checked when present\n"
        "Anything that exists already is checked and left as it is; a directory or\n"
        "file with the wrong owner, mode or type is refused with what to do, never\n"
        "changed. A second run changes nothing and says so.\n"
        "\n"
        "Options:\n"
        "  --path-root DIR  record DIR (absolute, an existing directory you own that\n"
        "                   only you can write, reached without symbolic links) as a\n"
        "                   root for later exposures; repeatable; roots already\n"
        "                   recorded are kept; a new root enters the exposure policy\n"
        "                   with target /workspace, at most 7 days, modes read,\n"
        "                   ephemeral_write and retained_write (1 GiB each) and\n"
        "                   every runtime template of the session policy; a root\n"
        "                   already there is never changed, one overlapping it is\n"
        "                   refused (setup.root_overlap)\n"
        "  --json           report each item as JSON on stdout:\n"
        "                   {\"changed\":BOOL,\"items\":[{\"item\",\"path\",\"result\"}]}, result\n"
        "                   created | unchanged | updated; on refusal also\n"
        "                   \"error\":{\"code\",\"message\",\"fix\",\"item\",\"path\"}\n"
        "  -h, --help       show this help\n"
        "\n"
        "Exit status: 0 done (or nothing to do), 1 refused or failed (the stderr line\n"
        "\"glove: CODE: MESSAGE; what to do: ...\" says what, where and how to fix it),\n"
        "125 usage error.\n";

enum result { R_CREATED, R_UNCHANGED, R_UPDATED };
static const char *const result_words[] = { "created", "unchanged", "updated" };

#define MAX_ITEMS 8

struct item {
        const char *name;  /* stable: config_dir, runtime_dir, state_dir, receipt_key, session_policy, config,
                            * exposure_policy */
        const char *label; /* words */
        char path[PATH_MAX];
        enum result result;
};

struct setup {
        bool json;
        const char *roots[GLOVE_HOST_CONFIG_MAX_ROOTS];
        size_t n_roots;
        char *checked[GLOVE_HOST_CONFIG_MAX_ROOTS]; /* the roots normalized by setup_config (owned) */
        size_t n_checked;
        uid_t uid;
        struct glove_host_dirs dirs;
        struct item items[MAX_ITEMS];
        size_t n_items;
        /* on refusal */
        const char *fail_item;
        char fail_path[PATH_MAX];
        char fix[1024];
};

/* vsnprintf: a message cut at the buffer's size is acceptable. */
static void textf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

static int usage_error(const char *fmt, const char *arg) {
        fputs("glove: usage.setup: ", stderr);
        fprintf(stderr, fmt, arg);
        fputs("; see glove setup --help\n", stderr);
        return EXIT_USAGE;
}

static void add_item(struct setup *s, const char *name, const char *label, const char *path, enum result r) {
        struct item *it = &s->items[s->n_items++];
        it->name = name;
        it->label = label;
        textf(it->path, sizeof(it->path), "%s", path);
        it->result = r;
}

/* Records what failed, where, and what the owner can do about it. */
static int refuse(struct setup *s, const char *item, const char *path, const struct glove_error *err) {
        s->fail_item = item;
        textf(s->fail_path, sizeof(s->fail_path), "%s", path);
        const char *c = err->code ? err->code : "";
        if (strcmp(c, "dirs.insecure") == 0)
                textf(s->fix, sizeof(s->fix),
                         "glove setup never changes an existing directory: find out why %s is not an owner-only "
                         "directory of yours; then fix it yourself (chown %u %s; chmod 0700 %s) or move it away, and "
                         "run glove setup again", path, (unsigned)s->uid, path, path);
        else if (strcmp(c, "path.symlink") == 0 || strcmp(c, "dirs.create") == 0)
                textf(s->fix, sizeof(s->fix),
                         "every component of %s must be a real directory (no symbolic link, no file in the way): "
                         "replace the offending component, or point the XDG variable elsewhere", path);
        else if (strcmp(c, "receipts.key_insecure") == 0)
                textf(s->fix, sizeof(s->fix),
                         "the receipt key must be a 32-byte regular file of yours, mode 0600, one link: fix it "
                         "yourself (chmod 0600 %s); if no receipt journal was ever written, you may remove it and "
                         "run glove setup again for a new key", path);
        else if (strcmp(c, "receipts.key_missing") == 0)
                textf(s->fix, sizeof(s->fix),
                         "a receipt journal exists without its key: receipts already written cannot be verified "
                         "again; restore the key from a backup, or move the journal away to start a new chain");
        else if (strcmp(item, "exposure_policy") == 0 && strncmp(c, "policy.", 7) == 0)
                textf(s->fix, sizeof(s->fix),
                         "gloved would refuse this exposure policy, and glove setup never overwrites it: correct "
                         "the field the message names (docs/exposures.md), chmod 0600 it if its mode is wrong, or "
                         "move %s away and run glove setup --path-root again", path);
        else if (strncmp(c, "policy.file_", 12) == 0)
                textf(s->fix, sizeof(s->fix),
                         "the session policy must be a regular file of yours, mode 0600, one link, no symbolic "
                         "link: fix it yourself (chmod 0600 %s) or move it away to get a new starter policy", path);
        else if (strncmp(c, "policy.", 7) == 0)
                textf(s->fix, sizeof(s->fix),
                         "gloved would refuse this policy: correct the field the message names (docs/"
                         "session-policy.md), or move %s away to get a new starter policy", path);
        else if (strcmp(c, "setup.root_overlap") == 0)
                textf(s->fix, sizeof(s->fix),
                         "roots of the exposure policy may not contain one another: choose a directory beside the "
                         "existing root, or enroll the directory beneath it with glove init (docs/exposures.md)");
        else if (strcmp(c, "setup.no_runtimes") == 0)
                textf(s->fix, sizeof(s->fix),
                         "add a runtime template to the session policy first (glove policy generate, "
                         "docs/session-policy.md), then run glove setup --path-root again");
        else if (strcmp(c, "config.bad_root") == 0)
                textf(s->fix, sizeof(s->fix),
                         "give --path-root an absolute path to an existing directory you own, not writable by group "
                         "or others, reached without symbolic links, and outside Glove's own directories (%s, %s, "
                         "%s); nothing was recorded", s->dirs.config, s->dirs.state, s->dirs.runtime);
        else if (strcmp(c, "config.too_many_roots") == 0)
                textf(s->fix, sizeof(s->fix),
                         "at most 64 roots: approve one directory that holds several projects rather than a root "
                         "per project; glove setup never removes a root, so drop one you no longer use from %s "
                         "yourself", path);
        else if (strncmp(c, "config.", 7) == 0)
                textf(s->fix, sizeof(s->fix),
                         "config.json must be strict JSON {\"path_roots\":[...],\"schema_version\":1} in a file of "
                         "yours, mode 0600 (docs/host.md): fix it, or move %s away and run glove setup again", path);
        else
                textf(s->fix, sizeof(s->fix), "see the message; nothing was changed by this step");
        return -1;
}

static int setup_dir(struct setup *s, const char *name, const char *label, const char *path, int *fd,
                     struct glove_error *err) {
        struct stat st;
        bool existed = lstat(path, &st) == 0;
        int r = glove_store_dir_open_private(path, s->uid, true, fd, err);
        if (r < 0)
                return refuse(s, name, path, err);
        add_item(s, name, label, path, existed ? R_UNCHANGED : R_CREATED);
        return 0;
}

static int setup_key(struct setup *s, int state_fd, struct glove_error *err) {
        char path[PATH_MAX];
        textf(path, sizeof(path), "%s/%s", s->dirs.state, GLOVE_STORE_RECEIPTS_KEY_FILE);
        bool created = false;
        if (glove_store_receipts_key_ensure(state_fd, s->uid, true, &created, err) < 0)
                return refuse(s, "receipt_key", path, err);
        add_item(s, "receipt_key", "receipt key", path, created ? R_CREATED : R_UNCHANGED);
        return 0;
}

static int setup_policy(struct setup *s, int config_fd, struct glove_error *err) {
        const char *path = s->dirs.policy;
        struct stat st;
        bool existed = fstatat(config_fd, GLOVE_HOST_POLICY_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!existed) {
                struct glove_host_guided_template t;
                glove_host_guided_starter(&t);
                struct glove_host_guided_options o = { .revision = 1, .templates = &t, .n_templates = 1 };
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                if (glove_host_guided_policy_text(&o, &text, &len, err) < 0 ||
                    glove_host_file_write_atomic(config_fd, GLOVE_HOST_POLICY_FILE, text, len, false, err) < 0)
                        return refuse(s, "session_policy", path, err);
        }
        /* Created or found: it must load with gloved's own loader. */
        struct glove_supervisor_policy *p = NULL;
        int r = glove_supervisor_policy_load(path, s->uid, &p, err);
        glove_supervisor_policy_free(p);
        if (r < 0)
                return refuse(s, "session_policy", path, err);
        add_item(s, "session_policy", "session policy", path, existed ? R_UNCHANGED : R_CREATED);
        return 0;
}

/* The exposure policy as setup_exposure_prepare leaves it for
 * setup_exposure_commit. */
struct xprep {
        bool skip;      /* no file and no root: no item */
        bool existed;
        size_t added;
        char *text;     /* the text to write when added */
        size_t len;
};

static int setup_exposure_prepare(struct setup *s, int config_fd, struct xprep *x, struct glove_error *err);
static int setup_exposure_commit(struct setup *s, int config_fd, struct xprep *x, struct glove_error *err);

/* config.json, then the exposure policy: every check of both (an
 * overlapping root, an exposure policy that does not decode) comes before
 * either file is written. */
static int setup_config(struct setup *s, int config_fd, struct glove_error *err) {
        const char *path = s->dirs.config_file;
        struct glove_host_config c;
        int r = glove_host_config_read(config_fd, s->uid, &c, err);
        if (r < 0)
                return refuse(s, "config", path, err);
        bool missing = r == 1, added_any = false;
        r = 0;
        for (size_t i = 0; i < s->n_roots && r >= 0; i++) {
                _cleanup_free_ char *root = NULL;
                bool added = false;
                r = glove_host_config_check_root(s->roots[i], s->uid, &root, err);
                if (r == 0 && (glove_path_is_beneath(root, s->dirs.config) || glove_path_is_beneath(s->dirs.config, root) ||
                               glove_path_is_beneath(root, s->dirs.state) || glove_path_is_beneath(s->dirs.state, root) ||
                               (s->dirs.runtime[0] && (glove_path_is_beneath(root, s->dirs.runtime) ||
                                                       glove_path_is_beneath(s->dirs.runtime, root)))))
                        r = glove_error_set(err, EINVAL, "config.bad_root",
                                            "--path-root %s overlaps Glove's own configuration, runtime or state "
                                            "directory", root);
                if (r == 0)
                        r = glove_host_config_add_root(&c, root, &added, err);
                if (r == 0)
                        s->checked[s->n_checked++] = TAKE_PTR(root);
                added_any |= added;
        }
        struct xprep x = { 0 };
        if (r == 0 && setup_exposure_prepare(s, config_fd, &x, err) < 0) {
                glove_host_config_clear(&c);
                free(x.text);
                return -1;
        }
        if (r == 0 && (missing || added_any)) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                r = glove_host_config_encode(&c, &text, &len, err);
                if (r == 0)
                        r = glove_host_file_write_atomic(config_fd, GLOVE_HOST_CONFIG_FILE, text, len, !missing, err);
        }
        glove_host_config_clear(&c);
        if (r < 0) {
                free(x.text);
                return refuse(s, "config", path, err);
        }
        add_item(s, "config", "path roots", path, missing ? R_CREATED : added_any ? R_UPDATED : R_UNCHANGED);
        r = setup_exposure_commit(s, config_fd, &x, err);
        free(x.text);
        return r;
}

/* The runtime_template_id of every template of the session policy (already
 * accepted by gloved's loader in setup_policy); *ids and its strings live
 * in *doc. */
static int policy_runtime_ids(struct setup *s, int config_fd, json_t **doc, const char ***ids, size_t *n,
                              struct glove_error *err) {
        *doc = NULL;
        *ids = NULL;
        *n = 0;
        _cleanup_close_ int fd = openat(config_fd, GLOVE_HOST_POLICY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "policy.file_open", "%s: %s", s->dirs.policy, strerror(errno));
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct glove_error e = { 0 };
        if (glove_fd_read_bounded(fd, GLOVE_POLICY_MAX_BYTES, &buf, &len, &e) < 0)
                return glove_error_set(err, EIO, "policy.file_open", "%s: %s", s->dirs.policy, e.message);
        *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        json_t *t = json_object_get(*doc, "runtime_templates");
        *ids = calloc(json_array_size(t) + 1, sizeof(**ids));
        if (!*doc || !*ids)
                return glove_error_set(err, EINVAL, "policy.invalid_json", "%s: cannot be read again as JSON",
                                       s->dirs.policy);
        size_t i;
        json_t *v;
        json_array_foreach(t, i, v) {
                const char *id = json_string_value(json_object_get(v, "runtime_template_id"));
                if (id)
                        (*ids)[(*n)++] = id;
        }
        return 0;
}

/* CONFIG/exposure-policy.json: created with the roots of this run, or
 * extended with those it lacks; an existing file that does not decode is
 * refused and left alone. No file and no --path-root: no item. */
static void exposure_path(const struct setup *s, char path[PATH_MAX]) {
        textf(path, PATH_MAX, "%s/%s", s->dirs.config, GLOVE_HOST_EXPOSURE_POLICY_FILE);
}

static int setup_exposure_prepare(struct setup *s, int config_fd, struct xprep *x, struct glove_error *err) {
        char path[PATH_MAX];
        exposure_path(s, path);
        _cleanup_free_ char *old = NULL;
        size_t old_len = 0;
        _cleanup_close_ int fd = openat(config_fd, GLOVE_HOST_EXPOSURE_POLICY_FILE,
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT) {
                int e = errno;
                glove_error_set(err, e == ELOOP ? EPERM : e, e == ELOOP ? "policy.file_symlink" : "policy.file_open",
                                "%s: %s", path, e == ELOOP ? "is a symbolic link" : strerror(e));
                return refuse(s, "exposure_policy", path, err);
        }
        if (fd < 0 && s->n_checked == 0) {
                x->skip = true;
                return 0;
        }
        if (fd >= 0) {
                /* gloved's own loader: its file rules and codes, and the
                 * bytes it checked are the ones extended (one read). */
                struct glove_exposure_policy *p = NULL;
                int r = glove_exposure_policy_load_text(path, s->uid, &p, &old, &old_len, err);
                glove_exposure_policy_free(p);
                if (r < 0)
                        return refuse(s, "exposure_policy", path, err);
        }
        _cleanup_json_ json_t *doc = NULL;
        _cleanup_free_ const char **ids = NULL;
        size_t n_ids = 0;
        if (s->n_checked && policy_runtime_ids(s, config_fd, &doc, &ids, &n_ids, err) < 0)
                return refuse(s, "session_policy", s->dirs.policy, err);
        int r = glove_host_exposure_policy_extend(old, old_len, (const char *const *)s->checked, s->n_checked, ids,
                                                  n_ids, &x->text, &x->len, &x->added, err);
        if (r < 0) {
                if (old)
                        glove_error_prefix(err, "%s", path);
                return refuse(s, "exposure_policy", path, err);
        }
        x->existed = old != NULL;
        return 0;
}

static int setup_exposure_commit(struct setup *s, int config_fd, struct xprep *x, struct glove_error *err) {
        if (x->skip)
                return 0;
        char path[PATH_MAX];
        exposure_path(s, path);
        if (x->added && glove_host_file_write_atomic(config_fd, GLOVE_HOST_EXPOSURE_POLICY_FILE, x->text, x->len,
                                                     x->existed, err) < 0)
                return refuse(s, "exposure_policy", path, err);
        add_item(s, "exposure_policy", "exposure policy", path,
                 !x->existed ? R_CREATED : x->added ? R_UPDATED : R_UNCHANGED);
        return 0;
}

static int run_steps(struct setup *s, struct glove_error *err) {
        _cleanup_close_ int config_fd = -1, runtime_fd = -1, state_fd = -1;
        if (glove_host_dirs_from_env(&s->dirs, err) < 0) {
                textf(s->fix, sizeof(s->fix), "set HOME (or XDG_CONFIG_HOME and XDG_STATE_HOME) to an absolute path");
                s->fail_item = "config_dir";
                return -1;
        }
        if (!s->dirs.runtime[0]) {
                glove_error_set(err, EINVAL, "host.no_runtime_dir",
                                "$XDG_RUNTIME_DIR is not set to an absolute path; gloved keeps its socket there");
                textf(s->fix, sizeof(s->fix),
                         "log in through a session that sets it (pam_systemd: /run/user/%u), or set "
                         "XDG_RUNTIME_DIR to an owner-only directory of yours", (unsigned)s->uid);
                s->fail_item = "runtime_dir";
                return -1;
        }
        if (setup_dir(s, "config_dir", "config directory", s->dirs.config, &config_fd, err) < 0 ||
            setup_dir(s, "runtime_dir", "runtime directory", s->dirs.runtime, &runtime_fd, err) < 0 ||
            setup_dir(s, "state_dir", "state directory", s->dirs.state, &state_fd, err) < 0 ||
            setup_key(s, state_fd, err) < 0 || setup_policy(s, config_fd, err) < 0 ||
            setup_config(s, config_fd, err) < 0)
                return -1;
        return 0;
}

static bool changed(const struct setup *s) {
        for (size_t i = 0; i < s->n_items; i++)
                if (s->items[i].result != R_UNCHANGED)
                        return true;
        return false;
}

static void report_json(const struct setup *s, const struct glove_error *err, bool failed) {
        json_t *items = json_array();
        for (size_t i = 0; items && i < s->n_items; i++)
                json_array_append_new(items, json_pack("{s:s,s:s,s:s}", "item", s->items[i].name, "path",
                                                       s->items[i].path, "result", result_words[s->items[i].result]));
        json_t *o = json_pack("{s:b,s:o}", "changed", changed(s), "items", items);
        if (o && failed)
                json_object_set_new(o, "error",
                                    json_pack("{s:s,s:s,s:s,s:s?,s:s}", "code", err->code ? err->code : "setup.failed",
                                              "message", err->message, "fix", s->fix, "item", s->fail_item,
                                              "path", s->fail_path));
        if (o)
                json_dumpf(o, stdout, JSON_COMPACT | JSON_SORT_KEYS);
        fputc('\n', stdout);
        json_decref(o);
}

static void report_text(const struct setup *s) {
        for (size_t i = 0; i < s->n_items; i++)
                printf("%-9s  %-17s  %s\n", result_words[s->items[i].result], s->items[i].label, s->items[i].path);
        if (changed(s))
                puts("glove setup: done");
        else
                puts("glove setup: nothing changed: everything was already in place");
}

int glove_host_setup_main(int argc, char **argv) {
        struct setup s = { .uid = geteuid() };
        static const struct option longopts[] = {
                { "path-root", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        opterr = 0;
        optind = 1;
        int opt;
        while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (opt) {
                case 'r':
                        if (s.n_roots == GLOVE_HOST_CONFIG_MAX_ROOTS)
                                return usage_error("at most %s --path-root options", "64");
                        s.roots[s.n_roots++] = optarg;
                        break;
                case 'j':
                        s.json = true;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 0;
                case ':':
                        return usage_error("%s needs a value", argv[optind - 1]);
                default:
                        return usage_error("unknown option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        umask(0077);
        struct glove_error err = { 0 };
        bool failed = run_steps(&s, &err) < 0;
        for (size_t i = 0; i < s.n_checked; i++)
                free(s.checked[i]);
        if (s.json)
                report_json(&s, &err, failed);
        else if (!failed)
                report_text(&s);
        if (!failed)
                return 0;
        if (!s.json)
                for (size_t i = 0; i < s.n_items; i++)
                        printf("%-9s  %-17s  %s\n", result_words[s.items[i].result], s.items[i].label,
                               s.items[i].path);
        fprintf(stderr, "glove: %s: %s; what to do: %s\n", err.code ? err.code : "setup.failed", host_shown(err.message), s.fix);
        return EXIT_REFUSED;
}
