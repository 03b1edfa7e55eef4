#!/usr/bin/python3
"""sessctl.py: a small client of gloved's managed sessions, for the tests.

    sessctl.py policy GLOVED OUT ARGV_JSON [LIMITS_JSON...]
        Writes OUT (0600): a policy with one linux_production template "py"
        (runtime "pyrt") launching ARGV_JSON[0] with ARGV_JSON[1:], and the
        profiles: the default limits and each LIMITS_JSON over them. Its adapter_command_digest is learnt from gloved's own
        refusal message (the digest is documented in docs/digests.md).
    sessctl.py plan OUT LIMITS_JSON [OFFSET_MS]   (LIMITS_JSON over the defaults)
        A canonical plan for that policy, expiring OFFSET_MS (60000) from now.
    sessctl.py call RT METHOD PARAMS_JSON
        One request; prints the response (compact, sorted keys).
    sessctl.py create RT ID PLANFILE
    sessctl.py watch RT ID
        attach, then prints "attach <result>", the decoded output as one
        "output <json string>" line, and the final notice; stops at
        session_ended or session_detached.
    sessctl.py slow RT ID READY GO
        A client that attaches and then reads nothing: sends attach, creates
        READY, waits (at most 120 s) for GO to exist, then reads everything
        and prints "slow output_frames=N last=EVENT", EVENT being
        session_detached:REASON, session_ended or EOF.
    sessctl.py trickle RT ID READY GO
        A client that attaches and reads slowly (64 KiB every 50 ms, so its
        connection keeps making progress) until GO exists, then reads at full
        speed and prints "trickle output_frames=N gaps=G skipped=S last=EVENT",
        S the sum of the session_output_gap skipped_bytes (-1 when a gap
        arrived out of order: before any output, or twice in a row).
"""
import base64, json, os, socket, struct, subprocess, sys, time

CD = "1" * 64


def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


DEFAULT = {"cpu_time_ms": 60000, "memory_bytes": 268435456, "pids": 64, "wall_time_ms": 60000,
           "disk_bytes": 16777216, "terminal_output_bytes": 1048576}


def policy_obj(argv, digest, profiles=()):
    return {
        "schema_version": 1, "revision": 1, "max_plan_ttl_ms": 120000,
        "runtime_templates": [{
            "runtime_template_id": "py", "runtime_id": "pyrt", "adapter_command_digest": digest,
            "sandbox_backend": "linux_production", "allowed_path_aliases": [],
            "allowed_projection_destinations": [],
            "launch": {"executable_path": argv[0], "arguments": argv[1:],
                       "environment": ["PATH=/usr/bin:/bin"], "read_only_paths": []}}],
        "path_aliases": [], "library_projection_destinations": [],
        "resource_profiles": [dict(profile_id="p%d" % i, **lim) for i, lim in enumerate([DEFAULT] + list(profiles))],
        "egress_policy_ids": ["no-network"], "tool_policy_ids": ["t"], "secret_handles": [],
        "egress_policies": [{"policy_id": "no-network", "targets": []}], "secret_mounts": []}


def write600(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, 0o600)


def mkpolicy(gloved, out, argv, profiles):
    write600(out, json.dumps(policy_obj(argv, "0" * 64, profiles)))
    d = os.path.dirname(out)
    p = subprocess.run([gloved, "--runtime-dir", d + "/probe-rt", "--state-dir", d + "/probe-st",
                        "--session-policy", out], capture_output=True, text=True, timeout=20)
    msg = p.stderr
    key = "runtime_launch_template_digest is "
    if key not in msg:
        raise SystemExit("no digest in gloved's refusal: " + msg)
    digest = msg.split(key, 1)[1][:64]
    write600(out, json.dumps(policy_obj(argv, digest, profiles)))
    open(out + ".digest", "w").write(digest)


def mkplan(out, limits, off):
    pol = out.rsplit("/", 1)[0] + "/policy.json"
    digest = open(pol + ".digest").read()
    plan = {"adapter_command_digest": digest, "egress_policy_id": "no-network",
            "expires_at_ms": int(time.time() * 1000) + off, "library_projections": [], "limits": limits,
            "path_grants": [], "policy_revision": 1, "runtime_id": "pyrt", "runtime_template_id": "py",
            "sandbox_backend": "linux_production", "schema_version": 1, "secret_handles": [],
            "tool_policy_id": "t"}
    open(out, "w").write(canon(plan))


def connect(rt):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(rt, "gloved.sock"))
    s.settimeout(60)
    sec = open(os.path.join(rt, "bootstrap-secret")).read().strip()
    send(s, {"id": 0, "method": "authenticate", "params": {"secret": sec}})
    read(s)
    return s


def send(s, o):
    b = json.dumps(o).encode()
    s.sendall(struct.pack(">I", len(b)) + b)


def exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            return None
        buf += c
    return buf


def read(s):
    h = exact(s, 4)
    if h is None:
        return None
    return json.loads(exact(s, struct.unpack(">I", h)[0]))


def call(s, method, params, rid=1):
    send(s, {"id": rid, "method": method, "params": params})
    while True:
        r = read(s)
        if r is None or "id" in r:
            return r


def main():
    cmd = sys.argv[1]
    if cmd == "policy":
        return mkpolicy(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]),
                        [dict(DEFAULT, **json.loads(x)) for x in sys.argv[5:]])
    if cmd == "plan":
        lim = dict(DEFAULT, **json.loads(sys.argv[3]))
        return mkplan(sys.argv[2], lim, int(sys.argv[4]) if len(sys.argv) > 4 else 60000)
    rt = sys.argv[2]
    s = connect(rt)
    if cmd == "call":
        print(canon(call(s, sys.argv[3], json.loads(sys.argv[4]))))
    elif cmd == "create":
        plan = open(sys.argv[4]).read()
        print(canon(call(s, "create_session", {"session_id": sys.argv[3], "idempotency_key": "k-" + sys.argv[3],
                                               "controller_plan_digest": CD, "plan": plan})))
    elif cmd == "slow":
        send(s, {"id": 1, "method": "attach", "params": {"session_id": sys.argv[3]}})
        open(sys.argv[4], "w").close()
        for _ in range(1200):
            if os.path.exists(sys.argv[5]):
                break
            time.sleep(0.1)
        n, last = 0, "EOF"
        while True:
            try:
                m = read(s)
            except OSError:
                m = None
            if m is None:
                break
            meth = m.get("method")
            if meth == "session_output":
                n += 1
            elif meth == "session_detached":
                last = "session_detached:" + m["params"]["reason"]
                break
            elif meth == "session_ended":
                last = "session_ended"
                break
        print("slow output_frames=%d last=%s" % (n, last))
    elif cmd == "trickle":
        send(s, {"id": 1, "method": "attach", "params": {"session_id": sys.argv[3]}})
        open(sys.argv[4], "w").close()
        early = bytearray()
        for _ in range(2400):
            if os.path.exists(sys.argv[5]):
                break
            s.settimeout(0.05)
            try:
                c = s.recv(65536)
                if not c:
                    break
                early += c
            except socket.timeout:
                pass
            time.sleep(0.05)
        s.settimeout(60)
        pos = [0]

        def frame():
            while len(early) - pos[0] < 4 or len(early) - pos[0] < 4 + struct.unpack(">I", early[pos[0]:pos[0] + 4])[0]:
                try:
                    c = s.recv(1 << 20)
                except OSError:
                    c = b""
                if not c:
                    return None
                early.extend(c)
            n = struct.unpack(">I", early[pos[0]:pos[0] + 4])[0]
            m = json.loads(bytes(early[pos[0] + 4:pos[0] + 4 + n]))
            pos[0] += 4 + n
            return m
        n, gaps, skipped, last, prev = 0, 0, 0, "EOF", "attach"
        while True:
            m = frame()
            if m is None:
                break
            meth = m.get("method")
            if meth == "session_output":
                n += 1
            elif meth == "session_output_gap":
                gaps += 1
                if prev != "session_output" or skipped < 0:
                    skipped = -1
                else:
                    skipped += m["params"]["skipped_bytes"]
            elif meth == "session_detached":
                last = "session_detached:" + m["params"]["reason"]
                break
            elif meth == "session_ended":
                last = "session_ended"
                break
            if meth:
                prev = meth
        print("trickle output_frames=%d gaps=%d skipped=%d last=%s" % (n, gaps, skipped, last))
    elif cmd == "watch":
        r = call(s, "attach", {"session_id": sys.argv[3]})
        print("attach " + canon(r))
        res = r.get("result", {})
        out = bytearray(base64.b64decode(res.get("transcript_b64", "")))
        if res.get("attached"):
            while True:
                m = read(s)
                if m is None:
                    print("EOF")
                    break
                if m.get("method") == "session_output":
                    out += base64.b64decode(m["params"]["data_b64"])
                    continue
                print("output " + json.dumps(out.decode(errors="replace")))
                out = None
                print(m["method"] + " " + canon(m["params"]))
                break
        if out is not None:
            print("output " + json.dumps(out.decode(errors="replace")))


if __name__ == "__main__":
    main()
