/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/run/exec_options.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

const char glove_exec_help[] =
        "Usage: glove exec [OPTIONS] -- PROGRAM [ARG...]\n"
        "\n"
        "Runs PROGRAM contained: new user, PID, mount, network, IPC, UTS and cgroup\n"
        "namespaces; a read-only system view (/usr, a curated /etc); a private /tmp\n"
        "and empty HOME; no network; no capabilities; a seccomp filter. Nothing of\n"
        "the host is visible unless granted below.\n"
        "\n"
        "Options:\n"
        "  --workspace DIR   grant DIR read-write and start the program in it\n"
        "  --read PATH       grant PATH read-only (repeatable)\n"
        "  --write PATH      grant PATH read-write (repeatable)\n"
        "                    Grants appear at the same absolute path inside. A path\n"
        "                    with a symbolic link in it, /, /proc, /sys, /dev, and\n"
        "                    nested grants of different modes are refused.\n"
        "  --env NAME        pass Glove's value of the variable NAME (repeatable);\n"
        "                    the agent otherwise sees only PATH, HOME, TMPDIR, TERM,\n"
        "                    LANG and GLOVE_SANDBOXED=1\n"
        "  --audit-log PATH  append JSON lines (launch and exit records) to PATH;\n"
        "                    PATH must lie outside every grant\n"
        "  -h, --help        show this help\n"
        "\n"
        "Exit status: the program's own; 128+N if it died of signal N; 125 if Glove\n"
        "failed; 126 if PROGRAM could not be executed; 127 if it was not found.\n";

enum {
        OPT_WORKSPACE = 0x100,
        OPT_READ,
        OPT_WRITE,
        OPT_ENV,
        OPT_AUDIT_LOG,
};

static const struct option long_options[] = {
        {"workspace", required_argument, NULL, OPT_WORKSPACE},
        {"read", required_argument, NULL, OPT_READ},
        {"write", required_argument, NULL, OPT_WRITE},
        {"env", required_argument, NULL, OPT_ENV},
        {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static int add_grant(struct glove_exec_options *o, const char *path, enum glove_grant_mode mode, bool ws,
                     struct glove_error *err) {
        if (o->n_grants >= GLOVE_GRANTS_MAX)
                return glove_error_set(err, E2BIG, "usage.too_many", "more than %d grants", GLOVE_GRANTS_MAX);
        o->grants[o->n_grants++] = (struct glove_exec_grant_spec){path, mode, ws};
        return 0;
}

int glove_exec_parse(int argc, char **argv, struct glove_exec_options *opts, struct glove_error *err) {
        memset(opts, 0, sizeof(*opts));
        /* '+': stop at the first non-option; ':': report a missing argument
         * distinctly. optind = 0 re-initializes glibc's getopt. */
        optind = 0;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
                int r = 0;
                switch (c) {
                case OPT_WORKSPACE:
                        r = add_grant(opts, optarg, GLOVE_GRANT_WRITE, true, err);
                        break;
                case OPT_READ:
                        r = add_grant(opts, optarg, GLOVE_GRANT_READ, false, err);
                        break;
                case OPT_WRITE:
                        r = add_grant(opts, optarg, GLOVE_GRANT_WRITE, false, err);
                        break;
                case OPT_ENV:
                        if (opts->n_env >= sizeof(opts->env_names) / sizeof(opts->env_names[0]))
                                return glove_error_set(err, E2BIG, "usage.too_many", "more than 64 --env names");
                        opts->env_names[opts->n_env++] = optarg;
                        break;
                case OPT_AUDIT_LOG:
                        if (opts->audit_log)
                                return glove_error_set(err, EINVAL, "usage.audit_log_twice", "--audit-log given more than once");
                        opts->audit_log = optarg;
                        break;
                case 'h':
                        opts->help = true;
                        return 0;
                case ':':
                        return glove_error_set(err, EINVAL, "usage.missing_argument", "%s needs an argument; see glove exec --help",
                                               argv[optind - 1]);
                default:
                        return glove_error_set(err, EINVAL, "usage.unknown_option", "unknown option %s; see glove exec --help",
                                               argv[optind - 1]);
                }
                if (r < 0)
                        return r;
        }
        if (optind >= argc)
                return glove_error_set(err, EINVAL, "usage.missing_program",
                                       "no program given; usage: glove exec [OPTIONS] -- PROGRAM [ARG...]");
        if (argv[optind][0] == '\0')
                return glove_error_set(err, EINVAL, "usage.missing_program", "the program name is empty");
        opts->program = &argv[optind];
        return 0;
}
