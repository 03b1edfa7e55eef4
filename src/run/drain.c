/* SPDX-License-Identifier: Apache-2.0 */
#include "drain.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"

/* How long output may keep flowing after PID 1 is gone. */
#define DRAIN_FLUSH_TIMEOUT_MS 2000

static struct termios saved_termios;
static bool termios_saved;

static void restore_terminal(void) {
        if (termios_saved) {
                (void)tcsetattr(0, TCSAFLUSH, &saved_termios);
                termios_saved = false;
        }
}

struct pump {
        int from, to;
        unsigned char last;             /* last byte relayed, '\n' before any */
        struct glove_watch *watch;      /* NULL: not counted (input to the agent) */
        bool close_to;                  /* close `to` at end of input (the agent sees EOF) */
};

static struct pump pumps[3];

static void *pump_main(void *arg) {
        struct pump *p = arg;
        char buf[65536];
        for (;;) {
                ssize_t n = read(p->from, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        /* Glove's stdin may be non-blocking (a launcher's
                         * socket or pipe): wait instead of taking it for
                         * the end of input. The flag belongs to a shared
                         * description and is left alone. */
                        struct pollfd pfd = {.fd = p->from, .events = POLLIN};
                        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                                break;
                        continue;
                }
                if (n <= 0)
                        break; /* end of file, or EIO once every PTY slave is closed */
                size_t relay = p->watch ? glove_watch_output(p->watch, (size_t)n) : (size_t)n;
                if (relay > 0)
                        p->last = (unsigned char)buf[relay - 1];
                if (relay > 0 && glove_fd_write_all(p->to, buf, relay) < 0 && !p->watch)
                        break;
        }
        if (p->close_to)
                close(p->to);
        return NULL;
}

void glove_drain_init(struct glove_drain *d) {
        memset(d, 0, sizeof(*d));
        d->master = d->out_read = d->err_read = d->in_write = -1;
        d->child_fds[0] = d->child_fds[1] = d->child_fds[2] = -1;
}

/* The agent's stdin without a PTY: always the read end of a fresh pipe,
 * never Glove's stdin itself. Whatever that is, the agent could otherwise use
 * it beyond reading bytes: a socket sends to its peer or, for UDP, to any
 * host address (past --output-limit, egress rules and the audit log); a
 * pipe or FIFO reopened through /proc/self/fd/0 for writing injects bytes
 * into the host's pipe; a file reopens with more access; and with a root
 * invoker, whose agent passes owner checks on root's files, fchmod(0)
 * changes the host's FIFO or device node (even /dev/null). A drain thread
 * copies Glove's stdin into the pipe and closes it at end of input. For the
 * null device, the common case, there is nothing to copy: the write end is
 * closed at once (end of file, no thread). */
static int stdin_pipe(struct glove_drain *d, struct glove_error *err) {
        int in[2];
        if (pipe2(in, O_CLOEXEC) < 0)
                return glove_error_set(err, errno, "drain.pipe", "pipe: %s", strerror(errno));
        d->child_fds[0] = in[0];
        struct stat st;
        if (fstat(0, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) /* Linux's null device */
                close(in[1]);
        else
                d->in_write = in[1];
        return 0;
}

int glove_drain_setup(struct glove_drain *d, bool want_pty, struct glove_watch *w, struct glove_sandbox_config *cfg,
                      struct glove_error *err) {
        glove_drain_init(d);
        d->watch = w;
        if (want_pty) {
                d->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (d->master < 0 || grantpt(d->master) < 0 || unlockpt(d->master) < 0)
                        return glove_error_set(err, errno, "tty.open", "cannot open a PTY: %s", strerror(errno));
                int slave = ioctl(d->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (slave < 0)
                        return glove_error_set(err, errno, "tty.open", "cannot open the PTY's peer: %s", strerror(errno));
                d->pty = true;
                d->child_fds[0] = d->child_fds[1] = d->child_fds[2] = slave;
                /* The agent's terminal starts with the modes of Glove's own. */
                struct termios outer;
                if (isatty(0) && tcgetattr(0, &outer) == 0)
                        (void)tcsetattr(slave, TCSANOW, &outer);
                cfg->controlling_tty = true;
                glove_drain_resize(d);
        } else {
                int out[2], errp[2];
                if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
                        return glove_error_set(err, errno, "drain.pipe", "pipe: %s", strerror(errno));
                d->out_read = out[0];
                d->err_read = errp[0];
                d->child_fds[1] = out[1];
                d->child_fds[2] = errp[1];
                int r = stdin_pipe(d, err);
                if (r < 0)
                        return r;
        }
        cfg->stdin_fd = d->child_fds[0];
        cfg->stdout_fd = d->child_fds[1];
        cfg->stderr_fd = d->child_fds[2];
        return 0;
}

void glove_drain_resize(struct glove_drain *d) {
        if (!d->pty)
                return;
        struct winsize ws;
        if (ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0)
                (void)ioctl(d->master, TIOCSWINSZ, &ws);
}

/* close_to is set before the thread runs: a pump that meets end of input at
 * once (a short file) must see it, or the agent never gets end of file. */
static int start(struct glove_drain *d, int from, int to, struct glove_watch *w, bool close_to, struct glove_error *err) {
        struct pump *p = &pumps[d->n_threads];
        *p = (struct pump){from, to, '\n', w, close_to};
        int r = pthread_create(&d->threads[d->n_threads], NULL, pump_main, p);
        if (r != 0)
                return glove_error_set(err, r, "drain.thread", "pthread_create: %s", strerror(r));
        d->n_threads++;
        return 0;
}

int glove_drain_start(struct glove_drain *d, struct glove_error *err) {
        /* Glove keeps only its own ends: end of file then means every writer
         * inside the sandbox is gone. */
        if (d->pty) {
                glove_closep(&d->child_fds[0]);
                d->child_fds[0] = d->child_fds[1] = d->child_fds[2] = -1;
                if (isatty(0) && tcgetattr(0, &saved_termios) == 0) {
                        termios_saved = true;
                        atexit(restore_terminal);
                        struct termios raw = saved_termios;
                        cfmakeraw(&raw);
                        (void)tcsetattr(0, TCSAFLUSH, &raw);
                }
                int r = start(d, d->master, 1, d->watch, false, err);
                if (r == 0)
                        r = start(d, 0, d->master, NULL, false, err);
                if (r == 0)
                        pthread_detach(d->threads[1]); /* input: blocks on Glove's stdin; never joined */
                return r;
        }
        glove_closep(&d->child_fds[0]);
        glove_closep(&d->child_fds[1]);
        glove_closep(&d->child_fds[2]);
        d->child_fds[0] = d->child_fds[1] = d->child_fds[2] = -1;
        int r = start(d, d->out_read, 1, d->watch, false, err);
        r = r ?: start(d, d->err_read, 2, d->watch, false, err);
        if (r == 0 && d->in_write >= 0) {
                r = start(d, 0, d->in_write, NULL, true, err);
                if (r == 0) {
                        pthread_detach(d->threads[d->n_threads - 1]); /* input: never joined */
                        d->n_threads--;
                        d->in_write = -1; /* the thread owns it now */
                }
        }
        return r;
}

bool glove_drain_mid_line(const struct glove_drain *d) {
        for (int i = 0; i < d->n_threads && i < 3; i++)
                if ((pumps[i].to == 1 || pumps[i].to == 2) && pumps[i].last != '\n')
                        return true;
        return false;
}

void glove_drain_stop(struct glove_drain *d) {
        if (d->stopped)
                return;
        d->stopped = true;
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += DRAIN_FLUSH_TIMEOUT_MS / 1000;
        int joinable = d->pty ? 1 : d->n_threads;
        for (int i = 0; i < joinable; i++)
                if (pthread_timedjoin_np(d->threads[i], NULL, &deadline) != 0)
                        fprintf(stderr, "glove: warning: drain.timeout: output still open after the agent ended; dropping the rest\n");
        restore_terminal();
        glove_closep(&d->master);
        glove_closep(&d->out_read);
        glove_closep(&d->err_read);
        glove_closep(&d->in_write);
        for (int i = 0; i < 3; i++)
                if (d->child_fds[i] >= 0 && (i == 0 || d->child_fds[i] != d->child_fds[i - 1]))
                        glove_closep(&d->child_fds[i]);
        d->master = d->out_read = d->err_read = -1;
}
