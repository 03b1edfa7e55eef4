#!/usr/bin/python3
"""A stand-in for an agent, for the README's glove exec quickstart.

    agent.py --task FILE --out DIR

Reads its task from FILE (a read-only grant), looks at its working directory
(the workspace), says whether OPENAI_API_KEY reached it (never its value) and
what it cannot see, and writes its answer to DIR/answer.txt (a read-write
grant). Exits 0 when it could do all of that.
"""
import os
import sys


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "--task" or sys.argv[3] != "--out":
        sys.exit(__doc__)
    task = open(sys.argv[2]).read().strip()
    answer = os.path.join(sys.argv[4], "answer.txt")
    print("task:", task.splitlines()[0] if task else "(empty)")
    print("workspace", os.getcwd() + ":", " ".join(sorted(os.listdir("."))))
    print("OPENAI_API_KEY:", "set" if os.environ.get("OPENAI_API_KEY") else "not set")
    for path in ("/root", "/etc/shadow", os.path.expanduser("~/.ssh")):
        print(path + ":", "visible" if os.path.exists(path) and os.access(path, os.R_OK) else "not visible")
    with open(answer, "w") as f:
        f.write(("done: %s\n" % task.splitlines()[0]) if task else "done\n")
    print("wrote", answer)


if __name__ == "__main__":
    main()
