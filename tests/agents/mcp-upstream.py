#!/usr/bin/python3
r"""A tiny MCP server (stdio transport) for `glove run` tests, run on the host
as an upstream. It logs every line it receives, so a test can prove from the
upstream's side what reached it.

  mcp-upstream.py [--log FILE] [--init MODE] [--tools N] [--page K]
                  [--odd-names] [--nul-cursor] [--raw] [--headers] [--era ERA] [MARKER...]

--log FILE   append every line received to FILE, as "> LINE" (the format
             of mcp-tap.py)
--init MODE  how to answer initialize: ok (default), error (a JSON-RPC
             error), bad-version (protocolVersion 1999-01-01), nul-version
             (protocolVersion "2025-06-18\u0000x"), silent (never), exit
             (exit 3 at once)
--tools N    also list N more tools, pad0 .. padN-1 (answering "pad")
--page K     answer tools/list in pages of K tools (nextCursor)
--odd-names  also list entries no client should be offered: the names
             "bad\u0000hidden", "echo\u0000x", "ctl\u0001x", "star*", one of
             129 bytes ("n" * 129), the entry 42, an entry without a name, and
             "twin" twice with different descriptions. A call of any of them
             (or of "bad", "twin") answers "odd NAME".
--probe      also list read {path} (the file's text, or an isError result
             naming the error), write {path, text} and connect {host, port}
             (a TCP connection: "connected" or an isError result) and
             fetch {url} (urllib, which honours HTTP_PROXY: the body): a
             contained upstream's reach, tried from inside
--nul-cursor with --page: each nextCursor is "OFFSET\u0000mcp-upstream"; a
             cursor that is not exactly one given out is answered with a
             JSON-RPC error
--raw        also list the tool raw (below)
--headers    also list the tool region (below), whose inputSchema annotates
             arguments with x-mcp-header (MCP 2026-07-28: an HTTP client
             mirrors them in Mcp-Param-* headers)
--era ERA    legacy (default); modern: a 2026-07-28-only server: initialize
             is answered -32022 (data.supported ["2026-07-28"]),
             server/discover with a DiscoverResult (tools.listChanged),
             subscriptions/listen is acknowledged and held open, every
             other request without the 2026-07-28 envelope in params._meta
             (protocolVersion, clientCapabilities, clientInfo) is answered
             -32602, results carry "resultType":"complete", grow's
             list_changed is tagged with the listen's subscriptionId, and
             the tools mrtr (an input_required result) and weird (resultType
             "pending") are listed; modern-retry: the same, but the first
             server/discover is answered -32022 naming 2026-07-28; neither:
             initialize is answered as --init says and server/discover -32601
MARKER       ignored; lets a test find this process by its command line

Tools:
  echo {text}         result text: the text
  sleep {ms}          answers "slept MS" after MS milliseconds (concurrently
                      with other calls); no answer once cancelled
  crash {}            exits 3 at once, without answering
  grow {}             adds the tool "extra" and sends
                      notifications/tools/list_changed, then answers "grown"
  extra {}            (after grow) answers "extra"
  hang {}             never answers
  late {ms}           answers "late MS" after MS milliseconds even when
                      cancelled
  env {}              answers its environment as a JSON object
  ask {method}        sends the request METHOD to its client (Glove), waits
                      for the answer and returns it as JSON text
  stray {}            first sends a response with an id nobody asked for and
                      a line that is not JSON, then answers "stray"
  flood {bytes, id_last, notify}
                      answers with one line of about BYTES bytes; id_last:
                      with "id" as the line's last member (as the TypeScript
                      SDK writes it); notify: first sends a
                      notifications/message line of about BYTES bytes, then
                      answers "flooded"
  region {region, count, opts {zone}}
                      (with --headers) answers its arguments as JSON text;
                      region, count and opts.zone are annotated x-mcp-header
                      Region, Count and Zone
  raw {lines}         (with --raw) writes each of LINES (strings) as it is, "@ID@" replaced
                      by the request's id in JSON and "@BADUTF8@" by the
                      bytes C3 28 (not UTF-8): bytes a JSON encoder would
                      never write
"""
import json
import os
import sys
import threading

log_path = None
init_mode = "ok"
extra_tools = 0
page_size = 0
odd_names = False
nul_cursor = False
raw_tool = False
headers_tool = False
probe = False
era = "legacy"
args = sys.argv[1:]
while args and args[0].startswith("--"):
    opt = args.pop(0)
    if opt == "--log":
        log_path = args.pop(0)
    elif opt == "--init":
        init_mode = args.pop(0)
    elif opt == "--tools":
        extra_tools = int(args.pop(0))
    elif opt == "--page":
        page_size = int(args.pop(0))
    elif opt == "--odd-names":
        odd_names = True
    elif opt == "--nul-cursor":
        nul_cursor = True
    elif opt == "--raw":
        raw_tool = True
    elif opt == "--headers":
        headers_tool = True
    elif opt == "--probe":
        probe = True
    elif opt == "--era":
        era = args.pop(0)
    else:
        sys.exit("mcp-upstream: unknown option %s" % opt)

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
out_lock = threading.Lock()
cancelled = set()
grown = False


def log(line):
    if log_path:
        with open(log_path, "ab") as fh:
            fh.write(b"> " + (line if line.endswith(b"\n") else line + b"\n"))


def send(msg):
    data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


MODERN = era in ("modern", "modern-retry")
listen_id = None
discovers = 0


def result(rid, res):
    if MODERN and "resultType" not in res:
        res = dict(res, resultType="complete")
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def enveloped(params):
    meta = params.get("_meta") or {}
    return (meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
            and isinstance(meta.get("io.modelcontextprotocol/clientCapabilities"), dict)
            and isinstance(meta.get("io.modelcontextprotocol/clientInfo"), dict))


def error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def text(rid, s):
    result(rid, {"content": [{"type": "text", "text": s}]})


def tools():
    obj = {"type": "object"}
    t = [
        {"name": "echo", "description": "Echoes text", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {"name": "sleep", "description": "Answers after ms milliseconds", "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}}},
        {"name": "crash", "description": "Exits without answering", "inputSchema": obj},
        {"name": "grow", "description": "Adds the tool extra", "inputSchema": obj},
    ]
    t += [
        {"name": "hang", "description": "Never answers", "inputSchema": obj},
        {"name": "late", "description": "Answers even when cancelled", "inputSchema": obj},
        {"name": "env", "description": "Its environment", "inputSchema": obj},
        {"name": "ask", "description": "Asks its client", "inputSchema": obj},
        {"name": "stray", "description": "Sends junk first", "inputSchema": obj},
        {"name": "flood", "description": "Answers with a long line", "inputSchema": obj},
    ]
    if raw_tool:
        t.append({"name": "raw", "description": "Answers with the lines given", "inputSchema": obj})
    if headers_tool:
        t.append({"name": "region", "description": "Answers its arguments", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "opts": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}}}})
    if MODERN:
        t += [{"name": "mrtr", "description": "Asks for input (2026-07-28)", "inputSchema": obj},
              {"name": "weird", "description": "Answers an unknown resultType", "inputSchema": obj}]
    if grown:
        t.append({"name": "extra", "description": "Exists after grow", "inputSchema": obj})
    t += [{"name": "pad%d" % i, "description": "Padding", "inputSchema": obj} for i in range(extra_tools)]
    if probe:
        t += [{"name": n, "description": "Probe", "inputSchema": obj} for n in ("read", "write", "connect", "fetch")]
    if odd_names:
        t += [{"name": n, "description": "Odd name", "inputSchema": obj} for n in ODD_NAMES]
        t += [42, {"description": "No name", "inputSchema": obj},
              {"name": "twin", "description": "The first twin", "inputSchema": obj},
              {"name": "twin", "description": "The other twin: use me instead", "inputSchema": {"type": "object", "properties": {"x": {}}}}]
    return t


ODD_NAMES = ["bad\u0000hidden", "echo\u0000x", "ctl\u0001x", "star*", "n" * 129]


pending_asks = {}


def asker(rid, method):
    ev = threading.Event()
    qid = "ask-%s" % rid
    pending_asks[qid] = [ev, None]
    send({"jsonrpc": "2.0", "id": qid, "method": method, "params": {}})
    ev.wait(10)
    text(rid, json.dumps(pending_asks.pop(qid)[1]))


def later(rid, ms):
    threading.Event().wait(ms / 1000.0)
    text(rid, "late %d" % ms)


def sleeper(rid, ms):
    threading.Event().wait(ms / 1000.0)
    if rid not in cancelled:
        text(rid, "slept %d" % ms)


def call(rid, params):
    global grown
    name = params.get("name")
    a = params.get("arguments") or {}
    if name == "echo":
        text(rid, str(a.get("text", "")))
    elif name == "sleep":
        threading.Thread(target=sleeper, args=(rid, int(a.get("ms", 0))), daemon=True).start()
    elif name == "crash":
        os._exit(3)
    elif name == "grow":
        grown = True
        if MODERN:
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                  "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}}})
        else:
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(rid, "grown")
    elif name == "extra" and grown:
        text(rid, "extra")
    elif name == "hang":
        pass
    elif name == "mrtr" and MODERN:
        # Asks roots/list (whatever the client declared) with requestState
        # a["state"] (default "s"); a retry carrying inputResponses.q is
        # answered "mrtr done: " + the state it got back + the roots' URIs.
        answer = (params.get("inputResponses") or {}).get("q")
        if isinstance(answer, dict):
            uris = ",".join(r.get("uri", "") for r in answer.get("roots", []) if isinstance(r, dict))
            text(rid, "mrtr done: %s %s" % (json.dumps(params.get("requestState")), uris))
        else:
            result(rid, {"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list", "params": {}}},
                         "requestState": a.get("state", "s")})
    elif name == "weird" and MODERN:
        result(rid, {"resultType": "pending", "content": []})
    elif name == "late":
        threading.Thread(target=later, args=(rid, int(a.get("ms", 0))), daemon=True).start()
    elif name == "env":
        text(rid, json.dumps(dict(os.environ)))
    elif name == "ask":
        threading.Thread(target=asker, args=(rid, str(a.get("method", "ping"))), daemon=True).start()
    elif name == "stray":
        send({"jsonrpc": "2.0", "id": 987654, "result": {}})
        with out_lock:
            sys.stdout.buffer.write(b"this is not JSON\n")
            sys.stdout.buffer.flush()
        text(rid, "stray")
    elif name == "flood":
        n = int(a.get("bytes", 0))
        if a.get("notify"):
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * n}})
            text(rid, "flooded")
        elif a.get("id_last"):
            line = '{"result":{"content":[{"type":"text","text":"%s"}]},"jsonrpc":"2.0","id":%s}\n' % ("x" * n, json.dumps(rid))
            with out_lock:
                sys.stdout.buffer.write(line.encode())
                sys.stdout.buffer.flush()
        else:
            text(rid, "x" * n)
    elif name == "region" and headers_tool:
        text(rid, json.dumps(a, sort_keys=True))
    elif name == "raw" and raw_tool:
        for line in a.get("lines", []):
            data = line.replace("@ID@", json.dumps(rid)).encode().replace(b"@BADUTF8@", b"\xc3\x28")
            with out_lock:
                sys.stdout.buffer.write(data + b"\n")
                sys.stdout.buffer.flush()
    elif probe and name in ("read", "write", "connect", "fetch"):
        a = params.get("arguments") or {}
        try:
            if name == "read":
                with open(a["path"]) as fh:
                    text(rid, fh.read())
            elif name == "write":
                with open(a["path"], "w") as fh:
                    fh.write(a["text"])
                text(rid, "written")
            elif name == "fetch":
                import urllib.request
                with urllib.request.urlopen(a["url"], timeout=10) as r:
                    text(rid, r.read().decode())
            else:
                import socket
                socket.create_connection((a["host"], int(a["port"])), timeout=5).close()
                text(rid, "connected")
        except Exception as e:
            result(rid, {"content": [{"type": "text", "text": "%s: %s" % (type(e).__name__, e)}], "isError": True})
    elif isinstance(name, str) and name.startswith("pad"):
        text(rid, "pad")
    elif odd_names and name in ODD_NAMES + ["bad", "twin", "ctl", "star"]:
        text(rid, "odd %s" % name)
    else:
        error(rid, -32602, "unknown tool %s" % name)


for raw in sys.stdin.buffer:
    log(raw)
    try:
        msg = json.loads(raw)
    except ValueError:
        error(None, -32700, "parse error")
        continue
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if era != "legacy" and method == "initialize" and init_mode == "ok":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                      "data": {"supported": ["2026-07-28"], "requested": params.get("protocolVersion")}}})
        continue
    if era == "neither" and method == "server/discover":
        error(rid, -32601, "method not found")
        continue
    if MODERN and method == "server/discover":
        discovers += 1
        if era == "modern-retry" and discovers == 1:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "Unsupported protocol version",
                                                          "data": {"supported": ["2026-07-28"], "requested": "x"}}})
        elif not enveloped(params):
            error(rid, -32602, "server/discover without the 2026-07-28 envelope")
        else:
            result(rid, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}},
                         "ttlMs": 0, "cacheScope": "private"})
        continue
    if MODERN and method is not None and rid is not None and not enveloped(params):
        error(rid, -32602, "%s without the 2026-07-28 envelope" % method)
        continue
    if MODERN and method == "subscriptions/listen":
        listen_id = rid
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": params.get("notifications"), "_meta": {"io.modelcontextprotocol/subscriptionId": rid}}})
        continue
    if method == "initialize":
        if init_mode == "exit":
            os._exit(3)
        if init_mode == "silent":
            continue
        if init_mode == "error":
            error(rid, -32603, "initialize refused by mcp-upstream --init error")
            continue
        asked = params.get("protocolVersion")
        version = "1999-01-01" if init_mode == "bad-version" else asked if asked in VERSIONS else VERSIONS[1]
        if init_mode == "nul-version":
            version = "2025-06-18\u0000x"
        result(rid, {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                     "serverInfo": {"name": "mcp-upstream", "version": "1.0.0"}})
    elif method == "tools/list":
        every = tools()
        if page_size:
            cursor = params.get("cursor")
            suffix = "\u0000mcp-upstream" if nul_cursor else ""
            if cursor is not None and not (cursor.endswith(suffix) and cursor[:len(cursor) - len(suffix)].isdigit()):
                error(rid, -32602, "unknown cursor %r" % cursor)
                continue
            start = int(cursor[:len(cursor) - len(suffix)]) if cursor is not None else 0
            page = {"tools": every[start:start + page_size]}
            if start + page_size < len(every):
                page["nextCursor"] = str(start + page_size) + suffix
            result(rid, page)
        else:
            result(rid, {"tools": every})
    elif method == "tools/call":
        call(rid, params)
    elif method == "ping":
        result(rid, {})
    elif method == "notifications/cancelled":
        cancelled.add(params.get("requestId"))
    elif method is None and rid in pending_asks:
        pending_asks[rid][1] = msg
        pending_asks[rid][0].set()
    elif method is not None and rid is not None:
        error(rid, -32601, "method not found")
