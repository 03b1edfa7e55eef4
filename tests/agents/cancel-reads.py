#!/usr/bin/env python3
# A raw MCP agent for tests/integration/run_features.bats: sends N
# resources/read requests of URI and cancels each at once
# (notifications/cancelled), then reads LAST and expects its answer.
#
#   cancel-reads.py OUT N URI LAST
#
# OUT gets one JSON line: {"answered": bool, "result": ..., "error": ...,
# "others": K} (K: responses with another id, which must be none: a
# cancelled request is answered nothing).
import json
import sys

out, n, uri, last = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cancel-reads", "version": "1"}}})
sys.stdin.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
for i in range(1, n + 1):
    send({"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": uri}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i, "reason": "test"}})
final = n + 1
send({"jsonrpc": "2.0", "id": final, "method": "resources/read", "params": {"uri": last}})
rec = {"answered": False, "others": 0}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") == final:
        rec.update(answered=True, result=m.get("result"), error=m.get("error"))
        break
    if "id" in m:
        rec["others"] += 1
with open(out, "w") as f:
    f.write(json.dumps(rec) + "\n")
