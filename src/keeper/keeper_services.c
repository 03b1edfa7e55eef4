/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper's local-service proxy (issue 28; docs/local-services.md): the
 * launch's services part (glove_keeper_args.services_json, written by
 * gloved's runtime_services.c) and its descriptors become one
 * glove_services_proxy, started before the session and stopped (its workers
 * joined) when the session has ended. Each upstream is pinned again here
 * and must still be the object gloved pinned (services.endpoint_replaced).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"
#include "glove/services/binding.h"
#include "glove/services/endpoint.h"
#include "glove/services/proxy.h"
#include "keeper_internal.h"

#define MAX_ROUTES 16

static int bad(struct glove_error *err, const char *what) {
        return glove_error_set(err, EINVAL, "keeper.launch_invalid", "the launch's local services: %s", what);
}

int glove_keeper_services_start(struct glove_keeper *k, struct glove_error *err) {
        if (!k->services_json)
                return 0;
        json_error_t je;
        _cleanup_json_ json_t *o = json_loads(k->services_json, JSON_REJECT_DUPLICATES, &je);
        const json_t *routes = json_object_get(o, "routes");
        const char *transport = json_string_value(json_object_get(o, "transport"));
        json_int_t uid = json_integer_value(json_object_get(o, "service_uid"));
        json_int_t timeout = json_integer_value(json_object_get(o, "exchange_timeout_ms"));
        json_int_t audit_max = json_integer_value(json_object_get(o, "audit_max_bytes"));
        if (!json_is_array(routes) || !transport || json_array_size(routes) == 0 ||
            json_array_size(routes) > MAX_ROUTES || uid < 0 || timeout <= 0)
                return bad(err, "malformed");
        bool inherited = strcmp(transport, "pathname") != 0;
        size_t n = json_array_size(routes);
        if (k->n_service_fds != (inherited ? 1 : n) || (inherited && n != 1))
                return bad(err, "descriptor count");
        if (k->audit.fd < 0)
                return bad(err, "no audit log");
        struct glove_services_route r[MAX_ROUTES];
        memset(r, 0, sizeof(r));
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
                const json_t *x = json_array_get(routes, i);
                struct glove_services_identity parent, sock;
                const char *path = json_string_value(json_object_get(x, "socket_path"));
                r[i].alias = json_string_value(json_object_get(x, "alias"));
                r[i].guest_fd = -1;
                if (!path || !r[i].alias ||
                    glove_services_identity_from_json(json_object_get(x, "parent"), "parent", &parent, NULL) < 0 ||
                    glove_services_identity_from_json(json_object_get(x, "socket"), "socket", &sock, NULL) < 0)
                        rc = bad(err, "a route");
                else
                        rc = glove_services_endpoint_reopen(path, &parent, &sock, (uid_t)uid, &r[i].upstream, err);
        }
        int audit = rc == 0 ? fcntl(k->audit.fd, F_DUPFD_CLOEXEC, 3) : -1;
        if (rc == 0 && audit < 0)
                rc = glove_error_set(err, errno, "keeper.services", "dup of the audit log: %s", strerror(errno));
        for (size_t i = 0; rc == 0 && i < n; i++)
                r[i].guest_fd = k->service_fd_first + (int)i;
        if (rc < 0) {
                for (size_t i = 0; i < n; i++)
                        glove_services_endpoint_free(r[i].upstream);
                if (audit >= 0)
                        close(audit);
                return rc;
        }
        struct glove_services_proxy_config c = {
                .session_id = k->id,
                .transport = inherited ? GLOVE_SERVICES_TRANSPORT_INHERITED : GLOVE_SERVICES_TRANSPORT_PATHNAME,
                .routes = r,
                .n_routes = n,
                .service_uid = (uid_t)uid,
                .audit_fd = audit,
                .audit_max_bytes = audit_max > 0 ? (uint64_t)audit_max : 0,
                .exchange_timeout_ms = (uint32_t)timeout,
        };
        return glove_services_proxy_start(&c, &k->proxy, err);
}

void glove_keeper_services_stop(struct glove_keeper *k) {
        glove_services_proxy_stop(k->proxy);
        k->proxy = NULL;
}
