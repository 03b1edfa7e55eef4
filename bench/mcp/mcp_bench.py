#!/usr/bin/python3
"""glove run benchmark: tools/call round trips through Glove against the same
client talking directly to the same upstream, in both protocol eras, side by
side in one run.

  bench/mcp/mcp_bench.py --glove PATH [--glove-before PATH] [--calls N] [--rounds R]
                         [--eras legacy,modern] [--upstreams fast,sdk] [--clients sdk,raw]
                         [--inflight 1,16] [--modes direct,exec,glove] [--results FILE]

Eras: legacy is initialize then tools/call (MCP 2025-11-25); modern is MCP
2026-07-28: no initialize, server/discover once, and every request carries
params._meta "io.modelcontextprotocol/protocolVersion" "2026-07-28" and the
client capabilities. The upstream serves the era the client speaks (so the
modern rows go through Glove's modern upstream client, which finds the
upstream with server/discover after its initialize is refused).

The client is bench/mcp/bench-client.mjs: with --clients sdk (the default)
a real SDK client (@modelcontextprotocol/sdk 1.x in the legacy era,
@modelcontextprotocol/client 2.x pinned to 2026-07-28 in the modern era);
with raw, hand-written JSON-RPC (the same code in both eras but the
envelope, and a smaller share of the CPUs for the client). The upstreams:
fast is bench/mcp/fast-upstream.mjs --era ERA (a minimal hand-written
server, so that Glove's share is visible); sdk is a real SDK server of the
era: server-everything (legacy) or tests/fixtures/interop/modern-server.mjs
(@modelcontextprotocol/server 2.x, serveStdio with legacy: 'reject'), both
through their echo tool.

direct: the client's stdout is piped to the upstream's stdin and back,
        nothing in between.
relay:  as direct, with glove-bench-relay (bench/mcp/relay.c, built next to
        glove) between client and upstream: a C loop copying bytes both
        ways (epoll_wait, read, write), nothing parsed, no sandbox. The
        floor of any process in the middle: two more pipe hops and two more
        wake-ups per call.
exec:   as direct, but the client runs contained by `glove exec
        --direct-stdio` (its pipes passed to it as they are, as glove run
        does for the agent and a contained upstream): a diagnostic, off by
        default, of the cost of the sandbox alone, seccomp included,
        without mediation and without a relay.
glove:  `glove run --upstream u=node,UPSTREAM --allow u.echo -- node
        bench-client.mjs`: the client contained, the upstream contained,
        Glove mediating every call; with --audit, also --audit-log FILE
        (a call and a call_result record per call).
before: (with --glove-before PATH) the same through another glove binary
        (e.g. one built from an older commit), in the same rounds, so that
        a change is measured side by side with what it changes.

For each upstream, era, client and concurrency (1 call in flight, then 16),
the modes alternate for R rounds (the order rotates every round); the
figures are the medians over rounds of p50/p99 latency (µs) and calls per
second. The client runs the warm-up calls, pauses, runs the timed calls,
and pauses again; each pause is announced by a line in its output file, and
the benchmark samples CPU times while the client is paused (nothing runs
then), so the figures cover exactly the timed calls. Glove's CPU per call
is the CPU time (the sum of /proc/PID/task/*/schedstat, in ns) of the glove
process tree — `glove run` and every descendant running the glove binary
(glove-init, the contained upstream's launcher), never the agent or the
upstream — over the timed calls. Its peak RSS is the largest VmHWM read from
/proc/PID/status of the glove process while it runs. Appends one JSON line
per measurement and one summary line per configuration to the results file,
and prints a summary with the latency Glove adds at p50 and its throughput
as a ratio of direct's, per era side by side. Times are reported, never
asserted.
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTS = os.path.join(REPO, "tests")
MODULES = os.path.join(TESTS, "node_modules")
NODE = "/usr/bin/node"
CLIENT = os.path.join(HERE, "bench-client.mjs")
ERAS = ("legacy", "modern")
UPSTREAMS = {
    ("fast", "legacy"): [os.path.join(HERE, "fast-upstream.mjs"), "--era", "legacy"],
    ("fast", "modern"): [os.path.join(HERE, "fast-upstream.mjs"), "--era", "modern"],
    ("sdk", "legacy"): [os.path.join(MODULES, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"],
    ("sdk", "modern"): [os.path.join(TESTS, "fixtures", "interop", "modern-server.mjs"), "--modules", MODULES],
}

# The client's pause after the warm-up and after the timed calls, in ms:
# long enough for a sample taken while it lasts (polled every POLL_S).
PAUSE_MS = 200
POLL_S = 0.01


def git_commit():
    try:
        commit = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def client_argv(cfg, out, tool):
    return [NODE, CLIENT, "--era", cfg["era"], "--impl", cfg["client"], "--modules", MODULES, "--out", out,
            "--tool", tool, "--n", str(cfg["calls"]), "--warmup", str(cfg["warmup"]), "--inflight",
            str(cfg["inflight"]), "--pause-ms", str(PAUSE_MS)]


def read_result(path):
    with open(path) as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    timed = [r for r in recs if r.get("op") == "bench" and r.get("label") == "timed"]
    if not timed or not all(r.get("pass") for r in recs):
        raise RuntimeError("the client failed: %s" % json.dumps(recs)[-800:])
    return timed[0]


def vm_hwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def task_cpu_ns(pid):
    """CPU time in ns of every live thread of pid (schedstat), or None."""
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
            pass
    return total


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def tree_cpu_ns(root, exe):
    """CPU time of root and of every descendant whose executable is exe (the
    glove binary: glove-init, launchers), not of the programs they run."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid != root:
            try:
                if os.path.realpath("/proc/%d/exe" % pid) != exe:
                    todo.extend(children(pid))  # a program Glove runs: not counted, but its children may be glove
                    continue
            except OSError:
                continue
        v = task_cpu_ns(pid)
        if v is not None:
            total += v
        todo.extend(children(pid))
    return total


def bench_lines(path):
    """How many bench lines the client has written so far."""
    try:
        with open(path) as fh:
            return sum(1 for line in fh if '"op":"bench"' in line)
    except OSError:
        return 0


def fresh_out(tmp, name):
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, name)
    if os.path.exists(out):
        os.unlink(out)
    return outdir, out


def run_direct(cfg, tmp, glove=None, relay=None):
    """The client and the upstream joined by two pipes; with glove, the
    client contained by glove exec on the same pipes; with relay, the
    upstream behind that relay."""
    outdir, out = fresh_out(tmp, "direct.jsonl")
    c2u_r, c2u_w = os.pipe()
    u2c_r, u2c_w = os.pipe()
    up = subprocess.Popen(([relay] if relay else []) + [NODE] + UPSTREAMS[(cfg["upstream"], cfg["era"])], stdin=c2u_r,
                          stdout=u2c_w, stderr=subprocess.DEVNULL)
    argv = client_argv(cfg, out, "echo")
    if glove:
        argv = [glove, "exec", "--direct-stdio", "--read", TESTS, "--read", HERE, "--write", outdir, "--"] + argv
    cl = subprocess.Popen(argv, stdin=u2c_r, stdout=c2u_w, stderr=subprocess.PIPE)
    for fd in (c2u_r, c2u_w, u2c_r, u2c_w):
        os.close(fd)
    _, err = cl.communicate(timeout=600)
    up.terminate()
    up.wait()
    if cl.returncode != 0:
        raise RuntimeError("direct client exit %d: %s %s" % (cl.returncode, err.decode(errors="replace")[-600:],
                                                             open(out).read()[-600:] if os.path.exists(out) else ""))
    return read_result(out), None, None


def run_glove(cfg, glove, tmp):
    """The same client contained by glove run, the same upstream behind it
    (and with cfg["audit"], an audit log, removed afterwards)."""
    outdir, out = fresh_out(tmp, "glove.jsonl")
    spec = ",".join(["u=" + NODE] + UPSTREAMS[(cfg["upstream"], cfg["era"])])
    audit = []
    if cfg["audit"]:
        log = os.path.join(tmp, "audit.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        audit = ["--audit-log", log]
    # The upstream runs contained: its script and node_modules, read-only.
    argv = [glove, "run", "--upstream", spec, "--upstream-ro", "u:" + HERE, "--upstream-ro", "u:" + TESTS,
            "--allow", "u.echo", "--read", TESTS, "--read", HERE, "--write", outdir] + audit + ["--"] + \
        client_argv(cfg, out, "u.echo")
    exe = os.path.realpath(glove)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [None]
    marks = {}  # bench lines written -> glove tree CPU ns sampled in the pause after them
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            v = vm_hwm_kib(p.pid)
            if v is not None and (peak[0] is None or v > peak[0]):
                peak[0] = v
            n = bench_lines(out)
            if n in (1, 2) and n not in marks:
                marks[n] = tree_cpu_ns(p.pid, exe)
            stop.wait(POLL_S)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = p.communicate(timeout=600)
    stop.set()
    t.join()
    if p.returncode != 0:
        raise RuntimeError("glove run exit %d: %s %s" % (p.returncode, err.decode(errors="replace")[-600:],
                                                         open(out).read()[-600:] if os.path.exists(out) else ""))
    cpu = None
    if 1 in marks and 2 in marks:
        cpu = round((marks[2] - marks[1]) / 1e3 / cfg["calls"], 1)
    return read_result(out), peak[0], cpu


def med(values):
    return round(statistics.median(values), 1)


def csv(text, allowed, what):
    items = [x for x in text.split(",") if x]
    bad = [x for x in items if x not in allowed]
    if not items or bad:
        sys.exit("bench: --%s takes %s (got %s)" % (what, ", ".join(allowed), text))
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glove", required=True, help="the glove binary")
    ap.add_argument("--glove-before", help="a second glove binary measured in the same rounds (mode \"before\")")
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per measurement")
    ap.add_argument("--warmup", type=int, default=200, help="untimed calls first")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per configuration")
    ap.add_argument("--eras", default="legacy,modern", help="comma-separated: legacy, modern")
    ap.add_argument("--upstreams", default="fast,sdk", help="comma-separated: fast, sdk")
    ap.add_argument("--clients", default="sdk", help="comma-separated: sdk, raw")
    ap.add_argument("--inflight", default="1,16", help="comma-separated concurrency levels")
    ap.add_argument("--modes", default="direct,relay,glove",
                    help="comma-separated: direct, relay, exec, glove (before is added with --glove-before)")
    ap.add_argument("--audit", action="store_true",
                    help="the mediated modes write an audit log (glove run --audit-log, a file in the temporary "
                         "directory): a call and a call_result record per call")
    ap.add_argument("--results", default=os.path.join(REPO, "bench", "results", "mcp.jsonl"))
    a = ap.parse_args()

    eras = csv(a.eras, ERAS, "eras")
    upstreams = csv(a.upstreams, ("fast", "sdk"), "upstreams")
    clients = csv(a.clients, ("sdk", "raw"), "clients")
    modes = csv(a.modes, ("direct", "relay", "exec", "glove"), "modes")
    relay = os.path.join(os.path.dirname(os.path.abspath(a.glove)), "glove-bench-relay")
    if "relay" in modes and not os.access(relay, os.X_OK):
        print("bench: %s is missing (built with glove); no relay rows" % relay, file=sys.stderr)
        modes.remove("relay")
    inflights = [int(x) for x in a.inflight.split(",") if x]
    if "direct" not in modes:
        sys.exit("bench: --modes needs direct (every figure is relative to it)")
    for path in [NODE, CLIENT] + [UPSTREAMS[(u, e)][0] for u in upstreams for e in eras]:
        if not os.path.exists(path):
            sys.exit("bench: %s is missing (scripts/deps.sh installs node and tests/node_modules)" % path)
    binaries = {"glove": a.glove}
    if a.glove_before:
        modes.append("before")
        binaries["before"] = a.glove_before
    mediated = [m for m in ("before", "glove") if m in modes]

    base = {
        "bench": "mcp-tools-call",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "uid": os.getuid(),
        "commit": git_commit(),
        "calls": a.calls,
        "rounds": a.rounds,
        "audit": a.audit,
    }
    os.makedirs(os.path.dirname(a.results), exist_ok=True)
    lines = []
    figs = {}  # (upstream, client, inflight, era, mode) -> summary figures of a mediated mode
    print("%-8s %-6s %-6s %8s %-6s %10s %10s %10s %10s %14s" % (
        "upstream", "client", "era", "inflight", "mode", "p50 µs", "p99 µs", "calls/s", "glove HWM", "glove CPU/call"))
    with tempfile.TemporaryDirectory(prefix="glove-bench-mcp.") as tmp:
        os.chmod(tmp, 0o755)
        for upstream in upstreams:
            for client in clients:
                for inflight in inflights:
                    for era in eras:
                        cfg = dict(upstream=upstream, client=client, era=era, inflight=inflight, calls=a.calls,
                                   warmup=a.warmup, audit=a.audit)
                        got = {m: [] for m in modes}
                        peaks = {m: [] for m in mediated}
                        cpus = {m: [] for m in mediated}
                        for rnd in range(a.rounds):
                            order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                            for mode in order:
                                peak = cpu = None
                                if mode == "direct":
                                    r, _, _ = run_direct(cfg, tmp)
                                elif mode == "relay":
                                    r, _, _ = run_direct(cfg, tmp, relay=relay)
                                elif mode == "exec":
                                    r, _, _ = run_direct(cfg, tmp, glove=a.glove)
                                else:
                                    r, peak, cpu = run_glove(cfg, binaries[mode], tmp)
                                    if peak is not None:
                                        peaks[mode].append(peak)
                                    if cpu is not None:
                                        cpus[mode].append(cpu)
                                got[mode].append(r)
                                rec = dict(base, upstream=upstream, client=client, era=era, inflight=inflight, mode=mode,
                                           round=rnd, p50_us=r["p50_us"], p90_us=r["p90_us"], p99_us=r["p99_us"],
                                           max_us=r["max_us"], calls_per_s=r["calls_per_s"])
                                if mode in mediated:
                                    rec["glove_peak_rss_kib"] = peak
                                    rec["glove_cpu_us_per_call"] = cpu
                                lines.append(rec)
                        s = {}
                        for mode in modes:
                            s[mode] = {k: med([r[k] for r in got[mode]]) for k in ("p50_us", "p99_us", "calls_per_s")}
                            print("%-8s %-6s %-6s %8d %-6s %10.1f %10.1f %10.1f %10s %14s" % (
                                upstream, client, era, inflight, mode, s[mode]["p50_us"], s[mode]["p99_us"],
                                s[mode]["calls_per_s"],
                                ("%d KiB" % max(peaks[mode])) if mode in mediated and peaks[mode] else "",
                                ("%.1f µs" % med(cpus[mode])) if mode in mediated and cpus[mode] else ""), flush=True)
                        summary = dict(base, upstream=upstream, client=client, era=era, inflight=inflight,
                                       mode="summary", **{m: s[m] for m in modes})
                        if "exec" in modes:
                            summary["sandbox_only_added_p50_us"] = round(s["exec"]["p50_us"] - s["direct"]["p50_us"], 1)
                        if "relay" in modes:
                            summary["relay_added_p50_us"] = round(s["relay"]["p50_us"] - s["direct"]["p50_us"], 1)
                            summary["relay_throughput_ratio"] = round(s["relay"]["calls_per_s"] / s["direct"]["calls_per_s"], 3)
                            figs[(upstream, client, inflight, era, "relay")] = {
                                "added_p50_us": summary["relay_added_p50_us"],
                                "added_p99_us": round(s["relay"]["p99_us"] - s["direct"]["p99_us"], 1),
                                "throughput_ratio": summary["relay_throughput_ratio"],
                                "glove_cpu_us_per_call": None}
                        for m in mediated:
                            fig = {
                                "added_p50_us": round(s[m]["p50_us"] - s["direct"]["p50_us"], 1),
                                "added_p99_us": round(s[m]["p99_us"] - s["direct"]["p99_us"], 1),
                                "throughput_ratio": round(s[m]["calls_per_s"] / s["direct"]["calls_per_s"], 3),
                                "glove_peak_rss_kib": max(peaks[m]) if peaks[m] else None,
                                "glove_cpu_us_per_call": med(cpus[m]) if cpus[m] else None,
                            }
                            # The figures of the binary under test stay at the top level.
                            if m == "glove":
                                summary.update(fig)
                            else:
                                summary.update({"before_" + k: v for k, v in fig.items()})
                            figs[(upstream, client, inflight, era, m)] = fig
                        lines.append(summary)
    print()
    print("Against direct, per era (added µs at p50 / p99, throughput as a ratio of direct, Glove's CPU per call;")
    print("relay: a C byte relay in the middle, the floor of any mediator):")
    head = "%-8s %-6s %8s %-6s" % ("upstream", "client", "inflight", "glove")
    for era in eras:
        head += " | %-6s %9s %9s %7s %9s" % (era + ":", "+p50 µs", "+p99 µs", "thr", "CPU/call")
    print(head)
    for upstream in upstreams:
        for client in clients:
            for inflight in inflights:
                for m in (["relay"] if "relay" in modes else []) + mediated:
                    row = "%-8s %-6s %8d %-6s" % (upstream, client, inflight,
                                                  "after" if m == "glove" and "before" in modes else m)
                    for era in eras:
                        f = figs[(upstream, client, inflight, era, m)]
                        cpu = f["glove_cpu_us_per_call"]
                        row += " | %-6s %9.1f %9.1f %6.3fx %9s" % ("", f["added_p50_us"], f["added_p99_us"],
                                                                 f["throughput_ratio"],
                                                                 "%.1f µs" % cpu if cpu is not None else "n/a")
                    print(row)
    with open(a.results, "a") as fh:
        for rec in lines:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print("appended %d lines to %s" % (len(lines), os.path.relpath(a.results, REPO)))


if __name__ == "__main__":
    main()
