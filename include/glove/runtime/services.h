/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * gloved's local services and guest channels (issue 28; spec
 * architecture.md, "Historical synthetic status milestone" and "Guest
 * specialized-channel admission"; session-policy.md, "Guest observation
 * channels and Sage guest proposals"; docs/local-services.md and
 * docs/guest-channels.md).
 *
 * One object per gloved, built at start from the operator's local-services
 * file (--local-services FILE) and then owned by the runtime
 * (glove_runtime_options.services). It holds:
 *   - the configuration (services/config.h) and every endpoint pinned
 *     (services/endpoint.h: the parent directory by descriptor, the
 *     socket's identity recorded);
 *   - each endpoint's guest-channel binding resolved by the adapters (an
 *     unsupported binding refuses the start: adapters.binding_unsupported);
 *   - when an endpoint is adapter-bound: the frozen admission table (the
 *     Sage adapter's schema), and gloved's observation server listening at
 *     that endpoint's socket path (the upstream of the sessions' channel),
 *     whose connections are told apart by the peer's pid (the session's
 *     keeper) and admitted into that session's durable registry;
 *   - the factory generation (1 for the object's life; a new gloved is a
 *     new generation), committed in each session's launch binding.
 *
 * Threading: built and freed on the loop thread; the grant check may run
 * on any thread (it only reads the pinned endpoints); the observation
 * server runs its own worker (joined by free).
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "glove/base/error.h"

struct glove_runtime_services;

/* The exchange deadline of the proxy, ms: one absolute deadline per
 * request/response exchange (docs/local-services.md, "Framing"). */
#define GLOVE_RUNTIME_SERVICES_EXCHANGE_MS 5000
/* The observation server's windows (docs/guest-channels.md). */
#define GLOVE_RUNTIME_SERVICES_ACCEPT_WINDOW_MS 1000
#define GLOVE_RUNTIME_SERVICES_IO_MS 2000
/* Each session's admission registry holds at most this many intents. */
#define GLOVE_RUNTIME_SERVICES_REGISTRY_CAPACITY 64
/* Where the pathname transport's directory appears in the sandbox, and the
 * variables the agent gets. */
#define GLOVE_RUNTIME_SERVICES_GUEST_DIR "/run/glove-services/local"
#define GLOVE_RUNTIME_SERVICES_ENV_PREFIX "GLOVE_LOCAL_SERVICE_"
#define GLOVE_RUNTIME_SERVICES_ENV_DIR "GLOVE_LOCAL_SERVICE_DIR"
#define GLOVE_RUNTIME_SERVICES_ENV_FDS "GLOVE_LOCAL_SERVICE_FDS_V1"

/*
 * Loads path (a protected file: the current user's, 0600, one link; codes
 * services.file_*, services.config_*), resolves every endpoint's binding,
 * pins every endpoint (services.endpoint_*), and for adapter-bound
 * endpoints creates the observation server's listening socket at the
 * endpoint's path (a stale socket of uid there is replaced; anything else
 * is services.endpoint_not_socket) before pinning it. mroot_fd (borrowed
 * for the object's life): the materialization root, where each session's
 * registry (channels/STEM.channel) and pathname directory (services/STEM)
 * are made. uid: gloved's, the service uid every peer must have.
 * *out owned by the caller (glove_runtime_services_free) until it is given
 * to glove_runtime_new. Returns 0 or -errno with err set.
 */
int glove_runtime_services_new(const char *path, uid_t uid, int mroot_fd, const char *mroot,
                               struct glove_runtime_services **out, struct glove_error *err);

/* Stops and joins the observation server, closes everything. NULL: nothing. */
void glove_runtime_services_free(struct glove_runtime_services *sv);

/*
 * The supervisor's grant check (glove_supervisor_runtime_config.grant_check,
 * ctx the object): -EPERM with services.grant_exposes_socket when the grant
 * descriptor fd is an endpoint's socket, its pinned parent or any ancestor
 * of that parent, by identity. Safe on any thread.
 */
int glove_runtime_services_grant_check(void *ctx, int fd, const char *what, struct glove_error *err);

/*
 * The capabilities' "guest_channel_schema_version": 1 only when some
 * endpoint's composition seals (channel/capability.h: inherited-stream-v1,
 * the exact adapter binding, the frozen catalog of the expected digest, the
 * factory, an operational Linux runtime, a non-empty adapter/endpoint
 * runtime intersection, every endpoint identity rechecked now); else 0.
 * sv NULL: 0. *why (may be NULL) gets the reason of a 0 (static).
 */
int glove_runtime_services_channel_version(const struct glove_runtime_services *sv, bool operational,
                                           const char **why);

/* The capabilities' "local_services": {"aliases":[...],"endpoints":N} (new
 * reference) or NULL when sv is NULL. No host path. */
json_t *glove_runtime_services_summary(const struct glove_runtime_services *sv);
