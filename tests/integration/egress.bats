#!/usr/bin/env bats
# Audited egress (docs/egress.md): --egress-allow HOST[:PORT] and
# --egress-allow-private HOST[:PORT]. Without them the agent is offline; with
# them its only way out is the authenticated proxy on 127.0.0.1:3128 inside
# its network namespace (CONNECT, and plain-HTTP forwarding of http:// URLs),
# relayed by Glove on the host, which checks the allow list and the per-rule
# private-address rule and writes `egress` audit records.
#
# Every destination is on this machine's 127.0.0.1 (or ::1): a throwaway
# server started by the test (srv.py below, written in setup_file) that logs
# each connection it accepts, so a test can prove that nothing reached it.
# The only other addresses named (10.0.0.1, 1.1.1.1) are direct connects from
# inside the sandbox that must fail with ENETUNREACH before any packet leaves.

load helpers

# ------------------------------------------------------------ fixtures

setup_file() {
        local d=$BATS_FILE_TMPDIR
        mkdir -p "$d/agent"
        # srv.py MODE PORTFILE LOG [SECONDS]: a host-side server on
        # 127.0.0.1:<free port> (and [::1] on the same port when the host has
        # IPv6 loopback). MODE http answers any request with a fixed body;
        # MODE echo echoes until EOF. LOG gets "accept FAMILY" for every
        # connection, then "request LINE" and "header LINE" for each header
        # line (http), or "eof BYTES" (echo). PORTFILE gets
        # "PORT V6(yes|no)" once listening. Exits by itself after SECONDS.
        cat >"$d/srv.py" <<'EOF'
import os, socket, sys, threading, time
mode, portfile, log = sys.argv[1:4]
life = float(sys.argv[4]) if len(sys.argv) > 4 else 40
lock = threading.Lock()
def note(msg):
    with lock, open(log, "a") as f:
        f.write(msg + "\n")
def serve(c):
    try:
        c.settimeout(10)
        if mode == "http":
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                b = c.recv(4096)
                if not b:
                    break
                head += b
            lines = head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
            note("request " + lines[0].decode("latin-1"))
            for h in lines[1:]:
                note("header " + h.decode("latin-1"))
            body = b"hello from the host\n"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % len(body) + body)
        else:
            n = 0
            while True:
                b = c.recv(65536)
                if not b:
                    break
                n += len(b)
                c.sendall(b)
            note("eof %d" % n)
    except OSError as e:
        note("error %s" % e)
    finally:
        c.close()
def loop(s, fam):
    while True:
        c, _ = s.accept()
        note("accept " + fam)
        threading.Thread(target=serve, args=(c,), daemon=True).start()
open(log, "a").close()
s4 = socket.socket()
s4.bind(("127.0.0.1", 0))
s4.listen(64)
port = s4.getsockname()[1]
v6 = "no"
try:
    s6 = socket.socket(socket.AF_INET6)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s6.bind(("::1", port))
    s6.listen(64)
    threading.Thread(target=loop, args=(s6, "v6"), daemon=True).start()
    v6 = "yes"
except OSError:
    pass
threading.Thread(target=loop, args=(s4, "v4"), daemon=True).start()
with open(portfile + ".tmp", "w") as f:
    f.write("%d %s\n" % (port, v6))
os.rename(portfile + ".tmp", portfile)
time.sleep(life)
EOF
        # client.py OP...: a proxy client inside the sandbox that reads the
        # proxy URL from HTTPS_PROXY and speaks CONNECT itself.
        #   connect TARGET      prints "connect TARGET STATUS"
        #   echo TARGET N       after a 200, sends N bytes, half-closes, reads
        #                       to EOF: "echo TARGET STATUS got=M"
        #   send TEXT           sends TEXT as is (Python escapes such as \r\n
        #                       decoded, {auth} replaced by the credentials),
        #                       reads to EOF: "send FIRST-LINE" then "resp LINE"
        #                       for every further line ("send none": nothing)
        #   sendeof TEXT        the same, half-closing after TEXT
        cat >"$d/agent/client.py" <<'EOF'
import base64, codecs, os, socket, sys, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
auth = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
def tunnel(target):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n"
               % (target, target, auth)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    return s, (head.split(b" ", 2)[1].decode() if head else "none")
args = sys.argv[1:]
while args:
    op = args.pop(0)
    if op == "connect":
        t = args.pop(0)
        s, st = tunnel(t)
        s.close()
        print("connect", t, st, flush=True)
    elif op in ("send", "sendeof"):
        text = codecs.decode(args.pop(0), "unicode_escape").replace("{auth}", auth)
        s = socket.create_connection((u.hostname, u.port), timeout=15)
        s.sendall(text.encode("latin-1"))
        if op == "sendeof":
            s.shutdown(socket.SHUT_WR)
        got = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except OSError:
            pass
        s.close()
        lines = got.decode("latin-1").split("\n")
        print("send", lines[0].rstrip("\r") if got else "none", flush=True)
        for l in lines[1:]:
            print("resp", l.rstrip("\r"), flush=True)
    elif op == "echo":
        t, n = args.pop(0), int(args.pop(0))
        s, st = tunnel(t)
        got = 0
        if st == "200":
            s.sendall(b"e" * n)
            s.shutdown(socket.SHUT_WR)
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += len(b)
        s.close()
        print("echo", t, st, "got=%d" % got, flush=True)
    else:
        sys.exit("client.py: unknown op %s" % op)
EOF
        chmod -R a+rX "$d"
}

setup() {
        T=$BATS_TEST_TMPDIR
        LOG=$T/audit.jsonl
        CLIENT_DIR=$BATS_FILE_TMPDIR/agent
        CLIENT=(--read "$CLIENT_DIR" -- "$PY" "$CLIENT_DIR/client.py")
        # An agent that runs curl with the arguments given and reports.
        CURL=(-- /bin/sh -c '/usr/bin/curl -sS --max-time 10 -w "\nhttp_connect=%{http_connect} http_code=%{http_code}\n" "$@"; echo "curl_exit=$?"' sh)
}

teardown() { kill_tracked; }

# start_server MODE: sets SRV_PORT, SRV_V6 (yes|no), SRV_LOG.
start_server() {
        local pf=$T/srv-$1.port
        SRV_LOG=$T/srv-$1.log
        "$PY" "$BATS_FILE_TMPDIR/srv.py" "$1" "$pf" "$SRV_LOG" 3>&- &
        track_pid $!
        disown $! # no "Killed" job report when teardown stops it
        wait_for "$pf" '^[0-9]+ (yes|no)$' 10
        read -r SRV_PORT SRV_V6 <"$pf"
}

# server_saw_nothing: the server accepted no connection at all.
server_saw_nothing() {
        if grep -q . "$SRV_LOG"; then
                echo "--- server log:" >&2
                cat "$SRV_LOG" >&2
                fail "a connection reached the host server"
        fi
}

# check_audit PYTHON: parse $LOG (every line a JSON object: recs; the egress
# records: eg) and run the assertions. Every egress record is checked for
# the documented field set and types first.
check_audit() {
        run "$PY" - "$LOG" "$1" <<'EOF'
import json, sys
path, code = sys.argv[1], sys.argv[2]
raw = open(path, encoding="utf-8").read()
assert raw == "" or raw.endswith("\n"), "the log must end with a newline"
recs = [json.loads(l) for l in raw.splitlines()]
eg = [r for r in recs if r.get("event") == "egress"]
FIELDS = {"ts", "event", "run_id", "phase", "decision", "connection", "method", "host", "port", "reason", "http_status",
          "address", "address_class", "bytes_up", "bytes_down", "duration_ms"}
for r in eg:
    assert set(r) == FIELDS, "egress record fields differ: %s in %r" % (sorted(set(r) ^ FIELDS), r)
    assert r["phase"] in ("open", "close", "deny"), r
    assert r["decision"] == ("deny" if r["phase"] == "deny" else "allow"), r
    for k in ("connection", "port", "http_status", "bytes_up", "bytes_down", "duration_ms"):
        assert isinstance(r[k], int) and not isinstance(r[k], bool) and r[k] >= 0, (k, r)
    for k in ("method", "host", "reason", "address", "address_class"):
        assert isinstance(r[k], str), (k, r)
inside = False
run_id = None
for r in recs:
    if r.get("event") == "launch":
        inside = True
        run_id = r["run_id"]
    elif r.get("event") == "exit":
        inside = False
    elif r.get("event") == "egress":
        assert inside, "an egress record outside a run's launch..exit: %r" % r
        assert r["run_id"] == run_id, "an egress record carries another run's run_id: %r" % r
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

# ------------------------------------------------------------ offline / environment

@test "egress: without --egress-allow the agent is offline (EPERM) and gets no proxy variables" {
        gx "${PROBE[@]}" socket AF_INET SOCK_STREAM socket AF_INET6 SOCK_STREAM connect 127.0.0.1 3128
        expect_status 0
        expect_line "socket AF_INET SOCK_STREAM EPERM"
        expect_line "socket AF_INET6 SOCK_STREAM EPERM"
        expect_line "connect 127.0.0.1 3128 EPERM"
        gx -- /usr/bin/env
        expect_status 0
        [[ "$output" != *PROXY=* && "$output" != *proxy=* ]] || fail "proxy variables without --egress-allow"
}

@test "egress: the agent gets the six proxy variables (one URL, per-run token) and empty NO_PROXY/no_proxy" {
        gx --egress-allow example.com -- /usr/bin/env
        expect_status 0
        local url v
        url=$(printf '%s\n' "$output" | sed -n 's/^HTTPS_PROXY=//p')
        [[ "$url" =~ ^http://glove:[0-9a-f]{64}@127\.0\.0\.1:3128$ ]] || fail "HTTPS_PROXY is '$url'"
        for v in HTTPS_PROXY https_proxy HTTP_PROXY http_proxy ALL_PROXY all_proxy; do
                expect_line "$v=$url"
        done
        expect_line "NO_PROXY="
        expect_line "no_proxy="
        local first=$url
        gx --egress-allow example.com -- /usr/bin/env
        url=$(printf '%s\n' "$output" | sed -n 's/^HTTPS_PROXY=//p')
        [[ "$url" =~ ^http://glove:[0-9a-f]{64}@127\.0\.0\.1:3128$ ]] || fail "HTTPS_PROXY is '$url'"
        [ "$url" != "$first" ] || fail "two runs got the same token"
}

# ------------------------------------------------------------ allowed tunnels

@test "egress: curl --proxytunnel to an allowed 127.0.0.1:PORT (an address rule: private allowed) works; audit open+close with byte counts" {
        start_server http
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel "http://127.0.0.1:$SRV_PORT/index.txt"
        expect_status 0
        expect_line "hello from the host"
        expect_line "http_connect=200 http_code=200"
        expect_line "curl_exit=0"
        grep -qx "request GET /index.txt HTTP/1.1" "$SRV_LOG" || fail "the server did not get the request"
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close'], eg
o, c = eg
for r in eg:
    assert r['method'] == 'CONNECT', r
    assert r['host'] == '127.0.0.1' and r['port'] == $SRV_PORT, r
    assert r['address'] == '127.0.0.1' and r['address_class'] == 'loopback', r
    assert r['http_status'] == 200, r
assert o['connection'] == c['connection'] >= 1, eg
assert o['reason'] == 'ok' and o['bytes_up'] == 0 and o['bytes_down'] == 0, o
assert c['reason'] == 'closed', c
assert c['bytes_up'] > 0 and c['bytes_down'] > 0, c
assert c['duration_ms'] >= o['duration_ms'], eg
"
}

@test "egress: audit byte counts are the exact bytes relayed each way (100000 echoed)" {
        start_server echo
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CLIENT[@]}" echo "127.0.0.1:$SRV_PORT" 100000 echo "127.0.0.1:$SRV_PORT" 1
        expect_status 0
        expect_line "echo 127.0.0.1:$SRV_PORT 200 got=100000"
        expect_line "echo 127.0.0.1:$SRV_PORT 200 got=1"
        check_audit "
closes = {r['connection']: r for r in eg if r['phase'] == 'close'}
opens = {r['connection']: r for r in eg if r['phase'] == 'open'}
assert len(eg) == 4 and sorted(closes) == sorted(opens) and len(set(opens)) == 2, eg
a, b = [closes[k] for k in sorted(closes)]
assert (a['bytes_up'], a['bytes_down']) == (100000, 100000), a
assert (b['bytes_up'], b['bytes_down']) == (1, 1), b
"
}

# ------------------------------------------------------------ refusals

@test "egress: private destinations are allowed per rule: a private-allowed address rule does not let a name rule reach loopback (403 private_address)" {
        start_server http
        local other=$((SRV_PORT == 65535 ? SRV_PORT - 1 : SRV_PORT + 1))
        # 127.0.0.1:OTHER is an address rule (private allowed for that address
        # only); localhost:PORT is a name rule without --egress-allow-private.
        # With the old global switch, the literal needed the switch and the
        # switch opened the name too.
        gx --audit-log "$LOG" --egress-allow "localhost:$SRV_PORT" --egress-allow "127.0.0.1:$other" \
                "${CLIENT[@]}" connect "localhost:$SRV_PORT"
        expect_status 0
        expect_line "connect localhost:$SRV_PORT 403"
        server_saw_nothing
        check_audit "
assert len(eg) == 1, eg
d = eg[0]
assert d['phase'] == 'deny' and d['reason'] == 'private_address' and d['http_status'] == 403, d
assert d['method'] == 'CONNECT' and d['host'] == 'localhost' and d['port'] == $SRV_PORT, d
assert d['address'] in ('127.0.0.1', '::1') and d['address_class'] == 'loopback', d
"
        # --egress-allow-private for another name does not widen this one.
        gx --egress-allow "localhost:$SRV_PORT" --egress-allow-private "localhost:$other" \
                "${CLIENT[@]}" connect "localhost:$SRV_PORT"
        expect_line "connect localhost:$SRV_PORT 403"
        server_saw_nothing
        # Positive control: the same name given with --egress-allow-private.
        gx --egress-allow-private "localhost:$SRV_PORT" "${CLIENT[@]}" connect "localhost:$SRV_PORT"
        expect_line "connect localhost:$SRV_PORT 200"
}

@test "egress: a host or port not in the list is refused (403 not_allowed), never connected" {
        start_server http
        local other=$((SRV_PORT == 65535 ? SRV_PORT - 1 : SRV_PORT + 1))
        # Wrong port; wrong host (127.0.0.2); an address rule does not allow the
        # name that resolves to it; .example.com does not allow example.com.
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$other" --egress-allow "127.0.0.2:$SRV_PORT" \
                --egress-allow .example.com "${CLIENT[@]}" \
                connect "127.0.0.1:$SRV_PORT" connect "localhost:$other" connect example.com:443 connect 127.0.0.1:443
        expect_status 0
        expect_line "connect 127.0.0.1:$SRV_PORT 403"
        expect_line "connect localhost:$other 403"
        expect_line "connect example.com:443 403"
        expect_line "connect 127.0.0.1:443 403"
        server_saw_nothing
        # Each refusal is also one line on Glove's stderr, saying what to change.
        [ "$(grep -c '^glove: warning: egress\.denied: ' <<<"$stderr")" -eq 4 ] || fail "expected 4 egress.denied lines: $stderr"
        [[ "$stderr" == *"glove: warning: egress.denied: CONNECT example.com:443 refused with 403 (not_allowed: no --egress-allow HOST[:PORT] names it)"* ]] ||
                fail "the refusal of example.com:443 is not said on stderr: $stderr"
        check_audit "
assert len(eg) == 4 and all(r['phase'] == 'deny' for r in eg), eg
assert all(r['reason'] == 'not_allowed' and r['http_status'] == 403 for r in eg), eg
# not resolved, not connected: no address
assert all(r['address'] == '' and r['address_class'] == '' for r in eg), eg
# Connections are served concurrently: records come in completion order.
assert sorted((r['host'], r['port']) for r in eg) == sorted([('127.0.0.1', $SRV_PORT), ('localhost', $other), ('example.com', 443), ('127.0.0.1', 443)]), eg
assert len({r['connection'] for r in eg}) == 4, eg
"
        # With the right port the same run would get through (positive control).
        gx --egress-allow "127.0.0.1:$SRV_PORT" "${CLIENT[@]}" connect "127.0.0.1:$SRV_PORT"
        expect_line "connect 127.0.0.1:$SRV_PORT 200"
}

@test "egress: a wrong or missing proxy token is refused (407 bad_auth)" {
        start_server http
        local url="http://127.0.0.1:$SRV_PORT/index.txt"
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel -x "http://glove:$(printf '0%.0s' {1..64})@127.0.0.1:3128" "$url"
        expect_status 0
        expect_line "http_connect=407 http_code=000"
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel -x "http://127.0.0.1:3128" "$url"
        expect_status 0
        expect_line "http_connect=407 http_code=000"
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel -x "http://intruder:secret@127.0.0.1:3128" "$url"
        expect_status 0
        expect_line "http_connect=407 http_code=000"
        server_saw_nothing
        check_audit "
assert len(eg) == 3, eg
for d in eg:
    assert d['phase'] == 'deny' and d['reason'] == 'bad_auth' and d['http_status'] == 407, d
    assert d['address'] == '' and d['bytes_up'] == 0 and d['bytes_down'] == 0, d
# (the launch records hold them: they are curl's arguments)
e = json.dumps(eg)
assert 'secret' not in e and 'intruder' not in e and '0' * 64 not in e, 'offered credentials reached an egress record'
"
}

@test "egress: plain HTTP through the proxy (curl http:// with HTTP_PROXY) is forwarded in origin form, without the proxy credentials; audit method GET" {
        start_server http
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" -- /bin/sh -c '
                echo "proxy=$HTTP_PROXY"
                /usr/bin/curl -sS --max-time 10 -w "\nhttp_code=%{http_code}\n" -H "X-Test: 1" "$1"
                echo "curl_exit=$?"' sh "http://127.0.0.1:$SRV_PORT/index.txt?q=1"
        expect_status 0
        expect_line "hello from the host"
        expect_line "http_code=200"
        expect_line "curl_exit=0"
        # The server got the origin form, its own Host, and Connection: close;
        # neither the proxy credentials nor Proxy-Connection.
        grep -qx "request GET /index.txt?q=1 HTTP/1.1" "$SRV_LOG" || { cat "$SRV_LOG" >&2; fail "not forwarded in origin form"; }
        grep -qx "header Host: 127.0.0.1:$SRV_PORT" "$SRV_LOG" || fail "no Host header upstream"
        grep -qx "header X-Test: 1" "$SRV_LOG" || fail "an end-to-end header was dropped"
        grep -qx "header Connection: close" "$SRV_LOG" || fail "no Connection: close upstream"
        if grep -qi "^header proxy-" "$SRV_LOG"; then
                cat "$SRV_LOG" >&2
                fail "a Proxy-* header reached the server"
        fi
        local token
        token=$(printf '%s\n' "$output" | sed -n 's|^proxy=http://glove:\([0-9a-f]\{64\}\)@.*|\1|p')
        [ ${#token} -eq 64 ] || fail "no token seen by the agent"
        ! grep -q "$(printf 'glove:%s' "$token" | base64 -w0 | cut -c1-40)" "$SRV_LOG" || fail "the credentials reached the server"
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close'], eg
for r in eg:
    assert r['method'] == 'GET' and r['host'] == '127.0.0.1' and r['port'] == $SRV_PORT, r
    assert r['address_class'] == 'loopback' and r['http_status'] == 0, r
assert eg[1]['reason'] == 'closed' and eg[1]['bytes_up'] > 0 and eg[1]['bytes_down'] > 0, eg
"
}

@test "egress: python3 urllib inside reaches a python3 -m http.server on the host's loopback through HTTP_PROXY (address rule); the answer says Connection: close" {
        mkdir -p "$T/www"
        echo "served by http.server" >"$T/www/model.txt"
        "$PY" -u -m http.server --bind 127.0.0.1 --directory "$T/www" 0 >"$T/hs.out" 2>"$T/hs.err" 3>&- &
        track_pid $!
        disown $!
        wait_for "$T/hs.out" 'port [0-9]+' 10
        local port
        port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$T/hs.out" | head -1)
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$port" -- "$PY" -c '
import sys, urllib.request
r = urllib.request.urlopen("http://127.0.0.1:%s/model.txt" % sys.argv[1], timeout=10)
print("status", r.status)
print("connection", r.headers.get("Connection"))
print("body", r.read().decode().strip())' "$port"
        expect_status 0
        expect_line "status 200"
        # http.server answers HTTP/1.0 without a Connection field; the proxy
        # tells the agent that its connection ends with this answer.
        expect_line "connection close"
        expect_line "body served by http.server"
        grep -q '"GET /model.txt HTTP/1.1" 200' "$T/hs.err" || { cat "$T/hs.err" >&2; fail "http.server did not log the origin-form request"; }
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close'], eg
assert all(r['method'] == 'GET' and r['port'] == $port and r['address_class'] == 'loopback' for r in eg), eg
"
}

@test "egress: a forwarded request carries its body (Content-Length and chunked) and reaches its upstream once, with Connection: close" {
        start_server echo
        local p=$SRV_PORT
        # The echo server returns what it received: the forwarded head and body.
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" "${CLIENT[@]}" \
                sendeof "POST http://127.0.0.1:$p/api/generate HTTP/1.1\r\nHost: 127.0.0.1:$p\r\nProxy-Authorization: Basic {auth}\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 5\r\nContent-Length: 11\r\n\r\nhello-model" \
                sendeof "PUT http://127.0.0.1:$p/c HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nchunk\r\n0\r\n\r\n"
        expect_status 0
        expect_line "send POST /api/generate HTTP/1.1"
        expect_line "resp Host: 127.0.0.1:$p"
        expect_line "resp Content-Length: 11"
        expect_line "resp hello-model"
        expect_line "send PUT /c HTTP/1.1"
        expect_line "resp Transfer-Encoding: chunked"
        expect_line "resp chunk"
        expect_line "resp Connection: close"
        [[ "$output" != *"resp Proxy-"* && "$output" != *"resp Keep-Alive"* ]] || fail "hop-by-hop fields were forwarded"
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close', 'open', 'close'], eg
assert [r['method'] for r in eg] == ['POST', 'POST', 'PUT', 'PUT'], eg
assert all(r['reason'] == 'closed' for r in eg if r['phase'] == 'close'), eg
"
}

@test "egress: plain-HTTP refusals: Host mismatch (400 host_mismatch), https:// URL (400 https_needs_connect), a rule for another port (403), all audited with the target" {
        start_server http
        local p=$SRV_PORT other=$((SRV_PORT == 65535 ? SRV_PORT - 1 : SRV_PORT + 1))
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" -- /bin/sh -c '
                /usr/bin/curl -sS --max-time 10 -o /dev/null -w "mismatch http_code=%{http_code}\n" -H "Host: evil.example" "$1"
                /usr/bin/curl -sS --max-time 10 -o /dev/null -w "other http_code=%{http_code}\n" "$2"
                exit 0' sh "http://127.0.0.1:$p/" "http://127.0.0.1:$other/"
        expect_status 0
        expect_line "mismatch http_code=400"
        expect_line "other http_code=403"
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" "${CLIENT[@]}" \
                send "GET https://127.0.0.1:$p/ HTTP/1.1\r\nHost: 127.0.0.1:$p\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
        expect_line "send HTTP/1.1 400 Bad Request"
        expect_line "resp glove egress proxy: https_needs_connect (send CONNECT host:443 and TLS inside the tunnel for https:// URLs)"
        server_saw_nothing
        check_audit "
assert [(r['reason'], r['http_status']) for r in eg] == [('host_mismatch', 400), ('not_allowed', 403), ('https_needs_connect', 400)], eg
assert [(r['method'], r['host'], r['port']) for r in eg] == [('GET', '127.0.0.1', $p), ('GET', '127.0.0.1', $other), ('GET', '127.0.0.1', $p)], eg
"
}

@test "egress: a method the proxy does not serve (405) is audited with the target asked for" {
        start_server http
        local p=$SRV_PORT
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" "${CLIENT[@]}" \
                send "GET 127.0.0.1:$p HTTP/1.1\r\nHost: 127.0.0.1:$p\r\nProxy-Authorization: Basic {auth}\r\n\r\n" \
                send "DELETE /x HTTP/1.1\r\nHost: 127.0.0.1:$p\r\n\r\n"
        expect_status 0
        [ "$(grep -c '^send HTTP/1.1 405 Method Not Allowed$' <<<"$output")" -eq 2 ] || fail "expected two 405 answers"
        expect_line "resp Allow: CONNECT"
        server_saw_nothing
        check_audit "
assert [(r['phase'], r['reason'], r['http_status']) for r in eg] == [('deny', 'method_not_allowed', 405)] * 2, eg
assert [(r['method'], r['host'], r['port']) for r in eg] == [('GET', '127.0.0.1', $p), ('DELETE', '127.0.0.1', $p)], eg
"
}

@test "egress: a request head with bare-LF line ends is answered 400 bad_request without waiting for the head deadline" {
        start_server http
        local p=$SRV_PORT
        # The connection stays open: only the proxy's own answer ends it (the
        # old proxy answered 408 after its 10 s head deadline).
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" "${CLIENT[@]}" \
                send "CONNECT 127.0.0.1:$p HTTP/1.1\nHost: 127.0.0.1:$p\nProxy-Authorization: Basic {auth}\n\n" \
                send "GET http://127.0.0.1:$p/ HTTP/1.1\nHost: 127.0.0.1:$p\n"
        expect_status 0
        [ "$(grep -c '^send HTTP/1.1 400 Bad Request$' <<<"$output")" -eq 2 ] || fail "expected two 400 answers"
        expect_line "resp glove egress proxy: bad_request"
        server_saw_nothing
        check_audit "
assert [(r['reason'], r['http_status']) for r in eg] == [('bad_request', 400)] * 2, eg
assert [(r['method'], r['host'], r['port']) for r in eg] == [('CONNECT', '127.0.0.1', $p), ('GET', '127.0.0.1', $p)], eg
"
}

@test "egress: refused requests cannot fill the disk: egress records may add at most --disk bytes to the audit log (125 egress.audit_full)" {
        start_server http
        local p=$SRV_PORT
        cat >"$T/flood.py" <<'EOF'
import os, socket, sys
u = os.environ["HTTP_PROXY"].rsplit("@", 1)[1].rstrip("/").split(":")
for i in range(200000):
    try:
        s = socket.create_connection((u[0], int(u[1])))
        s.sendall(b"GET 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        s.recv(4096)
        s.close()
    except OSError:
        pass
print("FLOOD-FINISHED", flush=True)
EOF
        : >"$LOG"
        gx --audit-log "$LOG" --disk 1M --egress-allow "127.0.0.1:$p" --read "$T/flood.py" -- "$PY" "$T/flood.py"
        # A flood of refusals cannot flood the operator's terminal: the first
        # few are said, then how many more there were, in one line.
        [ "$(grep -c '^glove: warning: egress\.denied: ' <<<"$stderr")" -eq 11 ] &&
                grep -qE '^glove: warning: egress\.denied: [0-9]+ more connections refused, not shown \(the audit log has each' <<<"$stderr" ||
                fail "the refusals on stderr are not bounded to 10 and a summary: $(head -c 2000 <<<"$stderr")"
        expect_glove_error 125
        [ "$(glove_error_code)" = egress.audit_full ] || fail "expected egress.audit_full: $stderr"
        [[ "$output" != *FLOOD-FINISHED* ]] || fail "the agent was not stopped"
        local size
        size=$(stat -c %s "$LOG")
        # The launch record, 1 MiB of egress records and the one that passed it.
        [ "$size" -lt $(((1 << 20) + 65536)) ] || fail "the audit log grew to $size bytes"
        [ "$size" -gt $((1 << 20)) ] || fail "the log is $size bytes: the budget was not reached"
        server_saw_nothing
}

@test "egress: address shorthands are refused (400); an address rule allows its IPv4-mapped form; IPv6 loopback needs its own rule (403)" {
        start_server echo
        local p=$SRV_PORT
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$p" "${CLIENT[@]}" \
                connect "127.1:$p" connect "2130706433:$p" connect "0x7f.0.0.1:$p" connect "127.0.0.01:$p" \
                connect "[::ffff:127.0.0.1]:$p" connect "[::1]:$p"
        expect_status 0
        expect_line "connect 127.1:$p 400"
        expect_line "connect 2130706433:$p 400"
        expect_line "connect 0x7f.0.0.1:$p 400"
        expect_line "connect 127.0.0.01:$p 400"
        expect_line "connect [::ffff:127.0.0.1]:$p 200"
        expect_line "connect [::1]:$p 403"
        check_audit "
assert [r['reason'] for r in eg if r['phase'] == 'deny'] == ['bad_request'] * 4 + ['not_allowed'], eg
o = [r for r in eg if r['phase'] == 'open']
assert len(o) == 1 and o[0]['address_class'] == 'loopback' and o[0]['host'] == '::ffff:127.0.0.1', eg
"
}

# ------------------------------------------------------------ no way around the proxy

@test "egress: a direct connection that ignores the proxy (--noproxy '*') fails and reaches nothing" {
        start_server http
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" \
                "${CURL[@]}" --noproxy '*' "http://127.0.0.1:$SRV_PORT/index.txt"
        expect_status 0
        expect_line "curl_exit=7"
        expect_no_line "hello from the host"
        server_saw_nothing
        check_audit "assert eg == [], eg"
}

@test "egress: raw sockets to 10.0.0.1:80, 1.1.1.1:443, 127.0.0.1:PORT and [::1]:PORT fail" {
        start_server http
        gx --egress-allow "127.0.0.1:$SRV_PORT" \
                "${PROBE[@]}" connect 10.0.0.1 80 connect 1.1.1.1 443 connect ::1 "$SRV_PORT" connect 127.0.0.1 "$SRV_PORT"
        expect_status 0
        # TCP connect is allowed only to Glove's listeners (Landlock; docs/limits.md).
        expect_line "connect 10.0.0.1 80 EACCES"
        expect_line "connect 1.1.1.1 443 EACCES"
        # The sandbox's own loopback: nothing listens on PORT there.
        local l
        for l in "connect ::1 $SRV_PORT" "connect 127.0.0.1 $SRV_PORT"; do
                [[ "$output" == *"$l "* ]] || fail "no result for $l"
                [[ "$output" != *"$l ok"* ]] || fail "$l succeeded"
        done
        server_saw_nothing
        # Positive control: the host server answers on both loopbacks.
        "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()' "$SRV_PORT"
        if [ "$SRV_V6" = yes ]; then
                "$PY" -c 'import socket,sys; socket.create_connection(("::1", int(sys.argv[1])), timeout=3).close()' "$SRV_PORT"
        fi
}

# ------------------------------------------------------------ names

@test "egress: a name rule (localhost:PORT) resolving to loopback is refused without --egress-allow-private and works with --egress-allow-private localhost:PORT" {
        start_server http
        gx --audit-log "$LOG" --egress-allow "localhost:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel "http://localhost:$SRV_PORT/index.txt"
        expect_status 0
        expect_line "http_connect=403 http_code=000"
        server_saw_nothing
        check_audit "
assert len(eg) == 1, eg
d = eg[0]
assert d['reason'] == 'private_address' and d['host'] == 'localhost' and d['port'] == $SRV_PORT, d
assert d['address'] in ('127.0.0.1', '::1') and d['address_class'] == 'loopback', d
"
        rm -f "$LOG"
        gx --audit-log "$LOG" --egress-allow-private "LocalHost:$SRV_PORT" \
                "${CURL[@]}" --proxytunnel "http://localhost:$SRV_PORT/index.txt"
        expect_status 0
        expect_line "hello from the host"
        expect_line "http_connect=200 http_code=200"
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close'], eg
assert all(r['host'] == 'localhost' and r['address'] in ('127.0.0.1', '::1') for r in eg), eg
"
}

# ------------------------------------------------------------ the helper

@test "egress: name lookups inside fail (no resolver, no route), with and without egress" {
        local code='import socket, sys
for name in ("localhost.localdomain.invalid", "example.com", "one.one.one.one"):
    try:
        socket.getaddrinfo(name, 443, proto=socket.IPPROTO_TCP)
        print("resolved", name)
    except socket.gaierror as e:
        print("lookup-failed", name)'
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec -- "$PY" -c "$code"
        expect_status 0
        expect_no_line "resolved example.com"
        expect_no_line "resolved one.one.one.one"
        expect_line "lookup-failed example.com"
        run --separate-stderr timeout --foreground 30 "$GLOVE" exec --egress-allow example.com -- "$PY" -c "$code"
        expect_status 0
        expect_no_line "resolved example.com"
        expect_line "lookup-failed example.com"
}

@test "egress: the helper is exactly one process inside the sandbox" {
        local list='import os; print(" ".join(sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)))'
        gx -- "$PY" -c "$list"
        expect_status 0
        expect_output "1 2"
        gx --egress-allow example.com -- "$PY" -c "$list"
        expect_status 0
        expect_output "1 2 3"
}

@test "egress: the helper counts in --pids: 3 is enough for a tunnel, 2 is refused at parse time (usage.pids_too_low)" {
        gx --pids 64 -- /bin/true
        if [ "$status" -eq 125 ]; then
                local code
                code=$(glove_error_code)
                [[ "$code" == cgroup.not_delegated || "$code" == cgroup.unavailable ]] || fail "unexpected 125"
                skip "--pids needs a run cgroup, which uid $(id -u) has not here ($code)"
        fi
        start_server http
        gx --pids 3 --egress-allow "127.0.0.1:$SRV_PORT" \
                -- /usr/bin/curl -sS --max-time 10 --proxytunnel "http://127.0.0.1:$SRV_PORT/index.txt"
        expect_status 0
        expect_output "hello from the host"
        # 2 could never run (PID 1, the helper and the agent): refused before
        # anything starts, with the reason, not a pids breach blamed on curl.
        gx --pids 2 --egress-allow "127.0.0.1:$SRV_PORT" \
                -- /usr/bin/curl -sS --max-time 10 --proxytunnel "http://127.0.0.1:$SRV_PORT/index.txt"
        expect_glove_error 125
        [ "$(glove_error_code)" = usage.pids_too_low ] || fail "expected usage.pids_too_low"
        [[ "$stderr" == *"egress helper"* ]] || fail "the reason does not name the egress helper"
        [[ "$stderr" != *"limits.pids"* ]] || fail "a pids breach was reported"
        # Without egress, 2 is enough for the same program (PID 1 + agent).
        gx --pids 2 -- /bin/true
        expect_status 0
}

# ------------------------------------------------------------ glove run

@test "egress: glove run gives the agent the same audited egress" {
        start_server http
        local upy=$AGENTS/mcp-upstream.py
        run --separate-stderr timeout --foreground -k 5 "$GLOVE_TIMEOUT" "$GLOVE" run --audit-log "$LOG" \
                --upstream "py=$PY,$upy" --upstream-ro "py:$AGENTS" --allow 'py.*' --egress-allow "127.0.0.1:$SRV_PORT" \
                -- /bin/sh -c '/usr/bin/curl -sS --max-time 10 --proxytunnel "$1" >&2; echo "curl_exit=$?" >&2
                               /usr/bin/curl -sS --max-time 10 --proxytunnel "$2" >/dev/null 2>&1 || true' sh \
                "http://127.0.0.1:$SRV_PORT/index.txt" "http://127.0.0.1:1/"
        expect_status 0
        [[ "$stderr" == *"hello from the host"* && "$stderr" == *"curl_exit=0"* ]] || fail "the tunnel did not work in glove run"
        grep -qx "request GET /index.txt HTTP/1.1" "$SRV_LOG" || fail "the server did not get the request"
        # The refusal is said on stderr too, once.
        [ "$(grep -c '^glove: warning: egress\.denied: CONNECT 127\.0\.0\.1:1 refused with 403 (not_allowed: no --egress-allow' <<<"$stderr")" -eq 1 ] ||
                fail "the refused CONNECT is not said once on glove run's stderr: $stderr"
        check_audit "
assert [r['phase'] for r in eg] == ['open', 'close', 'deny'], eg
assert eg[1]['bytes_up'] > 0 and eg[1]['bytes_down'] > 0, eg
"
}

# ------------------------------------------------------------ option errors

@test "egress: the old bare --egress-allow-private is refused (125 egress.private_needs_rule), exec and run" {
        local -a forms=(
                "--egress-allow-private -- /bin/echo AGENT-RAN"
                "--egress-allow 127.0.0.1:8080 --egress-allow-private -- /bin/echo AGENT-RAN"
                "--egress-allow-private --egress-allow 127.0.0.1:8080 -- /bin/echo AGENT-RAN"
                "--egress-allow-private="
                "--egress-allow-private"
        )
        local f
        for f in "${forms[@]}"; do
                # shellcheck disable=SC2086 # the forms are word lists
                gx $f
                expect_glove_error 125
                [ "$(glove_error_code)" = egress.private_needs_rule ] || fail "'$f': expected egress.private_needs_rule"
                [[ "$stderr" == *"--egress-allow-private HOST[:PORT]"* ]] || fail "'$f': the message does not say what to write"
                expect_no_text AGENT-RAN
        done
        g run --egress-allow-private --upstream "py=$PY,$AGENTS/mcp-upstream.py" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = egress.private_needs_rule ] || fail "expected egress.private_needs_rule"
        expect_no_text AGENT-RAN
        # A malformed rule given to --egress-allow-private names its option.
        gx --egress-allow-private "exa mple.com" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = egress.bad_host ] || fail "expected egress.bad_host"
        [[ "$stderr" == *"--egress-allow-private exa mple.com"* ]] || fail "the message does not name the option"
}

@test "egress: malformed rules are refused (125) with their stable code before the agent runs" {
        local rule code
        while read -r code rule; do
                gx --egress-allow "$rule" -- /bin/echo AGENT-RAN
                expect_glove_error 125
                [ "$(glove_error_code)" = "$code" ] || fail "rule '$rule': expected $code"
                expect_no_text AGENT-RAN
        done <<'EOF'
egress.bad_host exa mple.com
egress.bad_port example.com:99999
egress.bad_port example.com:0
egress.bad_port example.com:0443
egress.bad_port example.com:
egress.bad_host *.example.com
egress.bad_host https://example.com
egress.bad_host example.com.
egress.bad_host 127.1
egress.ipv6_needs_brackets ::1
egress.bad_ipv6 [fe80::1%eth0]:443
egress.suffix_on_address .127.0.0.1
egress.empty :443
EOF
        gx --egress-allow "" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = egress.empty ] || fail "empty rule: expected egress.empty"
        gx --egress-allow "bücher.example" -- /bin/echo AGENT-RAN
        expect_glove_error 125
        [ "$(glove_error_code)" = egress.non_ascii ] || fail "expected egress.non_ascii"
}

# ------------------------------------------------------------ audit

@test "egress: the proxy token never appears in the audit log" {
        start_server http
        gx --audit-log "$LOG" --egress-allow "127.0.0.1:$SRV_PORT" -- /bin/sh -c '
                echo "proxy=$HTTPS_PROXY"
                /usr/bin/curl -sS --max-time 10 --proxytunnel "$1" >/dev/null
                /usr/bin/curl -sS --max-time 10 "$1" >/dev/null
                /usr/bin/curl -sS --max-time 10 --proxytunnel -x "${HTTPS_PROXY%@*}x@127.0.0.1:3128" "$1" >/dev/null
                exit 0' sh "http://127.0.0.1:$SRV_PORT/index.txt"
        expect_status 0
        local token b64
        token=$(printf '%s\n' "$output" | sed -n 's|^proxy=http://glove:\([0-9a-f]\{64\}\)@.*|\1|p')
        [ ${#token} -eq 64 ] || fail "no token seen by the agent"
        b64=$(printf 'glove:%s' "$token" | base64 -w0)
        check_audit "
assert [r['reason'] for r in eg] == ['ok', 'closed', 'ok', 'closed', 'bad_auth'], eg
assert [r['method'] for r in eg] == ['CONNECT', 'CONNECT', 'GET', 'GET', 'CONNECT'], eg
for needle in ('$token', '$b64', '${b64%%=*}'):
    assert needle not in raw, 'the token reached the audit log'
"
        # Nor the server: the forwarded request went without it.
        for needle in "$token" "$b64" "${b64%%=*}"; do
                ! grep -qF "$needle" "$SRV_LOG" || fail "the token reached the server"
        done
}

# audit_failure_run: a run whose audit log stops accepting appends once the
# agent is running (RLIMIT_FSIZE lowered on Glove to the log's size after the
# launch record; ulimit -f from the start stops Glove's own sandbox set-up,
# and /dev/full fails the launch record already). Then the agent asks for a
# tunnel. Sets AF_OUT, AF_ERR, WSTATUS, AF_SECS.
audit_failure_run() {
        start_server echo
        mkdir -p "$T/gate"
        AF_OUT=$T/out AF_ERR=$T/err
        spawn_glove "$AF_OUT" "$AF_ERR" --audit-log "$LOG" --read "$T/gate" \
                --egress-allow "127.0.0.1:$SRV_PORT" -- /bin/sh -c '
                echo ready
                while [ ! -e "$1/go" ]; do sleep 0.05; done
                /usr/bin/curl -sS --max-time 10 --proxytunnel "$2" 2>&1
                echo "curl_exit=$?"
                sleep 4
                echo AGENT-WENT-ON' sh "$T/gate" "http://127.0.0.1:$SRV_PORT/index.txt"
        wait_for "$AF_OUT" '^ready$' 10
        local size
        size=$(stat -c %s "$LOG")
        "$PY" -c 'import resource, sys; n = int(sys.argv[2]); resource.prlimit(int(sys.argv[1]), resource.RLIMIT_FSIZE, (n, n))' \
                "$GPID" "$size"
        local t0=$SECONDS
        touch "$T/gate/go"
        wait_exit "$GPID" 15
        AF_SECS=$((SECONDS - t0))
}

@test "egress: an egress audit record that cannot be appended refuses the tunnel, stops the agent, exit 125" {
        audit_failure_run
        [ "$WSTATUS" -eq 125 ] || { cat "$AF_OUT" "$AF_ERR" >&2; fail "exit status $WSTATUS, expected 125"; }
        ! grep -q AGENT-WENT-ON "$AF_OUT" || fail "the agent went on after the failed audit append"
        [ "$AF_SECS" -lt 4 ] || fail "glove took ${AF_SECS}s: the agent was not stopped"
        ! grep -q "^GET " "$AF_OUT" || fail "the agent got a tunnel without an audit record"
        grep -q '^glove: audit.append: ' "$AF_ERR" || { cat "$AF_ERR" >&2; fail "no audit.append error"; }
        # The relay connects before it writes the open record (the record names
        # the address connected to), so the server may see a connection; but
        # not one byte may pass.
        if grep -vqxE 'accept v4|accept v6|eof 0' "$SRV_LOG"; then
                cat "$SRV_LOG" >&2
                fail "bytes reached the server through a tunnel without an audit record"
        fi
        check_audit "
assert eg == [], eg
assert [r['event'] for r in recs] == ['launch'], recs
"
}

@test "egress: a failed egress audit append is reported in one error line, without spurious warnings" {
        # Glove's convention (expect_glove_error): a 125 says why in exactly one
        # line. Found (9c0ec4f): it also printed 'sandbox.lost: sandbox PID 1
        # was killed by signal 9' (Glove killed it itself), a second
        # audit.append line and two 'drain.timeout' warnings (the output pumps
        # were stopped twice; fixed in e943c2b).
        audit_failure_run
        [ "$WSTATUS" -eq 125 ] || { cat "$AF_OUT" "$AF_ERR" >&2; fail "exit status $WSTATUS, expected 125"; }
        status=$WSTATUS output=$(cat "$AF_OUT") stderr=$(cat "$AF_ERR")
        [[ "$stderr" != *"drain.timeout"* ]] || fail "spurious drain.timeout warning: nothing was still writing"
        [[ "$stderr" != *"sandbox.lost"* ]] || fail "Glove reports the sandbox it stopped itself as lost"
        expect_glove_error 125
        [ "$(glove_error_code)" = audit.append ] || fail "expected audit.append"
}
