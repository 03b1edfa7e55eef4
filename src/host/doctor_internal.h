/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kernel and host probes of glove doctor (doctor_probe.c). Each fills
 * one item (name, required, status, detail, fix) and changes nothing on the
 * host: probes that need a process-wide change (a namespace, a seccomp
 * filter) run in a forked child that exits at once. */

#include <stddef.h>

#include "glove/host/doctor.h"

void doctor_item_set(struct glove_host_doctor_item *it, enum glove_host_doctor_status st, const char *fix_fmt,
                     const char *detail_fmt, ...) __attribute__((format(printf, 4, 5)));
/* vsnprintf into buf (a text cut at size is acceptable for a report). */
void doctor_text(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void doctor_probe_userns(struct glove_host_doctor_item *it);
void doctor_probe_seccomp(struct glove_host_doctor_item *it);
void doctor_probe_openat2(struct glove_host_doctor_item *it);
void doctor_probe_landlock(struct glove_host_doctor_item *it);
void doctor_probe_cgroup_version(struct glove_host_doctor_item *it);
void doctor_probe_cgroup_delegation(struct glove_host_doctor_item *it);
void doctor_probe_retained(struct glove_host_doctor_item *it);
