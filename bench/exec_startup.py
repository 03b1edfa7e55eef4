#!/usr/bin/python3
"""Start-up benchmark driver: `glove exec -- /bin/true` against an equivalent
bubblewrap sandbox, interleaved in one run.

Each round runs both commands once, alternating which goes first, after a
warm-up. For each start it takes the wall time and the CPU time (user + sys
from the rusage of wait4(2)). The driver is a child subreaper, so the CPU
time covers every process of the start: bwrap does not reap its sandbox's
PID 1 (it exits once it has the status), which would otherwise be
reparented to init and its CPU time, the agent's included, lost from the
comparison; glove reaps its PID 1 itself. The orphans are reaped after the
command's exit, which ends the wall time. Prints median, p90, mean and the
glove/bwrap ratios of wall and CPU medians and p90s; then, with --strace,
the system calls of one start of each command (`strace -f -c`: total and the
five most frequent). Appends one JSON line per command plus one with the
ratios to the results file (with date, kernel, git commit, mode). Times are
reported, never asserted.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

DEVNULL_ACTIONS = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Orphaned descendants of the measured commands are reparented here
    (prctl(2) PR_SET_CHILD_SUBREAPER); False when that fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans():
    """(user, sys) seconds of every descendant left to this subreaper."""
    user = sys_ = 0.0
    while True:
        try:
            _, _, ru = os.wait4(-1, 0)
        except ChildProcessError:
            return user, sys_
        except InterruptedError:
            continue
        user += ru.ru_utime
        sys_ += ru.ru_stime


def run_once(argv):
    """(wall ms, user CPU ms, sys CPU ms, exit status) of one start; a
    command that cannot be started counts as a failure (status -1), not a
    crash of the benchmark."""
    t0 = time.perf_counter_ns()
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=DEVNULL_ACTIONS)
    except OSError as e:
        print("bench: cannot run %s: %s" % (argv[0], e), file=sys.stderr)
        return (time.perf_counter_ns() - t0) / 1e6, 0.0, 0.0, -1
    while True:
        try:
            _, status, ru = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    wall = (time.perf_counter_ns() - t0) / 1e6
    ou, os_ = reap_orphans()
    return wall, (ru.ru_utime + ou) * 1e3, (ru.ru_stime + os_) * 1e3, os.waitstatus_to_exitcode(status)


def strace_count(argv, strace):
    """System calls of one start: {"total", "errors", "distinct", "top"} from
    `strace -f -c`, top being the five most frequent [name, calls]; None when
    strace fails (the reason is printed)."""
    with tempfile.NamedTemporaryFile(prefix="glove-bench-strace-", suffix=".txt") as out:
        r = subprocess.run([strace, "-f", "-c", "-o", out.name, "--"] + argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print("bench: strace of %s failed (exit %d): %s" % (argv[0], r.returncode, r.stderr.strip()[-300:]),
                  file=sys.stderr)
            return None
        rows, total, errors = [], None, 0
        for line in open(out.name, encoding="utf-8", errors="replace"):
            f = line.split()
            if len(f) < 5 or f[0].startswith(("%", "-")):
                continue
            # % time, seconds, usecs/call, calls, [errors], name (the total
            # line too)
            name, nums = f[-1], f[:-1]
            try:
                calls = int(nums[3])
                if name == "total":
                    total = calls
                    errors = int(nums[4]) if len(nums) > 4 else 0
                else:
                    rows.append((name, calls))
            except (ValueError, IndexError):
                continue
    if total is None:
        print("bench: no summary in the strace output of %s" % argv[0], file=sys.stderr)
        return None
    rows.sort(key=lambda x: (-x[1], x[0]))
    return {"total": total, "errors": errors, "distinct": len(rows), "top": [[n, c] for n, c in rows[:5]]}


def percentile(sorted_values, p):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def summary(samples):
    """samples: (wall, user, sys) ms per start, or wall ms alone (then the
    CPU keys are left out)."""
    rows = [x if isinstance(x, tuple) else (x, None, None) for x in samples]
    s = sorted(w for w, _, _ in rows)
    out = {
        "samples": len(s),
        "median_ms": round(statistics.median(s), 3),
        "p90_ms": round(percentile(s, 90), 3),
        "mean_ms": round(statistics.fmean(s), 3),
        "stdev_ms": round(statistics.stdev(s), 3) if len(s) > 1 else 0.0,
        "min_ms": round(s[0], 3),
        "max_ms": round(s[-1], 3),
    }
    if all(u is not None for _, u, _ in rows):
        cpu = sorted(u + k for _, u, k in rows)
        out.update({
            "cpu_median_ms": round(statistics.median(cpu), 3),
            "cpu_p90_ms": round(percentile(cpu, 90), 3),
            "cpu_mean_ms": round(statistics.fmean(cpu), 3),
            # The user/sys split is the kernel's tick-based estimate (a short
            # start may be charged wholly to one); their sum is the measured
            # run time.
            "user_median_ms": round(statistics.median(u for _, u, _ in rows), 3),
            "sys_median_ms": round(statistics.median(k for _, _, k in rows), 3),
        })
    return out


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glove", required=True, help="glove command line (shell words)")
    ap.add_argument("--bwrap", help="bwrap command line (shell words); omitted: glove alone")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--results", required=True, help="JSONL file to append to")
    ap.add_argument("--mode", default="root" if os.getuid() == 0 else "unprivileged",
                    help="label of the records: root or unprivileged")
    ap.add_argument("--commit", help="git commit to record (default: the checkout of this script)")
    ap.add_argument("--strace", help="strace binary: count the system calls of one start of each command")
    a = ap.parse_args()
    subreaper = become_subreaper()
    if not subreaper:
        print("bench: cannot become a child subreaper; CPU time misses processes a command does not reap",
              file=sys.stderr)

    cmds = {"glove": shlex.split(a.glove)}
    if a.bwrap:
        cmds["bwrap"] = shlex.split(a.bwrap)

    for name, argv in cmds.items():
        rc = run_once(argv)[3]
        if rc != 0:
            sys.exit("bench: %s does not run (exit %d): %s" % (name, rc, shlex.join(argv)))
    for _ in range(a.warmup):
        for argv in cmds.values():
            run_once(argv)

    samples = {name: [] for name in cmds}
    failures = {name: 0 for name in cmds}
    names = list(cmds)
    for i in range(a.rounds):
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            wall, user, sys_, rc = run_once(cmds[name])
            if rc != 0:
                failures[name] += 1
                continue
            samples[name].append((wall, user, sys_))
    syscalls = {name: strace_count(argv, a.strace) for name, argv in cmds.items()} if a.strace else {}

    now = datetime.datetime.now(datetime.timezone.utc)
    common = {
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "bench": "exec-startup",
        "date": now.strftime("%Y-%m-%d"),
        "kernel": platform.release(),
        "commit": a.commit or git_commit(),
        "cpus": os.cpu_count(),
        "uid": os.getuid(),
        "mode": a.mode,
        "rounds": a.rounds,
        "warmup": a.warmup,
        # true: CPU time covers every process of a start (orphans reaped here)
        "cpu_all_processes": subreaper,
    }
    stats = {name: summary(samples[name]) for name in cmds if samples[name]}
    records = []
    print("exec start-up as %s (uid %d), %d interleaved rounds after %d warm-up (ms)" % (
        a.mode, os.getuid(), a.rounds, a.warmup))
    print("%-6s %9s %9s %9s %9s %9s | %9s %9s %9s %9s  %s" % (
        "", "median", "p90", "mean", "min", "max", "cpu med", "cpu p90", "user", "sys", "failures"))
    for name in cmds:
        st = stats.get(name)
        if st:
            print("%-6s %9.2f %9.2f %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f  %d" % (
                name, st["median_ms"], st["p90_ms"], st["mean_ms"], st["min_ms"], st["max_ms"],
                st["cpu_median_ms"], st["cpu_p90_ms"], st["user_median_ms"], st["sys_median_ms"],
                failures[name]))
        extra = {"syscalls": syscalls[name]} if syscalls.get(name) else {}
        records.append(dict(common, command=name, argv=cmds[name], failures=failures[name], **(st or {}), **extra))
    ratio = {}
    if "glove" in stats and "bwrap" in stats:
        g, b = stats["glove"], stats["bwrap"]
        ratio = {
            "ratio_median": round(g["median_ms"] / b["median_ms"], 3),
            "ratio_p90": round(g["p90_ms"] / b["p90_ms"], 3),
        }
        if b["cpu_median_ms"] > 0 and b["cpu_p90_ms"] > 0:
            ratio["cpu_ratio_median"] = round(g["cpu_median_ms"] / b["cpu_median_ms"], 3)
            ratio["cpu_ratio_p90"] = round(g["cpu_p90_ms"] / b["cpu_p90_ms"], 3)
        print("ratio glove/bwrap: wall median %.2f, p90 %.2f; cpu median %s, p90 %s" % (
            ratio["ratio_median"], ratio["ratio_p90"], ratio.get("cpu_ratio_median", "n/a"),
            ratio.get("cpu_ratio_p90", "n/a")))
    if syscalls:
        for name in cmds:
            sc = syscalls.get(name)
            if sc:
                print("system calls of one start, %-5s %5d (%d failed, %d distinct); top: %s" % (
                    name, sc["total"], sc["errors"], sc["distinct"],
                    ", ".join("%s %d" % (n, c) for n, c in sc["top"])))
        if syscalls.get("glove") and syscalls.get("bwrap"):
            ratio["syscalls_glove"] = syscalls["glove"]["total"]
            ratio["syscalls_bwrap"] = syscalls["bwrap"]["total"]
            ratio["syscall_ratio"] = round(syscalls["glove"]["total"] / syscalls["bwrap"]["total"], 3)
            print("ratio glove/bwrap: system calls %.2f" % ratio["syscall_ratio"])
    if ratio:
        records.append(dict(common, metric="ratio", numerator="glove", denominator="bwrap", **ratio))
    with open(a.results, "a", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    print("appended %d records to %s" % (len(records), a.results))
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
