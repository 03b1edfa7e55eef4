#!/usr/bin/env python3
"""The shell blocks of a Markdown page, as readme.bats runs them.

    shell_blocks.py PAGE OUTDIR [--dedicated TEXT]...

Writes every ```sh, ```bash and ```console block of PAGE (for console: the
lines after "$ ", without it) to OUTDIR/N.sh, N counting from 1 in page
order, and beside it OUTDIR/N.meta, one line of three tab-separated fields:
the line of the block's opening fence in PAGE (1-based), the last heading above it,
and what to do with it:

    run                 run it as pasted
    not-run: REASON     the line right before its opening fence is
                        <!-- not-run: REASON -->
    dedicated: TEXT     it is the first shell block after a line holding
                        TEXT (a --dedicated argument): a test of its own
                        runs it and checks what it prints

OUTDIR must not exist; it is made. Prints the number of blocks on stdout.

Exit 1, with "shell_blocks.py: PAGE line L: WHAT" on stderr and nothing
written beyond what came before, when a not-run marker is not right before
a shell block's fence (a marker before a block of another language, or
followed by a non-empty line), when a marker has no reason, when more than
two blocks of the page are marked not-run (keep that list short), or when a
--dedicated TEXT is not followed by a shell block. Exit 2 on usage errors.
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


def main(argv):
    if len(argv) < 3 or (len(argv) - 3) % 2:
        sys.stderr.write("usage: shell_blocks.py PAGE OUTDIR [--dedicated TEXT]...\n")
        sys.exit(2)
    page, out = argv[1], argv[2]
    dedicated = []
    for k in range(3, len(argv), 2):
        if argv[k] != "--dedicated":
            sys.stderr.write("usage: shell_blocks.py PAGE OUTDIR [--dedicated TEXT]...\n")
            sys.exit(2)
        dedicated.append(argv[k + 1])
    with open(page, encoding="utf-8") as f:
        text = f.read()
    found = list(blocks(os.path.basename(page), text, dedicated))
    os.makedirs(out)
    for n, (line, heading, what, body) in enumerate(found, 1):
        with open(os.path.join(out, "%d.sh" % n), "w") as f:
            f.write("\n".join(body) + "\n")
        with open(os.path.join(out, "%d.meta" % n), "w") as f:
            f.write("%d\t%s\t%s\n" % (line, heading.replace("\t", " "), what.replace("\t", " ")))
    print(len(found))


if __name__ == "__main__":
    main(sys.argv)
