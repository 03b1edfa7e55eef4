/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `glove exec`: contain a direct agent (issue "glove exec"). Resolves the
 * options, builds the sandbox, audits the launch, forwards signals while the
 * agent runs, audits the exit, and returns the exit status Glove ends with:
 * the agent's own status, 128+N when the agent died of signal N, 125 when
 * Glove failed, 126 when the program could not be executed, 127 when it was
 * not found. Every failure of Glove is one line on stderr:
 * "glove: <stable code>: <message>".
 */

/* argv[0] is "exec". Returns the exit status. */
int glove_exec_main(int argc, char **argv);
