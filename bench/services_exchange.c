/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-bench-services: what the local-service proxy costs an exchange
 * (make bench; docs/local-services.md). Never asserts a time.
 *
 *   glove-bench-services DIR [--exchanges N] [--size BYTES]...
 *
 * One echo upstream (a thread: one framed request, the same bytes back,
 * close) listens at DIR/up/echo.sock (DIR/up is made 0700; DIR must exist
 * and be this user's). Three clients exchange frames of each --size
 * (1..16384 bytes; default 64 and 16384) with it, one exchange of each in
 * turn per round so that the three see the same machine:
 *   direct   connect, one request frame, one response frame, close: what
 *            the proxy itself does on its upstream leg;
 *   tmpfs    through a proxy on the inherited-stream-v1 socket pair
 *            (glove_services_proxy_start, the keeper's code), its audit
 *            file on /dev/shm (the three-phase audit without a disk);
 *   disk     the same with its audit file in DIR (delivery_pending's
 *            fdatasync on DIR's file system, as a session's audit file
 *            under the materialization root).
 * After 20 warm-up rounds, N rounds (default 500). Prints per size the
 * median and p90 of each in microseconds and the proxy/direct ratios, and
 * one JSON line per size on standard output after the table
 * ({"bench":"services_exchange",...}). Exits 1 when an exchange fails
 * (printing its code), 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "glove/base/error.h"
#include "glove/base/time.h"
#include "glove/services/endpoint.h"
#include "glove/services/frame.h"
#include "glove/services/proxy.h"

#define WARMUP 20
#define MAX_SIZES 8
#define DEADLINE_MS 5000

static uint8_t ubuf[GLOVE_SERVICES_FRAME_MAX];

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, const struct glove_error *err) {
        fprintf(stderr, "glove-bench-services: %s: %s: %s\n", what, err && err->code ? err->code : "error",
                err ? err->message : strerror(errno));
        exit(1);
}

/* The echo upstream: accepts until the listener is shut down. */
static void *upstream(void *arg) {
        int lfd = *(int *)arg;
        for (;;) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return NULL;
                }
                struct glove_error err = { 0 };
                size_t n = 0;
                uint64_t dl = glove_time_monotonic_ms() + DEADLINE_MS;
                if (glove_services_frame_read(c, -1, dl, ubuf, &n, &err) == 0)
                        (void)glove_services_frame_write(c, -1, dl, ubuf, n, &err);
                close(c);
        }
}

/* The address of path (shorter than sun_path: main checks it). */
static struct sockaddr_un unix_address(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        memcpy(sa.sun_path, path, strlen(path) + 1);
        return sa;
}

static int connect_path(const char *path) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = unix_address(path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                die("connecting the upstream", NULL);
        return fd;
}

/* One exchange on fd (a connected stream): request out, response in, the
 * response checked to be the request. */
static void exchange(int fd, const uint8_t *req, size_t len, const char *who) {
        static uint8_t resp[GLOVE_SERVICES_FRAME_MAX];
        struct glove_error err = { 0 };
        size_t n = 0;
        uint64_t dl = glove_time_monotonic_ms() + DEADLINE_MS;
        if (glove_services_frame_write(fd, -1, dl, req, len, &err) < 0 ||
            glove_services_frame_read(fd, -1, dl, resp, &n, &err) < 0)
                die(who, &err);
        if (n != len || memcmp(resp, req, len) != 0) {
                fprintf(stderr, "glove-bench-services: %s: the response is not the request\n", who);
                exit(1);
        }
}

struct proxied {
        struct glove_services_proxy *proxy;
        int guest;
};

static struct proxied proxy_up(const char *sock, const char *audit) {
        struct glove_error err = { 0 };
        struct glove_services_endpoint *ep = NULL;
        int sup = -1, guest = -1;
        if (glove_services_endpoint_pin(sock, geteuid(), &ep, &err) < 0)
                die("pinning the upstream", &err);
        if (glove_services_inherited_pair(&sup, &guest, &err) < 0)
                die("the socket pair", &err);
        int afd = open(audit, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (afd < 0)
                die(audit, NULL);
        struct glove_services_route route = { .alias = "echo", .upstream = ep, .guest_fd = sup };
        struct glove_services_proxy_config c = {
                .session_id = "bench",
                .transport = GLOVE_SERVICES_TRANSPORT_INHERITED,
                .routes = &route,
                .n_routes = 1,
                .service_uid = geteuid(),
                .audit_fd = afd,
                .exchange_timeout_ms = DEADLINE_MS,
        };
        struct proxied p = { .guest = guest };
        if (glove_services_proxy_start(&c, &p.proxy, &err) < 0)
                die("starting the proxy", &err);
        return p;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p) {
        qsort(v, n, sizeof(*v), cmp);
        size_t i = (size_t)(p * (double)(n - 1) + 0.5);
        return v[i];
}

int main(int argc, char **argv) {
        long rounds = 500;
        size_t sizes[MAX_SIZES], n_sizes = 0;
        static const struct option opts[] = { { "exchanges", required_argument, 0, 'n' },
                                               { "size", required_argument, 0, 's' },
                                               { 0, 0, 0, 0 } };
        int o;
        while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                char *end;
                long v;
                switch (o) {
                case 'n':
                        rounds = strtol(optarg, &end, 10);
                        if (*end || rounds < 1 || rounds > 1000000)
                                goto usage;
                        break;
                case 's':
                        v = strtol(optarg, &end, 10);
                        if (*end || v < 1 || v > GLOVE_SERVICES_FRAME_MAX || n_sizes == MAX_SIZES)
                                goto usage;
                        sizes[n_sizes++] = (size_t)v;
                        break;
                default:
                        goto usage;
                }
        }
        if (optind != argc - 1)
                goto usage;
        if (n_sizes == 0) {
                sizes[n_sizes++] = 64;
                sizes[n_sizes++] = GLOVE_SERVICES_FRAME_MAX;
        }
        const char *dir = argv[optind];
        char up[4096], sock[4200], disk_audit[4200], shm_audit[128];
        if (strlen(dir) > 2048) {
                fprintf(stderr, "glove-bench-services: the directory's path is too long\n");
                return 2;
        }
        snprintf(up, sizeof(up), "%s/up", dir);
        snprintf(sock, sizeof(sock), "%s/echo.sock", up);
        snprintf(disk_audit, sizeof(disk_audit), "%s/audit.jsonl", dir);
        snprintf(shm_audit, sizeof(shm_audit), "/dev/shm/glove-bench-services-%ld.jsonl", (long)getpid());
        if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
                fprintf(stderr, "glove-bench-services: %s is too long for a socket path\n", sock);
                return 2;
        }
        if ((mkdir(up, 0700) < 0 && errno != EEXIST) || chmod(up, 0700) < 0)
                die(up, NULL);
        (void)unlink(sock);
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = unix_address(sock);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sock, 0600) < 0 ||
            listen(lfd, 64) < 0)
                die(sock, NULL);
        pthread_t th;
        if (pthread_create(&th, NULL, upstream, &lfd) != 0)
                die("the upstream thread", NULL);

        struct proxied tmpfs = proxy_up(sock, shm_audit), disk = proxy_up(sock, disk_audit);
        double *t[3];
        for (int k = 0; k < 3; k++)
                if (!(t[k] = calloc((size_t)rounds, sizeof(double))))
                        die("memory", NULL);
        static uint8_t req[GLOVE_SERVICES_FRAME_MAX];
        printf("%-6s %10s %10s %10s %10s %10s %10s %8s %8s\n", "bytes", "direct", "p90", "tmpfs", "p90", "disk",
               "p90", "tmpfs/d", "disk/d");
        char json[MAX_SIZES][512];
        for (size_t si = 0; si < n_sizes; si++) {
                size_t len = sizes[si];
                for (size_t i = 0; i < len; i++)
                        req[i] = (uint8_t)('a' + (i + si) % 26);
                for (long r = -WARMUP; r < rounds; r++) {
                        double a = now_us();
                        int fd = connect_path(sock);
                        exchange(fd, req, len, "direct");
                        close(fd);
                        double b = now_us();
                        exchange(tmpfs.guest, req, len, "through the proxy (audit on tmpfs)");
                        double c = now_us();
                        exchange(disk.guest, req, len, "through the proxy (audit on disk)");
                        double d = now_us();
                        if (r >= 0) {
                                t[0][r] = b - a;
                                t[1][r] = c - b;
                                t[2][r] = d - c;
                        }
                }
                double med[3], p90[3];
                for (int k = 0; k < 3; k++) {
                        med[k] = pct(t[k], (size_t)rounds, 0.5);
                        p90[k] = pct(t[k], (size_t)rounds, 0.9);
                }
                printf("%-6zu %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f\n", len, med[0], p90[0], med[1],
                       p90[1], med[2], p90[2], med[1] / med[0], med[2] / med[0]);
                snprintf(json[si], sizeof(json[si]),
                         "{\"bench\":\"services_exchange\",\"bytes\":%zu,\"exchanges\":%ld,"
                         "\"direct_median_us\":%.1f,\"direct_p90_us\":%.1f,\"tmpfs_median_us\":%.1f,"
                         "\"tmpfs_p90_us\":%.1f,\"disk_median_us\":%.1f,\"disk_p90_us\":%.1f,"
                         "\"tmpfs_ratio\":%.3f,\"disk_ratio\":%.3f}",
                         len, rounds, med[0], p90[0], med[1], p90[1], med[2], p90[2], med[1] / med[0],
                         med[2] / med[0]);
        }
        printf("(microseconds per exchange, medians and p90 of %ld rounds; tmpfs and disk: through the proxy, its "
               "audit file on /dev/shm and in %s)\n",
               rounds, dir);
        for (size_t si = 0; si < n_sizes; si++)
                printf("%s\n", json[si]);
        for (int k = 0; k < 3; k++)
                free(t[k]);
        close(tmpfs.guest);
        close(disk.guest);
        glove_services_proxy_stop(tmpfs.proxy);
        glove_services_proxy_stop(disk.proxy);
        shutdown(lfd, SHUT_RDWR);
        close(lfd);
        (void)unlink(sock);
        (void)unlink(shm_audit);
        return 0;
usage:
        fprintf(stderr, "usage: glove-bench-services DIR [--exchanges N (1..1000000)] [--size BYTES (1..16384)]... "
                        "(at most 8 sizes)\n");
        return 2;
}
