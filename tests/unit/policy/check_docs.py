#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The stable codes of the policy module and docs/policy.md agree.

Every "policy.*" string literal in src/policy/*.c appears in the "Error
codes" section of docs/policy.md, and every code listed there is one the
module can report. Run by meson as policy/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
codes = set()
for path in glob.glob(os.path.join(root, "src", "policy", "*.c")):
    codes.update(re.findall(r'"(policy\.[a-z0-9_]+)"', open(path, encoding="utf-8").read()))
doc = open(os.path.join(root, "docs", "policy.md"), encoding="utf-8").read()
section = doc.split("## Error codes", 1)[1].split("\n## ", 1)[0]
documented = set(re.findall(r"^\| `(policy\.[a-z0-9_]+)` \|", section, re.M))
missing = sorted(codes - documented)
extra = sorted(documented - codes)
if missing:
    print("codes missing from docs/policy.md:", " ".join(missing))
if extra:
    print("documented codes the module never reports:", " ".join(extra))
if missing or extra:
    sys.exit(1)
print("%d codes, all documented" % len(codes))
