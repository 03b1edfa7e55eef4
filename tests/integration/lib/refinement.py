#!/usr/bin/python3
"""refinement.py: the policy, skill bundles, fixtures and plans of the
refinement-eval-v1 tests of gloved (tests/integration/gloved_refinement.bats;
docs/refinement.md).

    refinement.py policy OUT
        OUT (0600): template "refine-agent" (a runtime that is no adapter)
        running /usr/bin/python3 -c AGENT; destinations "libraries" at
        /opt/glove-library and "refinement-fixtures" at /opt/glove-fixtures;
        one resource profile (LIMITS).
    refinement.py pair ROOT POLICY OUTDIR PAIR BASE_MODE CANDIDATE_MODE [KEY=JSON...]
        Writes into ROOT (the bundle root, 0600 files named by SHA-256) a
        base and a candidate skill bundle, whose one "skill" entry "mode" is
        the agent's MODE, and the two fixtures of the pair; into OUTDIR the
        plans PAIR-base.plan and PAIR-candidate.plan (sessions PAIR-base and
        PAIR-candidate). KEY=JSON sets a member of both fixtures before the
        digests are taken (e.g. expected.exit_code=3); fixture.VARIANT.KEY
        (JSON) sets one fixture's member after the plan committed the
        matched context; raw.VARIANT=TEXT writes that fixture's bytes as
        TEXT (the plan then commits TEXT's digest and the matched context of
        the fixture as it was); append.VARIANT=TEXT writes that fixture's
        canonical bytes followed by TEXT (committed likewise). A late edit's
        JSON value "@base" or "@candidate" stands for that skill's
        projection commitment (projection_id, content_digest,
        destination_alias). Prints the plan context digest and the two
        matched context digests.

AGENT reads the selected skill bundle under /opt/glove-library (the only
file the session must see there; /opt/glove-fixtures must be absent) and
acts out its mode:
    pass       the three required literals (one of them cut across two
               writes), exit 0
    fail       one required literal only, and JSON claiming it passed
    forged     a forged outcome ({"passed":true,...}) and the forbidden
               literal's words apart, no required literal
    badutf8    the required literals, then the bytes ff fe
    flood      writes until the terminal output limit ends it
    early      the required literals, then closes 0, 1 and 2 and exits 0
    exit3      the required literals, exit 3
    slow       "started", then after 4 s the required literals, exit 0 (the
               recovery tests kill gloved meanwhile)
Every mode prints first "files: N" (the files under /opt/glove-library)
and "fixtures: absent|present".
"""
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# refinement_vectors.py: beside this file in a cell (cell.sh copies it), else tests/vectors/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "vectors"))
from bundles import canon, write600  # noqa: E402
from managed import launch_digest  # noqa: E402
import refinement_vectors as rv  # noqa: E402

LIB = "/opt/glove-library"
FIX = "/opt/glove-fixtures"
LIMITS = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
          "disk_bytes": 16777216, "terminal_output_bytes": 262144}
REQUIRED = ["PASS lint", "done: 3 files", "\u2713 all checks passed"]
FORBIDDEN = ["Traceback (most recent call last)"]

AGENT = r'''
import json, os, sys, time
w = lambda b: (os.write(1, b), time.sleep(0.02))
files = sorted(os.listdir("%(lib)s"))
mode = None
for n in files:
    for e in json.load(open(os.path.join("%(lib)s", n)))["entries"]:
        if e["key"] == "mode":
            mode = e["content"]
w(("files: %%d\nfixtures: %%s\n" %% (len(files), "present" if os.path.exists("%(fix)s") else "absent")).encode())
def required():
    w(b"PA"); w(b"SS lint\n"); w("done: 3 files\n\u2713 all checks passed\n".encode())
if mode == "pass":
    required()
elif mode == "fail":
    w(b"PASS lint\n"); w(b'{"metrics":{"passed":true},"passed":true}\n')
elif mode == "forged":
    w(b'{"evidence":{"status":"valid"},"metrics":{"failed_assertions":[],"passed":true},"passed":true}\n')
    w(b"Traceback (most recent\n call last)\n")
elif mode == "badutf8":
    required(); w(b"\xff\xfe\n")
elif mode == "flood":
    while True:
        os.write(1, b"x" * 4096)
elif mode == "early":
    required()
    for fd in (0, 1, 2):
        os.close(fd)
    time.sleep(0.3)
elif mode == "exit3":
    required(); sys.exit(3)
elif mode == "slow":
    w(b"started\n")
    time.sleep(4)
    required()
else:
    w(b"unknown mode\n"); sys.exit(9)
''' % {"lib": LIB, "fix": FIX}


def policy(out):
    launch = {"executable_path": os.path.realpath("/usr/bin/python3"), "arguments": ["-c", AGENT],
              "environment": ["PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"], "read_only_paths": []}
    t = {"runtime_template_id": "refine-agent", "runtime_id": "pyrt", "adapter_command_digest": launch_digest(launch),
         "sandbox_backend": "linux_production", "allowed_path_aliases": [],
         "allowed_projection_destinations": ["libraries", "refinement-fixtures"], "launch": launch}
    p = {"schema_version": 1, "revision": 1, "max_plan_ttl_ms": 120000, "runtime_templates": [t],
         "path_aliases": [], "library_projection_destinations": [{"alias": "libraries", "target_path": LIB},
                                                                 {"alias": "refinement-fixtures", "target_path": FIX}],
         "resource_profiles": [dict(LIMITS, profile_id="roomy")],
         "egress_policy_ids": ["no-network"], "tool_policy_ids": ["t"], "secret_handles": [],
         "egress_policies": [{"policy_id": "no-network", "targets": []}], "secret_mounts": []}
    write600(out, json.dumps(p, indent=1).encode())


def skill(root, mode, tag):
    content = mode
    data = canon({"entries": [{"content": content, "content_digest": hashlib.sha256(content.encode()).hexdigest(),
                               "key": "mode", "kind": "skill"},
                              {"content": tag, "content_digest": hashlib.sha256(tag.encode()).hexdigest(),
                               "key": "tag", "kind": "behavior"}],
                  "schema_version": 1, "source_library_ref": "sage-library@7",
                  "source_manifest_digest": "ab" * 32}).encode()
    d = hashlib.sha256(data).hexdigest()
    write600(os.path.join(root, d + ".json"), data)
    return {"content_digest": d, "destination_alias": "libraries", "projection_id": "skill-" + tag}


def set_path(obj, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        obj = obj[k]
    if value is None:
        obj.pop(keys[-1], None)
    else:
        obj[keys[-1]] = value


def pair(root, pol, outdir, pair_id, base_mode, cand_mode, edits):
    p = json.load(open(pol))
    t = p["runtime_templates"][0]
    base = skill(root, base_mode, "base")
    cand = skill(root, cand_mode, "candidate")
    common = {k: v for k, v in edits.items() if not k.startswith(("fixture.", "raw.", "append."))}
    named = {"@base": base, "@candidate": cand}
    plan0 = {"adapter_command_digest": t["adapter_command_digest"], "egress_policy_id": "no-network",
             "evaluation_protocol": rv.PROTOCOL, "expires_at_ms": int(time.time() * 1000) + 90000,
             "library_projections": [], "limits": LIMITS, "path_grants": [], "policy_revision": p["revision"],
             "refinement": {"base": base, "candidate": cand, "fixture": {}, "matched_context_digest": "",
                            "variant": "base"},
             "runtime_id": t["runtime_id"], "runtime_template_id": t["runtime_template_id"],
             "sandbox_backend": "linux_production", "schema_version": 1, "secret_handles": [], "tool_policy_id": "t"}
    out = []
    for variant in ("base", "candidate"):
        sid = "%s-%s" % (pair_id, variant)
        f = rv.fixture_for(variant, sid)
        f["base_projection_digest"] = base["content_digest"]
        f["candidate_projection_digest"] = cand["content_digest"]
        f["selected_projection"] = dict(base if variant == "base" else cand)
        f["expected"]["required_literals"] = REQUIRED
        f["expected"]["forbidden_literals"] = FORBIDDEN
        f["expected"]["max_wall_latency_us"] = 60000000
        f["matched_pair_id"] = pair_id
        for k, v in common.items():
            set_path(f, k, v)
        data = canon(f).encode()
        plan = json.loads(json.dumps(plan0))
        fc = {"content_digest": hashlib.sha256(data).hexdigest(), "destination_alias": "refinement-fixtures",
              "projection_id": "fixture"}
        plan["refinement"]["fixture"] = fc
        plan["refinement"]["variant"] = variant
        plan["library_projections"] = sorted([fc, dict(base if variant == "base" else cand)],
                                             key=lambda e: e["projection_id"])
        pc, _, mc = rv.digests(plan, f)
        plan["refinement"]["matched_context_digest"] = mc
        late = {k[len("fixture.%s." % variant):]: v for k, v in edits.items()
                if k.startswith("fixture.%s." % variant)}
        if late:
            for k, v in late.items():
                set_path(f, k, dict(named[v]) if isinstance(v, str) and v in named else v)
            data = canon(f).encode()
        raw = edits.get("raw." + variant)
        if raw is not None:
            data = raw.encode() if isinstance(raw, str) else raw
        tail = edits.get("append." + variant)
        if tail is not None:
            data += tail.encode()
        if late or raw is not None or tail is not None:
            fc["content_digest"] = hashlib.sha256(data).hexdigest()
            plan["library_projections"] = sorted([fc, dict(base if variant == "base" else cand)],
                                                 key=lambda e: e["projection_id"])
        write600(os.path.join(root, hashlib.sha256(data).hexdigest() + ".json"), data)
        with open(os.path.join(outdir, sid + ".plan"), "w") as fh:
            fh.write(canon(plan))
        out.append(mc)
    print(pc, out[0], out[1])


def main(argv):
    if argv[1] == "policy":
        policy(argv[2])
    elif argv[1] == "pair":
        edits = {}
        for e in argv[8:]:
            k, _, v = e.partition("=")
            edits[k] = v if k.startswith(("raw.", "append.")) else json.loads(v)
        pair(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], edits)
    else:
        sys.exit("usage: see the top of refinement.py")


if __name__ == "__main__":
    main(sys.argv)
