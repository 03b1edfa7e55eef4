#!/usr/bin/env bats
# Real programs doing real work inside the sandbox: a node agent and a python
# agent edit their workspace, git commits in it, pipes pass through; the
# results are checked on the host afterwards.

load helpers

setup() {
        T=$BATS_TEST_TMPDIR
        W=$T/ws
        mkdir -p "$W"
}

@test "programs: a node agent reads and writes its workspace; the host sees the result" {
        mkd "$W/notes"
        echo "one two three" >"$W/notes/a.md"
        printf 'four five\nsix\n' >"$W/notes/b.md"
        echo "not markdown" >"$W/notes/c.txt"
        echo "draft line" >"$W/draft.txt"
        echo "old" >"$W/obsolete.txt"
        gx --workspace "$W" --read "$AGENTS" -- "$NODE" "$AGENTS/workspace_agent.js"
        expect_status 0
        expect_output "node agent done: 2 notes, scratch=scratch, 2 final.txt"
        run "$PY" - "$W/report.json" "$W" "$(inside_uid)" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["counts"] == {"a.md": 3, "b.md": 3}, r
assert r["cwd"] == sys.argv[2] and r["home"] == "/home/agent" and r["tmpdir"] == "/tmp", r
assert r["uid"] == int(sys.argv[3]) and r["sandboxed"] == "1", r
EOF
        expect_status 0
        [ "$(cat "$W/final.txt")" = "$(printf 'draft line\nreviewed by node agent')" ] || fail "final.txt"
        [ ! -e "$W/draft.txt" ] && [ ! -e "$W/obsolete.txt" ] || fail "rename/unlink did not reach the host"
        [ "$(cat "$W/build/out.txt")" = "a.md,b.md" ] || fail "build/out.txt"
        [ "$(stat -c %u "$W/build/out.txt")" = "$(id -u)" ] || fail "new files must belong to the invoker"
}

@test "programs: a python agent reads and writes its workspace (csv, sqlite, subprocess); the host sees the result" {
        mkd "$W/src"
        printf 'category,amount\nfood,3\ntools,10\nfood,4\nrent,100\n' >"$W/data.csv"
        printf 'VERSION = "1.0"\nprint(VERSION)\n' >"$W/src/app.py"
        gx --workspace "$W" --read "$AGENTS" -- "$PY" "$AGENTS/workspace_agent.py"
        expect_status 0
        expect_output "python agent done: 4 rows"
        run "$PY" - "$W" "$(inside_uid)" <<'EOF'
import json, sqlite3, sys
w = sys.argv[1]
s = json.load(open(w + "/summary.json"))
assert s["totals"] == {"food": 7, "tools": 10, "rent": 100}, s
assert s["rows_in_db"] == 4 and s["reverse_categories"] == ["tools", "rent", "food"], s
assert s["tmp_dir"] == "/tmp" and s["uid"] == int(sys.argv[2]) and s["cwd"] == w, s
rows = sqlite3.connect(w + "/db.sqlite").execute("select sum(amount) from items").fetchone()
assert rows == (117,), rows
assert open(w + "/src/app.py").read().startswith('VERSION = "1.1"')
EOF
        expect_status 0
        # The host's python runs the patched program.
        run "$PY" "$W/src/app.py"
        expect_output 1.1
}

@test "programs: git works in the workspace and the host reads the commit" {
        [ -x /usr/bin/git ] || skip "git is not installed"
        gx --workspace "$W" -- /bin/sh -c '
                git init -q -b main . &&
                echo "hello" >README &&
                git add README &&
                git -c user.name=agent -c user.email=agent@glove.invalid commit -q -m "first commit by the agent" &&
                git log --format=%s'
        expect_status 0
        expect_output "first commit by the agent"
        run git -c safe.directory="$W" -C "$W" log --format='%an %s'
        expect_output "agent first commit by the agent"
}

@test "programs: stdin, stdout and stderr pass through" {
        run --separate-stderr bash -c 'printf "b\na\nc\n" | timeout --foreground 30 "$1" exec -- /bin/sh -c "sort; echo to-stderr >&2"' _ "$GLOVE"
        expect_status 0
        expect_output "$(printf 'a\nb\nc')"
        # Glove's own warning lines (e.g. limits.degraded without a delegated
        # cgroup) are not the agent's; everything else on stderr is.
        local agent_stderr
        agent_stderr=$(printf '%s\n' "$stderr" | grep -v '^glove: warning: ' || true)
        [ "$agent_stderr" = to-stderr ] || fail "stderr must pass through"
}

@test "programs: node cannot read host secrets or write outside its workspace" {
        gx --workspace "$W" -- "$NODE" -e '
const fs = require("fs");
for (const [op, p] of [["read", "/etc/shadow"], ["write", "/usr/glove-node-probe"], ["write", "/etc/glove-node-probe"], ["write", "ok.txt"]]) {
  try {
    if (op === "read") fs.readFileSync(p); else fs.writeFileSync(p, "x");
    console.log(op, p, "ok");
  } catch (e) { console.log(op, p, e.code); }
}'
        expect_status 0
        expect_output "$(printf 'read /etc/shadow ENOENT\nwrite /usr/glove-node-probe EROFS\nwrite /etc/glove-node-probe EROFS\nwrite ok.txt ok')"
        [ -f "$W/ok.txt" ] && [ ! -e /usr/glove-node-probe ]
}
