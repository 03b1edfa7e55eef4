#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every stable code the supervisor can report is documented.

Collects the "policy.*", "plan.*", "bundle.*", "manifest.*" and "apply.*"
string literals (and the SV_CODE /
P() shorthands) from src/supervisor/*.c and checks that each appears in
docs/session-policy.md. Run by meson as supervisor/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
codes = set()
for path in glob.glob(os.path.join(root, "src", "supervisor", "*.c")):
    text = open(path, encoding="utf-8").read()
    codes.update(re.findall(r'"((?:policy|plan|bundle|manifest|apply)\.[a-z0-9_]+)"', text))
    codes.update(re.findall(r'"(launch\.bundles_unavailable)"', text))
    for x in re.findall(r'SV_CODE\(c, "([a-z0-9_]+)"\)', text):
        codes.update({"policy." + x, "plan." + x})
    for x in re.findall(r'\bP\("([a-z0-9_]+)"\)', text):
        codes.add("policy." + x)
doc = open(os.path.join(root, "docs", "session-policy.md"), encoding="utf-8").read()
missing = sorted(c for c in codes if "`%s`" % c not in doc)
if missing:
    print("undocumented codes in docs/session-policy.md:", " ".join(missing))
    sys.exit(1)
print("%d codes, all documented" % len(codes))
