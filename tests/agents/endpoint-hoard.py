"""Tries to park memory in Glove's own process through the in-sandbox MCP
endpoint (tests/integration/run_endpoints.bats): HTTP connections that each
announce a body of almost --max-frame bytes and send all of it but the last
byte, then command connections (the GLOVE-MCP-STDIO/1 preface) that each
send a line of almost --max-frame bytes without its newline. Every
connection is then held open, never finished.

    endpoint-hoard.py PORT OUTDIR HTTP_CONNS COMMAND_CONNS BODY_BYTES

Hand-shake with the test, which reads Glove's RSS from outside: writes
OUTDIR/before and waits for OUTDIR/go1, attacks, writes OUTDIR/ready (one
JSON object: what each connection got) and waits for OUTDIR/go."""
import json
import os
import select
import socket
import sys
import time

port, out = int(sys.argv[1]), sys.argv[2]
n_http, n_cmd, body = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


def wait_for(name):
    for _ in range(1200):
        if os.path.exists(os.path.join(out, name)):
            return
        time.sleep(0.05)
    sys.exit("the test never said " + name)


def write(name, text):
    tmp = os.path.join(out, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(out, name))


def answers(socks, seconds):
    """What each socket has to say within `seconds` (bytes, b"" none)."""
    got = {s: b"" for s in socks}
    end = time.time() + seconds
    live = list(socks)
    while live and time.time() < end:
        r, _, _ = select.select(live, [], [], max(0.0, end - time.time()))
        if not r:
            break
        for s in r:
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            got[s] += d
            if not d:
                live.remove(s)
    return got


def sendall(s, data):
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


write("before", "1")
wait_for("go1")
result = {"http": [], "command": []}

# HTTP: every head first, then the refusals (a refused request never gets
# its body sent: it is refused before the body comes), then the bodies.
http = []
for _ in range(n_http):
    s = socket.create_connection(("127.0.0.1", port))
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "Accept: application/json\r\nContent-Length: %d\r\n\r\n" % (port, body)).encode()
    sendall(s, head)
    http.append(s)
early = answers(http, 2.0)
chunk = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (body - 60)
for s in http:
    if early[s]:
        text = early[s].decode("latin-1")
        status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/1.1 ") else 0
        reason = ""
        if "\r\n\r\n" in text:
            try:
                reason = json.loads(text.split("\r\n\r\n", 1)[1])["error"]["data"]["reason"]
            except (ValueError, KeyError, TypeError):
                reason = "unparsable"
        result["http"].append({"status": status, "reason": reason,
                               "close": "\r\nConnection: close\r\n" in text,
                               "retry_after": "\r\nRetry-After: " in text})
    else:
        result["http"].append({"status": None, "sent": sendall(s, chunk[: body - 1])})

# Command connections: the preface, then a line that never ends.
cmd = []
for _ in range(n_cmd):
    s = socket.create_connection(("127.0.0.1", port))
    sendall(s, b"GLOVE-MCP-STDIO/1\n")
    cmd.append(s)
ok = answers(cmd, 1.0)
for s in cmd:
    sendall(s, b"x" * (body - 1))
late = answers(cmd, 2.0)
for s in cmd:
    text = (ok[s] + late[s]).decode("latin-1")
    reason = ""
    for line in text.splitlines()[1:]:
        try:
            reason = json.loads(line)["error"]["data"]["reason"]
        except (ValueError, KeyError, TypeError):
            reason = "unparsable"
    result["command"].append({"ok": text.startswith("OK\n"), "reason": reason})

write("ready", json.dumps(result))
wait_for("go")
print("hoard done", flush=True)
