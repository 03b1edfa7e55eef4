#!/usr/bin/python3
"""rexec.py: a frame client of glove-remote-executor --stdio
(docs/remote-executor.md), for tests/integration/remote_executor.bats.

    rexec.py [--hold=pipe|--hold=socket] ITEM... -- COMMAND [ARG...]

Starts COMMAND with pipes on its stdin, stdout and stderr and does each
ITEM in turn. With --hold, COMMAND's stdin and stdout are instead pipes
(--hold=pipe) or stream sockets (--hold=socket) of which this client also
holds COMMAND's own ends (the same open file descriptions), as a wrapper
script or a pipeline would: their file-status flags (F_GETFL) are taken
before COMMAND starts and compared once it has exited.

Items:

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
    flags           (--hold) prints "stdout: O_NONBLOCK" or "stdout:
                    blocking": the held stdout description, as it is now
    signal:NAME     sends signal SIGNAME (e.g. signal:TERM) to COMMAND

Then closes COMMAND's stdin, prints every response frame still coming until
its stdout ends (with --hold: after COMMAND has exited and the held ends
are closed), and last "exit N" (N its exit status; "signal NAME" when a
signal ended it), with --hold the lines "stdin flags: unchanged" and
"stdout flags: unchanged" (or "... changed from 0xA to 0xB"), and one line
"stderr: LINE" per line it wrote on stderr. A response is printed as
compact JSON with sorted keys; bytes that are not a whole frame before the
end are printed as "partial N" (N bytes). Writes to a COMMAND that has
exited are ignored (it may end the channel before all items are sent).
Every wait is bounded (TIMEOUT seconds in all): on expiry, "TIMEOUT" is
printed, COMMAND is killed, and the exit status is 3.
"""
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

TIMEOUT = 20.0


def frame(body):
    return len(body).to_bytes(4, "big") + body


def channel(kind):
    """A (read end, write end) pair of descriptors: a pipe or a stream socket pair."""
    if kind == "pipe":
        return os.pipe()
    a, b = socket.socketpair()
    return a.detach(), b.detach()


class Client:
    def __init__(self, argv, hold=None):
        self.held = {}
        if hold is None:
            self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.w = self.p.stdin
            self.rfd = self.p.stdout.fileno()
        else:
            in_r, in_w = channel(hold)
            out_r, out_w = channel(hold)
            self.held = {"stdin": in_r, "stdout": out_w}
            self.before = {k: fcntl.fcntl(fd, fcntl.F_GETFL) for k, fd in self.held.items()}
            self.p = subprocess.Popen(argv, stdin=in_r, stdout=out_w, stderr=subprocess.PIPE)
            self.w = os.fdopen(in_w, "wb")
            self.rfd = out_r
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
            self.w.write(data)
            self.w.flush()
        except (BrokenPipeError, ValueError):
            pass

    def close_input(self):
        try:
            self.w.close()
        except BrokenPipeError:
            pass

    def flags_report(self):
        """The lines comparing the held descriptions' flags with before; closes them."""
        out = []
        for k, fd in self.held.items():
            now = fcntl.fcntl(fd, fcntl.F_GETFL)
            if now == self.before[k]:
                out.append("%s flags: unchanged" % k)
            else:
                out.append("%s flags: changed from %#x to %#x" % (k, self.before[k], now))
            os.close(fd)
        self.held = {}
        return out

    def _fill(self, n):
        """Reads stdout until buf holds n bytes or the end; False on timeout."""
        fd = self.rfd
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


def wait_exit(c):
    """COMMAND's exit status, or None (TIMEOUT printed, COMMAND killed)."""
    try:
        return c.p.wait(max(0.1, c.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        print("TIMEOUT")
        c.p.kill()
        return None


def main(argv):
    hold = None
    if argv and argv[0] in ("--hold=pipe", "--hold=socket"):
        hold = argv[0].split("=", 1)[1]
        argv = argv[1:]
    if "--" not in argv:
        sys.stderr.write("usage: rexec.py [--hold=pipe|--hold=socket] ITEM... -- COMMAND [ARG...]\n")
        return 2
    cut = argv.index("--")
    items, command = argv[:cut], argv[cut + 1:]
    c = Client(command, hold)
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
        elif item == "flags":
            nb = fcntl.fcntl(c.held["stdout"], fcntl.F_GETFL) & os.O_NONBLOCK
            print("stdout: " + ("O_NONBLOCK" if nb else "blocking"), flush=True)
        elif item.startswith("signal:"):
            os.kill(c.p.pid, getattr(signal, "SIG" + item[7:]))
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
    c.close_input()
    flags = []
    if hold is not None:
        # Held ends keep COMMAND's stdout open: its end shows only once
        # COMMAND has exited and they are closed.
        status = wait_exit(c)
        if status is None:
            return 3
        flags = c.flags_report()
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
    status = wait_exit(c)
    if status is None:
        return 3
    c.t.join()
    if status < 0:
        print("signal " + signal.Signals(-status).name[3:])
    else:
        print("exit %d" % status)
    for line in flags:
        print(line)
    for line in c.err:
        print("stderr: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
