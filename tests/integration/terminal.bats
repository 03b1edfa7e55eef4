#!/usr/bin/env bats
# Terminal handling of `glove exec` (issue 4, "Terminal"): on a terminal (or
# with --tty) the agent gets its own PTY whose master Glove keeps; Glove's
# terminal is put in raw mode and restored on every exit path; the window
# size is copied at start and on SIGWINCH; output is relayed promptly,
# flushed before Glove exits, and counted as with pipes.
#
# Glove runs on a PTY made by a small harness (ptyrun, written in setup_file),
# which plays the user's terminal emulator: it sets the window size, types
# input when a marker appears, resizes, signals Glove, and compares the
# terminal modes (tcgetattr, as `stty -g`) of its PTY before and after.

load helpers

setup_file() {
        cat >"$BATS_FILE_TMPDIR/ptyrun.py" <<'EOF'
"""ptyrun.py [OPTIONS] -- PROGRAM [ARG...]: run PROGRAM as the session leader
of a new PTY (or on pipes with --pipes) and print one JSON object:
  status     PROGRAM's exit code (negative: killed by that signal), or "timeout"
  output     everything read from the PTY master (or the pipe)
  restored   the terminal modes after PROGRAM ended equal those before
  snap_raw   at --snap MARKER: ICANON, ECHO and ISIG were off (raw mode)
  before, after, snap   the modes as `stty -g` would print them
  seen       seconds from start at which each marker was first seen
Options:
  --size RxC            window size at start (24x80)
  --odd                 start from unusual modes (no IXON, no ECHOCTL,
                        ERASE ^H), so that "restored" cannot be a default
  --send MARKER TEXT    type TEXT once MARKER has been output (repeatable)
  --resize MARKER RxC   once MARKER has been output, resize the PTY (the
                        kernel signals the foreground group) and send
                        SIGWINCH to PROGRAM
  --signal MARKER SIG   once MARKER has been output, send SIG to PROGRAM
  --snap MARKER         record the modes once MARKER has been output
  --pipes               stdin, stdout and stderr are pipes, no terminal
  --timeout S           kill PROGRAM after S seconds (20)
"""
import fcntl, json, os, select, signal, struct, sys, termios, time

def stty_g(a):
    return ":".join("%x" % v for v in a[:4]) + ":" + ":".join(
        "%x" % (c if isinstance(c, int) else c[0]) for c in a[6])

def main():
    a = sys.argv[1:]
    rows, cols, odd, pipes, timeout = 24, 80, False, False, 20.0
    actions = []  # [marker, kind, arg]
    while a and a[0] != "--":
        k = a.pop(0)
        if k == "--size": rows, cols = map(int, a.pop(0).split("x"))
        elif k == "--odd": odd = True
        elif k == "--pipes": pipes = True
        elif k == "--timeout": timeout = float(a.pop(0))
        elif k == "--send":
            m = a.pop(0); actions.append([m.encode(), "send", a.pop(0).encode()])
        elif k == "--resize":
            m = a.pop(0); actions.append([m.encode(), "resize", tuple(map(int, a.pop(0).split("x")))])
        elif k == "--signal":
            m = a.pop(0); actions.append([m.encode(), "signal", getattr(signal, "SIG" + a.pop(0))])
        elif k == "--snap": actions.append([a.pop(0).encode(), "snap", None])
        else: sys.exit("ptyrun: unknown option " + k)
    cmd = a[1:]
    if pipes:
        in_r, in_w = os.pipe(); out_r, out_w = os.pipe()
        m, s = out_r, None
    else:
        m, s = os.openpty()
        fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if odd:
            t = termios.tcgetattr(s)
            t[0] &= ~termios.IXON
            t[3] &= ~termios.ECHOCTL
            t[6][termios.VERASE] = b"\x08"
            termios.tcsetattr(s, termios.TCSANOW, t)
    before = termios.tcgetattr(s) if s is not None else None
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        if pipes:
            os.dup2(in_r, 0); os.dup2(out_w, 1); os.dup2(out_w, 2)
            for fd in (in_r, in_w, out_r, out_w): os.close(fd)
        else:
            os.setsid()
            fcntl.ioctl(s, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2): os.dup2(s, fd)
            os.close(m); os.close(s)
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGWINCH):
            signal.signal(sig, signal.SIG_DFL)
        os.execv(cmd[0], cmd)
    if pipes:
        os.close(in_r); os.close(out_w)
    out = b""; snap = None; seen = {}; status = None; eof = False; idle_after_exit = 0
    while True:
        if status is None:
            r, st = os.waitpid(pid, os.WNOHANG)
            if r:
                status = os.waitstatus_to_exitcode(st)
        if eof and status is not None:
            break
        r, _, _ = select.select([] if eof else [m], [], [], 0.02)
        if r:
            try:
                d = os.read(m, 65536)
            except OSError:
                d = b""
            if d:
                out += d
            else:
                eof = True
        elif status is not None:
            # The program is gone and nothing came for a while: done (the
            # harness keeps the PTY's slave open, so there is no EOF there).
            idle_after_exit += 1
            if idle_after_exit >= 10:
                break
        for act in actions:
            mk, kind, arg = act
            if kind is None or mk not in out:
                continue
            seen.setdefault(mk.decode(), round(time.monotonic() - t0, 3))
            if kind == "send":
                os.write(in_w if pipes else m, arg)
            elif kind == "resize":
                fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", arg[0], arg[1], 0, 0))
                os.kill(pid, signal.SIGWINCH)
            elif kind == "signal":
                os.kill(pid, arg)
            elif kind == "snap":
                snap = termios.tcgetattr(s)
            act[1] = None
        if status is None and time.monotonic() - t0 > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "timeout"
            break
    after = termios.tcgetattr(s) if s is not None else None
    raw = None
    if snap is not None:
        raw = not (snap[3] & (termios.ICANON | termios.ECHO | termios.ISIG))
    print(json.dumps({
        "status": status, "output": out.decode("utf-8", "replace"),
        "restored": before == after if s is not None else None,
        "snap_raw": raw, "seen": seen,
        "before": stty_g(before) if before else None,
        "after": stty_g(after) if after else None,
        "snap": stty_g(snap) if snap else None,
    }))

main()
EOF
}

# pty [HARNESS-OPTIONS] -- ARGS...: `glove exec ARGS...` on the harness's PTY.
# Sets RES (the JSON), status (Glove's exit code) and output (what the
# terminal showed, with CR LF turned into LF).
pty() {
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        RES=$(cd / && "$PY" "$BATS_FILE_TMPDIR/ptyrun.py" --timeout 20 "${opts[@]}" -- "$GLOVE" exec "$@" </dev/null)
        status=$(jq -r .status <<<"$RES")
        RAW_OUTPUT=$(jq -j .output <<<"$RES"; echo x)
        RAW_OUTPUT=${RAW_OUTPUT%x}
        output=$(jq -j '.output | gsub("\r\n"; "\n")' <<<"$RES")
        mapfile -t lines <<<"$output"
        stderr=""
}

res() { jq -r "$1" <<<"$RES"; }

show_res() { echo "--- harness: $RES" >&2; }

expect_restored() {
        [ "$(res .restored)" = true ] ||
                { show_res; fail "terminal modes not restored: before $(res .before), after $(res .after)"; }
}

expect_raw_during() {
        [ "$(res .snap_raw)" = true ] ||
                { show_res; fail "Glove's terminal was not in raw mode while the agent ran (modes $(res .snap))"; }
}

# The degraded-limits warning of an unprivileged run appears on the terminal
# too; the tests look past it.
strip_warning() {
        output=$(printf '%s\n' "$output" | grep -v '^glove: warning: limits\.degraded: ')
        mapfile -t lines <<<"$output"
}

# ------------------------------------------------------------ the PTY

@test "terminal: on a terminal the agent's stdin, stdout and stderr are a PTY with the outer window size" {
        pty --size 33x101 -- --wall-time 15000 -- /bin/sh -c '[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-ttys; stty size'
        strip_warning
        expect_status 0
        expect_line all-ttys
        expect_line "33 101"
        expect_restored
}

@test "terminal: under script(1), a size set with stty cols/rows is what the agent sees, and stty -g is the same after" {
        command -v script >/dev/null || skip "script(1) (bsdutils) is not installed"
        local cmd
        cmd=$(printf '%q ' timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec -- /bin/sh -c 'echo "inside $(stty size)"')
        run script -qec "stty cols 77 rows 19; stty -g; $cmd; echo rc=\$?; stty -g" /dev/null </dev/null
        output=${output//$'\r'/}
        mapfile -t lines <<<"$output"
        expect_line "inside 19 77"
        expect_line "rc=0"
        local g=() l
        for l in "${lines[@]}"; do [[ "$l" =~ ^[0-9a-f]+(:[0-9a-f]+)+$ ]] && g+=("$l"); done
        [ "${#g[@]}" -eq 2 ] || fail "expected two stty -g lines"
        [ "${g[0]}" = "${g[1]}" ] || fail "stty -g changed across glove: ${g[0]} -> ${g[1]}"
}

@test "terminal: a resize of the outer terminal reaches the agent (SIGWINCH, new size)" {
        # A Python agent, not a bash trap: bash 5.2 can misparse a command
        # substitution when a trap runs while it expands one (seen in CI).
        pty --size 30x90 --resize READY 41x132 -- --wall-time 15000 -- /usr/bin/python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
s = os.get_terminal_size(1)
print("start", s.lines, s.columns)
print("READY", flush=True)
if signal.sigtimedwait([signal.SIGWINCH], 5) is None:
    print("no-winch"); sys.exit(0)
s = os.get_terminal_size(1)
print("WINCH", s.lines, s.columns)'
        strip_warning
        expect_status 0
        expect_line "start 30 90"
        expect_line "WINCH 41 132"
        expect_no_line no-winch
        expect_restored
}

# ------------------------------------------------------------ modes restored

@test "terminal: Glove's terminal is raw while the agent runs and restored after it exits" {
        pty --odd --snap RUNNING -- -- /bin/sh -c 'echo RUNNING; sleep 0.3; exit 5'
        expect_status 5
        expect_raw_during
        expect_restored
}

@test "terminal: modes are restored after the agent is killed by --wall-time (having made its own terminal raw)" {
        pty --odd --snap RUNNING -- --wall-time 700 -- /bin/sh -c 'stty raw -echo; echo RUNNING; sleep 30'
        expect_status 137
        [[ "$output" == *"glove: limits.wall_time: "* ]] || fail "no wall_time breach line on the terminal"
        expect_raw_during
        expect_restored
}

@test "terminal: modes are restored after the agent is killed by --output-limit, with exactly that many bytes shown" {
        pty --odd -- --output-limit 100 -- "$PY" -c 'import os
while True: os.write(1, b"abcdefghij")'
        expect_status 137
        local shown=${RAW_OUTPUT%%glove: limits.terminal_output: *}
        shown=${shown#glove: warning: limits.degraded: *$'\r\n'}
        # The breach line starts on a line of its own: the newline Glove puts
        # before it is not the agent's output.
        shown=${shown%$'\r\n'}
        shown=${shown%$'\n'}
        [ "$shown" = "$(printf 'abcdefghij%.0s' 1 2 3 4 5 6 7 8 9 10)" ] ||
                { show_res; fail "expected exactly 100 bytes of the agent's output before the breach line"; }
        expect_restored
}

@test "terminal: modes are restored when Glove is stopped by SIGTERM (forwarded: the agent dies, 143)" {
        pty --odd --snap RUNNING --signal RUNNING TERM -- -- /bin/sh -c 'echo RUNNING; sleep 30'
        expect_status 143
        expect_raw_during
        expect_restored
}

@test "terminal: ^C typed on the terminal interrupts the agent through its own PTY; modes restored" {
        # (A program with SIGINT at its default: dash -c defers a SIGINT that
        # lands while it forks, which would make the test racy.)
        pty --odd --snap RUNNING --send RUNNING $'\x03' -- -- "$PY" -c '
import signal, time
signal.signal(signal.SIGINT, signal.SIG_DFL)
print("RUNNING", flush=True)
time.sleep(30)
print("not-interrupted")'
        expect_status 130
        expect_no_line not-interrupted
        expect_raw_during
        expect_restored
}

@test "terminal: modes are untouched when the agent cannot be started (127)" {
        pty --odd -- -- /nonexistent/agent
        expect_status 127
        expect_restored
}

# ------------------------------------------------------------ relaying

@test "terminal: a prompt without a newline is shown before the agent waits for input, and the answer reaches it" {
        pty --send 'name? ' $'bob\r' -- --wall-time 15000 -- /bin/sh -c 'printf "name? "; read x; echo "hello $x"; printf LAST'
        strip_warning
        expect_status 0
        expect_line "name? bob"
        expect_line "hello bob"
        [[ "$output" == *LAST ]] || { show_res; fail "the last bytes (no newline) are missing"; }
        expect_restored
}

@test "terminal: output is flushed before Glove exits: 1 MiB then the last bytes, all shown" {
        pty -- --wall-time 15000 -- "$PY" -c 'import os
buf = b"x" * 65536
for i in range(16):
    v = memoryview(buf)
    while v: v = v[os.write(1, v):]
os.write(1, b"LAST")'
        strip_warning
        expect_status 0
        [ "${#output}" -eq $((1024 * 1024 + 4)) ] || fail "shown ${#output} bytes, expected $((1024 * 1024 + 4))"
        [[ "$output" == *xLAST ]] || fail "the last bytes are missing"
}

@test "terminal: output is counted the same on a PTY and on pipes" {
        local sj=$BATS_TEST_TMPDIR/st.json
        pty -- --status-json "$sj" -- /bin/sh -c 'printf abcde; printf fgh >&2'
        expect_status 0
        [ "$(jq -c '[.output_bytes, .limit]' "$sj")" = '[8,null]' ] || { cat "$sj" >&2; fail "PTY: output_bytes is not 8"; }
        rm -f "$sj"
        gx --status-json "$sj" -- /bin/sh -c 'printf abcde; printf fgh >&2'
        expect_status 0
        expect_output abcde
        [ "$(jq -c '[.output_bytes, .limit]' "$sj")" = '[8,null]' ] || { cat "$sj" >&2; fail "pipes: output_bytes is not 8"; }
}

# ------------------------------------------------------------ without a terminal

@test "terminal: without a terminal the agent gets pipes (isatty false on 0, 1 and 2)" {
        gx -- /bin/sh -c 'for fd in 0 1 2; do if [ -t $fd ]; then echo "tty $fd"; else echo "notty $fd"; fi; done'
        expect_status 0
        expect_output "$(printf 'notty 0\nnotty 1\nnotty 2')"
}

@test "terminal: on pipes too a prompt is relayed before the agent waits, and the last bytes are flushed" {
        pty --pipes --send 'name? ' $'bob\n' -- --wall-time 15000 -- /bin/sh -c '[ -t 1 ] && echo has-tty; printf "name? "; read x; echo "hello $x"; printf LAST'
        strip_warning
        expect_status 0
        expect_no_line has-tty
        expect_line "name? hello bob"
        [[ "$output" == *LAST ]] || { show_res; fail "the last bytes (no newline) are missing"; }
}

@test "terminal: with --tty and no terminal the agent still gets a PTY, whose output Glove relays" {
        gx --tty -- /bin/sh -c '[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-ttys; printf LAST'
        expect_status 0
        output=${output//$'\r'/}
        mapfile -t lines <<<"$output"
        expect_line all-ttys
        [[ "$output" == *LAST ]] || fail "the last bytes are missing"
}

@test "terminal: the agent's terminal has a name (ttyname), bound read-only at /dev/console" {
        pty -- -- /bin/sh -c 'tty; chmod 600 /dev/console 2>/dev/null || echo chmod-refused'
        expect_status 0
        [[ "$output" == *"/dev/console"* ]] || fail "tty does not name the agent's terminal: $output"
        [[ "$output" == *"chmod-refused"* ]] || fail "the agent could chmod its terminal's device node"
        # Without a terminal there is none to name.
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec -- /bin/sh -c 'tty; ls /dev/console 2>&1 || true' </dev/null
        [[ "$output" == *"not a tty"* ]] || fail "expected no terminal: $output"
}

@test "terminal: the agent cannot change the mode or owner of its PTY (the host's /dev/pts node stays as it was)" {
        pty -- --wall-time 15000 -- "$PY" -c '
import os
for what, f in (("fchmod", lambda: os.fchmod(0, 0o666)), ("chmod", lambda: os.chmod("/proc/self/fd/1", 0o666)),
                ("fchown", lambda: os.fchown(2, os.getuid(), os.getgid()))):
    try:
        f(); print(what, "succeeded")
    except OSError as e:
        print(what, "refused:", e.strerror)
print("mode", oct(os.fstat(0).st_mode & 0o777))'
        strip_warning
        expect_status 0
        expect_line "fchmod refused: Read-only file system"
        expect_line "chmod refused: Read-only file system"
        expect_line "fchown refused: Read-only file system"
        expect_no_line "mode 0o666"
}
