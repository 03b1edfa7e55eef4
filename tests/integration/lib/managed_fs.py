#!/usr/bin/python3
"""managed_fs.py: session policies with path aliases and plans with path
grants, for the managed-session failure and escape tests
(tests/integration/gloved_failures.bats). It reuses managed.py's launch
digest (docs/digests.md).

    managed_fs.py policy OUT SPEC_JSON
        OUT (mode 0600): a policy of revision 1 with one resource profile
        (LIMITS below), the egress policy "no-network" (offline), and from
        SPEC = {"aliases": [{"alias", "host_path", "target_path",
                              "access": [{"access", "materialization",
                                          "create_policy"?, "cleanup_policy"?,
                                          "max_bytes"}]}],
                "templates": [{"id", "argv": [...], "read_only_paths": [...]?,
                               "aliases": [...]?, "runtime_id"?, "environment"?,
                               "discovery"?, "search_paths"?}]}
        its path aliases and linux_production runtime templates (runtime
        "pyrt" unless runtime_id; with discovery, argv is the arguments). create_policy defaults to "never", cleanup_policy to
        "remove" for ephemeral_write and "retain" otherwise.
    managed_fs.py plan OUT POLICY TEMPLATE_ID GRANTS_JSON [OFFSET_MS [EGRESS_POLICY_ID]]
        OUT: a canonical plan for that template of POLICY with the path
        grants GRANTS = [{"alias", "access", "materialization",
        "max_bytes"?}] (max_bytes defaults to the tuple's; cleanup_policy is
        the tuple's; ttl_secs 60), expiring OFFSET_MS (60000) from now. A
        grant with "exposure_id" names an exposure (docs/exposures.md) and
        is given whole: exposure_id, exposure_generation, access,
        materialization, cleanup_policy, max_bytes, ttl_secs? (60).
    managed_fs.py fill-receipts STATE_DIR
        Writes STATE_DIR/receipt.key (32 random bytes) and a receipt journal
        with its seal (docs/control-protocol.md, "Journals", "Receipts"; anchor
        zero) holding as many 65536-byte "test.filler" envelopes as fit in its
        64 MiB bound: less than one largest envelope of room is left.
"""
import hashlib
import hmac
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from managed import launch_digest  # noqa: E402
import journal_format as jf  # noqa: E402

LIMITS = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
          "disk_bytes": 16777216, "terminal_output_bytes": 1048576}


def launch_of(t):
    """A template's launch block. With "discovery" (an adapter name) and
    "search_paths", argv holds the arguments only; "environment" replaces
    the default PATH entry."""
    env = sorted(t.get("environment", ["PATH=/usr/bin:/bin"]))
    if t.get("discovery"):
        return {"runtime_discovery": t["discovery"], "executable_path": "",
                "executable_search_paths": t["search_paths"], "arguments": t.get("argv", []),
                "environment": env, "read_only_paths": t.get("read_only_paths", [])}
    return {"executable_path": t["argv"][0], "arguments": t["argv"][1:], "environment": env,
            "read_only_paths": t.get("read_only_paths", [])}


def policy(out, spec):
    aliases = []
    for a in spec.get("aliases", []):
        access = []
        for tu in a["access"]:
            access.append({"access": tu["access"], "materialization": tu["materialization"],
                           "create_policy": tu.get("create_policy", "never"),
                           "cleanup_policy": tu.get("cleanup_policy",
                                                    "remove" if tu["access"] == "ephemeral_write" else "retain"),
                           "max_bytes": tu["max_bytes"]})
        access.sort(key=lambda x: (x["access"], x["materialization"]))
        aliases.append({"alias": a["alias"], "host_path": a["host_path"], "target_path": a["target_path"],
                        "max_ttl_secs": 600, "access": access})
    aliases.sort(key=lambda x: x["alias"].encode())
    templates = []
    for t in spec["templates"]:
        launch = launch_of(t)
        templates.append({"runtime_template_id": t["id"], "runtime_id": t.get("runtime_id", "pyrt"),
                          "adapter_command_digest": launch_digest(launch), "sandbox_backend": "linux_production",
                          "allowed_path_aliases": sorted(t.get("aliases", [])),
                          "allowed_projection_destinations": [], "launch": launch})
    templates.sort(key=lambda x: x["runtime_template_id"].encode())
    p = {"schema_version": 1, "revision": 1, "max_plan_ttl_ms": 120000, "runtime_templates": templates,
         "path_aliases": aliases, "library_projection_destinations": [],
         "resource_profiles": [dict(profile_id="p0", **dict(LIMITS, **spec.get("limits", {})))],
         "egress_policy_ids": ["no-network"],
         "tool_policy_ids": ["t"], "secret_handles": [],
         "egress_policies": [{"policy_id": "no-network", "targets": []}], "secret_mounts": []}
    # SPEC "egress": [{"policy_id", "targets": [{"host", "port", "allow_private"}]}]
    for e in spec.get("egress", []):
        p["egress_policy_ids"].append(e["policy_id"])
        p["egress_policies"].append({"policy_id": e["policy_id"],
                                     "targets": sorted(e["targets"], key=lambda t: (t["host"].encode(), t["port"]))})
    p["egress_policy_ids"].sort(key=lambda x: x.encode())
    p["egress_policies"].sort(key=lambda x: x["policy_id"].encode())
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(p, f, indent=1)


def plan(out, policy_file, tid, grants, off, egress="no-network"):
    p = json.load(open(policy_file))
    t = next(x for x in p["runtime_templates"] if x["runtime_template_id"] == tid)
    pg = []
    for g in grants:
        if "exposure_id" in g:  # a grant naming an exposure: given whole
            pg.append({"access": g["access"], "cleanup_policy": g["cleanup_policy"],
                       "exposure_generation": g["exposure_generation"], "exposure_id": g["exposure_id"],
                       "materialization": g["materialization"], "max_bytes": g["max_bytes"],
                       "ttl_secs": g.get("ttl_secs", 60)})
            continue
        al = next(a for a in p["path_aliases"] if a["alias"] == g["alias"])
        tu = next(x for x in al["access"]
                  if x["access"] == g["access"] and x["materialization"] == g["materialization"])
        pg.append({"access": g["access"], "alias": g["alias"], "cleanup_policy": tu["cleanup_policy"],
                   "materialization": g["materialization"], "max_bytes": g.get("max_bytes", tu["max_bytes"]),
                   "ttl_secs": 60})
    pg.sort(key=lambda x: (x.get("alias") or x["exposure_id"]).encode())
    doc = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": egress,
           "expires_at_ms": int(time.time() * 1000) + off, "library_projections": [], "limits": {k: v for k, v in p["resource_profiles"][0].items() if k != "profile_id"},
           "path_grants": pg, "policy_revision": p["revision"], "runtime_id": t["runtime_id"], "runtime_template_id": tid,
           "sandbox_backend": "linux_production", "schema_version": 1, "secret_handles": [], "tool_policy_id": "t"}
    with open(out, "w") as f:
        f.write(json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


RECEIPTS = {"magic": b"GLVRCPT1", "version": 1, "max_payload": 65536, "max_records": 100000,
            "max_bytes": 64 * 1024 * 1024}


def fill_receipts(state):
    key = os.urandom(32)
    anchor = b"\x00" * 32
    hdr = jf.header(RECEIPTS, anchor)
    out = bytearray(hdr)
    mac = anchor
    seq = 0
    room = RECEIPTS["max_bytes"] - len(hdr)
    while room >= 4 + RECEIPTS["max_payload"] + 32:
        seq += 1
        env = {"appended_at_ms": 1, "kind": "test.filler", "receipt": {"pad": ""}, "sequence": seq,
               "session_id": "filler"}
        base = len(jf.canonical(env))
        env["receipt"]["pad"] = "x" * (RECEIPTS["max_payload"] - base)
        payload = jf.canonical(env)
        assert len(payload) == RECEIPTS["max_payload"]
        prev = (len(out), mac)
        mac = hmac.new(key, b"glove.receipt.envelope.v1\x00" + mac + payload, hashlib.sha256).digest()
        out += jf.record(payload, mac)
        room -= 4 + len(payload) + 32
    jf.write_private(os.path.join(state, "receipt.key"), key)
    jf.write_private(os.path.join(state, "receipts.journal.seal"), jf.seal(hdr, seq, len(out), mac, prev))
    jf.write_private(os.path.join(state, "receipts.journal"), bytes(out))
    print(seq)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "policy":
        policy(sys.argv[2], json.loads(sys.argv[3]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "plan":
        plan(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]),
             int(sys.argv[6]) if len(sys.argv) > 6 else 60000, sys.argv[7] if len(sys.argv) > 7 else "no-network")
    elif len(sys.argv) == 3 and sys.argv[1] == "fill-receipts":
        fill_receipts(sys.argv[2])
    else:
        raise SystemExit(__doc__)
