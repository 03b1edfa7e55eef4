/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `glove ctl`: the command-line client of gloved (issue "gloved control
 * plane", Client; docs/control-protocol.md, "glove ctl").
 *
 *   glove ctl [--runtime-dir DIR] [--json] [--timeout-ms MS] COMMAND
 *     capabilities
 *     validate-plan FILE
 *     create-session --session-id ID --idempotency-key KEY
 *                    --controller-digest HEX --plan FILE
 *     session-status ID
 *     receipts [--after N] [--limit N]
 *     receipts-ack --sequence N --head-mac HEX
 *     exposures        (exposure_catalog: the redacted catalog, with the
 *                      controller's bootstrap secret)
 *
 * Human output by default; --json prints the raw result object (one line of
 * compact JSON) on stdout. Exit status: 0 success; 1 the service refused the
 * request (an error response, or validate-plan found the plan invalid),
 * with "glove: <code>: <message>" on stderr; 125 the service cannot be
 * reached or the exchange failed (client.* codes), or a usage error
 * (usage.* codes, ctl.plan_file).
 */

#define GLOVE_CTL_EXIT_REFUSED 1
#define GLOVE_CTL_EXIT_FAILURE 125
/* Default per-call timeout of glove ctl, milliseconds. */
#define GLOVE_CTL_TIMEOUT_MS 30000

/* Runs `glove ctl`; argv[0] is "ctl". Returns the exit status. */
int glove_ctl_main(int argc, char **argv);
