#!/usr/bin/python3
"""journal_format.py: an independent writer of gloved's journal formats, from
docs/control-protocol.md ("Journals") alone, so that tests can check that the
documented bytes are what gloved reads.

    journal_format.py store PATH SESSION_ID:KEY:CONTROLLER_HEX:PLAN_FILE...
        Writes a session store PATH and its seal PATH.seal (mode 0600) holding
        one create record per argument.

As a module: header(), record(), seal(), store_bytes(...), create_payload(...),
transition_payload(...).
"""
import hashlib
import json
import os
import struct
import sys

HEADER_LEN = 64
SEAL_LEN = 1024
SEAL_STRIDE = 512

STORE = {
    "magic": b"GLVSESS1",
    "version": 1,
    "max_payload": 96 * 1024,
    "max_records": 10000,
    "max_bytes": 64 * 1024 * 1024,
}


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def header(fmt, param):
    assert len(param) == 32
    return (fmt["magic"] + struct.pack(">IIII", fmt["version"], fmt["max_payload"], fmt["max_records"], 0)
            + struct.pack(">Q", fmt["max_bytes"]) + param)


def store_genesis(hdr):
    return hashlib.sha256(b"glove.session-store.genesis.v1\0" + hdr).digest()


def store_tag(prev, seq, payload):
    return hashlib.sha256(b"glove.session-store.record.v1\0" + prev + struct.pack(">QI", seq, len(payload))
                          + payload).digest()


def record(payload, tag):
    return struct.pack(">I", len(payload)) + payload + tag


def seal_slot(hdr, count, size, head):
    body = b"GLVSEAL1" + struct.pack(">QQ", count, size) + head
    return body + hashlib.sha256(b"glove.journal.seal.v1\0" + hdr + body).digest()[:8]


def seal(hdr, count, size, head, prev=None):
    """The seal gloved leaves after `count` records: the slot for count and,
    when count >= 1, the slot for count - 1 (prev: (size, head) after it)."""
    s = bytearray(SEAL_LEN)
    off = (count % 2) * SEAL_STRIDE
    s[off:off + 64] = seal_slot(hdr, count, size, head)
    if count >= 1:
        psize, phead = prev
        off = ((count - 1) % 2) * SEAL_STRIDE
        s[off:off + 64] = seal_slot(hdr, count - 1, psize, phead)
    return bytes(s)


def store_bytes(payloads, param=b"\x00" * 32):
    """(journal bytes, seal bytes) for a store holding these payloads."""
    hdr = header(STORE, param)
    tag = store_genesis(hdr)
    out = bytearray(hdr)
    prev = None
    for seq, p in enumerate(payloads, 1):
        prev = (len(out), tag)
        tag = store_tag(tag, seq, p)
        out += record(p, tag)
    return bytes(out), seal(hdr, len(payloads), len(out), tag, prev)


def create_payload(seq, session_id, key, controller, plan_bytes, created_at_ms=1):
    return canonical({
        "controller_plan_digest": controller,
        "created_at_ms": created_at_ms,
        "idempotency_key": key,
        "kind": "create",
        "plan": json.loads(plan_bytes),
        "plan_content_digest": hashlib.sha256(plan_bytes).hexdigest(),
        "seq": seq,
        "session_id": session_id,
    })


def transition_payload(seq, session_id, frm, to, at_ms, reason="", runtime=None):
    """A transition record; runtime (a dict, only with to == "running") is
    the session's runtime identity, stored as the record's "runtime"
    member."""
    rec = {
        "at_ms": at_ms,
        "from": frm,
        "kind": "transition",
        "reason": reason,
        "seq": seq,
        "session_id": session_id,
        "to": to,
    }
    if runtime is not None:
        rec["runtime"] = runtime
    return canonical(rec)


def write_private(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "store":
        raise SystemExit(__doc__)
    path = sys.argv[2]
    payloads = []
    for seq, spec in enumerate(sys.argv[3:], 1):
        sid, key, controller, plan_file = spec.split(":", 3)
        plan = open(plan_file, "rb").read()
        payloads.append(create_payload(seq, sid, key, controller, plan))
    journal, sealed = store_bytes(payloads, os.urandom(32))
    write_private(path + ".seal", sealed)
    write_private(path, journal)


if __name__ == "__main__":
    main()
