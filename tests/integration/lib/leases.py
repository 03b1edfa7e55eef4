#!/usr/bin/python3
"""leases.py: a session policy with credential leases (secret_mounts) and
its plans, for tests/integration/gloved_leases.bats. The launch digest is
managed.py's (docs/digests.md).

    leases.py policy OUT SOURCE LEASES
        OUT (mode 0600): a policy of revision 1, runtime "pyrt", the secret
        handle "tok" (source SOURCE, target TARGET below) and the templates
        py-MODE (MODE in MODES) running /usr/bin/python3 -c AGENT MODE
        TARGET with PROBE_PATHS=SOURCE:LEASES:LEASES/tok in its environment.
    leases.py plan OUT POLICY TEMPLATE_ID
        OUT: a canonical plan for that template, naming the secret handle
        "tok", expiring 60 s from now.

The agent (AGENT), by MODE:
  read    prints "token=CONTENT" of TARGET, tries to rename a file over
          TARGET and to unlink it ("replace-refused ERRNO", "unlink-refused
          ERRNO" or "...-done"), then for SOURCE, LEASES and
          LEASES/tok "reachable P" or "unreachable P ERRNO"
  rotate  prints "token=CONTENT", rewrites TARGET in place (the way a CLI
          rewrites its auth file) to "rotated-from-CONTENT", prints "rotated"
  hold    prints "token=CONTENT", then "holding", and sleeps (stopped by
          the test)
  grow    prints "token=CONTENT", then appends 1 MiB blocks to TARGET up to
          64 MiB and prints "grow-stopped ERRNO SIZE" at the first refused
          write (or "grow-done SIZE")
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from managed import launch_digest  # noqa: E402

TARGET = "/home/agent/.tok/auth.json"
MODES = ("grow", "hold", "read", "rotate")
LIMITS = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 120000,
          "disk_bytes": 16777216, "terminal_output_bytes": 1048576}

AGENT = r'''
import errno, os, sys, time
mode, target = sys.argv[1], sys.argv[2]
tok = open(target).read().strip()
print("token=" + tok, flush=True)
if mode == "read":
    open("/home/agent/new-auth", "w").write("replaced\n")
    for what, op in (("replace", lambda: os.rename("/home/agent/new-auth", target)),
                     ("unlink", lambda: os.unlink(target))):
        try:
            op()
            print(what + "-done")
        except OSError as e:
            print(what + "-refused " + errno.errorcode[e.errno])
    for p in os.environ["PROBE_PATHS"].split(":"):
        try:
            os.stat(p)
            print("reachable " + p)
        except OSError as e:
            print("unreachable " + p + " " + errno.errorcode[e.errno])
elif mode == "rotate":
    with open(target, "r+") as f:
        f.seek(0)
        f.truncate()
        f.write("rotated-from-" + tok + "\n")
    print("rotated", flush=True)
elif mode == "grow":
    block = b"x" * (1 << 20)
    with open(target, "ab", buffering=0) as f:
        try:
            while f.tell() < (64 << 20):
                f.write(block)
            print("grow-done %d" % f.tell(), flush=True)
        except OSError as e:
            print("grow-stopped %s %d" % (errno.errorcode[e.errno], os.fstat(f.fileno()).st_size), flush=True)
elif mode == "hold":
    print("holding", flush=True)
    time.sleep(300)
'''


def policy(out, source, leases):
    templates = []
    for mode in MODES:
        # The host paths probed go in the environment, whose values the
        # launch binding does not commit (only the names): a receipt that
        # names the source path would be Glove's doing.
        probes = ":".join((source, leases, leases + "/tok"))
        launch = {"executable_path": os.path.realpath("/usr/bin/python3"), "arguments": ["-c", AGENT, mode, TARGET],
                  "environment": ["PATH=/usr/bin:/bin", "PROBE_PATHS=" + probes, "PYTHONDONTWRITEBYTECODE=1"],
                  "read_only_paths": []}
        templates.append({"runtime_template_id": "py-" + mode, "runtime_id": "pyrt",
                          "adapter_command_digest": launch_digest(launch), "sandbox_backend": "linux_production",
                          "allowed_path_aliases": [], "allowed_projection_destinations": [], "launch": launch})
    p = {"schema_version": 1, "revision": 1, "max_plan_ttl_ms": 300000, "runtime_templates": templates,
         "path_aliases": [], "library_projection_destinations": [],
         "resource_profiles": [dict(profile_id="p0", **LIMITS)],
         "egress_policy_ids": ["no-network"], "tool_policy_ids": ["t"], "secret_handles": ["tok"],
         "egress_policies": [{"policy_id": "no-network", "targets": []}],
         "secret_mounts": [{"handle": "tok", "runtime_id": "pyrt", "source_path": source, "target_path": TARGET}]}
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(p, f, indent=1)


def plan(out, policy_file, tid):
    p = json.load(open(policy_file))
    t = next(x for x in p["runtime_templates"] if x["runtime_template_id"] == tid)
    doc = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": "no-network",
           "expires_at_ms": int(time.time() * 1000) + 60000, "library_projections": [], "limits": LIMITS,
           "path_grants": [], "policy_revision": p["revision"], "runtime_id": "pyrt", "runtime_template_id": tid,
           "sandbox_backend": "linux_production", "schema_version": 1, "secret_handles": ["tok"],
           "tool_policy_id": "t"}
    with open(out, "w") as f:
        f.write(json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "policy":
        policy(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "plan":
        plan(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(__doc__)
