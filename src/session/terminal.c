/* SPDX-License-Identifier: Apache-2.0 */
#include "glove/session/terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "glove/base/cleanup.h"

struct stream {
        struct glove_terminal *t;
        int fd;                     /* Glove's end: PTY master or a pipe's read end; -1 once closed */
        int id;                     /* 1 or 2 */
        bool eof;
        sd_event_source *src;
};

struct glove_terminal_client {
        struct glove_terminal *t;
        struct glove_terminal_client_ops ops;
        void *userdata;
        bool hold;
        bool dead;                  /* detached during a dispatch; freed after it */
};

struct glove_terminal {
        struct glove_terminal_config cfg;
        int child[3];               /* the agent's ends until start */
        struct stream out[2];
        size_t n_out;
        /* Input towards the agent: the pipe's write end, or the PTY master
         * (then shared with out[0], whose source also watches EPOLLOUT). */
        int in_fd;
        sd_event_source *in_src;    /* pipes only */
        char *inq;
        size_t in_len;
        bool in_closing, in_dead;
        bool in_refused;            /* input was refused: tell clients when there is room */
        char in_last;               /* last byte queued, '\n' before any */
        /* Transcript ring. */
        char *ring;
        size_t ring_cap, ring_head, ring_len;
        uint64_t output_bytes;
        bool breached, ended, closed, started;
        struct glove_terminal_client *clients[GLOVE_TERMINAL_CLIENTS_MAX];
        size_t n_clients;
        unsigned holds;
        unsigned dispatching;
        sd_event *loop;
};

static void update_events(struct glove_terminal *t);

/* Reads and relayed chunks per wake-up of an output stream at most. */
#define READS_PER_WAKEUP 64
#define RELAYS_PER_WAKEUP 4

int glove_terminal_new(const struct glove_terminal_config *cfg, struct glove_terminal **out, struct glove_error *err) {
        *out = NULL;
        size_t ring = cfg->transcript_bytes ? cfg->transcript_bytes : GLOVE_TERMINAL_TRANSCRIPT_DEFAULT;
        if (ring > GLOVE_TERMINAL_TRANSCRIPT_MAX)
                return glove_error_set(err, EINVAL, "terminal.config", "transcript of %zu bytes is over the bound of %d", ring,
                                       GLOVE_TERMINAL_TRANSCRIPT_MAX);
        struct glove_terminal *t = calloc(1, sizeof(*t));
        if (!t)
                return glove_error_set(err, ENOMEM, "terminal.alloc", "out of memory");
        /* Every descriptor is -1 before the first failure path: calloc's 0
         * is a real descriptor (the caller's stdin, or another thread's
         * in gloved) that glove_terminal_free would close. */
        t->cfg = *cfg;
        t->child[0] = t->child[1] = t->child[2] = -1;
        t->in_fd = -1;
        t->in_last = '\n';
        t->out[0] = (struct stream){.t = t, .fd = -1, .id = 1};
        t->out[1] = (struct stream){.t = t, .fd = -1, .id = 2};
        if (!(t->ring = malloc(ring)) || !(t->inq = malloc(GLOVE_TERMINAL_INPUT_MAX))) {
                glove_terminal_free(t);
                return glove_error_set(err, ENOMEM, "terminal.alloc", "out of memory");
        }
        t->ring_cap = ring;
        if (cfg->mode == GLOVE_TERMINAL_PTY) {
                int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                t->out[0].fd = master;
                if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) {
                        int e = errno;
                        glove_terminal_free(t);
                        return glove_error_set(err, e, "tty.open", "cannot open a PTY: %s", strerror(e));
                }
                int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (slave < 0) {
                        int e = errno;
                        glove_terminal_free(t);
                        return glove_error_set(err, e, "tty.open", "cannot open the PTY's peer: %s", strerror(e));
                }
                if (cfg->modes)
                        (void)tcsetattr(slave, TCSANOW, cfg->modes);
                if (cfg->rows && cfg->cols) {
                        struct winsize ws = {.ws_row = cfg->rows, .ws_col = cfg->cols};
                        (void)ioctl(master, TIOCSWINSZ, &ws);
                }
                t->child[0] = slave;
                t->child[1] = t->child[2] = slave; /* one descriptor, closed once */
                t->n_out = 1;
                t->in_fd = master;
        } else {
                int p[2];
                if (pipe2(p, O_CLOEXEC) < 0) {
                        int e = errno;
                        glove_terminal_free(t);
                        return glove_error_set(err, e, "terminal.pipe", "pipe: %s", strerror(e));
                }
                t->out[1].fd = p[0];
                t->child[2] = p[1];
                if (cfg->mode == GLOVE_TERMINAL_PIPES) {
                        if (pipe2(p, O_CLOEXEC) < 0) {
                                int e = errno;
                                glove_terminal_free(t);
                                return glove_error_set(err, e, "terminal.pipe", "pipe: %s", strerror(e));
                        }
                        t->out[0].fd = p[0];
                        t->child[1] = p[1];
                        if (pipe2(p, O_CLOEXEC) < 0) {
                                int e = errno;
                                glove_terminal_free(t);
                                return glove_error_set(err, e, "terminal.pipe", "pipe: %s", strerror(e));
                        }
                        t->child[0] = p[0];
                        if (cfg->input_closed) {
                                close(p[1]);
                                t->in_dead = true;
                        } else {
                                t->in_fd = p[1];
                        }
                        t->n_out = 2;
                } else {
                        /* Only the error stream: out[0] stays unused and at end. */
                        t->out[0].eof = true;
                        t->in_dead = true;
                        t->n_out = 2;
                }
        }
        *out = t;
        return 0;
}

void glove_terminal_child_fds(const struct glove_terminal *t, int fds[3]) {
        for (int i = 0; i < 3; i++)
                fds[i] = t->child[i];
}

bool glove_terminal_is_pty(const struct glove_terminal *t) {
        return t->cfg.mode == GLOVE_TERMINAL_PTY;
}

static void close_children(struct glove_terminal *t) {
        for (int i = 0; i < 3; i++) {
                bool shared = false;
                for (int j = 0; j < i; j++)
                        shared |= t->child[j] == t->child[i];
                if (!shared)
                        glove_closep(&t->child[i]);
        }
        t->child[0] = t->child[1] = t->child[2] = -1;
}

/* Frees clients detached during a dispatch, once no dispatch runs. */
static void reap_clients(struct glove_terminal *t) {
        if (t->dispatching)
                return;
        size_t k = 0;
        for (size_t i = 0; i < t->n_clients; i++) {
                if (t->clients[i]->dead)
                        free(t->clients[i]);
                else
                        t->clients[k++] = t->clients[i];
        }
        t->n_clients = k;
}

static void notify_ended(struct glove_terminal *t) {
        if (t->ended)
                return;
        t->ended = true;
        t->dispatching++;
        for (size_t i = 0; i < t->n_clients; i++)
                if (!t->clients[i]->dead && t->clients[i]->ops.ended)
                        t->clients[i]->ops.ended(t->clients[i]->userdata);
        t->dispatching--;
        reap_clients(t);
        if (t->cfg.output_ended)
                t->cfg.output_ended(t->cfg.userdata);
}

static void stream_end(struct stream *s) {
        struct glove_terminal *t = s->t;
        s->eof = true;
        s->src = sd_event_source_disable_unref(s->src);
        /* The PTY master also carries input: keep it while input may flow? No:
         * once the slave side is gone (EIO), nothing can be written either. */
        if (t->cfg.mode == GLOVE_TERMINAL_PTY) {
                t->in_fd = -1;
                t->in_dead = true;
                t->in_len = 0;
        }
        glove_closep(&s->fd);
        s->fd = -1;
        bool all = true;
        for (size_t i = 0; i < t->n_out; i++)
                all &= t->out[i].eof;
        if (all)
                notify_ended(t);
}

static void transcript_add(struct glove_terminal *t, const char *buf, size_t n) {
        if (n >= t->ring_cap) {
                memcpy(t->ring, buf + n - t->ring_cap, t->ring_cap);
                t->ring_head = 0;
                t->ring_len = t->ring_cap;
                return;
        }
        size_t first = t->ring_cap - t->ring_head < n ? t->ring_cap - t->ring_head : n;
        memcpy(t->ring + t->ring_head, buf, first);
        memcpy(t->ring, buf + first, n - first);
        t->ring_head = (t->ring_head + n) % t->ring_cap;
        t->ring_len = t->ring_len + n > t->ring_cap ? t->ring_cap : t->ring_len + n;
}

size_t glove_terminal_count(struct glove_terminal *t, size_t n) {
        uint64_t before = t->output_bytes;
        t->output_bytes += n;
        uint64_t limit = t->cfg.output_limit;
        if (!limit || before + n <= limit)
                return n;
        if (!t->breached) {
                t->breached = true;
                if (t->cfg.breach)
                        t->cfg.breach(t->cfg.userdata);
        }
        return before >= limit ? 0 : (size_t)(limit - before);
}

static void relay(struct glove_terminal *t, int id, const char *buf, size_t n) {
        uint64_t before = t->output_bytes;
        t->output_bytes += n;
        size_t pass = n;
        uint64_t limit = t->cfg.output_limit;
        if (limit && before + n > limit) {
                pass = before >= limit ? 0 : (size_t)(limit - before);
                if (!t->breached) {
                        t->breached = true;
                        if (t->cfg.breach)
                                t->cfg.breach(t->cfg.userdata);
                }
        }
        if (pass == 0)
                return;
        transcript_add(t, buf, pass);
        t->dispatching++;
        for (size_t i = 0; i < t->n_clients; i++)
                if (!t->clients[i]->dead)
                        t->clients[i]->ops.output(t->clients[i]->userdata, id, buf, pass);
        t->dispatching--;
        reap_clients(t);
}

static void notify_input_room(struct glove_terminal *t) {
        if (!t->in_refused || (t->in_len > GLOVE_TERMINAL_INPUT_MAX / 2 && !t->in_dead))
                return;
        t->in_refused = false;
        t->dispatching++;
        for (size_t i = 0; i < t->n_clients; i++)
                if (!t->clients[i]->dead && t->clients[i]->ops.input_room)
                        t->clients[i]->ops.input_room(t->clients[i]->userdata);
        t->dispatching--;
        reap_clients(t);
}

static void flush_input(struct glove_terminal *t) {
        while (t->in_len > 0 && t->in_fd >= 0) {
                ssize_t n = write(t->in_fd, t->inq, t->in_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0) {
                        /* The agent closed its end (EPIPE), or the PTY is gone. */
                        t->in_len = 0;
                        t->in_dead = true;
                        if (t->cfg.mode != GLOVE_TERMINAL_PTY) {
                                t->in_src = sd_event_source_disable_unref(t->in_src);
                                glove_closep(&t->in_fd);
                                t->in_fd = -1;
                        }
                        return;
                }
                memmove(t->inq, t->inq + n, t->in_len - (size_t)n);
                t->in_len -= (size_t)n;
        }
        if (t->in_len == 0 && t->in_closing && t->cfg.mode != GLOVE_TERMINAL_PTY && t->in_fd >= 0) {
                t->in_src = sd_event_source_disable_unref(t->in_src);
                glove_closep(&t->in_fd);
                t->in_fd = -1;
                t->in_dead = true;
        }
}

static int on_stream(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        struct stream *s = userdata;
        struct glove_terminal *t = s->t;
        if ((revents & EPOLLOUT) && t->cfg.mode == GLOVE_TERMINAL_PTY) {
                flush_input(t);
                notify_input_room(t);
        }
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                char buf[GLOVE_TERMINAL_CHUNK];
                size_t have = 0;
                /* Reads are gathered into one chunk before it is relayed: a
                 * PTY gives at most a few KiB per read, and each relay is a
                 * frame for every attached client, so larger relays cost
                 * less per byte. At most READS_PER_WAKEUP reads and
                 * RELAYS_PER_WAKEUP chunks per wake-up, so one busy stream
                 * cannot starve the loop; what was read is always relayed
                 * (before the end of the stream is handled), and holds are
                 * honoured between relays. */
                for (int reads = 0, relays = 0; reads < READS_PER_WAKEUP && relays < RELAYS_PER_WAKEUP && t->holds == 0 &&
                                                !s->eof;
                     reads++) {
                        ssize_t n = read(fd, buf + have, sizeof(buf) - have);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                break;
                        if (n <= 0) {
                                if (have)
                                        relay(t, s->id, buf, have);
                                have = 0;
                                stream_end(s); /* end of file, or EIO once every PTY slave is closed */
                                break;
                        }
                        have += (size_t)n;
                        if (have == sizeof(buf)) {
                                relay(t, s->id, buf, have);
                                have = 0;
                                relays++;
                        }
                }
                if (have)
                        relay(t, s->id, buf, have);
        }
        update_events(t);
        return 0;
}

static int on_input(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void)src;
        (void)fd;
        (void)revents;
        struct glove_terminal *t = userdata;
        flush_input(t);
        update_events(t);
        notify_input_room(t);
        return 0;
}

/* Sets what each source waits for: output unless held or ended, input
 * writability while input is queued. */
static void update_events(struct glove_terminal *t) {
        if (!t->started)
                return;
        for (size_t i = 0; i < t->n_out; i++) {
                struct stream *s = &t->out[i];
                if (!s->src)
                        continue;
                uint32_t ev = 0;
                if (!s->eof && t->holds == 0 && !t->closed)
                        ev |= EPOLLIN;
                if (t->cfg.mode == GLOVE_TERMINAL_PTY && t->in_len > 0 && !t->in_dead)
                        ev |= EPOLLOUT;
                if (ev) {
                        (void)sd_event_source_set_io_events(s->src, ev);
                        (void)sd_event_source_set_enabled(s->src, SD_EVENT_ON);
                } else {
                        (void)sd_event_source_set_enabled(s->src, SD_EVENT_OFF);
                }
        }
        if (t->in_src)
                (void)sd_event_source_set_enabled(t->in_src, t->in_len > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
}

int glove_terminal_start(struct glove_terminal *t, sd_event *loop, struct glove_error *err) {
        close_children(t);
        t->loop = loop;
        for (size_t i = 0; i < t->n_out; i++) {
                struct stream *s = &t->out[i];
                if (s->fd < 0)
                        continue;
                if (fcntl(s->fd, F_SETFL, O_NONBLOCK) < 0)
                        return glove_error_set(err, errno, "terminal.event_loop", "fcntl: %s", strerror(errno));
                int r = sd_event_add_io(loop, &s->src, s->fd, EPOLLIN, on_stream, s);
                if (r < 0)
                        return glove_error_set(err, -r, "terminal.event_loop", "event loop: %s", strerror(-r));
        }
        if (t->cfg.mode != GLOVE_TERMINAL_PTY && t->in_fd >= 0) {
                if (fcntl(t->in_fd, F_SETFL, O_NONBLOCK) < 0)
                        return glove_error_set(err, errno, "terminal.event_loop", "fcntl: %s", strerror(errno));
                int r = sd_event_add_io(loop, &t->in_src, t->in_fd, EPOLLOUT, on_input, t);
                if (r < 0)
                        return glove_error_set(err, -r, "terminal.event_loop", "event loop: %s", strerror(-r));
        }
        t->started = true;
        if (t->in_closing && t->in_len == 0)
                flush_input(t);
        update_events(t);
        return 0;
}

static void replay(struct glove_terminal_client *c) {
        struct glove_terminal *t = c->t;
        size_t start = (t->ring_head + t->ring_cap - t->ring_len) % t->ring_cap;
        size_t left = t->ring_len;
        while (left > 0 && !c->dead) {
                size_t n = t->ring_cap - start < left ? t->ring_cap - start : left;
                if (n > GLOVE_TERMINAL_CHUNK)
                        n = GLOVE_TERMINAL_CHUNK;
                c->ops.output(c->userdata, 1, t->ring + start, n);
                start = (start + n) % t->ring_cap;
                left -= n;
        }
}

int glove_terminal_attach(struct glove_terminal *t, const struct glove_terminal_client_ops *ops, void *userdata, bool replay_it,
                          struct glove_terminal_client **out) {
        *out = NULL;
        reap_clients(t);
        if (t->n_clients >= GLOVE_TERMINAL_CLIENTS_MAX)
                return -ENOSPC;
        struct glove_terminal_client *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct glove_terminal_client){.t = t, .ops = *ops, .userdata = userdata};
        t->clients[t->n_clients++] = c;
        *out = c;
        if (replay_it) {
                t->dispatching++;
                replay(c);
                t->dispatching--;
        }
        if (t->ended && !c->dead && c->ops.ended) {
                t->dispatching++;
                c->ops.ended(c->userdata);
                t->dispatching--;
        }
        reap_clients(t);
        return 0;
}

void glove_terminal_detach(struct glove_terminal_client *c) {
        if (!c || c->dead)
                return;
        struct glove_terminal *t = c->t;
        if (c->hold) {
                c->hold = false;
                t->holds--;
        }
        c->dead = true;
        reap_clients(t);
        update_events(t);
}

void glove_terminal_client_hold(struct glove_terminal_client *c, bool hold) {
        if (!c || c->dead || c->hold == hold)
                return;
        c->hold = hold;
        if (hold)
                c->t->holds++;
        else
                c->t->holds--;
        update_events(c->t);
}

ssize_t glove_terminal_input(struct glove_terminal *t, const void *buf, size_t n) {
        if (t->in_dead || t->in_closing || t->in_fd < 0)
                return -EPIPE;
        size_t room = GLOVE_TERMINAL_INPUT_MAX - t->in_len;
        if (n > room) {
                n = room;
                t->in_refused = true;
        }
        memcpy(t->inq + t->in_len, buf, n);
        t->in_len += n;
        if (n > 0)
                t->in_last = ((const char *)buf)[n - 1];
        if (t->started)
                flush_input(t);
        update_events(t);
        /* The write above may have emptied the queue at once: then no
         * writability event will come to say there is room again. */
        notify_input_room(t);
        return (ssize_t)n;
}

/* A terminal has no end of input of its own: what ends a reader's input is
 * the line discipline's end-of-file character (VEOF, ^D by default) at the
 * start of a line, as a user typing ^D gives it. In canonical mode it is
 * queued once, or twice when the last byte queued was not a newline (the
 * first ends the pending line, the second gives end of file); in raw mode
 * there is nothing to send. */
static void pty_input_eof(struct glove_terminal *t) {
        struct termios tio;
        int fd = t->out[0].fd;
        if (fd < 0 || t->in_dead || tcgetattr(fd, &tio) < 0 || !(tio.c_lflag & ICANON) || tio.c_cc[VEOF] == _POSIX_VDISABLE)
                return;
        char eof[2] = {(char)tio.c_cc[VEOF], (char)tio.c_cc[VEOF]};
        size_t n = t->in_last == '\n' ? 1 : 2;
        if (t->in_len + n <= GLOVE_TERMINAL_INPUT_MAX) {
                memcpy(t->inq + t->in_len, eof, n);
                t->in_len += n;
                t->in_last = '\n';
        }
        if (t->started)
                flush_input(t);
        update_events(t);
}

void glove_terminal_input_close(struct glove_terminal *t) {
        if (t->in_closing)
                return;
        if (t->cfg.mode == GLOVE_TERMINAL_PTY) {
                t->in_closing = true;
                pty_input_eof(t);
                return;
        }
        t->in_closing = true;
        if (t->started || t->in_len == 0)
                flush_input(t);
        update_events(t);
}

int glove_terminal_resize(struct glove_terminal *t, unsigned rows, unsigned cols) {
        if (t->cfg.mode != GLOVE_TERMINAL_PTY)
                return -ENOTTY;
        if (rows < 1 || rows > 65535 || cols < 1 || cols > 65535)
                return -EINVAL;
        if (t->out[0].fd < 0)
                return -EPIPE;
        struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
        return ioctl(t->out[0].fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

uint64_t glove_terminal_output_bytes(const struct glove_terminal *t) {
        return t->output_bytes;
}

bool glove_terminal_output_done(const struct glove_terminal *t) {
        return t->ended;
}

size_t glove_terminal_transcript(const struct glove_terminal *t, void *buf, size_t cap) {
        size_t n = t->ring_len < cap ? t->ring_len : cap;
        size_t start = (t->ring_head + t->ring_cap - n) % t->ring_cap;
        size_t first = t->ring_cap - start < n ? t->ring_cap - start : n;
        memcpy(buf, t->ring + start, first);
        memcpy((char *)buf + first, t->ring, n - first);
        return n;
}

void glove_terminal_close(struct glove_terminal *t) {
        if (!t || t->closed)
                return;
        t->closed = true;
        for (size_t i = 0; i < t->n_out; i++)
                if (!t->out[i].eof)
                        stream_end(&t->out[i]);
        notify_ended(t);
}

void glove_terminal_free(struct glove_terminal *t) {
        if (!t)
                return;
        for (size_t i = 0; i < 2; i++) {
                t->out[i].src = sd_event_source_disable_unref(t->out[i].src);
                glove_closep(&t->out[i].fd);
        }
        t->in_src = sd_event_source_disable_unref(t->in_src);
        if (t->cfg.mode != GLOVE_TERMINAL_PTY)
                glove_closep(&t->in_fd);
        close_children(t);
        for (size_t i = 0; i < t->n_clients; i++)
                free(t->clients[i]);
        free(t->ring);
        free(t->inq);
        free(t);
}
