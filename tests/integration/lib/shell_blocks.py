#!/usr/bin/env python3
"""The shell blocks of Markdown pages, as readme.bats runs them.

    shell_blocks.py [--dedicated TEXT]... OUTDIR PAGE...

For each PAGE, writes every ```sh, ```bash and ```console block (for
console: the lines after "$ ", without it) to OUTDIR/NAME/N.sh, NAME being
the page's file name and N counting from 1 in page order, and beside it
OUTDIR/NAME/N.meta, one line of three tab-separated fields: the line of the
block's opening fence in PAGE (1-based), the last heading above it, and
what to do with it:

    run                 run it as pasted
    not-run: REASON     the line right before its opening fence is
                        <!-- not-run: REASON -->
    dedicated: TEXT     it is the first shell block after a line holding
                        TEXT (a --dedicated argument): a test of its own
                        runs it and checks what it prints

OUTDIR/NAME must not exist; it is made. Prints "NAME N" for each page, N its
number of shell blocks (0 for a page without any). Every PAGE is read before
anything is written.

Exit 1, with "shell_blocks.py: NAME line L: WHAT" on stderr and nothing
written, when a not-run marker is not right before a shell block's fence (a
marker before a block of another language, or followed by a non-empty
line), when a marker has no reason, when more than two blocks of a page are
marked not-run (keep that list short), or when a --dedicated TEXT is not
followed by a shell block in a page that holds it; a page of PAGE that
holds no TEXT of a --dedicated argument has no dedicated block. Exit 2 on
usage errors (no PAGE, two pages of one name).
"""
import os
import re
import sys

SHELL = ("sh", "bash", "console")
MAX_NOT_RUN = 2


def fail(page, line, what):
    sys.stderr.write("shell_blocks.py: %s line %d: %s\n" % (page, line, what))
    sys.exit(1)


def blocks(page, text, dedicated):
    """Yields (line, heading, disposition, body) for each shell block."""
    lines = text.split("\n")
    heading, notrun, notrun_line = "", None, 0
    waiting = {}  # dedicated TEXT -> line it was seen on, until its block
    done = set()
    n_notrun = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"```(\S*)\s*$", line)
        if m:
            lang, start, body = m.group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang in SHELL:
                if lang == "console":
                    body = [l[2:] for l in body if l.startswith("$ ")]
                what = "run"
                if notrun is not None:
                    what = "not-run: " + notrun
                    n_notrun += 1
                    if n_notrun > MAX_NOT_RUN:
                        fail(page, notrun_line, "more than %d blocks are marked not-run: "
                             "make them run, or keep that list short" % MAX_NOT_RUN)
                for t in list(waiting):
                    what = "dedicated: " + t
                    del waiting[t]
                    done.add(t)
                yield start, heading, what, body
            elif notrun is not None:
                fail(page, notrun_line, "a not-run marker before a %s block, which is never run"
                     % (lang or "plain"))
            notrun = None
        else:
            m = re.match(r"\s*<!--\s*not-run:(.*?)-->\s*$", line)
            if m:
                if not m.group(1).strip():
                    fail(page, i + 1, "a not-run marker without its reason")
                notrun, notrun_line = m.group(1).strip(), i + 1
            elif line.strip():
                if notrun is not None:
                    fail(page, notrun_line, "a not-run marker must be on the line right before "
                         "its block's opening fence")
                if line.startswith("#"):
                    heading = line.strip()
                for t in dedicated:
                    if t in line and t not in waiting and t not in done:
                        waiting[t] = i + 1
        i += 1
    for t, at in waiting.items():
        fail(page, at, "no shell block follows '%s', which a test of its own runs" % t)


def usage():
    sys.stderr.write("usage: shell_blocks.py [--dedicated TEXT]... OUTDIR PAGE...\n")
    sys.exit(2)


def main(argv):
    args, dedicated = argv[1:], []
    while args and args[0] == "--dedicated":
        if len(args) < 2:
            usage()
        dedicated.append(args[1])
        args = args[2:]
    if len(args) < 2:
        usage()
    out, pages = args[0], args[1:]
    names = [os.path.basename(p) for p in pages]
    if len(set(names)) != len(names):
        usage()
    found = []
    for page, name in zip(pages, names):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        present = [t for t in dedicated if t in text]
        found.append(list(blocks(name, text, present)))
    for name, page_blocks in zip(names, found):
        d = os.path.join(out, name)
        os.makedirs(d)
        for n, (line, heading, what, body) in enumerate(page_blocks, 1):
            with open(os.path.join(d, "%d.sh" % n), "w") as f:
                f.write("\n".join(body) + "\n")
            with open(os.path.join(d, "%d.meta" % n), "w") as f:
                f.write("%d\t%s\t%s\n" % (line, heading.replace("\t", " "), what.replace("\t", " ")))
        print("%s %d" % (name, len(page_blocks)))


if __name__ == "__main__":
    main(sys.argv)
