#!/usr/bin/python3
"""Host-wide resource attacks, run inside the sandbox by tests/integration/hostwide.bats.

    hostwide.py tcpfill CONNS MAX_MB   open CONNS loopback TCP connections (a
                                       listener of its own) and fill them
                                       without reading, non-blocking, until
                                       MAX_MB are queued or every send
                                       would block; prints "queued BYTES", then
                                       holds them until stdin closes
    hostwide.py tcpmany PROCS CONNS    PROCS processes each open up to CONNS
                                       loopback TCP connections every way the
                                       agent may (a listener of its own, a
                                       socket bound and connected to its own
                                       port, the egress proxy's port) and fill
                                       them without reading; prints "own ERRNO|ok",
                                       "self ERRNO|ok", then "held N" (the
                                       connections still open), then holds them
                                       until stdin closes
    hostwide.py nofile COUNT           open /dev/null until COUNT descriptors or
                                       an error; prints "opened N ERRNO|ok", then
                                       "raise ERRNO|ok" for a raise of the hard limit
    hostwide.py keys                   prints what /proc/keys and /proc/key-users
                                       give: "PATH ok:TEXT" or "PATH ERRNO"
    hostwide.py tiocsetd               TIOCSETD (N_TTY) on descriptors 0, 1, 2:
                                       "tiocsetd FD ok|ERRNO"; TIOCSTI likewise
    hostwide.py unix-connect PATH      socket(AF_UNIX) then connect(PATH); prints
                                       "socket ERRNO" or "connect ok:REPLY|ERRNO"
    hostwide.py socketpair             socketpair(AF_UNIX): "socketpair ok|ERRNO"
"""
import errno
import fcntl
import os
import resource
import socket
import struct
import sys
import termios


def ename(e):
    return errno.errorcode.get(e, "errno%d" % e)


def say(*a):
    print(*a, flush=True)


def fill(c, limit=1 << 30):
    """Sends into c without blocking until it would block: bytes accepted."""
    c.setblocking(False)
    queued = 0
    chunk = b"x" * 65536
    while queued < limit:
        try:
            queued += c.send(chunk)
        except OSError:
            break
    return queued


def proxy_port():
    url = os.environ.get("HTTPS_PROXY", "")
    return int(url.rsplit(":", 1)[1]) if url.count(":") >= 2 else 0


def tcpmany_child(conns, w):
    """One process: connections held open and filled; reports on w."""
    keep = []
    own = "ok"
    try:
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.bind(("127.0.0.1", 0))
        lst.listen(conns)
        port = lst.getsockname()[1]
        keep.append(lst)
        for _ in range(conns):
            c = socket.create_connection(("127.0.0.1", port))
            s, _ = lst.accept()
            keep += [c, s]
            fill(c)
    except OSError as e:
        own = ename(e.errno)
    selfc = "ok"
    try:
        # TCP simultaneous open with itself: no listener needed.
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.bind(("127.0.0.1", 0))
        c.connect(c.getsockname())
        keep.append(c)
        fill(c)
    except OSError as e:
        selfc = ename(e.errno)
    pport = proxy_port()
    held = []
    for _ in range(conns if pport else 0):
        try:
            c = socket.create_connection(("127.0.0.1", pport), timeout=2)
        except OSError:
            break
        held.append(c)
        # A request head that never ends: the proxy reads what it may.
        fill(c, 4096)
    for c in held:
        try:
            if c.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b"":
                continue
        except BlockingIOError:
            pass
        except OSError:
            continue
        keep.append(c)
    os.write(w, ("%s %s %d\n" % (own, selfc, sum(1 for k in keep if k.type == socket.SOCK_STREAM))).encode())
    sys.stdin.read()


def tcpmany(procs, conns):
    r, w = os.pipe()
    pids = []
    for _ in range(procs):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                tcpmany_child(conns, w)
            finally:
                os._exit(0)
        pids.append(pid)
    os.close(w)
    own = selfc = "ok"
    held = 0
    with os.fdopen(r) as f:
        for line in f:
            o, s, n = line.split()
            own = o if o != "ok" else own
            selfc = s if s != "ok" else selfc
            held += int(n)
            procs -= 1
            if procs == 0:
                break
    say("own %s" % own)
    say("self %s" % selfc)
    say("held %d" % held)
    sys.stdin.read()
    for pid in pids:
        os.waitpid(pid, 0)


def tcpfill(conns, max_mb):
    limit = max_mb << 20
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        lst.bind(("127.0.0.1", 0))
    except OSError as e:
        say("queued 0 conns 0 %s" % ename(e.errno))
        sys.stdin.read()
        return
    lst.listen(conns)
    port = lst.getsockname()[1]
    keep = []
    queued = 0
    chunk = b"x" * 65536
    err = "ok"
    for _ in range(conns):
        if queued >= limit:
            break
        try:
            c = socket.create_connection(("127.0.0.1", port))
            s, _ = lst.accept()
        except OSError as e:
            err = ename(e.errno)
            break
        keep.append((c, s))
        c.setblocking(False)
        while queued < limit:
            try:
                n = c.send(chunk)
            except BlockingIOError:
                break
            except OSError as e:
                err = ename(e.errno)
                break
            queued += n
    say("queued %d conns %d %s" % (queued, len(keep), err))
    sys.stdin.read()  # hold until the test closes stdin


def nofile(count):
    fds = []
    res = "ok"
    while len(fds) < count:
        try:
            fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            res = ename(e.errno)
            break
    say("opened %d %s" % (len(fds), res))
    for fd in fds:
        os.close(fd)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    say("limit %d %d" % (soft, hard))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1))
        say("raise ok")
    except OSError as e:
        say("raise %s" % ename(e.errno))
    except ValueError:
        say("raise EPERM")


def keys():
    for path in ("/proc/keys", "/proc/key-users"):
        try:
            with open(path) as f:
                say("%s ok:%s" % (path, f.read().replace("\n", "|")))
        except OSError as e:
            say("%s %s" % (path, ename(e.errno)))


def tiocsetd():
    for fd in (0, 1, 2):
        try:
            fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", 0))  # N_TTY
            say("tiocsetd %d ok" % fd)
        except OSError as e:
            say("tiocsetd %d %s" % (fd, ename(e.errno)))
    try:
        fcntl.ioctl(0, termios.TIOCSTI, b"x")
        say("tiocsti ok")
    except OSError as e:
        say("tiocsti %s" % ename(e.errno))


def unix_connect(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as e:
        say("socket %s" % ename(e.errno))
        return
    try:
        s.connect(path)
        s.settimeout(5)
        say("connect ok:%s" % s.recv(64).decode(errors="replace").strip())
    except OSError as e:
        say("connect %s" % ename(e.errno))


def do_socketpair():
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.send(b"y")
        say("socketpair ok:%s" % b.recv(1).decode())
    except OSError as e:
        say("socketpair %s" % ename(e.errno))


def main():
    op = sys.argv[1]
    if op == "tcpfill":
        tcpfill(int(sys.argv[2]), int(sys.argv[3]))
    elif op == "tcpmany":
        tcpmany(int(sys.argv[2]), int(sys.argv[3]))
    elif op == "nofile":
        nofile(int(sys.argv[2]))
    elif op == "keys":
        keys()
    elif op == "tiocsetd":
        tiocsetd()
    elif op == "unix-connect":
        unix_connect(sys.argv[2])
    elif op == "socketpair":
        do_socketpair()
    else:
        sys.exit(2)


main()
