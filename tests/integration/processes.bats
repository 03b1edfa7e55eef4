#!/usr/bin/env bats
# Processes and signals: the PID namespace hides and protects host processes,
# signals to glove reach the agent, and nothing of the agent outlives glove.

load helpers

teardown() { kill_tracked; }

# A number that sleep(1) accepts and that appears nowhere else: it marks the
# processes of one test in host command lines.
marker() { echo "3000.$$$RANDOM$BATS_TEST_NUMBER"; }

@test "processes: a host process is invisible inside and cannot be signalled by host pid" {
        local m h
        m=$(marker)
        sleep "$m" </dev/null >/dev/null 2>&1 3>&- &
        h=$!
        track_pid "$h"
        # Positive control: the host sees it.
        [ -n "$(host_pids "$m")" ] || fail "host cannot see its own sleep"
        [ "$h" -gt 20 ] || skip "host pid $h is too small to tell apart from sandbox pids"

        local hex
        hex=$(printf %s "$m" | od -An -tx1 | tr -d ' \n')
        gx "${PROBE[@]}" procscan "$hex" signal0 "$h" kill "$h" signal0 1
        expect_status 0
        expect_line "procscan $hex none"
        expect_line "signal0 $h ESRCH"
        expect_line "kill $h ESRCH"
        expect_line "signal0 1 ok"

        gx -- /bin/sh -c "kill -9 $h; kill -9 -1; ls /proc/$h >/dev/null 2>&1 && echo visible; echo end"
        expect_line "end"
        expect_no_line "visible"
        running "$h" || fail "the host sleep was killed from inside the sandbox"
}

@test "processes: pids inside start at 1 and the agent is pid 2" {
        gx -- /bin/sh -c 'echo $$; grep ^PPid: /proc/1/status; grep ^PPid: /proc/$$/status'
        expect_status 0
        expect_output "$(printf '2\nPPid:\t0\nPPid:\t1')"
}

@test "processes: on a terminal the agent gets its own PTY and session, never the invoker's terminal" {
        command -v script >/dev/null || skip "script(1) from bsdutils is not installed"
        # Positive control: under script(1), a process on the host has /dev/tty.
        run script -qec "/bin/sh -c ': </dev/tty && echo host-has-tty'" /dev/null </dev/null
        [[ "$output" == *host-has-tty* ]] || skip "script(1) gives no controlling terminal here"

        local cmd
        cmd=$(printf '%q ' timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "${PROBE[@]}" tty)
        run --separate-stderr script -qec "$cmd" /dev/null </dev/null
        output=${output//$'\r'/}
        mapfile -t lines <<<"$output"
        expect_status 0
        expect_line "isatty0 yes"
        # Its controlling terminal is the PTY Glove created (whose master
        # Glove keeps), so /dev/tty opens; injection into it is still refused.
        expect_line "open-dev-tty ok"
        expect_line "TIOCSTI EPERM"
        # getsid() is 0 when the session leader lives outside the PID
        # namespace: a visible session id means a new session inside.
        expect_line "sid-visible yes"
        # Without a terminal (and without --tty) there is none at all.
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" exec "${PROBE[@]}" tty </dev/null
        expect_status 0
        expect_line "open-dev-tty ENXIO"
}

# forward SIG: glove forwards SIG to the agent, whose trap runs and exits 7.
forward() {
        local sig=$1 out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        spawn_glove "$out" "$err" -- /bin/sh -c \
                "trap 'echo got-$sig; exit 7' $sig; echo ready; while :; do sleep 0.05; done"
        wait_for "$out" '^ready$' 10
        kill -s "$sig" "$GPID"
        wait_exit "$GPID" 10
        status=$WSTATUS output=$(cat "$out") stderr=$(cat "$err")
        expect_status 7
        expect_output "$(printf 'ready\ngot-%s' "$sig")"
}

@test "signals: SIGTERM to glove is forwarded to the agent's trap" { forward TERM; }
@test "signals: SIGINT to glove is forwarded to the agent's trap" { forward INT; }
@test "signals: SIGHUP to glove is forwarded to the agent's trap" { forward HUP; }
@test "signals: SIGQUIT to glove is forwarded to the agent's trap" { forward QUIT; }
@test "signals: SIGUSR1 to glove is forwarded to the agent's trap" { forward USR1; }
@test "signals: SIGUSR2 to glove is forwarded to the agent's trap" { forward USR2; }
@test "signals: SIGWINCH to glove is forwarded to the agent's trap" { forward WINCH; }

@test "signals: an agent killed by a forwarded SIGTERM makes glove exit 143" {
        local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        spawn_glove "$out" "$err" -- "$PY" -c 'import time; print("ready", flush=True); time.sleep(60)'
        wait_for "$out" '^ready$' 10
        kill -TERM "$GPID"
        wait_exit "$GPID" 10
        [ "$WSTATUS" -eq 143 ] || { cat "$err" >&2; echo "exit status $WSTATUS, expected 143" >&2; return 1; }
}

@test "lifecycle: nothing of the agent survives SIGKILL of glove" {
        local m out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        m=$(marker)
        # Plain children, a new session, and a child that ignores TERM and HUP.
        spawn_glove "$out" "$err" -- /bin/sh -c \
                "sleep $m & setsid sleep $m & (trap '' TERM HUP INT; exec sleep $m) & echo ready; wait"
        wait_for "$out" '^ready$' 10
        local i n=0
        for ((i = 0; i < 40; i++)); do
                n=$(host_pids "$m" | wc -l)
                [ "$n" -ge 4 ] && break
                sleep 0.05
        done
        local p
        for p in $(host_pids "$m"); do track_pid "$p"; done
        # Positive control: the agent's processes are there (glove, sh, 3 sleeps...).
        [ "$n" -ge 4 ] || fail "expected the agent's processes on the host, found $n"

        kill -KILL "$GPID"
        local left=""
        for ((i = 0; i < 100; i++)); do
                left=$(host_pids "$m" | while read -r p; do running "$p" && echo "$p"; done)
                [ -z "$left" ] && break
                sleep 0.05
        done
        [ -z "$left" ] || {
                for p in $left; do echo "survivor $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)" >&2; done
                return 1
        }
}

@test "lifecycle: glove returns when the agent exits, and its leftover children die" {
        local m start end
        m=$(marker)
        start=$(date +%s)
        gx -- /bin/sh -c "sleep $m & setsid sleep $m & exit 3"
        end=$(date +%s)
        expect_status 3
        [ $((end - start)) -lt 10 ] || fail "glove waited $((end - start))s for the agent's orphans"
        local i left=""
        for ((i = 0; i < 100; i++)); do
                left=$(host_pids "$m" | while read -r p; do running "$p" && echo "$p"; done)
                [ -z "$left" ] && break
                sleep 0.05
        done
        for p in $left; do track_pid "$p"; done
        [ -z "$left" ] || fail "processes of the agent outlived glove: $left"
}

@test "lifecycle: the sandbox's mounts never appear on the host, and a run leaves no glove files in /tmp" {
        local T=$BATS_TEST_TMPDIR out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
        mkdir -p "$T/ws" "$T/ro"
        mounts() { cut -d' ' -f5 /proc/self/mountinfo | sort; }
        local before during after tmp_before tmp_after
        before=$(mounts)
        # Only names that could be glove's (other work on the machine may come
        # and go in /tmp meanwhile); the suite's own glove-it.* are excluded.
        glove_tmp() { ls -A /tmp | grep -i glove | grep -v -e '^glove-it[.-]' -e '^glove-demo\.' | sort; }
        tmp_before=$(glove_tmp)
        spawn_glove "$out" "$err" --workspace "$T/ws" --read "$T/ro" -- /bin/sh -c 'echo ready; sleep 30'
        wait_for "$out" '^ready$' 10
        during=$(mounts)
        kill -TERM "$GPID"
        wait_exit "$GPID" 10
        after=$(mounts)
        tmp_after=$(glove_tmp)
        [ "$during" = "$before" ] || { diff <(echo "$before") <(echo "$during") >&2; echo "sandbox mounts propagated to the host" >&2; return 1; }
        [ "$after" = "$before" ] || { diff <(echo "$before") <(echo "$after") >&2; echo "mounts left on the host" >&2; return 1; }
        [ "$tmp_after" = "$tmp_before" ] || { diff <(echo "$tmp_before") <(echo "$tmp_after") >&2; echo "the run left files in /tmp" >&2; return 1; }
}
