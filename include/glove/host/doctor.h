/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * glove doctor [--json]   (docs/host.md lists every item and result)
 *
 * Checks this host for this user, item by item, without changing anything:
 * each item is "ok", "missing" or "wrong", with a detail and what to do, and
 * whether a default `glove exec` needs it. Exit status: 0 when every needed
 * item is ok, 1 otherwise, 125 usage error.
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
        enum glove_host_doctor_status status;
        char detail[GLOVE_HOST_DOCTOR_TEXT_MAX];
        char fix[GLOVE_HOST_DOCTOR_TEXT_MAX];   /* "" when status is ok */
};

int glove_host_doctor_main(int argc, char **argv);
