#!/usr/bin/python3
"""Managed-session benchmark driver (make bench: bench/run.sh calls it).

Against gloved with the managed runtime (--materialization-root), next to the
glove build it belongs to:

  first_byte   start_session -> the first output byte of a managed session
               (the request is sent, then attach at once; the byte is the
               first of the transcript or of a session_output frame), against
               `glove exec` of the same program reading its stdout pipe from
               spawn; medians, p90 and the ratio (goal <= 1.5). Programs:
               /usr/bin/printf and python3 -c 'print(1)'. The two are
               interleaved round by round.
  burst        32 sessions started at once (32 connections, each sends
               start_session and attach back to back): sessions per second
               from the first start sent to the 32nd session_ended (which
               gloved pushes after the receipt is appended and synced).
  attach       a session writing 64 MiB to its PTY (python3 writing 64 KiB
               at a time; it waits for one line of input first), read through
               gloved by the C client `glove ctl attach ID` (its stdin gives
               that line once attached; its stdout is /dev/null; no Python
               reads the stream), against, in the same round, the same program
               writing the same bytes (a) into a pipe read here and (b) into
               a bare PTY read by a C program (glove-bench-pty-read, 64 KiB
               reads, the kernel's default terminal modes as in a session).
               MiB/s: through gloved, 64 MiB over the client's whole run
               (spawn to exit, which includes the attach and waits for the
               terminal receipt); pipe and bare PTY, first byte to last.
               Both ratios (through gloved / pipe, goal >= 0.5; through
               gloved / bare PTY). A round whose client
               fell 1 MiB behind (gloved skipped output: a session_output_gap,
               which the client reports on stderr) is listed in "notes", not
               measured, and another is tried (3 x rounds at most). What
               bounds the figure: the PTY itself (the kernel's line
               discipline hands a reader a few KiB per read; the pipe is an
               order of magnitude faster), then gloved's relay (base64 makes
               4/3 the bytes, one frame per relayed chunk), then whether the
               client keeps up: the session never waits, so on a busy host a
               client descheduled for a few ms is dropped.

Root only (managed sessions here need the run cgroups gloved delegates as
root, and the retained mechanism's probe); otherwise it says so and exits 0.
Prints the figures and appends JSON lines to the results file. Times are
reported, never asserted.
"""
import argparse
import base64
import datetime
import json
import os
import platform
import re
import select
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SESSCTL = os.path.join(REPO, "tests", "integration", "lib", "sessctl.py")
CD = "1" * 64
MIB = 1 << 20
WRITER = ("import os\nb=b'x'*65536\nn=%d\nwhile n>0:\n"
          " k=os.write(1,b[:min(n,65536)])\n n-=k\n")


def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Conn:
    """One authenticated control connection with a buffered frame reader."""

    def __init__(self, rt):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(os.path.join(rt, "gloved.sock"))
        self.s.settimeout(120)
        self.buf = bytearray()
        self.n = 0
        secret = open(os.path.join(rt, "bootstrap-secret")).read().strip()
        r = self.call("authenticate", {"secret": secret})
        if "error" in r:
            raise RuntimeError("authenticate: %s" % r)

    def send(self, method, params):
        self.n += 1
        body = json.dumps({"id": self.n, "method": method, "params": params}).encode()
        self.s.sendall(struct.pack(">I", len(body)) + body)
        return self.n

    def frame(self, block=True):
        """The next frame, or None (block False and none complete; or EOF)."""
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    f = json.loads(bytes(self.buf[4:4 + n]))
                    del self.buf[:4 + n]
                    return f
            if not block:
                return None
            c = self.s.recv(1 << 20)
            if not c:
                return None
            self.buf += c

    def fill(self):
        """One recv into the buffer (after select); False at EOF."""
        c = self.s.recv(1 << 20)
        self.buf += c
        return bool(c)

    def call(self, method, params):
        rid = self.send(method, params)
        while True:
            f = self.frame()
            if f is None:
                raise RuntimeError("gloved closed the connection")
            if f.get("id") == rid:
                return f

    def close(self):
        self.s.close()


class Gloved:
    def __init__(self, gloved, base, name, argv, limits):
        self.base = os.path.join(base, name)
        os.makedirs(self.base, mode=0o700)
        self.rt = os.path.join(self.base, "run")
        self.limits = limits
        self.policy = os.path.join(self.base, "policy.json")
        args = [sys.executable, SESSCTL, "policy", gloved, self.policy, json.dumps(argv)]
        if limits:
            args.append(json.dumps(limits))
        subprocess.run(args, check=True, timeout=60)
        self.digest = open(self.policy + ".digest").read()
        self.err = open(os.path.join(self.base, "gloved.err"), "w")
        self.proc = subprocess.Popen(
            [gloved, "--runtime-dir", self.rt, "--state-dir", os.path.join(self.base, "state"),
             "--session-policy", self.policy, "--session-store", os.path.join(self.base, "sessions"),
             "--materialization-root", os.path.join(self.base, "mroot"), "--max-connections", "128"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 30
        while True:
            try:
                c = Conn(self.rt)
                caps = c.call("capabilities", {})["result"]
                c.close()
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gloved did not start: " + open(self.err.name).read())
                time.sleep(0.002)
        if not caps.get("lifecycle_operational"):
            self.stop()
            raise RuntimeError("managed sessions are not operational here: " + open(self.err.name).read())
        self.seq = 0

    def plan(self):
        from_defaults = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
                         "disk_bytes": 16777216, "terminal_output_bytes": 1048576}
        from_defaults.update(self.limits or {})
        return canon({"adapter_command_digest": self.digest, "egress_policy_id": "no-network",
                      "expires_at_ms": int(time.time() * 1000) + 100000, "library_projections": [],
                      "limits": from_defaults, "path_grants": [], "policy_revision": 1, "runtime_id": "pyrt",
                      "runtime_template_id": "py", "sandbox_backend": "linux_production", "schema_version": 1,
                      "secret_handles": [], "tool_policy_id": "t"})

    def create(self, conn):
        self.seq += 1
        sid = "b-%d" % self.seq
        r = conn.call("create_session", {"session_id": sid, "idempotency_key": "k-" + sid,
                                         "controller_plan_digest": CD, "plan": self.plan()})
        if "error" in r:
            raise RuntimeError("create_session: %s" % r)
        return sid

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def percentile(s, p):
    s = sorted(s)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def summary(xs):
    return {"median": round(statistics.median(xs), 2), "p90": round(percentile(xs, 90), 2),
            "min": round(min(xs), 2), "max": round(max(xs), 2)}


def session_run(conn, sid, want_bytes=1):
    """Sends start_session and attach back to back; returns (ms to the first
    output byte, ms to want_bytes of output, bytes seen, the end frame)."""
    t0 = time.perf_counter_ns()
    conn.send("start_session", {"session_id": sid})
    conn.send("attach", {"session_id": sid})
    first = full = None
    got = 0
    end = None
    while end is None:
        f = conn.frame()
        if f is None:
            raise RuntimeError("gloved closed the connection")
        data = b""
        if "error" in f:
            raise RuntimeError("%s: %s" % (sid, f["error"]))
        if f.get("method") == "session_output":
            data = base64.b64decode(f["params"]["data_b64"])
        elif "result" in f and "transcript_b64" in f["result"]:
            data = base64.b64decode(f["result"]["transcript_b64"])
            if not f["result"]["attached"]:
                end = f["result"]
        elif f.get("method") in ("session_ended", "session_detached"):
            end = f
        if data:
            now = time.perf_counter_ns()
            if first is None:
                first = (now - t0) / 1e6
            got += len(data)
            if full is None and got >= want_bytes:
                full = (now - t0) / 1e6
    return first, full, got, end


def exec_first_byte(glove, argv):
    t0 = time.perf_counter_ns()
    p = subprocess.Popen([glove, "exec", "--"] + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    b = p.stdout.read(1)
    ms = (time.perf_counter_ns() - t0) / 1e6
    p.stdout.read()
    p.wait()
    if not b:
        raise RuntimeError("glove exec %s printed nothing (exit %d)" % (argv, p.returncode))
    return ms


def bench_first_byte(gloved, glove, base, name, argv, rounds):
    g = Gloved(gloved, base, "fb-" + name, argv, None)
    try:
        conn = Conn(g.rt)
        managed, direct = [], []
        for r in range(rounds + 2):
            sid = g.create(conn)
            if r % 2 == 0:
                e = exec_first_byte(glove, argv)
                m = session_run(conn, sid)[0]
            else:
                m = session_run(conn, sid)[0]
                e = exec_first_byte(glove, argv)
            if m is None:
                raise RuntimeError("%s: the managed session printed nothing" % name)
            if r >= 2:  # two warm-up rounds
                managed.append(m)
                direct.append(e)
        conn.close()
    finally:
        g.stop()
    ms, ds = summary(managed), summary(direct)
    return {"program": name, "argv": argv, "rounds": rounds, "managed_ms": ms, "glove_exec_ms": ds,
            "ratio_median": round(ms["median"] / ds["median"], 2), "ratio_p90": round(ms["p90"] / ds["p90"], 2),
            "goal_ratio_max": 1.5}


def bench_burst(gloved, base, n, rounds):
    g = Gloved(gloved, base, "burst", ["/usr/bin/printf", "x"], None)
    rates, lasts = [], []
    try:
        for _ in range(rounds):
            conns = [Conn(g.rt) for _ in range(n)]
            sids = [g.create(c) for c in conns]
            failed = 0
            t0 = time.perf_counter_ns()
            for c, sid in zip(conns, sids):
                c.send("start_session", {"session_id": sid})
                c.send("attach", {"session_id": sid})
            pending = {c.s.fileno(): c for c in conns}
            while pending:
                ready, _, _ = select.select(list(pending), [], [], 120)
                if not ready:
                    raise RuntimeError("burst: no progress in 120 s")
                for fd in ready:
                    c = pending[fd]
                    if not c.fill():
                        raise RuntimeError("gloved closed a connection")
                    while True:
                        f = c.frame(block=False)
                        if f is None:
                            break
                        if "error" in f:
                            raise RuntimeError("burst: %s" % f["error"])
                        res = f.get("result") or {}
                        done = (f.get("method") == "session_ended" or
                                ("transcript_b64" in res and not res.get("attached")))
                        if done:
                            st = (f.get("params") or res).get("state")
                            failed += st != "exited"
                            del pending[fd]
                            break
            s = (time.perf_counter_ns() - t0) / 1e9
            rates.append(n / s)
            lasts.append(s * 1000)
            if failed:
                raise RuntimeError("burst: %d of %d sessions did not exit cleanly" % (failed, n))
            for c in conns:
                c.close()
    finally:
        g.stop()
    return {"sessions": n, "rounds": rounds, "sessions_per_s": summary(rates),
            "first_start_to_last_receipt_ms": summary(lasts)}


def pipe_big(fd):
    """Gives the direct pipe 1 MiB of room (as much as the kernel allows), so
    that its reader here descheduled for a moment does not stall the writer
    at once."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), MIB)
    except OSError:
        pass


def pipe_throughput(nbytes):
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(["/usr/bin/python3", "-c", WRITER % nbytes], stdout=subprocess.PIPE)
    pipe_big(p.stdout.fileno())
    first = None
    got = 0
    while True:
        b = os.read(p.stdout.fileno(), 1 << 20)
        if not b:
            break
        if first is None:
            first = time.perf_counter_ns()
        got += len(b)
    p.wait()
    end = time.perf_counter_ns()
    if got != nbytes:
        raise RuntimeError("pipe: %d bytes, expected %d" % (got, nbytes))
    return nbytes / MIB / ((end - first) / 1e9), (end - t0) / 1e6


def pty_throughput(build, nbytes):
    """The same writer on a bare pseudo-terminal read by a C program
    (glove-bench-pty-read): what the PTY alone gives, before gloved's relay,
    base64 and framing."""
    r = subprocess.run([os.path.join(build, "glove-bench-pty-read"), "/usr/bin/python3", "-c", WRITER % nbytes],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("glove-bench-pty-read: %s" % r.stderr.strip())
    o = json.loads(r.stdout)
    if o["bytes"] < nbytes:
        raise RuntimeError("bare PTY: %d bytes, expected %d" % (o["bytes"], nbytes))
    return nbytes / MIB / (o["first_to_last_ns"] / 1e9)


def ctl_attach_throughput(glove, g, conn, sid, nbytes):
    """Starts sid (its writer waits for a line), runs `glove ctl attach sid`
    with that line on its stdin and its stdout /dev/null. Returns (MiB/s over
    the client's whole run, spawn to exit: attach and the terminal receipt
    included, so a slight underestimate; that time in ms; None) or
    (None, None, note)."""
    r = conn.call("start_session", {"session_id": sid})
    if "error" in r:
        raise RuntimeError("start_session %s: %s" % (sid, r["error"]))
    t0 = time.perf_counter_ns()
    p = subprocess.Popen([glove, "ctl", "--runtime-dir", g.rt, "attach", sid], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Output starts only once attached (the client's stdin goes to
    # write_stdin after the attach answered): nothing precedes it.
    p.stdin.write(b"go\n")
    p.stdin.close()
    err = p.stderr.read().decode(errors="replace").strip()
    p.wait()
    wall = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode != 0:
        return None, None, "exit %d: %s" % (p.returncode, err[-200:])
    if "bytes of output skipped" in err:
        # The client fell 1 MiB behind: gloved skipped output (a
        # session_output_gap) and the client saw less than nbytes.
        skipped = re.findall(r"glove: (\d+) bytes of output skipped", err)
        return None, None, "skipped %s bytes (session_output_gap)" % "+".join(skipped)
    return nbytes / MIB / (wall / 1e3), wall, None


def bench_attach(gloved, glove, build, base, mib, rounds):
    nbytes = mib * MIB
    limits = {"terminal_output_bytes": 2 * nbytes}
    gated = "import sys\nsys.stdin.readline()\n" + WRITER % nbytes
    g = Gloved(gloved, base, "attach", ["/usr/bin/python3", "-c", gated], limits)
    through, walls, direct, ptys, notes = [], [], [], [], []
    try:
        conn = Conn(g.rt)
        # One warm-up round, then rounds measured; a dropped round
        # (output skipped: session_output_gap) is noted and another tried,
        # 3 * rounds at most.
        r = measured = 0
        while measured < rounds + 1 and r < 3 * (rounds + 1):
            r += 1
            sid = g.create(conn)
            mibs, wall, note = ctl_attach_throughput(glove, g, conn, sid, nbytes)
            if note:
                notes.append("round %d: %s" % (r, note))
                continue
            measured += 1
            pmibs, _ = pipe_throughput(nbytes)
            ptmibs = pty_throughput(build, nbytes)
            if measured > 1:  # after the warm-up round
                through.append(mibs)
                walls.append(wall)
                direct.append(pmibs)
                ptys.append(ptmibs)
        conn.close()
    finally:
        g.stop()
    out = {"bytes": nbytes, "rounds": rounds, "notes": notes, "dropped_rounds": len(notes),
           "client": "glove ctl attach (C)",
           "pty_reader": "glove-bench-pty-read (C)"}
    if through:
        out.update({"attach_mib_per_s": summary(through), "attach_client_wall_ms": summary(walls),
                    "pipe_mib_per_s": summary(direct), "pty_direct_mib_per_s": summary(ptys),
                    "ratio_median": round(statistics.median(through) / statistics.median(direct), 3),
                    "ratio_to_pty_median": round(statistics.median(through) / statistics.median(ptys), 3),
                    "goal_ratio_min": 0.5})
    return out


def git_commit():
    try:
        c = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
        d = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
        return c + ("-dirty" if d else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory (glove and gloved)")
    ap.add_argument("--results", required=True)
    ap.add_argument("--rounds", type=int, default=30, help="first-byte rounds per program")
    ap.add_argument("--burst", type=int, default=32)
    ap.add_argument("--burst-rounds", type=int, default=3)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--attach-rounds", type=int, default=3)
    ap.add_argument("--only", choices=("first_byte", "burst", "attach"), help="run only this part")
    a = ap.parse_args()
    if os.getuid() != 0:
        print("bench: managed sessions: not root; skipped (the managed-session benchmark runs as root only)")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.results)), exist_ok=True)
    gloved = os.path.join(os.path.abspath(a.build), "gloved")
    glove = os.path.join(os.path.abspath(a.build), "glove")
    common = {"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "commit": git_commit(), "kernel": platform.release(), "cpus": os.cpu_count(), "uid": os.getuid()}
    base = tempfile.mkdtemp(prefix="glove-bench-managed.")
    os.chmod(base, 0o700)
    out = []
    try:
        if a.only in (None, "first_byte"):
            for name, argv in (("printf", ["/usr/bin/printf", "x"]),
                               ("python3", ["/usr/bin/python3", "-c", "print(1)"])):
                r = bench_first_byte(gloved, glove, base, name, argv, a.rounds)
                print("first byte, %-7s managed median %7.2f ms p90 %7.2f | glove exec median %7.2f ms p90 %7.2f | "
                      "ratio %.2f (p90 %.2f; goal <= 1.5)" %
                      (name, r["managed_ms"]["median"], r["managed_ms"]["p90"], r["glove_exec_ms"]["median"],
                       r["glove_exec_ms"]["p90"], r["ratio_median"], r["ratio_p90"]))
                out.append(("managed.first_byte", r))
        if a.only in (None, "burst"):
            r = bench_burst(gloved, base, a.burst, a.burst_rounds)
            print("burst: %d sessions at once: median %.1f sessions/s (first start to last receipt %.0f ms median, "
                  "%.0f max)" % (r["sessions"], r["sessions_per_s"]["median"],
                                 r["first_start_to_last_receipt_ms"]["median"],
                                 r["first_start_to_last_receipt_ms"]["max"]))
            out.append(("managed.burst", r))
        if a.only in (None, "attach"):
            r = bench_attach(gloved, glove, os.path.abspath(a.build), base, a.mib, a.attach_rounds)
            if "ratio_median" in r:
                print("attach: %d MiB, medians: through gloved (glove ctl attach) %.1f MiB/s | bare PTY read by C "
                      "%.1f MiB/s | direct pipe %.1f MiB/s" %
                      (a.mib, r["attach_mib_per_s"]["median"], r["pty_direct_mib_per_s"]["median"],
                       r["pipe_mib_per_s"]["median"]))
                print("attach: ratio gloved / pipe %.3f (goal >= 0.5) | gloved / bare PTY %.3f; client spawn to "
                      "exit %.0f ms median" % (r["ratio_median"], r["ratio_to_pty_median"],
                                               r["attach_client_wall_ms"]["median"]))
                print("attach: what bounds it: the PTY (its line discipline hands a reader a few KiB per read), "
                      "not the pipe; see docs/limits.md")
            for n in r["notes"]:
                print("attach: " + n)
            out.append(("managed.attach_throughput", r))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        with open(a.results, "a") as fh:
            for name, r in out:
                fh.write(json.dumps(dict(common, bench=name, **r), sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
