"""managed_agent.py: the Python agent of the managed-session tests
(tests/integration/gloved_managed.bats). gloved's policy runs it as
/usr/bin/python3 -c SOURCE MODE (tests/integration/lib/managed.py), so it
needs no file inside the sandbox. MODE:

  edit      edits the ephemeral copy /work/src, writes /work/keep/note.txt
            (the retained image), checks that /work/ref is read-only
  cpu       spins;  mem: allocates and touches memory;  sleep: sleeps
  fork      forks until a fork is refused, then copes (sleeps)
  flood     writes to the terminal without end
  disk      fills /tmp until ENOSPC, then exits 3
  burst     waits for a line, writes 4 MiB in lines, prints "burst-done"
  echo      prints "ready", echoes each line as "got:LINE"; "quit" exits 7
  noterm    ignores SIGTERM, prints "ready", sleeps
  term      exits 5 on SIGTERM, prints "ready", sleeps
  brief     prints "brief", sleeps 1 s, exits 0
  quick     prints "quick", exits 0 (a session that only has to run its life)
  count     writes /work/keep/count.txt when /work/keep exists, then prints
            "seq N" (N = 1, 2, ...) every 20 ms until a line "quit" arrives
            on its terminal, then "count-done N" and exits 0 (the recovery
            tests: a gap in the numbers is output lost); a hang-up of its
            terminal (SIGHUP) prints "hup" and exits 4
"""
import errno, os, signal, sys, time

mode = sys.argv[1]
out = sys.stdout
if mode == "edit":
    with open("/work/src/a.txt", "a") as f:
        f.write("agent was here\n")
    os.unlink("/work/src/sub/b.txt")
    with open("/work/src/new.txt", "w") as f:
        f.write("new\n")
    os.chmod("/work/src/mode.txt", 0o600)
    with open("/work/keep/note.txt", "w") as f:
        f.write("kept by the agent\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        open("/work/ref/x", "w")
        print("ref-writable")
    except OSError as e:
        print("ref-refused " + errno.errorcode[e.errno])
    print("read " + open("/work/ref/r.txt").read().strip())
    print("edited " + open("/work/src/a.txt").read().replace("\n", "|"))
elif mode == "cpu":
    while True:
        pass
elif mode == "mem":
    keep = []
    while True:
        keep.append(bytearray(b"x" * (4 << 20)))
elif mode == "sleep":
    print("sleeping", flush=True)
    time.sleep(100)
elif mode == "fork":
    n = 0
    try:
        while n < 500:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            n += 1
    except OSError as e:
        print("refused after %d: %s" % (n, errno.errorcode[e.errno]), flush=True)
    time.sleep(30)
    print("coped", flush=True)
elif mode == "flood":
    line = "y" * 1023 + "\n"
    while True:
        out.write(line)
elif mode == "disk":
    try:
        with open("/tmp/fill", "wb") as f:
            while True:
                f.write(b"z" * 65536)
                f.flush()
    except OSError as e:
        print("disk " + errno.errorcode[e.errno], flush=True)
    sys.exit(3)
elif mode == "burst":
    print("waiting", flush=True)
    sys.stdin.readline()
    # 4 MiB, paced (32 KiB, then 5 ms) so that a client that reads keeps up.
    chunk = ("b" * 127 + "\n") * 256
    for i in range(128):
        out.write(chunk)
        out.flush()
        time.sleep(0.005)
    out.write("burst-done\n")
    out.flush()
elif mode == "echo":
    print("ready", flush=True)
    for line in sys.stdin:
        line = line.rstrip("\n")
        print("got:" + line, flush=True)
        if line == "quit":
            sys.exit(7)
elif mode in ("noterm", "term"):
    if mode == "noterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *a: os._exit(5))
    print("ready", flush=True)
    time.sleep(100)
elif mode == "brief":
    print("brief", flush=True)
    time.sleep(1)
elif mode == "quick":
    print("quick", flush=True)
elif mode == "count":
    import select
    signal.signal(signal.SIGHUP, lambda *a: (os.write(1, b"hup\n"), os._exit(4)))
    if os.path.isdir("/work/keep"):
        with open("/work/keep/count.txt", "w") as f:
            f.write("counting\n")
            f.flush()
            os.fsync(f.fileno())
    n, buf = 0, b""
    while n < 200000:
        n += 1
        os.write(1, b"seq %d\n" % n)
        if select.select([0], [], [], 0.02)[0]:
            c = os.read(0, 4096)
            if not c:
                break
            buf += c
            if b"quit" in buf.replace(b"\r", b"\n").split(b"\n"):
                break
    os.write(1, b"count-done %d\n" % n)
else:
    sys.exit("unknown mode " + mode)
