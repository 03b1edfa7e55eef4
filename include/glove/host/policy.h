/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove policy detect | stage | generate | explain | validate  (docs/host.md,
 * "The policy workflow"; spec session-policy.md, the owner-local workflow).
 *
 *   detect    where the five native adapters' executables are in the given
 *             directories, and whether discovery would trust them (the rule
 *             of glove/supervisor/trust.h, the code gloved runs)
 *   stage     copy a single-root npm package closure (or one executable
 *             file) into a protected directory, content-addressed
 *             (docs/digests.md, "staged_closure_digest")
 *   generate  one runtime_templates[] entry, or with --policy a complete
 *             guided policy (guided.h), checked by gloved's decoder
 *   explain   what a policy allows, in words, and warnings
 *   validate  glove_supervisor_policy_load, the loader gloved uses
 *
 * Exit status (as glove setup and glove doctor): 0 done, 1 refused or
 * failed (stderr "glove: CODE: MESSAGE"), 125 usage error.
 */

int glove_host_policy_main(int argc, char **argv);
