#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every stable code of src/refinement is documented and every fixture
refusal has its fixture file.

Collects the "refinement.*" and "plan.refinement_*" string literals (and
the FX("word") shorthand for "refinement.fixture_word") from
src/refinement/*.c; each must appear as `code` in docs/refinement.md, and
each refinement.fixture_* code but refinement.fixture_too_large (a 64 KiB
file, made by test_fixture.c instead) must have a line in
tests/fixtures/refinement/bad/MANIFEST. Run by meson as
refinement/codes-documented.
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
codes = set()
for path in glob.glob(os.path.join(root, "src", "refinement", "*.c")):
    text = open(path, encoding="utf-8").read()
    codes.update(re.findall(r'"((?:refinement\.|plan\.refinement_)[a-z0-9_]+)"', text))
    codes.update("refinement.fixture_" + w for w in re.findall(r'\bFX\("([a-z0-9_]+)"\)', text))
codes = {c for c in codes if not c.endswith("_")}
doc = open(os.path.join(root, "docs", "refinement.md"), encoding="utf-8").read()
missing = sorted(c for c in codes if "`%s`" % c not in doc)
manifest = open(os.path.join(root, "tests", "fixtures", "refinement", "bad", "MANIFEST"), encoding="utf-8").read()
listed = set(re.findall(r"^\S+ (\S+) ", manifest, re.M))
untested = sorted(c for c in codes if c.startswith("refinement.fixture_") and c not in listed
                  and c != "refinement.fixture_too_large")
if missing:
    print("undocumented codes in docs/refinement.md:", " ".join(missing))
if untested:
    print("fixture codes without a file in tests/fixtures/refinement/bad/MANIFEST:", " ".join(untested))
if missing or untested:
    sys.exit(1)
print("%d codes, all documented; every fixture refusal has its file" % len(codes))
