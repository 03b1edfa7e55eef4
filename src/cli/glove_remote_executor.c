/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-remote-executor: the forced command of a remote host for gloved's
 * construction-only remote backend (spec/architecture.md, "Construction-only
 * remote backend"; docs/remote-executor.md). Takes exactly --stdio; reads
 * its identity only from /etc/glove/remote-executor.identity (no option, no
 * environment changes that); measures its own opened executable; then
 * answers frames on stdin/stdout (include/glove/remote_executor/serve.h)
 * until end of input. It never starts anything: remote_health answers
 * not_operational, every other method method_not_found.
 *
 * Exit statuses (serve.h): 0 end of input at a frame boundary, 1 internal,
 * 2 usage, 3 identity refused, 4 a frame that ended the channel, 5 a
 * response not written. Every failure is one line on stderr,
 * "glove-remote-executor: CODE: MESSAGE", and nothing on stdout but the
 * frames already answered (and, for 4, one error frame).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/remote_executor/identity.h"
#include "glove/remote_executor/serve.h"

static int fail(const char *code, const char *message) {
        fprintf(stderr, "glove-remote-executor: %s: %s\n", code, message);
        return glove_remote_executor_exit_status(code);
}

static int fail_with(const struct glove_error *e) {
        return fail(e->code ? e->code : "executor.internal", e->message);
}

/* Opens and measures the running executable, and compares it with id. */
static int check_self(const struct glove_remote_executor_identity *id, struct glove_error *err) {
        _cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return glove_error_set(err, errno, "executor.self_measure", "cannot open /proc/self/exe: %s",
                                       glove_errno_text(errno));
        char measured[GLOVE_DIGEST_SHA256_HEX_LEN + 1];
        int r = glove_remote_executor_measure(fd, measured, err);
        if (r < 0)
                return r;
        return glove_remote_executor_identity_check(id, measured, err);
}

int main(int argc, char **argv) {
        umask(077);
        if (argc != 2 || strcmp(argv[1], "--stdio") != 0)
                return fail("executor.usage",
                            "usage: glove-remote-executor --stdio (exactly that one argument; it is the forced "
                            "command of a remote host, see docs/remote-executor.md)");
        /* A reader that goes away is a write error (exit 5), not a signal. */
        signal(SIGPIPE, SIG_IGN);
        if (glove_fd_ensure_std() < 0)
                return fail("executor.internal", "cannot open /dev/null for a closed standard descriptor");

        struct glove_error err = { 0 };
        struct glove_remote_executor_identity id;
        if (glove_remote_executor_identity_load(GLOVE_REMOTE_EXECUTOR_IDENTITY_DIR, GLOVE_REMOTE_EXECUTOR_IDENTITY_NAME,
                                                0, &id, &err) < 0 ||
            check_self(&id, &err) < 0)
                return fail_with(&err);

        int flags = fcntl(STDOUT_FILENO, F_GETFL);
        if (flags < 0 || fcntl(STDOUT_FILENO, F_SETFL, flags | O_NONBLOCK) < 0)
                return fail("executor.internal", "cannot make standard output non-blocking");
        if (glove_remote_executor_serve(STDIN_FILENO, STDOUT_FILENO, &glove_remote_executor_clock_monotonic,
                                        GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS, &id, &err) < 0)
                return fail_with(&err);
        return GLOVE_REMOTE_EXECUTOR_EXIT_OK;
}
