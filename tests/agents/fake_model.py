#!/usr/bin/python3
"""fake_model.py: a scripted model server for the five agent CLIs
(tests/agents/agents.bats). Python standard library only.

    fake_model.py certs DIR
        Writes DIR/ca.pem, DIR/ca.key, DIR/server.pem, DIR/server.key with
        the openssl command: a throw-away CA and a certificate it signs for
        127.0.0.1 and localhost (subjectAltName), valid for one day.
    fake_model.py serve --cert DIR --port-file FILE --log FILE --marker TEXT
                        --proof-path PATH --proof-token TOKEN [--dump-dir DIR]
                        [--plain] [--mcp-allowed TEXT --mcp-refused TEXT
                        [--mcp-tool SUFFIX]]
        HTTPS on 127.0.0.1, a random port (written to FILE once listening),
        until killed; plain HTTP with --plain (a local Ollama or vLLM
        endpoint: what the egress proxy forwards in absolute form). It speaks the shapes the CLIs use:
          POST .../responses          OpenAI Responses API, streaming SSE (codex)
          POST .../chat/completions   Chat Completions, streaming or not
                                      (pi, copilot, opencode)
          POST .../messages           Anthropic Messages, streaming or not (claude)
          POST .../count_tokens       Anthropic token count
          GET  .../models             a model list naming fake-model
        Scripted turn, per request:
          - no tools offered (titles, summaries): a short text answer;
          - tools offered and no tool result in the conversation yet: one call
            of the CLI's own shell tool (found among the tools the request
            defines, its arguments shaped by that tool's JSON schema) running
              printf '%s-%s\\n' glove-proof TOKEN >PATH && cat PATH
            so the text "glove-proof-TOKEN" appears only once the command
            ran: in the file, and in the tool result the CLI sends back;
          - a tool result present: a final text answer.
        With --mcp-allowed (a turn of MCP tool calls through Glove), when the
        request offers an MCP tool of the server "glove" whose name ends in
        SUFFIX (default "echo"; each CLI spells Glove's UP.TOOL its own way:
        mcp__glove__UP_TOOL (claude-code), glove_UP_TOOL (opencode),
        glove-UP-TOOL (copilot), the function UP_TOOL in the Responses-API
        namespace tool mcp__glove (codex)) and no tool result yet: two calls
        of it in one response, {"text": ALLOWED} and {"text": REFUSED}
        (all four CLIs run both and send both results in their next request);
        then a final text answer. The shell tool is never called
        in this mode: without the MCP tool, a text answer.
        Every request is logged as one JSON line: {"path", "api", "model",
        "stream", "tools" (names), "marker_seen" (TEXT occurs anywhere in the
        raw request body: system prompt, instructions, tool descriptions),
        "reply" ("text" | "tool_call" | "final"), "tool" and "tool_args" (the
        first tool called), "calls" ([{"tool", "args", "namespace"}], every
        call of the reply), "tool_results" (texts of the tool results in the
        request)}.
        --dump-dir keeps each request body (for finding a CLI's tool shapes).
"""
import argparse
import gzip
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The shell tools the five CLIs define, by the names their requests carry.
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "Bash", "bash")
MAX_BODY = 64 << 20


def certs(d):
    os.makedirs(d, exist_ok=True)

    def ossl(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True)

    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=glove test CA",
         "-keyout", d + "/ca.key", "-out", d + "/ca.pem",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", d + "/server.key", "-out", d + "/server.csr")
    ext = d + "/server.ext"
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
         "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", d + "/server.pem")
    for n in ("ca.pem", "server.pem"):
        os.chmod(os.path.join(d, n), 0o644)


def text_of(c):
    """The text of a message content (string, or a list of parts)."""
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(text_of(p.get("text", p.get("content", p.get("output")))) if isinstance(p, dict)
                       else text_of(p) for p in c)
    if isinstance(c, dict):
        return text_of(c.get("text", c.get("content", c.get("output"))))
    return str(c)


def tool_results(api, body):
    out = []
    if api == "responses":
        for it in body.get("input") or []:
            if isinstance(it, dict) and it.get("type") in ("function_call_output", "custom_tool_call_output"):
                out.append(text_of(it.get("output")))
    elif api == "chat":
        for m in body.get("messages") or []:
            if m.get("role") == "tool":
                out.append(text_of(m.get("content")))
    else:
        for m in body.get("messages") or []:
            if isinstance(m.get("content"), list):
                for p in m["content"]:
                    if isinstance(p, dict) and p.get("type") == "tool_result":
                        out.append(text_of(p.get("content")))
    return out


def tool_defs(api, body):
    """[(name, json schema)] of the function tools the request offers."""
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if api == "chat" and isinstance(t.get("function"), dict):
            out.append((t["function"].get("name"), t["function"].get("parameters") or {}))
        elif api == "responses":
            out.append((t.get("name") or t.get("type"), t.get("parameters") if t.get("type") == "function" else None))
        else:
            out.append((t.get("name"), t.get("input_schema") or {}))
    return [(n, s) for n, s in out if n]


def mcp_tool(api, body, suffix):
    """(name, namespace) of the MCP tool the request offers whose name ends
    in SUFFIX (each CLI spells a tool UP.TOOL of its MCP server "glove" its
    own way: mcp__glove__UP_TOOL, glove_UP_TOOL, glove-UP-TOOL, and codex a
    function UP_TOOL in the Responses-API namespace mcp__glove), or None."""
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if api == "responses" and t.get("type") == "namespace":
            for sub in t.get("tools") or []:
                n = sub.get("name") if isinstance(sub, dict) else None
                if isinstance(n, str) and "glove" in t.get("name", "") and n.endswith(suffix):
                    return n, t.get("name")
            continue
        n = (t.get("function") or {}).get("name") if api == "chat" else t.get("name")
        if isinstance(n, str) and "glove" in n and n.endswith(suffix):
            return n, None
    return None


def shell_args(schema, command):
    """Arguments for a shell tool, shaped by its schema."""
    props = (schema or {}).get("properties") or {}
    args = {}
    key = next((k for k in ("command", "cmd") if k in props), "command")
    if (props.get(key) or {}).get("type") == "array":
        args[key] = ["bash", "-lc", command]
    else:
        args[key] = command
    for r in (schema or {}).get("required") or []:
        if r in args:
            continue
        t = (props.get(r) or {}).get("type")
        args[r] = {"integer": 30000, "number": 30000, "boolean": False, "array": []}.get(t, "write the proof file")
    return args


class Script:
    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        self.n = 0
        self.command = "printf '%%s-%%s\\n' glove-proof %s >%s && cat %s" % (a.proof_token, a.proof_path, a.proof_path)

    def log(self, rec):
        with self.lock:
            with open(self.a.log, "a") as f:
                f.write(json.dumps(rec, sort_keys=True) + "\n")

    def dump(self, raw):
        if not self.a.dump_dir:
            return
        with self.lock:
            self.n += 1
            with open(os.path.join(self.a.dump_dir, "%03d.json" % self.n), "wb") as f:
                f.write(raw)

    def decide(self, api, body):
        """(reply kind, [(tool, args, namespace)], tool results, offered names)."""
        results = tool_results(api, body)
        tools = tool_defs(api, body)
        names = [n for n, _ in tools]
        mcp = mcp_tool(api, body, self.a.mcp_tool) if self.a.mcp_allowed is not None else None
        if mcp:
            names += ["%s/%s" % (mcp[1], mcp[0])] if mcp[1] else []
            calls = [(mcp[0], {"text": self.a.mcp_allowed}, mcp[1]),
                     (mcp[0], {"text": self.a.mcp_refused}, mcp[1])]
            if not results:
                return "tool_call", calls, results, names
            return "final", [], results, names
        if self.a.mcp_allowed is not None:
            # The MCP tool is not offered: never the shell tool instead.
            return ("final" if results else "text"), [], results, names
        if results:
            return "final", [], results, names
        if not tools:
            return "text", [], results, names
        for want in SHELL_TOOLS:
            for n, s in tools:
                if n == want:
                    return "tool_call", [(n, shell_args(s, self.command), None)], results, names
        return "text", [], results, names


def sse(events):
    return "".join(("event: %s\n" % e if e else "") + "data: %s\n\n" % (d if isinstance(d, str) else json.dumps(d))
                   for e, d in events).encode()


FINAL = "Done: the proof file is written."
TEXT = "Glove test"


def responses_reply(kind, calls):
    rid = "resp_%d" % time.time_ns()
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    ev = [("response.created", {"type": "response.created", "response": {"id": rid}})]
    if kind == "tool_call":
        for i, (tool, args, ns) in enumerate(calls):
            item = {"type": "function_call", "id": "fc_%d_%d" % (time.time_ns(), i),
                    "call_id": "call_%d_%d" % (time.time_ns(), i), "name": tool,
                    "arguments": json.dumps(args), "status": "completed"}
            if ns:
                item["namespace"] = ns
            ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                      "item": dict(item, status="in_progress", arguments="")}))
            ev.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                     "item": item}))
    else:
        text = FINAL if kind == "final" else TEXT
        item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                  "item": dict(item, content=[], status="in_progress")}))
        ev.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                                  "output_index": 0, "content_index": 0, "delta": text}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                 "item": item}))
    ev.append(("response.completed", {"type": "response.completed",
                                      "response": {"id": rid, "status": "completed", "usage": usage}}))
    return "text/event-stream", sse(ev)


def chat_reply(kind, calls, model, stream):
    cid, created = "chatcmpl-%d" % time.time_ns(), int(time.time())
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if kind == "tool_call":
        tcs = [{"id": "call_%d_%d" % (time.time_ns(), i), "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args)}} for i, (tool, args, _) in enumerate(calls)]
        msg, finish = {"role": "assistant", "content": None, "tool_calls": tcs}, "tool_calls"
    else:
        msg, finish = {"role": "assistant", "content": FINAL if kind == "final" else TEXT}, "stop"
    if not stream:
        return "application/json", json.dumps({
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage}).encode()

    def chunk(delta, fin=None, **extra):
        return (None, dict({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}, **extra))
    ev = [chunk({"role": "assistant", "content": ""})]
    if kind == "tool_call":
        for i, tc in enumerate(msg["tool_calls"]):
            ev.append(chunk({"tool_calls": [dict(tc, index=i)]}))
    else:
        ev.append(chunk({"content": msg["content"]}))
    ev.append(chunk({}, finish))
    ev.append((None, {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                      "choices": [], "usage": usage}))
    ev.append((None, "[DONE]"))
    return "text/event-stream", sse(ev)


def messages_reply(kind, calls, model, stream):
    mid = "msg_%d" % time.time_ns()
    if kind == "tool_call":
        blocks = [{"type": "tool_use", "id": "toolu_%d_%d" % (time.time_ns(), i), "name": tool, "input": args}
                  for i, (tool, args, _) in enumerate(calls)]
        stop = "tool_use"
    else:
        blocks, stop = [{"type": "text", "text": FINAL if kind == "final" else TEXT}], "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if not stream:
        return "application/json", json.dumps({
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}).encode()
    ev = [("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})]
    for i, block in enumerate(blocks):
        if block["type"] == "tool_use":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": dict(block, input={})}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "text", "text": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "text_delta", "text": block["text"]}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": 5}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return "text/event-stream", sse(ev)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = None

    def log_message(self, *a):
        pass

    def send(self, code, ctype, data):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        if n:
            raw = self.rfile.read(n)
        elif "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
                if len(raw) > MAX_BODY:
                    raise ValueError("body too large")
        else:
            raw = b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        elif enc:
            raise ValueError("unsupported Content-Encoding " + enc)
        return raw

    def do_GET(self):
        s = self.script
        s.log({"path": self.path, "method": "GET"})
        if self.path.rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0,
                                                "owned_by": "glove", "type": "model", "display_name": "fake-model"}],
                    "models": [{"slug": "fake-model", "id": "fake-model"}], "has_more": False}
            return self.send(200, "application/json", json.dumps(data).encode())
        return self.send(200, "application/json", b"{}")

    def do_POST(self):
        s = self.script
        try:
            raw = self.body()
            body = json.loads(raw or b"{}")
        except (ValueError, OSError, zlib.error) as e:
            s.log({"path": self.path, "error": str(e)})
            return self.send(400, "application/json", json.dumps({"error": {"message": str(e)}}).encode())
        s.dump(raw)
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            s.log({"path": path, "api": "count_tokens"})
            return self.send(200, "application/json", b'{"input_tokens":10}')
        if path.endswith("/responses"):
            api = "responses"
        elif path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/messages"):
            api = "messages"
        else:
            s.log({"path": path, "api": None})
            return self.send(404, "application/json", b'{"error":{"message":"unknown path"}}')
        model = body.get("model") or "fake-model"
        stream = bool(body.get("stream")) or api == "responses"
        kind, calls, results, names = s.decide(api, body)
        s.log({"path": path, "api": api, "model": model, "stream": stream, "tools": names,
               "marker_seen": s.a.marker.encode() in raw, "reply": kind,
               "tool": calls[0][0] if calls else None, "tool_args": calls[0][1] if calls else None,
               "calls": [{"tool": t, "args": a, "namespace": ns} for t, a, ns in calls],
               "tool_results": results})
        if api == "responses":
            ctype, data = responses_reply(kind, calls)
        elif api == "chat":
            ctype, data = chat_reply(kind, calls, model, stream)
        else:
            ctype, data = messages_reply(kind, calls, model, stream)
        return self.send(200, ctype, data)


def serve(a):
    Handler.script = Script(a)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if not a.plain:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(a.cert, "server.pem"), os.path.join(a.cert, "server.key"))
        ctx.set_alpn_protocols(["http/1.1"])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    srv.serve_forever()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "certs":
        return certs(sys.argv[2])
    if len(sys.argv) < 2 or sys.argv[1] != "serve":
        raise SystemExit(__doc__)
    p = argparse.ArgumentParser(prog="fake_model.py serve")
    for o in ("--cert", "--port-file", "--log", "--marker", "--proof-path", "--proof-token"):
        p.add_argument(o, required=True)
    p.add_argument("--dump-dir")
    p.add_argument("--plain", action="store_true")
    p.add_argument("--mcp-tool", default="echo")
    p.add_argument("--mcp-allowed")
    p.add_argument("--mcp-refused")
    a = p.parse_args(sys.argv[2:])
    if (a.mcp_allowed is None) != (a.mcp_refused is None):
        p.error("--mcp-allowed and --mcp-refused go together")
    serve(a)


if __name__ == "__main__":
    main()
