/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to the keeper (keeper.c, keeper_proc.c) and its unit tests. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "glove/keeper/keeper.h"
#include "glove/store/store.h"

/* Largest /proc/PID/stat read, bytes (the line is a few hundred). */
#define GLOVE_KEEPER_STAT_MAX 4096
/* Largest /proc/PID/cgroup and cgroup.procs read, bytes. */
#define GLOVE_KEEPER_CGROUP_FILE_MAX (1024 * 1024)

/*
 * Field 22 (starttime) of the text of a /proc/PID/stat file, text[0..len).
 * The second field (comm) is in parentheses and may itself hold spaces and
 * ')': the fields are counted after the LAST ')'. Every field after it must
 * be separated by exactly one space; field 22 must be decimal digits only and
 * fit in 64 bits. Returns 0, or -EINVAL for anything else.
 */
int glove_keeper_parse_stat(const char *text, size_t len, uint64_t *out);

/*
 * The boot id from the text of /proc/sys/kernel/random/boot_id: exactly 36
 * characters of the form 8-4-4-4-12 lowercase hexadecimal digits, then an
 * optional single newline and nothing else. out[37] gets it NUL-terminated.
 * Returns 0, or -EINVAL.
 */
int glove_keeper_parse_boot_id(const char *text, size_t len, char out[37]);

/*
 * The cgroup identity of pid: {"dir":PARENT/BASE,"inode":N} where BASE is the
 * last component of pid's cgroup path (/proc/PID/cgroup) and the directory
 * PARENT/BASE exists and lists pid in its cgroup.procs. NULL when any of it
 * cannot be established (no run cgroup, parent NULL, a read failing). A new
 * reference.
 */
json_t *glove_keeper_cgroup_identity(pid_t pid, const char *parent, bool v2);

/* ---- the keeper process (keeper.c, keeper_conn.c) ---- */

/* Where the descriptors go (keeper.h: "moved to 3..6"). */
/* Where the keeper's descriptors are (keeper.h: "moved to 3..6"). */
enum { FD_CHANNEL = 3, FD_LISTEN = 4, FD_DIR = 5, FD_AUDIT = 6, FD_HOLD_FIRST = 7 };
/* Messages read from one connection per wake-up at most. */
#define READS_PER_WAKEUP 64
/* A peer that lets this much pile up unread loses its connection (output
 * is held at GLOVE_KEEPER_QUEUE_MAX; the rest are control messages). */
#define QUEUE_HARD_MAX (2u * GLOVE_KEEPER_QUEUE_MAX)
/* Largest diagnostic line, and the most lines written (a peer sending
 * nonsense without end cannot fill the disk through the log). */
#define LOG_LINE_MAX 1024
#define LOG_LINES_MAX 1000
/* File names in DIR: SESSION + the longest suffix. */
#define NAME_MAX_KEEPER (GLOVE_STORE_ID_MAX + 16)

enum glove_keeper_phase { PH_STARTING, PH_READY, PH_RUNNING, PH_ENDED };

struct glove_keeper_msg_q {
        struct glove_keeper_msg_q *next;
        size_t len;
        uint8_t data[];
};

struct glove_services_proxy;

struct glove_keeper {
        const char *id;
        const char *stem;      /* the file names' (keeper.h) */
        bool identity_unknown; /* the boot id or the keeper's start time could not be read */
        sd_event *loop;
        struct glove_session_desc desc;
        struct glove_audit_log audit;
        const char *cgroup_parent;
        bool cgroup_v2;
        int64_t (*now_ms)(void);
        size_t n_hold;          /* descriptors held at FD_HOLD_FIRST.. (the lease locks) */
        /* The inherited stream's descriptor here (FD_HOLD_FIRST + n_hold),
         * -1 once passed to the session and closed, or none. */
        int inherit_fd;
        /* Local services (keeper.h, glove_keeper_args.services_json): the
         * opaque text (the launch's, NULL for none) and the sockets at
         * service_fd_first .. service_fd_first + n_service_fds - 1, kept
         * open for the keeper's life. */
        const char *services_json;
        struct glove_services_proxy *proxy; /* keeper_services.c; NULL: none */
        int service_fd_first;
        size_t n_service_fds;
        char boot_id[37];
        pid_t pid;
        uint64_t start_time;

        /* The one connection to gloved (-1: none). */
        int conn_fd;
        unsigned conn_gen;    /* changes whenever the connection does */
        bool greeted;         /* a HELLO came on it */
        sd_event_source *conn_src, *listen_src;
        struct glove_keeper_msg_q *q_head, **q_tail;
        size_t q_bytes;

        /* The session. */
        struct glove_session *s;
        struct glove_terminal_client *client;
        bool held;
        enum glove_keeper_phase phase;
        bool killed, stopping, aborted;
        const char *fail_code;  /* the keeper's reason for a start that failed */
        uint64_t out_off;       /* bytes of output relayed so far */
        json_t *identity, *outcome;
        int exit_status;
        /* refinement-eval-v1: the evaluator fed every output byte (NULL:
         * an ordinary session); ev_failed: a feed failed, no observation. */
        struct glove_refinement_evaluator *ev;
        bool ev_failed;

        /* Input: bytes gloved sent that the terminal has not taken yet. */
        uint8_t in_buf[GLOVE_KEEPER_INPUT_MAX];
        size_t in_len;
        bool input_closed, closed_told;
        sd_event_source *input_defer;

        sd_event_source *release_timer, *status_timer, *ack_timer;
        struct glove_session_usage written; /* the usage in the status file */
        unsigned log_lines;
        uint8_t rx[GLOVE_KEEPER_MSG_MAX];   /* one message from gloved */
};

/* ---- keeper_setup.c (the process's first steps) ---- */

/* Where glove_keeper_setup_fds put the descriptors past the held ones. */
struct glove_keeper_fd_layout {
        int inherit;       /* the inherited stream, or -1 */
        int service_first; /* the first service descriptor (when there are any) */
};
/* The descriptor layout of keeper.h for a (id: the file names' stem).
 * Returns 0, or -1 when a given descriptor could not be kept (nothing can
 * be reported yet). */
int glove_keeper_setup_fds(const struct glove_keeper_args *a, const char *id, struct glove_keeper_fd_layout *out);
/* An empty signal mask, every disposition the default, SIGPIPE ignored. */
void glove_keeper_reset_signals(void);

/* ---- keeper_services.c (#28, local services) ---- */

/* Starts k->proxy from k->services_json and the service descriptors (none:
 * 0, nothing started): each upstream pinned again and required to be the
 * object gloved pinned. Returns 0 or -errno with err (services.*,
 * keeper.launch_invalid): the session must not start. */
int glove_keeper_services_start(struct glove_keeper *k, struct glove_error *err);
/* Stops k->proxy (its workers joined; NULL: nothing). */
void glove_keeper_services_stop(struct glove_keeper *k);

/* ---- keeper_refinement.c (refinement-eval-v1) ---- */

/* Makes k->ev from a->refinement_fixture (none: 0, nothing made). Returns
 * 0 or -errno with err (refinement.*): the session must not start. */
int glove_keeper_refinement_start(struct glove_keeper *k, const struct glove_keeper_args *a, struct glove_error *err);
/* Feeds buf[0..n) to k->ev (none, or failed before: nothing); a failure
 * is logged and ends the feeding (no observation then). */
void glove_keeper_refinement_feed(struct glove_keeper *k, const void *buf, size_t n);
/* k->ev's observation, ending its stream (evaluator.h's wire form; new
 * reference), or JSON null when a feed failed or it cannot be made. Once. */
json_t *glove_keeper_refinement_observation(const struct glove_keeper *k);

/* A diagnostic line on descriptor 2 (DIR/SESSION.log), at most
 * LOG_LINES_MAX of them. */
__attribute__((format(printf, 2, 3))) void glove_keeper_log(struct glove_keeper *k, const char *fmt, ...);

/* The end of the keeper: _exit with its status. */
_Noreturn void glove_keeper_exit(struct glove_keeper *k);

/* fd becomes the connection to gloved (the old one, if any, is closed).
 * Returns 0 or -errno (fd closed). */
int glove_keeper_conn_set(struct glove_keeper *k, int fd);

/* The connection is gone: closed, its queue dropped; after the end the
 * keeper exits. */
void glove_keeper_conn_lost(struct glove_keeper *k, const char *why);

/* Sends one message: type, then the iovecs' bytes (at most 3). Directly when
 * nothing waits before it, else queued (bounded: past it the connection is
 * lost). Returns 0, or -EPIPE without a connection or when it was lost. */
int glove_keeper_sendv(struct glove_keeper *k, uint8_t type, const struct iovec *iov, size_t n_iov);

/* One canonical JSON object as the payload; v is consumed (NULL: logged). */
int glove_keeper_send_json(struct glove_keeper *k, uint8_t type, json_t *v);

/* The listening socket's io handler (accept, SO_PEERCRED, replace). */
int glove_keeper_on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata);

/* One message from gloved, m[0..len) with len >= 1 (keeper.c). */
void glove_keeper_on_message(struct glove_keeper *k, const uint8_t *m, size_t len);
