#!/usr/bin/python3
"""Raw HTTP and command probes of glove run's in-sandbox MCP endpoints
(--mcp-endpoint http|command), run inside the sandbox as the agent.

    endpoint-probe.py OUT CHECK...

Each CHECK appends one JSON line {"check":..., "pass":..., ...} to OUT; the
last line is {"check":"end","pass":...}. The port is read from
/run/glove/mcp-endpoint, as the in-sandbox command does.

Checks:
  sessions     initialize issues an Mcp-Session-Id (visible ASCII); a request
               without one is 400, with an unknown one 404, DELETE ends it and
               it is 404 after; an unsupported MCP-Protocol-Version is 400
  origin       a foreign Origin and a foreign Host are 403; ours pass
  heads        a malformed head, a bare LF, an oversized head, a chunked body
               and a body over --max-frame are refused (400, 400, 431, 411, 413)
               and the endpoint still serves a new session afterwards
  keepalive    two requests on one connection
  stream       GET without a session 405 (Allow: POST); with one: a text/event-stream
  full         an idle session gives way to a new one (404 after); sessions
               with a GET stream open until the 33rd initialize is 503
               endpoint.sessions_full, the in-sandbox command refuses clearly
               (exit 1, the code on stderr)
  modern       MCP 2026-07-28 POSTs without a session: server/discover and a
               call answered (resultType), Mcp-Name plain and base64, a
               mismatched Mcp-Name and a missing Mcp-Method 400 -32020, an
               unsupported MCP-Protocol-Version 400 -32022 (supported,
               requested), the gateway's -32602 for a _meta without
               clientCapabilities 400, a 2026-07-28 header on a request
               without the envelope's version 400 -32602 with its id,
               DELETE without a session 405
  modern_cancel  a modern long-running call whose client closes its SSE
               answer after the first progress (the host side finds it
               cancelled in the audit log)
  modern_halfclose  modern calls of up.sleep (tests/agents/mcp-upstream.py)
               whose client stops sending once its request is written
               (shutdown(SHUT_WR)): a quick one is answered JSON, one slower
               than the endpoint's asking (3 s) as SSE with a ": waiting"
               comment first; each connection closes after its answer (the
               host side finds neither cancelled); with egress on also
               through the egress proxy ($HTTP_PROXY), in absolute form
               (relayed) and after a CONNECT (handed over)
  modern_close_proxy LOG  a modern call of up.sleep (60 s) in absolute form
               through the egress proxy whose client closes its connection
               (not half-closes) right after sending it: the upstream is
               told to cancel it (waits at most 30 s for
               notifications/cancelled in LOG, the upstream's log, granted
               readable)
  modern_params  a modern call of up.region (mcp-upstream.py --headers),
               whose inputSchema annotates region, count and opts.zone
               (x-mcp-header): with its Mcp-Param-* headers right it is
               answered; with one that differs, one missing, or one given
               for an argument without a value it is 400 -32020 (the host
               side proves from the upstream's log that only the first
               reached it)
  wait FILE    writes its network namespace (/proc/self/ns/net) to "ready"
               beside OUT, then waits (at most 60 s) until FILE exists (the
               host's side of a test runs meanwhile)
"""
import json
import os
import socket
import subprocess
import sys
import time

OUT = sys.argv[1]
PORT = int(open("/run/glove/mcp-endpoint").read().strip())
ok_all = True


def emit(rec):
    global ok_all
    ok_all = ok_all and rec["pass"]
    with open(OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")


def read_response(s):
    """One HTTP response from socket s: (status, headers dict, body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(65536)
        if not b:
            return (0, {}, data)
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            b = s.recv(65536)
            if not b:
                break
            rest += b
        return (status, headers, rest[:n])
    return (status, headers, rest)


def raw(data, keep=False):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    s.sendall(data)
    r = read_response(s)
    if keep:
        return r, s
    s.close()
    return r


def http(method, body=None, headers=None, host=None, close=True):
    data = json.dumps(body).encode() if body is not None else b""
    h = {"Host": host or f"127.0.0.1:{PORT}", "Accept": "application/json, text/event-stream",
         "Content-Type": "application/json", "Content-Length": str(len(data))}
    if close:
        h["Connection"] = "close"
    h.update(headers or {})
    head = f"{method} /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None) + "\r\n"
    return raw(head.encode() + data)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def reason(body):
    try:
        return json.loads(body)["error"]["data"]["reason"]
    except Exception:
        return None


def initialize(headers=None, host=None):
    st, h, body = http("POST", INIT, headers, host)
    return st, h.get("mcp-session-id"), body


def expect(name, cond, **extra):
    emit({"check": name, "pass": bool(cond), **extra})


def check_sessions():
    st, sid, _ = initialize()
    expect("sessions.initialize", st == 200 and sid and all(0x21 <= ord(c) <= 0x7e for c in sid), status=st, sid=sid)
    st, _, body = http("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"Mcp-Session-Id": sid})
    expect("sessions.notification_202", st == 202, status=st)
    st, _, body = http("POST", LIST, {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    expect("sessions.list", st == 200 and b"ev.echo" in body, status=st)
    st, _, body = http("POST", LIST)
    expect("sessions.missing_400", st == 400 and reason(body) == "endpoint.session_required", status=st, reason=reason(body))
    st, _, body = http("POST", LIST, {"Mcp-Session-Id": "0123456789abcdef0123456789abcdef"})
    expect("sessions.unknown_404", st == 404 and reason(body) == "endpoint.session_unknown", status=st, reason=reason(body))
    st, _, body = http("POST", LIST, {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "1999-01-01"})
    expect("sessions.bad_version_400", st == 400 and reason(body) == "endpoint.protocol_version", status=st, reason=reason(body))
    st, _, _ = http("DELETE", None, {"Mcp-Session-Id": sid, "Content-Type": None, "Content-Length": None})
    expect("sessions.delete", st == 200, status=st)
    st, _, body = http("POST", LIST, {"Mcp-Session-Id": sid})
    expect("sessions.deleted_404", st == 404 and reason(body) == "endpoint.session_unknown", status=st, reason=reason(body))


def check_origin():
    st, _, body = initialize({"Origin": "http://evil.example"})
    expect("origin.foreign_403", st == 403 and reason(body) == "endpoint.bad_origin", status=st, reason=reason(body))
    st, _, body = initialize({"Origin": f"http://127.0.0.1:{PORT + 1}"})
    expect("origin.other_port_403", st == 403, status=st)
    st, _, body = initialize(host=f"evil.example:{PORT}")
    expect("origin.bad_host_403", st == 403 and reason(body) == "endpoint.bad_host", status=st, reason=reason(body))
    st, sid, _ = initialize({"Origin": f"http://localhost:{PORT}"}, host=f"localhost:{PORT}")
    expect("origin.ours_200", st == 200 and sid, status=st)


def check_heads():
    cases = [
        ("heads.garbage_400", b"GARBAGE\r\n\r\n", 400),
        ("heads.bare_lf_400", f"POST /mcp HTTP/1.1\nHost: 127.0.0.1:{PORT}\n\n".encode(), 400),
        ("heads.oversized_431", f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nX-Big: {'a' * 20000}\r\n\r\n".encode(), 431),
        ("heads.chunked_411", f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nContent-Type: application/json\r\n"
                              f"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode(), 411),
        ("heads.body_413", f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nContent-Type: application/json\r\n"
                           f"Content-Length: 999999999\r\n\r\n".encode(), 413),
        ("heads.version_505", f"POST /mcp HTTP/2.0\r\nHost: 127.0.0.1:{PORT}\r\n\r\n".encode(), 505),
        ("heads.path_404", f"POST /other HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nContent-Length: 0\r\n\r\n".encode(), 404),
        ("heads.method_405", f"PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nContent-Length: 0\r\n\r\n".encode(), 405),
    ]
    for name, data, want in cases:
        try:
            st, _, body = raw(data)
        except OSError as e:
            st, body = 0, str(e).encode()
        expect(name, st == want, status=st, reason=reason(body))
    # A head that never ends and a connection dropped mid-head do no harm.
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1")
    s.close()
    st, sid, _ = initialize()
    expect("heads.still_serving", st == 200 and sid, status=st)


def check_keepalive():
    body = json.dumps(INIT).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: application/json\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    (st, h, _), s = raw(head + body, keep=True)
    sid = h.get("mcp-session-id")
    lb = json.dumps(LIST).encode()
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: application/json\r\nMcp-Session-Id: {sid}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(lb)}\r\n\r\n").encode() + lb)
    st2, _, b2 = read_response(s)
    s.close()
    expect("keepalive.two_requests", st == 200 and st2 == 200 and b"ev.echo" in b2, status=[st, st2])


def check_stream():
    # Without a session a GET is the 2026-07-28 binding's: 405, only POST.
    st, h, body = raw(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: text/event-stream\r\n\r\n".encode())
    expect("stream.no_session_405", st == 405 and h.get("allow") == "POST" and reason(body) == "endpoint.http_method",
           status=st, headers=h)
    st, sid, _ = initialize()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    s.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\r\n".encode())
    st, h, _ = read_response(s)
    expect("stream.sse", st == 200 and h.get("content-type") == "text/event-stream", status=st, headers=h)
    st2, _, body = raw(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\r\n".encode())
    expect("stream.second_409", st2 == 409, status=st2)
    s.close()


def check_full():
    # An idle session (no GET stream, nothing in flight) gives way to a new
    # one; a session with its stream open does not. Open sessions, each with
    # its stream, until refused.
    st, first, _ = initialize()
    sids, streams = [], []
    body = b""
    for _ in range(40):
        st, sid, body = initialize()
        if st != 200:
            break
        sids.append(sid)
        s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
        s.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\r\n".encode())
        read_response(s)
        streams.append(s)
    expect("full.http_503", 1 <= len(sids) <= 32 and st == 503 and reason(body) == "endpoint.sessions_full",
           opened=len(sids), status=st)
    st, _, body = http("POST", LIST, {"Mcp-Session-Id": first})
    expect("full.idle_evicted_404", st == 404, status=st)
    p = subprocess.run(["/run/glove/mcp-stdio"], input=b"", capture_output=True, timeout=20)
    expect("full.command_refused", p.returncode == 1 and b"endpoint.sessions_full" in p.stderr,
           rc=p.returncode, stderr=p.stderr.decode(errors="replace"))
    for s in streams:
        s.close()
    for sid in sids:
        http("DELETE", None, {"Mcp-Session-Id": sid, "Content-Type": None, "Content-Length": None})
    st, sid, _ = initialize()
    expect("full.after_delete", st == 200 and sid, status=st)


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}}


def modern(method, params, name=None, headers=None, rid=1):
    """A 2026-07-28 request: no session, the standard headers (overridden by headers)."""
    h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    h.update(headers or {})
    return http("POST", {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": MODERN_META}}, h)


def rpc_code(body):
    try:
        return json.loads(body)["error"]["code"]
    except Exception:
        return None


def check_modern():
    st, h, body = modern("server/discover", {})
    res = json.loads(body).get("result", {}) if st == 200 else {}
    expect("modern.discover", st == 200 and res.get("resultType") == "complete" and "2026-07-28" in res.get("supportedVersions", [])
           and "mcp-session-id" not in h, status=st, headers=h)
    st, _, body = modern("tools/call", {"name": "ev.echo", "arguments": {"message": "x"}}, name="ev.echo")
    expect("modern.call", st == 200 and b'"resultType":"complete"' in body and b"x" in body, status=st)
    st, _, body = modern("tools/call", {"name": "ev.echo", "arguments": {"message": "x"}}, name="ev.other")
    expect("modern.name_mismatch_400", st == 400 and rpc_code(body) == -32020, status=st, code=rpc_code(body))
    st, _, body = modern("tools/call", {"name": "ev.echo", "arguments": {"message": "x"}}, name="=?base64?ZXYuZWNobw==?=")
    expect("modern.name_base64", st == 200, status=st)
    # A header that differs from the body's version is a mismatch; one that
    # agrees with it on a version Glove does not serve is -32022.
    st, _, body = modern("tools/list", {}, headers={"MCP-Protocol-Version": "2099-01-01"})
    expect("modern.version_differs_400", st == 400 and rpc_code(body) == -32020, status=st, code=rpc_code(body))
    st, _, body = http("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                "params": {"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}},
                       {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"})
    data = json.loads(body).get("error", {}).get("data", {}) if body else {}
    expect("modern.version_400", st == 400 and rpc_code(body) == -32022 and data.get("requested") == "2099-01-01"
           and "2026-07-28" in data.get("supported", []), status=st, body=body.decode(errors="replace"))
    st, _, body = modern("tools/list", {}, headers={"Mcp-Method": None})
    expect("modern.method_missing_400", st == 400 and rpc_code(body) == -32020, status=st, code=rpc_code(body))
    # The gateway's own refusals of a modern request: its status follows.
    st, _, body = http("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}},
                       {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    expect("modern.caps_missing_400", st == 400 and rpc_code(body) == -32602, status=st, code=rpc_code(body))
    # A 2026-07-28 header on a request whose _meta lacks the version (or
    # that has no _meta): a modern request missing its envelope, 400 -32602
    # with its id, never the legacy transport's version refusal.
    for case, params in (("no_meta", {}), ("meta_without_version", {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})):
        st, _, body = http("POST", {"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": params},
                           {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
        rid = json.loads(body).get("id") if body else None
        expect(f"modern.{case}_400", st == 400 and rpc_code(body) == -32602 and rid == 4, status=st, code=rpc_code(body), id=rid)
    st, h, body = raw(f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n\r\n".encode())
    expect("modern.delete_405", st == 405 and h.get("allow") == "POST", status=st)


def check_modern_cancel():
    """A modern call whose client closes the connection: cancelled (the host
    side reads the audit), then a new request is served."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "ev.trigger-long-running-operation", "arguments": {"duration": 10, "steps": 100},
        "_meta": {**MODERN_META, "progressToken": "p"}}}).encode()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nAccept: application/json, text/event-stream\r\n"
               f"Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
               f"Mcp-Name: ev.trigger-long-running-operation\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
    # The SSE answer starts and the first progress comes: the call is running.
    got = b""
    while b"notifications/progress" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    expect("modern_cancel.progress", b"text/event-stream" in got and b"notifications/progress" in got, got=got[:300].decode(errors="replace"))
    s.close()
    st, _, _ = modern("server/discover", {})
    expect("modern_cancel.after", st == 200, status=st)


def proxy():
    """The egress proxy of $HTTP_PROXY: (host, port, Proxy-Authorization), or None."""
    import base64
    import urllib.parse
    url = os.environ.get("HTTP_PROXY")
    if not url:
        return None
    u = urllib.parse.urlsplit(url)
    cred = base64.b64encode(f"{urllib.parse.unquote(u.username)}:{urllib.parse.unquote(u.password)}".encode()).decode()
    return u.hostname, u.port, "Basic " + cred


def half_closed(body, headers, via="direct"):
    """POSTs a modern request, stops sending, and reads until the endpoint
    closes: (status, head text, body bytes as received). via: direct, or
    through the egress proxy: absolute (the request in absolute form) or
    connect (a CONNECT first)."""
    data = json.dumps(body).encode()
    h = {"Host": f"127.0.0.1:{PORT}", "Accept": "application/json, text/event-stream",
         "Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
    target = "/mcp"
    if via == "direct":
        s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    else:
        phost, pport, auth = proxy()
        s = socket.create_connection((phost, pport), timeout=20)
        if via == "absolute":
            target = f"http://127.0.0.1:{PORT}/mcp"
            h["Proxy-Authorization"] = auth
        else:
            s.sendall(f"CONNECT 127.0.0.1:{PORT} HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nProxy-Authorization: {auth}\r\n\r\n".encode())
            st, _, _ = read_response(s)
            if st != 200:
                return st, "CONNECT refused", b""
    head = f"POST {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    s.sendall(head.encode() + data)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    top, _, rest = got.partition(b"\r\n\r\n")
    try:
        status = int(top.split(b" ")[1])
    except Exception:
        status = 0
    return status, top.decode("latin-1"), rest


def check_modern_halfclose():
    hdr = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "up.sleep"}
    for via in ("direct", "absolute", "connect") if proxy() else ("direct",):
        for ms, sse in ((0, False), (3000, True)):
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "up.sleep", "arguments": {"ms": ms}, "_meta": MODERN_META}}
            st, head, rest = half_closed(call, hdr, via)
            kind = "text/event-stream" if sse else "application/json"
            expect(f"modern_halfclose.{via}_answered_{ms}", st == 200 and kind in head and f"slept {ms}".encode() in rest
                   and (b": waiting" in rest) == sse, status=st, head=head, body=rest[:400].decode(errors="replace"))


def check_modern_close_proxy():
    phost, pport, auth = proxy()
    body = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                       "params": {"name": "up.sleep", "arguments": {"ms": 60000}, "_meta": MODERN_META}}).encode()
    s = socket.create_connection((phost, pport), timeout=20)
    s.sendall((f"POST http://127.0.0.1:{PORT}/mcp HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nProxy-Authorization: {auth}\r\n"
               f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
               f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: up.sleep\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    s.close()
    log = args.pop(0)
    for _ in range(300):
        if os.path.exists(log) and b"notifications/cancelled" in open(log, "rb").read():
            break
        time.sleep(0.1)
    expect("modern_close_proxy.cancelled", os.path.exists(log) and b"notifications/cancelled" in open(log, "rb").read())


def check_modern_params():
    def call(headers, args):
        h = {"Mcp-Name": "up.region", **headers}
        return modern("tools/call", {"name": "up.region", "arguments": args}, headers=h, rid=3)
    args = {"region": "eu-west1", "count": 3, "opts": {"zone": "b"}, "query": "q"}
    st, _, body = call({"Mcp-Param-Region": "eu-west1", "Mcp-Param-Count": "3", "Mcp-Param-Zone": "b"}, args)
    expect("modern_params.right", st == 200 and b"eu-west1" in body, status=st, body=body[:300].decode(errors="replace"))
    for name, headers, a in (
            ("differs", {"Mcp-Param-Region": "us-east1", "Mcp-Param-Count": "3", "Mcp-Param-Zone": "b"}, args),
            ("missing", {"Mcp-Param-Region": "eu-west1", "Mcp-Param-Count": "3"}, args),
            ("extra", {"Mcp-Param-Region": "eu-west1", "Mcp-Param-Count": "3", "Mcp-Param-Zone": "b"}, {"region": "eu-west1", "count": 3})):
        st, _, body = call(headers, a)
        expect(f"modern_params.{name}_400", st == 400 and rpc_code(body) == -32020, status=st, code=rpc_code(body),
               body=body[:300].decode(errors="replace"))


args = sys.argv[2:]
while args:
    c = args.pop(0)
    try:
        if c == "wait":
            f = args.pop(0)
            with open(os.path.join(os.path.dirname(OUT), "ready"), "w") as r:
                r.write(os.readlink("/proc/self/ns/net") + "\n")
            for _ in range(600):
                if os.path.exists(f):
                    break
                time.sleep(0.1)
            expect("wait", os.path.exists(f))
        else:
            globals()["check_" + c]()
    except Exception as e:
        expect(c, False, why=repr(e))
emit({"check": "end", "pass": ok_all})
sys.exit(0 if ok_all else 1)
