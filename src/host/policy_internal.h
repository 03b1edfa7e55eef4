/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Shared by the glove policy subcommands (src/host/policy*.c). */

#include <stdbool.h>
#include <stddef.h>

#include "glove/base/error.h"

#define POLICY_EXIT_OK 0
#define POLICY_EXIT_REFUSED 1
#define POLICY_EXIT_USAGE 125

/* "glove: usage.policy: MESSAGE; see glove policy CMD --help" on stderr;
 * returns POLICY_EXIT_USAGE. */
int policy_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "glove: CODE: MESSAGE" on stderr; returns POLICY_EXIT_REFUSED. */
int policy_refuse(const struct glove_error *err);

/* policy_exposure.c: whether file (readable, no final link) holds a JSON
 * object with a top-level "roots" member, the mark of an exposure policy
 * (docs/exposures.md); validate and explain it with gloved's exposure
 * policy loader. Each returns the exit status. */
bool policy_is_exposure_file(const char *file);
int policy_exposure_validate(const char *file);
int policy_exposure_explain(const char *file, bool json);

/* The harness homes Glove never reads or copies: for $HOME and the
 * passwd home of the effective user, HOME/ .codex .claude .claude.json .pi
 * .copilot .config/opencode .local/share/opencode. True when path
 * (absolute, normalized) overlaps one (equal, beneath or above); *which gets
 * the home it overlaps (static buffer, valid until the next call). */
bool policy_harness_home_overlap(const char *path, const char **which);

/* --file F (and --json when allow_json) of validate and explain: returns
 * -1 to go on, else the exit status to return (help printed, usage error). */
int policy_file_options(const char *cmd, const char *help, int argc, char **argv, bool allow_json, const char **file,
                        bool *json);

/* This host's platform as npm's platform packages name it: "linux-" and
 * node's process.arch for the machine ("linux-x64", "linux-arm64"). Static. */
const char *policy_npm_host_platform(void);

/* Whether optional dependency name (with its version spec, which may be
 * NULL, e.g. "npm:@openai/codex@0.169.0-linux-x64") is a platform package
 * built for this host: its name or spec has the words "linux" and this
 * host's architecture (and not "android", nor "musl" on a glibc host).
 * "fsevents" or "@img/sharp-darwin-arm64" are not. */
bool policy_npm_dep_for_host(const char *name, const char *spec);

/* Walks the directory tree root (absolute; no link followed; at most
 * 100000 directories, 64 deep) and, for every package directory in it (root,
 * node_modules/NAME, node_modules/@SCOPE/NAME) whose package.json declares
 * an optional dependency for this host (policy_npm_dep_for_host) that does
 * not resolve inside root as node would resolve it, calls fn(ctx, package
 * directory, dependency name) when fn is not NULL. Returns how many. */
size_t policy_npm_closure_missing(const char *root, void (*fn)(void *ctx, const char *pkg, const char *dep),
                                  void *ctx);

/* The five subcommands; argv[0] is the subcommand's name. */
int policy_detect_main(int argc, char **argv);
int policy_stage_main(int argc, char **argv);
int policy_generate_main(int argc, char **argv);
int policy_explain_main(int argc, char **argv);
int policy_validate_main(int argc, char **argv);
