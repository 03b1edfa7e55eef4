#!/usr/bin/python3
"""Limits and egress benchmarks (issue 4, "Benchmark"), side by side in one run.

  bench/limits_egress.py --glove PATH [--rounds N] [--transfers N]
                         [--size-mib N] [--results FILE] [--only egress]
                         [--glove-before PATH]

1. Start-up with limits against start-up without: `glove exec -- /bin/true`
   run as root, which gives the run its own cgroup (memory, pids, CPU time),
   against the same command run as uid 65534 (`setpriv --reuid=65534
   --regid=65534 --clear-groups`), for whom the host delegates no cgroup, so
   Glove runs degraded: no run cgroup, memory and pids unlimited, CPU time
   bounded per process by RLIMIT_CPU only (it prints a limits.degraded
   warning, discarded here). Wall-time, disk and output limits need no cgroup
   and apply in both. Both use the same copy of the binary in a world-readable
   temporary directory. The two commands alternate (the order flips every
   round) after a warm-up; reports median, p90 and the with/without ratio.
   If uid 65534 gets a cgroup too (the host delegates one), or root does not,
   there is no "without" (or "with") to compare and the script says so.

2. Egress throughput: a local server on 127.0.0.1 (a free port) sends SIZE
   MiB from a preallocated buffer and closes. The same tiny client
   (CLIENT below, run with `python3 -c`) reads and discards it until EOF,
   timing first to last byte:
     glove:  inside `glove exec --egress-allow 127.0.0.1:PORT` (an address
             rule: its loopback address is allowed), through the per-run
             proxy (HTTP CONNECT with the Proxy-Authorization taken from
             HTTPS_PROXY);
     before: (with --glove-before PATH) the same through another glove
             binary, e.g. one built from an older commit (given the old bare
             `--egress-allow-private` switch when it predates issue 14);
     direct: on the host, straight to the server, no Glove.
   The modes alternate; reports MiB/s (median of the transfers), the
   glove/direct ratio (issue 31 sets the goal at 0.9, issue 4 had 0.8; reported, not
   checked), and the CPU time Glove's own process (the relay threads; the
   sandbox's processes are not counted) spent during the transfer, per GiB:
   the sum of /proc/PID/task/*/schedstat between the client's "tunnel up"
   and its result line (utime+stime from /proc/PID/stat where schedstat is
   missing).

Appends JSON lines to the results file. Times are reported, never asserted.
Everything is bounded by timeouts; the server is stopped at the end.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from exec_startup import git_commit, percentile, summary

SETPRIV = "/usr/bin/setpriv"
PYTHON = "/usr/bin/python3"
NOBODY = 65534
MIB = 1 << 20
DEGRADED = "limits.degraded"

# The client, identical in both modes; argv: HOST PORT direct|proxy BYTES.
# Prints one JSON object: bytes received after the tunnel is up, seconds from
# the first to the last byte.
CLIENT = r'''
import base64, json, os, socket, sys, time, urllib.parse
host, port, mode, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
buf = bytearray(1 << 20)
first = None
got = 0
if mode == "proxy":
    p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    s = socket.create_connection((p.hostname, p.port), timeout=30)
    cred = base64.b64encode(("%s:%s" % (urllib.parse.unquote(p.username),
                                         urllib.parse.unquote(p.password))).encode()).decode()
    s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\nProxy-Authorization: Basic %s\r\n\r\n"
               % (host, port, host, port, cred)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(4096)
        if not c:
            sys.exit("proxy closed before answering: %r" % head)
        head += c
        if len(head) > 8192:
            sys.exit("proxy answer too long")
    head, _, rest = head.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if status.split()[1:2] != [b"200"]:
        sys.exit("proxy refused: %r" % status)
    if rest:
        first = time.perf_counter()
        got = len(rest)
else:
    s = socket.create_connection((host, port), timeout=30)
print("up", flush=True)
last = first
while True:
    n = s.recv_into(buf)
    if not n:
        break
    last = time.perf_counter()
    if first is None:
        first = last
    got += n
if got != want or first is None or last <= first:
    sys.exit("received %d bytes, expected %d" % (got, want))
print(json.dumps({"bytes": got, "seconds": last - first}), flush=True)
time.sleep(0.2)  # the relay's threads stay for the CPU sample (not timed)
s.close()
'''


def task_cpu_ns(pid):
    """CPU time in ns of every live thread of pid, or None."""
    total = 0
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) * 10 ** 9 // os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                pass
    return total


def run_sampled(argv, timeout):
    """Runs a transfer: (exit code, result dict or None, stderr, CPU ns of
    argv's own process between "up" and the result line, or None)."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    result, cpu0, cpu = None, None, None
    deadline = time.monotonic() + timeout
    try:
        for line in p.stdout:
            line = line.strip()
            if line == b"up":
                cpu0 = task_cpu_ns(p.pid)
            elif line.startswith(b"{"):
                c1 = task_cpu_ns(p.pid)
                if cpu0 is not None and c1 is not None:
                    cpu = c1 - cpu0
                try:
                    result = json.loads(line.decode())
                except ValueError:
                    result = None
            if time.monotonic() > deadline:
                break
        p.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return -1, None, b"", None
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    return p.returncode, result if p.returncode == 0 else None, err, cpu


def serve(size_mib):
    """Server mode: print the port, then send size_mib MiB to every connection."""
    chunk = bytes(16 * MIB)  # preallocated, sent size_mib/16 times (plus the rest)
    total = size_mib * MIB
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    ls.settimeout(120)  # an orphaned server ends on its own
    print(ls.getsockname()[1], flush=True)
    view = memoryview(chunk)
    while True:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            return 0
        c.settimeout(60)
        try:
            left = total
            while left:
                n = min(left, len(view))
                c.sendall(view[:n])
                left -= n
            c.shutdown(socket.SHUT_WR)
            c.settimeout(5)
            while c.recv(4096):  # wait for the client to finish reading
                pass
        except OSError:
            pass
        finally:
            c.close()


def run_once(argv, timeout, capture=False):
    """Wall time in ms and exit code (-1 on timeout) of one run."""
    t0 = time.perf_counter_ns()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                           stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return (time.perf_counter_ns() - t0) / 1e6, -1, b"", b""
    ms = (time.perf_counter_ns() - t0) / 1e6
    return ms, p.returncode, p.stdout or b"", p.stderr or b""


def common_fields(bench):
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "bench": bench,
        "date": now.strftime("%Y-%m-%d"),
        "kernel": platform.release(),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
        "uid": os.getuid(),
    }


def startup_bench(glove, rounds, warmup, records):
    """Returns the number of failed runs."""
    common = dict(common_fields("limits-startup"), rounds=rounds, warmup=warmup)
    with_cmd = [glove, "exec", "--", "/bin/true"]
    without_cmd = [SETPRIV, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"] + with_cmd
    print("== start-up with limits vs without: %s exec -- /bin/true, %s" % (glove, platform.release()))
    print("   with:    as root; the run gets its own cgroup (memory, pids, CPU time limits)")
    print("   without: the same binary and command as uid %d via setpriv, which has no delegated" % NOBODY)
    print("            cgroup here: Glove runs degraded (no run cgroup; memory and pids unlimited,")
    print("            CPU time per process via RLIMIT_CPU only). Wall-time, disk and output limits")
    print("            apply in both. The ratio also carries any other root/unprivileged difference.")

    def unavailable(reason):
        print("   comparison not available: %s" % reason)
        records.append(dict(common, metric="ratio", numerator="with_limits",
                            denominator="without_limits", available=False, reason=reason))
        return 0

    if os.getuid() != 0:
        return unavailable("needs root (to get a run cgroup and to switch to uid %d)" % NOBODY)
    if not os.access(SETPRIV, os.X_OK):
        return unavailable("%s is missing" % SETPRIV)
    _, rc, _, err = run_once(with_cmd, 20, capture=True)
    if rc != 0:
        return unavailable("as root glove exits %d: %s" % (rc, err.decode(errors="replace").strip()))
    if DEGRADED.encode() in err:
        return unavailable("root gets no run cgroup either (%s)" % err.decode(errors="replace").strip())
    _, rc, _, err = run_once(without_cmd, 20, capture=True)
    if rc != 0:
        return unavailable("as uid %d glove exits %d: %s" % (NOBODY, rc, err.decode(errors="replace").strip()))
    if DEGRADED.encode() not in err:
        return unavailable("this host delegates cgroups to uid %d too, so it also runs with a cgroup: "
                           "there is no start-up without limits to compare" % NOBODY)

    cmds = {"with_limits": with_cmd, "without_limits": without_cmd}
    for _ in range(warmup):
        for argv in cmds.values():
            run_once(argv, 20)
    samples = {n: [] for n in cmds}
    failures = {n: 0 for n in cmds}
    names = list(cmds)
    for i in range(rounds):
        for name in (names if i % 2 == 0 else names[::-1]):
            ms, rc, _, _ = run_once(cmds[name], 20)
            if rc != 0:
                failures[name] += 1
            else:
                samples[name].append(ms)
    stats = {n: summary(samples[n]) for n in cmds if samples[n]}
    print("   %d interleaved rounds after %d warm-up (ms)" % (rounds, warmup))
    print("   %-15s %9s %9s %9s %9s %9s  %s" % ("", "median", "p90", "mean", "min", "max", "failures"))
    for name in cmds:
        st = stats.get(name)
        if st:
            print("   %-15s %9.2f %9.2f %9.2f %9.2f %9.2f  %d" % (
                name, st["median_ms"], st["p90_ms"], st["mean_ms"], st["min_ms"], st["max_ms"], failures[name]))
        else:
            print("   %-15s no successful run, %d failures" % (name, failures[name]))
        records.append(dict(common, command=name, argv=cmds[name], failures=failures[name], **(st or {})))
    if len(stats) == 2:
        rm = stats["with_limits"]["median_ms"] / stats["without_limits"]["median_ms"]
        rp = stats["with_limits"]["p90_ms"] / stats["without_limits"]["p90_ms"]
        print("   ratio with/without limits: median %.2f, p90 %.2f (%+.2f ms at the median)" % (
            rm, rp, stats["with_limits"]["median_ms"] - stats["without_limits"]["median_ms"]))
        records.append(dict(common, metric="ratio", numerator="with_limits", denominator="without_limits",
                            available=True, ratio_median=round(rm, 3), ratio_p90=round(rp, 3)))
    return sum(failures.values())


def egress_bench(glove, transfers, size_mib, records, before=None):
    """Returns the number of failed transfers."""
    common = dict(common_fields("egress-throughput"), transfers=transfers, size_mib=size_mib)
    size = size_mib * MIB
    print()
    print("== egress throughput: %d MiB from a server on 127.0.0.1, glove proxy vs direct" % size_mib)
    print("   glove:  client inside glove exec --egress-allow 127.0.0.1:PORT,")
    print("           HTTP CONNECT through the per-run proxy (credentials from HTTPS_PROXY)")
    if before:
        print("   before: the same through %s (with the old --egress-allow-private if it takes it)" % before)
    print("   direct: the same client on the host, connecting straight to the server")
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", "--size-mib", str(size_mib)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    names = ["glove"] + (["before"] if before else []) + ["direct"]
    failures = {n: 0 for n in names}
    mibps = {n: [] for n in names}
    cpu_per_gib = {n: [] for n in names}
    try:
        line = server.stdout.readline().strip()
        if not line:
            print("   the server did not start")
            return 1
        port = int(line)
        client = lambda mode: [PYTHON, "-c", CLIENT, "127.0.0.1", str(port), mode, str(size)]
        cmds = {
            "glove": [glove, "exec", "--egress-allow", "127.0.0.1:%d" % port, "--"] + client("proxy"),
            "direct": client("direct"),
        }
        if before:
            # A binary from before issue 14 needs the old global switch to reach
            # a loopback address; a newer one refuses that switch.
            _, _, _, probe = run_once([before, "exec", "--egress-allow-private", "--", "/bin/true"], 20, capture=True)
            old = [] if b"egress.private_needs_rule" in probe else ["--egress-allow-private"]
            cmds["before"] = [before, "exec", "--egress-allow", "127.0.0.1:%d" % port] + old + ["--"] + client("proxy")
        for i in range(transfers):
            for name in (names if i % 2 == 0 else names[::-1]):
                rc, r, err, cpu = run_sampled(cmds[name], 60)
                if r is None:
                    failures[name] += 1
                    print("   %s transfer %d failed (exit %d): %s" % (
                        name, i + 1, rc, err.decode(errors="replace").strip()[-300:]))
                    continue
                rate = r["bytes"] / MIB / r["seconds"]
                mibps[name].append(rate)
                rec = dict(common, command=name, transfer=i + 1, bytes=r["bytes"],
                           seconds=round(r["seconds"], 6), mib_per_s=round(rate, 1))
                if cpu is not None and name != "direct":
                    per = cpu / 1e9 / (r["bytes"] / (1 << 30))
                    cpu_per_gib[name].append(per)
                    rec["process_cpu_s_per_gib"] = round(per, 4)
                records.append(rec)
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)
        server.stdout.close()
    print("   %d transfers each, interleaved (MiB/s, first to last byte; CPU: Glove's process, s/GiB)" % transfers)
    print("   %-8s %9s %9s %9s %9s  %-28s %s" % ("", "median", "min", "max", "cpu/GiB", "samples", "failures"))
    med = {}
    for name in names:
        v = mibps[name]
        if v:
            med[name] = statistics.median(v)
            c = cpu_per_gib[name]
            cs = "%9.3f" % statistics.median(c) if c else "%9s" % "-"
            print("   %-8s %9.0f %9.0f %9.0f %s  %-28s %d" % (name, med[name], min(v), max(v), cs,
                                                         " ".join("%.0f" % x for x in v), failures[name]))
            extra = {"median_process_cpu_s_per_gib": round(statistics.median(c), 4)} if c else {}
            records.append(dict(common, command=name, metric="summary", median_mib_per_s=round(med[name], 1),
                                min_mib_per_s=round(min(v), 1), max_mib_per_s=round(max(v), 1),
                                failures=failures[name], **extra))
        else:
            print("   %-8s no successful transfer, %d failures" % (name, failures[name]))
    for name in ("glove", "before"):
        if name in med and "direct" in med:
            ratio = med[name] / med["direct"]
            print("   ratio %s/direct: %.2f (issue 31's goal: at least 0.9; reported, not checked)" % (name, ratio))
            records.append(dict(common, metric="ratio", numerator=name, denominator="direct",
                                ratio_median=round(ratio, 3), goal=0.9))
    return sum(failures.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glove", help="path of the glove binary")
    ap.add_argument("--rounds", type=int, default=100, help="start-up rounds (default 100)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--transfers", type=int, default=3, help="egress transfers per mode (default 3)")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--results", default="bench/results/limits-egress.jsonl", help="JSONL file to append to")
    ap.add_argument("--only", choices=["egress"], help="run only this part")
    ap.add_argument("--glove-before", help="a second glove binary to measure egress through (old syntax)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        return serve(a.size_mib)
    if not a.glove or not os.access(a.glove, os.X_OK):
        ap.error("--glove must name the glove binary")

    # One copy of the binary, reachable by uid 65534, for every run.
    tmp = tempfile.mkdtemp(prefix="glove-bench-")
    records = []
    try:
        os.chmod(tmp, 0o755)
        glove = os.path.join(tmp, "glove")
        shutil.copyfile(a.glove, glove)
        os.chmod(glove, 0o755)
        before = None
        if a.glove_before:
            before = os.path.join(tmp, "glove-before")
            shutil.copyfile(a.glove_before, before)
            os.chmod(before, 0o755)
        failed = 0 if a.only == "egress" else startup_bench(glove, a.rounds, a.warmup, records)
        failed += egress_bench(glove, a.transfers, a.size_mib, records, before)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if records:
            with open(a.results, "a", encoding="utf-8") as fh:
                for r in records:
                    fh.write(json.dumps(r, sort_keys=True) + "\n")
            print("appended %d records to %s" % (len(records), a.results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
