#!/usr/bin/python3
r"""An MCP client that misbehaves on purpose: the agent side of `glove run`,
sending what real clients never send, and checking Glove's answers.

  adversarial.py [--out FILE] [--protocol V --expect-protocol W] CASE...

Initializes first (initialize, notifications/initialized), then runs each
CASE in order. After each case it sends a ping and expects the ping's answer
to be the next message: so a case that must get no answer is checked too.
One JSON line per case (to FILE with --out, else stderr); exit 0 when every
case behaved as expected, 1 otherwise. --protocol V asks initialize for
protocol version V (default 2025-06-18), --expect-protocol W checks Glove's
answer.

Cases (the upstream is expected to be tests/agents/mcp-upstream.py named py):
  malformed       a line that is not JSON          -> -32700, id null
  utf8            a line with invalid UTF-8        -> -32700, id null
  batch           a JSON array of two requests     -> -32600, id null, neither answered
  dupkey          an object with "id" twice        -> -32700, id null
  invalid         {"jsonrpc":"2.0","id":7}         -> -32600 with id 7
  dup-inflight    tools/call py.sleep, then a tools/call py.echo and a ping
                  with the same id while it is in flight: both refused
                  (-32600 with id null, data reason invalid_params, rule
                  "request id in flight", id the duplicate id), the first
                  still answers "slept 400": the one answer with its id
  unknown-id      a response with an id Glove never sent -> no answer
  unknown-method  "foo/bar"                       -> -32601
  resources       resources/list                  -> {"resources": []} (no upstream offers
                                                     any, no rule allows any)
  prompts         prompts/list                    -> {"prompts": []} (likewise)
  notification    an unknown notification         -> no answer
  exact N         a ping whose line is exactly N bytes -> answered
  id-types        tools/call py.sleep with id 1 and with id "1" at once: two
                  different ids, both answered
  cancel-unknown  notifications/cancelled for ids not in flight -> no answer
  bad-params      tools/call without params.name, with a non-string name, and
                  with arguments ["x"], "x" and null (ids p1 .. p5)
                  -> -32602, reason invalid_params
  nul-strings     "\u0000" where Glove reads a string as text:
                  "jsonrpc":"2.0\u0000x" -> -32600 with the id;
                  tools/list cursor "0\u0000x" -> -32602 invalid_params;
                  initialize asking "2024-11-05\u0000x" -> Glove's newest;
                  tools/call "py.echo\u0000x" -> -32602 invalid_params;
                  notifications/cancelled for "n\u0000x" while "n" (py.sleep
                  300) is in flight -> "n" still answers "slept 300"
  inflight-bound N  N tools/call py.hang at once: all but the first 1024 are
                  refused (-32600, "in-flight bound"), the first 1024 are not
  cancel-all N    N tools/call ev.trigger-long-running-operation (60 s) at
                  once (ids c0 .. cN-1, the upstream is server-everything named
                  ev), then notifications/cancelled for each, then tools/call
                  ev.echo: answered at once (a cancelled call holds no slot);
                  no cancelled call is answered
  cancel-late     tools/call py.late 300 ms (it answers even when cancelled),
                  cancelled at once: no answer to it, also after 600 ms
  oversized N     one line of N bytes; Glove must close the channel (this
                  case never returns: the agent is stopped)
"""
import json
import os
import select
import sys
import time

args = sys.argv[1:]
out = sys.stderr
protocol, expect_protocol = "2025-06-18", None
while args and args[0].startswith("--"):
    opt, val = args[0], args[1]
    args = args[2:]
    if opt == "--out":
        out = open(val, "a")
    elif opt == "--protocol":
        protocol = val
    elif opt == "--expect-protocol":
        expect_protocol = val
    else:
        sys.exit("adversarial: unknown option %s" % opt)

buf = b""
failures = 0
sync_n = 0


def emit(rec):
    out.write(json.dumps(rec) + "\n")
    out.flush()


def write(data):
    os.write(1, data)


def send(obj):
    write((json.dumps(obj) + "\n").encode())


def recv(timeout=5.0):
    """The next message from Glove, or None on timeout or end of input."""
    global buf
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([0], [], [], left)[0]:
            return None
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return json.loads(line)


def sync():
    """Pings; returns the messages that arrived before the ping's answer."""
    global sync_n
    sync_n += 1
    pid = "sync-%d" % sync_n
    send({"jsonrpc": "2.0", "id": pid, "method": "ping"})
    before = []
    while True:
        m = recv()
        if m is None:
            return before + ["<no answer to ping %s>" % pid]
        if m.get("id") == pid and m.get("result") == {}:
            return before
        before.append(m)


def is_error(m, code, rid):
    return isinstance(m, dict) and m.get("id", "absent") == rid and isinstance(m.get("error"), dict) \
        and m["error"].get("code") == code


def case(name, check):
    global failures
    try:
        why, got = check()
    except Exception as e:  # a failed case must not hide the others
        why, got = "exception: %r" % e, []
    rec = {"case": name, "pass": why is None, "got": got}
    if why:
        rec["why"] = why
        failures += 1
    emit(rec)


def expect_one_error(code, rid):
    got = sync()
    if len(got) != 1 or not is_error(got[0], code, rid):
        return "expected exactly one error %d with id %r" % (code, rid), got
    return None, got


def c_malformed():
    write(b'{"jsonrpc":"2.0","id":1,"method":"ping"\n')
    return expect_one_error(-32700, None)


def c_utf8():
    write(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\xff\xfe"}}\n')
    return expect_one_error(-32700, None)


def c_batch():
    write(b'[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]\n')
    return expect_one_error(-32600, None)


def c_dupkey():
    write(b'{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}\n')
    return expect_one_error(-32700, None)


def c_invalid():
    write(b'{"jsonrpc":"2.0","id":7}\n')
    return expect_one_error(-32600, 7)


def c_dup_inflight():
    send({"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": {"name": "py.sleep", "arguments": {"ms": 400}}})
    send({"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": {"name": "py.echo", "arguments": {"text": "second"}}})
    send({"jsonrpc": "2.0", "id": "dup", "method": "ping"})
    got = [recv(), recv(), recv()]
    refusals, answer = got[:2], got[2]
    for m in refusals:
        # id null: the one answer carrying "dup" must be the first call's.
        if not is_error(m, -32600, None):
            return "a request reusing the id dup in flight was not refused first with -32600 and id null", got
        data = m["error"].get("data") or {}
        if data.get("reason") != "invalid_params" or data.get("rule") != "request id in flight" or data.get("id") != "dup":
            return "the refusal has data %r" % data, got
    if not (isinstance(answer, dict) and answer.get("id") == "dup" and "result" in answer):
        return "the first call with id dup did not answer", got
    text = "".join(c.get("text", "") for c in answer["result"].get("content", []))
    if text != "slept 400":
        return "the answer to id dup is %r, not the first call's" % text, got
    rest = sync()
    return (None if not rest else "unexpected messages after the answer"), got + rest


def c_unknown_id():
    send({"jsonrpc": "2.0", "id": 999, "result": {}})
    got = sync()
    return (None if not got else "a response with an unknown id was answered"), got


def c_method(method):
    def check():
        send({"jsonrpc": "2.0", "id": method, "method": method, "params": {}})
        return expect_one_error(-32601, method)
    return check


def c_empty_list(method, key):
    def check():
        send({"jsonrpc": "2.0", "id": method, "method": method, "params": {}})
        got = sync()
        if len(got) != 1 or got[0].get("id") != method or got[0].get("result") != {key: []}:
            return "expected exactly one result {%r: []} with id %r" % (key, method), got
        return None, got
    return check


def c_notification():
    send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    got = sync()
    return (None if not got else "a notification was answered"), got


def c_exact(n):
    def check():
        head = b'{"jsonrpc":"2.0","id":"exact","method":"ping","params":{"_meta":{"pad":"'
        tail = b'"}}}'
        pad = n - len(head) - len(tail)
        if pad < 0:
            return "N is too small for a ping", []
        write(head + b"x" * pad + tail + b"\n")
        m = recv()
        if not (isinstance(m, dict) and m.get("id") == "exact" and m.get("result") == {}):
            return "a line of exactly %d bytes was not answered" % n, [m]
        return None, [m]
    return check


def c_id_types():
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "py.sleep", "arguments": {"ms": 300}}})
    send({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "py.sleep", "arguments": {"ms": 100}}})
    got = [recv(), recv()]
    ok = [m for m in got if isinstance(m, dict) and "result" in m]
    if [m.get("id") for m in ok] != ["1", 1]:
        return 'expected the answers to "1" then 1 (ids of different types are different ids)', got
    texts = ["".join(c.get("text", "") for c in m["result"]["content"]) for m in ok]
    if texts != ["slept 100", "slept 300"]:
        return "the answers were mixed up", got
    rest = sync()
    return (None if not rest else "unexpected messages"), got + rest


def c_bad_params():
    got = []
    for rid, params in (("p1", {}), ("p2", {"name": 7}), ("p3", {"name": "py.echo", "arguments": ["x"]}),
                        ("p4", {"name": "py.echo", "arguments": "x"}), ("p5", {"name": "py.echo", "arguments": None})):
        send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        m = recv()
        got.append(m)
        if not is_error(m, -32602, rid) or (m["error"].get("data") or {}).get("reason") != "invalid_params":
            return "tools/call %s: expected -32602 with reason invalid_params" % json.dumps(params), got
    rest = sync()
    return (None if not rest else "unexpected messages"), got + rest


def c_many_values():
    """A line of 150000 empty objects (about 450 KB) is refused before any is
    built (-32700, id null); one of 40000 (each "{}," counts twice: 80000 of
    the bound of 100000) is decoded and answered by policy with its id; Glove
    keeps serving."""
    items = ",".join(["{}"] * 150000)
    write(('{"jsonrpc":"2.0","id":"v1","method":"tools/call","params":{"name":"py.echo","arguments":{"a":[%s]}}}\n'
           % items).encode())
    got = sync()
    if len(got) != 1 or not is_error(got[0], -32700, None) or "JSON values" not in got[0]["error"].get("message", ""):
        return "150000 values: expected one -32700 naming the JSON value bound", got
    items = ",".join(["{}"] * 40000)
    write(('{"jsonrpc":"2.0","id":"v2","method":"tools/call","params":{"name":"py.nope","arguments":{"a":[%s]}}}\n'
           % items).encode())
    more = sync()
    if len(more) != 1 or more[0].get("id") != "v2" or not isinstance(more[0].get("error"), dict):
        return "40000 objects: expected one error answer with id v2", got + more
    return None, got + more


def c_nul_strings():
    got = []
    write(b'{"jsonrpc":"2.0\\u0000x","id":"n1","method":"ping"}\n')
    m = recv()
    got.append(m)
    if not is_error(m, -32600, "n1"):
        return '"jsonrpc":"2.0\\u0000x" was not refused with -32600', got
    send({"jsonrpc": "2.0", "id": "n2", "method": "tools/list", "params": {"cursor": "0\u0000x"}})
    m = recv()
    got.append(m)
    if not is_error(m, -32602, "n2") or (m["error"].get("data") or {}).get("reason") != "invalid_params":
        return 'tools/list with cursor "0\\u0000x" was not refused with -32602 invalid_params', got
    send({"jsonrpc": "2.0", "id": "n3", "method": "initialize",
          "params": {"protocolVersion": "2024-11-05\u0000x", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}})
    m = recv()
    got.append(m)
    if not (isinstance(m, dict) and m.get("id") == "n3" and (m.get("result") or {}).get("protocolVersion") == "2025-11-25"):
        return 'initialize asking "2024-11-05\\u0000x" did not get Glove\'s newest version', got
    send({"jsonrpc": "2.0", "id": "n4", "method": "tools/call", "params": {"name": "py.echo\u0000x", "arguments": {"text": "x"}}})
    m = recv()
    got.append(m)
    if not is_error(m, -32602, "n4") or (m["error"].get("data") or {}).get("reason") != "invalid_params":
        return 'tools/call "py.echo\\u0000x" was not refused with -32602 invalid_params', got
    send({"jsonrpc": "2.0", "id": "n", "method": "tools/call", "params": {"name": "py.sleep", "arguments": {"ms": 300}}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "n\u0000x"}})
    m = recv()
    got.append(m)
    if not (isinstance(m, dict) and m.get("id") == "n" and "result" in m
            and "".join(c.get("text", "") for c in m["result"].get("content", [])) == "slept 300"):
        return 'cancelling "n\\u0000x" cancelled the call "n"', got
    rest = sync()
    return (None if not rest else "unexpected messages"), got + rest


def c_cancel_unknown():
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 424242, "reason": "x"}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    got = sync()
    return (None if not got else "a cancellation was answered"), got


def c_inflight_bound(n):
    def check():
        bound = 1024
        data = b"".join((json.dumps({"jsonrpc": "2.0", "id": "h%d" % i, "method": "tools/call",
                                     "params": {"name": "py.hang", "arguments": {}}}) + "\n").encode()
                        for i in range(n))
        write(data)
        refused = []
        while len(refused) < n - bound:
            m = recv()
            if m is None:
                break
            refused.append(m)
        bad = [m for m in refused if not (isinstance(m, dict) and isinstance(m.get("error"), dict)
                                          and m["error"].get("code") == -32600
                                          and (m["error"].get("data") or {}).get("rule") == "in-flight bound")]
        ids = sorted(int(m["id"][1:]) for m in refused if not bad and isinstance(m.get("id"), str))
        rest = sync()
        summary = {"refused": len(refused), "first_refused": ids[:1], "other": rest[:3]}
        if bad:
            return "unexpected answers to the flood", [summary] + bad[:3]
        if len(refused) != n - bound or ids != list(range(bound, n)):
            return "expected exactly the calls after the first %d refused" % bound, [summary]
        if rest:
            return "unexpected messages after the refusals", [summary]
        return None, [summary]
    return check


def c_cancel_all(n):
    def check():
        long_op = {"name": "ev.trigger-long-running-operation", "arguments": {"duration": 60, "steps": 1}}
        write(b"".join((json.dumps({"jsonrpc": "2.0", "id": "c%d" % i, "method": "tools/call", "params": long_op})
                        + "\n").encode() for i in range(n)))
        write(b"".join((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": "c%d" % i, "reason": "adversarial"}}) + "\n").encode()
                       for i in range(n)))
        send({"jsonrpc": "2.0", "id": "after", "method": "tools/call",
              "params": {"name": "ev.echo", "arguments": {"message": "after the cancels"}}})
        m = recv(20)
        got = [m]
        text = "".join(c.get("text", "") for c in ((m or {}).get("result") or {}).get("content", []))
        if not (isinstance(m, dict) and m.get("id") == "after" and text == "Echo: after the cancels"):
            return "the call after %d cancellations was not answered by the upstream" % n, got
        rest = sync()
        return (None if not rest else "a cancelled call was answered"), got + rest[:3]
    return check


def c_cancel_late():
    send({"jsonrpc": "2.0", "id": "late", "method": "tools/call", "params": {"name": "py.late", "arguments": {"ms": 300}}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "late"}})
    got = sync()
    time.sleep(0.6)
    got += sync()
    return (None if not got else "the cancelled call was answered"), got


def c_oversized(n):
    def check():
        emit({"case": "oversized", "sending": n})
        try:
            write(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + b"x" * n + b'"}}\n')
        except OSError as e:
            return None, ["write failed: %s" % e]
        m = recv(10)
        # Glove must stop the agent; reaching this point at all is a failure.
        return "still running after an oversized line (next message %r)" % (m,), []
    return check


send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": protocol, "capabilities": {}, "clientInfo": {"name": "adversarial", "version": "1"}}})
init = recv()
if not (isinstance(init, dict) and init.get("id") == 0 and "result" in init):
    emit({"case": "initialize", "pass": False, "got": [init]})
    sys.exit(1)
if expect_protocol is not None:
    answered = init["result"].get("protocolVersion")
    emit({"case": "initialize", "pass": answered == expect_protocol, "asked": protocol, "answered": answered})
    if answered != expect_protocol:
        failures += 1
send({"jsonrpc": "2.0", "method": "notifications/initialized"})

cases = {
    "malformed": c_malformed, "utf8": c_utf8, "batch": c_batch, "dupkey": c_dupkey, "invalid": c_invalid,
    "dup-inflight": c_dup_inflight, "unknown-id": c_unknown_id, "unknown-method": c_method("foo/bar"),
    "resources": c_empty_list("resources/list", "resources"), "prompts": c_empty_list("prompts/list", "prompts"), "notification": c_notification,
    "id-types": c_id_types, "cancel-unknown": c_cancel_unknown, "bad-params": c_bad_params,
    "nul-strings": c_nul_strings, "many-values": c_many_values, "cancel-late": c_cancel_late,
}
i = 0
while i < len(args):
    name = args[i]
    i += 1
    if name in ("oversized", "exact", "inflight-bound", "cancel-all"):
        make = {"oversized": c_oversized, "exact": c_exact, "inflight-bound": c_inflight_bound,
                "cancel-all": c_cancel_all}[name]
        case(name, make(int(args[i])))
        i += 1
    elif name in cases:
        case(name, cases[name])
    else:
        emit({"case": name, "pass": False, "why": "unknown case"})
        failures += 1
emit({"case": "end", "pass": failures == 0, "failures": failures})
sys.exit(1 if failures else 0)
