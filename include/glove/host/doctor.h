/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove doctor [--json]   (docs/host.md lists every item and result)
 *
 * Checks this host for this user, item by item, without changing anything:
 * each item is "ok", "missing" or "wrong", with a detail and what to do, and
 * whether a default `glove exec` needs it. Verdict: ready (every needed item
 * ok), degraded (a default glove exec runs with a limits.degraded warning:
 * only cgroup delegation is missing) or not ready. Exit status: 0 ready or
 * degraded, 1 not ready, 125 usage error.
 */

#include <stdbool.h>
#include <stddef.h>

enum glove_host_doctor_status {
        GLOVE_HOST_DOCTOR_OK = 0,
        GLOVE_HOST_DOCTOR_MISSING = 1,
        GLOVE_HOST_DOCTOR_WRONG = 2,
};

/* Longest detail and fix texts, bytes with the NUL. */
#define GLOVE_HOST_DOCTOR_TEXT_MAX 1024

/* One finding. */
struct glove_host_doctor_item {
        const char *name;      /* static, e.g. "user_namespaces" */
        bool required;         /* a default glove exec needs it */
        bool degrades;         /* required, not ok, yet a default glove exec still runs without it
                                * (degraded, with a limits.degraded warning) */
        enum glove_host_doctor_status status;
        char detail[GLOVE_HOST_DOCTOR_TEXT_MAX];
        char fix[GLOVE_HOST_DOCTOR_TEXT_MAX];   /* "" when status is ok */
};

int glove_host_doctor_main(int argc, char **argv);
