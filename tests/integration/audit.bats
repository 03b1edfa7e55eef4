#!/usr/bin/env bats
# --audit-log: JSONL launch and exit records, appended; fail closed when the
# log cannot be written; never reachable by the agent.

load helpers

setup() {
        T=$BATS_TEST_TMPDIR
        mkdir -p "$T/logs" "$T/ws" "$T/ro" "$T/marker"
        LOG=$T/logs/audit.jsonl
}

# check_log PYTHON-ASSERTIONS: parse $LOG (every line one JSON object, as
# `recs`) and run the assertions; helpers: is_ts(s).
check_log() {
        run "$PY" - "$LOG" "$1" <<'EOF'
import json, re, sys, datetime
path, code = sys.argv[1], sys.argv[2]
raw = open(path, encoding="utf-8").read()
assert raw.endswith("\n"), "the log must end with a newline"
recs = []
for n, line in enumerate(raw.splitlines(), 1):
    if line.startswith("PRE-EXISTING"):
        recs.append(line)
        continue
    obj = json.loads(line)
    assert isinstance(obj, dict), "line %d is not an object" % n
    recs.append(obj)
def is_ts(s):
    assert isinstance(s, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s), "bad ts %r" % (s,)
    t = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs((now - t).total_seconds()) < 300, "ts %s is not now (UTC)" % s
    return t
exec(code)
print("ok")
EOF
        [ "$status" -eq 0 ] && [ "${lines[-1]}" = ok ] || {
                echo "--- audit log:" >&2
                cat "$LOG" >&2
                echo "--- check:" >&2
                printf '%s\n' "$output" >&2
                return 1
        }
}

@test "audit: launch and exit records carry the specified fields" {
        local u=$(inside_uid) g=$(inside_gid) ou=$(id -u) og=$(id -g)
        FOO=audit-secret-value gx --audit-log "$LOG" --workspace "$T/ws" --read "$T/ro" --env FOO -- /bin/sh -c 'exit 3'
        expect_status 3
        check_log "
assert len(recs) == 2, recs
l, e = recs
assert l['event'] == 'launch' and e['event'] == 'exit'
assert is_ts(l['ts']) <= is_ts(e['ts'])
argv = l['argv']
assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
assert argv[-3:] == ['/bin/sh', '-c', 'exit 3'], argv
grants = sorted((x['path'], x['mode'], x['workspace']) for x in l['grants'])
assert grants == sorted([('$T/ws', 'write', True), ('$T/ro', 'read', False)]), grants
assert all(isinstance(n, str) and '=' not in n for n in l['env']), l['env']
assert 'FOO' in l['env'], l['env']
assert l['uid_map'] == [{'inside': $u, 'outside': $ou, 'count': 1}], l['uid_map']
assert l['gid_map'] == [{'inside': $g, 'outside': $og, 'count': 1}], l['gid_map']
assert e['exit_code'] == 3 and e['status'] == 3 and e['signal'] is None, e
assert isinstance(e['wall_time_ms'], int) and e['wall_time_ms'] >= 0, e
assert 'audit-secret-value' not in raw, 'an environment value reached the audit log'
"
}

@test "audit: an agent killed by a signal is recorded with exit_code 128+N, status null, signal N" {
        gx --audit-log "$LOG" -- /bin/sh -c 'kill -TERM $$'
        expect_status 143
        check_log "
assert [r['event'] for r in recs] == ['launch', 'exit'], recs
e = recs[1]
assert e['exit_code'] == 143 and e['status'] is None and e['signal'] == 15, e
"
}

@test "audit: records are appended; existing content is kept" {
        echo "PRE-EXISTING line written by the operator" >"$LOG"
        gx --audit-log "$LOG" -- /bin/true
        expect_status 0
        gx --audit-log "$LOG" -- /bin/false
        expect_status 1
        check_log "
assert recs[0].startswith('PRE-EXISTING'), recs[0]
assert [r['event'] for r in recs[1:]] == ['launch', 'exit', 'launch', 'exit'], recs
assert recs[2]['exit_code'] == 0 and recs[4]['exit_code'] == 1
"
}

@test "audit: the exit record of a missing program says 127" {
        gx -127 --audit-log "$LOG" -- /nonexistent/program
        expect_glove_error 127
        [ -s "$LOG" ] || fail "no audit record for a launch that failed"
        check_log "
exits = [r for r in recs if r['event'] == 'exit']
assert exits and exits[-1]['exit_code'] == 127, recs
"
}

@test "audit: a log that cannot be appended (/dev/full) stops the agent, exit 125" {
        gx --audit-log /dev/full --write "$T/marker" -- /bin/sh -c "sleep 0.5; touch '$T/marker/ran'"
        expect_glove_error 125
        sleep 1
        [ ! -e "$T/marker/ran" ] || fail "the agent ran on although its audit record could not be written"
}

@test "audit: a log in a missing directory is refused (125) before the agent runs" {
        gx --audit-log "$T/no-such-dir/audit.jsonl" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
}

@test "audit: a log inside a --write grant is refused (125)" {
        gx --audit-log "$T/ws/audit.jsonl" --write "$T/ws" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
        [ ! -e "$T/ws/audit.jsonl" ] || fail "glove created the audit log inside the grant"
}

@test "audit: a log inside a --read grant is refused (125)" {
        gx --read "$T/ro" --audit-log "$T/ro/audit.jsonl" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
}

@test "audit: a log inside the --workspace is refused (125)" {
        gx --workspace "$T/ws" --audit-log "$T/ws/sub/audit.jsonl" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
}

@test "audit: a grant of the log's directory or of the log file itself is refused (125)" {
        : >"$LOG"
        gx --audit-log "$LOG" --read "$T/logs" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
        gx --audit-log "$LOG" --read "$T" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        gx --audit-log "$LOG" --write "$LOG" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        expect_no_text AGENT-RAN
}

@test "audit: the agent cannot see or touch the audit log" {
        gx --audit-log "$LOG" --write "$T/ws" "${PROBE[@]}" read "$LOG" append "$LOG" exists "$T/logs"
        expect_status 0
        expect_line "read $LOG ENOENT"
        expect_line "append $LOG ENOENT"
        expect_line "exists $T/logs no"
        check_log "assert [r['event'] for r in recs] == ['launch', 'exit'], recs"
}

@test "audit: a log whose directory is a symlink into a grant is refused (125)" {
        mkdir -p "$T/ws/hidden"
        ln -s "$T/ws/hidden" "$T/logs-link"
        gx --audit-log "$T/logs-link/audit.jsonl" --write "$T/ws" -- /bin/echo AGENT-RAN
        expect_status 125
        expect_no_text AGENT-RAN
}

@test "audit: a log that is a symlink into a grant is refused (125)" {
        ln -s "$T/ws/audit.jsonl" "$T/logs/link.jsonl"
        gx --audit-log "$T/logs/link.jsonl" --write "$T/ws" -- /bin/echo AGENT-RAN
        expect_status 125
        expect_no_text AGENT-RAN
        [ ! -e "$T/ws/audit.jsonl" ] || fail "glove created the audit log inside the grant"
}

@test "audit: wall_time_ms measures the run" {
        gx --audit-log "$LOG" -- /bin/sleep 0.3
        expect_status 0
        check_log "
e = recs[-1]
assert e['event'] == 'exit' and 300 <= e['wall_time_ms'] < 20000, e
"
}

@test "audit: a forwarded SIGTERM that kills the agent is recorded as signal 15, exit_code 143" {
        local out=$T/out err=$T/err
        spawn_glove "$out" "$err" --audit-log "$LOG" -- "$PY" -c 'import time; print("ready", flush=True); time.sleep(60)'
        wait_for "$out" '^ready$' 10
        kill -TERM "$GPID"
        wait_exit "$GPID" 10
        [ "$WSTATUS" -eq 143 ] || { echo "exit status $WSTATUS, expected 143" >&2; return 1; }
        check_log "
assert [r['event'] for r in recs] == ['launch', 'exit'], recs
e = recs[1]
assert e['exit_code'] == 143 and e['status'] is None and e['signal'] == 15, e
"
}

@test "audit: concurrent runs appending to one log never interleave records" {
        local i pids=()
        for i in $(seq 1 12); do
                timeout --foreground 30 "$GLOVE" exec --audit-log "$LOG" -- /bin/sh -c "exit $i" </dev/null >/dev/null 2>&1 3>&- &
                pids+=($!)
        done
        for i in "${pids[@]}"; do wait "$i" || true; done
        check_log "
assert len(recs) == 24, len(recs)
assert sorted(r['exit_code'] for r in recs if r['event'] == 'exit') == list(range(1, 13)), recs
assert sum(1 for r in recs if r['event'] == 'launch') == 12
"
}
