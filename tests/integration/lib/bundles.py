#!/usr/bin/python3
"""bundles.py: library bundles, a policy and plans for the bundle tests of
gloved (tests/integration/gloved_bundles.bats).

    bundles.py bundle ROOT KEY=KIND:CONTENT... [--raw JSON]
        Writes a canonical bundle (docs/session-policy.md, "Library bundles
        and skills") with those entries into ROOT/<sha256>.json, mode 0600,
        and prints the digest. With --raw, JSON (text) is written as it is.
    bundles.py policy OUT
        OUT (0600): templates "codex-probe" (runtime_id codex), "claude-probe"
        (claude-code) and "plain-probe" (a runtime that is no adapter), each
        running /usr/bin/python3 -c PROBE; the destination "libraries" at
        /opt/glove-library; one resource profile.
    bundles.py skills-digest SKILLS_DIR [KEY=CONTENT_DIGEST...]
        Prints the skills_projection_digest of those skills (docs/digests.md),
        computed here independently of Glove ("" SKILLS_DIR: no adapter).
    bundles.py plan POLICY OUT TEMPLATE DIGEST...
        OUT: a canonical plan for TEMPLATE projecting each DIGEST (projection
        ids p1, p2, ... in that order) to "libraries". DIGEST*N stands for
        N projections of DIGEST. Environment: BUNDLES_DEST names another
        destination ("long": LONG_ALIAS at LONG_TARGET); BUNDLES_ID_PAD=L
        pads each projection id with "x" to L bytes.
    bundles.py big-bundle ROOT KEY MIB
        Writes a bundle of one "behavior" entry of MIB MiB of content.
    bundles.py many-skills ROOT N
        Writes a bundle of N skills k0000.. (content "sN"); prints the digest.
    bundles.py watch-opens FILE READY
        Counts the opens (inotify IN_OPEN) of FILE: creates READY once the
        watch is set, and on SIGTERM prints the count of opens so far.

PROBE prints one line "probe {json}": for every file under the destination
its sha256, whether it could be opened for writing (and the errno), for each
adapter skills directory the SKILL.md files found (key -> content), and
whether the agent could create a file in the skills directory.
"""
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from managed import launch_digest  # noqa: E402  (the documented digest)

TARGET = "/opt/glove-library"
PROBE = r'''
import errno, hashlib, json, os
out = {"bundles": {}, "skills": {}, "writable": {}, "home": os.environ.get("HOME")}
d = "%s"
for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
    p = os.path.join(d, n)
    b = open(p, "rb").read()
    r = {"sha256": hashlib.sha256(b).hexdigest()}
    try:
        os.close(os.open(p, os.O_WRONLY))
        r["write"] = "ok"
    except OSError as e:
        r["write"] = errno.errorcode[e.errno]
    try:
        os.unlink(p)
        r["unlink"] = "ok"
    except OSError as e:
        r["unlink"] = errno.errorcode[e.errno]
    out["bundles"][n] = r
for sd in ("/home/agent/.codex/skills", "/home/agent/.claude/skills"):
    if not os.path.isdir(sd):
        continue
    found = {}
    for k in sorted(os.listdir(sd)):
        f = os.path.join(sd, k, "SKILL.md")
        if os.path.isfile(f):
            found[k] = open(f).read()
    out["skills"][sd] = found
    try:
        os.makedirs(os.path.join(sd, ".system"), exist_ok=True)
        open(os.path.join(sd, ".system", "x"), "w").write("x")
        for k in found:
            open(os.path.join(sd, k, "SKILL.md"), "a").write("")
        out["writable"][sd] = "ok"
    except OSError as e:
        out["writable"][sd] = errno.errorcode[e.errno]
print("probe " + json.dumps(out, sort_keys=True), flush=True)
''' % TARGET

# A destination whose alias and target are long (a binding grows with them).
LONG_ALIAS = "long" + "x" * 124
LONG_TARGET = "/opt/" + "d" * 200
TEMPLATES = {"codex-probe": "codex", "claude-probe": "claude-code", "plain-probe": "pyrt"}
LIMITS = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
          "disk_bytes": 16777216, "terminal_output_bytes": 1048576}


def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write600(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def bundle(root, specs):
    if specs and specs[0] == "--raw":
        data = specs[1].encode()
    else:
        entries = []
        for s in specs:
            key, rest = s.split("=", 1)
            kind, content = rest.split(":", 1)
            content = content.replace("\\n", "\n")
            entries.append({"content": content, "content_digest": hashlib.sha256(content.encode()).hexdigest(),
                            "key": key, "kind": kind})
        data = canon({"entries": entries, "schema_version": 1, "source_library_ref": "sage-library@7",
                      "source_manifest_digest": "ab" * 32}).encode()
    d = hashlib.sha256(data).hexdigest()
    write600(os.path.join(root, d + ".json"), data)
    print(d)


def policy(out):
    templates = []
    for tid, rid in sorted(TEMPLATES.items()):
        launch = {"executable_path": os.path.realpath("/usr/bin/python3"), "arguments": ["-c", PROBE],
                  "environment": ["PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"], "read_only_paths": []}
        templates.append({"runtime_template_id": tid, "runtime_id": rid, "adapter_command_digest": launch_digest(launch),
                          "sandbox_backend": "linux_production", "allowed_path_aliases": [],
                          "allowed_projection_destinations": ["libraries", LONG_ALIAS], "launch": launch})
    p = {"schema_version": 1, "revision": 1, "max_plan_ttl_ms": 120000, "runtime_templates": templates,
         "path_aliases": [], "library_projection_destinations": [{"alias": "libraries", "target_path": TARGET},
                                                                 {"alias": LONG_ALIAS, "target_path": LONG_TARGET}],
         "resource_profiles": [dict(LIMITS, profile_id="roomy")],
         "egress_policy_ids": ["no-network"], "tool_policy_ids": ["t"], "secret_handles": [],
         "egress_policies": [{"policy_id": "no-network", "targets": []}], "secret_mounts": []}
    write600(out, json.dumps(p, indent=1).encode())


def _str(s):
    b = s.encode()
    return len(b).to_bytes(4, "big") + b


def skills_digest(skills_dir, pairs):
    skills = sorted((k.encode(), k, d) for k, d in (p.split("=", 1) for p in pairs))
    e = _str("glove.skills-projection") + _str(skills_dir) + len(skills).to_bytes(4, "big")
    for _, k, d in skills:
        e += _str(k) + _str("%s/%s/SKILL.md" % (skills_dir, k)) + _str(d)
    return hashlib.sha256(e).hexdigest()


def plan(pol, out, tid, digests):
    p = json.load(open(pol))
    t = next(t for t in p["runtime_templates"] if t["runtime_template_id"] == tid)
    expanded = []
    for d in digests:
        d, _, n = d.partition("*")
        expanded += [d] * int(n or 1)
    dest = LONG_ALIAS if os.environ.get("BUNDLES_DEST") == "long" else "libraries"
    pad = int(os.environ.get("BUNDLES_ID_PAD", "0"))
    projections = [{"content_digest": d, "destination_alias": dest, "projection_id": ("p%d" % (i + 1)).ljust(pad, "x")}
                   for i, d in enumerate(expanded)]
    projections.sort(key=lambda p: p["projection_id"].encode())
    plan = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": "no-network",
            "expires_at_ms": int(time.time() * 1000) + 60000, "library_projections": projections,
            "limits": LIMITS, "path_grants": [], "policy_revision": p["revision"], "runtime_id": t["runtime_id"],
            "runtime_template_id": tid, "sandbox_backend": "linux_production", "schema_version": 1,
            "secret_handles": [], "tool_policy_id": "t"}
    open(out, "w").write(canon(plan))


def write_bundle(root, entries):
    data = canon({"entries": entries, "schema_version": 1, "source_library_ref": "sage-library@7",
                  "source_manifest_digest": "ab" * 32}).encode()
    d = hashlib.sha256(data).hexdigest()
    write600(os.path.join(root, d + ".json"), data)
    print(d)


def entry(key, kind, content):
    return {"content": content, "content_digest": hashlib.sha256(content.encode()).hexdigest(), "key": key,
            "kind": kind}


def watch_opens(path, ready):
    import ctypes
    import signal
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    # Identical consecutive events are merged by the kernel: reads and
    # closes are watched too, so that two opens are never adjacent.
    IN_ACCESS, IN_CLOSE_NOWRITE, IN_OPEN, IN_Q_OVERFLOW, IN_NONBLOCK = 0x1, 0x10, 0x20, 0x4000, 0o4000
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE) < 0:
        sys.exit("inotify: %s" % os.strerror(ctypes.get_errno()))
    open(ready, "w").close()
    signal.sigwait({signal.SIGTERM})
    n = 0
    while True:
        try:
            buf = os.read(fd, 65536)
        except BlockingIOError:
            break
        off = 0
        while off < len(buf):
            _, mask, _, ln = struct.unpack_from("iIII", buf, off)
            if mask & IN_Q_OVERFLOW:
                sys.exit("inotify: the event queue overflowed")
            n += bool(mask & IN_OPEN)
            off += 16 + ln
    print(n, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "big-bundle":
        write_bundle(sys.argv[2], [entry(sys.argv[3], "behavior", sys.argv[3][0] * (int(sys.argv[4]) << 20))])
    elif sys.argv[1] == "many-skills":
        write_bundle(sys.argv[2], [entry("k%04d" % i, "skill", "s%d" % i) for i in range(int(sys.argv[3]))])
    elif sys.argv[1] == "watch-opens":
        watch_opens(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "bundle":
        bundle(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "skills-digest":
        print(skills_digest(sys.argv[2], sys.argv[3:]))
    elif sys.argv[1] == "policy":
        policy(sys.argv[2])
    else:
        plan(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
