/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The session keeper (issue "Sessions outlive gloved"; spec
 * session-policy.md, "Receipts and recovery"; architecture.md, "Start and
 * recover the child through the executor and reconciler"; docs/recovery.md).
 *
 * One small process per managed session, its own executable glove-keeper
 * (src/cli/glove_keeper.c), started by gloved once the launch is prepared
 * (after the "starting" transition) as a fork that only arranges
 * descriptors and execs it (glove_keeper_spawn): it reads its launch from
 * an inherited sealed memfd (glove_keeper_launch_encode/_decode, below) and
 * runs the session engine (session.h) on its own sd-event loop and so holds the
 * PTY master, PID 1's pidfd, the transcript, the output accounting and the
 * limit watch. gloved talks to it over an AF_UNIX SOCK_SEQPACKET channel; it
 * comes and goes, the keeper stays. The sandbox's PID 1 is the keeper's
 * child and dies with it (PR_SET_PDEATHSIG); the keeper does not die with
 * gloved (own session, no death signal, nothing of gloved's open).
 *
 * Files, in DIR = MATERIALIZATION_ROOT/keepers (0700, the service user):
 *   DIR/SESSION.sock    the keeper's listening socket (0600), bound by gloved
 *                       before the launch and listened on by the keeper (so
 *                       that a peer's SO_PEERCRED names the keeper); a
 *                       restarted gloved connects here.
 *                       The keeper accepts only a peer of its own uid
 *                       (SO_PEERCRED), one connection at a time: a new one
 *                       replaces the old.
 *   DIR/SESSION.status  written by the keeper (a new file renamed over the
 *                       old, mode 0600): canonical JSON
 *                       {"boot_id","identity":IDENTITY|null,
 *                        "keeper":{"pid","start_time"},"outcome":OUTCOME|null,
 *                        "session_id","updated_at_ms","usage":USAGE,
 *                        "version":1}
 *                       just after READY, at most once per second while
 *                       the usage changes, and at the end with the outcome
 *                       (only this one fsynced, and the directory too)
 *                       before ENDED is sent.
 *   DIR/SESSION.log     the keeper's standard error (its rare diagnostics).
 * gloved removes the three once the terminal receipt is recorded.
 *
 * Messages: one per SEQPACKET datagram, at most GLOVE_KEEPER_MSG_MAX bytes:
 * one type byte, then the payload. JSON payloads are one object (jansson,
 * canonical); unknown members are ignored (an upgraded gloved talks to an
 * older keeper: "version" says which).
 *
 * gloved -> keeper
 *   HELLO   'H' {"version":1}; the keeper answers STATE, then TRANSCRIPT,
 *               then streams OUTPUT (and READY/ENDED when they come).
 *   RELEASE 'R' (empty) the agent may start (after READY; again after a
 *               re-adoption of a session recorded running but never
 *               released). A second one is ignored.
 *   INPUT   'I' bytes (1..GLOVE_KEEPER_INPUT_MAX) for the agent's terminal;
 *               gloved never sends more than the credit it holds (STATE's
 *               "input_credit" plus what CREDIT messages returned since).
 *   RESIZE  'Z' {"rows":R,"cols":C} (1..65535)
 *   SIGNAL  'S' {"signal":N} a catchable signal for the agent (through PID 1)
 *   KILL    'K' (empty) SIGKILL for the whole sandbox (outcome "killed")
 *   STOP    'T' {"grace_ms":N} SIGTERM, then SIGKILL after grace_ms
 *               (outcome "stopping")
 *   ABORT   'A' (empty) never release; kill the sandbox at once (outcome
 *               "aborted"); for a start gloved can no longer complete
 *   ACK     'E' (empty) after ENDED: the terminal receipt is recorded; the
 *               keeper exits (status 0) at once
 *
 * keeper -> gloved
 *   STATE      's' {"version":1,"keeper":{"pid","start_time"},
 *                   "phase":"starting"|"ready"|"running"|"ended",
 *                   "identity":IDENTITY|null,"output_offset":N,
 *                   "input_credit":N,"input_closed":BOOL,
 *                   "outcome":OUTCOME|null}
 *   TRANSCRIPT 't' u64 offset (little-endian) of the first byte, then the
 *                  transcript bytes kept (at most
 *                  GLOVE_TERMINAL_TRANSCRIPT_DEFAULT): gloved replaces its
 *                  copy with it
 *   OUTPUT     'o' u64 offset (little-endian) of the first byte in the whole
 *                  output stream, then 1..GLOVE_TERMINAL_CHUNK bytes
 *   READY      'r' IDENTITY: PID 1 is ready and held
 *   CREDIT     'c' {"bytes":N} input the terminal took (credit returned), or
 *                  {"closed":true}: input is closed for good
 *   WARNING    'w' {"code","message"}
 *   ENDED      'e' OUTCOME: the session ended; the keeper holds no process,
 *                  cgroup or PTY any more and waits for ACK (at most
 *                  GLOVE_KEEPER_ACK_WAIT_MS while connected; without a
 *                  connection it exits at once: the status file holds the
 *                  outcome)
 *
 * IDENTITY {"boot_id":UUID,"cgroup":{"dir":ABS,"inode":N},
 *           "keeper":{"pid":N,"start_time":N},"pid":N,"pid_start_time":N}
 *   boot_id from /proc/sys/kernel/random/boot_id; start times are field 22
 *   of /proc/PID/stat (clock ticks after boot); cgroup "dir" is the run
 *   cgroup's directory (v2: the one; v1: the memory hierarchy's) and
 *   "inode" its inode.
 * USAGE    {"cpu_time_ms","output_bytes","peak_memory_bytes","wall_time_ms"}
 * OUTCOME  {"kind":"exited"|"signaled"|"exec_failed"|"lost"|"setup_failed",
 *           "value":N,"limit":NAME|null,"disk_full","stopped","audit_failed",
 *           "audit_full","released","output_cut","killed","stopping",
 *           "aborted" (booleans),"error_code":CODE|null,
 *           "cpu_time_ms","peak_memory_bytes","output_bytes","wall_time_ms"}
 *   limit is the plan's name (glove_keeper_limit_plan_name).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "glove/base/error.h"
#include "glove/session/session.h"

#define GLOVE_KEEPER_VERSION 1
#define GLOVE_KEEPER_MSG_MAX (GLOVE_TERMINAL_CHUNK + 64)
#define GLOVE_KEEPER_INPUT_MAX GLOVE_TERMINAL_INPUT_MAX
#define GLOVE_KEEPER_ACK_WAIT_MS 10000
/* Pending bytes queued towards gloved before the keeper holds the agent's
 * output (glove_terminal_client_hold) until gloved reads. */
#define GLOVE_KEEPER_QUEUE_MAX (1024 * 1024)
/* A session never released within this of READY is stopped (start_failed). */
#define GLOVE_KEEPER_RELEASE_WAIT_MS 60000
/* How often the status file's usage is refreshed at most, ms. */
#define GLOVE_KEEPER_STATUS_MS 1000
/* Most descriptors a keeper holds for its session (glove_keeper_args.hold_fds). */
#define GLOVE_KEEPER_HOLD_FDS_MAX 32
/* Most local-service descriptors a launch carries (glove_keeper_args.service_fds). */
#define GLOVE_KEEPER_SERVICE_FDS_MAX 16
/* Largest glove_keeper_args.services_json, bytes (without its NUL). */
#define GLOVE_KEEPER_SERVICES_JSON_MAX 65536
/* Most descriptors that come with a launch (after its memfd): channel,
 * listen, dir, audit, the held ones, the inherited stream, the services. */
#define GLOVE_KEEPER_LAUNCH_FDS_MAX (5 + GLOVE_KEEPER_HOLD_FDS_MAX + GLOVE_KEEPER_SERVICE_FDS_MAX)

enum glove_keeper_msg {
        GLOVE_KEEPER_HELLO = 'H',
        GLOVE_KEEPER_RELEASE = 'R',
        GLOVE_KEEPER_INPUT = 'I',
        GLOVE_KEEPER_RESIZE = 'Z',
        GLOVE_KEEPER_SIGNAL = 'S',
        GLOVE_KEEPER_KILL = 'K',
        GLOVE_KEEPER_STOP = 'T',
        GLOVE_KEEPER_ABORT = 'A',
        GLOVE_KEEPER_ACK = 'E',
        GLOVE_KEEPER_STATE = 's',
        GLOVE_KEEPER_TRANSCRIPT = 't',
        GLOVE_KEEPER_OUTPUT = 'o',
        GLOVE_KEEPER_READY = 'r',
        GLOVE_KEEPER_CREDIT = 'c',
        GLOVE_KEEPER_WARNING = 'w',
        GLOVE_KEEPER_ENDED = 'e',
};

/* What the keeper is given: in glove-keeper, decoded from its launch
 * (glove_keeper_launch_decode); in a unit test, a fork's own memory. */
struct glove_keeper_args {
        const char *session_id;
        /* The file names' stem (STEM below stands for it where SESSION is
         * written above): "k" and 32 hex of SHA-256(session id), so that a
         * socket path fits sun_path whatever the id. */
        const char *stem;
        /* The complete description of the session; desc->audit (when not
         * NULL) holds the egress audit descriptor the keeper keeps. */
        const struct glove_session_desc *desc;
        int channel_fd;   /* connected SOCK_SEQPACKET to this gloved */
        int listen_fd;    /* bound and listening DIR/SESSION.sock */
        int dir_fd;       /* O_DIRECTORY of DIR */
        /* The run cgroup's parent in the hierarchy named in IDENTITY (the
         * probe's), and whether it is v2. */
        const char *cgroup_parent;
        bool cgroup_v2;
        int64_t (*now_ms)(void);
        /* Descriptors the keeper only holds until its session has ended
         * (the credential leases' locks, supervisor/lease.h): moved to 7..
         * in order, at most GLOVE_KEEPER_HOLD_FDS_MAX, and closed when the
         * sandbox is gone, before ENDED. */
        const int *hold_fds;
        size_t n_hold_fds;
        /* refinement-eval-v1 (docs/refinement.md, "The evaluator"): the
         * fixture's canonical bytes the launch read and checked, or NULL
         * for an ordinary session. The keeper builds the evaluator from
         * them before the session starts (a fixture that does not decode
         * is a start failure with its refinement.* code), feeds it every
         * byte of the terminal's output, and at the end puts the
         * observation (evaluator.h's wire form) in its outcome as
         * "refinement" (null when the evaluator failed). */
        const char *refinement_fixture;
        size_t refinement_fixture_len;
        /* Local services (spec architecture.md, "Historical synthetic
         * status milestone"): an opaque JSON text for the local-service
         * proxy the keeper will run (at most GLOVE_KEEPER_SERVICES_JSON_MAX
         * bytes, NUL-terminated, valid UTF-8; the launch neither parses nor
         * checks it), or NULL for none; and the sockets that go with it
         * (at most GLOVE_KEEPER_SERVICE_FDS_MAX, each a socket; borrowed by
         * the launch, owned by the keeper once moved). The keeper moves them
         * after the inherited stream (below) in order and keeps them open
         * for its whole life; it does not use them yet. The inherited
         * stream itself travels as desc->has_inherit_fd/inherit_fd (an
         * AF_UNIX SOCK_STREAM socket): the keeper moves it too, passes it to
         * glove_session_start (the agent's descriptor 3) and closes its own
         * copy right after. */
        const char *services_json;
        const int *service_fds;
        size_t n_service_fds;
};

/*
 * The keeper's whole life: in glove-keeper after its launch was decoded
 * (glove_keeper_main), or in the child of fork(2) of a single-threaded unit
 * test. Never returns: _exit(0) after ACK or after the
 * end without a connection; _exit(1) when the session could not even start
 * (its ENDED, kind setup_failed, was still sent and written).
 *
 * First: a new session (setsid), the name "glove-keeper", an empty signal
 * mask with SIGPIPE ignored and every other disposition the default,
 * descriptors 0 and 1 on /dev/null and 2 on DIR/SESSION.log, and every other
 * descriptor closed but the four it is given (moved to 3..6: channel,
 * listen, dir, audit; 6 closed without an audit log), the held ones (moved
 * to 7..7+H-1 for H held), then the inherited stream when desc has one (at
 * 7+H; I = 1 then, else 0), then the service descriptors (at 7+H+I..). Then
 * the session starts on a new loop (glove_session_start with desc,
 * parent_death_kill true: PID 1 dies with the keeper), and the keeper closes
 * its copy of the inherited stream.
 */
_Noreturn void glove_keeper_run(const struct glove_keeper_args *a);

/* Field 22 of /proc/PID/stat (start time, clock ticks after boot) into
 * *out. Returns 0, -ESRCH when there is no such process or it is a zombie
 * (state Z or X), or -errno. */
int glove_keeper_proc_start_time(pid_t pid, uint64_t *out);

/* The boot id (/proc/sys/kernel/random/boot_id, 36 characters) into
 * out[37]. Returns 0 or -errno. */
int glove_keeper_boot_id(char out[37]);


/* ---- the executable and its launch (keeper_launch.c) ----
 *
 * gloved finds glove-keeper beside its own executable (the directory of
 * /proc/self/exe: the build tree, a copied bin directory), else in
 * DIR/../libexec/glove/ (meson installs it in LIBEXECDIR/glove); never
 * through PATH. It opens it once at start (glove_keeper_exe_open) and
 * execs that very descriptor (execveat AT_EMPTY_PATH) at each launch, after
 * checking that the file at the path is still the one opened
 * (glove_keeper_exe_check).
 *
 * Stable codes (session start failures; the start_failed receipt carries
 * them):
 *   keeper.missing   no glove-keeper beside gloved or in its libexec/glove,
 *                    or it was removed since gloved started (-ENOENT)
 *   keeper.unsafe    not a regular file, not executable, writable by group
 *                    or others, or owned by neither root nor gloved's uid
 *                    (-EPERM); checked at start and at every launch
 *   keeper.replaced  the file at the path is no longer the one gloved
 *                    verified at start (device, inode, size or
 *                    modification time differ) (-ESTALE)
 *   keeper.launch_unsupported  a session description the launch cannot
 *                    carry (a grant set, a seccomp program that is not one
 *                    of the prebuilt ones, GLOVE_TERMINAL_STDERR, an MCP
 *                    listener, a mount kind the encoder does not know, an
 *                    inherited stream with another filter than
 *                    glove_seccomp_prebuilt_managed_inherited or with
 *                    egress) (-EOPNOTSUPP)
 *   keeper.launch    making the launch failed (memfd, encoding) (-errno)
 *   keeper.fork      fork or exec failed (-errno)
 */
#define GLOVE_KEEPER_EXE_NAME "glove-keeper"
/* Largest launch, bytes: the description (argv and environment at most
 * 1 MiB each in practice) and the mount entries gloved adds (at most
 * GLOVE_MOUNT_PLAN_DATA_MAX bytes of data, base64'd). */
#define GLOVE_KEEPER_LAUNCH_MAX (12U << 20)
/* The launch memfd's descriptor in a new glove-keeper; the launch's other
 * descriptors follow it from GLOVE_KEEPER_LAUNCH_FD + 1 in the order the
 * launch names (channel, listen, dir, audit when present, then held, then
 * the inherited stream when present, then the services). */
#define GLOVE_KEEPER_LAUNCH_FD 3
/* Version of the launch (gloved and glove-keeper come from one build; a
 * keeper refuses another). */
#define GLOVE_KEEPER_LAUNCH_VERSION 1

struct glove_keeper_exe {
        int fd;                    /* O_RDONLY|O_CLOEXEC of the verified file; -1: none */
        char path[4096];           /* where it was found (absolute) */
        dev_t dev;                 /* its identity at open */
        ino_t ino;
        off_t size;
        struct timespec mtime;
        uid_t uid;
        char sha256[65];           /* hex SHA-256 of its content at open */
};

/*
 * Finds (path NULL: beside /proc/self/exe, then ../libexec/glove), opens
 * and verifies glove-keeper into *out (out->fd -1 on failure). path, when
 * given, is absolute. Returns 0 or -errno with keeper.missing or
 * keeper.unsafe. Reads the whole file once (its digest).
 */
int glove_keeper_exe_open(const char *path, struct glove_keeper_exe *out, struct glove_error *err);

/* Whether x is still safe and the file at x->path is still x (fstat of the
 * descriptor, lstat of the path). Returns 0 or -errno with keeper.missing,
 * keeper.unsafe or keeper.replaced. */
int glove_keeper_exe_check(const struct glove_keeper_exe *x, struct glove_error *err);

/* Closes x's descriptor (idempotent). */
void glove_keeper_exe_close(struct glove_keeper_exe *x);

/*
 * Encodes everything of a (and a->desc) that a keeper needs into a new
 * sealed memfd (*memfd, O_CLOEXEC; F_SEAL_WRITE|F_SEAL_GROW|F_SEAL_SHRINK|
 * F_SEAL_SEAL) holding one JSON object (at most GLOVE_KEEPER_LAUNCH_MAX
 * bytes), and lists in fds[0..*n_fds) (room for GLOVE_KEEPER_LAUNCH_FDS_MAX)
 * the descriptors that go with it, in the launch's order. a->services_json
 * travels as a string member; a->service_fds must be sockets and the
 * inherited stream (desc->has_inherit_fd) an AF_UNIX SOCK_STREAM socket
 * (else keeper.launch, -EINVAL; a services_json over
 * GLOVE_KEEPER_SERVICES_JSON_MAX bytes: keeper.launch, -E2BIG). The mount entries
 * of desc->add_mounts are recorded by calling the hook once on an empty
 * plan here; they are replayed in the keeper through the same
 * glove_mount_plan_add_* functions, and checked here by replaying them
 * once (an entry that would not come back equal is
 * keeper.launch_unsupported). Seccomp programs travel by name (the
 * prebuilt ones), the egress policy as its rules' text, a->now_ms not at
 * all (the keeper reads the real clock). Returns 0 or -errno
 * (keeper.launch, keeper.launch_unsupported, the hook's own codes).
 */
int glove_keeper_launch_encode(const struct glove_keeper_args *a, int *memfd, int *fds, size_t *n_fds,
                               struct glove_error *err);

/* A decoded launch: owns the args, the desc and every string of them. */
struct glove_keeper_launch;

/*
 * Decodes text[0..len) (a launch of glove_keeper_launch_encode) whose
 * descriptors are fds[0..n_fds) (borrowed; each checked for its kind:
 * sockets, a directory, a regular file or character device for the audit
 * log, an AF_UNIX SOCK_STREAM socket for the inherited stream, sockets for
 * the services). The decoded args carry services_json (NULL for none) and
 * service_fds; the decoded desc has_inherit_fd/inherit_fd. *out owned by the
 * caller. Returns 0 or -errno (keeper.launch_invalid).
 */
int glove_keeper_launch_decode(const char *text, size_t len, const int *fds, size_t n_fds,
                               struct glove_keeper_launch **out, struct glove_error *err);

/* The args of l (borrowed from l). */
const struct glove_keeper_args *glove_keeper_launch_args(const struct glove_keeper_launch *l);

/* Frees l (NULL: nothing); closes no descriptor. */
void glove_keeper_launch_free(struct glove_keeper_launch *l);

/*
 * Starts the keeper of a: encodes the launch, checks x
 * (glove_keeper_exe_check), then double-forks; the grandchild only moves
 * descriptors (the memfd to GLOVE_KEEPER_LAUNCH_FD, the launch's after it,
 * log_fd (>= 0, borrowed) on 2 and /dev/null on 0 and 1), closes every
 * other one and execs x->fd with argv {"glove-keeper", NULL} and an empty
 * environment. Nothing but async-signal-safe system calls runs between
 * fork and exec. Waits for the exec to have happened (a close-on-exec pipe)
 * or failed. Returns 0 or -errno (keeper.missing, keeper.unsafe,
 * keeper.replaced, keeper.launch*, keeper.fork).
 */
int glove_keeper_spawn(const struct glove_keeper_exe *x, const struct glove_keeper_args *a, int log_fd,
                       struct glove_error *err);

/* glove-keeper's main: reads its launch from GLOVE_KEEPER_LAUNCH_FD and
 * runs it (glove_keeper_run). A launch that cannot be read or decoded is
 * written to standard error (the keeper's log) and ends the process with
 * status 1 (gloved then sees its channel close: keeper.lost). */
_Noreturn void glove_keeper_main(void);

/*
 * The run cgroup's path in the text of /proc/PID/cgroup (text NUL-terminated
 * at len): v2 the "0::PATH" line; v1 the line whose controller list names
 * "memory". *path points into text at the path, *path_len its length.
 * Returns 0, or -ENOENT when there is no such line.
 */
int glove_keeper_parse_cgroup(const char *text, size_t len, bool v2, const char **path, size_t *path_len);

/* The plan's limit name for a cgroup/session limit: "cpu_time_ms",
 * "memory_bytes", "pids", "wall_time_ms", "terminal_output_bytes"; NULL for
 * NONE. (disk_bytes comes from the disk-full flag, not from this enum.) */
const char *glove_keeper_limit_plan_name(enum glove_cgroup_limit limit);

#define GLOVE_KEEPER_GRACE_MAX_MS 600000
