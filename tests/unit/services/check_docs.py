#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every stable code of local services and guest channels is documented.

Collects the "services.*", "channel.*" and "adapters.*" string literals of
src/services, src/channel, src/adapters, src/runtime/runtime_services.c,
src/keeper/keeper_services.c and the capabilities code, and checks that each
appears, in backquotes, in docs/local-services.md or docs/guest-channels.md.
Run by meson as services/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
paths = []
for d in ("services", "channel", os.path.join("adapters", "sage")):
    paths += glob.glob(os.path.join(root, "src", d, "*.c"))
paths += [os.path.join(root, "src", "runtime", "runtime_services.c"),
          os.path.join(root, "src", "keeper", "keeper_services.c"),
          os.path.join(root, "src", "runtime", "runtime.c"), os.path.join(root, "src", "server", "methods.c")]
codes = set()
for path in paths:
    text = open(path, encoding="utf-8").read()
    codes.update(re.findall(r'"((?:services|channel|adapters)\.[a-z0-9_]+)"', text))
doc = "".join(open(os.path.join(root, "docs", d), encoding="utf-8").read()
              for d in ("local-services.md", "guest-channels.md"))
missing = sorted(c for c in codes if "`%s`" % c not in doc)
if missing:
    print("undocumented codes:", " ".join(missing))
    sys.exit(1)
print("%d codes, all documented" % len(codes))
