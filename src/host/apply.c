/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove apply: the owner-local retained-change apply (include/glove/host/apply.h;
 * include/glove/apply/apply.h; docs/retained-changes.md). Never over the
 * control socket: gloved advertises apply schema version 0.
 */
#include "glove/host/apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/apply/apply.h"
#include "glove/apply/journal.h"
#include "glove/apply/trust.h"
#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/json.h"
#include "glove/host/daemon.h"
#include "glove/host/dirs.h"
#include "glove/protocol/changes.h"
#include "glove/supervisor/exposure.h"
#include "glove/supervisor/stage.h"
#include "shown.h"

#define EXIT_USAGE 125

static const char usage_text[] =
        "Usage: glove apply SESSION [--grant NAME] (--key KEYFILE | --authorization FILE) [OPTIONS]\n"
        "       glove apply --authorize SESSION [--grant NAME] --key KEYFILE [--ttl SECONDS] [--output FILE]\n"
        "       glove apply --changes SESSION [--grant NAME] [--json]\n"
        "       glove apply --discard SESSION [--grant NAME]\n"
        "       glove apply --cleanup SESSION [--grant NAME]\n"
        "       glove apply --recover\n"
        "       glove apply --keygen KEYFILE --key-id ID\n"
        "\n"
        "Applies what an agent changed in a managed session's retained copy to the\n"
        "source directory, atomically: the stage is copied beside the source and the\n"
        "two are exchanged (renameat2 RENAME_EXCHANGE); the old source is kept beside\n"
        "it until --cleanup. Needs an Ed25519 authorization whose key the root-owned\n"
        "trust policy lists; every step is journaled, and each grant, authorization\n"
        "and stage is applied at most once. Inspect first with glove ctl changes.\n"
        "Owner-local: gloved never applies over its control socket.\n"
        "\n"
        "Modes:\n"
        "  (none)              sign (--key) or take (--authorization) an authorization\n"
        "                      and apply; first finishes what an earlier crash left\n"
        "  --authorize         write a signed authorization for the stage as it is now\n"
        "  --changes           list every change of the stage, read-only (glove ctl changes\n"
        "                      asks gloved and lists a bounded number)\n"
        "  --discard           end a prepared transaction whose exchange never happened\n"
        "  --cleanup           remove the old source an applied change kept\n"
        "  --recover           reconcile every unfinished transaction and report codes\n"
        "  --keygen KEYFILE    create an Ed25519 key (0600) and print its trust-policy entry\n"
        "\n"
        "Options:\n"
        "  --grant NAME                the retained alias or exposure id (default: the\n"
        "                              session's only retained grant)\n"
        "  --key KEYFILE               the signing key (glove apply --keygen)\n"
        "  --key-id ID                 --keygen: the key's id\n"
        "  --authorization FILE        a signed authorization (glove apply --authorize)\n"
        "  --ttl SECONDS               --authorize: lifetime, 1..3600 (default 300)\n"
        "  --output FILE               --authorize: write there (new file) instead of stdout\n"
        "  --trust-policy FILE         default " GLOVE_APPLY_TRUST_POLICY_DEFAULT "\n"
        "  --journal FILE              the reservation journal (default STATE/apply.journal)\n"
        "  --materialization-root DIR  gloved's (default STATE/" GLOVE_HOST_MROOT_NAME ")\n"
        "  --path-exposure-policy FILE, --path-exposure-journal FILE\n"
        "                              for a grant that is a path exposure (defaults as\n"
        "                              glove setup writes them; gloved must not hold the journal)\n"
        "  --json                      print JSON\n"
        "  -h, --help                  show this help\n"
        "\n"
        "Exit status: 0 done, 1 refused or failed (the code says why), 125 usage error.\n";

enum mode { M_APPLY, M_AUTHORIZE, M_CHANGES, M_DISCARD, M_CLEANUP, M_RECOVER, M_KEYGEN };

struct opts {
        enum mode mode;
        const char *session, *grant, *key, *key_id, *authorization, *output, *trust, *journal, *mroot, *xpolicy,
                *xjournal;
        long ttl;
        bool json;
        char journal_buf[PATH_MAX + 64], mroot_buf[PATH_MAX + 64], xpolicy_buf[PATH_MAX + 64], xjournal_buf[PATH_MAX + 64];
};

static int fail(const struct glove_error *e) {
        fprintf(stderr, "glove: %s: %s\n", e->code ? e->code : "apply.failed", host_shown(e->message));
        return 1;
}

static int usage_error(const char *what) {
        fprintf(stderr, "glove: usage.invalid: %s; see glove apply --help\n", what);
        return EXIT_USAGE;
}

static int parse(int argc, char **argv, struct opts *o) {
        enum { O_GRANT = 256, O_KEY, O_KEYID, O_AUTH, O_TTL, O_OUT, O_TRUST, O_JOURNAL, O_MROOT, O_XP, O_XJ, O_JSON,
               O_AUTHORIZE, O_CHANGES, O_DISCARD, O_CLEANUP, O_RECOVER, O_KEYGEN };
        static const struct option lo[] = {
                { "grant", required_argument, NULL, O_GRANT },     { "key", required_argument, NULL, O_KEY },
                { "key-id", required_argument, NULL, O_KEYID },    { "authorization", required_argument, NULL, O_AUTH },
                { "ttl", required_argument, NULL, O_TTL },         { "output", required_argument, NULL, O_OUT },
                { "trust-policy", required_argument, NULL, O_TRUST }, { "journal", required_argument, NULL, O_JOURNAL },
                { "materialization-root", required_argument, NULL, O_MROOT },
                { "path-exposure-policy", required_argument, NULL, O_XP },
                { "path-exposure-journal", required_argument, NULL, O_XJ },
                { "json", no_argument, NULL, O_JSON },             { "authorize", no_argument, NULL, O_AUTHORIZE },
                { "discard", no_argument, NULL, O_DISCARD },       { "changes", no_argument, NULL, O_CHANGES },       { "cleanup", no_argument, NULL, O_CLEANUP },
                { "recover", no_argument, NULL, O_RECOVER },       { "keygen", required_argument, NULL, O_KEYGEN },
                { "help", no_argument, NULL, 'h' },                { 0 },
        };
        *o = (struct opts){ .mode = M_APPLY, .ttl = 300, .trust = GLOVE_APPLY_TRUST_POLICY_DEFAULT };
        int modes = 0, c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
                switch (c) {
                case 'h': fputs(usage_text, stdout); return -1;
                case O_GRANT: o->grant = optarg; break;
                case O_KEY: o->key = optarg; break;
                case O_KEYID: o->key_id = optarg; break;
                case O_AUTH: o->authorization = optarg; break;
                case O_TTL: {
                        char *end;
                        o->ttl = strtol(optarg, &end, 10);
                        if (*end || o->ttl < 1 || o->ttl > 3600)
                                return usage_error("--ttl takes 1 to 3600 seconds");
                        break;
                }
                case O_OUT: o->output = optarg; break;
                case O_TRUST: o->trust = optarg; break;
                case O_JOURNAL: o->journal = optarg; break;
                case O_MROOT: o->mroot = optarg; break;
                case O_XP: o->xpolicy = optarg; break;
                case O_XJ: o->xjournal = optarg; break;
                case O_JSON: o->json = true; break;
                case O_AUTHORIZE: o->mode = M_AUTHORIZE; modes++; break;
                case O_DISCARD: o->mode = M_DISCARD; modes++; break;
                case O_CHANGES: o->mode = M_CHANGES; modes++; break;
                case O_CLEANUP: o->mode = M_CLEANUP; modes++; break;
                case O_RECOVER: o->mode = M_RECOVER; modes++; break;
                case O_KEYGEN: o->mode = M_KEYGEN; o->key = optarg; modes++; break;
                default: return usage_error(argv[optind - 1] ? "an unknown option or a missing value" : "bad option");
                }
        }
        if (modes > 1)
                return usage_error("--authorize, --changes, --discard, --cleanup, --recover and --keygen exclude each "
                                   "other");
        int rest = argc - optind;
        bool wants_session = o->mode != M_RECOVER && o->mode != M_KEYGEN;
        if (wants_session ? rest != 1 : rest != 0)
                return usage_error(wants_session ? "exactly one SESSION is needed" : "no SESSION is taken here");
        if (wants_session) {
                o->session = argv[optind];
                size_t n = strlen(o->session);
                bool ok = n > 0 && n <= 128 && strcmp(o->session, ".") != 0 && strcmp(o->session, "..") != 0;
                for (size_t i = 0; ok && i < n; i++)
                        ok = (o->session[i] >= 'a' && o->session[i] <= 'z') || (o->session[i] >= 'A' && o->session[i] <= 'Z') ||
                             (o->session[i] >= '0' && o->session[i] <= '9') || strchr("._-", o->session[i]);
                if (!ok)
                        return usage_error("SESSION is a session id: 1..128 bytes of [A-Za-z0-9._-], not . or ..");
        }
        if (o->mode == M_KEYGEN && !o->key_id)
                return usage_error("--keygen needs --key-id ID");
        if (o->mode == M_AUTHORIZE && !o->key)
                return usage_error("--authorize needs --key KEYFILE");
        if (o->mode == M_APPLY && !o->key == !o->authorization)
                return usage_error("apply needs exactly one of --key KEYFILE and --authorization FILE");
        struct glove_host_dirs d;
        struct glove_error e = { 0 };
        bool have_dirs = glove_host_dirs_from_env(&d, &e) == 0;
        if (!o->journal || !o->mroot || !o->xpolicy || !o->xjournal) {
                if (have_dirs) {
                        snprintf(o->journal_buf, sizeof(o->journal_buf), "%s/apply.journal", d.state);
                        snprintf(o->mroot_buf, sizeof(o->mroot_buf), "%s/%s", d.state, GLOVE_HOST_MROOT_NAME);
                        snprintf(o->xpolicy_buf, sizeof(o->xpolicy_buf), "%s/exposure-policy.json", d.config);
                        snprintf(o->xjournal_buf, sizeof(o->xjournal_buf), "%s/exposures.journal", d.state);
                } else if ((!o->journal || !o->mroot) && o->mode != M_KEYGEN) {
                        return usage_error("no default state directory (HOME unset): give --journal and "
                                           "--materialization-root");
                }
                o->journal = o->journal ? o->journal : o->journal_buf;
                o->mroot = o->mroot ? o->mroot : o->mroot_buf;
                if (!o->xpolicy && !o->xjournal) {
                        o->xpolicy = o->xpolicy_buf;
                        o->xjournal = o->xjournal_buf;
                }
        }
        return 0;
}

/* The session's only retained grant with a baseline, when --grant is absent. */
static int only_grant(int root_fd, const char *session, char out[256], struct glove_error *err) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "images/%s", session);
        int fd = -1;
        if (glove_fd_open_beneath(root_fd, rel, O_RDONLY | O_DIRECTORY, &fd, NULL) < 0)
                return glove_error_set(err, ENOENT, "retained.no_stage", "session %s has no retained stage", session);
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return glove_error_set(err, errno, "retained.no_stage", "%s", strerror(errno));
        }
        int n = 0;
        struct dirent *de;
        const char *sfx = ".baseline.json";
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len > strlen(sfx) && strcmp(de->d_name + len - strlen(sfx), sfx) == 0 && len - strlen(sfx) < 256) {
                        if (n++ == 0)
                                snprintf(out, 256, "%.*s", (int)(len - strlen(sfx)), de->d_name);
                }
        }
        closedir(d);
        if (n == 0)
                return glove_error_set(err, ENOENT, "retained.no_stage", "session %s has no retained stage", session);
        if (n > 1)
                return glove_error_set(err, EINVAL, "apply.grant_ambiguous",
                                       "session %s has %d retained grants: name one with --grant", session, n);
        return 0;
}

static void print_result(const struct opts *o, const json_t *r) {
        if (o->json) {
                _cleanup_free_ char *t = json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
                if (t)
                        printf("%s\n", t);
                return;
        }
        if (json_is_array(r)) {
                size_t i;
                json_t *x;
                if (json_array_size(r) == 0)
                        printf("nothing to recover\n");
                json_array_foreach(r, i, x) {
                        const char *code = json_string_value(json_object_get(x, "code"));
                        printf("%s %s: %s%s%s\n", host_shown(json_string_value(json_object_get(x, "txid"))),
                               host_shown(json_string_value(json_object_get(x, "grant_id"))),
                               host_shown(json_string_value(json_object_get(x, "state"))), code ? " " : "",
                               code ? host_shown(code) : "");
                }
                return;
        }
        const char *state = json_string_value(json_object_get(r, "outcome"));
        if (!state)
                state = json_string_value(json_object_get(r, "state"));
        const char *txid = json_string_value(json_object_get(r, "txid"));
        if (txid)
                printf("%s: %s\n", txid, state ? state : "done");
        else
                printf("%s: stage %.16s, %lld unchanged\n", json_string_value(json_object_get(r, "grant")),
                       json_string_value(json_object_get(r, "stage_manifest_digest")),
                       (long long)json_integer_value(json_object_get(json_object_get(r, "changes"), "unchanged")));
        const json_t *ch = json_object_get(r, "changes");
        if (ch)
                glove_changes_print_entries(stdout, ch);
        const char *old = json_string_value(json_object_get(r, "old_source"));
        if (old && state && strcmp(state, "applied") == 0)
                printf("the old source is kept beside it as %s until: glove apply --cleanup\n", old);
}

static int keygen(const struct opts *o) {
        struct glove_error e = { 0 };
        if (glove_apply_key_generate(o->key, o->key_id, &e) < 0)
                return fail(&e);
        struct glove_apply_key *k = NULL;
        char pub[45];
        if (glove_apply_key_load(o->key, &k, &e) < 0 || glove_apply_key_public(k, pub, &e) < 0) {
                glove_apply_key_free(k);
                return fail(&e);
        }
        glove_apply_key_free(k);
        printf("{\"key_id\":\"%s\",\"public_key\":\"%s\"}\n", o->key_id, pub);
        if (!o->json)
                fprintf(stderr, "glove: add that entry to the \"keys\" of the trust policy (root-owned, e.g. %s)\n",
                        GLOVE_APPLY_TRUST_POLICY_DEFAULT);
        return 0;
}

static int read_signed(const char *path, struct glove_apply_signed *s, struct glove_error *e) {
        json_error_t je;
        _cleanup_json_ json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!j)
                return glove_error_set(e, EINVAL, "apply.authorization_invalid", "%s: %s", path, je.text);
        return glove_apply_signed_from_json(j, s, e);
}

int glove_host_apply_main(int argc, char **argv) {
        struct opts o;
        int r = parse(argc, argv, &o);
        if (r != 0)
                return r < 0 ? 0 : r;
        if (o.mode == M_KEYGEN)
                return keygen(&o);
        struct glove_error e = { 0 };
        _cleanup_close_ int root_fd = -1;
        if (glove_fd_open_nofollow(o.mroot, O_PATH | O_DIRECTORY, &root_fd, NULL) < 0) {
                glove_error_set(&e, ENOENT, "apply.no_materialization_root",
                                "%s: not a directory (give gloved's --materialization-root)", o.mroot);
                return fail(&e);
        }
        char grant[256] = "";
        if (o.session && !o.grant) {
                if (only_grant(root_fd, o.session, grant, &e) < 0)
                        return fail(&e);
                o.grant = grant;
        }
        struct glove_apply_context c = { .root_fd = root_fd };
        struct glove_apply_key *key = NULL;
        struct glove_apply_trust *trust = NULL;
        struct glove_exposure_policy *xpol = NULL;
        struct glove_exposures *x = NULL;
        struct glove_apply_signed auth = { 0 };
        json_t *result = NULL, *report = NULL;
        int rc = 1;
        if (o.mode == M_CHANGES) {
                struct glove_supervisor_stage *st = NULL;
                struct glove_manifest *now = NULL;
                json_t *changes = NULL;
                if (glove_supervisor_stage_open(root_fd, o.session, o.grant, true, &st, &e) == 0 &&
                    glove_supervisor_stage_changes(st, &now, &changes, &e) == 0) {
                        result = json_pack("{s:s,s:s,s:o}", "grant", o.grant, "stage_manifest_digest", now->digest,
                                           "changes", changes);
                        rc = result ? 0 : 1;
                }
                glove_manifest_free(now);
                glove_supervisor_stage_close(st);
                if (rc == 0)
                        print_result(&o, result);
                goto out;
        }
        if (o.mode == M_AUTHORIZE) {
                if (glove_apply_key_load(o.key, &key, &e) < 0 ||
                    glove_apply_authorize(&c, o.session, o.grant, key, o.ttl * 1000, &auth, &e) < 0)
                        goto out;
                _cleanup_json_ json_t *j = glove_apply_signed_to_json(&auth);
                _cleanup_free_ char *t = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
                if (!t) {
                        glove_error_set(&e, ENOMEM, "apply.no_memory", "out of memory");
                        goto out;
                }
                if (o.output) {
                        int fd = open(o.output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                        if (fd < 0 || glove_fd_write_all(fd, t, strlen(t)) < 0 || glove_fd_write_all(fd, "\n", 1) < 0) {
                                glove_error_set(&e, errno, "apply.write", "%s: %s", o.output, strerror(errno));
                                if (fd >= 0)
                                        close(fd);
                                goto out;
                        }
                        close(fd);
                } else {
                        printf("%s\n", t);
                }
                rc = 0;
                goto out;
        }
        if (o.mode == M_APPLY && (glove_apply_trust_load(o.trust, &trust, &e) < 0))
                goto out;
        c.trust = trust;
        /* An exposure registry only when its files are there (a grant that
         * is an exposure needs it; apply.exposures_unavailable otherwise). */
        if (o.xpolicy && o.xjournal && access(o.xpolicy, F_OK) == 0 && access(o.xjournal, F_OK) == 0) {
                struct glove_error xe = { 0 };
                struct glove_exposures_options xo = { .journal_path = o.xjournal, .owner = geteuid() };
                if (glove_exposure_policy_load(o.xpolicy, geteuid(), &xpol, &xe) == 0) {
                        xo.policy = xpol;
                        if (glove_exposures_open(&xo, 0, &x, &xe) < 0)
                                x = NULL;
                }
        }
        c.exposures = x;
        if (glove_apply_journal_open(o.journal, &c.journal, &e) < 0)
                goto out;
        /* Whatever an earlier crash left is finished first (--discard
         * ends one grant's transaction itself). */
        if (o.mode != M_DISCARD && glove_apply_recover(&c, &report, &e) < 0)
                goto out;
        if (o.mode == M_RECOVER) {
                print_result(&o, report);
                rc = 0;
                goto out;
        }
        if (!o.json && json_array_size(report) > 0) {
                fprintf(stderr, "glove: recovered first:\n");
                print_result(&o, report);
        }
        if (o.mode == M_APPLY) {
                if (o.authorization) {
                        if (read_signed(o.authorization, &auth, &e) < 0)
                                goto out;
                } else if (glove_apply_key_load(o.key, &key, &e) < 0 ||
                           glove_apply_authorize(&c, o.session, o.grant, key, GLOVE_APPLY_AUTH_DEFAULT_TTL_MS, &auth,
                                                 &e) < 0) {
                        goto out;
                }
                r = glove_apply_run(&c, o.session, o.grant, &auth, &result, &e);
        } else if (o.mode == M_CLEANUP) {
                r = glove_apply_cleanup(&c, o.session, o.grant, &result, &e);
        } else {
                r = glove_apply_discard(&c, o.session, o.grant, &result, &e);
                if (r == 0 && !o.json) {
                        const char *code = json_string_value(json_object_get(result, "code"));
                        printf("%s: %s%s%s\n", json_string_value(json_object_get(result, "txid")),
                               json_string_value(json_object_get(result, "state")), code ? " " : "", code ? code : "");
                        rc = 0;
                        goto out;
                }
        }
        if (r < 0)
                goto out;
        print_result(&o, result);
        rc = 0;
out:
        if (rc != 0)
                fail(&e);
        json_decref(result);
        json_decref(report);
        glove_apply_signed_clear(&auth);
        glove_apply_journal_close(c.journal);
        glove_exposures_close(x);
        glove_exposure_policy_free(xpol);
        glove_apply_trust_free(trust);
        glove_apply_key_free(key);
        return rc;
}
