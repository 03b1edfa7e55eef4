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


def _bytes(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">Q", len(b)) + b


def _list(items):
    return b"l" + struct.pack(">Q", len(items)) + b"".join(_bytes(x) for x in items)


def launch_digest(launch):
    e = _bytes("glove:launch-template:v1")
    e += _bytes("runtime_discovery") + b"\x00"
    e += _bytes("executable_path") + b"s" + _bytes(launch["executable_path"])
    e += _bytes("executable_search_paths") + b"\x00"
    e += _bytes("arguments") + _list(launch["arguments"])
    e += _bytes("environment") + _list(launch["environment"])
    e += _bytes("read_only_paths") + _list(launch["read_only_paths"])
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


if __name__ == "__main__":
    if sys.argv[1] == "policy":
        policy(sys.argv[2], sys.argv[3])
    else:
        plan(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 60000)
