#!/usr/bin/python3
"""rexec.py: a frame client of glove-remote-executor --stdio
(docs/remote-executor.md), for tests/integration/remote_executor.bats.

    rexec.py ITEM... -- COMMAND [ARG...]

Starts COMMAND with pipes on its stdin, stdout and stderr and does each
ITEM in turn:

    JSON            a JSON text sent as one frame (4-byte big-endian length,
                    then the text's UTF-8 bytes as given)
    body:TEXT       TEXT sent as one frame as it is (for malformed bodies)
    raw:HEX         bytes sent as they are, no length prefix added
    split:MS:JSON   the frame of JSON in two writes: its length prefix, then
                    after a wait of MS milliseconds its body (the wait is a
                    test input, not a measurement)
    read            waits for one response frame and prints it
    status:FIELD    prints the line "FIELD: ..." of COMMAND's
                    /proc/PID/status (e.g. status:Umask), as it is now

Then closes COMMAND's stdin, prints every response frame still coming until
its stdout ends, and last "exit N" (N its exit status) and one line
"stderr: LINE" per line it wrote on stderr. A response is printed as
compact JSON with sorted keys; bytes that are not a whole frame before the
end are printed as "partial N" (N bytes). Writes to a COMMAND that has
exited are ignored (it may end the channel before all items are sent).
Every wait is bounded (TIMEOUT seconds in all): on expiry, "TIMEOUT" is
printed, COMMAND is killed, and the exit status is 3.
"""
import json
import os
import select
import subprocess
import sys
import threading
import time

TIMEOUT = 20.0


def frame(body):
    return len(body).to_bytes(4, "big") + body


class Client:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.deadline = time.monotonic() + TIMEOUT
        self.buf = b""
        self.eof = False
        self.err = []
        self.t = threading.Thread(target=self._stderr, daemon=True)
        self.t.start()

    def _stderr(self):
        self.err = self.p.stderr.read().decode("utf-8", "replace").splitlines()

    def send(self, data):
        try:
            self.p.stdin.write(data)
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _fill(self, n):
        """Reads stdout until buf holds n bytes or the end; False on timeout."""
        fd = self.p.stdout.fileno()
        while len(self.buf) < n and not self.eof:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return False
            chunk = os.read(fd, 65536)
            if not chunk:
                self.eof = True
            self.buf += chunk
        return True

    def read_frame(self):
        """Returns the printed form of the next frame, None at a clean end."""
        if not self._fill(4):
            return "TIMEOUT"
        if len(self.buf) < 4:
            return None if not self.buf else "partial %d" % len(self.buf)
        n = int.from_bytes(self.buf[:4], "big")
        if not self._fill(4 + n):
            return "TIMEOUT"
        if len(self.buf) < 4 + n:
            return "partial %d" % len(self.buf)
        body, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        return json.dumps(json.loads(body), separators=(",", ":"), sort_keys=True)


def main(argv):
    if "--" not in argv:
        sys.stderr.write("usage: rexec.py ITEM... -- COMMAND [ARG...]\n")
        return 2
    cut = argv.index("--")
    items, command = argv[:cut], argv[cut + 1:]
    c = Client(command)
    for item in items:
        if item == "read":
            out = c.read_frame()
            print(out if out is not None else "EOF", flush=True)
            if out == "TIMEOUT":
                c.p.kill()
                return 3
        elif item.startswith("status:"):
            field = item[7:] + ":"
            with open("/proc/%d/status" % c.p.pid) as fh:
                for line in fh:
                    if line.startswith(field):
                        print(" ".join(line.split()), flush=True)
        elif item.startswith("raw:"):
            c.send(bytes.fromhex(item[4:]))
        elif item.startswith("body:"):
            c.send(frame(item[5:].encode()))
        elif item.startswith("split:"):
            _, ms, text = item.split(":", 2)
            body = text.encode()
            c.send(len(body).to_bytes(4, "big"))
            time.sleep(int(ms) / 1000.0)
            c.send(body)
        else:
            c.send(frame(item.encode()))
    try:
        c.p.stdin.close()
    except BrokenPipeError:
        pass
    while True:
        out = c.read_frame()
        if out is None:
            break
        print(out, flush=True)
        if out == "TIMEOUT":
            c.p.kill()
            return 3
        if out.startswith("partial"):
            break
    try:
        status = c.p.wait(max(0.1, c.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        print("TIMEOUT")
        c.p.kill()
        return 3
    c.t.join()
    print("exit %d" % status)
    for line in c.err:
        print("stderr: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
