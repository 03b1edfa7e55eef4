/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sd-event functions `glove exec` and `glove run` use, resolved from
 * libsystemd with dlopen(3) on first use instead of at program start.
 *
 * Linked into the glove executable only (never into gloved, which links
 * libsystemd normally). Why: `glove --help`, `glove ctl` and every usage
 * error never need an event loop, and loading libsystemd costs about
 * 0.6 ms of CPU (measured on the reference host: Debian 12, libsystemd 252,
 * which pulls in libcap, libgcrypt, libgpg-error, liblzma, libzstd and
 * liblz4, all linked with BIND_NOW, so RTLD_LAZY would change nothing;
 * sd_event_new itself is about 20 us). Each symbol is looked up once and
 * kept. Definitions in the executable take precedence over any shared
 * object, so the rest of the code calls sd-event as usual.
 *
 * If libsystemd cannot be loaded, each function fails with -ENOSYS (or
 * returns NULL where it returns a pointer), which the front end reports.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <systemd/sd-event.h>

static void *lib(void) {
        static void *handle;
        static int failed;
        if (!handle && !failed) {
                handle = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
                if (!handle) {
                        failed = 1;
                        fprintf(stderr, "glove: run.libsystemd: cannot load libsystemd.so.0: %s\n", dlerror());
                }
        }
        return handle;
}

static void *sym(const char *name) {
        void *h = lib();
        return h ? dlsym(h, name) : NULL;
}

#define LAZY_INT(name, params, args)                                   \
        int name params {                                              \
                static int(*fn) params;                                \
                if (!fn)                                               \
                        fn = (int(*) params)sym(#name);                \
                return fn ? fn args : -ENOSYS;                         \
        }

#define LAZY_PTR(type, name, params, args)                             \
        type name params {                                             \
                static type(*fn) params;                               \
                if (!fn)                                               \
                        fn = (type(*) params)sym(#name);               \
                return fn ? fn args : NULL;                            \
        }

LAZY_INT(sd_event_new, (sd_event * *e), (e))
LAZY_PTR(sd_event *, sd_event_unref, (sd_event * e), (e))
LAZY_INT(sd_event_loop, (sd_event * e), (e))
LAZY_INT(sd_event_exit, (sd_event * e, int code), (e, code))
LAZY_INT(sd_event_add_io,
         (sd_event * e, sd_event_source **s, int fd, uint32_t events, sd_event_io_handler_t callback, void *userdata),
         (e, s, fd, events, callback, userdata))
LAZY_INT(sd_event_add_time_relative,
         (sd_event * e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
          sd_event_time_handler_t callback, void *userdata),
         (e, s, clock, usec, accuracy, callback, userdata))
LAZY_INT(sd_event_add_signal,
         (sd_event * e, sd_event_source **s, int sig, sd_event_signal_handler_t callback, void *userdata),
         (e, s, sig, callback, userdata))
LAZY_INT(sd_event_add_child_pidfd,
         (sd_event * e, sd_event_source **s, int pidfd, int options, sd_event_child_handler_t callback, void *userdata),
         (e, s, pidfd, options, callback, userdata))
LAZY_INT(sd_event_source_set_enabled, (sd_event_source * s, int enabled), (s, enabled))
LAZY_PTR(sd_event_source *, sd_event_source_disable_unref, (sd_event_source * s), (s))
LAZY_INT(sd_event_source_set_time, (sd_event_source * s, uint64_t usec), (s, usec))
LAZY_INT(sd_event_source_get_enabled, (sd_event_source * s, int *enabled), (s, enabled))
LAZY_INT(sd_event_add_time,
         (sd_event * e, sd_event_source **s, clockid_t clock, uint64_t usec, uint64_t accuracy,
          sd_event_time_handler_t callback, void *userdata),
         (e, s, clock, usec, accuracy, callback, userdata))
LAZY_INT(sd_event_source_set_io_events, (sd_event_source * s, uint32_t events), (s, events))
LAZY_INT(sd_event_source_set_time_relative, (sd_event_source * s, uint64_t usec), (s, usec))
LAZY_INT(sd_event_get_state, (sd_event * e), (e))
