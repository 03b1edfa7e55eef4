#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of fuzz/control_frame.c and fuzz/journal_replay.c:

    python3 fuzz/gen_control_seeds.py

Journals are built with the independent writer of the documented format,
tests/integration/lib/journal_format.py. The files are committed; rerun
after changing the formats."""
import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration", "lib"))
import journal_format as jf  # noqa: E402

PLAN = (b'{"adapter_command_digest":"' + b"e" * 64 + b'","egress_policy_id":"no-network",'
        b'"expires_at_ms":1767225660000,"runtime_id":"codex","schema_version":1}')
C = "1" * 64


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def frame(obj):
    b = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(b)) + b


def transition(seq, sid, frm, to, reason=""):
    return jf.canonical({"at_ms": 2, "from": frm, "kind": "transition", "reason": reason, "seq": seq,
                         "session_id": sid, "to": to})


def main():
    # control_frame: byte streams as clients send them.
    write("control_frame", "authenticate", frame({"id": 0, "method": "authenticate", "params": {"secret": "a" * 64}}))
    write("control_frame", "pipeline", b"".join(frame(x) for x in [
        {"id": 1, "method": "capabilities"},
        {"id": "two", "method": "validate_plan", "params": {"plan": PLAN.decode()}},
        {"id": 3, "method": "create_session", "params": {"session_id": "s-1", "idempotency_key": "k-1",
                                                         "controller_plan_digest": C, "plan": PLAN.decode()}},
        {"id": 4, "method": "session_status", "params": {"session_id": "s-1"}},
        {"id": 5, "method": "receipts_page", "params": {"after_sequence": 0, "limit": 64}},
        {"id": 6, "method": "receipts_ack", "params": {"sequence": 0, "head_mac": "0" * 64}},
    ]))
    write("control_frame", "malformed", frame(b'{"id":1,"id":2,"method":"x"}') + frame(b"[1]") + frame(b'{"id":"\xff"}'))
    write("control_frame", "oversized", b"\x00\x10\x00\x01{}")
    write("control_frame", "empty", b"\x00\x00\x00\x00")
    write("control_frame", "partial", frame({"id": 1, "method": "capabilities"})[:-3])

    # journal_replay, raw mode (first byte even).
    c1 = jf.create_payload(1, "s-1", "k-1", C, PLAN)
    c2 = jf.create_payload(2, "s-2", "k-2", C, PLAN)
    t3 = transition(3, "s-1", "created", "preparing")
    t4 = transition(4, "s-2", "created", "failed", "runtime.lost")
    good, seal = jf.store_bytes([c1, c2, t3, t4])
    write("journal_replay", "raw-good", b"\x00" + good)
    write("journal_replay", "raw-torn", b"\x00" + good[:-5])
    write("journal_replay", "raw-header", b"\x00" + good[:64])
    write("journal_replay", "raw-grown", b"\x00" + good + b"\x00\x00\x00\x10garbage")
    # Framed mode (first byte odd): payloads, the chain is added by the target.
    write("journal_replay", "framed-lifecycle", b"\x01" + b"\n".join([c1, c2, t3, t4] + [
        transition(5, "s-1", "preparing", "starting"),
        transition(6, "s-1", "starting", "running"),
        transition(7, "s-1", "running", "stopping"),
        transition(8, "s-1", "stopping", "exited", "exit.0"),
    ]))
    write("journal_replay", "framed-bad", b"\x01" + b"\n".join([
        c1, c1, transition(2, "s-9", "created", "running"), b'{"kind":"create","seq":1}']))
    # Mode 3: a seal (1024 bytes), then payloads.
    write("journal_replay", "framed-seal", b"\x03" + seal + b"\n".join([c1, c2, t3, t4]))


if __name__ == "__main__":
    main()
