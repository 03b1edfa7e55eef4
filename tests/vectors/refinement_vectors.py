#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Independent computation of the refinement-eval-v1 context digests
(docs/digests.md, "Refinement context digests").

Written from docs/digests.md and docs/refinement.md, not from the C code:
tests/unit/refinement/test_context.c checks the C implementation against the
vectors this script writes (tests/fixtures/refinement/vectors.json, by
tests/fixtures/refinement/generate.py). Run by meson as
refinement/digest-vectors:

    python3 tests/vectors/refinement_vectors.py [ROOT]

prints the table of vectors and exits non-zero when a property below does
not hold or when a digest of the table is missing from ROOT/docs/digests.md.

    plan context     SHA-256(canonical({"adapter_command_digest", "base_projection",
                     "candidate_projection", "egress_policy_id", "limits", "policy_revision",
                     "runtime_id", "runtime_template_id", "sandbox_backend",
                     "schema": "glove.refinement-plan-context-v1", "secret_handles",
                     "tool_policy_id"}))
    fixture context  SHA-256(canonical(fixture without session_id, variant and
                     selected_projection, schema "glove.refinement-fixture-context-v1"))
    matched context  SHA-256(canonical({"fixture_context_digest", "plan_context_digest",
                     "schema": "glove.refinement-matched-context-v1"}))

Also imported by tests/fixtures/refinement/generate.py.
"""
import copy
import hashlib
import json
import os
import sys

FIXTURE_SCHEMA = "glove.refinement-eval-fixture-v1"
PLAN_CONTEXT_SCHEMA = "glove.refinement-plan-context-v1"
FIXTURE_CONTEXT_SCHEMA = "glove.refinement-fixture-context-v1"
MATCHED_CONTEXT_SCHEMA = "glove.refinement-matched-context-v1"
PROTOCOL = "refinement-eval-v1"

LIMIT_NAMES = ["cpu_time_ms", "disk_bytes", "memory_bytes", "pids", "terminal_output_bytes", "wall_time_ms"]
PLAN_CONTEXT_MEMBERS = ["adapter_command_digest", "egress_policy_id", "policy_revision", "runtime_id",
                        "runtime_template_id", "sandbox_backend", "secret_handles", "tool_policy_id"]
FIXTURE_EXCLUDED = ["selected_projection", "session_id", "variant"]


def canonical(value):
    """Glove's canonical JSON (sorted keys, no whitespace, UTF-8 unescaped,
    integers only) for values whose strings hold no control characters."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def digest(value):
    return sha256_hex(canonical(value))


def label(word):
    """A reproducible stand-in digest: SHA-256 of a word."""
    return sha256_hex(word.encode("utf-8"))


def plan_context(plan):
    """The plan-context object of a refinement plan (a dict)."""
    ctx = {k: plan[k] for k in PLAN_CONTEXT_MEMBERS}
    ctx["limits"] = {k: plan["limits"][k] for k in LIMIT_NAMES}
    ctx["base_projection"] = dict(plan["refinement"]["base"])
    ctx["candidate_projection"] = dict(plan["refinement"]["candidate"])
    ctx["schema"] = PLAN_CONTEXT_SCHEMA
    return ctx


def fixture_context(fixture):
    ctx = {k: copy.deepcopy(v) for k, v in fixture.items() if k not in FIXTURE_EXCLUDED}
    ctx["schema"] = FIXTURE_CONTEXT_SCHEMA
    return ctx


def matched_context(plan_context_digest, fixture_context_digest):
    return {"fixture_context_digest": fixture_context_digest, "plan_context_digest": plan_context_digest,
            "schema": MATCHED_CONTEXT_SCHEMA}


def digests(plan, fixture):
    pc = digest(plan_context(plan))
    fc = digest(fixture_context(fixture))
    return pc, fc, digest(matched_context(pc, fc))


# ---- the worked example (docs/refinement.md) and its matched pair ----

BASE_SKILL = {"content_digest": label("base skill bundle"), "destination_alias": "libraries",
              "projection_id": "skill-base"}
CANDIDATE_SKILL = {"content_digest": label("candidate skill bundle"), "destination_alias": "libraries",
                   "projection_id": "skill-candidate"}
FIXTURE_PROJECTION_ID = "refinement-fixture"
FIXTURE_DESTINATION = "refinement-fixtures"

EXAMPLE_FIXTURE = {
    "base_projection_digest": BASE_SKILL["content_digest"],
    "candidate_projection_digest": CANDIDATE_SKILL["content_digest"],
    "dataset_digest": label("dataset glove-demo lint v1"),
    "dataset_reference": "glove-demo/lint-tasks@v1",
    "evaluation_run_id": "run-2026-01-01-001",
    "expected": {
        "exit_code": 0,
        "forbidden_literals": ["Traceback (most recent call last)"],
        "max_wall_latency_us": 120000000,
        "required_literals": ["PASS lint", "done: 3 files", "\u2713 all checks passed"],
        "termination": "exited",
    },
    "fixture_digest": label("fixture case lint-3"),
    "fixture_id": "lint-3",
    "harness": "codex-cli@0.45.0",
    "matched_pair_id": "pair-lint-3",
    "model_identity": "openai/gpt-5-codex@2025-09-15",
    "module": {"identity": "lint-module@2", "selectors": ["python", "shell"]},
    "proposal_digest": label("proposal 17"),
    "schema": FIXTURE_SCHEMA,
    "seed": 42,
    "selected_projection": BASE_SKILL,
    "session_id": "s-lint-3-base",
    "variant": "base",
}


def fixture_for(variant, session_id, base=EXAMPLE_FIXTURE):
    f = copy.deepcopy(base)
    f["variant"] = variant
    f["session_id"] = session_id
    f["selected_projection"] = dict(BASE_SKILL if variant == "base" else CANDIDATE_SKILL)
    return f


EXAMPLE_PLAN = {
    "adapter_command_digest": label("codex adapter launch"),
    "egress_policy_id": "fake-model",
    "evaluation_protocol": PROTOCOL,
    "expires_at_ms": 1767225660000,
    "library_projections": [],
    "limits": {"cpu_time_ms": 60000, "disk_bytes": 1073741824, "memory_bytes": 2147483648, "pids": 256,
               "terminal_output_bytes": 16777216, "wall_time_ms": 300000},
    "path_grants": [],
    "policy_revision": 7,
    "refinement": {"base": BASE_SKILL, "candidate": CANDIDATE_SKILL, "fixture": {}, "matched_context_digest": "",
                   "variant": "base"},
    "runtime_id": "codex",
    "runtime_template_id": "codex-safe",
    "sandbox_backend": "linux_production",
    "schema_version": 1,
    "secret_handles": ["openai-key"],
    "tool_policy_id": "default-tools",
}


def plan_for(fixture, expires_at_ms, base=EXAMPLE_PLAN):
    """The plan that runs fixture: it selects the fixture's variant, commits
    the fixture's bytes and the matched-context digest."""
    p = copy.deepcopy(base)
    p["expires_at_ms"] = expires_at_ms
    fixture_commitment = {"content_digest": sha256_hex(canonical(fixture)),
                          "destination_alias": FIXTURE_DESTINATION, "projection_id": FIXTURE_PROJECTION_ID}
    p["refinement"]["fixture"] = fixture_commitment
    p["refinement"]["variant"] = fixture["variant"]
    selected = p["refinement"][fixture["variant"]]
    p["library_projections"] = sorted([fixture_commitment, dict(selected)], key=lambda e: e["projection_id"])
    p["refinement"]["matched_context_digest"] = digests(p, fixture)[2]
    return p


def vector(name, plan, fixture, why):
    pc, fc, mc = digests(plan, fixture)
    return {"name": name, "why": why, "plan": plan, "fixture": fixture,
            "fixture_document_digest": sha256_hex(canonical(fixture)),
            "plan_context_digest": pc, "fixture_context_digest": fc, "matched_context_digest": mc}


def changed(name, why, plan_fn=None, fixture_fn=None):
    f = fixture_for("base", "s-lint-3-base")
    if fixture_fn:
        fixture_fn(f)
    p = copy.deepcopy(EXAMPLE_PLAN)
    if plan_fn:
        plan_fn(p)
    return vector(name, plan_for(f, 1767225660000, p), f, why)


def set_in(path, value):
    def fn(d):
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return fn


def vectors():
    fb = fixture_for("base", "s-lint-3-base")
    fc = fixture_for("candidate", "s-lint-3-candidate")
    out = [
        vector("pair-base", plan_for(fb, 1767225660000), fb,
               "the worked example: the base run of the matched pair"),
        vector("pair-candidate", plan_for(fc, 1767225720000), fc,
               "the candidate run: other variant, session, expiry and selected projection; same contexts"),
        changed("changed-seed", "seed 43 instead of 42 (fixture context)", fixture_fn=set_in(["seed"], 43)),
        changed("changed-required-literal", "a required literal less (fixture context)",
                fixture_fn=set_in(["expected", "required_literals"], ["PASS lint", "done: 3 files"])),
        changed("changed-wall-time", "wall_time_ms 300001 (plan context)",
                plan_fn=set_in(["limits", "wall_time_ms"], 300001)),
        changed("changed-candidate-digest", "another candidate bundle (both contexts)",
                plan_fn=set_in(["refinement", "candidate", "content_digest"], label("candidate skill bundle 2")),
                fixture_fn=set_in(["candidate_projection_digest"], label("candidate skill bundle 2"))),
        changed("no-module", "the optional module absent (fixture context)",
                fixture_fn=lambda f: f.pop("module")),
    ]
    return out


# ---- the evaluator's outcome (docs/refinement.md, "The evaluator") ----

OUTCOME_SCHEMA = "glove.refinement-outcome-v1"


def outcome(fixture, stream, facts):
    """The canonical outcome bytes of a raw stream (bytes) under trusted
    facts {"termination", "exit_code", "wall_latency_us", "drained",
    "resource_limit"}, for the fixture (a dict)."""
    try:
        stream.decode("utf-8", errors="strict")
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    ex = fixture["expected"]
    req = [lit.encode("utf-8") in stream for lit in ex["required_literals"]]
    forb = [lit.encode("utf-8") in stream for lit in ex["forbidden_literals"]]
    exited = facts["termination"] == "exit"
    limit = facts["resource_limit"] or facts["termination"] == "limit"
    checks = {
        "exit_code": exited and facts["exit_code"] != ex["exit_code"],
        "forbidden_literals": any(forb),
        "required_literals": not all(req),
        "resource_limit": limit,
        "termination": not exited,
        "wall_latency": "max_wall_latency_us" in ex and facts["wall_latency_us"] > ex["max_wall_latency_us"],
    }
    failed = sorted(k for k, v in checks.items() if v)
    defects = ([] if utf8 else ["invalid_utf8"]) + ([] if facts["drained"] else ["stream_incomplete"])
    valid = not defects
    out = {
        "evidence": {"defects": defects, "status": "valid" if valid else "invalid"},
        "fixture_document_digest": sha256_hex(canonical(fixture)),
        "metrics": {
            "failed_assertions": failed,
            "forbidden_literals": {"found": [i for i, f in enumerate(forb) if f], "total": len(forb)},
            "latency_us": facts["wall_latency_us"],
            "passed": valid and not failed,
            "required_literals": {"missing": [i for i, f in enumerate(req) if not f], "total": len(req)},
        },
        "observed": {"exit_code": facts["exit_code"] if exited else None, "resource_limit": limit,
                     "termination": facts["termination"]},
        "schema": OUTCOME_SCHEMA,
        "stream": {"bytes": len(stream), "sha256": sha256_hex(stream)},
    }
    return canonical(out)


EXAMPLE_STREAM = b"\x1b[1mPASS lint\x1b[0m\r\ndone: 3 files\r\n\xe2\x9c\x93 all checks passed\r\n"
CLEAN_FACTS = {"termination": "exit", "exit_code": 0, "wall_latency_us": 1500000, "drained": True,
               "resource_limit": False}


def outcome_cases():
    """(name, stream, facts) of the worked example's outcomes."""
    return [
        ("pass", EXAMPLE_STREAM, CLEAN_FACTS),
        ("memory-limit", EXAMPLE_STREAM, dict(CLEAN_FACTS, termination="limit", exit_code=None,
                                              wall_latency_us=130000000, resource_limit=True)),
        ("forged-result", b'PASS lint\r\n{"passed": true, "failed_assertions": []}\r\n'
                          b"Traceback (most recent call last):\r\n", dict(CLEAN_FACTS, exit_code=1)),
        ("invalid-utf8-undrained", b"PASS lint \xff\r\n", dict(CLEAN_FACTS, drained=False)),
    ]


# ---- properties (the reference checks itself) ----

def mutations_plan():
    """(what, fn): each changes one member the plan context includes."""
    out = [(k, set_in([k], "x" + str(EXAMPLE_PLAN[k]) if isinstance(EXAMPLE_PLAN[k], str) else EXAMPLE_PLAN[k] + 1))
           for k in PLAN_CONTEXT_MEMBERS if k != "secret_handles"]
    out.append(("secret_handles", set_in(["secret_handles"], ["openai-key", "other-key"])))
    out += [("limits." + k, set_in(["limits", k], EXAMPLE_PLAN["limits"][k] + 1)) for k in LIMIT_NAMES]
    for side in ("base", "candidate"):
        for m in ("content_digest", "destination_alias", "projection_id"):
            v = label("other " + side + m) if m == "content_digest" else "other-" + side
            out.append(("refinement.%s.%s" % (side, m), set_in(["refinement", side, m], v)))
    return out


def mutations_fixture():
    out = []
    for k, v in EXAMPLE_FIXTURE.items():
        if k in FIXTURE_EXCLUDED or k == "schema":
            continue
        if isinstance(v, str):
            nv = label("other " + k) if len(v) == 64 else v + "x"
            out.append((k, set_in([k], nv)))
        elif isinstance(v, int):
            out.append((k, set_in([k], v + 1)))
    ex = EXAMPLE_FIXTURE["expected"]
    out += [("expected.exit_code", set_in(["expected", "exit_code"], 1)),
            ("expected.max_wall_latency_us", set_in(["expected", "max_wall_latency_us"], ex["max_wall_latency_us"] + 1)),
            ("expected.required_literals", set_in(["expected", "required_literals"], ex["required_literals"][:1])),
            ("expected.forbidden_literals", set_in(["expected", "forbidden_literals"], [])),
            ("module.identity", set_in(["module", "identity"], "lint-module@3")),
            ("module.selectors", set_in(["module", "selectors"], ["python"]))]
    return out


def check_properties(vs):
    problems = []
    by = {v["name"]: v for v in vs}
    a, b = by["pair-base"], by["pair-candidate"]
    if a["matched_context_digest"] != b["matched_context_digest"]:
        problems.append("the matched pair's matched-context digests differ")
    if a["fixture_document_digest"] == b["fixture_document_digest"]:
        problems.append("the matched pair's fixtures are the same document")
    base_pc, base_fc, _ = digests(a["plan"], a["fixture"])
    for what, fn in mutations_plan():
        p = copy.deepcopy(a["plan"])
        fn(p)
        if digests(p, a["fixture"])[0] == base_pc:
            problems.append("changing plan member %s leaves the plan context" % what)
    excluded_plan = [("expires_at_ms", set_in(["expires_at_ms"], 1)),
                     ("refinement.variant", set_in(["refinement", "variant"], "candidate")),
                     ("refinement.fixture", set_in(["refinement", "fixture", "content_digest"], label("x"))),
                     ("refinement.matched_context_digest",
                      set_in(["refinement", "matched_context_digest"], label("y"))),
                     ("library_projections", set_in(["library_projections"], []))]
    for what, fn in excluded_plan:
        p = copy.deepcopy(a["plan"])
        fn(p)
        if digests(p, a["fixture"])[0] != base_pc:
            problems.append("changing %s changes the plan context" % what)
    for what, fn in [("session_id", set_in(["session_id"], "s-other")),
                     ("variant", set_in(["variant"], "candidate")),
                     ("selected_projection", set_in(["selected_projection"], dict(CANDIDATE_SKILL)))]:
        f = copy.deepcopy(a["fixture"])
        fn(f)
        if digests(a["plan"], f)[1] != base_fc:
            problems.append("changing fixture member %s changes the fixture context" % what)
    for what, fn in mutations_fixture():
        f = copy.deepcopy(a["fixture"])
        fn(f)
        if digests(a["plan"], f)[1] == base_fc:
            problems.append("changing fixture member %s leaves the fixture context" % what)
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    vs = vectors()
    problems = check_properties(vs)
    doc = open(os.path.join(root, "docs", "digests.md"), encoding="utf-8").read()
    for v in vs:
        print("%-26s plan %s" % (v["name"], v["plan_context_digest"]))
        print("%-26s fixture %s" % ("", v["fixture_context_digest"]))
        print("%-26s matched %s" % ("", v["matched_context_digest"]))
        print("%-26s document %s" % ("", v["fixture_document_digest"]))
        for k in ("plan_context_digest", "fixture_context_digest", "matched_context_digest"):
            if v[k] not in doc:
                problems.append("docs/digests.md lacks %s %s of %s" % (k, v[k], v["name"]))
    for p in problems:
        print("refinement vectors: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
