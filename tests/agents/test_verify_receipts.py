#!/usr/bin/python3
"""test_verify_receipts.py: tests of tests/agents/verify_receipts.py itself.

Builds receipt journals and receipts_page results holding both receipt kinds
(session.terminal and session.refinement) in gloved's documented format
(docs/control-protocol.md, "Journals", "Receipts", "Refinement receipt"),
written here independently of the verifier's own encoder, and checks that
the verifier accepts them and refuses each defect with its reason: a MAC
made in the other kind's envelope domain, a flipped byte, and every
refinement receipt rule. The outcomes are the committed ones of
tests/fixtures/refinement/outcomes.json. Standard library only; run by
`meson test --suite unit` (store/verify-receipts). Exit 0 when every case
holds, 1 naming the first that does not.
"""
import contextlib
import copy
import hashlib
import hmac
import importlib.util
import io
import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

spec = importlib.util.spec_from_file_location("verify_receipts", os.path.join(HERE, "verify_receipts.py"))
vr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vr)

RESOURCE_DOMAIN = b"glove.receipt.envelope.v1\x00"
REFINEMENT_DOMAIN = b"glove.receipt.refinement-envelope.v1\x00"
RECEIPT_DOMAIN = b"glove.receipt.refinement.v1\x00"
KEY = bytes(range(32))
ANCHOR = bytes([0xa5]) * 32


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def outcome(name):
    with open(os.path.join(ROOT, "tests/fixtures/refinement/outcomes.json"), "rb") as f:
        for c in json.load(f)["cases"]:
            if c["name"] == name:
                return json.loads(c["outcome"])
    raise SystemExit("test_verify_receipts: no outcome %r in outcomes.json" % name)


PLAN = sha(b"plan")
CONTROLLER = sha(b"controller")


def terminal(session):
    binding = {"omitted": "binding.unavailable"}
    return {"controller_plan_digest": CONTROLLER, "ended_at_ms": 1764000002000, "exit_code": 0,
            "launch_binding": binding, "launch_binding_digest": sha(canon(binding)),
            "plan_content_digest": PLAN, "receipt_schema_version": 1, "session_id": session,
            "started_at_ms": 1764000001000, "state": "exited", "termination": {"kind": "exit"},
            "usage": {"cpu_time_ms": 5, "disk_bytes": 0, "output_bytes": 57, "peak_memory_bytes": 4096,
                      "wall_time_ms": 1500}}


def projection(pid, alias, digest):
    return {"content_digest": digest, "destination_alias": alias, "projection_id": pid}


def seal(r):
    """Sets receipt_mac as gloved does."""
    body = {k: v for k, v in r.items() if k != "receipt_mac"}
    r["receipt_mac"] = hmac.new(KEY, RECEIPT_DOMAIN + canon(body), hashlib.sha256).hexdigest()
    return r


def refinement(session, variant, out):
    p = {"base": projection("skill-base", "libraries", sha(b"base")),
         "candidate": projection("skill-candidate", "libraries", sha(b"candidate")),
         "fixture": projection("refinement-fixture", "refinement-fixtures", out["fixture_document_digest"])}
    p["selected"] = dict(p[variant])
    ev = out["evidence"]
    return seal({"controller_plan_digest": CONTROLLER, "evaluation_protocol": "refinement-eval-v1",
                 "evaluator": {"complete": ev["status"] == "valid", "defects": list(ev["defects"])},
                 "matched_context_digest": sha(b"matched"), "outcome": out,
                 "outcome_commitment": sha(canon(out)), "plan_content_digest": PLAN, "projections": p,
                 "receipt_mac": "", "resource_receipt": terminal(session), "schema": "glove.refinement-receipt-v1",
                 "session_id": session, "stream": copy.deepcopy(out["stream"]), "variant": variant})


def chain(receipts, domain_of=None):
    """[(kind, session, receipt)] -> [(envelope bytes, mac)] from ANCHOR.
    domain_of(i, kind) may force a record's envelope domain."""
    mac, out = ANCHOR, []
    for i, (kind, session, receipt) in enumerate(receipts):
        env = canon({"appended_at_ms": 1764000000000 + i, "kind": kind, "receipt": receipt, "sequence": i + 1,
                     "session_id": session})
        dom = domain_of(i, kind) if domain_of else (REFINEMENT_DOMAIN if kind == "session.refinement"
                                                   else RESOURCE_DOMAIN)
        mac = hmac.new(KEY, dom + mac + env, hashlib.sha256).digest()
        out.append((env, mac))
    return out


def journal(records):
    hdr = b"GLVRCPT1" + struct.pack(">IIIIQ", 1, 65536, 100000, 0, 64 * 1024 * 1024) + ANCHOR
    return hdr + b"".join(struct.pack(">I", len(e)) + e + m for e, m in records)


def page(records):
    envs = [{"envelope": json.loads(e), "mac": m.hex(), "sequence": i + 1} for i, (e, m) in enumerate(records)]
    head = {"mac": (records[-1][1] if records else ANCHOR).hex(), "sequence": len(records)}
    return canon({"acknowledged_sequence": 0, "anchor": ANCHOR.hex(), "envelopes": envs, "head": head,
                  "more": False, "recovery": {"torn_bytes": 0, "torn_offset": 0}})


def run(tmp, data, as_page=False, extra=()):
    path = os.path.join(tmp, "input")
    with open(path, "wb") as f:
        f.write(data)
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        rc = vr.main(["verify_receipts.py", "--key", os.path.join(tmp, "key"), "--anchor", ANCHOR.hex(),
                      "--page" if as_page else "--journal", path] + list(extra))
    return rc, o.getvalue(), e.getvalue()


FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL: %s" % what, file=sys.stderr)


def base_receipts():
    return [("session.terminal", "s-plain", terminal("s-plain")),
            ("session.refinement", "s-lint-base", refinement("s-lint-base", "base", outcome("pass"))),
            ("session.refinement", "s-lint-candidate",
             refinement("s-lint-candidate", "candidate", outcome("invalid-utf8-undrained")))]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "key"), "wb") as f:
            f.write(KEY)
        good = chain(base_receipts())
        matched = sha(b"matched")
        want_lines = ["s-lint-base base passed=true evidence=valid matched=" + matched,
                      "s-lint-candidate candidate passed=false evidence=invalid matched=" + matched]
        for as_page, data in ((False, journal(good)), (True, page(good))):
            what = "page" if as_page else "journal"
            rc, out, err = run(tmp, data, as_page, ["--show-outcomes"])
            lines = out.splitlines()
            check(rc == 0, "%s: both kinds accepted (%d: %s)" % (what, rc, err.strip()))
            check(lines and lines[0].startswith("ok: %s: 3 records verified" % what), "%s: summary %r" % (what, out))
            check(lines and "1 session.terminal receipts" in lines[0] and "2 session.refinement receipts" in lines[0],
                  "%s: the summary counts each kind: %r" % (what, out))
            check(lines[1:] == want_lines, "%s: --show-outcomes lines %r" % (what, lines[1:]))
            rc, out, _ = run(tmp, data, as_page)
            check(rc == 0 and len(out.splitlines()) == 1, "%s: without --show-outcomes one line: %r" % (what, out))

        def refused(records, expect, what, as_page=False):
            rc, out, err = run(tmp, page(records) if as_page else journal(records), as_page, ["--show-outcomes"])
            check(rc == 1 and out == "", "%s: refused with nothing on stdout (%d, %r)" % (what, rc, out))
            check(err.startswith("verify_receipts: " + expect), "%s: %r does not start with %r" % (what, err, expect))

        # The envelope domain by kind: swapped either way breaks the chain.
        swap = chain(base_receipts(), lambda i, k: RESOURCE_DOMAIN if i == 1 else
                     (REFINEMENT_DOMAIN if k == "session.refinement" else RESOURCE_DOMAIN))
        refused(swap, "record 2: MAC", "refinement envelope in the resource domain")
        refused(swap, "record 2: MAC", "refinement envelope in the resource domain (page)", True)
        swap = chain(base_receipts(), lambda i, k: REFINEMENT_DOMAIN)
        refused(swap, "record 1: MAC", "terminal envelope in the refinement domain")
        # A flipped byte inside the refinement receipt.
        j = bytearray(journal(good))
        at = bytes(j).index(b'"variant":"candidate"') + len(b'"variant":"')
        j[at] ^= 0x20
        rc, _, err = run(tmp, bytes(j))
        check(rc == 1 and err.startswith("verify_receipts: record 3: MAC"), "flipped byte: %r" % err)

        # Each rule of the refinement receipt, with the chain and receipt_mac
        # made valid again so that only that rule fails.
        def mutated(fn, reseal=True):
            rs = base_receipts()
            r = copy.deepcopy(rs[1][2])
            fn(r)
            if reseal:
                seal(r)
            rs[1] = (rs[1][0], rs[1][1], r)
            return chain(rs)

        def setp(path, value):
            def fn(r):
                o = r
                for k in path[:-1]:
                    o = o[k]
                o[path[-1]] = value
            return fn

        def delp(name):
            return lambda r: r.pop(name)

        def other_key_mac(r):
            body = {k: v for k, v in r.items() if k != "receipt_mac"}
            r["receipt_mac"] = hmac.new(bytes(32), RECEIPT_DOMAIN + canon(body), hashlib.sha256).hexdigest()

        def envelope_domain_mac(r):
            body = {k: v for k, v in r.items() if k != "receipt_mac"}
            r["receipt_mac"] = hmac.new(KEY, RESOURCE_DOMAIN + canon(body), hashlib.sha256).hexdigest()

        def outcome_changed(r):
            r["outcome"]["metrics"]["passed"] = False  # the commitment is the old one

        def outcome_and_commitment(r):  # consistent, but the evaluator no longer matches
            r["outcome"]["evidence"] = {"defects": ["stream_incomplete"], "status": "invalid"}
            r["outcome_commitment"] = sha(canon(r["outcome"]))

        def other_plan(r):
            r["controller_plan_digest"] = sha(b"other")

        cases = [
            (setp(["variant"], "candidate"), "record 2: projections.selected is not projections.candidate"),
            (setp(["variant"], "other"), "record 2: variant"),
            (setp(["schema"], "glove.refinement-receipt-v2"), "record 2: schema"),
            (setp(["evaluation_protocol"], "refinement-eval-v2"), "record 2: evaluation_protocol"),
            (setp(["session_id"], "s-lint-candidate"), "record 2: the receipt's session_id"),
            (setp(["matched_context_digest"], "AB" * 32), "record 2: matched_context_digest"),
            (setp(["extra"], 1), "record 2: a session.refinement receipt does not have exactly"),
            (delp("stream"), "record 2: a session.refinement receipt does not have exactly"),
            (outcome_changed, "record 2: outcome_commitment"),
            (setp(["outcome", "schema"], "glove.refinement-outcome-v0"), "record 2: outcome is not"),
            (setp(["stream"], None), "record 2: stream"),
            (setp(["stream", "bytes"], 58), "record 2: stream"),
            (setp(["evaluator", "complete"], False), "record 2: evaluator"),
            (setp(["evaluator", "complete"], 1), "record 2: evaluator"),
            (setp(["evaluator", "defects"], ["invalid_utf8"]), "record 2: evaluator"),
            (outcome_and_commitment, "record 2: evaluator"),
            (delp("projections"), "record 2: a session.refinement receipt"),
            (setp(["projections", "selected"], projection("skill-candidate", "libraries", sha(b"candidate"))),
             "record 2: projections.selected"),
            (setp(["projections", "extra"], projection("x", "y", sha(b"x"))), "record 2: projections does not"),
            (setp(["projections", "fixture", "size"], 1), "record 2: projections.fixture does not"),
            (setp(["projections", "base", "content_digest"], "00"), "record 2: projections.base.content_digest"),
            (setp(["resource_receipt", "session_id"], "s-other"), "record 2: the resource_receipt's session_id"),
            (setp(["resource_receipt", "launch_binding_digest"], sha(b"x")), "record 2: launch_binding_digest"),
            (delp("resource_receipt"), "record 2: a session.refinement receipt"),
            (setp(["resource_receipt"], {}), "record 2: resource_receipt without launch_binding"),
            (other_plan, "record 2: controller_plan_digest differs from the resource_receipt's"),
        ]
        # The harness itself: an unchanged receipt, resealed or not, passes.
        for reseal in (True, False):
            rc, _, err = run(tmp, journal(mutated(lambda r: None, reseal)))
            check(rc == 0, "unchanged receipt (reseal %s) refused: %r" % (reseal, err))
        for i, (fn, expect) in enumerate(cases):
            refused(mutated(fn), expect, "case %d" % i)
        # receipt_mac itself (not resealed).
        refused(mutated(other_key_mac, False), "record 2: receipt_mac", "receipt_mac under another key")
        refused(mutated(envelope_domain_mac, False), "record 2: receipt_mac", "receipt_mac in another domain")
        refused(mutated(setp(["receipt_mac"], "0" * 64), False), "record 2: receipt_mac", "receipt_mac zeros")
        refused(mutated(setp(["receipt_mac"], "X"), False), "record 2: receipt_mac", "receipt_mac not hex")
        refused(mutated(setp(["outcome", "metrics", "latency_us"], 1), False), "record 2: outcome_commitment",
                "outcome changed after sealing")
    if FAILED:
        print("test_verify_receipts: %d case(s) failed" % len(FAILED), file=sys.stderr)
        return 1
    print("test_verify_receipts: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
