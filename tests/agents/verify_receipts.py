#!/usr/bin/python3
"""verify_receipts.py: an independent verifier of gloved's receipt chain.

Written from the documented format only (docs/control-protocol.md,
"Journals" and "Receipts"; docs/digests.md, "Canonical form";
include/glove/store/receipts.h), with the Python standard library.

    verify_receipts.py --key KEYFILE --anchor HEX64 [--journal FILE]
                       [--page FILE] [--after-mac HEX64] [--bindings DIR]

KEYFILE holds the 32-byte receipt key (receipt.key). HEX64 is the chain
anchor. The input is either the raw journal (--journal receipts.journal) or
a receipts_page result as `glove ctl --json receipts` prints it (--page FILE,
or standard input when neither option is given). A page that starts after
sequence N > 0 needs --after-mac, the MAC of record N.

Checked, in order, for every record n = 1, 2, ...:
  * the envelope is canonical JSON with exactly the members appended_at_ms,
    kind, receipt, sequence, session_id (for a journal: the stored bytes are
    their own canonical encoding);
  * its sequence is n (continuity);
  * mac_n = HMAC-SHA-256(key, "glove.receipt.envelope.v1\\0" || mac_{n-1} ||
    envelope_n), mac_0 = the anchor;
  * a "session.terminal" receipt's session_id is the envelope's, and its
    launch_binding_digest is 64 lowercase hex: the SHA-256 of the canonical
    launch_binding when that is a stand-in ({"omitted_bytes":N} or
    {"omitted":CODE}); otherwise of the whole binding gloved keeps locally
    (STATE/bindings/SESSION.json), checked against that file's bytes when
    --bindings STATE/bindings is given and the file is there;
and then the head: the page's head (when the page is complete) or the last
record of the journal, and the anchor in the page or the journal header.

Exit 0 with one summary line "ok: ..." on stdout; 1 naming the first bad
record on stderr ("verify_receipts: record N: ..."); 2 for a usage error.
"""
import hashlib
import hmac
import json
import re
import struct
import sys

DOMAIN = b"glove.receipt.envelope.v1\x00"
ENVELOPE_KEYS = {"appended_at_ms", "kind", "receipt", "sequence", "session_id"}
JOURNAL_MAGIC = b"GLVRCPT1"
BINDINGS = None  # --bindings DIR: where gloved keeps the whole launch bindings
HEADER_LEN = 64
TAG_LEN = 32


class Bad(Exception):
    pass


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


def check_envelope(env, n):
    if not isinstance(env, dict) or set(env.keys()) != ENVELOPE_KEYS:
        raise Bad("the envelope does not have exactly the members %s" % sorted(ENVELOPE_KEYS))
    if env["sequence"] != n or isinstance(env["sequence"], bool):
        raise Bad("sequence %r where %d follows (continuity)" % (env["sequence"], n))
    if not isinstance(env["kind"], str) or not isinstance(env["session_id"], str):
        raise Bad("kind or session_id is not a string")
    if not isinstance(env["receipt"], dict):
        raise Bad("receipt is not an object")
    if env["kind"] == "session.terminal":
        r = env["receipt"]
        if "launch_binding" not in r or "launch_binding_digest" not in r:
            raise Bad("a session.terminal receipt without launch_binding and its digest")
        b, got = r["launch_binding"], r["launch_binding_digest"]
        if not isinstance(got, str) or len(got) != 64 or any(c not in "0123456789abcdef" for c in got):
            raise Bad("launch_binding_digest %r is not 64 lowercase hex" % (got,))
        stand_in = isinstance(b, dict) and len(b) == 1 and ("omitted_bytes" in b or "omitted" in b)
        if stand_in or b == {}:
            want = hashlib.sha256(canonical(b)).hexdigest()
        elif BINDINGS:
            try:
                with open("%s/%s.json" % (BINDINGS, env["session_id"]), "rb") as f:
                    want = hashlib.sha256(f.read()).hexdigest()
            except FileNotFoundError:
                want = got
        else:
            want = got
        if got != want:
            raise Bad("launch_binding_digest %r is not SHA-256 of the binding it commits to (%s)" % (got, want))
        if r.get("session_id") != env["session_id"]:
            raise Bad("the receipt's session_id differs from the envelope's")
        return 1
    return 0


class Chain:
    def __init__(self, key, prev_mac, first):
        self.key, self.mac, self.n, self.terminal = key, prev_mac, first, 0

    def add(self, env_bytes, mac, env=None):
        n = self.n + 1
        try:
            if env is None:
                env = decode(env_bytes)
                if canonical(env) != env_bytes:
                    raise Bad("the stored envelope is not canonical JSON")
            self.terminal += check_envelope(env, n)
            want = hmac.new(self.key, DOMAIN + self.mac + env_bytes, hashlib.sha256).digest()
            if not hmac.compare_digest(want, mac):
                raise Bad("MAC %s does not follow the chain (expected %s)" % (mac.hex(), want.hex()))
        except Bad as e:
            raise Bad("record %d: %s" % (n, e))
        self.mac, self.n = mac, n


def verify_journal(path, key, anchor):
    data = open(path, "rb").read()
    if len(data) < HEADER_LEN or data[:8] != JOURNAL_MAGIC:
        raise Bad("journal: not a receipt journal (header or magic %r)" % data[:8])
    version, max_payload, _max_records, zero = struct.unpack(">IIII", data[8:24])
    if version != 1 or zero != 0:
        raise Bad("journal: header version %d / zero field %d" % (version, zero))
    if data[32:64] != anchor:
        raise Bad("journal: the header's anchor %s is not the given anchor" % data[32:64].hex())
    chain = Chain(key, anchor, 0)
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
    return chain, "journal"


def verify_page(text, key, anchor, after_mac):
    page = decode(text)
    if not isinstance(page, dict) or not isinstance(page.get("envelopes"), list):
        raise Bad("page: not a receipts_page result")
    if unhex32(page.get("anchor"), "page anchor") != anchor:
        raise Bad("page: its anchor %s is not the given anchor" % page.get("anchor"))
    envs = page["envelopes"]
    first = envs[0].get("sequence", 1) - 1 if envs else 0
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
        if not isinstance(head.get("sequence"), int) or head["sequence"] <= chain.n:
            raise Bad("page: more is true but the head %r is not beyond record %d" % (head.get("sequence"), chain.n))
        return chain, "page (more follow: head %d not reached)" % head["sequence"]
    if head.get("sequence") != chain.n or unhex32(head.get("mac"), "head mac") != chain.mac:
        raise Bad("head: (%r, %s) is not the last record (%d, %s)" %
                  (head.get("sequence"), head.get("mac"), chain.n, chain.mac.hex()))
    return chain, "page"


def main(argv):
    global BINDINGS
    opts = {"--key": None, "--anchor": None, "--journal": None, "--page": None, "--after-mac": None,
            "--bindings": None}
    i = 1
    while i < len(argv):
        if argv[i] in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if argv[i] not in opts or i + 1 >= len(argv):
            print("verify_receipts: usage: unknown option or missing value: %s (see --help)" % argv[i], file=sys.stderr)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    if not opts["--key"] or not opts["--anchor"] or (opts["--journal"] and opts["--page"]):
        print("verify_receipts: usage: --key and --anchor are required; at most one of --journal, --page",
              file=sys.stderr)
        return 2
    BINDINGS = opts["--bindings"]
    try:
        key = open(opts["--key"], "rb").read()
        if len(key) != 32:
            raise Bad("key: %s holds %d bytes, not 32" % (opts["--key"], len(key)))
        anchor = unhex32(opts["--anchor"], "--anchor")
        after = unhex32(opts["--after-mac"], "--after-mac") if opts["--after-mac"] else None
        if opts["--journal"]:
            chain, what = verify_journal(opts["--journal"], key, anchor)
        else:
            text = sys.stdin.buffer.read() if opts["--page"] in (None, "-") else open(opts["--page"], "rb").read()
            chain, what = verify_page(text.rstrip(b"\n"), key, anchor, after)
    except (Bad, OSError) as e:
        print("verify_receipts: %s" % e, file=sys.stderr)
        return 1
    print("ok: %s: %d records verified, head %d %s, %d session.terminal receipts with a matching launch binding" %
          (what, chain.n, chain.n, chain.mac.hex(), chain.terminal))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
