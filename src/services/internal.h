/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared inside src/services only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "glove/base/error.h"
#include "glove/services/endpoint.h"

/* [a-z0-9] first, then [a-z0-9_-] (and '.' when dots), 1..max bytes. */
bool svc_name_valid(const char *s, size_t max, bool dots);

/* 1..GLOVE_SERVICES_SESSION_ID_MAX bytes of 0x21..0x7e (audit.h). */
bool svc_session_id_valid(const char *s);

/* The identity fields of st. */
void svc_identity_from_stat(const struct stat *st, struct glove_services_identity *id);

/*
 * Waits until fd is ready for events (POLLIN or POLLOUT; POLLHUP and
 * POLLERR count as ready), stop_fd (-1: none) is readable, or
 * deadline_ms (absolute CLOCK_MONOTONIC milliseconds; 0: none) passes.
 * fd may be -1 to wait for the stop or the deadline only. Returns 0 when
 * fd is ready, -ECANCELED (services.cancelled) when stop_fd is readable
 * (checked first), -ETIMEDOUT (services.timeout) when the deadline passed,
 * -errno (services.io) when poll fails. what names the wait in messages.
 */
int svc_wait(int fd, short events, int stop_fd, uint64_t deadline_ms, const char *what, struct glove_error *err);
