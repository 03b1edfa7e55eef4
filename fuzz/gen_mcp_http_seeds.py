#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of fuzz/mcp_frame.c and fuzz/http_head.c:

    python3 fuzz/gen_mcp_http_seeds.py

Each seed starts with the target's header bytes (see the comment at the top
of each target), then the bytes an agent would send. The files are
committed; rerun after changing a target's input layout."""
import base64
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def mcp_header(max_frame=4096, bound_values=False, fill=False, chunks=0, writer=64):
    """max_frame 1..4096; chunks 0..63 seeds the read sizes; writer * 64
    bytes of pending output."""
    flags = (1 if bound_values else 0) | (2 if fill else 0) | (chunks << 2)
    return struct.pack(">HBB", max_frame - 1, flags, writer)


def line(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def mcp():
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "agent", "version": "1.0"}}}
    call = {"jsonrpc": "2.0", "id": "c-2", "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "/workspace/a.txt"}}}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    resp = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
    err = {"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "no such method"}}
    session = line(init) + line(note) + line(call) + line(resp) + line(err)
    write("mcp_frame", "session", mcp_header() + session)
    write("mcp_frame", "session-fill", mcp_header(fill=True, chunks=5) + session)
    write("mcp_frame", "session-bounded", mcp_header(bound_values=True, chunks=9, writer=2) + session)
    write("mcp_frame", "batch", mcp_header() + b"[" + line(init)[:-1] + b"," + line(note)[:-1] + b"]\n")
    write("mcp_frame", "crlf", mcp_header(chunks=1) + session.replace(b"\n", b"\r\n") + b"\r\n\r\n\n")
    utf8 = line({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "echo", "arguments": {"text": "h\u00e9llo \u4e16\u754c \U0001f600"}}})
    cut = utf8.index("\u4e16".encode()) + 1  # inside a 3-byte sequence
    # One byte per read first, so the line splits mid-sequence.
    write("mcp_frame", "utf8-split", mcp_header(chunks=0) + utf8[:cut] + utf8[cut:])
    write("mcp_frame", "utf8-invalid", mcp_header() +
          b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"s":"\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80"}}\n'
          b'{"jsonrpc":"2.0","id":"\xff","method":"x"}\n')
    write("mcp_frame", "nul-escape", mcp_header() +
          b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"a":"x\\u0000y"}}\n'
          b'{"jsonrpc":"2.0","id":"a\\u0000b","method":"x"}\n'
          b'{"jsonrpc":"2.0","id":5,"method":"x\\u0000y"}\n'
          b'{"jsonrpc":"2.0\\u0000","id":6,"method":"x"}\n')
    write("mcp_frame", "nul-raw", mcp_header() + b'{"jsonrpc":"2.0","id":4,"method":"a\x00b"}\n\x00\n')
    deep = b'{"jsonrpc":"2.0","id":9,"method":"x","params":{"a":' + b"[" * 70 + b"]" * 70 + b"}}\n"
    ok_deep = b'{"jsonrpc":"2.0","id":10,"method":"x","params":{"a":' + b"[" * 60 + b"]" * 60 + b"}}\n"
    write("mcp_frame", "deep", mcp_header() + ok_deep + deep)
    write("mcp_frame", "many-values", mcp_header(bound_values=True) +
          b'{"jsonrpc":"2.0","id":11,"method":"x","params":{"a":[' + b"0," * 1500 + b"0]}}\n")
    big = line({"jsonrpc": "2.0", "id": 12, "method": "x", "params": {"pad": "p" * 3000}})
    write("mcp_frame", "oversized", mcp_header(max_frame=1024, chunks=3) + line(note) + big + line(call))
    write("mcp_frame", "oversized-tail", mcp_header(max_frame=64, chunks=2) + line(note)[:40] + b"\n" + b"x" * 200)
    write("mcp_frame", "cr-edge", mcp_header(max_frame=20) + b"a" * 20 + b"\r\n" + b"b" * 20 + b"\r\r\n" + b"\r\n\r")
    write("mcp_frame", "invalid", mcp_header() + b"".join(x + b"\n" for x in [
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}',
        b'{"jsonrpc":"1.0","id":1,"method":"x"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"x"}',
        b'{"jsonrpc":"2.0","id":null,"method":"x"}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","extra":true}',
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}',
        b'{"jsonrpc":"2.0","id":1,"error":"e"}',
        b'{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}',
        b'"just a string"', b"{", b"} {", b"   ",
    ]))
    write("mcp_frame", "writer-full", mcp_header(writer=1) + session * 3)


TOKEN = "fuzztoken"
AUTH = b"Proxy-Authorization: Basic " + base64.b64encode(("glove:" + TOKEN).encode()) + b"\r\n"


def http_header(chunks=0, good_credentials=True):
    return bytes([chunks & 0xff, 1 if good_credentials else 0])


def http():
    h = http_header()
    write("http_head", "connect-name", h + b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n" + AUTH + b"\r\n")
    write("http_head", "connect-ipv4", http_header(3) + b"CONNECT 192.0.2.7:8443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "connect-ipv6", http_header(7) + b"CONNECT [::1]:443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "connect-mapped", h + b"CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "connect-bad-auth", http_header(1, False) +
          b"CONNECT example.com:443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "connect-two-auth", h + b"CONNECT example.com:443 HTTP/1.1\r\n" + AUTH + AUTH + b"\r\n")
    write("http_head", "connect-no-auth", h + b"CONNECT example.com:443 HTTP/1.1\r\nUser-Agent: curl/8\r\n\r\n")
    write("http_head", "connect-lowercase-auth", h + b"CONNECT a.b.example.com:443 HTTP/1.1\r\n" +
          AUTH.lower().replace(base64.b64encode(("glove:" + TOKEN).encode()).lower(),
                               base64.b64encode(("glove:" + TOKEN).encode())) + b"\r\n")
    write("http_head", "missing-port", h + b"CONNECT example.com HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "bad-port", h + b"CONNECT example.com:0443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "absolute-get", h + b"GET http://example.com:8080/path?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n" +
          AUTH + b"\r\n")
    write("http_head", "absolute-post-hop", h + b"POST http://127.0.0.1:11434/api/chat HTTP/1.1\r\nHost: 127.0.0.1:11434\r\n" +
          AUTH + b"Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n"
          b"Content-Length: 2\r\n\r\n{}")
    write("http_head", "absolute-no-host", h + b"GET http://[::1]:8080 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "absolute-host-mismatch", h + b"GET http://example.com/ HTTP/1.1\r\nHost: other.example\r\n" +
          AUTH + b"\r\n")
    write("http_head", "absolute-https", h + b"GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n" + AUTH + b"\r\n")
    write("http_head", "response-keep-alive", h + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
          b"Keep-Alive: timeout=5\r\n\r\nok")
    write("http_head", "origin-form", h + b"DELETE /x HTTP/1.1\r\nHost: example.com:8080\r\n\r\n")
    write("http_head", "http10", h + b"CONNECT example.com:443 HTTP/1.0\r\n" + AUTH + b"\r\n")
    write("http_head", "bare-lf", h + b"CONNECT example.com:443 HTTP/1.1\n" + AUTH.replace(b"\r\n", b"\n") + b"\n")
    write("http_head", "obs-fold", h + b"CONNECT example.com:443 HTTP/1.1\r\nX-A: one\r\n two\r\n" + AUTH + b"\r\n")
    write("http_head", "many-headers", h + b"CONNECT example.com:443 HTTP/1.1\r\n" +
          b"".join(b"X-%d: v\r\n" % i for i in range(70)) + AUTH + b"\r\n")
    write("http_head", "oversized", http_header(11) + b"CONNECT example.com:443 HTTP/1.1\r\nX-Pad: " + b"p" * 9000 +
          b"\r\n" + AUTH + b"\r\n")
    write("http_head", "long-host", h + b"CONNECT " + b"a" * 300 + b".com:443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "zone-ipv6", h + b"CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "numeric-host", h + b"CONNECT 0x7f.1:443 HTTP/1.1\r\n" + AUTH + b"\r\n")
    write("http_head", "control-chars", h + b"CONNECT example.com:443 HTTP/1.1\r\nX-A: a\x00b\x7f\r\n" + AUTH + b"\r\n")
    write("http_head", "pipelined", http_header(2) + b"CONNECT example.com:443 HTTP/1.1\r\n" + AUTH +
          b"\r\n\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    write("http_head", "garbage", h + bytes(range(256)) + b"\r\n\r\n")
    write("http_head", "empty-head", h + b"\r\n\r\n")


if __name__ == "__main__":
    mcp()
    http()
