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
 *
 * It changes no state it shares with its caller: standard input is read
 * as it is, and standard output is written through a private non-blocking
 * description or send(2) MSG_DONTWAIT (glove/remote_executor/output.h);
 * only when neither is possible is O_NONBLOCK set on the shared
 * description, and cleared again on every way out (each return after it,
 * and the catchable signals that end the process; SIGKILL cannot be).
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
#include "glove/remote_executor/output.h"
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

/* The prepared standard output (output.h); global for the signal handler
 * below, which clears O_NONBLOCK again when the last resort had to set it
 * on the description shared with the caller. */
static struct glove_remote_executor_output output = { .fd = -1, .orig_fd = STDOUT_FILENO };

/* The signals whose default action ends the process and that can be caught. */
static const int ending_signals[] = { SIGHUP,  SIGINT,  SIGQUIT,   SIGTERM, SIGALRM, SIGUSR1,
                                      SIGUSR2, SIGXCPU, SIGVTALRM, SIGPROF, SIGXFSZ };

static void ending_set(sigset_t *set) {
        sigemptyset(set);
        for (size_t i = 0; i < sizeof(ending_signals) / sizeof(ending_signals[0]); i++)
                sigaddset(set, ending_signals[i]);
}

/* Restores the shared output, then ends the process by the same signal. */
static void on_ending_signal(int sig) {
        (void)glove_remote_executor_output_release(&output);
        signal(sig, SIG_DFL);
        raise(sig); /* blocked in the handler: delivered when it returns */
}

/* Prepares standard output (output.h). With the ending signals blocked, so
 * none comes between setting a shared flag and the handler that clears it. */
static int open_output(struct glove_error *err) {
        sigset_t ending, old;
        ending_set(&ending);
        sigprocmask(SIG_BLOCK, &ending, &old);
        int r = glove_remote_executor_output_open(STDOUT_FILENO, "/proc/self/fd", &output, err);
        if (r == 0 && output.mode == GLOVE_REMOTE_EXECUTOR_OUTPUT_SHARED) {
                struct sigaction sa = { .sa_handler = on_ending_signal, .sa_mask = ending };
                for (size_t i = 0; i < sizeof(ending_signals) / sizeof(ending_signals[0]); i++) {
                        struct sigaction prev;
                        /* A signal ignored by the caller stays ignored. */
                        if (sigaction(ending_signals[i], NULL, &prev) == 0 && prev.sa_handler != SIG_IGN)
                                sigaction(ending_signals[i], &sa, NULL);
                }
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}

/* Undoes open_output before the executor exits (every path after it). The
 * ending signals stay blocked: the process is about to exit anyway. */
static void close_output(void) {
        sigset_t ending;
        ending_set(&ending);
        sigprocmask(SIG_BLOCK, &ending, NULL);
        (void)glove_remote_executor_output_release(&output);
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

        /* Standard output must not block, but its description is shared
         * with the caller and must not change: output.h. */
        if (open_output(&err) < 0)
                return fail_with(&err);
        int r = glove_remote_executor_serve(STDIN_FILENO, output.fd, &glove_remote_executor_clock_monotonic,
                                            GLOVE_REMOTE_EXECUTOR_CHANNEL_TIMEOUT_MS, &id, &err);
        close_output();
        if (r < 0)
                return fail_with(&err);
        return GLOVE_REMOTE_EXECUTOR_EXIT_OK;
}
