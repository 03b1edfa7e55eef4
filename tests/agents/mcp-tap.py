#!/usr/bin/python3
"""mcp-tap.py LOG CMD [ARG...]: runs CMD (an MCP server on stdio) and relays
its stdin and stdout unchanged, appending every line to LOG as it passes:
"> LINE" for what CMD receives, "< LINE" for what it sends. Lets a test see,
from the upstream's side, exactly what Glove forwarded. Exits with CMD's
status; CMD's stderr is left as is."""
import os
import subprocess
import sys
import threading

if len(sys.argv) < 3:
    sys.exit("usage: mcp-tap.py LOG CMD [ARG...]")
log_path, cmd = sys.argv[1], sys.argv[2:]
lock = threading.Lock()


def log(prefix, line):
    with lock, open(log_path, "ab") as fh:
        fh.write(prefix + (line if line.endswith(b"\n") else line + b"\n"))


child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def to_child():
    try:
        for line in sys.stdin.buffer:
            log(b"> ", line)
            child.stdin.write(line)
            child.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    try:
        child.stdin.close()
    except OSError:
        pass


threading.Thread(target=to_child, daemon=True).start()
for line in child.stdout:
    log(b"< ", line)
    try:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        break
rc = child.wait()
os._exit(rc if rc >= 0 else 128 - rc)
