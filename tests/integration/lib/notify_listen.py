#!/usr/bin/python3
"""notify_listen.py SOCKET OUT: stands in for systemd's notification socket.
Binds a datagram socket at SOCKET, creates OUT.ready once bound, and appends
every datagram received to OUT (newlines as spaces, one line each) until one
contains STOPPING=1 or 20 seconds pass."""
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(20)
open(out + ".ready", "w").close()
with open(out, "a") as fh:
    while True:
        try:
            msg = s.recv(4096).decode(errors="replace")
        except socket.timeout:
            break
        fh.write(msg.replace("\n", " ") + "\n")
        fh.flush()
        if "STOPPING=1" in msg:
            break
