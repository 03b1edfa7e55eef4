/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-mcp-stdio: the in-sandbox MCP server command of `glove run
 * --mcp-endpoint command` (docs/mcp-mediation.md, "Endpoints"). Glove mounts
 * it at /run/glove/mcp-stdio and names it in GLOVE_MCP_COMMAND; an agent
 * starts it as a stdio MCP server, once per client session.
 *
 * It connects to the endpoint's listener on the sandbox's own loopback (the
 * port is read from /run/glove/mcp-endpoint, so it works whatever
 * environment the agent gives it), sends the preface line
 * "GLOVE-MCP-STDIO/1", reads Glove's answer ("OK", or "ERR CODE TEXT": then
 * it prints "glove-mcp-stdio: CODE: TEXT" to stderr and exits 1), and then
 * relays bytes: stdin to the connection, the connection to stdout. At the end
 * of stdin it half-closes and waits for Glove to finish; it exits 0 when the
 * connection ends, 1 on an error. Glove frames and checks the lines; this
 * program only moves bytes. It needs nothing but libc.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ENDPOINT_FILE "/run/glove/mcp-endpoint"
#define PREFACE "GLOVE-MCP-STDIO/1\n"
#define CHUNK 65536

static int fail(const char *what) {
        fprintf(stderr, "glove-mcp-stdio: %s: %s\n", what, strerror(errno));
        return 1;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static int read_port(unsigned *port) {
        FILE *f = fopen(ENDPOINT_FILE, "re");
        if (!f)
                return -1;
        int ok = fscanf(f, "%u", port) == 1 && *port > 0 && *port < 65536;
        fclose(f);
        if (!ok)
                errno = EINVAL;
        return ok ? 0 : -1;
}

/* Glove's answer to the preface: one line. Bytes after it are relayed. */
static int handshake(int sock, char *rest, size_t *rest_len) {
        char buf[512];
        size_t len = 0;
        for (;;) {
                ssize_t n = read(sock, buf + len, sizeof(buf) - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        fprintf(stderr, "glove-mcp-stdio: the endpoint closed the connection\n");
                        return -1;
                }
                len += (size_t)n;
                char *nl = memchr(buf, '\n', len);
                if (!nl) {
                        if (len == sizeof(buf) - 1) {
                                fprintf(stderr, "glove-mcp-stdio: unexpected answer from the endpoint\n");
                                return -1;
                        }
                        continue;
                }
                *nl = '\0';
                if (strcmp(buf, "OK") != 0) {
                        const char *text = strncmp(buf, "ERR ", 4) == 0 ? buf + 4 : buf;
                        const char *sp = strchr(text, ' ');
                        if (sp)
                                fprintf(stderr, "glove-mcp-stdio: %.*s: %s\n", (int)(sp - text), text, sp + 1);
                        else
                                fprintf(stderr, "glove-mcp-stdio: refused: %s\n", text);
                        return -1;
                }
                *rest_len = len - (size_t)(nl + 1 - buf);
                memcpy(rest, nl + 1, *rest_len);
                return 0;
        }
}

int main(int argc, char **argv) {
        (void)argv;
        if (argc > 1) {
                fprintf(stderr, "usage: glove-mcp-stdio (no arguments; run inside `glove run --mcp-endpoint command`)\n");
                return 2;
        }
        unsigned port = 0;
        if (read_port(&port) < 0)
                return fail("reading " ENDPOINT_FILE " (is this inside glove run --mcp-endpoint command?)");
        int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sock < 0)
                return fail("socket");
        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int one = 1;
        (void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* each line out at once */
        if (connect(sock, (struct sockaddr *)&sin, sizeof(sin)) < 0)
                return fail("connecting to the endpoint");
        if (write_all(sock, PREFACE, strlen(PREFACE)) < 0)
                return fail("writing the preface");
        static char buf[CHUNK];
        size_t rest = 0;
        if (handshake(sock, buf, &rest) < 0)
                return 1;
        if (rest && write_all(1, buf, rest) < 0)
                return fail("writing stdout");
        int in_open = 1;
        for (;;) {
                struct pollfd p[2] = {{.fd = in_open ? 0 : -1, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail("poll");
                }
                if (p[1].revents) {
                        ssize_t n = read(sock, buf, sizeof(buf));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                return n < 0 ? fail("reading the endpoint") : 0;
                        if (write_all(1, buf, (size_t)n) < 0)
                                return fail("writing stdout");
                }
                if (in_open && p[0].revents) {
                        ssize_t n = read(0, buf, sizeof(buf));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                in_open = 0;
                                shutdown(sock, SHUT_WR);
                                continue;
                        }
                        if (write_all(sock, buf, (size_t)n) < 0)
                                return fail("writing the endpoint");
                }
        }
}
