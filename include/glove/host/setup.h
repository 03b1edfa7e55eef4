/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove setup [--path-root DIR]... [--json]   (docs/host.md)
 *
 * Creates, each only when missing: the configuration, runtime and state
 * directories (0700; dirs.h), the receipt key (0600, the code gloved uses:
 * glove_store_receipts_key_ensure), the starter session policy (0600,
 * from the guided generator, written atomically and never over an existing
 * file; then loaded with gloved's loader) and config.json (config.h), into
 * which --path-root adds owner-approved roots. Whatever exists is checked,
 * never changed: a directory or file with the wrong owner, mode, type or
 * content is refused with what is wrong, where, and how to fix it.
 *
 * Exit status: 0 done (or nothing to do), 1 refused or failed (one stderr
 * line "glove: CODE: MESSAGE; what to do: FIX"), 125 usage error.
 */

int glove_host_setup_main(int argc, char **argv);
