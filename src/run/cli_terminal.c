/* SPDX-License-Identifier: Apache-2.0 */
#include "cli_terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "glove/base/cleanup.h"
#include "glove/base/fd.h"
#include "glove/base/time.h"
#include "glove/session/session.h"


enum how {
        HOW_NONE,       /* nothing (closed, or unusable) */
        HOW_DIRECT,     /* never blocks: a regular file or a character device such as /dev/null */
        HOW_POLL,       /* a private non-blocking description (pipe, FIFO, terminal) */
        HOW_SOCKET,     /* the original descriptor with MSG_DONTWAIT */
        HOW_READY,      /* a pipe, FIFO or terminal that cannot be reopened (another user's):
                         * the original, blocking descriptor, used only when poll(2) says it
                         * is ready and for one call of at most `chunk` bytes, which then
                         * cannot block */
};

struct out {
        struct glove_cli_terminal *c;
        int fd;                  /* what is written to */
        bool own;                /* fd is a private reopen, closed here */
        enum how how;
        size_t chunk;            /* HOW_READY: bytes one write may take without blocking */
        bool broken;             /* a write failed: the rest is discarded */
        sd_event_source *src;
        char *pending;           /* GLOVE_TERMINAL_CHUNK bytes */
        size_t len, off;
        unsigned char last;
};

struct glove_cli_terminal {
        sd_event *loop;
        struct glove_terminal *t;
        struct glove_terminal_client *client;
        bool pty;
        struct out out[2];       /* stdout, stderr */
        int in_fd;
        bool in_own;
        enum how in_how;
        sd_event_source *in_src, *in_timer;
        char inbuf[16384];
        size_t in_len, in_off;
        bool in_eof;
        bool raw;                /* outer terminal in raw mode; saved holds its modes */
        struct termios saved;
        void (*write_error)(void *userdata, int fd, int errnum);
        void *write_error_userdata;
};

/* A write to Glove's stdout or stderr failed: the rest of that stream is
 * discarded, and the front end hears of it once per stream. */
static void out_failed(struct out *o, int errnum) {
        struct glove_cli_terminal *c = o->c;
        o->broken = true;
        o->off = o->len = 0;
        int fd = o == &c->out[0] ? 1 : 2;
        if (c->write_error)
                c->write_error(c->write_error_userdata, fd, errnum ? errnum : EIO);
}

void glove_cli_terminal_probe(struct glove_cli_terminal_probe *p) {
        memset(p, 0, sizeof(*p));
        struct stat st;
        if (fstat(0, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) /* Linux's null device */
                p->stdin_null = true;
        p->stdin_tty = isatty(0);
        p->stdout_tty = isatty(1);
        if (p->stdin_tty && tcgetattr(0, &p->modes) == 0)
                p->have_modes = true;
        struct winsize ws;
        if (ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0) {
                p->rows = ws.ws_row;
                p->cols = ws.ws_col;
        }
}

/* How fd (0, 1 or 2) is used without blocking the loop or changing the
 * shared description. */
static enum how classify(int fd, int flags, int *use, bool *own, size_t *chunk) {
        struct stat st;
        *use = fd;
        *own = false;
        if (fstat(fd, &st) < 0)
                return HOW_NONE;
        if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
                return HOW_DIRECT;
        if (S_ISSOCK(st.st_mode))
                return HOW_SOCKET;
        if (S_ISCHR(st.st_mode) && !isatty(fd))
                return HOW_DIRECT; /* /dev/null, /dev/zero and the like */
        char path[32];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        int r = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (r >= 0) {
                *use = r;
                *own = true;
                return HOW_POLL;
        }
        /* Cannot reopen (a pipe of another user's): readiness first. A pipe
         * that polls writable has a free page (PIPE_BUF bytes); a terminal
         * at least its wake-up threshold (256 bytes). */
        *chunk = isatty(fd) ? 256 : 4096;
        return S_ISFIFO(st.st_mode) || isatty(fd) ? HOW_READY : HOW_DIRECT;
}

static void out_hold_update(struct glove_cli_terminal *c) {
        bool hold = false;
        for (int i = 0; i < 2; i++)
                hold |= c->out[i].len > c->out[i].off;
        glove_terminal_client_hold(c->client, hold);
}

/* HOW_READY: true when one call on fd will not block; a hang-up or error
 * counts as ready (the call then fails and says why). */
static bool ready(int fd, short events) {
        struct pollfd pfd = {.fd = fd, .events = events};
        return poll(&pfd, 1, 0) > 0;
}

/* Writes from pending; returns true when all of it is written. */
static bool out_flush(struct out *o) {
        while (o->off < o->len) {
                ssize_t n;
                if (o->how == HOW_READY) {
                        if (!ready(o->fd, POLLOUT))
                                return false;
                        size_t want = o->len - o->off < o->chunk ? o->len - o->off : o->chunk;
                        n = write(o->fd, o->pending + o->off, want);
                } else if (o->how == HOW_SOCKET)
                        n = send(o->fd, o->pending + o->off, o->len - o->off, MSG_DONTWAIT | MSG_NOSIGNAL);
                else
                        n = write(o->fd, o->pending + o->off, o->len - o->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return false;
                if (n <= 0) {
                        out_failed(o, n < 0 ? errno : EIO); /* the rest is discarded */
                        return true;
                }
                o->off += (size_t)n;
        }
        o->off = o->len = 0;
        return true;
}

static int on_out_writable(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)fd;
        (void)revents;
        struct out *o = userdata;
        if (out_flush(o))
                (void)sd_event_source_set_enabled(src, SD_EVENT_OFF);
        out_hold_update(o->c);
        return 0;
}

static void on_output(void *userdata, int stream, const void *buf, size_t n) {
        struct glove_cli_terminal *c = userdata;
        struct out *o = &c->out[c->pty || stream == 1 ? 0 : 1];
        if (o->how == HOW_NONE || o->broken)
                return;
        o->last = ((const unsigned char *)buf)[n - 1];
        if (o->how == HOW_DIRECT) {
                int r = glove_fd_write_all(o->fd, buf, n);
                if (r < 0)
                        out_failed(o, -r);
                return;
        }
        /* The terminal hands nothing more while we hold, so pending is empty. */
        memcpy(o->pending, buf, n);
        o->len = n;
        o->off = 0;
        if (out_flush(o))
                return;
        if (!o->src && sd_event_add_io(c->loop, &o->src, o->fd, EPOLLOUT, on_out_writable, o) < 0) {
                /* No event source: finish the write within the drain bound,
                 * else drop it (never an unbounded wait on the loop). */
                struct pollfd pfd = {.fd = o->fd, .events = POLLOUT};
                uint64_t deadline = glove_time_monotonic_ms() + GLOVE_SESSION_DRAIN_MS;
                while (!out_flush(o)) {
                        uint64_t now = glove_time_monotonic_ms();
                        if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) < 0) {
                                out_failed(o, ETIMEDOUT);
                                break;
                        }
                }
                return;
        }
        (void)sd_event_source_set_enabled(o->src, SD_EVENT_ON);
        out_hold_update(c);
}

static void input_push(struct glove_cli_terminal *c);

static int on_in_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        (void)src;
        (void)usec;
        input_push(userdata);
        return 0;
}

/* Reads on from a fresh event: after a burst from a file that is always
 * readable, so other events get their turn. */
static void input_arm_timer(struct glove_cli_terminal *c) {
        if (!c->in_timer) {
                if (sd_event_add_time_relative(c->loop, &c->in_timer, CLOCK_MONOTONIC, 0, 1, on_in_timer, c) < 0)
                        c->in_timer = NULL;
                return;
        }
        (void)sd_event_source_set_time_relative(c->in_timer, 0);
        (void)sd_event_source_set_enabled(c->in_timer, SD_EVENT_ONESHOT);
}

/* The session's input queue has room again. */
static void on_input_room(void *userdata) {
        input_arm_timer(userdata);
}

/* Reads stdin (once pending input was taken) and hands it to the session. */
static void input_push(struct glove_cli_terminal *c) {
        for (int round = 0; round < 64; round++) {
                if (c->in_off < c->in_len) {
                        ssize_t n = glove_terminal_input(c->t, c->inbuf + c->in_off, c->in_len - c->in_off);
                        if (n < 0) {
                                /* The agent's input is gone: stop reading stdin. */
                                c->in_eof = true;
                                c->in_len = c->in_off = 0;
                                c->in_src = sd_event_source_disable_unref(c->in_src);
                                return;
                        }
                        c->in_off += (size_t)n;
                        if (c->in_off < c->in_len) {
                                /* Queue full: pause stdin until on_input_room. */
                                if (c->in_src)
                                        (void)sd_event_source_set_enabled(c->in_src, SD_EVENT_OFF);
                                return;
                        }
                }
                c->in_off = c->in_len = 0;
                if (c->in_eof)
                        return;
                ssize_t n;
                if (c->in_how == HOW_READY && !ready(c->in_fd, POLLIN)) {
                        if (c->in_src)
                                (void)sd_event_source_set_enabled(c->in_src, SD_EVENT_ON);
                        return;
                }
                if (c->in_how == HOW_SOCKET)
                        n = recv(c->in_fd, c->inbuf, sizeof(c->inbuf), MSG_DONTWAIT);
                else
                        n = read(c->in_fd, c->inbuf, sizeof(c->inbuf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        if (c->in_src)
                                (void)sd_event_source_set_enabled(c->in_src, SD_EVENT_ON);
                        return;
                }
                if (n <= 0) {
                        /* End of input (or EIO from a hung-up terminal). */
                        c->in_eof = true;
                        c->in_src = sd_event_source_disable_unref(c->in_src);
                        glove_terminal_input_close(c->t);
                        return;
                }
                c->in_len = (size_t)n;
        }
        /* A regular file, read in bursts between other events. */
        input_arm_timer(c);
}

static int on_in_readable(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)fd;
        (void)revents;
        input_push(userdata);
        return 0;
}

static int out_init(struct glove_cli_terminal *c, struct out *o, int fd, struct glove_error *err) {
        o->c = c;
        o->last = '\n';
        o->how = classify(fd, O_WRONLY, &o->fd, &o->own, &o->chunk);
        if (o->how == HOW_POLL || o->how == HOW_SOCKET || o->how == HOW_READY) {
                o->pending = malloc(GLOVE_TERMINAL_CHUNK);
                if (!o->pending)
                        return glove_error_set(err, ENOMEM, "terminal.alloc", "out of memory");
        }
        return 0;
}

int glove_cli_terminal_attach(sd_event *loop, struct glove_terminal *t, const struct glove_cli_terminal_probe *p,
                              bool copy_stdin, struct glove_cli_terminal **out, struct glove_error *err) {
        *out = NULL;
        struct glove_cli_terminal *c = calloc(1, sizeof(*c));
        if (!c)
                return glove_error_set(err, ENOMEM, "terminal.alloc", "out of memory");
        c->loop = loop;
        c->t = t;
        c->pty = glove_terminal_is_pty(t);
        c->in_fd = -1;
        c->out[0].fd = c->out[1].fd = -1;
        int r = out_init(c, &c->out[0], 1, err);
        if (r >= 0)
                r = out_init(c, &c->out[1], 2, err);
        static const struct glove_terminal_client_ops ops = {.output = on_output, .input_room = on_input_room};
        if (r >= 0 && (r = glove_terminal_attach(t, &ops, c, false, &c->client)) < 0)
                glove_error_set(err, -r, "terminal.attach", "cannot attach Glove's terminal: %s", strerror(-r));
        if (r >= 0 && copy_stdin && p->stdin_null)
                glove_terminal_input_close(t); /* a PTY agent reads end of file at once, as a pipe's does */
        if (r >= 0 && copy_stdin && !p->stdin_null) {
                size_t chunk = 0;
                c->in_how = classify(0, O_RDONLY, &c->in_fd, &c->in_own, &chunk);
                if (c->in_how == HOW_POLL || c->in_how == HOW_SOCKET || c->in_how == HOW_READY) {
                        r = sd_event_add_io(loop, &c->in_src, c->in_fd, EPOLLIN, on_in_readable, c);
                        if (r < 0)
                                glove_error_set(err, -r, "terminal.event_loop", "event loop: %s", strerror(-r));
                        else
                                input_push(c); /* a socket that is not connected (a listener) ends here */
                } else if (c->in_how == HOW_DIRECT) {
                        input_arm_timer(c);
                }
        }
        if (r >= 0 && c->pty && p->stdin_tty && p->have_modes) {
                c->saved = p->modes;
                struct termios raw = p->modes;
                cfmakeraw(&raw);
                if (tcsetattr(0, TCSAFLUSH, &raw) == 0)
                        c->raw = true;
        }
        if (r < 0) {
                glove_cli_terminal_free(c, 0);
                return r;
        }
        *out = c;
        return 0;
}

void glove_cli_terminal_on_write_error(struct glove_cli_terminal *c, void (*fn)(void *userdata, int fd, int errnum),
                                       void *userdata) {
        c->write_error = fn;
        c->write_error_userdata = userdata;
}

void glove_cli_terminal_resize(struct glove_cli_terminal *c) {
        if (!c || !c->pty)
                return;
        struct winsize ws;
        if (ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0)
                (void)glove_terminal_resize(c->t, ws.ws_row, ws.ws_col);
}

bool glove_cli_terminal_mid_line(const struct glove_cli_terminal *c) {
        return c && (c->out[0].last != '\n' || c->out[1].last != '\n');
}

void glove_cli_terminal_free(struct glove_cli_terminal *c, int timeout_ms) {
        if (!c)
                return;
        uint64_t deadline = glove_time_monotonic_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
        for (int i = 0; i < 2; i++) {
                struct out *o = &c->out[i];
                while (o->len > o->off && !out_flush(o)) {
                        uint64_t now = glove_time_monotonic_ms();
                        if (now >= deadline)
                                break;
                        struct pollfd pfd = {.fd = o->fd, .events = POLLOUT};
                        (void)poll(&pfd, 1, (int)(deadline - now));
                }
                o->src = sd_event_source_disable_unref(o->src);
                if (o->own)
                        glove_closep(&o->fd);
                free(o->pending);
        }
        glove_terminal_detach(c->client);
        c->in_src = sd_event_source_disable_unref(c->in_src);
        c->in_timer = sd_event_source_disable_unref(c->in_timer);
        if (c->in_own)
                glove_closep(&c->in_fd);
        if (c->raw)
                (void)tcsetattr(0, TCSAFLUSH, &c->saved);
        free(c);
}
