#!/usr/bin/python3
"""agent_policy.py: a session policy, a skill bundle and a plan that run one
of the five agent CLIs as a gloved managed session (tests/agents/agents.bats;
docs/session-policy.md, "Worked examples: the five agent CLIs").

    agent_policy.py bundle ROOT KEY SKILL_FILE
        Writes the library bundle ROOT/<sha256>.json (mode 0600, canonical
        JSON) holding one "skill" entry KEY whose content is SKILL_FILE's
        text, and prints its SHA-256 (the name without ".json").
    agent_policy.py policy GLOVED OUT CLI BASE CA NODE_MODULES WORKSPACE PORT
        Writes OUT (mode 0600): one linux_production template "agent-CLI"
        (runtime_id CLI) whose launch discovers the adapter's executable in
        NODE_MODULES/.bin (runtime_discovery = CLI, executable_path ""), with
        clis.py's arguments and environment against BASE and CA, and
        read_only_paths NODE_MODULES and the CA's directory; the path alias
        "workspace" (WORKSPACE at /workspace: ephemeral_write copy); the
        projection destination "libraries" (/opt/glove/library-bundles); one
        resource profile "agent" from clis.py's limits; the egress policy
        "fake-model" naming only 127.0.0.1:PORT (allow_private). Its
        adapter_command_digest is learnt from GLOVED's own refusal of a
        placeholder (the encoding is docs/digests.md's; the digest tests
        are elsewhere).
    agent_policy.py plan POLICY OUT [BUNDLE_DIGEST]
        A canonical plan for that template: the workspace grant, the bundle
        projected to "libraries" (projection id "skills"), expiring in
        five minutes.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clis  # noqa: E402

TARGET = "/workspace"
BUNDLES_AT = "/opt/glove/library-bundles"
TTL_MS = 300000


def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write600(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def bundle(root, key, skill_file):
    content = open(skill_file, encoding="utf-8").read()
    doc = {"schema_version": 1, "source_library_ref": "glove-tests/agents",
           "source_manifest_digest": hashlib.sha256(b"glove-tests/agents manifest").hexdigest(),
           "entries": [{"key": key, "kind": "skill", "content": content,
                        "content_digest": hashlib.sha256(content.encode()).hexdigest()}]}
    data = canon(doc).encode()
    digest = hashlib.sha256(data).hexdigest()
    write600(os.path.join(root, digest + ".json"), data)
    print(digest)


def policy_obj(cli, base, ca, nm, ws, port, digest):
    s = clis.spec(cli, base, ca)
    s.pop("config")
    launch = {"runtime_discovery": cli, "executable_path": "", "executable_search_paths": [nm + "/.bin"],
              "arguments": s["arguments"], "environment": sorted(s["environment"]),
              "read_only_paths": sorted([nm, os.path.dirname(ca)])}
    lim = s["limits"]
    profile = {"profile_id": "agent", "cpu_time_ms": 240000, "memory_bytes": lim["memory_bytes"],
               "pids": lim["pids"], "wall_time_ms": 240000, "disk_bytes": lim["disk_bytes"],
               "terminal_output_bytes": 16 << 20}
    return {
        "schema_version": 1, "revision": 1, "max_plan_ttl_ms": TTL_MS,
        "runtime_templates": [{
            "runtime_template_id": "agent-" + cli, "runtime_id": cli, "adapter_command_digest": digest,
            "sandbox_backend": "linux_production", "allowed_path_aliases": ["workspace"],
            "allowed_projection_destinations": ["libraries"], "launch": launch}],
        "path_aliases": [{"alias": "workspace", "host_path": ws, "target_path": TARGET, "max_ttl_secs": 600,
                          "access": [{"access": "ephemeral_write", "materialization": "copy",
                                      "create_policy": "never", "cleanup_policy": "remove",
                                      "max_bytes": 16 << 20}]}],
        "library_projection_destinations": [{"alias": "libraries", "target_path": BUNDLES_AT}],
        "resource_profiles": [profile],
        "egress_policy_ids": ["fake-model"], "tool_policy_ids": ["t"], "secret_handles": [],
        "egress_policies": [{"policy_id": "fake-model",
                             "targets": [{"host": "127.0.0.1", "port": int(port), "allow_private": True}]}],
        "secret_mounts": []}


def policy(gloved, out, cli, base, ca, nm, ws, port):
    write600(out, json.dumps(policy_obj(cli, base, ca, nm, ws, port, "0" * 64), indent=1).encode())
    d = os.path.dirname(out)
    p = subprocess.run([gloved, "--runtime-dir", d + "/probe-rt", "--state-dir", d + "/probe-st",
                        "--session-policy", out], capture_output=True, text=True, timeout=20)
    key = "runtime_launch_template_digest is "
    if key not in p.stderr:
        raise SystemExit("gloved refused the policy otherwise: " + p.stderr.strip())
    digest = p.stderr.split(key, 1)[1][:64]
    write600(out, json.dumps(policy_obj(cli, base, ca, nm, ws, port, digest), indent=1).encode())


def plan(pol, out, bdigest):
    p = json.load(open(pol))
    t = p["runtime_templates"][0]
    a = p["path_aliases"][0]["access"][0]
    prof = {k: v for k, v in p["resource_profiles"][0].items() if k != "profile_id"}
    doc = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": "fake-model",
           "expires_at_ms": int(time.time() * 1000) + TTL_MS - 10000,
           "library_projections": ([{"content_digest": bdigest, "destination_alias": "libraries",
                                     "projection_id": "skills"}] if bdigest else []),
           "limits": prof,
           "path_grants": [{"access": a["access"], "alias": "workspace", "cleanup_policy": a["cleanup_policy"],
                            "materialization": a["materialization"], "max_bytes": a["max_bytes"], "ttl_secs": 300}],
           "policy_revision": p["revision"], "runtime_id": t["runtime_id"],
           "runtime_template_id": t["runtime_template_id"], "sandbox_backend": "linux_production",
           "schema_version": 1, "secret_handles": [], "tool_policy_id": "t"}
    with open(out, "w") as f:
        f.write(canon(doc))


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "bundle":
        bundle(a[1], a[2], a[3])
    elif len(a) == 9 and a[0] == "policy":
        policy(*a[1:])
    elif len(a) in (3, 4) and a[0] == "plan":
        plan(a[1], a[2], a[3] if len(a) == 4 else "")
    else:
        raise SystemExit(__doc__)
