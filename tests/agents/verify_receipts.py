#!/usr/bin/python3
"""verify_receipts.py: an independent verifier of gloved's receipt chain.

Written from the documented format only (docs/control-protocol.md,
"Journals", "Receipts", "Terminal receipt" and "Refinement receipt";
docs/recovery.md, "Compaction"; docs/refinement.md, "The evaluator" and
"The stream and the outcome"; docs/digests.md, "Canonical form";
include/glove/store/journal.h, receipts.h and checkpoint.h), with the
Python standard library.

    verify_receipts.py --key KEYFILE --anchor HEX64
                       [--journal FILE [--checkpoint FILE] | --page FILE]
                       [--after-mac HEX64] [--partial] [--bindings DIR]
                       [--show-outcomes]

KEYFILE holds the 32-byte receipt key (receipt.key). HEX64 is the chain
anchor. The input is either the raw journal (--journal receipts.journal) or
a receipts_page result as `glove ctl --json receipts` prints it (--page FILE,
or standard input when neither option is given).

A page that starts after sequence N > 0 needs --after-mac, the MAC of
record N (the head you archived and acknowledged). A page whose "more" is
true ends before the head: its records are verified but its head cannot be
checked (records could be missing at its end), so it exits 3 and says so,
unless --partial is given; then it exits 0 with the summary "ok: partial
page (HEAD NOT CHECKED: ...)". Page on and verify each page (each from the
previous page's last MAC) to check the head.

A journal with header flags 0 starts from the anchor at sequence 1;
--after-mac and --checkpoint are refused for it. A compacted journal
(docs/recovery.md, "Compaction": header flags 1, "continues") holds only
the receipts after the acknowledged head, and its header param is that
head's MAC, which its first record chains from. It is verified from that
param, which must be the covered head of its checkpoint (--checkpoint
FILE, by default FILE.ckpt next to the journal when it exists: its
HMAC-SHA-256 under "glove.receipt.checkpoint.v1\\0", its origin the anchor,
no entries; its covered sequence + 1 is then the first record's sequence)
and, when --after-mac is given, --after-mac (the head you archived: the
journal must continue exactly from it). With neither a checkpoint nor
--after-mac a compacted journal is refused (nothing would pin its start).
With only --after-mac the sequences go on from the first record's.

Checked, in this order, for every record n = 1, 2, ... (or from the start
named above):
  * the envelope is canonical JSON with exactly the members appended_at_ms,
    kind, receipt, sequence, session_id (for a journal: the stored bytes are
    their own canonical encoding);
  * its sequence is n (continuity);
  * mac_n = HMAC-SHA-256(key, DOMAIN || mac_{n-1} || envelope_n), mac_0 =
    the anchor (or the start named above), where DOMAIN is "glove.receipt.refinement-envelope.v1\\0"
    for kind "session.refinement" and "glove.receipt.envelope.v1\\0" for
    every other kind (one chain for all kinds);
  * a "session.terminal" receipt's session_id is the envelope's, and its
    launch_binding_digest is 64 lowercase hex: the SHA-256 of the canonical
    launch_binding when that is a stand-in ({"omitted_bytes":N} or
    {"omitted":CODE}); otherwise of the whole binding gloved keeps locally
    (STATE/bindings/SESSION.json), checked against that file's bytes when
    --bindings STATE/bindings is given and the file is there;
  * a "session.refinement" receipt (docs/control-protocol.md, "Refinement
    receipt") has exactly its documented members; schema
    "glove.refinement-receipt-v1", evaluation_protocol "refinement-eval-v1",
    session_id the envelope's, variant "base" or "candidate",
    matched_context_digest, controller_plan_digest and plan_content_digest
    64 lowercase hex (the last two those of its resource_receipt); outcome a
    "glove.refinement-outcome-v1" object whose SHA-256 (canonical bytes) is
    outcome_commitment; stream equal to outcome.stream; evaluator equal to
    {"complete": outcome.evidence.status == "valid", "defects":
    outcome.evidence.defects}; projections exactly base, candidate, fixture
    and selected, each {"content_digest","destination_alias",
    "projection_id"}, selected equal to projections[variant];
    resource_receipt checked as a "session.terminal" receipt is (above);
    receipt_mac = HMAC-SHA-256(key, "glove.receipt.refinement.v1\\0" ||
    canonical(receipt without receipt_mac)), 64 lowercase hex;
  * the outcome agrees with itself and with the receipt
    (docs/refinement.md, "The evaluator", "The stream and the outcome"):
    exactly its documented members; evidence.defects sorted, unique, from
    invalid_utf8, stream_incomplete, stream_lost, and status "invalid"
    exactly when there is one; stream null exactly when stream_lost is a
    defect; fixture_document_digest = projections.fixture.content_digest;
    metrics.failed_assertions sorted, unique, from the six assertions;
    required_literals.missing and forbidden_literals.found strictly
    increasing indices below their total, "required_literals" failed
    exactly when one is missing, "forbidden_literals" exactly when one was
    found; metrics.passed exactly when the evidence is valid and nothing
    failed; observed.termination one of the six kinds and the
    resource_receipt's termination kind, "termination" failed exactly when
    it is not "exit"; "resource_limit" failed exactly when
    observed.resource_limit; observed.exit_code the resource_receipt's;
    metrics.latency_us = resource_receipt usage.wall_time_ms x 1000;
  * a launch_binding (of either kind's terminal receipt) is a binding's
    view or one of the two stand-ins; an empty object {} is refused;
and then the head: the page's head (when the page is complete) or the last
record of the journal, and the anchor in the page, or the journal header
(or its checkpoint's origin, when compacted).

Exit 0 with the summary line "ok: WHAT: N records verified, head SEQ MAC,
..." on stdout (N counts the records given; WHAT says "page", "journal",
"journal (compacted: ...)" naming where the chain started, or "partial
page (HEAD NOT CHECKED: ...)"); 1 naming the first bad record on stderr
("verify_receipts: record N: ...") or what else was wrong; 2 for a usage
error; 3 for a page with more to follow, without --partial. With --show-outcomes, once everything
verified, one more line per refinement receipt, in chain order:
    SESSION VARIANT passed=true|false evidence=valid|invalid matched=HEX64
(outcome.metrics.passed, outcome.evidence.status, matched_context_digest).
"""
import hashlib
import hmac
import json
import os
import re
import struct
import sys

DOMAIN = b"glove.receipt.envelope.v1\x00"
REFINEMENT_DOMAIN = b"glove.receipt.refinement-envelope.v1\x00"
RECEIPT_MAC_DOMAIN = b"glove.receipt.refinement.v1\x00"
TERMINAL = "session.terminal"
REFINEMENT = "session.refinement"
ENVELOPE_KEYS = {"appended_at_ms", "kind", "receipt", "sequence", "session_id"}
REFINEMENT_KEYS = {"controller_plan_digest", "evaluation_protocol", "evaluator", "matched_context_digest", "outcome",
                   "outcome_commitment", "plan_content_digest", "projections", "receipt_mac", "resource_receipt",
                   "schema", "session_id", "stream", "variant"}
PROJECTION_NAMES = {"base", "candidate", "fixture", "selected"}
PROJECTION_KEYS = {"content_digest", "destination_alias", "projection_id"}
OUTCOME_KEYS = {"evidence", "fixture_document_digest", "metrics", "observed", "schema", "stream"}
METRICS_KEYS = {"failed_assertions", "forbidden_literals", "latency_us", "passed", "required_literals"}
OBSERVED_KEYS = {"exit_code", "resource_limit", "termination"}
ASSERTIONS = {"exit_code", "forbidden_literals", "required_literals", "resource_limit", "termination", "wall_latency"}
DEFECTS = {"invalid_utf8", "stream_incomplete", "stream_lost"}
TERMINATIONS = {"exit", "signal", "limit", "stopped", "start_failed", "lost"}
JOURNAL_MAGIC = b"GLVRCPT1"
BINDINGS = None  # --bindings DIR: where gloved keeps the whole launch bindings
# How each receipt's launch binding was checked: against a --bindings file,
# as a stand-in (its own digest), or not at all (no file, or no --bindings).
BINDING_CHECKS = {"file": 0, "stand-in": 0, "unchecked": 0}
HEADER_LEN = 64
TAG_LEN = 32


class Bad(Exception):
    pass


class Incomplete(Exception):
    """Everything given verified, but a page says more follow: its head
    was not checked (exit 3 unless --partial)."""


# ---------------------------------------------------------------- canonical JSON

# A character _string must look at: quote, backslash, a control below
# U+0020, or a lone surrogate.
_SPECIAL = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _string(s):
    if not _SPECIAL.search(s):
        # Nothing to escape or refuse: the string as it is, without the
        # loop below (a full 64 MiB journal verifies in 1.2 s, not 4.7 s).
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}.get(o, "\\u%04x" % o))
        elif 0xD800 <= o <= 0xDFFF:
            raise Bad("a string holds a lone surrogate (not UTF-8)")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canonical(v):
    """The canonical bytes of a decoded JSON value: compact, members sorted by
    the UTF-8 bytes of their keys, integers only, strings unescaped except
    quote, backslash and controls below U+0020, raw UTF-8."""
    return _encode(v).encode("utf-8")


def _encode(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        if not -(2 ** 63) <= v < 2 ** 63:
            raise Bad("an integer outside signed 64 bits")
        return str(v)
    if isinstance(v, float):
        raise Bad("a real number (canonical JSON has integers only)")
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ",".join(_encode(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=lambda k: k.encode("utf-8"))
        return "{" + ",".join(_string(k) + ":" + _encode(v[k]) for k in keys) + "}"
    raise Bad("not a JSON value")


def _pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise Bad("duplicate key %r" % k)
        d[k] = v
    return d


def _no_float(s):
    raise Bad("a real number %s" % s)


def _no_constant(s):
    raise Bad("a non-JSON constant %s" % s)


def decode(data):
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Bad("not UTF-8: %s" % e)
    try:
        return json.loads(data, object_pairs_hook=_pairs, parse_float=_no_float, parse_constant=_no_constant)
    except ValueError as e:
        raise Bad("not JSON: %s" % e)


# ---------------------------------------------------------------- checks

def unhex32(s, what):
    if not isinstance(s, str) or len(s) != 64 or any(c not in "0123456789abcdef" for c in s):
        raise Bad("%s is not 64 lowercase hex characters" % what)
    return bytes.fromhex(s)


def envelope_domain(kind):
    """The MAC domain of an envelope of this kind (with its zero byte)."""
    return REFINEMENT_DOMAIN if kind == REFINEMENT else DOMAIN


def is_hex64(s):
    return isinstance(s, str) and len(s) == 64 and all(c in "0123456789abcdef" for c in s)


def check_envelope(env, n):
    if not isinstance(env, dict) or set(env.keys()) != ENVELOPE_KEYS:
        raise Bad("the envelope does not have exactly the members %s" % sorted(ENVELOPE_KEYS))
    if env["sequence"] != n or isinstance(env["sequence"], bool):
        raise Bad("sequence %r where %d follows (continuity)" % (env["sequence"], n))
    if not isinstance(env["kind"], str) or not isinstance(env["session_id"], str):
        raise Bad("kind or session_id is not a string")
    if not isinstance(env["receipt"], dict):
        raise Bad("receipt is not an object")


def check_terminal(r, session_id, what="a session.terminal receipt"):
    """A resource (terminal) receipt of session session_id."""
    if not isinstance(r, dict):
        raise Bad("%s is not an object" % what)
    if "launch_binding" not in r or "launch_binding_digest" not in r:
        raise Bad("%s without launch_binding and its digest" % what)
    b, got = r["launch_binding"], r["launch_binding_digest"]
    if not is_hex64(got):
        raise Bad("launch_binding_digest %r is not 64 lowercase hex" % (got,))
    if not isinstance(b, dict) or b == {}:
        raise Bad("%s launch_binding %s is neither a binding's view nor a stand-in ({\"omitted_bytes\":N} or "
                  "{\"omitted\":CODE})" % ("the receipt's" if what.startswith("a ") else what + "'s",
                                      _encode(b) if isinstance(b, (dict, list)) else repr(b)))
    stand_in = len(b) == 1 and ("omitted_bytes" in b or "omitted" in b)
    if stand_in:
        if "omitted_bytes" in b and (not isinstance(b["omitted_bytes"], int) or isinstance(b["omitted_bytes"], bool)
                                     or b["omitted_bytes"] < 0):
            raise Bad("launch_binding's stand-in omitted_bytes %r is not a byte count" % (b["omitted_bytes"],))
        if "omitted" in b and (not isinstance(b["omitted"], str) or not b["omitted"]):
            raise Bad("launch_binding's stand-in omitted %r is not a code" % (b["omitted"],))
        want = hashlib.sha256(canonical(b)).hexdigest()
        BINDING_CHECKS["stand-in"] += 1
    elif BINDINGS:
        try:
            with open("%s/%s.json" % (BINDINGS, session_id), "rb") as f:
                want = hashlib.sha256(f.read()).hexdigest()
            BINDING_CHECKS["file"] += 1
        except FileNotFoundError:
            want = got
            BINDING_CHECKS["unchecked"] += 1
    else:
        want = got
        BINDING_CHECKS["unchecked"] += 1
    if got != want:
        raise Bad("launch_binding_digest %r is not SHA-256 of the binding it commits to (%s)" % (got, want))
    if r.get("session_id") != session_id:
        raise Bad("the %s's session_id differs from the envelope's" %
                  ("receipt" if what.startswith("a ") else what))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _sorted_words(v, words, what):
    """v must be a sorted list of unique strings from words."""
    if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
        raise Bad("%s %r is not a list of strings" % (what, v))
    if v != sorted(set(v), key=lambda x: x.encode("utf-8")):
        raise Bad("%s %s is not sorted and unique" % (what, _encode(v)))
    unknown = [x for x in v if x not in words]
    if unknown:
        raise Bad("%s holds %s, not one of %s" % (what, _encode(unknown), sorted(words)))


def _indices(v, total, what):
    """v must be strictly increasing integer indices in [0, total)."""
    if not isinstance(v, list) or any(not _is_int(x) or not 0 <= x < total for x in v):
        raise Bad("%s %s is not a list of indices below its total %d" % (what, _encode(v) if isinstance(v, list)
                                                                          else repr(v), total))
    if any(a >= b for a, b in zip(v, v[1:])):
        raise Bad("%s %s is not strictly increasing" % (what, _encode(v)))


def check_outcome(out, r):
    """The outcome's own rules and its agreement with the rest of receipt r
    (docs/refinement.md, "The evaluator", "The stream and the outcome";
    docs/control-protocol.md, "Refinement receipt"). The evidence and
    metrics must be what the evaluator can synthesize; the trusted facts
    (termination kind, exit code, wall latency) those of the embedded
    resource receipt; the fixture digest that of the fixture projection."""
    if set(out.keys()) != OUTCOME_KEYS:
        raise Bad("outcome does not have exactly the members %s" % sorted(OUTCOME_KEYS))
    ev = out["evidence"]
    if set(ev.keys()) != {"defects", "status"}:
        raise Bad("outcome.evidence does not have exactly the members defects, status")
    _sorted_words(ev["defects"], DEFECTS, "outcome.evidence.defects")
    if (ev["status"] == "invalid") != bool(ev["defects"]):
        raise Bad("outcome.evidence.status %r with the defects %s (invalid exactly when there is a defect)" %
                  (ev["status"], _encode(ev["defects"])))
    if "stream_lost" in ev["defects"] and "stream_incomplete" not in ev["defects"]:
        raise Bad("outcome.evidence.defects has stream_lost without stream_incomplete")
    stream = out["stream"]
    if (stream is None) != ("stream_lost" in ev["defects"]):
        raise Bad("outcome.stream is %s while the defects %s stream_lost (null exactly when the stream was lost)" %
                  ("null" if stream is None else "present", "hold" if "stream_lost" in ev["defects"] else "lack"))
    if stream is not None and (not isinstance(stream, dict) or set(stream.keys()) != {"bytes", "sha256"} or
                               not _is_int(stream["bytes"]) or stream["bytes"] < 0 or not is_hex64(stream["sha256"])):
        raise Bad("outcome.stream is not {\"bytes\":N,\"sha256\":HEX64}")
    if out["fixture_document_digest"] != r["projections"]["fixture"]["content_digest"]:
        raise Bad("outcome.fixture_document_digest %r is not projections.fixture.content_digest %r" %
                  (out["fixture_document_digest"], r["projections"]["fixture"]["content_digest"]))
    m = out["metrics"]
    if set(m.keys()) != METRICS_KEYS:
        raise Bad("outcome.metrics does not have exactly the members %s" % sorted(METRICS_KEYS))
    fa = m["failed_assertions"]
    _sorted_words(fa, ASSERTIONS, "outcome.metrics.failed_assertions")
    for name, member in (("required_literals", "missing"), ("forbidden_literals", "found")):
        x = m[name]
        if not isinstance(x, dict) or set(x.keys()) != {member, "total"} or not _is_int(x["total"]) or x["total"] < 0:
            raise Bad("outcome.metrics.%s is not {\"%s\":[INDEX...],\"total\":N}" % (name, member))
        _indices(x[member], x["total"], "outcome.metrics.%s.%s" % (name, member))
        if (name in fa) != bool(x[member]):
            raise Bad("outcome.metrics.failed_assertions %s %s while %s.%s is %s" %
                      ("holds" if name in fa else "lacks", name, name, member, _encode(x[member])))
    if m["passed"] != (ev["status"] == "valid" and fa == []):
        raise Bad("outcome.metrics.passed is %s with the evidence %s and the failed assertions %s (passed exactly "
                  "when the evidence is valid and no assertion failed)" %
                  (_encode(m["passed"]), ev["status"], _encode(fa)))
    o = out["observed"]
    if (not isinstance(o, dict) or set(o.keys()) != OBSERVED_KEYS or o["termination"] not in TERMINATIONS or
            not isinstance(o["resource_limit"], bool) or not (o["exit_code"] is None or _is_int(o["exit_code"]))):
        raise Bad("outcome.observed is not {\"exit_code\":N|null,\"resource_limit\":BOOL,\"termination\":KIND} "
                  "with KIND one of %s" % sorted(TERMINATIONS))
    if ("termination" in fa) != (o["termination"] != "exit"):
        raise Bad("outcome.metrics.failed_assertions %s termination while observed.termination is %r (failed "
                  "exactly when it is not exit)" % ("holds" if "termination" in fa else "lacks", o["termination"]))
    if ("resource_limit" in fa) != o["resource_limit"]:
        raise Bad("outcome.metrics.failed_assertions %s resource_limit while observed.resource_limit is %s" %
                  ("holds" if "resource_limit" in fa else "lacks", _encode(o["resource_limit"])))
    rr = r["resource_receipt"]
    term = rr.get("termination")
    if not isinstance(term, dict) or term.get("kind") != o["termination"]:
        raise Bad("outcome.observed.termination %r is not the resource_receipt's termination kind %r" %
                  (o["termination"], term.get("kind") if isinstance(term, dict) else None))
    if "exit_code" not in rr or rr["exit_code"] != o["exit_code"] or isinstance(rr["exit_code"], bool):
        raise Bad("outcome.observed.exit_code %r is not the resource_receipt's exit_code %r" %
                  (o["exit_code"], rr.get("exit_code")))
    usage = rr.get("usage")
    wall = usage.get("wall_time_ms") if isinstance(usage, dict) else None
    if not _is_int(wall) or not _is_int(m["latency_us"]) or m["latency_us"] != wall * 1000:
        raise Bad("outcome.metrics.latency_us %r is not the resource_receipt's usage.wall_time_ms %r x 1000" %
                  (m["latency_us"], wall))


def receipt_mac(key, r):
    """receipt_mac of a refinement receipt: HMAC-SHA-256 over its domain and
    the canonical receipt without receipt_mac, lowercase hex."""
    body = {k: v for k, v in r.items() if k != "receipt_mac"}
    return hmac.new(key, RECEIPT_MAC_DOMAIN + canonical(body), hashlib.sha256).hexdigest()


def check_refinement(r, session_id, key):
    """A refinement receipt of session session_id; returns its outcome line."""
    if set(r.keys()) != REFINEMENT_KEYS:
        raise Bad("a session.refinement receipt does not have exactly the members %s (extra %s, missing %s)" %
                  (sorted(REFINEMENT_KEYS), sorted(set(r.keys()) - REFINEMENT_KEYS),
                   sorted(REFINEMENT_KEYS - set(r.keys()))))
    if r["schema"] != "glove.refinement-receipt-v1":
        raise Bad("schema %r is not glove.refinement-receipt-v1" % (r["schema"],))
    if r["evaluation_protocol"] != "refinement-eval-v1":
        raise Bad("evaluation_protocol %r is not refinement-eval-v1" % (r["evaluation_protocol"],))
    if r["session_id"] != session_id:
        raise Bad("the receipt's session_id differs from the envelope's")
    variant = r["variant"]
    if variant not in ("base", "candidate"):
        raise Bad("variant %r is not base or candidate" % (variant,))
    for m in ("matched_context_digest", "controller_plan_digest", "plan_content_digest"):
        if not is_hex64(r[m]):
            raise Bad("%s %r is not 64 lowercase hex" % (m, r[m]))
    out = r["outcome"]
    if not isinstance(out, dict) or out.get("schema") != "glove.refinement-outcome-v1":
        raise Bad("outcome is not a glove.refinement-outcome-v1 object")
    commitment = hashlib.sha256(canonical(out)).hexdigest()
    if r["outcome_commitment"] != commitment:
        raise Bad("outcome_commitment %r is not SHA-256 of the canonical outcome (%s)" %
                  (r["outcome_commitment"], commitment))
    if "stream" not in out or r["stream"] != out["stream"]:
        raise Bad("stream %r differs from the outcome's stream %r" % (r["stream"], out.get("stream")))
    ev = out.get("evidence")
    if (not isinstance(ev, dict) or ev.get("status") not in ("valid", "invalid") or
            not isinstance(ev.get("defects"), list)):
        raise Bad("the outcome's evidence is not {\"defects\":[...],\"status\":\"valid\"|\"invalid\"}")
    want = {"complete": ev["status"] == "valid", "defects": ev["defects"]}
    if r["evaluator"] != want or not isinstance(r["evaluator"].get("complete"), bool):
        raise Bad("evaluator %s is not %s (the outcome's evidence)" % (_encode(r["evaluator"]), _encode(want)))
    metrics = out.get("metrics")
    if not isinstance(metrics, dict) or not isinstance(metrics.get("passed"), bool):
        raise Bad("the outcome's metrics.passed is not a boolean")
    p = r["projections"]
    if not isinstance(p, dict) or set(p.keys()) != PROJECTION_NAMES:
        raise Bad("projections does not have exactly the members %s" % sorted(PROJECTION_NAMES))
    for name in sorted(PROJECTION_NAMES):
        x = p[name]
        if not isinstance(x, dict) or set(x.keys()) != PROJECTION_KEYS:
            raise Bad("projections.%s does not have exactly the members %s" % (name, sorted(PROJECTION_KEYS)))
        if not is_hex64(x["content_digest"]):
            raise Bad("projections.%s.content_digest is not 64 lowercase hex" % name)
        if not isinstance(x["destination_alias"], str) or not isinstance(x["projection_id"], str):
            raise Bad("projections.%s: destination_alias or projection_id is not a string" % name)
    if p["selected"] != p[variant]:
        raise Bad("projections.selected is not projections.%s (the variant)" % variant)
    check_terminal(r["resource_receipt"], session_id, "resource_receipt")
    for m in ("controller_plan_digest", "plan_content_digest"):
        if r["resource_receipt"].get(m) != r[m]:
            raise Bad("%s differs from the resource_receipt's" % m)
    check_outcome(out, r)
    if not is_hex64(r["receipt_mac"]):
        raise Bad("receipt_mac %r is not 64 lowercase hex" % (r["receipt_mac"],))
    mac = receipt_mac(key, r)
    if not hmac.compare_digest(mac, r["receipt_mac"]):
        raise Bad("receipt_mac %s is not the receipt's MAC (expected %s)" % (r["receipt_mac"], mac))
    return "%s %s passed=%s evidence=%s matched=%s" % (session_id, variant, "true" if metrics["passed"] else "false",
                                                       ev["status"], r["matched_context_digest"])


class Chain:
    def __init__(self, key, prev_mac, first):
        self.key, self.mac, self.n, self.first = key, prev_mac, first, first
        self.terminal, self.refinement, self.other = 0, 0, 0
        self.outcomes = []  # one line per refinement receipt (--show-outcomes)

    def add(self, env_bytes, mac, env=None):
        n = self.n + 1
        try:
            if env is None:
                env = decode(env_bytes)
                if canonical(env) != env_bytes:
                    raise Bad("the stored envelope is not canonical JSON")
            check_envelope(env, n)
            # The chain first (in the domain of the envelope's kind), then
            # what the receipt of that kind must hold.
            want = hmac.new(self.key, envelope_domain(env["kind"]) + self.mac + env_bytes, hashlib.sha256).digest()
            if not hmac.compare_digest(want, mac):
                raise Bad("MAC %s does not follow the chain (expected %s)" % (mac.hex(), want.hex()))
            if env["kind"] == TERMINAL:
                check_terminal(env["receipt"], env["session_id"])
                self.terminal += 1
            elif env["kind"] == REFINEMENT:
                self.outcomes.append(check_refinement(env["receipt"], env["session_id"], self.key))
                self.refinement += 1
            else:
                self.other += 1
        except Bad as e:
            raise Bad("record %d: %s" % (n, e))
        self.mac, self.n = mac, n


CKPT_MAGIC = b"GLVCKPT1"
CKPT_HEADER_LEN = 200
CKPT_DOMAIN = b"glove.receipt.checkpoint.v1\x00"
FLAG_CONTINUES = 1


def read_checkpoint(path, key, anchor):
    """The receipt checkpoint FILE.ckpt (docs/recovery.md, "Compaction";
    include/glove/store/checkpoint.h): its MAC, HMAC-SHA-256(key,
    "glove.receipt.checkpoint.v1\\0" || the bytes before it), its magic,
    version, reserved field, journal magic, origin (the anchor) and no
    entries (receipts keep none). Returns (generation, covered_seq,
    covered_head)."""
    data = open(path, "rb").read()
    if len(data) < CKPT_HEADER_LEN + TAG_LEN or data[:8] != CKPT_MAGIC:
        raise Bad("checkpoint %s: not a checkpoint (%d bytes, magic %r)" % (path, len(data), data[:8]))
    (body_len,) = struct.unpack(">Q", data[192:200])
    if len(data) != CKPT_HEADER_LEN + body_len + TAG_LEN:
        raise Bad("checkpoint %s: %d bytes where its header says %d" %
                  (path, len(data), CKPT_HEADER_LEN + body_len + TAG_LEN))
    want = hmac.new(key, CKPT_DOMAIN + data[:-TAG_LEN], hashlib.sha256).digest()
    if not hmac.compare_digest(want, data[-TAG_LEN:]):
        raise Bad("checkpoint %s: its MAC does not verify with this key (corrupt, or made with another key)" % path)
    version, reserved = struct.unpack(">II", data[16:24])
    if data[8:16] != JOURNAL_MAGIC or version != 1 or reserved != 0:
        raise Bad("checkpoint %s: not a receipt checkpoint of version 1 (journal magic %r, version %d, reserved %d)" %
                  (path, data[8:16], version, reserved))
    (generation,) = struct.unpack(">Q", data[24:32])
    if data[32:64] != anchor:
        raise Bad("checkpoint %s: its origin %s is not the given anchor" % (path, data[32:64].hex()))
    (covered_seq,) = struct.unpack(">Q", data[96:104])
    covered_head = data[104:136]
    old_records, old_end_seq = struct.unpack(">QQ", data[136:152])
    (entries,) = struct.unpack(">Q", data[184:192])
    if entries != 0 or body_len != 0:
        raise Bad("checkpoint %s: %d entries (%d bytes); a receipt checkpoint has none" % (path, entries, body_len))
    if generation < 1 or covered_seq > old_end_seq:
        raise Bad("checkpoint %s: generation %d covering sequence %d beyond the replaced journal's end %d" %
                  (path, generation, covered_seq, old_end_seq))
    return generation, covered_seq, covered_head


def _first_sequence(data, off):
    """The sequence of the journal's first record (at off), or None when it
    has none; the record itself is checked in full by the chain."""
    if off + 4 > len(data):
        return None
    (ln,) = struct.unpack(">I", data[off:off + 4])
    try:
        seq = decode(data[off + 4:off + 4 + ln]).get("sequence")
    except (Bad, AttributeError):
        return 1  # not an envelope: the chain names it
    return seq if _is_int(seq) and seq >= 1 else 1


def verify_journal(path, key, anchor, after_mac=None, ckpt_path=None):
    """Returns (chain, what). A journal with header flags 0 starts from the
    anchor (its header param) at sequence 1. One with the flag continues
    (a compaction's tail) starts from its header param, the covered head:
    that must be --after-mac when given, and the checkpoint's covered head
    when a checkpoint is read (ckpt_path, else PATH.ckpt when it exists),
    whose covered sequence + 1 is then the first record's sequence. Without
    either, such a journal is refused: nothing would pin where it starts."""
    data = open(path, "rb").read()
    if len(data) < HEADER_LEN or data[:8] != JOURNAL_MAGIC:
        raise Bad("journal: not a receipt journal (header or magic %r)" % data[:8])
    version, max_payload, _max_records, flags = struct.unpack(">IIII", data[8:24])
    if version != 1 or flags not in (0, FLAG_CONTINUES):
        raise Bad("journal: header version %d / flags %d (version 1 and flags 0 or 1 are known)" % (version, flags))
    param = data[32:64]
    if flags == 0:
        if param != anchor:
            raise Bad("journal: the header's anchor %s is not the given anchor" % param.hex())
        if after_mac is not None:
            raise Bad("journal: --after-mac given, but the journal was never compacted (header flags 0): it starts "
                      "from the anchor at sequence 1; leave --after-mac out")
        if ckpt_path is not None:
            raise Bad("journal: --checkpoint given, but the journal was never compacted (header flags 0)")
        chain, what = Chain(key, anchor, 0), "journal"
    else:
        if ckpt_path is None and os.path.exists(path + ".ckpt"):
            ckpt_path = path + ".ckpt"
        if after_mac is not None and after_mac != param:
            raise Bad("journal: it continues from %s (header param, the head its checkpoint covers), not from "
                      "--after-mac %s: it does not continue the head you hold" % (param.hex(), after_mac.hex()))
        if ckpt_path is not None:
            generation, covered_seq, covered_head = read_checkpoint(ckpt_path, key, anchor)
            if covered_head != param:
                raise Bad("journal: it continues from %s (header param), but its checkpoint %s covers up to %s: "
                          "they are not one compaction's (a compaction gloved has not finished? start gloved "
                          "on the state once)" % (param.hex(), ckpt_path, covered_head.hex()))
            chain = Chain(key, param, covered_seq)
            what = "journal (compacted: continues checkpoint generation %d, which covers up to sequence %d)" % (
                generation, covered_seq)
        elif after_mac is not None:
            first = _first_sequence(data, HEADER_LEN)
            chain = Chain(key, param, (first - 1) if first else 0)
            what = "journal (compacted: continues from --after-mac; checkpoint not read)"
            if first is None:
                what = "journal (compacted, empty: continues from --after-mac; checkpoint not read)"
        else:
            raise Bad("journal: it was compacted (header flags 1, continues a checkpoint) and no checkpoint %s.ckpt "
                      "was found: pass --checkpoint FILE (gloved's receipts.journal.ckpt) or --after-mac (the MAC "
                      "of the acknowledged head you archived)" % path)
    off = HEADER_LEN
    while off < len(data):
        if off + 4 > len(data):
            raise Bad("record %d: an incomplete length prefix at offset %d" % (chain.n + 1, off))
        (ln,) = struct.unpack(">I", data[off:off + 4])
        if ln == 0 or ln > max_payload or off + 4 + ln + TAG_LEN > len(data):
            raise Bad("record %d: a bad or incomplete record at offset %d (length %d)" % (chain.n + 1, off, ln))
        payload = data[off + 4:off + 4 + ln]
        tag = data[off + 4 + ln:off + 4 + ln + TAG_LEN]
        chain.add(payload, tag)
        off += 4 + ln + TAG_LEN
    return chain, what


def verify_page(text, key, anchor, after_mac, partial=False):
    page = decode(text)
    if not isinstance(page, dict) or not isinstance(page.get("envelopes"), list):
        raise Bad("page: not a receipts_page result")
    if unhex32(page.get("anchor"), "page anchor") != anchor:
        raise Bad("page: its anchor %s is not the given anchor" % page.get("anchor"))
    envs = page["envelopes"]
    first = envs[0].get("sequence", 1) - 1 if envs and isinstance(envs[0], dict) else 0
    if not _is_int(first) or first < 0:
        first = 0
    if not envs:
        # An empty page (a poll that found nothing new) starts where the
        # caller's last verified record ends: the head it reports.
        hs = page.get("head", {}).get("sequence") if isinstance(page.get("head"), dict) else None
        if _is_int(hs) and hs > 0:
            first = hs
    if first > 0 and after_mac is None:
        raise Bad("page: it starts after sequence %d; pass --after-mac" % first)
    chain = Chain(key, after_mac if first > 0 else anchor, first)
    for item in envs:
        n = chain.n + 1
        if not isinstance(item, dict) or set(item.keys()) != {"envelope", "mac", "sequence"}:
            raise Bad("record %d: a page entry without exactly envelope, mac, sequence" % n)
        if item["sequence"] != n:
            raise Bad("record %d: the entry's sequence is %r (continuity)" % (n, item["sequence"]))
        try:
            env_bytes = canonical(item["envelope"])
            mac = unhex32(item["mac"], "mac")
        except Bad as e:
            raise Bad("record %d: %s" % (n, e))
        chain.add(env_bytes, mac, item["envelope"])
    head = page.get("head")
    if not isinstance(head, dict):
        raise Bad("page: no head")
    if page.get("more") is True:
        if not _is_int(head.get("sequence")) or head["sequence"] <= chain.n:
            raise Bad("page: more is true but the head %r is not beyond record %d" % (head.get("sequence"), chain.n))
        if not partial:
            raise Incomplete("page: incomplete: %d records verified, but more follow (the page says the head is "
                             "%d): the head was NOT checked, so records may be missing at the end; page on "
                             "(glove ctl --json receipts --after %d) and verify each page, or pass --partial to "
                             "accept a partial page" % (chain.n, head["sequence"], chain.n))
        return chain, "partial page (HEAD NOT CHECKED: more follow, the page says up to sequence %d)" % (
            head["sequence"])
    if page.get("more") is not False:
        raise Bad("page: more is %r, not true or false" % (page.get("more"),))
    if head.get("sequence") != chain.n or unhex32(head.get("mac"), "head mac") != chain.mac:
        raise Bad("head: (%r, %s) is not the last record (%d, %s)" %
                  (head.get("sequence"), head.get("mac"), chain.n, chain.mac.hex()))
    return chain, "page"


def main(argv):
    global BINDINGS
    for k in BINDING_CHECKS:
        BINDING_CHECKS[k] = 0
    opts = {"--key": None, "--anchor": None, "--journal": None, "--page": None, "--after-mac": None,
            "--bindings": None, "--checkpoint": None}
    flags = {"--show-outcomes": False, "--partial": False}
    i = 1
    while i < len(argv):
        if argv[i] in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if argv[i] in flags:
            flags[argv[i]] = True
            i += 1
            continue
        if argv[i] not in opts or i + 1 >= len(argv):
            print("verify_receipts: usage: unknown option or missing value: %s (see --help)" % argv[i], file=sys.stderr)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    if not opts["--key"] or not opts["--anchor"] or (opts["--journal"] and opts["--page"]):
        print("verify_receipts: usage: --key and --anchor are required; at most one of --journal, --page",
              file=sys.stderr)
        return 2
    if opts["--checkpoint"] and not opts["--journal"]:
        print("verify_receipts: usage: --checkpoint goes with --journal (a page needs --after-mac)", file=sys.stderr)
        return 2
    if flags["--partial"] and opts["--journal"]:
        print("verify_receipts: usage: --partial goes with a page (a journal is always whole)", file=sys.stderr)
        return 2
    BINDINGS = opts["--bindings"]
    try:
        key = open(opts["--key"], "rb").read()
        if len(key) != 32:
            raise Bad("key: %s holds %d bytes, not 32" % (opts["--key"], len(key)))
        anchor = unhex32(opts["--anchor"], "--anchor")
        after = unhex32(opts["--after-mac"], "--after-mac") if opts["--after-mac"] else None
        if opts["--journal"]:
            chain, what = verify_journal(opts["--journal"], key, anchor, after, opts["--checkpoint"])
        else:
            text = sys.stdin.buffer.read() if opts["--page"] in (None, "-") else open(opts["--page"], "rb").read()
            chain, what = verify_page(text.rstrip(b"\n"), key, anchor, after, flags["--partial"])
    except (Bad, OSError) as e:
        print("verify_receipts: %s" % e, file=sys.stderr)
        return 1
    except Incomplete as e:
        print("verify_receipts: %s" % e, file=sys.stderr)
        return 3
    print("ok: %s: %d records verified, %s %d %s, %d session.terminal receipts, %d session.refinement receipts, "
          "%d of other kinds; launch bindings: %d matched their --bindings file, %d stand-ins, %d NOT checked "
          "(no --bindings, or no file)" %
          (what, chain.n - chain.first, "last record" if what.startswith("partial") else "head", chain.n,
           chain.mac.hex(), chain.terminal, chain.refinement, chain.other, BINDING_CHECKS["file"],
           BINDING_CHECKS["stand-in"], BINDING_CHECKS["unchecked"]))
    if flags["--show-outcomes"]:
        for line in chain.outcomes:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
