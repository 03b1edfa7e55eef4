#!/usr/bin/python3
r"""An MCP server (stdio) for the client-feature tests of `glove run`
(tests/integration/run_client.bats), run on the host as an upstream. It logs
every line it receives ("> LINE", as mcp-tap.py) and does on demand what a
server may do towards its client.

  features-upstream.py --log FILE [--instructions TEXT] [--no-logging]
                       [--bare] [MARKER...]

Capabilities: tools (listChanged), logging (unless --no-logging), resources
and prompts (both listChanged; it lists none); with --bare only tools,
without listChanged. initialize answers the
version asked for; instructions TEXT when given.

Tools:
  echo {text}            the text
  ask {method, params}   sends the request METHOD to its client, waits for
                         the answer and returns it as JSON text
                         ({"result":...} or {"error":...})
  grow {}                adds the tool "extra" and the tool "bad\u0001name"
                         (a name no rule can name) and sends
                         notifications/tools/list_changed
  extra {}               (after grow) "extra"
  log {level, data, n, pad, done}  sends N (default 1) notifications/message
                         (data followed by PAD "x"), then creates the file
                         DONE when given
  notify {method}        sends the notification METHOD (no params)
logging/setLevel is answered {} ({"error"} for the level "fail").
"""
import json
import sys
import threading

log_path = None
instructions = None
logging_cap = True
bare = False
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--log":
        log_path = args.pop(0)
    elif a == "--instructions":
        instructions = args.pop(0)
    elif a == "--no-logging":
        logging_cap = False
    elif a == "--bare":
        bare = True
        logging_cap = False

lock = threading.Lock()
grown = False
next_id = [1000]
waiting = {}


def log(line):
    if log_path:
        with open(log_path, "a") as f:
            f.write("> " + line.rstrip("\n") + "\n")


def send(msg):
    with lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def text(rid, s):
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": s}]}})


def tools():
    obj = {"type": "object"}
    t = [{"name": n, "description": n, "inputSchema": obj} for n in ("echo", "ask", "grow", "log", "notify")]
    if grown:
        t += [{"name": "extra", "description": "extra", "inputSchema": obj},
              {"name": "bad\u0001name", "description": "bad", "inputSchema": obj}]
    return t


def asker(rid, method, params):
    ev = threading.Event()
    with lock:
        qid = next_id[0]
        next_id[0] += 1
        waiting[qid] = [ev, None]
    send({"jsonrpc": "2.0", "id": qid, "method": method, "params": params or {}})
    ev.wait(60)
    with lock:
        answer = waiting.pop(qid)[1]
    text(rid, json.dumps(answer))


def call(rid, params):
    global grown
    name = params.get("name")
    a = params.get("arguments") or {}
    if name == "echo":
        text(rid, a.get("text", ""))
    elif name == "ask":
        threading.Thread(target=asker, args=(rid, a.get("method"), a.get("params")), daemon=True).start()
    elif name == "grow":
        grown = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(rid, "grown")
    elif name == "extra" and grown:
        text(rid, "extra")
    elif name == "log":
        for i in range(int(a.get("n", 1))):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": a.get("level", "info"), "logger": "fx",
                             "data": a.get("data", "hello %d" % i) + "x" * int(a.get("pad", 0))}})
        if a.get("done"):
            open(a["done"], "w").close()
        text(rid, "logged")
    elif name == "notify":
        send({"jsonrpc": "2.0", "method": a.get("method")})
        text(rid, "notified")
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}})


for line in sys.stdin:
    log(line)
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, rid = msg.get("method"), msg.get("id")
    if method is None:
        with lock:
            if rid in waiting:
                waiting[rid][1] = {k: msg[k] for k in ("result", "error") if k in msg}
                waiting[rid][0].set()
        continue
    if method == "initialize":
        caps = {"tools": {}} if bare else {"tools": {"listChanged": True}, "resources": {"listChanged": True},
                                           "prompts": {"listChanged": True}}
        if logging_cap:
            caps["logging"] = {}
        res = {"protocolVersion": msg["params"].get("protocolVersion"), "capabilities": caps,
               "serverInfo": {"name": "features-upstream", "version": "1.0.0"}}
        if instructions:
            res["instructions"] = instructions
        send({"jsonrpc": "2.0", "id": rid, "result": res})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call":
        call(rid, msg.get("params") or {})
    elif method == "logging/setLevel":
        if (msg.get("params") or {}).get("level") == "fail":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "no such level"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
