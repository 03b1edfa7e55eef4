#!/usr/bin/python3
"""Probe agent for the Glove integration suite.

Runs inside the sandbox as `/usr/bin/python3 probe.py OP [ARG...] [OP [ARG...]]...`
and attempts, one after the other, the operations an escaping agent would try.
Every attempt prints exactly one line:

    <op> [<args>] ok[:<detail>]      the operation succeeded
    <op> [<args>] <ERRNO>            it failed with that errno (EPERM, ENOENT, ...)

so a test can assert the exact errno of each denial. The probe itself exits 0
unless it is misused (unknown operation: exit 2). Operations (arity in brackets):

  files    read PATH, create PATH, append PATH, mkdir PATH, unlink PATH,
           exists PATH (prints yes/no), list DIR, chmod PATH OCTAL,
           create-mode PATH OCTAL, setfcap PATH, openw PATH (open for
           writing, never writes), writable-walk DIR, fdscan PID
  network  socket FAMILY TYPE, socket-all, unix, connect HOST PORT,
           connect-abstract NAME
  syscalls sys NAME (x86_64 numbers, see SYSCALLS), int80, x32
  terminal tty
  procs    procscan HEXMARKER, signal0 PID, kill PID, fork, threads, setuid0,
           sethostname NAME, openpty, leak-scan (secret read from stdin)
  inherited descriptors (the local-service stream, docs/local-services.md)
           fds (this process's open descriptors: "ok:0,1,2,3"),
           fd-sockname FD, fd-sockopt FD NAME (type|rcvbuf|peercred|domain),
           fd-peername FD, fd-setsockopt FD, fd-bind FD, fd-listen FD,
           fd-shutdown FD, fd-connect FD PATH, fd-socket-unix,
           frame FD TEXT (one 4-byte big-endian framed request on FD; prints
           "ok:RESPONSE" or the errno, "EOF" when the stream closed),
           frame-raw FD HEXLEN TEXT (a frame whose length field is HEXLEN, a
           hex number, followed by TEXT: for oversized and empty frames),
           frame-pipelined FD TEXT (two requests written at once)
"""
import ctypes
import errno
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def ename(e):
    return errno.errorcode.get(e, "errno%d" % e)


def say(label, result):
    print("%s %s" % (label, result), flush=True)


def attempt(label, fn):
    """Run fn; print 'label ok[:detail]' or 'label ERRNO'."""
    try:
        detail = fn()
    except OSError as e:
        say(label, ename(e.errno) if e.errno is not None else "error:%s" % e)
        return
    except Exception as e:  # termios.error and friends carry (errno, msg)
        if e.args and isinstance(e.args[0], int):
            say(label, ename(e.args[0]))
        else:
            say(label, "error:%s" % e)
        return
    say(label, "ok" if detail is None else "ok:%s" % detail)


def discard(_value):
    """For lambdas: evaluate, report success without detail."""
    return None


def raw(nr, *args):
    """libc syscall(nr, args...); raises OSError on -1."""
    cargs = []
    for a in args:
        if isinstance(a, int):
            cargs.append(ctypes.c_long(a))
        elif isinstance(a, bytes):
            cargs.append(ctypes.c_char_p(a))
        elif a is None:
            cargs.append(ctypes.c_void_p(0))
        else:
            cargs.append(a)
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *cargs)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def raw_fd(nr, *args):
    """A syscall that returns a descriptor: close it on success."""
    fd = raw(nr, *args)
    os.close(fd)


# ---------------------------------------------------------------- files

def op_read(path):
    def f():
        with open(path, "rb") as fh:
            data = fh.read(4096)
        return data.decode("utf-8", "replace").splitlines()[0] if data else ""
    attempt("read %s" % path, f)


def op_create(path):
    def f():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"written by probe\n")
        os.close(fd)
    attempt("create %s" % path, f)


def op_append(path):
    def f():
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"appended by probe\n")
        os.close(fd)
    attempt("append %s" % path, f)


def op_mkdir(path):
    attempt("mkdir %s" % path, lambda: os.mkdir(path))


def op_unlink(path):
    attempt("unlink %s" % path, lambda: os.unlink(path))


def op_exists(path):
    try:
        os.lstat(path)
        say("exists %s" % path, "yes")
    except FileNotFoundError:
        say("exists %s" % path, "no")
    except OSError as e:
        say("exists %s" % path, ename(e.errno))


def op_list(path):
    attempt("list %s" % path, lambda: ",".join(sorted(os.listdir(path))))


def op_chmod(path, mode):
    attempt("chmod %s %s" % (path, mode), lambda: os.chmod(path, int(mode, 8)))


def op_create_mode(path, mode):
    """open(O_CREAT|O_EXCL) with an explicit mode (umask cleared)."""
    def f():
        old = os.umask(0)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, int(mode, 8))
        finally:
            os.umask(old)
        os.close(fd)
        return "%o" % (os.stat(path).st_mode & 0o7777)
    attempt("create-mode %s %s" % (path, mode), f)


def op_setfcap(path):
    """Give PATH file capabilities (cap_setuid+ep, VFS_CAP_REVISION_2)."""
    import struct
    value = struct.pack("<5I", 0x02000001, 1 << 7, 0, 0, 0)
    attempt("setfcap %s" % path, lambda: os.setxattr(path, "security.capability", value))


def op_openw(path):
    """Open for writing and close again: never writes a byte, so it is safe
    on kernel knobs (/proc/sys/...): it only asks whether a write would be
    let through."""
    def f():
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
        os.close(fd)
    attempt("openw %s" % path, f)


def op_writable_walk(top):
    """openw every regular file below TOP (or TOP itself); print
    'writable PATH' for each that opened, then 'writable-walk TOP N'.
    Never writes."""
    n = 0
    paths = []
    if os.path.isfile(top):
        paths = [top]
    else:
        for root, _dirs, files in os.walk(top):
            paths.extend(os.path.join(root, f) for f in files)
    for p in sorted(paths):
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        os.close(fd)
        n += 1
        say("writable", p)
    say("writable-walk %s" % top, str(n))


def op_fdscan(pid):
    """Print 'fd PID/N TARGET' (or the errno) for each open descriptor of PID."""
    try:
        fds = sorted(os.listdir("/proc/%s/fd" % pid), key=int)
    except OSError as e:
        say("fdscan %s" % pid, ename(e.errno))
        return
    for fd in fds:
        attempt("fd %s/%s" % (pid, fd), lambda: os.readlink("/proc/%s/fd/%s" % (pid, fd)))
    say("fdscan %s" % pid, "done")


# ---------------------------------------------------------------- network

def family(name):
    if name.isdigit():
        return int(name)
    return {"AF_VSOCK": 40, "AF_ALG": 38, "AF_KEY": 15, "AF_XDP": 44,
            "AF_TIPC": 30, "AF_BLUETOOTH": 31, "AF_CAN": 29, "AF_RDS": 21,
            "AF_QIPCRTR": 42, "AF_SMC": 43, "AF_MCTP": 45}.get(name) or getattr(socket, name)


def stype(name):
    return getattr(socket, name)


def op_socket(fam, typ):
    def f():
        proto = 0x0300 if fam == "AF_PACKET" else 0  # htons(ETH_P_ALL)
        s = socket.socket(family(fam), stype(typ), proto)
        s.close()
    attempt("socket %s %s" % (fam, typ), f)


def op_socket_all():
    """socket() for every family but AF_UNIX and every common type; report
    each result that is not EPERM (one line per attempt that is not EPERM),
    then a summary line 'socket-all N-attempts M-not-eperm'."""
    bad = 0
    n = 0
    for fam in range(0, 46):
        if fam == socket.AF_UNIX:
            continue
        for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW,
                    socket.SOCK_SEQPACKET):
            n += 1
            try:
                s = socket.socket(fam, typ, 0)
                s.close()
                res = "ok"
            except OSError as e:
                res = ename(e.errno)
            if res != "EPERM":
                bad += 1
                say("socket-family %d type %d" % (fam, typ), res)
    say("socket-all", "attempts=%d not-eperm=%d" % (n, bad))


def op_unix():
    def f():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.sendall(b"ping")
        got = b.recv(4)
        a.close()
        b.close()
        path = "/tmp/.probe-%d.sock" % os.getpid()
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cli.connect(path)
        cli.close()
        srv.close()
        os.unlink(path)
        return got.decode()
    attempt("unix", f)


def op_connect(host, port):
    def f():
        s = socket.create_connection((host, int(port)), timeout=3)
        s.close()
    attempt("connect %s %s" % (host, port), f)


def op_connect_abstract(name):
    def f():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(b"\0" + name.encode())
            return s.recv(64).decode().strip()
        finally:
            s.close()
    attempt("connect-abstract %s" % name, f)


# ---------------------------------------------------------------- syscalls

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
AT_FDCWD = -100


def do_clone(flags):
    pid = raw(56, flags | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def do_setns():
    fd = os.open("/proc/self/ns/uts", os.O_RDONLY)
    try:
        raw(308, fd, 0)
    finally:
        os.close(fd)


def do_name_to_handle_at():
    handle = ctypes.create_string_buffer(8)  # handle_bytes = 0
    mount_id = ctypes.c_int(0)
    raw(303, AT_FDCWD, b"/tmp", handle, ctypes.byref(mount_id), 0)


def do_open_by_handle_at():
    handle = ctypes.create_string_buffer(16)
    raw_fd(304, AT_FDCWD, handle, os.O_RDONLY)


def do_mount():
    os.makedirs("/tmp/.probe-mnt", exist_ok=True)
    raw(165, b"none", b"/tmp/.probe-mnt", b"tmpfs", 0, None)


def do_ptrace_traceme():
    raw(101, 0, 0, 0, 0)


def do_process_vm(nr):
    local = ctypes.create_string_buffer(8)
    remote = ctypes.create_string_buffer(8)
    # struct iovec {void *base; size_t len;}
    iov_l = (ctypes.c_void_p * 2)(ctypes.cast(local, ctypes.c_void_p), 8)
    iov_r = (ctypes.c_void_p * 2)(ctypes.cast(remote, ctypes.c_void_p), 8)
    raw(nr, os.getpid(), iov_l, 1, iov_r, 1, 0)


# name -> attempt. Arguments are harmless: where the filter would not apply,
# each call is either a no-op that succeeds or fails with an errno other than
# EPERM, so an EPERM result is the filter's (or the missing capability's).
SYSCALLS = {
    "mount": do_mount,
    "umount2": lambda: raw(166, b"/tmp", 2),
    "pivot_root": lambda: raw(155, b"/tmp", b"/tmp"),
    "chroot": lambda: raw(161, b"/tmp"),
    "fsopen": lambda: raw_fd(430, b"tmpfs", 0),
    "fsconfig": lambda: raw(431, -1, 0, None, None, 0),
    "fsmount": lambda: raw_fd(432, -1, 0, 0),
    "fspick": lambda: raw_fd(433, AT_FDCWD, b"/tmp", 0),
    "move_mount": lambda: raw(429, -1, b"", -1, b"", 0),
    "open_tree": lambda: raw_fd(428, AT_FDCWD, b"/tmp", 0),
    "mount_setattr": lambda: raw(442, -1, b"", 0, None, 0),
    "unshare-newuser": lambda: raw(272, CLONE_NEWUSER),
    "unshare-newns": lambda: raw(272, CLONE_NEWNS),
    "unshare-newnet": lambda: raw(272, CLONE_NEWNET),
    "unshare-newpid": lambda: raw(272, CLONE_NEWPID),
    "unshare-fs": lambda: raw(272, 0x200),  # CLONE_FS: no namespace at all
    "setns": do_setns,
    "clone-newuser": lambda: do_clone(CLONE_NEWUSER),
    "clone-newns": lambda: do_clone(CLONE_NEWNS),
    "clone-newpid": lambda: do_clone(CLONE_NEWPID),
    "clone-newnet": lambda: do_clone(CLONE_NEWNET),
    "clone-newipc": lambda: do_clone(CLONE_NEWIPC),
    "clone-newuts": lambda: do_clone(CLONE_NEWUTS),
    "clone-newcgroup": lambda: do_clone(CLONE_NEWCGROUP),
    "clone-plain": lambda: do_clone(0),
    "clone3": lambda: raw(435, None, 0),
    "keyctl": lambda: raw(250, 0, -3, 0),  # KEYCTL_GET_KEYRING_ID(session)
    "add_key": lambda: raw(248, b"user", b"glove-probe", b"x", 1, -2),
    "request_key": lambda: raw(249, b"user", b"glove-probe-none", None, 0),
    "bpf": lambda: raw(321, 0, ctypes.create_string_buffer(128), 128),
    "perf_event_open": lambda: raw_fd(298, None, 0, -1, -1, 0),
    "userfaultfd": lambda: raw_fd(323, 1),  # UFFD_USER_MODE_ONLY
    "ptrace": do_ptrace_traceme,
    "process_vm_readv": lambda: do_process_vm(310),
    "process_vm_writev": lambda: do_process_vm(311),
    "kexec_load": lambda: raw(246, 0, 0, None, 0),
    "kexec_file_load": lambda: raw(320, -1, -1, 0, None, 0),
    "init_module": lambda: raw(175, None, 0, b""),
    "finit_module": lambda: raw(313, -1, b"", 0),
    "delete_module": lambda: raw(176, b"glove_probe_none", 0),
    "acct": lambda: raw(163, None),
    "swapon": lambda: raw(167, b"/tmp/.probe-swap", 0),
    "swapoff": lambda: raw(168, b"/tmp/.probe-swap"),
    "reboot": lambda: raw(169, 0, 0, 0, None),  # bad magic: never reboots
    "syslog": lambda: raw(103, 10, None, 0),  # SYSLOG_ACTION_SIZE_BUFFER
    "quotactl": lambda: raw(179, 0, None, 0, None),
    "name_to_handle_at": do_name_to_handle_at,
    "open_by_handle_at": do_open_by_handle_at,
    "io_uring_setup": lambda: raw_fd(425, 1, ctypes.create_string_buffer(120)),
    "io_uring_enter": lambda: raw(426, -1, 0, 0, 0, None, 0),
    "io_uring_register": lambda: raw(427, -1, 0, None, 0),
    "personality-linux32": lambda: raw(135, 0x0008),
    "personality-addr-no-randomize": lambda: raw(135, 0x0040000),
    "personality-0": lambda: discard(raw(135, 0)),
    "personality-query": lambda: discard(raw(135, 0xffffffff)),
    "getpid": lambda: discard(raw(39)),
    # On descriptor -1: EBADF where the filter lets them through.
    "connect": lambda: raw(42, -1, None, 0),
    "setsockopt": lambda: raw(54, -1, 1, 7, ctypes.create_string_buffer(4), 4),  # SOL_SOCKET, SO_SNDBUF
}


def op_sys(name):
    """Each syscall runs in a forked child, so that one that the filter lets
    through (unshare, personality, ptrace...) cannot change the next attempt."""
    fn = SYSCALLS.get(name)
    if fn is None:
        usage("unknown syscall %s" % name)
    sys.stdout.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        attempt("sys %s" % name, lambda: discard(fn()))
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        data = os.read(r, 4096)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode().strip()
    if os.WIFSIGNALED(status):
        say("sys %s" % name, "killed-by-signal-%d" % os.WTERMSIG(status))
    elif text:
        print(text, flush=True)
    else:
        say("sys %s" % name, "no-result")


def op_int80():
    """getpid through the i386 entry point (int $0x80), in a child so that a
    kernel without IA32 emulation (SIGSEGV) cannot take the probe down."""
    import mmap
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = bytes([0xb8, 20, 0, 0, 0,   # mov eax, 20 (i386 getpid)
                      0xcd, 0x80,          # int $0x80
                      0xc3])               # ret
        m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        m.write(code)
        fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
        res = fn()
        os.write(w, str(res).encode())
        os._exit(0)
    os.close(w)
    data = os.read(r, 64)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        say("int80", "killed-by-signal-%d" % os.WTERMSIG(status))
        return
    res = int(data)
    if -4096 < res < 0:
        say("int80", ename(-res))
    else:
        say("int80", "ok:%d" % res)


def op_x32():
    attempt("x32", lambda: discard(raw(0x40000000 | 39)))  # x32 getpid


# ---------------------------------------------------------------- terminal

def op_tty():
    import fcntl
    import termios
    say("isatty0", "yes" if os.isatty(0) else "no")
    attempt("tcgetattr", lambda: discard(termios.tcgetattr(0)))
    attempt("TIOCSTI", lambda: discard(fcntl.ioctl(0, termios.TIOCSTI, b"x")))
    attempt("TIOCLINUX", lambda: discard(fcntl.ioctl(0, 0x541C, bytes([6, 0]))))
    # The kernel reads the ioctl command as 32 bits; a filter that compares
    # all 64 would let these through (on a pty TIOCLINUX is then ENOTTY).
    buf = ctypes.create_string_buffer(bytes([6, 0]))
    attempt("TIOCLINUX-high-bits", lambda: discard(raw(16, 0, 0x10000541C, buf)))
    attempt("TIOCSTI-high-bits", lambda: discard(raw(16, 0, 0x100005412, ctypes.create_string_buffer(b"x"))))
    attempt("open-dev-tty", lambda: os.close(os.open("/dev/tty", os.O_RDWR)))
    say("sid-visible", "yes" if os.getsid(0) > 0 else "no")


# ---------------------------------------------------------------- processes

def op_procscan(hexmarker):
    """Print 'procscan HEXMARKER visible:PID,...' or 'procscan HEXMARKER none'.
    The marker comes hex-encoded so that it is not itself on a command line
    (glove's, or init's) inside the sandbox."""
    marker = bytes.fromhex(hexmarker).decode()
    me = os.getpid()
    hits = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as fh:
                if marker.encode() in fh.read():
                    hits.append(p)
        except OSError:
            pass
    say("procscan %s" % hexmarker, "visible:" + ",".join(sorted(hits)) if hits else "none")


def op_signal0(pid):
    attempt("signal0 %s" % pid, lambda: os.kill(int(pid), 0))


def op_kill(pid):
    attempt("kill %s" % pid, lambda: os.kill(int(pid), 9))


def op_fork():
    def f():
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        _, st = os.waitpid(pid, 0)
        return str(os.waitstatus_to_exitcode(st))
    attempt("fork", f)


def op_threads():
    import threading
    box = []

    def f():
        t = threading.Thread(target=lambda: box.append(threading.get_native_id()))
        t.start()
        t.join()
        return "ran" if box else "did-not-run"
    attempt("threads", f)


def op_setuid0():
    attempt("setuid0", lambda: os.setuid(0))


def op_sethostname(name):
    attempt("sethostname %s" % name, lambda: socket.sethostname(name))


def op_openpty():
    def f():
        m, s = os.openpty()
        name = os.ttyname(s)
        os.close(m)
        os.close(s)
        return name
    attempt("openpty", f)


def op_leak_scan():
    """Look for a secret (read from stdin) in every other process's environ,
    cmdline and readable memory: prints, per pid, 'environ PID clean|LEAK|ERRNO'
    and likewise for cmdline and mem."""
    secret = sys.stdin.readline().strip().encode()
    if not secret:
        usage("leak-scan wants the secret on stdin")
    me = os.getpid()
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        if pid == me:
            continue
        for what in ("environ", "cmdline"):
            try:
                with open("/proc/%d/%s" % (pid, what), "rb") as fh:
                    data = fh.read()
                say("%s %d" % (what, pid), "LEAK" if secret in data else "clean")
            except OSError as e:
                say("%s %d" % (what, pid), ename(e.errno))
        try:
            with open("/proc/%d/maps" % pid) as fh:
                maps = fh.read().splitlines()
            fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
        except OSError as e:
            say("mem %d" % pid, ename(e.errno))
            continue
        found = False
        readable = 0
        for line in maps:
            rng, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in rng.split("-"))
            if hi - lo > (256 << 20):
                continue
            try:
                data = os.pread(fd, hi - lo, lo)
            except OSError:
                continue
            readable += len(data)
            if secret in data:
                found = True
                break
        os.close(fd)
        say("mem %d" % pid, "LEAK" if found else ("clean" if readable else "unreadable"))


# ---------------------------------------------------- inherited descriptors

SOL_SOCKET = 1
SOCKOPTS = {"type": 3, "rcvbuf": 8, "peercred": 17, "domain": 39}


def op_fds():
    """This process's descriptors, from /proc/self/fd (the listing's own
    descriptor left out)."""
    def go():
        fds = []
        for n in os.listdir("/proc/self/fd"):
            try:  # the listing's own descriptor is closed by now
                os.readlink("/proc/self/fd/" + n)
            except OSError:
                continue
            fds.append(int(n))
        return ",".join(str(n) for n in sorted(fds))
    attempt("fds", go)


def op_fd_sockname(fd):
    buf = ctypes.create_string_buffer(128)
    ln = ctypes.c_uint(128)
    attempt("fd-sockname %s" % fd, lambda: discard(raw(51, int(fd), buf, ctypes.byref(ln))))


def op_fd_peername(fd):
    buf = ctypes.create_string_buffer(128)
    ln = ctypes.c_uint(128)
    attempt("fd-peername %s" % fd, lambda: discard(raw(52, int(fd), buf, ctypes.byref(ln))))


def op_fd_sockopt(fd, name):
    buf = ctypes.create_string_buffer(64)
    ln = ctypes.c_uint(64)

    def go():
        raw(55, int(fd), SOL_SOCKET, SOCKOPTS[name], buf, ctypes.byref(ln))
        return str(int.from_bytes(buf.raw[:4], "little"))
    attempt("fd-sockopt %s %s" % (fd, name), go)


def op_fd_setsockopt(fd):
    one = ctypes.c_int(65536)
    attempt("fd-setsockopt %s" % fd, lambda: discard(raw(54, int(fd), SOL_SOCKET, 8, ctypes.byref(one), 4)))


def unix_addr(path):
    b = path.encode()
    return ctypes.create_string_buffer(b"\x01\x00" + b + b"\x00" * (108 - len(b))), 2 + len(b) + 1


def op_fd_bind(fd):
    addr, ln = unix_addr("/tmp/glove-probe.sock")
    attempt("fd-bind %s" % fd, lambda: discard(raw(49, int(fd), addr, ln)))


def op_fd_listen(fd):
    attempt("fd-listen %s" % fd, lambda: discard(raw(50, int(fd), 1)))


def op_fd_shutdown(fd):
    attempt("fd-shutdown %s" % fd, lambda: discard(raw(48, int(fd), 1)))


def op_fd_connect(fd, path):
    addr, ln = unix_addr(path)
    attempt("fd-connect %s %s" % (fd, path), lambda: discard(raw(42, int(fd), addr, ln)))


def op_fd_socket_unix():
    attempt("fd-socket-unix", lambda: raw_fd(41, 1, 1, 0))


def read_exact(fd, n):
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def exchange(fd, data):
    """Writes data (whole frames) and reads one response frame: the text of
    the response, or "EOF"."""
    import select
    fd = int(fd)
    os.set_blocking(fd, True)
    os.write(fd, data)
    select.select([fd], [], [], 30)
    head = read_exact(fd, 4)
    if head is None:
        return "EOF"
    body = read_exact(fd, int.from_bytes(head, "big"))
    return "EOF" if body is None else body.decode("utf-8", "replace")


def frame_of(text):
    b = text.encode()
    return len(b).to_bytes(4, "big") + b


def op_frame(fd, text):
    attempt("frame %s" % fd, lambda: exchange(fd, frame_of(text)))


def op_frame_raw(fd, hexlen, text):
    attempt("frame-raw %s %s" % (fd, hexlen), lambda: exchange(fd, int(hexlen, 16).to_bytes(4, "big") + text.encode()))


def op_frame_pipelined(fd, text):
    def go():
        first = exchange(fd, frame_of(text) + frame_of(text))
        second = exchange(fd, b"")
        return first + "|" + second
    attempt("frame-pipelined %s" % fd, go)


OPS = {
    "read": (op_read, 1), "create": (op_create, 1), "append": (op_append, 1),
    "mkdir": (op_mkdir, 1), "unlink": (op_unlink, 1), "exists": (op_exists, 1),
    "list": (op_list, 1), "chmod": (op_chmod, 2), "create-mode": (op_create_mode, 2),
    "setfcap": (op_setfcap, 1), "openw": (op_openw, 1), "writable-walk": (op_writable_walk, 1),
    "fdscan": (op_fdscan, 1), "connect-abstract": (op_connect_abstract, 1),
    "socket": (op_socket, 2), "socket-all": (op_socket_all, 0), "unix": (op_unix, 0),
    "connect": (op_connect, 2),
    "fds": (op_fds, 0), "fd-sockname": (op_fd_sockname, 1), "fd-peername": (op_fd_peername, 1),
    "fd-sockopt": (op_fd_sockopt, 2), "fd-setsockopt": (op_fd_setsockopt, 1), "fd-bind": (op_fd_bind, 1),
    "fd-listen": (op_fd_listen, 1), "fd-shutdown": (op_fd_shutdown, 1), "fd-connect": (op_fd_connect, 2),
    "fd-socket-unix": (op_fd_socket_unix, 0), "frame": (op_frame, 2), "frame-raw": (op_frame_raw, 3),
    "frame-pipelined": (op_frame_pipelined, 2),
    "sys": (op_sys, 1), "int80": (op_int80, 0), "x32": (op_x32, 0),
    "tty": (op_tty, 0),
    "procscan": (op_procscan, 1), "signal0": (op_signal0, 1), "kill": (op_kill, 1),
    "fork": (op_fork, 0), "threads": (op_threads, 0), "setuid0": (op_setuid0, 0),
    "sethostname": (op_sethostname, 1), "openpty": (op_openpty, 0),
    "leak-scan": (op_leak_scan, 0),
}


def usage(msg):
    print("probe: %s" % msg, file=sys.stderr)
    sys.exit(2)


def main(argv):
    if not argv:
        usage("no operation (see the module docstring)")
    i = 0
    while i < len(argv):
        op = argv[i]
        if op not in OPS:
            usage("unknown operation %r" % op)
        fn, arity = OPS[op]
        args = argv[i + 1:i + 1 + arity]
        if len(args) != arity:
            usage("%s wants %d argument(s)" % (op, arity))
        fn(*args)
        i += 1 + arity


if __name__ == "__main__":
    main(sys.argv[1:])
