"""Holds every connection slot of Glove's in-sandbox endpoint, then opens
and drops connections for up to SECONDS (each one refused and audited):
what an agent would do to grow the audit log. Prints how many it made."""
import socket
import sys
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
hold = []
for _ in range(80):
    try:
        hold.append(socket.create_connection(("127.0.0.1", port)))
    except OSError:
        break
n = 0
end = time.time() + seconds
while time.time() < end:
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.recv(1)
        s.close()
        n += 1
    except OSError:
        pass
print("refused connections", n, flush=True)
