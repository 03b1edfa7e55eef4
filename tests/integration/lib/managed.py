#!/usr/bin/python3
"""managed.py: a session policy and plans for managed-session tests of
glove ctl (tests/integration/ctl_sessions.bats).

    managed.py policy SRC OUT
        OUT: SRC (the gloved fixture policy) plus runtime templates whose
        launch runs /bin/sh -c SCRIPT (see TEMPLATES), with their
        adapter_command_digest computed as docs/digests.md describes. Mode 0600.
    managed.py plan OUT TEMPLATE_ID [OFFSET_MS]
        OUT: a canonical plan for TEMPLATE_ID, no path grants, the
        "interactive" resource profile, offline, expiring OFFSET_MS (60000)
        from now.
    managed.py pypolicy OUT HOSTDIR
        OUT: a policy whose templates run /usr/bin/python3 -c AGENT MODE
        (AGENT: tests/agents/managed_agent.py; template "py-MODE", see
        PY_TEMPLATES), the path aliases "src" (HOSTDIR/src at /work/src:
        ephemeral_write copy, or read bind), "keep" (HOSTDIR/keep at
        /work/keep: retained_write snapshot, retain) and "ref" (HOSTDIR/ref at
        /work/ref: read bind), and one resource profile per limit
        (PY_PROFILES). Mode 0600.
    managed.py pyplan POLICY OUT TEMPLATE_ID PROFILE_ID [OFFSET_MS]
        OUT: a canonical plan for that template and profile, with a grant of
        the first access tuple of every alias the template allows.
"""
import hashlib
import json
import os
import struct
import sys
import time

TEMPLATES = {
    # Prints "ready", echoes every line as "got:LINE"; "quit" exits 7.
    "sh-echo": ('echo ready; while read -r l; do echo "got:$l"; [ "$l" = size ] && stty size; '
                '[ "$l" = quit ] && exit 7; done; exit 0'),
    # Prints a line and exits 3 at once.
    "sh-exit3": "echo bye; exit 3",
    # Prints "ready" and sleeps (a session that is still running).
    "sh-sleep": "echo ready; exec sleep 300",
}


def _str(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">I", len(b)) + b


def _list(items):
    return struct.pack(">I", len(items)) + b"".join(_str(x) for x in items)


def launch_digest(launch):
    """adapter_command_digest of a launch block (docs/digests.md)."""
    e = _str("glove.runtime-launch-template")
    if launch.get("runtime_discovery"):
        e += b"\x02" + _str(launch["runtime_discovery"]) + _list(launch.get("executable_search_paths", []))
    else:
        e += b"\x01"
    e += _str(launch["executable_path"]) + _list(launch["arguments"]) + _list(launch["environment"])
    e += _list(launch["read_only_paths"])
    return hashlib.sha256(e).hexdigest()


def policy(src, out):
    p = json.load(open(src))
    for tid, script in TEMPLATES.items():
        launch = {"executable_path": "/usr/bin/dash", "arguments": ["-c", script],
                  "environment": ["PATH=/usr/bin:/bin", "TERM=xterm-256color"], "read_only_paths": []}
        p["runtime_templates"].append({
            "runtime_template_id": tid, "runtime_id": "codex", "adapter_command_digest": launch_digest(launch),
            "sandbox_backend": "linux_production", "allowed_path_aliases": [], "allowed_projection_destinations": [],
            "launch": launch})
    p["runtime_templates"].sort(key=lambda t: t["runtime_template_id"].encode())
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(p, f, indent=1)


def plan(out, tid, off):
    policy_src = json.load(open(os.path.join(os.path.dirname(__file__), "gloved", "policy.json")))
    prof = next(r for r in policy_src["resource_profiles"] if r["profile_id"] == "interactive")
    launch = {"executable_path": "/usr/bin/dash", "arguments": ["-c", TEMPLATES[tid]],
              "environment": ["PATH=/usr/bin:/bin", "TERM=xterm-256color"], "read_only_paths": []}
    p = {"adapter_command_digest": launch_digest(launch), "egress_policy_id": "no-network",
         "expires_at_ms": int(time.time() * 1000) + off, "library_projections": [],
         "limits": {k: prof[k] for k in ("cpu_time_ms", "disk_bytes", "memory_bytes", "pids",
                                          "terminal_output_bytes", "wall_time_ms")},
         "path_grants": [], "policy_revision": policy_src["revision"], "runtime_id": "codex",
         "runtime_template_id": tid, "sandbox_backend": "linux_production", "schema_version": 1,
         "secret_handles": [], "tool_policy_id": "sage-readonly"}
    open(out, "w").write(json.dumps(p, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "agents", "managed_agent.py")
# template mode -> the aliases it may use
# "many-eph" is "many" without the retained image, for a user who cannot
# attach loop devices (uid 65534).
PY_TEMPLATES = {"edit": ["keep", "ref", "src"], "many": ["keep", "src"], "many-eph": ["src"],
                "count": ["keep", "ref", "src"]}
for _m in ("cpu", "mem", "sleep", "fork", "flood", "disk", "burst", "echo", "noterm", "term", "brief", "quick"):
    PY_TEMPLATES[_m] = []
PY_BASE = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
           "disk_bytes": 16777216, "terminal_output_bytes": 16777216}
PY_PROFILES = {"roomy": {}, "cpu": {"cpu_time_ms": 500}, "cpu1s": {"cpu_time_ms": 1000}, "mem": {"memory_bytes": 48 << 20}, "pids": {"pids": 8},
               "wall": {"wall_time_ms": 1000}, "out": {"terminal_output_bytes": 40000},
               "disk": {"disk_bytes": 1 << 20}}


def tuple_(access, mat, create, cleanup, max_bytes):
    return {"access": access, "materialization": mat, "create_policy": create, "cleanup_policy": cleanup,
            "max_bytes": max_bytes}


def pypolicy(out, host):
    src = open(AGENT).read()
    templates = []
    for mode, aliases in sorted(PY_TEMPLATES.items()):
        # "many" and "many-eph" are the 32-session templates: they run "brief".
        launch = {"executable_path": "/usr/bin/python3",
                  "arguments": ["-c", src, "brief" if mode.startswith("many") else mode],
                  "environment": ["PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"], "read_only_paths": []}
        templates.append({"runtime_template_id": "py-" + mode, "runtime_id": "pyrt",
                          "adapter_command_digest": launch_digest(launch), "sandbox_backend": "linux_production",
                          "allowed_path_aliases": aliases, "allowed_projection_destinations": [], "launch": launch})
    templates.sort(key=lambda t: t["runtime_template_id"].encode())
    aliases = [
        {"alias": "keep", "host_path": host + "/keep", "target_path": "/work/keep", "max_ttl_secs": 600,
         "access": [tuple_("retained_write", "snapshot", "empty_directory", "retain", 8 << 20)]},
        {"alias": "ref", "host_path": host + "/ref", "target_path": "/work/ref", "max_ttl_secs": 600,
         "access": [tuple_("read", "bind", "never", "retain", 1 << 20)]},
        {"alias": "src", "host_path": host + "/src", "target_path": "/work/src", "max_ttl_secs": 600,
         "access": [tuple_("ephemeral_write", "copy", "never", "remove", 4 << 20),
                    tuple_("read", "bind", "never", "retain", 4 << 20)]},
    ]
    p = {"schema_version": 1, "revision": 3, "max_plan_ttl_ms": 120000, "runtime_templates": templates,
         "path_aliases": aliases, "library_projection_destinations": [],
         "resource_profiles": [dict(PY_BASE, profile_id=k, **v) for k, v in sorted(PY_PROFILES.items())],
         "egress_policy_ids": ["no-network"], "tool_policy_ids": ["t"], "secret_handles": [],
         "egress_policies": [{"policy_id": "no-network", "targets": []}], "secret_mounts": []}
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(p, f, indent=1)


def pyplan(pol, out, tid, prof, off):
    p = json.load(open(pol))
    t = next(t for t in p["runtime_templates"] if t["runtime_template_id"] == tid)
    grants = []
    for a in p["path_aliases"]:
        if a["alias"] in t["allowed_path_aliases"]:
            tu = a["access"][0]
            grants.append({"access": tu["access"], "alias": a["alias"], "cleanup_policy": tu["cleanup_policy"],
                           "materialization": tu["materialization"], "max_bytes": tu["max_bytes"], "ttl_secs": 60})
    grants.sort(key=lambda g: g["alias"].encode())
    lim = dict(PY_BASE, **PY_PROFILES[prof])
    plan = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": "no-network",
            "expires_at_ms": int(time.time() * 1000) + off, "library_projections": [], "limits": lim,
            "path_grants": grants, "policy_revision": p["revision"], "runtime_id": t["runtime_id"],
            "runtime_template_id": tid, "sandbox_backend": "linux_production", "schema_version": 1,
            "secret_handles": [], "tool_policy_id": "t"}
    open(out, "w").write(json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    if sys.argv[1] == "pypolicy":
        pypolicy(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "pyplan":
        pyplan(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]) if len(sys.argv) > 6 else 60000)
    elif sys.argv[1] == "policy":
        policy(sys.argv[2], sys.argv[3])
    else:
        plan(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 60000)
