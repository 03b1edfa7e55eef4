#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every stable code the remote backend can report is documented.

Collects the "remote.*" string literals of src/remote/*.c and
include/glove/remote/*.h, the "usage.backend_conflict" of gloved's options,
and checks that each appears as `CODE` in docs/remote-backend.md. Run by
meson as remote/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
codes = set()
for path in glob.glob(os.path.join(root, "src", "remote", "*.c")) + glob.glob(
        os.path.join(root, "include", "glove", "remote", "*.h")):
    codes.update(re.findall(r'"(remote\.[a-z0-9_]+)"', open(path, encoding="utf-8").read()))
options = open(os.path.join(root, "src", "server", "service_options.c"), encoding="utf-8").read()
codes.update(re.findall(r'"(usage\.backend_conflict)"', options))
if len(codes) < 20:
    print("found only %d codes: the pattern no longer matches the sources" % len(codes))
    sys.exit(1)
doc = open(os.path.join(root, "docs", "remote-backend.md"), encoding="utf-8").read()
missing = sorted(c for c in codes if "`%s`" % c not in doc)
if missing:
    print("undocumented codes in docs/remote-backend.md:", " ".join(missing))
    sys.exit(1)
print("%d codes, all documented" % len(codes))
