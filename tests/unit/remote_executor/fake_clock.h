/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A scripted clock for the remote executor's tests: each reading returns
 * the next of times[0..n), then repeats the last one forever; with step set,
 * readings past the script add step each time. Readings counts them.
 */
#include <stddef.h>
#include <stdint.h>

#include "glove/remote_executor/frame.h"

struct fake_clock {
        const uint64_t *times;
        size_t n;
        size_t next;
        uint64_t step;
        uint64_t last;
        size_t readings;
};

static inline uint64_t fake_now(void *ctx) {
        struct fake_clock *c = ctx;
        c->readings++;
        if (c->next < c->n)
                c->last = c->times[c->next++];
        else
                c->last += c->step;
        return c->last;
}

static inline struct glove_remote_executor_clock fake_clock_of(struct fake_clock *c) {
        return (struct glove_remote_executor_clock){ .now_ms = fake_now, .ctx = c };
}
