/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-bench-pty-read: the bare-PTY baseline of the attach benchmark
 * (bench/managed.py). Opens a pseudo-terminal whose slave keeps the
 * kernel's default modes (as a managed session's does), runs ARGV with the
 * slave as its standard output and reads the master here in 64 KiB reads
 * until end of output (EIO once the slave is closed), counting the bytes.
 * Prints one JSON line: {"bytes":N,"reads":R,"first_to_last_ns":T}
 * (T from the first byte read to the last). No relay, no encoding: what the
 * PTY alone gives a C reader.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: glove-bench-pty-read PROGRAM [ARG...]\n");
                return 2;
        }
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
                perror("glove-bench-pty-read: posix_openpt");
                return 1;
        }
        int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (s < 0) {
                perror("glove-bench-pty-read: TIOCGPTPEER");
                return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
                perror("glove-bench-pty-read: fork");
                return 1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(s, 1) < 0)
                        _exit(127);
                execv(argv[1], argv + 1);
                _exit(127);
        }
        close(s);
        static char buf[65536];
        uint64_t got = 0, reads = 0, first = 0, last = 0;
        for (;;) {
                ssize_t n = read(m, buf, sizeof(buf));
                if (n <= 0)
                        break;
                last = now_ns();
                if (!got)
                        first = last;
                got += (uint64_t)n;
                reads++;
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("{\"bytes\":%llu,\"reads\":%llu,\"first_to_last_ns\":%llu}\n", (unsigned long long)got,
               (unsigned long long)reads, (unsigned long long)(last - first));
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
