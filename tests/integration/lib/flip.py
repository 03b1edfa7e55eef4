#!/usr/bin/python3
"""flip.py A B SECONDS: atomically exchange the directory entries A and B
(renameat2 RENAME_EXCHANGE) over and over, with short random pauses, for at
most SECONDS (it stops by itself) or until killed. Used to race a grant path
between a real directory and a symlink while glove launches."""
import ctypes
import os
import random
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_EXCHANGE = 2
a, b, seconds = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
deadline = time.monotonic() + seconds
flips = 0
while time.monotonic() < deadline:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        sys.exit("flip.py: renameat2: %s" % os.strerror(e))
    flips += 1
    # Mostly tight flips, sometimes a pause of up to 2 ms, so that glove's
    # check and its use land on either side of a flip at varying offsets.
    if random.random() < 0.5:
        time.sleep(random.random() * 0.002)
print("flips=%d" % flips, file=sys.stderr)
