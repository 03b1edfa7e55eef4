#!/usr/bin/python3
"""test_verify_receipts.py: tests of tests/agents/verify_receipts.py itself.

Builds receipt journals and receipts_page results holding both receipt kinds
(session.terminal and session.refinement) in gloved's documented format
(docs/control-protocol.md, "Journals", "Receipts", "Refinement receipt"),
written here independently of the verifier's own encoder, and checks that
the verifier accepts them and refuses each defect with its reason: a MAC
made in the other kind's envelope domain, a flipped byte, and every
refinement receipt rule, each cross-check of a refinement outcome against
itself and its receipt, an empty launch binding, a partial page (exit 3
without --partial) and a compacted journal (header flag continues, param
the covered head, with its checkpoint or --after-mac) built as
docs/recovery.md "Compaction" describes it. The outcomes are the committed ones of
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


def journal(records, flags=0, param=ANCHOR):
    hdr = b"GLVRCPT1" + struct.pack(">IIIIQ", 1, 65536, 100000, flags, 64 * 1024 * 1024) + param
    return hdr + b"".join(struct.pack(">I", len(e)) + e + m for e, m in records)


def checkpoint(covered_seq, covered_head, old_records, old_end_seq, old_end_head, key=KEY, origin=ANCHOR,
               prev_param=ANCHOR, generation=1, entries=0):
    """A receipt checkpoint as docs/recovery.md ("Compaction") and
    include/glove/store/checkpoint.h describe it, MACed with key."""
    body = b""
    hdr = (b"GLVCKPT1" + b"GLVRCPT1" + struct.pack(">IIQ", 1, 0, generation) + origin + prev_param +
           struct.pack(">Q", covered_seq) + covered_head + struct.pack(">QQ", old_records, old_end_seq) +
           old_end_head + struct.pack(">QQ", entries, len(body)))
    assert len(hdr) == 200
    data = hdr + body
    return data + hmac.new(key, b"glove.receipt.checkpoint.v1\x00" + data, hashlib.sha256).digest()


def page(records, more=False, head=None):
    envs = [{"envelope": json.loads(e), "mac": m.hex(), "sequence": i + 1} for i, (e, m) in enumerate(records)]
    if head is None:
        head = {"mac": (records[-1][1] if records else ANCHOR).hex(), "sequence": len(records)}
    return canon({"acknowledged_sequence": 0, "anchor": ANCHOR.hex(), "envelopes": envs, "head": head,
                  "more": more, "recovery": {"torn_bytes": 0, "torn_offset": 0}})


def run(tmp, data, as_page=False, extra=(), ckpt=None):
    path = os.path.join(tmp, "input")
    with open(path, "wb") as f:
        f.write(data)
    if ckpt is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + ".ckpt")
    else:
        with open(path + ".ckpt", "wb") as f:
            f.write(ckpt)
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
            # The summary says how each binding was checked (here all stand-ins).
            check(lines and "launch bindings: 0 matched their --bindings file, 3 stand-ins, 0 NOT checked" in lines[0],
                  "%s: the summary says which bindings were checked: %r" % (what, out))
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
        # Outcome cross-checks: each violated once, resealed (commitment,
        # receipt_mac, chain) so that only that rule fails.
        def outcome_edit(fn):
            def edit(r):
                fn(r["outcome"])
                r["outcome_commitment"] = sha(canon(r["outcome"]))
                r["stream"] = copy.deepcopy(r["outcome"]["stream"])
                ev = r["outcome"]["evidence"]
                r["evaluator"] = {"complete": ev["status"] == "valid", "defects": list(ev["defects"])}
            return edit

        def o_set(path, value):
            def fn(o):
                x = o
                for k in path[:-1]:
                    x = x[k]
                x[path[-1]] = value
            return fn

        def o_lost(o):  # stream null without stream_lost
            o["stream"] = None

        def o_lost_kept(o):  # stream_lost with a stream
            o["evidence"] = {"defects": ["stream_incomplete", "stream_lost"], "status": "invalid"}
            o["metrics"]["passed"] = False

        def o_missing_without_assertion(o):
            o["metrics"]["required_literals"]["missing"] = [1]

        def o_signal(o):  # termination not exit, but not failed
            o["observed"]["termination"] = "signal"

        cross = [
            (o_set(["metrics", "passed"], False), "outcome.metrics.passed"),
            (o_set(["metrics", "failed_assertions"], ["termination", "exit_code"]),
             "outcome.metrics.failed_assertions [\"termination\",\"exit_code\"] is not sorted"),
            (o_set(["metrics", "failed_assertions"], ["exit_code", "exit_code"]), "outcome.metrics.failed_assertions"),
            (o_set(["metrics", "failed_assertions"], ["tokens"]), "outcome.metrics.failed_assertions holds"),
            (o_set(["evidence"], {"defects": ["stream_incomplete", "invalid_utf8"], "status": "invalid"}),
             "outcome.evidence.defects"),
            (o_set(["evidence"], {"defects": ["model_refused"], "status": "invalid"}), "outcome.evidence.defects"),
            (o_set(["evidence"], {"defects": ["invalid_utf8"], "status": "valid"}), "outcome.evidence.status"),
            (o_set(["evidence", "status"], "invalid"), "outcome.evidence.status"),
            (o_set(["fixture_document_digest"], sha(b"other fixture")), "outcome.fixture_document_digest"),
            (o_set(["metrics", "required_literals", "missing"], [2, 1]), "outcome.metrics.required_literals.missing"),
            (o_set(["metrics", "required_literals", "missing"], [3]), "outcome.metrics.required_literals.missing"),
            (o_set(["metrics", "forbidden_literals", "found"], [0, 0]), "outcome.metrics.forbidden_literals.found"),
            (o_missing_without_assertion, "outcome.metrics.failed_assertions lacks required_literals"),
            (o_set(["metrics", "forbidden_literals", "found"], [0]),
             "outcome.metrics.failed_assertions lacks forbidden_literals"),
            (o_lost, "outcome.stream is null"),
            (o_lost_kept, "outcome.stream is present"),
            (o_set(["observed", "termination"], "crashed"), "outcome.observed is not"),
            (o_signal, "outcome.metrics.failed_assertions lacks termination"),
            (o_set(["observed", "resource_limit"], True), "outcome.metrics.failed_assertions lacks resource_limit"),
            (o_set(["observed", "exit_code"], 1), "outcome.observed.exit_code"),
            (o_set(["metrics", "latency_us"], 1500001), "outcome.metrics.latency_us"),
            (o_set(["extra"], 1), "outcome does not have exactly"),
        ]
        for i, (fn, expect) in enumerate(cross):
            refused(mutated(outcome_edit(fn)), "record 2: " + expect, "cross-check %d (%s)" % (i, expect))
        # The harness of these: an edit that changes nothing passes.
        rc, _, err = run(tmp, journal(mutated(outcome_edit(lambda o: None))))
        check(rc == 0, "cross-check harness: unchanged outcome refused: %r" % err)
        # A consistent lost stream passes (null stream, both defects, failed).
        def lost_ok(o):
            o["evidence"] = {"defects": ["stream_incomplete", "stream_lost"], "status": "invalid"}
            o["stream"] = None
            o["metrics"]["passed"] = False
        rc, _, err = run(tmp, journal(mutated(outcome_edit(lost_ok))))
        check(rc == 0, "a consistent lost stream refused: %r" % err)
        # The terminal receipt's observed facts: exit code null from a signal
        # in the resource receipt, but exit in the outcome.
        refused(mutated(setp(["resource_receipt", "termination"], {"kind": "signal", "signal": 9})),
                "record 2: outcome.observed.termination", "resource termination differs from observed")

        # An empty launch_binding {} (either kind), and a stand-in that is not.
        def empty_binding(r):
            r["launch_binding"] = {}
            r["launch_binding_digest"] = sha(canon({}))
        rs = base_receipts()
        empty_binding(rs[0][2])
        refused(chain(rs), "record 1: the receipt's launch_binding {} is neither", "empty binding in a terminal receipt")
        refused(mutated(lambda r: empty_binding(r["resource_receipt"])), "record 2: resource_receipt's launch_binding {} is neither",
                "empty binding in a resource_receipt")
        rs = base_receipts()
        rs[0][2]["launch_binding"] = {"omitted_bytes": "many"}
        rs[0][2]["launch_binding_digest"] = sha(canon(rs[0][2]["launch_binding"]))
        refused(chain(rs), "record 1: launch_binding's stand-in omitted_bytes", "stand-in with a bad count")

        # An empty page after the head (a poll that found nothing new)
        # verifies with --after-mac the head's MAC, and only with it.
        head2 = {"mac": good[1][1].hex(), "sequence": 2}
        empty = page([], head=head2)
        rc, out, err = run(tmp, empty, True, ["--after-mac", good[1][1].hex()])
        check(rc == 0 and out.startswith("ok: page") and "0 records verified" in out,
              "empty page after the head: %d %r %r" % (rc, out, err))
        rc, out, err = run(tmp, empty, True)
        check(rc == 1 and "pass --after-mac" in err, "empty page without --after-mac: %d %r %r" % (rc, out, err))
        rc, out, err = run(tmp, empty, True, ["--after-mac", "00" * 32])
        check(rc == 1 and "head" in err, "empty page with another --after-mac: %d %r %r" % (rc, out, err))

        # A partial page ("more": true): the head is not checked, so exit 3
        # (nothing on stdout) unless --partial, which says so in the summary.
        part = page(good[:2], more=True, head={"mac": "00" * 32, "sequence": 999})
        rc, out, err = run(tmp, part, True, ["--show-outcomes"])
        check(rc == 3 and out == "" and err.startswith("verify_receipts: page: incomplete: 2 records verified") and
              "NOT checked" in err, "partial page without --partial: %d %r %r" % (rc, out, err))
        rc, out, err = run(tmp, part, True, ["--partial", "--show-outcomes"])
        lines = out.splitlines()
        check(rc == 0 and lines and lines[0].startswith("ok: partial page (HEAD NOT CHECKED: more follow, the page "
                                                       "says up to sequence 999): 2 records verified, last record 2")
              and lines[1:] == want_lines[:1], "partial page with --partial: %d %r %r" % (rc, out, err))
        # A corrupt record in a partial page is still refused (exit 1).
        badpart = json.loads(part)
        badpart["envelopes"][1]["envelope"]["appended_at_ms"] += 1
        rc, out, err = run(tmp, canon(badpart), True, ["--partial"])
        check(rc == 1 and err.startswith("verify_receipts: record 2: MAC"), "corrupt partial page: %d %r" % (rc, err))
        # "more" missing or not a boolean.
        nomore = json.loads(page(good))
        del nomore["more"]
        rc, _, err = run(tmp, canon(nomore), True)
        check(rc == 1 and "more is None" in err, "page without more: %d %r" % (rc, err))
        rc, _, err = run(tmp, page(good), False, ["--partial"])
        check(rc == 2, "--partial with --journal is a usage error: %d %r" % (rc, err))

        # A compacted journal, as docs/recovery.md "Compaction" makes it:
        # receipts 1..2 acknowledged and dropped; the tail holds 3 (and a 4th
        # appended after), header flags 1 and param = the MAC of record 2;
        # the checkpoint covers (2, mac_2).
        rs = base_receipts() + [("session.terminal", "s-after", terminal("s-after"))]
        full = chain(rs)
        mac2 = full[1][1]
        tail = journal(full[2:], flags=1, param=mac2)
        ck = checkpoint(2, mac2, 3, 3, full[2][1])
        rc, out, err = run(tmp, tail, False, ["--show-outcomes"], ckpt=ck)
        lines = out.splitlines()
        check(rc == 0 and lines and lines[0].startswith("ok: journal (compacted: continues checkpoint generation 1, "
                                                       "which covers up to sequence 2): 2 records verified, head 4 "
                                                       + full[3][1].hex())
              and lines[1:] == want_lines[1:], "compacted journal with its checkpoint: %d %r %r" % (rc, out, err))
        with open(os.path.join(tmp, "ck2"), "wb") as f:
            f.write(ck)
        rc, out, err = run(tmp, tail, False, ["--checkpoint", os.path.join(tmp, "ck2")])
        check(rc == 0 and out.startswith("ok: journal (compacted"), "--checkpoint FILE: %d %r" % (rc, err))
        rc, out, err = run(tmp, tail, False, ["--after-mac", mac2.hex()])
        check(rc == 0 and out.startswith("ok: journal (compacted: continues from --after-mac; checkpoint not read): "
                                         "2 records verified, head 4 "), "compacted journal, --after-mac: %d %r %r" %
              (rc, out, err))
        rc, out, err = run(tmp, tail, False, ["--after-mac", mac2.hex()], ckpt=ck)
        check(rc == 0, "compacted journal, --after-mac and checkpoint: %d %r" % (rc, err))
        rc, out, err = run(tmp, journal([], flags=1, param=mac2), False, [], ckpt=checkpoint(2, mac2, 2, 2, mac2))
        check(rc == 0 and "0 records verified, head 2 " + mac2.hex() in out, "empty compacted journal: %d %r %r" %
              (rc, out, err))

        def refused_journal(data, extra, ckpt, expect, what):
            rc, out, err = run(tmp, data, False, extra, ckpt=ckpt)
            check(rc == 1 and out == "" and err.startswith("verify_receipts: " + expect),
                  "%s: %d %r does not start with %r" % (what, rc, err, expect))

        refused_journal(tail, [], None, "journal: it was compacted", "compacted journal, no checkpoint or after-mac")
        refused_journal(tail, ["--after-mac", full[0][1].hex()], None, "journal: it continues from",
                        "compacted journal, --after-mac of another record")
        refused_journal(tail, [], checkpoint(2, mac2, 3, 3, full[2][1], key=bytes(32)), "checkpoint ",
                        "checkpoint MACed with another key")
        refused_journal(tail, [], checkpoint(1, full[0][1], 3, 3, full[2][1]), "journal: it continues from",
                        "checkpoint covering another head")
        refused_journal(tail, [], checkpoint(1, mac2, 3, 3, full[2][1]), "record 2: sequence 3 where 2 follows",
                        "checkpoint covering another sequence")
        refused_journal(tail, [], checkpoint(2, mac2, 3, 3, full[2][1], origin=bytes(32)), "checkpoint ",
                        "checkpoint of another anchor")
        refused_journal(journal(full[3:], flags=1, param=mac2), ["--after-mac", mac2.hex()], None, "record 4: MAC",
                        "compacted journal with its first record dropped")
        refused_journal(journal(full[2:], flags=1, param=ANCHOR), [], None, "journal: it was compacted",
                        "compacted journal whose param is the anchor, no checkpoint")
        refused_journal(journal(full[2:], flags=2, param=mac2), [], ck, "journal: header version 1 / flags 2",
                        "unknown header flags")
        refused_journal(journal(good), ["--after-mac", mac2.hex()], None, "journal: --after-mac given, but",
                        "--after-mac with a journal never compacted")
    if FAILED:
        print("test_verify_receipts: %d case(s) failed" % len(FAILED), file=sys.stderr)
        return 1
    print("test_verify_receipts: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
