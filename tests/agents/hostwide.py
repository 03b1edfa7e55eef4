#!/usr/bin/python3
"""Host-wide resource attacks, run inside the sandbox by tests/integration/hostwide.bats.

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
    hostwide.py sigfill MAX            block SIGRTMIN and sigqueue it to itself
                                       until MAX are pending or an error;
                                       prints "queued N ok|ERRNO", "timer
                                       ok|ERRNO" (timer_create, which queues
                                       its signal the same way), "limit SOFT
                                       HARD" of RLIMIT_SIGPENDING and "raise
                                       ok|ERRNO" for a raise of the hard limit,
                                       then "holding" until stdin closes
    hostwide.py fanotify MAX           fanotify_init (FAN_REPORT_FID, as an
                                       unprivileged caller must) until MAX
                                       groups or an error: "groups N ok|ERRNO",
                                       then "holding" until stdin closes
    hostwide.py pipes COUNT SIZE       COUNT pipes (the read end kept), each
                                       grown to SIZE bytes by F_SETPIPE_SZ
                                       until a growth fails (the rest keep the
                                       default size): "pipes N grown G
                                       ok|ERRNO", then "holding" until stdin
                                       closes
    hostwide.py pipes COUNT SIZE CMD...  the same, then "new pipe BYTES" (the
                                       size a new pipe gets), then runs CMD
                                       while it holds them: "ran STATUS"
    hostwide.py shmlock MAX            System V segments of 1 MiB, each locked
                                       with SHM_LOCK (and removed, so they go
                                       when the process ends), until MAX MiB
                                       or an error: "locked N ok|ERRNO",
                                       "limit SOFT HARD" of RLIMIT_MEMLOCK,
                                       then "holding" until stdin closes
    hostwide.py forkfill MAX           forks children that wait, until MAX or
                                       an error: "forked N ok|ERRNO", "limit
                                       SOFT HARD" of RLIMIT_NPROC, then
                                       "holding" until stdin closes (the
                                       children end with it)
Each also runs on the host (tests/integration/hostwide.bats measures what
the invoker's own processes still get while the agent holds its maximum).
"""
import ctypes
import errno
import fcntl
import os
import resource
import signal
import socket
import struct
import subprocess
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


libc = ctypes.CDLL(None, use_errno=True)


def hold():
    say("holding")
    sys.stdin.read()  # hold until the test closes stdin


def sigfill(most):
    sig = signal.SIGRTMIN
    signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
    pid = os.getpid()
    n, res = 0, "ok"
    while n < most:
        if libc.sigqueue(pid, sig, ctypes.c_void_p(n)) != 0:
            res = ename(ctypes.get_errno())
            break
        n += 1
    say("queued %d %s" % (n, res))
    # timer_create(CLOCK_MONOTONIC, NULL: SIGALRM on expiry): the kernel
    # charges its preallocated signal to the same count.
    timer = ctypes.c_void_p()
    if libc.timer_create(1, None, ctypes.byref(timer)) == 0:
        say("timer ok")
    else:
        say("timer %s" % ename(ctypes.get_errno()))
    soft, hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)
    say("limit %d %d" % (soft, hard))
    try:
        up = hard + 1 if hard != resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_SIGPENDING, (up, up))
        say("raise ok")
    except OSError as e:
        say("raise %s" % ename(e.errno))
    except ValueError:
        say("raise EPERM")
    hold()


FAN_REPORT_FID = 0x200


def fanotify(most):
    fds, res = [], "ok"
    while len(fds) < most:
        fd = libc.fanotify_init(FAN_REPORT_FID, os.O_RDONLY)
        if fd < 0:
            res = ename(ctypes.get_errno())
            break
        fds.append(fd)
    say("groups %d %s" % (len(fds), res))
    hold()


F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032


def pipes(count, size, cmd):
    keep, grown, res = [], 0, "ok"
    while len(keep) < count:
        try:
            r, w = os.pipe()
        except OSError as e:
            res = ename(e.errno)
            break
        os.close(w)
        keep.append(r)
        if size and res == "ok":
            try:
                fcntl.fcntl(r, F_SETPIPE_SZ, size)
                grown += 1
            except OSError as e:
                res = ename(e.errno)  # default-size pipes from here on
    say("pipes %d grown %d %s" % (len(keep), grown, res))
    if cmd:
        # Past the uid's soft limit a new unprivileged pipe gets two pages.
        r, w = os.pipe()
        say("new pipe %d" % fcntl.fcntl(w, F_GETPIPE_SZ))
        os.close(r)
        os.close(w)
        say("ran %d" % subprocess.run(cmd, close_fds=True).returncode)
    else:
        hold()


IPC_PRIVATE, IPC_CREAT, IPC_RMID, SHM_LOCK = 0, 0o1000, 0, 11


def shmlock(most):
    libc.shmget.restype = ctypes.c_int
    ids, res = [], "ok"
    try:
        while len(ids) < most:
            sid = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(1 << 20), IPC_CREAT | 0o600)
            if sid < 0:
                res = ename(ctypes.get_errno())
                break
            ids.append(sid)
            if libc.shmctl(sid, SHM_LOCK, None) != 0:
                res = ename(ctypes.get_errno())
                break
        locked = len(ids) - (res != "ok")
        say("locked %d %s" % (locked, res))
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        say("limit %d %d" % (soft, hard))
        hold()
    finally:
        # Removed segments that nothing attaches are destroyed at once, and
        # their lock's charge with them.
        for sid in ids:
            libc.shmctl(sid, IPC_RMID, None)


def forkfill(most):
    r, w = os.pipe()
    n, res = 0, "ok"
    while n < most:
        try:
            pid = os.fork()
        except OSError as e:
            res = ename(e.errno)
            break
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        n += 1
    say("forked %d %s" % (n, res))
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    say("limit %d %d" % (soft, hard))
    hold()
    os.close(w)


def main():
    op = sys.argv[1]
    if op == "tcpmany":
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
    elif op == "sigfill":
        sigfill(int(sys.argv[2]))
    elif op == "fanotify":
        fanotify(int(sys.argv[2]))
    elif op == "shmlock":
        shmlock(int(sys.argv[2]))
    elif op == "forkfill":
        forkfill(int(sys.argv[2]))
    elif op == "pipes":
        pipes(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit(2)


main()
