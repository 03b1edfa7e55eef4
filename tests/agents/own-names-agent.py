"""The agent for the own-names list_changed test (stdio channel): calls
fv.x, makes the own-names upstream fu add "fv.x" (call x with mutate), waits
for tools/list_changed, lists the tools and calls fv.x again. Writes every
answer Glove sent to OUT as JSON lines."""
import json
import sys

out = open(sys.argv[1], "w")


def send(d):
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()


def answer(want_id):
    for line in sys.stdin:
        m = json.loads(line)
        out.write(json.dumps(m) + "\n")
        out.flush()
        if m.get("id") == want_id:
            return m
        if want_id is None and m.get("method") == "notifications/tools/list_changed":
            return m
    sys.exit("the channel closed")


send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}})
answer(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fv.x", "arguments": {"secret": "for fv"}}})
answer(2)
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "arguments": {"mutate": True}}})
answer(3)
answer(None)
send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
answer(4)
send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "fv.x", "arguments": {"secret": "for fv"}}})
answer(5)
