#!/usr/bin/python3
"""glove run benchmark: tools/call round trips through Glove against the same
client talking directly to the same upstream, side by side in one run.

  bench/mcp/mcp_bench.py --glove PATH [--calls N] [--rounds R] [--results FILE]

The client is tests/agents/mcp-client.mjs (Client from
@modelcontextprotocol/sdk) in its "bench" step; the upstreams are
bench/mcp/fast-upstream.mjs (a minimal hand-written server, so that Glove's
share is visible) and the real server-everything (its echo tool).

direct: the client's stdout is piped to the upstream's stdin and back,
        nothing in between.
exec:   as direct, but the client runs contained by `glove exec` (a
        diagnostic: the cost of the sandbox alone, seccomp included,
        without mediation).
glove:  `glove run --upstream u=node,UPSTREAM --allow u.echo -- node
        mcp-client.mjs`: the client contained, Glove mediating every call.

For each upstream and each concurrency (1 call in flight, then 16), the
modes alternate for R rounds (the order rotates every round); the figures are
the medians over rounds of p50/p99 latency (µs) and calls per second.
Glove's peak RSS is the largest VmHWM read from /proc/PID/status of the glove
process while it runs; its CPU time per call is its utime+stime (from
/proc/PID/stat, last read before it exits) over the calls it mediated,
warm-up included. Appends one JSON line per measurement and one summary
line per upstream and concurrency to the results file. Times are reported,
never asserted.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTS = os.path.join(REPO, "tests")
NODE = "/usr/bin/node"
CLIENT = os.path.join(TESTS, "agents", "mcp-client.mjs")
UPSTREAMS = {
    "fast": [os.path.join(HERE, "fast-upstream.mjs")],
    "everything": [os.path.join(TESTS, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
                   "stdio"],
}


def git_commit():
    try:
        commit = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def scenario(tool, calls, inflight, warmup):
    return json.dumps([{"op": "bench", "tool": tool, "args": {"message": "bench"}, "n": calls,
                        "inflight": inflight, "warmup": warmup}])


def read_result(path):
    with open(path) as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    bench = [r for r in recs if r.get("op") == "bench"]
    if not bench or not bench[0].get("pass"):
        raise RuntimeError("the client failed: %s" % json.dumps(recs)[-600:])
    return bench[0]


def vm_hwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def run_direct(upstream, calls, inflight, warmup, tmp, glove=None):
    """The client and the upstream joined by two pipes; with glove, the
    client contained by glove exec on the same pipes."""
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, "direct.jsonl")
    if os.path.exists(out):
        os.unlink(out)
    c2u_r, c2u_w = os.pipe()
    u2c_r, u2c_w = os.pipe()
    up = subprocess.Popen([NODE] + UPSTREAMS[upstream], stdin=c2u_r, stdout=u2c_w, stderr=subprocess.DEVNULL)
    argv = [NODE, CLIENT, "--out", out, scenario("echo", calls, inflight, warmup)]
    if glove:
        argv = [glove, "exec", "--read", TESTS, "--write", outdir, "--"] + argv
    cl = subprocess.Popen(argv, stdin=u2c_r, stdout=c2u_w, stderr=subprocess.PIPE)
    for fd in (c2u_r, c2u_w, u2c_r, u2c_w):
        os.close(fd)
    _, err = cl.communicate(timeout=600)
    up.terminate()
    up.wait()
    if cl.returncode != 0:
        raise RuntimeError("direct client exit %d: %s" % (cl.returncode, err.decode(errors="replace")[-600:]))
    return read_result(out), None, None


def run_glove(glove, upstream, calls, inflight, warmup, tmp):
    """The same client contained by glove run, the same upstream behind it."""
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, "glove.jsonl")
    if os.path.exists(out):
        os.unlink(out)
    spec = ",".join(["u=" + NODE] + UPSTREAMS[upstream])
    # The upstream runs contained: its script and node_modules, read-only.
    argv = [glove, "run", "--upstream", spec, "--upstream-ro", "u:" + HERE, "--upstream-ro",
            "u:" + os.path.join(TESTS, "node_modules"), "--allow", "u.echo", "--read", TESTS, "--write", outdir,
            "--", NODE, CLIENT, "--out", out, scenario("u.echo", calls, inflight, warmup)]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [None]
    ticks = [None]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            v = vm_hwm_kib(p.pid)
            if v is not None and (peak[0] is None or v > peak[0]):
                peak[0] = v
            t = cpu_ticks(p.pid)
            if t is not None:
                ticks[0] = t
            stop.wait(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = p.communicate(timeout=600)
    stop.set()
    t.join()
    if p.returncode != 0:
        raise RuntimeError("glove run exit %d: %s" % (p.returncode, err.decode(errors="replace")[-600:]))
    cpu = None
    if ticks[0] is not None:
        cpu = round(ticks[0] / os.sysconf("SC_CLK_TCK") * 1e6 / (calls + warmup), 1)
    return read_result(out), peak[0], cpu


def med(values):
    return round(statistics.median(values), 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glove", required=True, help="the glove binary")
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per measurement")
    ap.add_argument("--warmup", type=int, default=200, help="untimed calls first")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per configuration")
    ap.add_argument("--upstreams", default="fast,everything", help="comma-separated: fast, everything")
    ap.add_argument("--inflight", default="1,16", help="comma-separated concurrency levels")
    ap.add_argument("--results", default=os.path.join(REPO, "bench", "results", "mcp.jsonl"))
    a = ap.parse_args()

    for path in [NODE, CLIENT] + [UPSTREAMS[u][0] for u in a.upstreams.split(",")]:
        if not os.path.exists(path):
            sys.exit("bench: %s is missing (scripts/deps.sh installs node and tests/node_modules)" % path)

    base = {
        "bench": "mcp-tools-call",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "uid": os.getuid(),
        "commit": git_commit(),
        "calls": a.calls,
        "rounds": a.rounds,
    }
    os.makedirs(os.path.dirname(a.results), exist_ok=True)
    lines = []
    modes = ["direct", "exec", "glove"]
    print("%-10s %8s %-6s %10s %10s %12s %12s %14s" % ("upstream", "inflight", "mode", "p50 µs", "p99 µs", "calls/s",
                                                       "glove HWM", "glove CPU/call"))
    with tempfile.TemporaryDirectory(prefix="glove-bench-mcp.") as tmp:
        os.chmod(tmp, 0o755)
        for upstream in a.upstreams.split(","):
            for inflight in [int(x) for x in a.inflight.split(",")]:
                got = {m: [] for m in modes}
                peaks = []
                cpus = []
                for rnd in range(a.rounds):
                    order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                    for mode in order:
                        peak = cpu = None
                        if mode == "direct":
                            r, _, _ = run_direct(upstream, a.calls, inflight, a.warmup, tmp)
                        elif mode == "exec":
                            r, _, _ = run_direct(upstream, a.calls, inflight, a.warmup, tmp, glove=a.glove)
                        else:
                            r, peak, cpu = run_glove(a.glove, upstream, a.calls, inflight, a.warmup, tmp)
                            if peak is not None:
                                peaks.append(peak)
                            if cpu is not None:
                                cpus.append(cpu)
                        got[mode].append(r)
                        rec = dict(base, upstream=upstream, inflight=inflight, mode=mode, round=rnd,
                                   p50_us=r["p50_us"], p90_us=r["p90_us"], p99_us=r["p99_us"], max_us=r["max_us"],
                                   calls_per_s=r["calls_per_s"])
                        if mode == "glove":
                            rec["glove_peak_rss_kib"] = peak
                            rec["glove_cpu_us_per_call"] = cpu
                        lines.append(rec)
                s = {}
                for mode in modes:
                    s[mode] = {k: med([r[k] for r in got[mode]]) for k in ("p50_us", "p99_us", "calls_per_s")}
                    print("%-10s %8d %-6s %10.1f %10.1f %12.1f %12s %14s" % (
                        upstream, inflight, mode, s[mode]["p50_us"], s[mode]["p99_us"], s[mode]["calls_per_s"],
                        ("%d KiB" % max(peaks)) if mode == "glove" and peaks else "",
                        ("%.1f µs" % med(cpus)) if mode == "glove" and cpus else ""))
                added = round(s["glove"]["p50_us"] - s["direct"]["p50_us"], 1)
                added99 = round(s["glove"]["p99_us"] - s["direct"]["p99_us"], 1)
                ratio = round(s["glove"]["calls_per_s"] / s["direct"]["calls_per_s"], 3)
                sandbox = round(s["exec"]["p50_us"] - s["direct"]["p50_us"], 1)
                print("%-10s %8d => glove adds %.1f µs at p50 (%.1f at p99; the sandbox alone %.1f at p50);"
                      " throughput %.1f%% of direct" % (upstream, inflight, added, added99, sandbox, ratio * 100))
                lines.append(dict(base, upstream=upstream, inflight=inflight, mode="summary",
                                  direct=s["direct"], exec=s["exec"], glove=s["glove"], added_p50_us=added,
                                  added_p99_us=added99, sandbox_only_added_p50_us=sandbox, throughput_ratio=ratio,
                                  glove_peak_rss_kib=max(peaks) if peaks else None,
                                  glove_cpu_us_per_call=med(cpus) if cpus else None))
    with open(a.results, "a") as fh:
        for rec in lines:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print("appended %d lines to %s" % (len(lines), os.path.relpath(a.results, REPO)))


if __name__ == "__main__":
    main()
