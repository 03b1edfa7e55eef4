#!/usr/bin/python3
"""The layering check (part of make check).

    scripts/layering.py [ROOT]      check the tree at ROOT (default: the checkout)
    scripts/layering.py --self-test prove the check fails on a violation

Dependencies point downward (DESIGN.md, "Modules"):

    cli -> run / server / ctl / host -> runtime -> keeper / apply / adapters
        -> session / kernel / supervisor / channel
        -> mcp / policy / audit / container / net / protocol / store
           / remote / remote_executor / refinement / services -> base

A file of module M (src/M/..., include/glove/M/...) may include headers of
its own module and of modules on a lower layer, never of a module above it
or beside it. Includes are read from every .c and .h file: "glove/X/..."
and <glove/X/...> name module X, and a relative "../X/..." does too. A
src/M/meson.build that adds another module's source directory to its
include path (include_directories('../X')) counts as including X's
internals. A module that is in no layer is an error, so a new module must be
placed before it builds.

Exceptions are written below with their reason. Each violation prints one
line `FILE:LINE: module M includes X (layer a includes layer b): HEADER`;
exit 1 when there is any, 0 otherwise.
"""
import os
import re
import sys
import tempfile

LAYERS = [
    ["base"],
    # remote: gloved's construction-only remote backend (the file, the SSH
    # artifacts, the runtime object); base only.
    # remote_executor: glove-remote-executor's module; base only (it runs on
    # a remote host without the rest of Glove).
    # refinement: refinement-eval-v1 (fixture, plan binding, context digests,
    # evaluator); base only, so that supervisor (plan validation) and
    # runtime (the PTY drain, receipts) can both call it.
    # services: the local-service proxy (configuration, endpoint pinning,
    # framing, audit, the proxy workers); base only, so that supervisor (the
    # grant check), keeper (the proxy) and runtime (the binding) all use it.
    ["mcp", "policy", "audit", "container", "net", "protocol", "store", "remote", "remote_executor", "refinement",
     "services"],
    # channel: the guest-channel transport, the durable admission registry
    # and the observation server; on store.
    ["session", "kernel", "supervisor", "channel"],
    # apply: retained-change inspection and apply (reservation journal, trust
    # policy, candidate copy, exchange, recovery); on supervisor and store.
    # adapters: guest-channel schema adapters (adapters/sage), registering
    # their schemas in channel's admission table.
    ["keeper", "apply", "adapters"],
    ["runtime"],
    ["run", "server", "ctl", "host"],
    ["cli"],
]
LAYER = {m: i for i, ms in enumerate(LAYERS) for m in ms}

# (module, included module): why it is allowed although they share a layer.
EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
MESON_INC = re.compile(r"include_directories\(([^)]*)\)")


def module_of_include(header):
    m = re.match(r"(?:\.\./)*(?:glove/)?([a-z_]+)/", header)
    if not m:
        return None
    if header.startswith("glove/") or header.startswith("../"):
        return m.group(1)
    return None


def allowed(mod, inc):
    if inc == mod:
        return True
    if (mod, inc) in EXCEPTIONS:
        return True
    return LAYER[inc] < LAYER[mod]


def check(root):
    problems = []

    def report(path, line, mod, inc, what):
        rel = os.path.relpath(path, root)
        if inc not in LAYER:
            problems.append("%s:%d: module %s includes %s, which is in no layer of scripts/layering.py: %s"
                            % (rel, line, mod, inc, what))
        elif not allowed(mod, inc):
            rel_word = "beside" if LAYER[inc] == LAYER[mod] else "above"
            problems.append("%s:%d: module %s includes %s, a module %s it (layer %d includes layer %d): %s"
                            % (rel, line, mod, inc, rel_word, LAYER[mod], LAYER[inc], what))

    bases = [(os.path.join(root, "src"), False), (os.path.join(root, "include", "glove"), True)]
    modules = set()
    for base, _ in bases:
        if os.path.isdir(base):
            modules.update(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    for mod in sorted(modules):
        if mod not in LAYER:
            problems.append("%s: module %s is in no layer of scripts/layering.py (place it there)" % (mod, mod))
    for base, _ in bases:
        if not os.path.isdir(base):
            continue
        for mod in sorted(os.listdir(base)):
            top = os.path.join(base, mod)
            if not os.path.isdir(top) or mod not in LAYER:
                continue
            for dirpath, _, files in os.walk(top):
                for f in sorted(files):
                    path = os.path.join(dirpath, f)
                    if f.endswith((".c", ".h")):
                        with open(path, encoding="utf-8", errors="replace") as fh:
                            for n, text in enumerate(fh, 1):
                                m = INCLUDE.match(text)
                                if not m:
                                    continue
                                inc = module_of_include(m.group(1))
                                if inc:
                                    report(path, n, mod, inc, m.group(1))
                    elif f == "meson.build":
                        with open(path, encoding="utf-8") as fh:
                            for n, text in enumerate(fh, 1):
                                for m in MESON_INC.finditer(text):
                                    for d in re.findall(r"'\.\./([a-z_]+)'", m.group(1)):
                                        report(path, n, mod, d, "include_directories('../%s')" % d)
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as t:
        def write(rel, text):
            p = os.path.join(t, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as fh:
                fh.write(text)
        write("include/glove/base/x.h", "#include <stdio.h>\n")
        write("include/glove/session/s.h", '#include "glove/base/x.h"\n')
        write("src/session/s.c", '#include "glove/session/s.h"\n#include "internal.h"\n')
        write("src/host/h.c", '#include "glove/store/dirs.h"\n')
        ok = check(t)
        if ok:
            print("layering self-test: a clean tree was refused: %s" % ok)
            return 1
        cases = {
            "src/supervisor/p.c": '#include "glove/session/session.h"\n',  # beside
            "src/server/v.c": '#include "glove/ctl/ctl.h"\n',  # beside
            "src/store/w.c": '#include "glove/runtime/runtime.h"\n',  # above
            "src/container/c.c": "#include <glove/run/x.h>\n",  # above
            "src/net/n.c": '#include "../keeper/keeper_internal.h"\n',  # relative, above
            "src/base/meson.build": "lib = static_library('x', include_directories: include_directories('../mcp'))\n",
            "src/newmod/a.c": '#include "glove/base/x.h"\n',  # in no layer
        }
        for rel, text in cases.items():
            write(rel, text)
            got = check(t)
            os.remove(os.path.join(t, rel))
            if rel.startswith("src/newmod"):
                os.rmdir(os.path.join(t, "src/newmod"))
            if not got:
                print("layering self-test: %s (%s) was not refused" % (rel, text.strip()))
                return 1
        print("layering self-test: a clean tree passes, %d kinds of violation are refused" % len(cases))
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("layering: %d include%s against the direction of DESIGN.md (fix them, or write the exception and "
              "its reason into scripts/layering.py)" % (len(problems), "" if len(problems) == 1 else "s"))
        return 1
    print("layering: every include of src/ and include/ points down the module layers (%s)"
          % ("exceptions: " + ", ".join("%s -> %s" % k for k in sorted(EXCEPTIONS)) if EXCEPTIONS else "no exception"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
