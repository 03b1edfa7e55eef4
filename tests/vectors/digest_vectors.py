#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Independent computation of Glove's digest test vectors (docs/digests.md).

Written from the byte-level description in docs/digests.md, not from the C
code, so the C unit tests (tests/unit/supervisor/test_launch.c and
test_plan.c) check the implementation against a second one. Run it and
paste the output into docs/digests.md and the C tables when a vector is
added:

    python3 tests/vectors/digest_vectors.py            # table of vectors
    python3 tests/vectors/digest_vectors.py --hex NAME # full encoding, hex

Also imported by tests/fixtures/supervisor/generate.py.
"""
import hashlib
import json
import sys

DOMAIN = "glove:launch-template:v1"

# The six fields in encoding order, with their kind.
FIELDS = [
    ("runtime_discovery", "optional string"),
    ("executable_path", "string"),
    ("executable_search_paths", "optional list"),
    ("arguments", "list"),
    ("environment", "list"),
    ("read_only_paths", "list"),
]


def u8(n):
    return bytes([n])


def u64(n):
    return n.to_bytes(8, "big")


def bytes_(s):
    b = s.encode("utf-8")
    return u64(len(b)) + b


def string_value(s):
    return u8(0x73) + bytes_(s)


def list_value(items):
    return u8(0x6C) + u64(len(items)) + b"".join(bytes_(e) for e in items)


ABSENT = u8(0x00)


def launch_encoding(launch):
    """The exact bytes hashed by runtime_launch_template_digest.

    launch is a policy launch block: no (or an empty) runtime_discovery
    means both optional fields are absent; with discovery, a missing
    executable_search_paths is an empty list."""
    discovery = bool(launch.get("runtime_discovery"))
    out = bytes_(DOMAIN)
    for name, kind in FIELDS:
        out += bytes_(name)
        if kind.startswith("optional") and not discovery:
            out += ABSENT
        elif kind.endswith("string"):
            out += string_value(launch[name])
        elif kind.startswith("optional"):
            out += list_value(launch.get(name, []))
        else:
            out += list_value(launch[name])
    return out


def launch_digest(launch):
    return hashlib.sha256(launch_encoding(launch)).hexdigest()


def canonical(value):
    """Glove's canonical JSON for ASCII-or-UTF-8 values without control
    characters other than \\b \\f \\n \\r \\t and U+0001..U+0009 style digits."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


LAUNCH_VECTORS = [
    ("pinned-minimal", {
        "executable_path": "/bin/true", "arguments": [], "environment": [], "read_only_paths": []}),
    ("pinned-spec-example", {
        "executable_path": "/usr/bin/true", "arguments": ["--version"],
        "environment": ["PATH=/usr/bin:/bin", "TERM=xterm-256color"],
        "read_only_paths": ["/opt/operator-harness/codex-runtime"]}),
    ("pinned-no-read-only", {
        "executable_path": "/usr/bin/true", "arguments": ["--version"],
        "environment": ["PATH=/usr/bin:/bin", "TERM=xterm-256color"], "read_only_paths": []}),
    ("cloudflare-os-dev", {
        "executable_path": "/opt/glove/runtime/cloudflare-os/node-v25/bin/node",
        "arguments": ["/opt/glove/runtime/cloudflare-os/closure/scripts/run-local.mjs"],
        "environment": [], "read_only_paths": ["/opt/glove/runtime/cloudflare-os/closure"]}),
    ("discovery-codex", {
        "runtime_discovery": "codex", "executable_path": "",
        "executable_search_paths": ["/opt/codex/bin", "/usr/local/bin"],
        "arguments": ["--sandbox", "danger-full-access"], "environment": ["TERM=xterm-256color"],
        "read_only_paths": ["/opt/codex/lib"]}),
    ("utf8-argument", {
        "executable_path": "/usr/bin/env", "arguments": ["--name=caf\u00e9 \u20ac"],
        "environment": ["LANG=C.UTF-8"], "read_only_paths": []}),
]

# (name, input text, canonical text); the canonical text's SHA-256 is the
# plan_content_digest of a plan with those bytes.
CANONICAL_VECTORS = [
    ("sorted-keys", '{ "b": 1, "a": [true, false, null] }', None),
    ("nested", '{"z":{"y":[1,{"b":"x","a":-2}],"x":""},"a":0}', None),
    ("unicode-raw", '{"s":"caf\\u00e9 \\u20ac \\ud83d\\ude00"}', None),
    ("escapes", '{"q":"\\"\\\\\\n\\t\\u0001/"}', None),
    ("int64-edges", '{"max":9223372036854775807,"min":-9223372036854775808}', None),
]


def canonical_vectors():
    out = []
    for name, text, _ in CANONICAL_VECTORS:
        canon = canonical(json.loads(text))
        out.append((name, text, canon.decode("utf-8"), hashlib.sha256(canon).hexdigest()))
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "--hex":
        for name, launch in LAUNCH_VECTORS:
            if name == argv[2]:
                print(launch_encoding(launch).hex())
                return 0
        print("unknown vector", file=sys.stderr)
        return 1
    print("# runtime_launch_template_digest")
    for name, launch in LAUNCH_VECTORS:
        print(f"{name} {launch_digest(launch)} ({len(launch_encoding(launch))} bytes encoded)")
    print("# canonical JSON: name, canonical bytes, SHA-256")
    for name, _text, canon, digest in canonical_vectors():
        print(f"{name} {canon} {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
