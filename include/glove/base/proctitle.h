/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The process's command line as others see it in /proc/PID/cmdline.
 *
 * A process forked from Glove (the sandbox's PID 1, its helpers) would show
 * Glove's whole argv to the agent, upstream arguments included; these
 * functions overwrite that memory so only a fixed title remains.
 */

#include <stddef.h>

/* Records where argv's strings live. Call once, first thing in main. argv is
 * borrowed for the life of the process. */
void glove_proctitle_init(int argc, char **argv);

/*
 * Replaces the command line with title (cut to fit): every byte of the
 * original argv strings is overwritten with NUL first. Async-signal-safe;
 * no effect before glove_proctitle_init.
 */
void glove_proctitle_set(const char *title);
