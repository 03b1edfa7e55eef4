/* SPDX-License-Identifier: Apache-2.0 */
/* glove: command-line entry point. Dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "glove/base/proctitle.h"
#include "glove/ctl/ctl.h"
#include "glove/host/apply.h"
#include "glove/host/daemon.h"
#include "glove/host/doctor.h"
#include "glove/host/exposures.h"
#include "glove/host/policy.h"
#include "glove/host/setup.h"
#include "glove/run/exec.h"
#include "glove/run/exec_options.h"
#include "glove/run/run.h"

static const char usage[] =
        "Usage: glove COMMAND [OPTIONS] ...\n"
        "\n"
        "Glove contains untrusted LLM agents in a Linux sandbox and grants them\n"
        "nothing (files, environment, network, tools) that you did not grant.\n"
        "\n"
        "Commands:\n"
        "  exec [OPTIONS] -- PROGRAM [ARG...]   run a self-driving agent contained\n"
        "  run [OPTIONS] -- AGENT [ARG...]      run an MCP-client agent contained, mediating\n"
        "                                       its tool calls to upstream MCP servers\n"
        "  ctl [OPTIONS] COMMAND ...            talk to the local gloved control service\n"
        "  setup [--path-root DIR]... [--json]  create this user's owner-only directories,\n"
        "                                       receipt key and starter session policy\n"
        "  init [PROJECT] [OPTIONS]             expose a project directory beneath a path root\n"
        "                                       to gloved's sessions; list and revoke exposures\n"
        "  doctor [--json]                      check this host for glove exec and gloved\n"
        "  daemon COMMAND [OPTIONS]             install and control gloved as a systemd user service\n"
        "  policy COMMAND [OPTIONS]             detect, stage, generate, explain and validate\n"
        "                                       session policies\n"
        "  apply SESSION [OPTIONS]              apply a managed session's retained changes to\n"
        "                                       their source, atomically, under a signed\n"
        "                                       authorization (owner-local)\n"
        "\n"
        "Options:\n"
        "  -h, --help      show this help (COMMAND --help for a command's options)\n"
        "  -V, --version   show the version\n";

int main(int argc, char **argv) {
        glove_proctitle_init(argc, argv);
        if (argc < 2) {
                fputs("glove: usage.missing_command: no command given; see glove --help\n", stderr);
                return GLOVE_EXIT_FAILURE;
        }
        const char *cmd = argv[1];
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
                fputs(usage, stdout);
                return 0;
        }
        if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
                printf("glove %s\n", GLOVE_VERSION);
                return 0;
        }
        if (strcmp(cmd, "exec") == 0)
                return glove_exec_main(argc - 1, argv + 1);
        if (strcmp(cmd, "run") == 0)
                return glove_run_main(argc - 1, argv + 1);
        if (strcmp(cmd, "ctl") == 0)
                return glove_ctl_main(argc - 1, argv + 1);
        if (strcmp(cmd, "setup") == 0)
                return glove_host_setup_main(argc - 1, argv + 1);
        if (strcmp(cmd, "init") == 0)
                return glove_host_init_main(argc - 1, argv + 1);
        if (strcmp(cmd, "doctor") == 0)
                return glove_host_doctor_main(argc - 1, argv + 1);
        if (strcmp(cmd, "daemon") == 0)
                return glove_host_daemon_main(argc - 1, argv + 1);
        if (strcmp(cmd, "apply") == 0)
                return glove_host_apply_main(argc - 1, argv + 1);
        if (strcmp(cmd, "policy") == 0)
                return glove_host_policy_main(argc - 1, argv + 1);
        fprintf(stderr, "glove: usage.unknown_command: unknown command \"%s\"; see glove --help\n", cmd);
        return GLOVE_EXIT_FAILURE;
}
