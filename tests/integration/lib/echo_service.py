#!/usr/bin/python3
"""echo_service.py: a host service for the local-service tests
(tests/integration/local_services.bats; docs/local-services.md).

    echo_service.py SOCKET LOG

Listens on the Unix stream socket SOCKET (created mode 0600; its directory
must exist) and serves each connection: it reads one 4-byte big-endian
length-prefixed request and answers one response frame, then closes. It
appends one line per request to LOG ("request TEXT"), so that a test can
tell whether the proxy ever reached it. What it answers:

    sleep:MS[:TEXT]   waits MS milliseconds, then answers "echo:TEXT"
    big               answers 16385 bytes (one more than a frame may hold)
    anything else     answers "echo:" followed by the request

It runs until killed.
"""
import os
import socket
import sys
import threading
import time


def read_exact(c, n):
    out = b""
    while len(out) < n:
        chunk = c.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def serve(c, log):
    with c:
        head = read_exact(c, 4)
        if head is None:
            return
        body = read_exact(c, int.from_bytes(head, "big"))
        if body is None:
            return
        text = body.decode("utf-8", "replace")
        with open(log, "a") as f:
            f.write("request %s\n" % text)
        if text.startswith("sleep:"):
            parts = text.split(":", 2)
            time.sleep(int(parts[1]) / 1000)
            answer = ("echo:" + (parts[2] if len(parts) > 2 else "")).encode()
        elif text == "big":
            answer = b"x" * 16385
        else:
            answer = b"echo:" + body
        try:
            c.sendall(len(answer).to_bytes(4, "big") + answer)
        except OSError:
            pass


def main():
    path, log = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    s.bind(path)
    os.umask(old)
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, log), daemon=True).start()


if __name__ == "__main__":
    main()
