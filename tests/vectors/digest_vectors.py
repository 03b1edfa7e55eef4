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

DOMAIN = "glove.runtime-launch-template"
VERSION_PINNED = 1
VERSION_DISCOVERY = 2


def u8(n):
    return bytes([n])


def u32(n):
    return n.to_bytes(4, "big")


def str_(s):
    b = s.encode("utf-8")
    return u32(len(b)) + b


def list_(items):
    return u32(len(items)) + b"".join(str_(e) for e in items)


def launch_encoding(launch, stop_after_environment=False):
    """The exact bytes hashed by runtime_launch_template_digest.

    launch is a policy launch block: no (or an empty) runtime_discovery is
    version 1 (pinned); with discovery (version 2) runtime_discovery and
    executable_search_paths follow the version byte, a missing search path
    list being an empty one. stop_after_environment reproduces the spec's
    example digest, written before read_only_paths was committed."""
    discovery = launch.get("runtime_discovery") or ""
    out = str_(DOMAIN)
    if discovery:
        out += u8(VERSION_DISCOVERY) + str_(discovery) + list_(launch.get("executable_search_paths", []))
    else:
        out += u8(VERSION_PINNED)
    out += str_(launch["executable_path"]) + list_(launch["arguments"]) + list_(launch["environment"])
    if not stop_after_environment:
        out += list_(launch["read_only_paths"])
    return out


def launch_digest(launch, stop_after_environment=False):
    return hashlib.sha256(launch_encoding(launch, stop_after_environment)).hexdigest()


def canonical(value):
    """Glove's canonical JSON (docs/digests.md, "Canonical form"): Python
    writes the \\u00xx escapes of control characters in lower case, as Glove does."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


SPEC_EXAMPLE = {
    "executable_path": "/usr/bin/true", "arguments": ["--version"],
    "environment": ["PATH=/usr/bin:/bin", "TERM=xterm-256color"],
    "read_only_paths": ["/opt/operator-harness/codex-runtime"]}

LAUNCH_VECTORS = [
    ("pinned-minimal", {
        "executable_path": "/bin/true", "arguments": [], "environment": [], "read_only_paths": []}),
    ("pinned-spec-example", SPEC_EXAMPLE),
    ("pinned-no-read-only", dict(SPEC_EXAMPLE, read_only_paths=[])),
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

# The issue's three vectors (docs/digests.md, "The spec's example digest").
ISSUE_VECTORS = [
    ("spec-example-without-read-only-list", launch_digest(SPEC_EXAMPLE, stop_after_environment=True),
     "05a49649e7973f6f8d6b119c9d525472517e6021fb38f8b191e0b40c8c4741d0"),
    ("pinned-no-read-only", launch_digest(dict(SPEC_EXAMPLE, read_only_paths=[])),
     "0129a3a97cacbef9bd8a2df44ea3b1e01ae8dad706cbe0c27c2237881b5107e7"),
    ("pinned-spec-example", launch_digest(SPEC_EXAMPLE),
     "e66c0652fedc80fcdfe875761036053f973708ad72207e388c07de41553c4e33"),
]

# (name, input text, canonical text); the canonical text's SHA-256 is the
# plan_content_digest of a plan with those bytes.
CANONICAL_VECTORS = [
    ("sorted-keys", '{ "b": 1, "a": [true, false, null] }', None),
    ("nested", '{"z":{"y":[1,{"b":"x","a":-2}],"x":""},"a":0}', None),
    ("unicode-raw", '{"s":"caf\\u00e9 \\u20ac \\ud83d\\ude00"}', None),
    ("escapes", '{"q":"\\"\\\\\\n\\t\\u0001/"}', None),
    ("escapes-hex", '{"e":"\\u001B[0m\\u001f"}', None),
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
    for name, got, want in ISSUE_VECTORS:
        if got != want:
            print(f"issue vector {name}: got {got}, want {want}", file=sys.stderr)
            return 1
    print("# runtime_launch_template_digest")
    for name, launch in LAUNCH_VECTORS:
        print(f"{name} {launch_digest(launch)} ({len(launch_encoding(launch))} bytes encoded)")
    print(f"spec-example-without-read-only-list {ISSUE_VECTORS[0][1]} "
          f"({len(launch_encoding(SPEC_EXAMPLE, True))} bytes encoded; not a launch digest)")
    print("# canonical JSON: name, canonical bytes, SHA-256")
    for name, _text, canon, digest in canonical_vectors():
        print(f"{name} {canon} {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
