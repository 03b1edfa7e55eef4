#!/usr/bin/env bats
# Descriptors: only 0, 1 and 2 reach the agent, whatever glove inherited.

load helpers

@test "descriptors: a descriptor the parent leaked (exec 7</etc/hostname) is not inherited" {
        exec 7</etc/hostname
        # Positive control: this shell (and so glove) really holds fd 7.
        [ -e /proc/self/fd/7 ] || fail "fd 7 is not open in the test shell"
        gx -- /bin/sh -c 'ls /proc/self/fd | tr "\n" " "; echo; test -e /proc/self/fd/7 && echo fd7-present; cat <&7 && echo read-fd7'
        exec 7<&-
        expect_output "0 1 2 3 "
        expect_no_text fd7-present
        expect_no_text read-fd7
}

@test "descriptors: ls /proc/self/fd shows 0 1 2 and its own, with many descriptors leaked" {
        local log=$BATS_TEST_TMPDIR/leak.log
        : >"$log"
        exec 8>>"$log" 9</ 200</etc/passwd
        gx -- /bin/ls /proc/self/fd
        exec 8>&- 9<&- 200<&-
        expect_status 0
        expect_output "$(printf '0\n1\n2\n3')"
}

@test "descriptors: a leaked writable descriptor cannot be written, a leaked directory cannot be escaped through" {
        local log=$BATS_TEST_TMPDIR/leak.log
        : >"$log"
        exec 8>>"$log" 9</
        gx -- /bin/sh -c 'echo escaped >&8; ls /proc/self/fd/9/ 2>&1 | head -3; cd /proc/self/fd/9 2>/dev/null && ls'
        exec 8>&- 9<&-
        [ ! -s "$log" ] || fail "the agent wrote through a leaked descriptor"
        expect_no_line etc
        expect_no_line root
}

@test "descriptors: descriptors passed by a launcher (socket, pipe, file) are closed for the agent" {
        run --separate-stderr "$PY" - "$GLOVE" "$PY" <<'EOF'
import os, socket, subprocess, sys
glove, py = sys.argv[1], sys.argv[2]
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
r, w = os.pipe()
f = os.open("/etc/passwd", os.O_RDONLY)
fds = [srv.fileno(), r, w, f]
for fd in fds:
    os.set_inheritable(fd, True)
p = subprocess.run([glove, "exec", "--", py, "-c",
                    "import os; print(sorted(int(x) for x in os.listdir('/proc/self/fd')))"],
                   pass_fds=fds, capture_output=True, text=True, timeout=30)
print("passed", sorted(fds))
print(p.stdout.strip())
sys.stderr.write(p.stderr)
sys.exit(p.returncode)
EOF
        expect_status 0
        # python's listdir holds one descriptor of its own (3).
        [ "${lines[1]}" = "[0, 1, 2, 3]" ] || fail "only 0 1 2 may reach the agent"
}

@test "descriptors: a file given read-only as stdin cannot be reopened for writing (/proc/self/fd/0)" {
        local f=$BATS_TEST_TMPDIR/task.txt
        echo "original task" >"$f"
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec -- /bin/sh -c \
                'read -r line; echo "read: $line"; echo pwned 2>/dev/null >/proc/self/fd/0 && echo reopened-for-write' <"$f"
        expect_status 0
        expect_line "read: original task"
        # The file reaches the agent through a pipe: reopening /proc/self/fd/0
        # for writing gives the pipe's other end, never the file.
        [ "$(cat "$f")" = "original task" ] || fail "the agent rewrote the stdin file outside its grants: $(cat "$f")"
}

@test "descriptors: a file given append-only as stdout cannot be reopened to read or truncate it (/proc/self/fd/1)" {
        local f=$BATS_TEST_TMPDIR/session.log
        echo "earlier secret record" >"$f"
        local a=$BATS_TEST_TMPDIR/agent
        mkdir -p "$a"
        cat >"$a/reopen.py" <<'EOF'
import os, sys
try:
    # stdout may be a pipe to Glove: reopening it then reads at most the
    # agent's own output (non-blocking, so an empty pipe cannot hang the test).
    fd = os.open("/proc/self/fd/1", os.O_RDONLY | os.O_NONBLOCK)
    sys.stderr.write(os.read(fd, 4096).decode())
except OSError as e:
    sys.stderr.write("reopen for reading: %s\n" % e.strerror)
try:
    os.close(os.open("/proc/self/fd/1", os.O_WRONLY | os.O_TRUNC))
except OSError as e:
    sys.stderr.write("reopen for truncating: %s\n" % e.strerror)
print("appended", flush=True)
EOF
        run --separate-stderr timeout --foreground 30 bash -c '"$1" exec --read "$4" -- "$2" "$4/reopen.py" >>"$3"' \
                _ "$GLOVE" "$PY" "$f" "$a"
        expect_status 0
        [[ "${stderr-}" != *"earlier secret record"* ]] || fail "the agent read earlier content of its append-only stdout file"
        grep -qx "earlier secret record" "$f" || fail "the agent truncated its append-only stdout file: $(cat "$f")"
        grep -qx appended "$f" || fail "positive control: the agent's output must be appended"
}

@test "descriptors: a file given as stderr cannot be reopened to read its earlier content (/proc/self/fd/2)" {
        local f=$BATS_TEST_TMPDIR/errors.log
        echo "earlier secret error" >"$f"
        run --separate-stderr timeout --foreground 30 bash -c '"$1" exec -- "$2" -c "$3" 2>>"$4"' _ "$GLOVE" "$PY" '
import os
try:
    fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK)
    print("read:", os.read(fd, 4096).decode().strip())
except OSError as e:
    print("reopen for reading:", e.strerror)' "$f"
        expect_status 0
        expect_no_text "earlier secret error"
        grep -qx "earlier secret error" "$f" || fail "the stderr file lost its earlier content"
}
