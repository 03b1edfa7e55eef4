/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Control protocol methods of gloved and capability discovery (spec
 * session-policy.md, "Capability activation"; spec architecture.md, "Sage
 * session flow"; docs/control-protocol.md documents every method).
 *
 * Methods are advertised only when the component that serves them was
 * constructed:
 *   always               authenticate, capabilities, receipts_page, receipts_ack
 *   policy loaded        validate_plan
 *   policy and store     create_session, session_status
 *   exposures            exposure_catalog (any authenticated peer); and the
 *                        owner methods exposure_create, exposure_revoke,
 *                        exposure_list, listed in capabilities'
 *                        "owner_methods", never in "methods"
 * A method that is not advertised answers method_not_found, as an unknown
 * one does; for a method of this service its message says why and its data
 * is {"method","reason","detail"}: reason "option_missing" (detail names
 * the gloved options it was started without: --session-policy,
 * --session-store, --materialization-root, --path-exposure-policy and
 * --path-exposure-journal) or "runtime_not_operational" (detail gives the
 * runtime's reason, e.g. cgroup.not_delegated) or, while the remote backend
 * is configured, "remote_construction_only" for the eight lifecycle methods
 * (spec session-policy.md, "Capability activation": a validated
 * remote_backend is a construction diagnostic only; the remote runtime is
 * never operational, so they stay unadvertised and nothing is started).
 * An unknown method's data is {"method"}.
 *
 * Roles (spec session-policy.md, "Dynamic path exposures"): a connection
 * authenticated with RUNTIME/bootstrap-secret is a controller; one
 * authenticated with RUNTIME/owner-secret (written only while exposures are
 * constructed) is the owner, who may call every method. An owner method
 * called by a controller answers auth.owner_required (checked after
 * availability: without exposures it is method_not_found).
 *
 * Error codes on the wire (error.code): method_not_found, invalid_params,
 * plan.invalid, session.conflict, session.not_found, store.invalid_id,
 * store.invalid_digest, store.invalid_plan, store.digest_mismatch,
 * receipts.ack_mismatch, receipts.invalid_argument, journal.full,
 * journal.broken, journal.resized, journal.io, auth.already_authenticated,
 * auth.owner_required, the exposure.* codes of the registry
 * (glove/supervisor/exposure.h), internal.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "glove/protocol/frame.h"
#include "glove/store/receipts.h"
#include "glove/store/store.h"

struct glove_supervisor_policy;
struct glove_runtime;
struct glove_exposures;
struct glove_remote_runtime;
/* A connection of the server (server.h), for attach streams. */
struct glove_server_conn;

/* Longest reason a method is unavailable (lifecycle_reason, data.detail),
 * bytes with the NUL; a longer one is cut. */
#define GLOVE_SERVER_WHY_MAX 512
/* Protocol schema version reported by capabilities. */
#define GLOVE_SERVER_PROTOCOL_VERSION 1
/* Plan schema versions accepted by validate_plan (reported when it is
 * advertised). */
#define GLOVE_SERVER_PLAN_SCHEMA_VERSION 1
#define GLOVE_STORE_SCHEMA_VERSION 1
/* agent_runtime_adapter_schema_version while the managed runtime is
 * operational (lifecycle methods advertised); 0 otherwise. */
#define GLOVE_SERVER_ADAPTER_SCHEMA_VERSION 1

/* The role a connection authenticated as (see top of file). */
enum glove_server_role {
        GLOVE_SERVER_ROLE_CONTROLLER = 0, /* the bootstrap secret */
        GLOVE_SERVER_ROLE_OWNER = 1,      /* the owner secret */
};

/* The constructed components; every pointer borrowed. */
struct glove_server_components {
        const struct glove_supervisor_policy *policy; /* NULL without --session-policy */
        struct glove_store *store;            /* NULL without --session-store */
        struct glove_store_receipts *receipts;      /* never NULL in gloved */
        struct glove_runtime *runtime;        /* NULL without --materialization-root */
        int64_t (*now_ms)(void);                      /* Unix milliseconds; tests may fake it */
        bool library_bundle_root;                     /* --library-bundle-root constructed */
        struct glove_exposures *exposures; /* NULL without --path-exposure-* */
        /* NULL without --remote-backend (never with runtime: the options
         * exclude each other). */
        const struct glove_remote_runtime *remote;
};

/* True when method is advertised by c (see top of file). */
bool glove_server_method_advertised(const struct glove_server_components *c, const char *method);

/*
 * The capabilities result object (new reference, NULL on ENOMEM):
 *   {"adapter_schema_version":0,"lifecycle_operational":false,
 *    "managed_runtime_ids":[],"methods":[...],"plan_schema_versions":[...],
 *    "policy_revision":N|null,"protocol_version":1,
 *    "receipt_schema_version":1,
 *    "refinement_evaluation_protocol_schema_version":0|1 (1: the Linux runtime
 *      and the library bundle root are both constructed),
 *    "resource_mechanisms":[],"service":"gloved",
 *    "session_store_schema_version":1|0,"version":"...",
 *    "library_bundle_root":BOOL,"cgroup_placement":S|null,
 *    "lifecycle_reason":S|null,
 *    "owner_methods":["exposure_create","exposure_list","exposure_revoke"]|[],
 *    "path_exposure_schema_version":1|0,
 *    "remote_backend":ROW|null}
 * "owner_methods" (sorted) and path_exposure_schema_version 1 exactly when
 * the exposure registry was constructed; "methods" then holds
 * exposure_catalog too.
 * lifecycle_reason is null when lifecycle_operational is true, else why not:
 * "gloved was started without --session-store FILE and
 * --materialization-root DIR" (the options missing), or "managed sessions
 * are not operational: CODE: ..." (the runtime's reason, glove_runtime_why).
 * "remote_backend" is null without the remote runtime, else its
 * construction diagnostic (glove_remote_runtime_capabilities: construction
 * "validated", lifecycle_operational false, adapter schema 0, no runtime
 * ids, resource mechanisms or verified receipts, the container identity
 * and image digest, host_key_algorithm); the top level is unchanged by it
 * (lifecycle_operational false, adapter schema 0, no managed runtime ids,
 * no resource mechanisms) and lifecycle_reason is
 * GLOVE_REMOTE_NOT_OPERATIONAL_WHY.
 * library_bundle_root is true when the bundle root was constructed and the
 * managed runtime is operational (lifecycle methods advertised): only then
 * are plans' library projections mounted.
 */
json_t *glove_server_capabilities(const struct glove_server_components *c);

/*
 * Answers one authenticated request: returns the response object (new
 * reference; NULL only when memory is exhausted). "authenticate" is
 * answered with auth.already_authenticated (authentication happens once, in
 * the server, before dispatch). The request is a controller's (owner
 * methods answer auth.owner_required).
 */
json_t *glove_server_dispatch(struct glove_server_components *c, const struct glove_protocol_request *req);

/* As glove_server_dispatch, for a request that arrived on connection conn
 * (attach streams are bound to it; NULL: attach is invalid_params), from a
 * controller. */
json_t *glove_server_dispatch_conn(struct glove_server_components *c, struct glove_server_conn *conn,
                                    const struct glove_protocol_request *req);

/* As glove_server_dispatch_conn, from a peer of the given role: owner
 * methods answer auth.owner_required unless role is GLOVE_SERVER_ROLE_OWNER.
 * glove_server_dispatch and _conn are this with the controller role. */
json_t *glove_server_dispatch_role(struct glove_server_components *c, struct glove_server_conn *conn,
                                    enum glove_server_role role, const struct glove_protocol_request *req);
