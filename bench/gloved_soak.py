#!/usr/bin/python3
"""gloved soak: many real short managed sessions through one gloved.

Issue "gloved for the long run": the session store compacts into a
checkpoint, acknowledged receipts leave the receipt journal, and gloved's
RSS, descriptors and bytes on disk stay flat however many sessions went
through it (docs/recovery.md, "Compaction", the retention rule).

Against gloved with the managed runtime (--materialization-root), next to the
glove build it belongs to, as bench/managed.py starts it: N sessions
(--sessions, default 10 000) each running /usr/bin/printf x, --inflight of
them (default 8) at a time, each on its own control connection: create_session,
start_session and attach back to back, wait for the end (session_ended, or
an attach answer that is already terminal; the state must be `exited`),
cleanup_session. Every --ack-every sessions (default 200) receipts are paged
from the last acknowledged one (receipts_page, 256 per page, as Sage archives
them) and acknowledged at the exact head (receipts_ack; a head that moved
meanwhile, receipts.ack_mismatch, is paged again).

Every --every sessions (default 1 000) the sessions in flight finish, the
receipts are acknowledged, and one sample is printed and appended: sessions
done, elapsed s, sessions/s (overall and over the last interval), gloved's
RSS (/proc/PID/status VmRSS) and open descriptors (/proc/PID/fd), the live
keepers (glove-keeper processes whose stderr is this run's
ROOT/keepers/*.log) and keeper files left in ROOT/keepers, the sessions
list_sessions still lists, the session store's journal, seal and checkpoint
bytes (SESSIONS, SESSIONS.seal, SESSIONS.ckpt), the receipt journal's and
its checkpoint's bytes (STATE/receipts.journal, .ckpt) and all bytes under
the run's directories; and whether the first session of the run is already
gone from the store (session.not_found after cleanup and acknowledgement).

Replay: at the midpoint (unless --no-midpoint-restart) and at the end gloved
is stopped (SIGTERM) and started again on the same state: the time from
exec to its `service.listening` log line (JSON lines on stderr), and to the
first answered `capabilities`.

Root only (managed sessions need the run cgroups gloved delegates as root);
otherwise it says so and exits 0. Appends JSON lines to --results
(bench/results/gloved-soak.jsonl). Times and sizes are reported, never
asserted.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ from importing managed.py
from managed import CD, SESSCTL, Conn, canon, git_commit, session_run  # noqa: E402

ARGV = ["/usr/bin/printf", "x"]


class Gloved:
    """One gloved on a directory that outlives it: restart() starts a new
    gloved on the same state and measures its replay."""

    def __init__(self, gloved, base):
        self.gloved = gloved
        self.base = base
        self.rt = os.path.join(base, "run")
        self.state = os.path.join(base, "state")
        self.store = os.path.join(base, "sessions")
        self.mroot = os.path.join(base, "mroot")
        self.policy = os.path.join(base, "policy.json")
        subprocess.run([sys.executable, SESSCTL, "policy", gloved, self.policy, json.dumps(ARGV)],
                       check=True, timeout=60)
        self.digest = open(self.policy + ".digest").read()
        self.errlog = open(os.path.join(base, "gloved.err"), "ab")
        self.proc = None
        self.starts = 0
        self.start()

    def start(self):
        """Starts gloved; returns (ms exec -> service.listening, ms exec ->
        first capabilities answer, the listening message)."""
        listening = threading.Event()
        seen = {}
        t0 = time.perf_counter_ns()
        self.proc = subprocess.Popen(
            [self.gloved, "--runtime-dir", self.rt, "--state-dir", self.state, "--session-policy", self.policy,
             "--session-store", self.store, "--materialization-root", self.mroot, "--max-connections", "128"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.starts += 1

        tail = self.tail = []

        def drain(pipe):
            for line in pipe:
                self.errlog.write(line)
                self.errlog.flush()
                tail.append(line.decode(errors="replace").rstrip())
                del tail[:-20]
                if not listening.is_set():
                    try:
                        o = json.loads(line)
                    except ValueError:
                        continue
                    if o.get("code") == "service.listening":
                        seen["ns"] = time.perf_counter_ns()
                        seen["msg"] = o.get("msg")
                        listening.set()
            self.errlog.flush()

        self.drainer = threading.Thread(target=drain, args=(self.proc.stderr,), daemon=True)
        self.drainer.start()
        deadline = time.monotonic() + 600
        while not listening.wait(0.001):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.drainer.join(timeout=10)
                raise RuntimeError("gloved did not start (exit %s): %s" % (self.proc.poll(), "\n".join(self.tail)))
        while True:
            try:
                c = Conn(self.rt)
                caps = c.call("capabilities", {})["result"]
                c.close()
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gloved did not answer (see %s)" % self.errlog.name)
                time.sleep(0.001)
        answered = time.perf_counter_ns()
        if not caps.get("lifecycle_operational"):
            raise RuntimeError("managed sessions are not operational here (see %s)" % self.errlog.name)
        return (round((seen["ns"] - t0) / 1e6, 2), round((answered - t0) / 1e6, 2), seen.get("msg"))

    def stop(self):
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.drainer.join(timeout=10)
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def plan(self):
        limits = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
                  "disk_bytes": 16777216, "terminal_output_bytes": 1048576}
        return canon({"adapter_command_digest": self.digest, "egress_policy_id": "no-network",
                      "expires_at_ms": int(time.time() * 1000) + 100000, "library_projections": [],
                      "limits": limits, "path_grants": [], "policy_revision": 1, "runtime_id": "pyrt",
                      "runtime_template_id": "py", "sandbox_backend": "linux_production", "schema_version": 1,
                      "secret_handles": [], "tool_policy_id": "t"})


def one_session(g, conn, sid):
    r = conn.call("create_session", {"session_id": sid, "idempotency_key": "k-" + sid,
                                     "controller_plan_digest": CD, "plan": g.plan()})
    if "error" in r:
        raise RuntimeError("create_session %s: %s" % (sid, r["error"]))
    _, _, _, end = session_run(conn, sid)
    st = (end.get("params") or end).get("state")
    if st != "exited":
        raise RuntimeError("%s ended %s: %s" % (sid, st, end))
    for _ in range(100):
        r = conn.call("cleanup_session", {"session_id": sid})
        if "error" not in r:
            return
        if r["error"].get("code") != "session.not_terminal":
            raise RuntimeError("cleanup_session %s: %s" % (sid, r["error"]))
        time.sleep(0.01)
    raise RuntimeError("cleanup_session %s: never terminal" % sid)


class Receipts:
    """Pages receipts from the last acknowledged one and acknowledges the
    exact head, as Sage does after archiving them."""

    def __init__(self):
        self.acked = 0
        self.seen = 0
        self.acks = 0
        self.mismatches = 0

    def ack(self, conn):
        while True:
            after = self.acked
            head = None
            while True:
                r = conn.call("receipts_page", {"after_sequence": after, "limit": 256})
                if "error" in r:
                    raise RuntimeError("receipts_page after %d: %s" % (after, r["error"]))
                res = r["result"]
                for e in res["envelopes"]:
                    after = e["sequence"]
                    self.seen += 1
                head = res["head"]
                if not res["more"]:
                    break
            if head["sequence"] <= self.acked:
                return
            r = conn.call("receipts_ack", {"sequence": head["sequence"], "head_mac": head["mac"]})
            if "error" in r:
                if r["error"].get("code") == "receipts.ack_mismatch":
                    self.mismatches += 1  # a receipt was appended meanwhile: page again
                    continue
                raise RuntimeError("receipts_ack %d: %s" % (head["sequence"], r["error"]))
            self.acked = r["result"]["acknowledged_sequence"]
            self.acks += 1
            return


def size(p):
    try:
        return os.stat(p).st_size
    except FileNotFoundError:
        return 0


def tree_bytes(p):
    n = 0
    for d, _, fs in os.walk(p):
        for f in fs:
            try:
                n += os.lstat(os.path.join(d, f)).st_size
            except FileNotFoundError:
                pass
    return n


def live_keepers(mroot):
    """glove-keeper processes whose stderr is this run's ROOT/keepers/*.log
    (others in the tree may run their own gloved and keepers)."""
    kdir = os.path.join(mroot, "keepers") + "/"
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if open("/proc/%s/comm" % pid).read().strip() != "glove-keeper":
                continue
            if os.readlink("/proc/%s/fd/2" % pid).startswith(kdir):
                n += 1
        except OSError:
            pass
    return n


def sample(g, conn, rc, done, t_start, last, first_sid):
    pid = g.proc.pid
    rss = None
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    fds = len(os.listdir("/proc/%d/fd" % pid))
    ls = conn.call("list_sessions", {})
    listed = len(ls["result"]["sessions"]) if "result" in ls else None
    st = conn.call("session_status", {"session_id": first_sid})
    first_gone = ("error" in st and st["error"].get("code") == "session.not_found") if done else None
    kdir = os.path.join(g.mroot, "keepers")
    now = time.monotonic()
    el = now - t_start
    return {
        "sessions_done": done, "elapsed_s": round(el, 1),
        "sessions_per_s": round(done / el, 2) if el else None,
        "interval_sessions_per_s": round((done - last[1]) / (now - last[0]), 2) if now > last[0] else None,
        "gloved_pid": pid, "gloved_starts": g.starts, "rss_kib": rss, "fds": fds,
        "keepers_live": live_keepers(g.mroot),
        "keeper_files": len(os.listdir(kdir)) if os.path.isdir(kdir) else 0,
        "sessions_listed": listed, "first_session_gone": first_gone,
        "store_journal_bytes": size(g.store), "store_seal_bytes": size(g.store + ".seal"),
        "store_ckpt_bytes": size(g.store + ".ckpt"),
        "receipts_journal_bytes": size(os.path.join(g.state, "receipts.journal")),
        "receipts_ckpt_bytes": size(os.path.join(g.state, "receipts.journal.ckpt")),
        "state_dir_bytes": tree_bytes(g.state), "mroot_bytes": tree_bytes(g.mroot),
        "receipts_acknowledged": rc.acked, "receipt_acks": rc.acks, "ack_mismatches": rc.mismatches,
    }


def run_batch(g, conns, start, count, rc, ack_every, ack_conn, ack_lock):
    """Sessions start .. start+count-1 over len(conns) workers."""
    nxt = [start]
    lock = threading.Lock()
    errors = []
    finished = [0]

    def worker(conn):
        try:
            while not errors:
                with lock:
                    i = nxt[0]
                    if i >= start + count:
                        return
                    nxt[0] += 1
                one_session(g, conn, "s-%d" % i)
                with lock:
                    finished[0] += 1
                    due = finished[0] % ack_every == 0
                if due:
                    with ack_lock:
                        rc.ack(ack_conn)
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(c,)) for c in conns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory (gloved and glove-keeper)")
    ap.add_argument("--results", required=True)
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--inflight", type=int, default=8)
    ap.add_argument("--every", type=int, default=1000, help="sessions between samples")
    ap.add_argument("--ack-every", type=int, default=200, help="sessions between receipt acknowledgements")
    ap.add_argument("--no-midpoint-restart", action="store_true")
    ap.add_argument("--dir", help="parent of the run's directory (default: $TMPDIR or /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    a = ap.parse_args()
    if os.getuid() != 0:
        print("bench: gloved soak: not root; skipped (managed sessions here run as root only)")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.results)), exist_ok=True)
    gloved = os.path.join(os.path.abspath(a.build), "gloved")
    common = {"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "commit": git_commit(), "kernel": platform.release(), "cpus": os.cpu_count(), "uid": os.getuid(),
              "sessions": a.sessions, "inflight": a.inflight, "argv": ARGV}
    base = tempfile.mkdtemp(prefix="glove-bench-soak.", dir=a.dir)
    os.chmod(base, 0o700)
    print("gloved soak: %d sessions (%s), %d in flight, a sample every %d, in %s" %
          (a.sessions, " ".join(ARGV), a.inflight, a.every, base), flush=True)
    fh = open(a.results, "a")

    def emit(name, r):
        line = json.dumps(dict(common, bench=name, **r), sort_keys=True)
        print(line, flush=True)
        fh.write(line + "\n")
        fh.flush()

    g = None
    conns = []
    try:
        g = Gloved(gloved, base)
        rc = Receipts()
        ack_lock = threading.Lock()

        def connect():
            return [Conn(g.rt) for _ in range(a.inflight)], Conn(g.rt)

        conns, ctl = connect()
        done = 0
        t_start = time.monotonic()
        last = (t_start, 0)
        mid = a.sessions // 2 if not a.no_midpoint_restart else None
        emit("gloved_soak.sample", sample(g, ctl, rc, 0, t_start, last, "s-0"))
        while done < a.sessions:
            n = min(a.every, a.sessions - done)
            if mid is not None and done < mid < done + n:
                n = mid - done
            run_batch(g, conns, done, n, rc, a.ack_every, ctl, ack_lock)
            done += n
            rc.ack(ctl)
            if done % a.every == 0 or done == a.sessions:
                s = sample(g, ctl, rc, done, t_start, last, "s-0")
                last = (time.monotonic(), done)
                emit("gloved_soak.sample", s)
            if done == mid or done == a.sessions:
                for c in conns + [ctl]:
                    c.close()
                t = time.monotonic()
                try:
                    listening_ms, answered_ms, msg = g.restart()
                except RuntimeError as e:
                    # Recorded, not raised: a gloved that cannot replay its
                    # own state is the finding (its log line says why).
                    emit("gloved_soak.restart", {"sessions_done": done, "error": str(e),
                                                 "store_journal_bytes": size(g.store),
                                                 "store_ckpt_bytes": size(g.store + ".ckpt")})
                    g.proc = None
                    return 1
                conns, ctl = connect()
                r = {"sessions_done": done, "listening_ms": listening_ms, "first_answer_ms": answered_ms,
                     "message": msg, "rss_kib_after": None, "fds_after": len(os.listdir("/proc/%d/fd" % g.proc.pid)),
                     "store_journal_bytes": size(g.store), "store_ckpt_bytes": size(g.store + ".ckpt"),
                     "receipts_journal_bytes": size(os.path.join(g.state, "receipts.journal")),
                     "receipts_ckpt_bytes": size(os.path.join(g.state, "receipts.journal.ckpt"))}
                for line in open("/proc/%d/status" % g.proc.pid):
                    if line.startswith("VmRSS:"):
                        r["rss_kib_after"] = int(line.split()[1])
                emit("gloved_soak.restart", r)
                t_start += time.monotonic() - t  # the restart is not session time
                last = (last[0] + time.monotonic() - t, last[1])
        return 0
    finally:
        for c in conns:
            try:
                c.close()
            except OSError:
                pass
        if g is not None:
            g.stop()
            g.errlog.close()
        fh.close()
        if a.keep:
            print("gloved soak: kept %s" % base)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
