#!/usr/bin/python3
"""procs.py MARKER: print the host PIDs (one a line) of every process whose
command line contains MARKER, this process excepted. Exit 0 either way."""
import os
import sys

marker = sys.argv[1].encode()
me = os.getpid()
for p in sorted((int(x) for x in os.listdir("/proc") if x.isdigit())):
    if p == me:
        continue
    try:
        with open("/proc/%d/cmdline" % p, "rb") as fh:
            if marker in fh.read():
                print(p)
    except OSError:
        pass
