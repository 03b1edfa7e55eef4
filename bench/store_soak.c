/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-bench-store-soak: the session store and receipt journal of gloved
 * alone (no sandboxes) under a long run (make bench; docs/recovery.md,
 * "Compaction").
 *
 *   glove-bench-store-soak DIR [--sessions N] [--every K] [--live L]
 *
 * Creates L live sessions first (1 KiB plans; they stay created), then N
 * sessions that each go through every transition (preparing, starting,
 * running with a runtime identity, stopping, exited), get a terminal
 * receipt, whose acknowledgement follows, and are cleaned up; gloved's
 * retention rule and automatic compaction do the rest. Every K sessions it
 * closes and reopens both journals and prints one JSON line: RSS, open
 * descriptors, journal and checkpoint bytes, live sessions, and the time of
 * the reopen (replay of checkpoint and journal tail). DIR must be an
 * existing empty directory (mode 0700). Never asserts a time.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "glove/base/digest.h"
#include "glove/store/receipts.h"
#include "glove/store/store.h"

#define CDIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long rss_kib(void) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
                        break;
        if (f)
                fclose(f);
        return v;
}

static int open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        for (struct dirent *e; d && (e = readdir(d));)
                n += e->d_name[0] != '.';
        if (d)
                closedir(d);
        return n - 1; /* the directory stream itself */
}

static long long file_bytes(const char *dir, const char *name) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

static void die(const char *what, const struct glove_error *e) {
        fprintf(stderr, "store-soak: %s: %s: %s\n", what, e->code ? e->code : "?", e->message);
        exit(1);
}

static bool retire(void *ctx, const struct glove_store_session *s) {
        return !glove_store_receipts_pending(ctx, s->session_id);
}

struct bench {
        const char *dir;
        char store_path[4096];
        struct glove_store *store;
        struct glove_store_receipts *receipts;
        char plan[1200];
        char plan_digest[65];
        int64_t t;
};

static double reopen(struct bench *b, double *cpu) {
        struct glove_error e = { 0 };
        glove_store_close(b->store);
        glove_store_receipts_close(b->receipts);
        b->store = NULL;
        b->receipts = NULL;
        double t0 = now_ms(), c0 = cpu_ms();
        if (glove_store_open(b->store_path, geteuid(), &b->store, NULL, &e) < 0)
                die("open the store", &e);
        struct glove_store_receipts_options ro = { .state_dir = b->dir, .owner = geteuid() };
        if (glove_store_receipts_open(&ro, &b->receipts, &e) < 0)
                die("open the receipts", &e);
        double t1 = now_ms();
        *cpu = cpu_ms() - c0;
        glove_store_set_retention(b->store, retire, b->receipts);
        return t1 - t0;
}

static void create(struct bench *b, const char *id) {
        struct glove_error e = { 0 };
        const struct glove_store_session *s;
        bool replayed;
        struct glove_store_create q = { .session_id = id, .idempotency_key = id,
                                                .controller_plan_digest = CDIGEST,
                                                .plan_content_digest = b->plan_digest, .plan = b->plan,
                                                .plan_len = strlen(b->plan), .now_ms = b->t++ };
        if (glove_store_create(b->store, &q, &s, &replayed, &e) < 0)
                die("create", &e);
}

static void one_session(struct bench *b, unsigned long i) {
        static const enum glove_store_session_state path[] = { GLOVE_STORE_SESSION_PREPARING,
                                                                 GLOVE_STORE_SESSION_STARTING,
                                                                 GLOVE_STORE_SESSION_RUNNING,
                                                                 GLOVE_STORE_SESSION_STOPPING,
                                                                 GLOVE_STORE_SESSION_EXITED };
        static const char runtime[] = "{\"boot_id\":\"0f0e0d0c\",\"cgroup_id\":4242,\"pid\":1234,\"start_time\":99}";
        struct glove_error e = { 0 };
        char id[64];
        bool appended;
        snprintf(id, sizeof(id), "soak-%lu", i);
        create(b, id);
        for (size_t k = 0; k < sizeof(path) / sizeof(path[0]); k++) {
                bool running = path[k] == GLOVE_STORE_SESSION_RUNNING;
                if (glove_store_transition_runtime(b->store, id, path[k], running ? "" : "session.ended", b->t++,
                                                           running ? runtime : NULL, running ? strlen(runtime) : 0,
                                                           &appended, &e) < 0)
                        die("transition", &e);
        }
        json_t *receipt = json_pack("{s:s,s:I,s:s}", "state", "exited", "cpu_time_ms", (json_int_t)i, "termination",
                                    "exited");
        if (glove_store_receipts_append(b->receipts, "session.terminal", id, receipt, b->t++, NULL, &e) < 0)
                die("receipt", &e);
        json_decref(receipt);
        uint8_t head[32];
        char hex[65];
        uint64_t seq = glove_store_receipts_head(b->receipts, head);
        glove_digest_hex_encode(head, 32, hex, sizeof(hex));
        if (glove_store_receipts_ack(b->receipts, seq, hex, &e) < 0)
                die("acknowledge", &e);
        if (glove_store_cleanup(b->store, id, b->t++, &appended, &e) < 0)
                die("cleanup", &e);
}

static void report(struct bench *b, unsigned long done, unsigned long live, double started) {
        double cpu = 0, replay = reopen(b, &cpu);
        uint8_t head[32];
        printf("{\"bench\":\"store_soak\",\"live_sessions_created\":%lu,\"ended_sessions\":%lu,\"elapsed_s\":%.1f,"
               "\"replay_ms\":%.2f,\"replay_cpu_ms\":%.2f,\"rss_kib\":%ld,\"open_fds\":%d,\"store_sessions\":%zu,\"store_records\":%llu,"
               "\"store_journal_bytes\":%lld,\"store_checkpoint_bytes\":%lld,\"receipts_journal_bytes\":%lld,"
               "\"receipts_checkpoint_bytes\":%lld,\"receipts_head\":%llu}\n",
               live, done, (now_ms() - started) / 1e3, replay, cpu, rss_kib(), open_fds(),
               glove_store_sessions(b->store), (unsigned long long)glove_store_records(b->store),
               file_bytes(b->dir, "sessions.journal"), file_bytes(b->dir, "sessions.journal.ckpt"),
               file_bytes(b->dir, "receipts.journal"), file_bytes(b->dir, "receipts.journal.ckpt"),
               (unsigned long long)glove_store_receipts_head(b->receipts, head));
        fflush(stdout);
}

int main(int argc, char **argv) {
        unsigned long sessions = 1000000, every = 100000, live = 0;
        static const struct option opts[] = { { "sessions", required_argument, NULL, 's' },
                                               { "every", required_argument, NULL, 'e' },
                                               { "live", required_argument, NULL, 'l' },
                                               { NULL, 0, NULL, 0 } };
        for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
                if (c == 's')
                        sessions = strtoul(optarg, NULL, 10);
                else if (c == 'e')
                        every = strtoul(optarg, NULL, 10);
                else if (c == 'l')
                        live = strtoul(optarg, NULL, 10);
                else
                        return 2;
        }
        if (optind != argc - 1 || every == 0) {
                fprintf(stderr, "usage: glove-bench-store-soak DIR [--sessions N] [--every K] [--live L]\n");
                return 2;
        }
        struct bench b = { .dir = argv[optind], .t = 1764000000000 };
        snprintf(b.store_path, sizeof(b.store_path), "%s/sessions.journal", b.dir);
        /* A 1 KiB canonical plan. */
        int n = snprintf(b.plan, sizeof(b.plan), "{\"padding\":\"");
        while (n < 1000)
                b.plan[n++] = 'x';
        snprintf(b.plan + n, sizeof(b.plan) - (size_t)n, "\",\"runtime_id\":\"bench\",\"schema_version\":1}");
        uint8_t d[32];
        glove_digest_sha256(b.plan, strlen(b.plan), d, NULL);
        glove_digest_hex_encode(d, 32, b.plan_digest, sizeof(b.plan_digest));
        double cpu;
        reopen(&b, &cpu);
        double started = now_ms();
        for (unsigned long i = 0; i < live; i++) {
                char id[64];
                snprintf(id, sizeof(id), "live-%lu", i);
                create(&b, id);
        }
        report(&b, 0, live, started);
        for (unsigned long i = 1; i <= sessions; i++) {
                one_session(&b, i);
                if (i % every == 0)
                        report(&b, i, live, started);
        }
        glove_store_close(b.store);
        glove_store_receipts_close(b.receipts);
        return 0;
}
