#!/usr/bin/python3
"""recovery.py: host-side checks and fixtures of the recovery tests
(tests/integration/gloved_recovery.bats: sessions outlive gloved). The bats
file starts and kills gloved; this program looks at what is left.

Sessions (RT is gloved's runtime directory, ST its state directory):
    recovery.py wait RT ID STATE[,STATE...] [SECONDS]
        Polls session_status (reconnecting while gloved is not up) until the
        session is in one of the states; prints it. Exit 1 on timeout (60 s).
    recovery.py count RT ID [--min N] [--resize]
        The "count" agent (tests/agents/managed_agent.py): attaches, reads
        until its output holds "seq N" with N >= MIN (1), optionally resizes
        the terminal, writes "quit", reads to session_ended, and checks that
        the transcript plus the output is "seq 1" .. "seq LAST" with no
        number missing or repeated, then "count-done LAST". Prints
        "count ok last=LAST" (exit 0) or what is wrong (exit 1).
    recovery.py watch RT ID OUT
        An attached client: OUT gets the transcript, then every output byte
        as it arrives; OUT.end gets "EOF" (the connection closed: gloved died)
        or the final notice's method.
    recovery.py seqcheck FILE
        FILE holds count output from "seq 1" on: prints "seqcheck ok last=N"
        when no number is missing or repeated, else exit 1.
    recovery.py receipts RT ST [--exact] [--usage ID]... ID=STATE:KIND[:CODE]...
        Exactly one session.terminal receipt for each ID, with that state,
        termination kind and code (a code "-" means none), and the session's
        store state STATE; --exact: no other receipt at all; --usage ID: that
        receipt's usage counts output and wall time (> 0). The chain of a
        copy of ST/receipts.journal verifies (tests/agents/verify_receipts.py
        with ST/receipt.key and the page's anchor). Exit 1 naming each
        problem.

Host state (processes named glove-keeper or glove-init, run cgroups
glove-PID-HEX in any hierarchy under /sys/fs/cgroup, mount points, loop
devices), only this test's: FILE.pids lists the gloved PIDs it started (the
bats file appends them); a keeper is the test's when its descriptors name a
file under ROOT or ROOT/keepers/ID.status names it; a run cgroup when the PID
in its name is one of those; a PID 1 when it is in such a cgroup. Another
suite running on the host at the same time is neither counted nor touched.
    recovery.py snapshot FILE
        Writes what exists now (the state before the test).
    recovery.py leftovers FILE ROOT [--ns-pid PID] [--frozen-images] [--live ID]...
        Everything of the test's that appeared since the snapshot and is
        still there: a keeper or PID 1, a run cgroup (with its processes), a
        mount point (under ROOT, the materialization root, in this
        namespace and in PID's; new ones beside ROOT in its parent), a loop device backed by a file under ROOT,
        a keeper file in ROOT/keepers. --frozen-images allows read-only
        mounts of read-only loop devices backed by ROOT/images/* (retained
        images re-attached after a host restart); --live ID allows the
        keeper files of a session that still runs. Prints each one; exit 1
        when there is any.
    recovery.py simulate-reboot FILE ROOT
        What a host restart takes away, on this host: SIGKILL to every
        keeper and PID 1 and every process in a run cgroup that appeared
        since the snapshot, their cgroups removed, every mount under ROOT
        unmounted (deepest first) and every loop device backed by a file
        under ROOT detached. The files (images, keeper status files, empty
        mountpoints) stay, as they would on disk.
    recovery.py keepers FILE ROOT
        The PIDs of this test's processes named glove-keeper that appeared
        since the snapshot FILE, one a line.
    recovery.py frozen IMAGE PID
        A read-only loop device backs IMAGE and is mounted read-only in
        PID's mount namespace (a retained image re-attached, frozen); exit 1
        saying what is not so.

Fixtures:
    recovery.py sigrec LOG READY
        A process that records every signal it receives: a handler for every
        catchable signal appends "signal N" to LOG; READY is created once the
        handlers are installed. Runs until SIGKILL.
    recovery.py signals PID LOG
        Prints "alive" and nothing else when PID is alive (not a zombie),
        has no signal pending (SigPnd, ShdPnd zero) and LOG is empty; else
        what is wrong, exit 1.
    recovery.py starttime PID
        Field 22 of /proc/PID/stat.
    recovery.py cgroup NAME PID
        Best effort: a cgroup NAME next to the run cgroups' hierarchy root
        (v2: /sys/fs/cgroup; v1: /sys/fs/cgroup/memory) holding PID; prints
        "DIR INODE", or "none" when it cannot be made.
    recovery.py fixture STORE PLAN ID --pid P --pid-start-time T
            --keeper-pid K --keeper-start-time KT --cgroup-dir D
            --cgroup-inode I [--boot-id B]
        Writes the session store STORE (and STORE.seal) in the store's own
        format (journal_format.py): the create record of PLAN, then
        created>preparing>starting>running, the running transition with the
        runtime identity {"boot_id","cgroup":{"dir","inode"},"keeper":{"pid",
        "start_time","socket":"keepers/ID.sock"},"materializations":[],"pid",
        "pid_start_time"} (boot id: this host's unless given).
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import re
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import journal_format  # noqa: E402
import sessctl  # noqa: E402

NAMES = ("glove-keeper", "glove-init")
CGROUP_ROOT = "/sys/fs/cgroup"


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------ sessions

def connect(rt, secs=60):
    deadline = time.monotonic() + secs
    while True:
        try:
            return sessctl.connect(rt)
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def status(rt, sid):
    s = connect(rt)
    try:
        return sessctl.call(s, "session_status", {"session_id": sid})
    finally:
        s.close()


def cmd_wait(rt, sid, states, secs="60"):
    want = states.split(",")
    deadline = time.monotonic() + float(secs)
    st = None
    while time.monotonic() < deadline:
        try:
            r = status(rt, sid)
            st = (r or {}).get("result", {}).get("state")
        except OSError:
            st = None
        if st in want:
            print(st)
            return
        time.sleep(0.1)
    die("session %s is %s, not %s, after %s s" % (sid, st, states, secs))


def seq_problems(text):
    """(last, problems) of count output: "seq 1".."seq LAST", nothing
    missing or repeated, other lines (ready, count-done, echo) aside."""
    nums = []
    for line in text.replace("\r", "\n").split("\n"):
        if line.startswith("seq "):
            try:
                nums.append(int(line[4:]))
            except ValueError:
                return 0, ["a torn line %r" % line]
    if not nums:
        return 0, ["no seq line at all"]
    probs = []
    if nums[0] != 1:
        probs.append("the output starts at seq %d, not 1" % nums[0])
    for a, b in zip(nums, nums[1:]):
        if b != a + 1:
            probs.append("seq %d is followed by seq %d" % (a, b))
            if len(probs) > 5:
                break
    return nums[-1], probs


def attach_reader(s):
    """Reads pushed frames: returns (method, params) or (None, None) at EOF."""
    m = sessctl.read(s)
    if m is None:
        return None, None
    return m.get("method") or ("response" if "id" in m else None), m


def cmd_count(rt, sid, *opts):
    min_n, resize = 1, False
    it = iter(opts)
    for o in it:
        if o == "--min":
            min_n = int(next(it))
        elif o == "--resize":
            resize = True
        else:
            die("count: unknown option " + o)
    s = connect(rt)
    s.settimeout(120)
    r = sessctl.call(s, "attach", {"session_id": sid})
    res = (r or {}).get("result")
    if not res or not res.get("attached"):
        die("count: attach to %s answered %s" % (sid, json.dumps(r)[:500]))
    out = bytearray(base64.b64decode(res.get("transcript_b64", "")))
    quit_sent, rid, end = False, 10, None
    while end is None:
        last, _ = seq_problems(out.decode(errors="replace"))
        if not quit_sent and last >= min_n:
            if resize:
                sessctl.send(s, {"id": rid, "method": "resize", "params": {"session_id": sid, "rows": 33, "cols": 101}})
                rid += 1
            sessctl.send(s, {"id": rid, "method": "write_stdin",
                             "params": {"session_id": sid, "data_b64": base64.b64encode(b"quit\n").decode()}})
            quit_sent = True
        meth, m = attach_reader(s)
        if meth is None:
            end = "EOF"
        elif meth == "session_output":
            out += base64.b64decode(m["params"]["data_b64"])
        elif meth == "response":
            if "error" in m:
                die("count: request %s failed: %s" % (m.get("id"), json.dumps(m)))
        elif meth in ("session_ended", "session_detached"):
            end = meth
        elif meth == "session_output_gap":
            die("count: output was skipped for this client: %s" % json.dumps(m))
    text = out.decode(errors="replace")
    last, probs = seq_problems(text)
    if end != "session_ended":
        probs.append("the attachment ended with %s, not session_ended" % end)
    if "count-done %d" % last not in text:
        probs.append("no 'count-done %d' (the agent's own count) after the last seq" % last)
    if "hup" in text.replace("\r", "\n").split("\n"):
        probs.append("the agent's terminal hung up (it printed hup)")
    if probs:
        die("count: %s\n  output tail: %r" % ("; ".join(probs), text[-300:]))
    print("count ok last=%d" % last)


def cmd_watch(rt, sid, outpath):
    s = connect(rt)
    s.settimeout(None)
    with open(outpath, "ab", buffering=0) as f:
        r = sessctl.call(s, "attach", {"session_id": sid})
        res = (r or {}).get("result") or {}
        f.write(base64.b64decode(res.get("transcript_b64", "")))
        end = "EOF"
        while True:
            try:
                meth, m = attach_reader(s)
            except OSError:
                meth = None
            if meth is None:
                break
            if meth == "session_output":
                f.write(base64.b64decode(m["params"]["data_b64"]))
            elif meth in ("session_ended", "session_detached"):
                end = meth
                break
    with open(outpath + ".end", "w") as e:
        e.write(end + "\n")


def cmd_seqcheck(path):
    last, probs = seq_problems(open(path, "rb").read().decode(errors="replace"))
    if probs:
        die("seqcheck: " + "; ".join(probs))
    print("seqcheck ok last=%d" % last)


def all_envelopes(rt):
    s = connect(rt)
    envs, after, anchor = [], 0, None
    try:
        while True:
            r = sessctl.call(s, "receipts_page", {"after_sequence": after, "limit": 256})
            res = r["result"]
            anchor = res["anchor"]
            envs += [e["envelope"] for e in res["envelopes"]]
            if not res.get("more") or not res["envelopes"]:
                break
            after = res["envelopes"][-1]["sequence"]
    finally:
        s.close()
    return envs, anchor


def cmd_receipts(rt, st, *args):
    exact, usage, want = False, [], {}
    it = iter(args)
    for a in it:
        if a == "--exact":
            exact = True
        elif a == "--usage":
            usage.append(next(it))
        else:
            sid, spec = a.split("=", 1)
            parts = spec.split(":")
            want[sid] = (parts + [None, None])[:3]
    envs, anchor = all_envelopes(rt)
    probs = []
    per = {}
    for e in envs:
        if e.get("kind") == "session.terminal":
            per.setdefault(e["session_id"], []).append(e["receipt"])
    for sid, (state, kind, code) in want.items():
        got = per.get(sid, [])
        if len(got) != 1:
            probs.append("%s has %d terminal receipts, not 1" % (sid, len(got)))
            continue
        rc = got[0]
        t = rc.get("termination", {})
        desc = "%s: receipt state %s termination %s" % (sid, rc.get("state"), json.dumps(t, sort_keys=True))
        if rc.get("state") != state:
            probs.append(desc + ": state is not " + state)
        if kind and t.get("kind") != kind:
            probs.append(desc + ": kind is not " + kind)
        if code and code != "-" and t.get("code") != code:
            probs.append(desc + ": code is not " + code)
        if code == "-" and "code" in t:
            probs.append(desc + ": has a code")
        if sid in usage:
            u = rc.get("usage", {})
            if not (u.get("output_bytes", 0) > 0 and u.get("wall_time_ms", 0) > 0):
                probs.append("%s: the receipt's usage records nothing: %s" % (sid, json.dumps(u, sort_keys=True)))
        r = status(rt, sid)
        sst = (r or {}).get("result", {}).get("state")
        if sst != state:
            probs.append("%s: the store says %s, not %s" % (sid, sst, state))
    if exact:
        others = [e.get("session_id") for e in envs if e.get("session_id") not in want]
        if others:
            probs.append("receipts of other sessions: %s" % ", ".join(map(str, others)))
        if len(envs) != len(want):
            probs.append("%d receipts in the journal, expected %d" % (len(envs), len(want)))
    # The chain, from the journal itself.
    verify = os.path.join(os.environ.get("GLOVE_AGENTS", os.path.join(HERE, "..", "..", "agents")),
                          "verify_receipts.py")
    with tempfile.TemporaryDirectory() as d:
        j = os.path.join(d, "receipts.journal")
        shutil.copyfile(os.path.join(st, "receipts.journal"), j)
        p = subprocess.run([sys.executable, verify, "--key", os.path.join(st, "receipt.key"), "--anchor", anchor,
                            "--journal", j], capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or not p.stdout.startswith("ok: journal: %d records verified" % len(envs)):
            probs.append("the receipt chain does not verify: %s %s" % (p.stdout.strip(), p.stderr.strip()))
    if probs:
        for e in envs:
            print("  receipt: %s" % json.dumps({k: e["receipt"].get(k) for k in ("session_id", "state", "termination",
                                                                                   "exit_code", "started_at_ms")}
                                              if e.get("kind") == "session.terminal" else e, sort_keys=True),
                  file=sys.stderr)
        die("receipts: " + "\n  ".join(probs))
    print("receipts ok: %d, chain verified" % len(envs))


# ------------------------------------------------------------ host state

def named_procs():
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            comm = open("/proc/%s/comm" % p).read().strip()
            st = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        if comm in NAMES and st.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
            out.append({"pid": int(p), "comm": comm, "start": int(st.rsplit(")", 1)[1].split()[19])})
    return out


def run_cgroups():
    found = []
    for top, dirs, _ in os.walk(CGROUP_ROOT, onerror=lambda e: None):
        if top.count("/") - CGROUP_ROOT.count("/") >= 8:
            dirs[:] = []
            continue
        for d in list(dirs):
            if d.startswith("glove-"):
                found.append(os.path.join(top, d))
                dirs.remove(d)
    return sorted(found)


def mountinfo(pid="self"):
    rows = []
    try:
        for line in open("/proc/%s/mountinfo" % pid):
            f = line.split()
            sep = f.index("-")
            rows.append({"point": f[4].replace("\\040", " "), "opts": f[5], "fstype": f[sep + 1],
                         "source": f[sep + 2]})
    except OSError:
        pass
    return rows


def loops():
    try:
        p = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE,RO"], capture_output=True,
                           text=True, timeout=20)
        return [{"name": d.get("name"), "back": (d.get("back-file") or "").replace(" (deleted)", ""),
                 "ro": d.get("ro") in (True, 1, "1")} for d in json.loads(p.stdout or "{}").get("loopdevices", [])]
    except (OSError, ValueError, subprocess.SubprocessError):
        return []


def snapshot():
    return {"procs": [(p["pid"], p["start"]) for p in named_procs()], "cgroups": run_cgroups(),
            "mounts": sorted({m["point"] for m in mountinfo()}), "loops": sorted(l["name"] for l in loops())}


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def fd_links(pid):
    out = []
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:
                pass
    except OSError:
        pass
    return out


def our_pids(snapfile, root):
    """The PIDs that are this test's: every gloved it started (FILE.pids,
    one a line, appended by the bats file), every keeper whose descriptors
    name a file under ROOT (its keepers/ID.log and ID.sock), and every
    keeper a status file under ROOT/keepers names. Keepers seen are added
    to FILE.pids, so that their cgroups are still known once they are gone.
    Other glove processes on the host (another suite running at the same
    time) are never counted, nor touched."""
    pids = set()
    path = snapfile + ".pids"
    if os.path.exists(path):
        pids |= {int(x) for x in open(path).read().split() if x.isdigit()}
    kd = os.path.join(root, "keepers")
    if os.path.isdir(kd):
        for name in os.listdir(kd):
            if name.endswith(".status"):
                try:
                    pids.add(int(json.load(open(os.path.join(kd, name)))["keeper"]["pid"]))
                except (OSError, ValueError, KeyError, TypeError):
                    pass
    seen = set()
    for p in named_procs():
        if p["comm"] == "glove-keeper" and any(under(l, root) for l in fd_links(p["pid"])):
            seen.add(p["pid"])
    if seen - pids:
        with open(path, "a") as f:
            f.write("".join("%d\n" % x for x in sorted(seen - pids)))
    return pids | seen


def cgroup_owner(c):
    """The pid in a run cgroup's name (glove-PID-HEX), or 0."""
    parts = os.path.basename(c).split("-")
    return int(parts[1]) if len(parts) == 3 and parts[0] == "glove" and parts[1].isdigit() else 0


def new_things(snap, root, snapfile):
    """(processes, cgroups) of this test that appeared since the snapshot."""
    ours = our_pids(snapfile, root)
    cgroups = [c for c in run_cgroups() if c not in snap["cgroups"] and cgroup_owner(c) in ours]
    names = {os.path.basename(c) for c in cgroups}
    old_procs = {tuple(x) for x in snap["procs"]}
    procs = []
    for p in named_procs():
        if (p["pid"], p["start"]) in old_procs:
            continue
        try:
            cg = open("/proc/%d/cgroup" % p["pid"]).read()
        except OSError:
            continue
        if p["pid"] in ours or any("/" + n in cg for n in names) or \
                any(cgroup_owner(x.rsplit("/", 1)[-1]) in ours for x in cg.split()):
            procs.append(p)
    return procs, cgroups


def cgroup_procs(c):
    try:
        return [int(x) for x in open(os.path.join(c, "cgroup.procs")).read().split()]
    except (OSError, ValueError):
        return []


def cmd_snapshot(path):
    with open(path, "w") as f:
        json.dump(snapshot(), f)


def cmd_leftovers(path, root, *opts):
    snap = json.load(open(path))
    root = os.path.realpath(root)
    ns_pid, frozen, live = None, False, []
    it = iter(opts)
    for o in it:
        if o == "--ns-pid":
            ns_pid = next(it)
        elif o == "--frozen-images":
            frozen = True
        elif o == "--live":
            live.append(next(it))
        else:
            die("leftovers: unknown option " + o)
    # A run cgroup is removed after its processes: give the host a moment
    # to finish what it was doing (no time is asserted: this only polls).
    probs = []
    for _ in range(100):
        procs, cgroups = new_things(snap, root, path)
        if not procs and not cgroups:
            break
        time.sleep(0.1)
    for p in procs:
        probs.append("process %d (%s) is left" % (p["pid"], p["comm"]))
    for c in cgroups:
        probs.append("run cgroup %s is left (processes %s)" % (c, cgroup_procs(c)))
    lp = loops()
    frozen_loops = {l["name"] for l in lp if under(l["back"], root + "/images") and l["ro"]} if frozen else set()
    for l in lp:
        if under(l["back"], root) and l["name"] not in frozen_loops:
            probs.append("loop device %s (%s%s) is left" % (l["name"], l["back"], ", read-only" if l["ro"] else ""))
    spaces = [("this namespace", "self")] + ([("gloved's namespace", ns_pid)] if ns_pid else [])
    for what, pid in spaces:
        for m in mountinfo(pid):
            if not under(m["point"], root):
                continue
            ro = m["opts"].split(",")[0] == "ro"
            if frozen and ro and m["source"] in frozen_loops:
                continue
            probs.append("%s: %s mount %s from %s (%s) is left" % (what, m["fstype"], m["point"], m["source"],
                                                                     m["opts"]))
    # Beside the root, in the test's own directory (another suite may
    # mount elsewhere on this host at the same time).
    old, test_dir = set(snap["mounts"]), os.path.dirname(root)
    for m in mountinfo():
        if m["point"] not in old and under(m["point"], test_dir) and not under(m["point"], root):
            probs.append("new mount %s (%s from %s) is left" % (m["point"], m["fstype"], m["source"]))
    kd = os.path.join(root, "keepers")
    if os.path.isdir(kd):
        for name in sorted(os.listdir(kd)):
            if name.rsplit(".", 1)[0] not in live:
                probs.append("keeper file %s is left" % os.path.join(kd, name))
    if probs:
        die("leftovers:\n  " + "\n  ".join(probs))
    print("leftovers: none")


def cmd_simulate_reboot(path, root):
    snap = json.load(open(path))
    root = os.path.realpath(root)
    procs, cgroups = new_things(snap, root, path)
    for p in procs:
        try:
            os.kill(p["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    for c in cgroups:
        for pid in cgroup_procs(c):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for _ in range(200):
        if not any(cgroup_procs(c) for c in cgroups) and not new_things(snap, root, path)[0]:
            break
        time.sleep(0.05)
    for c in sorted(cgroups, key=len, reverse=True):
        for top, dirs, _ in sorted(os.walk(c, topdown=False), key=lambda x: -len(x[0])):
            try:
                os.rmdir(top)
            except OSError:
                pass
    for m in sorted((m for m in mountinfo() if under(m["point"], root)), key=lambda m: -len(m["point"])):
        subprocess.run(["umount", "-l", m["point"]], capture_output=True)
    for l in loops():
        if under(l["back"], root):
            subprocess.run(["losetup", "-d", l["name"]], capture_output=True)
    procs, cgroups = new_things(snap, root, path)
    left = [m["point"] for m in mountinfo() if under(m["point"], root)]
    if procs or cgroups or left:
        die("simulate-reboot: still there: %s %s %s" % (procs, cgroups, left))
    print("rebooted")


def cmd_keepers(path, root):
    old = {tuple(x) for x in json.load(open(path))["procs"]}
    ours = our_pids(path, os.path.realpath(root))
    for p in named_procs():
        if p["comm"] == "glove-keeper" and (p["pid"], p["start"]) not in old and p["pid"] in ours:
            print(p["pid"])


def cmd_frozen(image, pid):
    """A read-only loop device backs IMAGE and is mounted read-only in PID's
    mount namespace."""
    image = os.path.realpath(image)
    devs = {l["name"]: l for l in loops() if l["back"] == image}
    for m in mountinfo(pid):
        if m["source"] in devs:
            ro = m["opts"].split(",")[0] == "ro"
            if ro and devs[m["source"]]["ro"]:
                print("frozen %s at %s" % (m["source"], m["point"]))
                return
            die("frozen: %s is mounted at %s, but not read-only (mount %s, loop ro=%s)" % (
                m["source"], m["point"], m["opts"], devs[m["source"]]["ro"]))
    die("frozen: no mount of %s in %s's namespace (loop devices: %s)" % (image, pid, sorted(devs) or "none"))


# ------------------------------------------------------------ fixtures

def cmd_sigrec(log, ready):
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def rec(n, _frame):
        os.write(fd, b"signal %d\n" % n)

    for n in range(1, signal.SIGRTMAX + 1):
        if n in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(n, rec)
        except (OSError, ValueError, RuntimeError):
            pass  # 32, 33: glibc's own
    open(ready, "w").close()
    while True:
        signal.pause()


def proc_status(pid):
    out = {}
    for line in open("/proc/%s/status" % pid):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def cmd_signals(pid, log):
    probs = []
    try:
        st = proc_status(pid)
        if st.get("State", "")[:1] in ("Z", "X"):
            probs.append("%s is a zombie: %s" % (pid, st.get("State")))
        for k in ("SigPnd", "ShdPnd"):
            if int(st.get(k, "0"), 16):
                probs.append("%s has signals pending (%s %s)" % (pid, k, st[k]))
    except OSError:
        probs.append("%s is gone" % pid)
    got = open(log).read().split("\n") if os.path.exists(log) else []
    got = [g for g in got if g]
    if got:
        probs.append("%s received: %s" % (pid, ", ".join(got)))
    if probs:
        die("signals: " + "; ".join(probs))
    print("alive")


def start_time(pid):
    return int(open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[19])


def cmd_cgroup(name, pid):
    base = CGROUP_ROOT if os.path.exists(CGROUP_ROOT + "/cgroup.controllers") else CGROUP_ROOT + "/memory"
    d = os.path.join(base, name)
    try:
        os.mkdir(d)
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        print(d, os.stat(d).st_ino)
    except OSError:
        try:
            os.rmdir(d)
        except OSError:
            pass
        print("none")


def transition(seq, sid, frm, to, at_ms, reason="", runtime=None):
    tp = getattr(journal_format, "transition_payload", None)
    if tp:
        return tp(seq, sid, frm, to, at_ms, reason=reason, runtime=runtime)
    o = {"at_ms": at_ms, "from": frm, "kind": "transition", "reason": reason, "seq": seq, "session_id": sid,
         "to": to}
    if runtime is not None:
        o["runtime"] = runtime
    return journal_format.canonical(o)


def cmd_fixture(store, plan, sid, *opts):
    o = {}
    it = iter(opts)
    for k in it:
        o[k.lstrip("-").replace("-", "_")] = next(it)
    boot = o.get("boot_id") or open("/proc/sys/kernel/random/boot_id").read().strip()
    runtime = {"boot_id": boot, "cgroup": {"dir": o["cgroup_dir"], "inode": int(o["cgroup_inode"])},
               "keeper": {"pid": int(o["keeper_pid"]), "start_time": int(o["keeper_start_time"]),
                          "socket": "keepers/%s.sock" % sid},
               "materializations": [], "pid": int(o["pid"]), "pid_start_time": int(o["pid_start_time"])}
    plan_bytes = open(plan, "rb").read()
    now = int(time.time() * 1000)
    payloads = [journal_format.create_payload(1, sid, "k-" + sid, sessctl.CD, plan_bytes, created_at_ms=now - 4000)]
    chain = [("created", "preparing", None), ("preparing", "starting", None), ("starting", "running", runtime)]
    for i, (frm, to, rt) in enumerate(chain):
        payloads.append(transition(len(payloads) + 1, sid, frm, to, now - 3000 + i * 1000, runtime=rt))
    journal, sealed = journal_format.store_bytes(payloads, os.urandom(32))
    journal_format.write_private(store + ".seal", sealed)
    journal_format.write_private(store, journal)
    print(json.dumps(runtime, sort_keys=True))


def cmd_churn(rt, plan, prefix, first, last):
    """Sessions PREFIX-FIRST..PREFIX-LAST, one after another, each through
    its whole life: create, start, ended, cleanup; then the receipts up to
    the head are acknowledged. Stops quietly at the first failure (the test
    arms a crash point: gloved dies mid-way) and prints the number of the
    last session whose cleanup and acknowledgement were answered (FIRST - 1
    when none)."""
    plan_text = open(plan).read()
    done = int(first) - 1
    after = 0
    try:
        s = connect(rt, 10)
        for n in range(int(first), int(last) + 1):
            sid = "%s-%d" % (prefix, n)
            r = sessctl.call(s, "create_session", {"session_id": sid, "idempotency_key": "k-" + sid,
                                                   "controller_plan_digest": sessctl.CD, "plan": plan_text})
            if "result" not in r:
                raise OSError("create %s: %s" % (sid, r))
            r = sessctl.call(s, "start_session", {"session_id": sid})
            if "result" not in r:
                raise OSError("start %s: %s" % (sid, r))
            deadline = time.monotonic() + 60
            while True:
                st = sessctl.call(s, "session_status", {"session_id": sid}).get("result", {}).get("state")
                if st in ("exited", "failed"):
                    break
                if time.monotonic() > deadline:
                    raise OSError("%s is %s after 60 s" % (sid, st))
                time.sleep(0.02)
            r = sessctl.call(s, "cleanup_session", {"session_id": sid})
            if "result" not in r:
                raise OSError("cleanup %s: %s" % (sid, r))
            r = sessctl.call(s, "receipts_page", {"after_sequence": after, "limit": 1})
            if r.get("error", {}).get("code") == "receipts.compacted":
                after = int(re.search(r"after_sequence (\d+)", r["error"]["message"]).group(1))
                r = sessctl.call(s, "receipts_page", {"after_sequence": after, "limit": 1})
            head = r["result"]["head"]
            r = sessctl.call(s, "receipts_ack", {"sequence": head["sequence"], "head_mac": head["mac"]})
            if "result" not in r:
                raise OSError("ack: %s" % r)
            after = head["sequence"]
            done = n
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("churn stopped after %d: %s" % (done, e), file=sys.stderr)
    print(done)


COMMANDS = {
    "wait": cmd_wait, "count": cmd_count, "watch": cmd_watch, "seqcheck": cmd_seqcheck, "receipts": cmd_receipts,
    "snapshot": cmd_snapshot, "leftovers": cmd_leftovers, "simulate-reboot": cmd_simulate_reboot,
    "keepers": cmd_keepers, "frozen": cmd_frozen, "sigrec": cmd_sigrec, "signals": cmd_signals,
    "starttime": lambda pid: print(start_time(pid)), "cgroup": cmd_cgroup, "fixture": cmd_fixture,
    "churn": cmd_churn,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        raise SystemExit(__doc__)
    COMMANDS[sys.argv[1]](*sys.argv[2:])
