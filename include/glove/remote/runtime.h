/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The construction-only remote runtime (spec architecture.md, "Scope" and
 * "Construction-only remote backend"; spec session-policy.md, "Capability
 * activation"; docs/remote-backend.md).
 *
 * The object gloved constructs from a validated remote backend
 * configuration (backend.h) once its OpenSSH artifacts are written
 * (artifacts.h). It keeps the container identity and the image digest, and
 * it is deliberately non-operational: lifecycle_operational is false, its
 * adapter schema version is 0, it manages no runtime id, enforces no
 * resource and verifies no receipt. Constructing it performs no DNS lookup,
 * opens no socket, runs no program and touches no container: it copies
 * values. It is construction evidence, not remote-launch readiness.
 * Daemon-safe: no globals, no printing.
 */

#include <stdbool.h>

#include <jansson.h>

#include "glove/base/error.h"
#include "glove/remote/backend.h"

/* The sandbox backend of the plans this runtime would serve. */
#define GLOVE_REMOTE_SANDBOX_BACKEND "remote_linux_container"

/* What lifecycle methods answer while the remote backend is configured
 * (their method_not_found data.reason), and why, in words. */
#define GLOVE_REMOTE_NOT_OPERATIONAL_REASON "remote_construction_only"
#define GLOVE_REMOTE_NOT_OPERATIONAL_WHY                                                                               \
        "the remote backend is construction-only: its configuration and SSH artifacts were validated, but no "         \
        "remote lifecycle exists (lifecycle_operational is false; docs/remote-backend.md)"

struct glove_remote_runtime;

/*
 * Constructs the runtime from b (borrowed, copied): the container identity,
 * the image digest and the host key algorithm. *out owns a new object
 * (glove_remote_runtime_free). Errors: remote.no_memory (-ENOMEM).
 */
int glove_remote_runtime_new(const struct glove_remote_backend *b, struct glove_remote_runtime **out,
                             struct glove_error *err);

/* Frees rt (NULL is fine). */
void glove_remote_runtime_free(struct glove_remote_runtime *rt);

/* Always false (the spec's lifecycle_operational() of this runtime); also
 * false for NULL. */
bool glove_remote_runtime_lifecycle_operational(const struct glove_remote_runtime *rt);

/* The retained values, NUL-terminated, owned by rt. */
const char *glove_remote_runtime_container_identity(const struct glove_remote_runtime *rt);
const char *glove_remote_runtime_container_image_digest(const struct glove_remote_runtime *rt);

/*
 * The capabilities row (a new reference, NULL on ENOMEM):
 *   {"construction":"validated","sandbox_backend":"remote_linux_container",
 *    "lifecycle_operational":false,"agent_runtime_adapter_schema_version":0,
 *    "managed_runtime_ids":[],"resource_mechanisms":[],
 *    "verified_receipts":false,"container_identity":S,
 *    "container_image_digest":S,"host_key_algorithm":"ssh-ed25519"}
 * It names neither the SSH destination nor the key.
 */
json_t *glove_remote_runtime_capabilities(const struct glove_remote_runtime *rt);
