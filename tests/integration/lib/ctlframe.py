#!/usr/bin/python3
"""ctlframe.py: a raw client of the gloved control protocol, for the attacks
and load a well-behaved client (glove ctl) never produces.

    ctlframe.py RUNTIME_DIR exchange [--no-auth] [--secret HEX] ITEM...
        Connects to RUNTIME_DIR/gloved.sock, authenticates with the secret
        from RUNTIME_DIR/bootstrap-secret (or --secret HEX; --no-auth skips
        it) and sends each ITEM in turn, printing one line per item: the
        response (compact JSON, sorted keys), or EOF (the service closed the
        connection), or TIMEOUT. ITEM is a JSON text sent as one frame, or
        raw:HEX (bytes sent as they are, no prefix added). Stops after EOF.
        The authentication response is printed first, as "auth <json>".

    ctlframe.py RUNTIME_DIR pipeline [--chunk N] [--shut] ITEM...
        Pipelining: the authenticate frame and every ITEM's frame are written
        in ONE write(2) (a short write is an error), or with --chunk N in
        writes of N bytes 50 ms apart, so frames are split across writes and
        one write may end several of them. --shut then shuts down the write
        side. Prints "auth <json>" and one line per ITEM (the response, EOF or
        TIMEOUT; stops after the first that is not a response), and with
        --shut a last line EOF once the service closed the connection (or
        "OPEN" if it sent something else or nothing within the timeout).

    ctlframe.py RUNTIME_DIR concurrent N
        Opens N connections that are all connected at the same time, then
        authenticates each and asks it for capabilities twice, from N
        threads. Prints "ok K" with K the connections that got both answers.

    ctlframe.py RUNTIME_DIR stall KIND SECONDS
        Connection A misbehaves (KIND: half-frame = authenticates then sends
        2 bytes of a prefix; silent = never authenticates; no-read = sends
        requests without reading the answers) while connection B sends
        capabilities requests for up to SECONDS. Prints
        "a-closed <seconds after A stalled>" (or "a-open"),
        "b-ok <answered requests>" and "b-max-ms <slowest answer>".
"""
import json
import os
import select
import socket
import struct
import sys
import threading
import time

FRAME_MAX = 1 << 20


def connect(rt):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(rt, "gloved.sock"))
    return s


def secret(rt):
    with open(os.path.join(rt, "bootstrap-secret")) as fh:
        return fh.read().strip()


def frame(obj_or_text):
    data = obj_or_text if isinstance(obj_or_text, bytes) else (
        obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)).encode()
    return struct.pack(">I", len(data)) + data


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    """The next response object, None on EOF; raises socket.timeout."""
    try:
        head = recv_exact(s, 4)
    except (ConnectionResetError, BrokenPipeError):
        return None
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n == 0 or n > FRAME_MAX:
        raise SystemExit("service sent a frame of %d bytes" % n)
    body = recv_exact(s, n)
    if body is None:
        return None
    return json.loads(body)


def show(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def call(s, rid, method, params=None):
    s.sendall(frame({"id": rid, "method": method, "params": params or {}}))
    return read_frame(s)


def exchange(rt, args):
    no_auth = False
    sec = None
    items = []
    i = 0
    while i < len(args):
        if args[i] == "--no-auth":
            no_auth = True
        elif args[i] == "--secret":
            i += 1
            sec = args[i]
        else:
            items.append(args[i])
        i += 1
    s = connect(rt)
    s.settimeout(10)
    if not no_auth:
        try:
            r = call(s, 0, "authenticate", {"secret": sec if sec is not None else secret(rt)})
        except (BrokenPipeError, ConnectionResetError):
            r = None  # closed before the request was even written
        print("auth " + (show(r) if r is not None else "EOF"))
        if r is None:
            return
    for item in items:
        if item.startswith("raw:"):
            data = bytes.fromhex(item[4:])
        elif item.startswith("pad:"):
            shell = '{"id":1,"method":"capabilities","params":{"x":"%s"}}'
            data = frame(shell % ("a" * (int(item[4:]) - len(shell % ""))))
        else:
            data = frame(item)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            print("EOF")
            return
        try:
            r = read_frame(s)
        except socket.timeout:
            print("TIMEOUT")
            continue
        if r is None:
            print("EOF")
            return
        print(show(r))


def pipeline(rt, args):
    chunk = None
    shut = False
    items = []
    i = 0
    while i < len(args):
        if args[i] == "--chunk":
            i += 1
            chunk = int(args[i])
        elif args[i] == "--shut":
            shut = True
        else:
            items.append(args[i])
        i += 1
    s = connect(rt)
    s.settimeout(10)
    data = frame({"id": 0, "method": "authenticate", "params": {"secret": secret(rt)}})
    data += b"".join(frame(item) for item in items)
    if chunk is None:
        n = s.send(data)
        if n != len(data):
            raise SystemExit("short write: %d of %d bytes" % (n, len(data)))
    else:
        for off in range(0, len(data), chunk):
            s.sendall(data[off:off + chunk])
            time.sleep(0.05)
    if shut:
        s.shutdown(socket.SHUT_WR)
    for k in range(len(items) + 1):
        try:
            r = read_frame(s)
        except socket.timeout:
            print("TIMEOUT")
            return
        print(("auth " if k == 0 else "") + (show(r) if r is not None else "EOF"))
        if r is None:
            return
    if shut:
        try:
            print("EOF" if read_frame(s) is None else "OPEN")
        except socket.timeout:
            print("OPEN")


def concurrent(rt, n):
    sec = secret(rt)
    socks = [connect(rt) for _ in range(n)]  # all open at once
    ok = []
    lock = threading.Lock()
    start = threading.Barrier(n)

    def worker(i, s):
        s.settimeout(30)
        start.wait()
        try:
            a = call(s, 1, "authenticate", {"secret": sec})
            b = call(s, 2, "capabilities")
            c = call(s, 3, "capabilities")
            if a and a.get("result") and b and "methods" in b.get("result", {}) and c and c.get("id") == 3:
                with lock:
                    ok.append(i)
        except OSError as e:
            print("connection %d: %s" % (i, e), file=sys.stderr)

    threads = [threading.Thread(target=worker, args=(i, s)) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    print("ok %d" % len(ok))


def stall(rt, kind, seconds):
    sec = secret(rt)
    a = connect(rt)
    if kind == "half-frame":
        a.settimeout(10)
        call(a, 1, "authenticate", {"secret": sec})
        a.sendall(b"\x00\x00")
    elif kind == "no-read":
        a.settimeout(10)
        call(a, 1, "authenticate", {"secret": sec})
        # Far more requests than the socket buffers hold answers for, from a
        # thread: its sendall blocks once gloved stops reading A.
        flood = frame({"id": 2, "method": "capabilities", "params": {}}) * 20000

        def push():
            try:
                a.settimeout(30)
                a.sendall(flood)
            except OSError:
                pass

        threading.Thread(target=push, daemon=True).start()
        time.sleep(0.2)
    stalled_at = time.monotonic()
    b = connect(rt)
    b.settimeout(10)
    call(b, 1, "authenticate", {"secret": sec})
    closed_after = None
    answered = 0
    worst = 0.0
    rid = 2
    while time.monotonic() - stalled_at < seconds:
        t0 = time.monotonic()
        r = call(b, rid, "capabilities")
        worst = max(worst, time.monotonic() - t0)
        rid += 1
        if r is not None and r.get("id") == rid - 1 and "result" in r:
            answered += 1
        if closed_after is None:
            # A is never read (that would relieve the stall): the service
            # closing its end shows as POLLHUP / POLLRDHUP.
            p = select.poll()
            p.register(a, select.POLLRDHUP | select.POLLHUP)
            if any(ev & (select.POLLRDHUP | select.POLLHUP) for _, ev in p.poll(0)):
                closed_after = time.monotonic() - stalled_at
        if closed_after is not None and answered >= 5:
            break
        time.sleep(0.02)
    print("a-closed %.2f" % closed_after if closed_after is not None else "a-open")
    print("b-ok %d" % answered)
    print("b-max-ms %d" % int(worst * 1000))


def main():
    rt, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "exchange":
        exchange(rt, rest)
    elif mode == "pipeline":
        pipeline(rt, rest)
    elif mode == "concurrent":
        concurrent(rt, int(rest[0]))
    elif mode == "stall":
        stall(rt, rest[0], float(rest[1]))
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
