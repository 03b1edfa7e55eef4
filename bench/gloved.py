#!/usr/bin/python3
"""gloved benchmark driver (make bench calls bench/gloved.sh, which runs this).

Measures, against the gloved next to the given glove build:

  create_session   durable creates per second on one connection (each one
                   validated, appended and fdatasync'ed with its seal before
                   the answer), next to validate_plan calls per second on the
                   same connection: the ratio is the price of durability;
  validate_plan    per-call round-trip latency (median, p90, p99), measured in
                   this process around each request;
  startup replay   time from exec to the first answered request for a store
                   of 10 000 sessions (the store bound), next to an empty
                   store, interleaved over several rounds.

Prints the figures and appends JSON lines to the results file. Times are
reported, never asserted.
"""
import argparse
import datetime
import json
import os
import platform
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
sys.path.insert(0, os.path.join(REPO, "tests", "integration", "lib"))
import journal_format as jf  # noqa: E402

POLICY = os.path.join(REPO, "tests", "fixtures", "supervisor", "policy", "valid.json")
PLAN = os.path.join(REPO, "tests", "fixtures", "supervisor", "plan", "valid.json")
CDIGEST = "1" * 64


def plan_bytes(offset_ms=110000):
    plan = json.load(open(PLAN))
    plan["expires_at_ms"] = int(time.time() * 1000) + offset_ms
    return json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Client:
    def __init__(self, rt):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(os.path.join(rt, "gloved.sock"))
        self.s.settimeout(30)
        self.n = 0
        secret = open(os.path.join(rt, "bootstrap-secret")).read().strip()
        self.call("authenticate", {"secret": secret})

    def call(self, method, params):
        self.n += 1
        body = json.dumps({"id": self.n, "method": method, "params": params}).encode()
        self.s.sendall(struct.pack(">I", len(body)) + body)
        head = self._exact(4)
        resp = json.loads(self._exact(struct.unpack(">I", head)[0]))
        if "error" in resp:
            raise RuntimeError("%s: %s" % (method, resp["error"]))
        return resp["result"]

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("gloved closed the connection")
            buf += chunk
        return buf

    def close(self):
        self.s.close()


class Gloved:
    def __init__(self, gloved, base, store):
        self.rt = os.path.join(base, "run")
        self.proc = None
        self.argv = [gloved, "--runtime-dir", self.rt, "--state-dir", os.path.join(base, "state"),
                     "--session-policy", os.path.join(base, "policy.json")]
        if store:
            self.argv += ["--session-store", store]

    def start(self):
        """Starts gloved; returns ms from exec to the first answered request."""
        for name in ("gloved.sock", "bootstrap-secret"):
            try:
                os.unlink(os.path.join(self.rt, name))
            except FileNotFoundError:
                pass
        t0 = time.perf_counter_ns()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        while True:
            try:
                c = Client(self.rt)
                c.call("capabilities", {})
                c.close()
                return (time.perf_counter_ns() - t0) / 1e6
            except (FileNotFoundError, ConnectionRefusedError):
                if self.proc.poll() is not None:
                    raise RuntimeError("gloved exited: " + self.proc.stderr.read().decode())
                time.sleep(0.0005)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def percentile(s, p):
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def bench_create(gloved, base, creates):
    g = Gloved(gloved, base, os.path.join(base, "store", "create.journal"))
    g.start()
    c = Client(g.rt)
    plan = plan_bytes().decode()
    t0 = time.perf_counter_ns()
    for i in range(creates):
        c.call("validate_plan", {"plan": plan})
    validate_s = (time.perf_counter_ns() - t0) / 1e9
    t0 = time.perf_counter_ns()
    for i in range(creates):
        c.call("create_session", {"session_id": "b-%d" % i, "idempotency_key": "k-%d" % i,
                                  "controller_plan_digest": CDIGEST, "plan": plan})
    create_s = (time.perf_counter_ns() - t0) / 1e9
    c.close()
    g.stop()
    return {"creates": creates, "create_per_s": round(creates / create_s, 1),
            "validate_per_s": round(creates / validate_s, 1),
            "ratio_create_to_validate_time": round(create_s / validate_s, 2)}


def bench_validate_latency(gloved, base, calls):
    g = Gloved(gloved, base, None)
    g.start()
    c = Client(g.rt)
    plan = plan_bytes().decode()
    samples = []
    for _ in range(50):
        c.call("validate_plan", {"plan": plan})
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        r = c.call("validate_plan", {"plan": plan})
        samples.append((time.perf_counter_ns() - t0) / 1e3)
        if not r["valid"]:
            raise RuntimeError("the benchmark plan is not valid: %s" % r["reasons"])
    c.close()
    g.stop()
    s = sorted(samples)
    return {"calls": calls, "median_us": round(statistics.median(s), 1), "p90_us": round(percentile(s, 90), 1),
            "p99_us": round(percentile(s, 99), 1), "max_us": round(s[-1], 1)}


def bench_replay(gloved, base, sessions, rounds):
    plan = plan_bytes()
    payloads = [jf.create_payload(i, "r-%d" % i, "rk-%d" % i, CDIGEST, plan, 1) for i in range(1, sessions + 1)]
    journal, seal = jf.store_bytes(payloads, os.urandom(32))
    full = os.path.join(base, "store", "full.journal")
    jf.write_private(full + ".seal", seal)
    jf.write_private(full, journal)
    empty = os.path.join(base, "store", "empty.journal")
    times = {"full": [], "empty": []}
    gs = {"full": Gloved(gloved, base, full), "empty": Gloved(gloved, base, empty)}
    for r in range(rounds + 1):
        order = ["full", "empty"] if r % 2 == 0 else ["empty", "full"]
        for k in order:
            ms = gs[k].start()
            gs[k].stop()
            if r > 0:  # round 0 warms the page cache
                times[k].append(ms)
    out = {"sessions": sessions, "store_bytes": len(journal), "rounds": rounds}
    for k in ("full", "empty"):
        out[k + "_median_ms"] = round(statistics.median(times[k]), 2)
        out[k + "_max_ms"] = round(max(times[k]), 2)
    out["ratio_full_to_empty"] = round(out["full_median_ms"] / out["empty_median_ms"], 2)
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
    ap.add_argument("--gloved", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--creates", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="glove-bench-gloved.")
    try:
        os.chmod(base, 0o700)
        os.mkdir(os.path.join(base, "store"), 0o700)
        shutil.copyfile(POLICY, os.path.join(base, "policy.json"))
        os.chmod(os.path.join(base, "policy.json"), 0o600)
        results = {
            "create_session": bench_create(a.gloved, base, a.creates),
            "validate_plan": bench_validate_latency(a.gloved, base, a.calls),
            "startup_replay": bench_replay(a.gloved, base, a.sessions, a.rounds),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    common = {"ts": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "date": now.strftime("%Y-%m-%d"),
              "commit": git_commit(), "kernel": platform.release(), "cpus": os.cpu_count(), "uid": os.getuid()}
    with open(a.results, "a") as fh:
        for name, r in results.items():
            fh.write(json.dumps(dict(common, bench="gloved." + name, **r), sort_keys=True) + "\n")
    c, v, s = results["create_session"], results["validate_plan"], results["startup_replay"]
    print("create_session (durable)  %8.1f /s   validate_plan on the same connection %8.1f /s   "
          "time ratio create/validate %.2f" % (c["create_per_s"], c["validate_per_s"],
                                                c["ratio_create_to_validate_time"]))
    print("validate_plan latency     median %.1f us   p90 %.1f us   p99 %.1f us   (%d calls)"
          % (v["median_us"], v["p90_us"], v["p99_us"], v["calls"]))
    print("start-up, %d sessions    median %.2f ms (%d-byte store)   empty store %.2f ms   ratio %.2f"
          % (s["sessions"], s["full_median_ms"], s["store_bytes"], s["empty_median_ms"], s["ratio_full_to_empty"]))


if __name__ == "__main__":
    main()
