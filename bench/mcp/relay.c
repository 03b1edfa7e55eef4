/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-bench-relay: the floor of any mediator, for the glove run benchmark
 * (bench/mcp/mcp_bench.py, mode "relay"). Runs ARGV (the upstream) with two
 * pipes as its stdin and stdout, and copies bytes from its own stdin to the
 * upstream's and from the upstream's stdout to its own, as they come: one
 * epoll_wait, one read and one write per chunk, nothing parsed, no sandbox.
 * What it adds to a round trip is what two more pipe hops and two more
 * process wake-ups cost on this machine, which no process in the middle
 * avoids. Once either side reaches end of file, the upstream's stdin is
 * closed, it is sent SIGTERM and reaped, and the relay exits with its
 * status.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes all of buf to fd (a blocking pipe). Returns 0 or -1. */
static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: glove-bench-relay PROGRAM [ARG...]\n");
                return 2;
        }
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
                perror("glove-bench-relay: pipe");
                return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
                perror("glove-bench-relay: fork");
                return 1;
        }
        if (pid == 0) {
                if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
                        _exit(127);
                execvp(argv[1], argv + 1);
                perror("glove-bench-relay: exec");
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        signal(SIGPIPE, SIG_IGN);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event a = {.events = EPOLLIN, .data.fd = 0}, b = {.events = EPOLLIN, .data.fd = out[0]};
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &a) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, out[0], &b) < 0) {
                perror("glove-bench-relay: epoll");
                return 1;
        }
        static char buf[65536];
        for (;;) {
                struct epoll_event ev[2];
                int n = epoll_wait(ep, ev, 2, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                int done = 0;
                for (int i = 0; i < n; i++) {
                        int from = ev[i].data.fd, to = from == 0 ? in[1] : 1;
                        ssize_t r = read(from, buf, sizeof(buf));
                        if (r < 0 && errno == EINTR)
                                continue;
                        if (r <= 0 || write_all(to, buf, (size_t)r) < 0)
                                done = 1;
                }
                if (done)
                        break;
        }
        close(in[1]);
        kill(pid, SIGTERM); /* an SDK server may not end at the end of its input */
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
