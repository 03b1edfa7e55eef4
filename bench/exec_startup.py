#!/usr/bin/python3
"""Start-up benchmark driver: `glove exec -- /bin/true` against an equivalent
bubblewrap sandbox, interleaved in one run.

Each round runs both commands once, alternating which goes first, after a
warm-up. Prints median, p90, mean and the glove/bwrap ratio of medians and
p90s, and appends one JSON line per command plus one with the ratios to the
results file (with date, kernel, git commit). Times are reported, never
asserted.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time


def run_once(argv):
    """Wall time in ms and exit status; a command that cannot be started
    counts as a failure (status -1), not a crash of the benchmark."""
    t0 = time.perf_counter_ns()
    try:
        rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
    except OSError as e:
        print("bench: cannot run %s: %s" % (argv[0], e), file=sys.stderr)
        rc = -1
    return (time.perf_counter_ns() - t0) / 1e6, rc


def percentile(sorted_values, p):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def summary(samples):
    s = sorted(samples)
    return {
        "samples": len(s),
        "median_ms": round(statistics.median(s), 3),
        "p90_ms": round(percentile(s, 90), 3),
        "mean_ms": round(statistics.fmean(s), 3),
        "stdev_ms": round(statistics.stdev(s), 3) if len(s) > 1 else 0.0,
        "min_ms": round(s[0], 3),
        "max_ms": round(s[-1], 3),
    }


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
    a = ap.parse_args()

    cmds = {"glove": shlex.split(a.glove)}
    if a.bwrap:
        cmds["bwrap"] = shlex.split(a.bwrap)

    for name, argv in cmds.items():
        _, rc = run_once(argv)
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
            ms, rc = run_once(cmds[name])
            if rc != 0:
                failures[name] += 1
                continue
            samples[name].append(ms)

    now = datetime.datetime.now(datetime.timezone.utc)
    common = {
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "bench": "exec-startup",
        "date": now.strftime("%Y-%m-%d"),
        "kernel": platform.release(),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
        "uid": os.getuid(),
        "rounds": a.rounds,
        "warmup": a.warmup,
    }
    stats = {name: summary(samples[name]) for name in cmds if samples[name]}
    records = []
    print("exec start-up, %d interleaved rounds after %d warm-up (ms)" % (a.rounds, a.warmup))
    print("%-6s %9s %9s %9s %9s %9s  %s" % ("", "median", "p90", "mean", "min", "max", "failures"))
    for name in cmds:
        st = stats.get(name)
        if st:
            print("%-6s %9.2f %9.2f %9.2f %9.2f %9.2f  %d" % (
                name, st["median_ms"], st["p90_ms"], st["mean_ms"], st["min_ms"], st["max_ms"],
                failures[name]))
        records.append(dict(common, command=name, argv=cmds[name], failures=failures[name], **(st or {})))
    if "glove" in stats and "bwrap" in stats:
        rm = stats["glove"]["median_ms"] / stats["bwrap"]["median_ms"]
        rp = stats["glove"]["p90_ms"] / stats["bwrap"]["p90_ms"]
        print("ratio glove/bwrap: median %.2f, p90 %.2f" % (rm, rp))
        records.append(dict(common, metric="ratio", numerator="glove", denominator="bwrap",
                            ratio_median=round(rm, 3), ratio_p90=round(rp, 3)))
    with open(a.results, "a", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    print("appended %d records to %s" % (len(records), a.results))
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
