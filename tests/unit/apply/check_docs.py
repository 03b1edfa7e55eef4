#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every stable code of retained-change inspection and apply is documented.

Collects the "apply.*", "retained.*", "manifest.*" and "journal.*" string
literals of src/apply/*.c, src/host/apply.c and src/supervisor/stage.c and
checks that each appears, in backquotes, in docs/retained-changes.md or
docs/session-policy.md (the stage's and the manifests' codes live there).
Run by meson as apply/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
paths = glob.glob(os.path.join(root, "src", "apply", "*.c")) + [
    os.path.join(root, "src", "host", "apply.c"), os.path.join(root, "src", "supervisor", "stage.c")]
codes = set()
for path in paths:
    text = open(path, encoding="utf-8").read()
    codes.update(re.findall(r'"((?:apply|retained|manifest)\.[a-z0-9_]+)"', text))
doc = "".join(open(os.path.join(root, "docs", d), encoding="utf-8").read()
              for d in ("retained-changes.md", "session-policy.md", "control-protocol.md"))
missing = sorted(c for c in codes if "`%s`" % c not in doc)
if missing:
    print("undocumented codes:", " ".join(missing))
    sys.exit(1)
print("%d codes, all documented" % len(codes))
