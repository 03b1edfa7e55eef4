/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The closed table of native runtime adapters (spec session-policy.md, the
 * native discovery table and "agent_runtime_adapter_schema_version";
 * docs/session-policy.md, "Native adapters").
 *
 * A runtime template whose runtime_id is in this table is an adapter
 * runtime: its managed session gets a fresh private harness home at
 * GLOVE_SUPERVISOR_ADAPTER_HOME (never an operator's existing one), HOME
 * and the adapter's managed environment variable injected, and the plan's
 * verified `skill` bundle entries expanded under skills_dir. With
 * runtime_discovery, the template's executable is found by the name
 * `executable` in its explicit search directories only.
 *
 * The table is static data: every pointer is to a string literal, valid for
 * the process lifetime, never freed.
 */

#include <stddef.h>

/* The private harness home of every adapter runtime (inside the sandbox). */
#define GLOVE_SUPERVISOR_ADAPTER_HOME "/home/agent"

/*
 *   runtime_id    the template's runtime_id and runtime_discovery value
 *   executable    the file name discovery looks for (no '/')
 *   skills_dir    absolute directory inside the sandbox, beneath the home,
 *                 where `skill` entries are expanded as KEY/SKILL.md
 *   managed_env   NULL, or one NAME=VALUE the adapter always gets (the
 *                 template may not set NAME)
 */
struct glove_supervisor_adapter {
        const char *runtime_id;
        const char *executable;
        const char *skills_dir;
        const char *managed_env;
};

/* The adapter for runtime_id, or NULL when runtime_id is not in the table
 * (or is NULL). Exact, case-sensitive match. */
const struct glove_supervisor_adapter *glove_supervisor_adapter_find(const char *runtime_id);

/* The table, in runtime_id order: *n gets its length (5). */
const struct glove_supervisor_adapter *glove_supervisor_adapters(size_t *n);
