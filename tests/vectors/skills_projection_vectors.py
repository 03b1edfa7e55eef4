#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Independent computation of the skills_projection_digest vectors
(docs/digests.md, "skills_projection_digest").

Written from the byte-level description in docs/digests.md, not from the C
code; tests/unit/supervisor/test_bundle.c checks glove_bundle_skills_digest
against these values. Run it and paste the output when a vector is added:

    python3 tests/vectors/skills_projection_vectors.py
"""
import hashlib

DOMAIN = "glove.skills-projection"


def str_(s):
    b = s.encode("utf-8")
    return len(b).to_bytes(4, "big") + b


def skills_projection_digest(skills_dir, skills):
    """skills: {key: SKILL.md content}; sorted here by key bytes."""
    e = str_(DOMAIN) + str_(skills_dir) + len(skills).to_bytes(4, "big")
    for key in sorted(skills, key=lambda k: k.encode("utf-8")):
        content_digest = hashlib.sha256(skills[key].encode("utf-8")).hexdigest()
        e += str_(key) + str_("%s/%s/SKILL.md" % (skills_dir, key)) + str_(content_digest)
    return hashlib.sha256(e).hexdigest()


VECTORS = [
    ("no adapter", "", {}),
    ("codex, no skills", "/home/agent/.codex/skills", {}),
    ("codex, two skills", "/home/agent/.codex/skills",
     {"review": "# Review\nRead the diff twice.\n", "lint": "lint everything"}),
]

if __name__ == "__main__":
    for name, d, skills in VECTORS:
        print("%-20s %s" % (name, skills_projection_digest(d, skills)))
