#!/usr/bin/env bats
# glove setup (issue 12, "Commands"; docs/host.md): the owner-only XDG
# directories, the receipt key, the guided starter policy and config.json;
# a second run changes nothing and says so; a pre-existing wrong-mode
# directory is refused and left as it was; the starter policy is accepted by
# gloved, validates a plan, and (where managed sessions run) really runs.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        export XDG_CONFIG_HOME=$T/xdg/config XDG_RUNTIME_DIR=$T/xdg/run XDG_STATE_HOME=$T/xdg/state
        CFG=$XDG_CONFIG_HOME/glove RUN=$XDG_RUNTIME_DIR/glove STATE=$XDG_STATE_HOME/glove
        POLICY=$CFG/session-policy.json
}

teardown() {
        gloved_teardown
        return 0
}

# snapshot: every path under the three directories with type, mode, owner,
# size, inode and nanosecond mtime and ctime.
snapshot() {
        find "$CFG" "$RUN" "$STATE" -printf '%p %y %m %U %s %i %T@ %C@\n' | sort
}

# results: "ITEM RESULT" per item of a --json report on stdout.
results() { jq -r '.items[] | "\(.item) \(.result)"' <<<"$output"; }

@test "setup: creates every item owner-only, then a second run changes nothing and says so" {
        g setup --json
        expect_status 0
        [ "$(jq -r .changed <<<"$output")" = true ] || fail "the first run must report a change"
        [ "$(results)" = "config_dir created
runtime_dir created
state_dir created
receipt_key created
session_policy created
config created" ] || fail "unexpected items: $(results)"
        for d in "$CFG" "$RUN" "$STATE"; do
                [ "$(stat -c '%a %u' "$d")" = "700 $(id -u)" ] || fail "$d is not 0700 and mine"
        done
        for f in "$STATE/receipt.key" "$POLICY" "$CFG/config.json"; do
                [ "$(stat -c '%a %u %h' "$f")" = "600 $(id -u) 1" ] || fail "$f is not 0600, mine, one link"
        done
        [ "$(stat -c %s "$STATE/receipt.key")" -eq 32 ] || fail "the receipt key must be 32 bytes"
        [ "$(jq -c . "$CFG/config.json")" = '{"path_roots":[],"schema_version":1}' ] || fail "config.json"
        # No temporary file is left behind by the atomic writes.
        [ -z "$(find "$CFG" "$STATE" -name '.*.tmp')" ] || fail "a temporary file was left"
        before=$(snapshot)

        g setup --json
        expect_status 0
        [ "$(jq -r .changed <<<"$output")" = false ] || fail "the second run must report no change"
        [ "$(jq -r '[.items[].result] | unique | join(",")' <<<"$output")" = unchanged ] ||
                fail "every item must be unchanged: $(results)"
        g setup
        expect_status 0
        expect_line "glove setup: nothing changed: everything was already in place"
        [ "$(snapshot)" = "$before" ] || fail "a second run changed something: $(diff <(echo "$before") <(snapshot))"
}

@test "setup: gloved accepts the key setup made and the starter policy validates a plan" {
        require_gloved
        g setup
        expect_status 0
        key=$(sha256sum <"$STATE/receipt.key")
        # gloved with exactly setup's directories and policy.
        RT=$RUN ST=$STATE GD_ERR=$T/gloved.err
        "$GLOVED" --runtime-dir "$RUN" --state-dir "$STATE" --session-policy "$POLICY" 2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RUN" "$GD_PID"
        [ "$(sha256sum <"$STATE/receipt.key")" = "$key" ] || fail "gloved replaced the receipt key setup made"
        ctl --json capabilities
        expect_status 0
        [ "$(jq -r .policy_revision <<<"$output")" = 1 ] || fail "gloved did not load the starter policy"
        # A plan for the starter template and the small profile; the digest
        # is the one in the policy file (computed by the generator, verified
        # by gloved's loader at start).
        for profile in small interactive; do
                jq -c -S --arg p "$profile" --argjson now "$(date +%s%3N)" '
                        (.resource_profiles[] | select(.profile_id == $p) | del(.profile_id)) as $lim |
                        .runtime_templates[0] as $t |
                        {adapter_command_digest: $t.adapter_command_digest, egress_policy_id: "no-network",
                         expires_at_ms: ($now + 300000), library_projections: [], limits: $lim, path_grants: [],
                         policy_revision: .revision, runtime_id: $t.runtime_id,
                         runtime_template_id: $t.runtime_template_id, sandbox_backend: $t.sandbox_backend,
                         schema_version: 1, secret_handles: [], tool_policy_id: "no-tools"}' "$POLICY" |
                        tr -d '\n' >"$T/$profile.plan"
                ctl validate-plan "$T/$profile.plan"
                expect_status 0
                [[ "$output" == "valid plan: plan_content_digest "* ]] || fail "the $profile plan must validate"
        done
        # The ten-minute plan lifetime: a plan expiring in 11 minutes is refused.
        jq -c -S '.expires_at_ms += 360000' "$T/small.plan" | tr -d '\n' >"$T/long.plan"
        ctl validate-plan "$T/long.plan"
        expect_status 1
}

@test "setup: the starter template really runs as a managed session" {
        require_gloved
        grep -q -- --materialization-root "$GLOVED" || skip "this gloved has no managed runtime"
        g setup
        expect_status 0
        RT=$RUN ST=$STATE GD_ERR=$T/gloved.err
        "$GLOVED" --runtime-dir "$RUN" --state-dir "$STATE" --session-policy "$POLICY" \
                --session-store "$STATE/sessions.journal" --materialization-root "$T/mat" \
                2>"$GD_ERR" </dev/null 3>&- &
        GD_PID=$!
        track_pid "$GD_PID"
        wait_gloved "$RUN" "$GD_PID"
        ctl --json capabilities
        expect_status 0
        if [ "$(jq -r .lifecycle_operational <<<"$output")" != true ]; then
                skip "managed sessions are not operational for uid $(id -u): $(jq -r ".resource_mechanisms_missing[0].reason" <<<"$output" | cut -c1-120)"
        fi
        [ "$(jq -c .managed_runtime_ids <<<"$output")" = '["starter"]' ] || fail "starter is not a managed runtime"
        jq -c -S --argjson now "$(date +%s%3N)" '
                (.resource_profiles[] | select(.profile_id == "small") | del(.profile_id)) as $lim |
                .runtime_templates[0] as $t |
                {adapter_command_digest: $t.adapter_command_digest, egress_policy_id: "no-network",
                 expires_at_ms: ($now + 300000), library_projections: [], limits: $lim, path_grants: [],
                 policy_revision: .revision, runtime_id: $t.runtime_id, runtime_template_id: $t.runtime_template_id,
                 sandbox_backend: $t.sandbox_backend, schema_version: 1, secret_handles: [],
                 tool_policy_id: "no-tools"}' "$POLICY" | tr -d '\n' >"$T/s.plan"
        ctl create-session --session-id st1 --idempotency-key k-st1 --controller-digest "$CDIGEST" --plan "$T/s.plan"
        expect_status 0
        ctl start st1
        expect_status 0
        run --separate-stderr timeout -k 5 60 "$GLOVE" ctl --runtime-dir "$RT" attach st1 --no-stdin
        expect_status 0
        [[ "$output" == *"glove starter session: this ran inside the sandbox"* ]] ||
                fail "the starter template's output is missing"
}

@test "setup: a pre-existing wrong-mode directory is refused, named, and left as it was" {
        mkdir -p "$XDG_STATE_HOME"
        mkdir -m 0755 "$STATE"
        touch -d '2001-02-03 04:05:06' "$STATE"
        before=$(stat -c '%a %u %Y' "$STATE")
        g setup
        expect_status 1
        [[ "$stderr" == "glove: dirs.insecure: $STATE has mode 0755; it must be 0700; what to do: "* ]] ||
                fail "the refusal must name the code, the directory and its mode"
        [[ "$stderr" == *"chmod 0700 $STATE"* ]] || fail "the refusal must say how to fix it"
        [ "$(stat -c '%a %u %Y' "$STATE")" = "$before" ] || fail "setup changed the refused directory"
        [ ! -e "$STATE/receipt.key" ] || fail "setup went on past the refusal"
        g setup --json
        expect_status 1
        [ "$(jq -r '.error.code + " " + .error.item + " " + .error.path' <<<"$output")" = "dirs.insecure state_dir $STATE" ] ||
                fail "--json must report the refusal"
        [ -n "$(jq -r .error.fix <<<"$output")" ] || fail "--json must say what to do"
        # A policy with the wrong mode is refused the same way, never chmod'ed.
        chmod 0700 "$STATE"
        g setup
        expect_status 0
        chmod 0644 "$POLICY"
        g setup
        expect_status 1
        [[ "$stderr" == "glove: policy.file_mode: "* ]] || fail "a 0644 policy must be refused"
        [ "$(stat -c %a "$POLICY")" = 644 ] || fail "setup changed the policy's mode"
}

@test "setup, doctor and gloved refuse a FIFO in place of the receipt key at once (receipts.key_insecure), never blocking on it" {
        install -d -m 0700 "$XDG_STATE_HOME" "$STATE"
        mkfifo -m 0600 "$STATE/receipt.key"
        run timeout 20 "$GLOVE" setup
        [ "$status" -ne 124 ] || fail "glove setup blocked on the FIFO"
        [ "$status" -eq 1 ] && [[ "$output" == *receipts.key_insecure* ]] || fail "setup: $status $output"
        run timeout 20 "$GLOVE" doctor --json
        [ "$status" -ne 124 ] || fail "glove doctor blocked on the FIFO"
        [ "$(jq -r '.items[] | select(.item == "receipt_key") | .status' <<<"$output")" = wrong ] ||
                fail "doctor: $output"
        install -d -m 0700 "$XDG_RUNTIME_DIR" "$RUN"
        run timeout 20 "$GLOVED" --runtime-dir "$RUN" --state-dir "$STATE"
        [ "$status" -ne 124 ] || fail "gloved blocked on the FIFO"
        [[ "$output" == *receipts.key_insecure* ]] || fail "gloved: $status $output"
        [ -p "$STATE/receipt.key" ] || fail "the FIFO was replaced"
}

@test "setup: --path-root records owner-approved roots once, and refuses unsafe ones" {
        mkdir -m 0755 "$T/projects" "$T/more"
        g setup --path-root "$T/projects" --json
        expect_status 0
        [ "$(jq -c .path_roots "$CFG/config.json")" = "[\"$T/projects\"]" ] || fail "root not recorded"
        before=$(snapshot)
        g setup --path-root "$T/projects/" --json
        expect_status 0
        [ "$(jq -r .changed <<<"$output")" = false ] || fail "the same root again must change nothing"
        [ "$(snapshot)" = "$before" ] || fail "config.json was rewritten"
        g setup --path-root "$T/more" --json
        expect_status 0
        [ "$(jq -r '.items[] | select(.item == "config") | .result' <<<"$output")" = updated ] || fail "not updated"
        [ "$(jq -c .path_roots "$CFG/config.json")" = "[\"$T/more\",\"$T/projects\"]" ] || fail "roots not kept sorted"
        mkdir -m 0777 "$T/open"
        chmod 0777 "$T/open"
        g setup --path-root "$T/open"
        expect_status 1
        [[ "$stderr" == "glove: config.bad_root: "*"writable by group or others"* ]] || fail "a 0777 root was accepted"
        ln -s "$T/projects" "$T/link"
        # The link is named, and what to do is about the directory, not
        # about config.json.
        for root in "$T/link" "$T/link/sub"; do
                g setup --path-root "$root"
                expect_status 1
                [[ "$stderr" == "glove: config.bad_root: --path-root $root: $T/link is a symbolic link"*"; what to do: give --path-root an absolute path to an existing directory you own"* ]] ||
                        fail "link $root: $stderr"
        done
        g setup --path-root relative/dir
        expect_status 1
        [[ "$stderr" == "glove: config.bad_root: "*"what to do: give --path-root an absolute path"* &&
                "$stderr" != *config.json* ]] || fail "relative: $stderr"
        [ "$(jq -c .path_roots "$CFG/config.json")" = "[\"$T/more\",\"$T/projects\"]" ] || fail "a refused root was stored"
}

@test "setup: --path-root writes the exposure policy with its defaults, never changes a root, refuses an overlap" {
        mkdir -m 0755 "$T/projects" "$T/more"
        XP=$CFG/exposure-policy.json
        g setup --json
        expect_status 0
        [ ! -e "$XP" ] || fail "no --path-root must write no exposure policy"
        g setup --path-root "$T/projects" --json
        expect_status 0
        [ "$(jq -r '.items[] | select(.item == "exposure_policy") | .result' <<<"$output")" = created ] ||
                fail "exposure_policy not created: $(results)"
        [ "$(stat -c '%a %u %h' "$XP")" = "600 $(id -u) 1" ] || fail "$XP is not 0600, mine, one link"
        tid=$(jq -c '[.runtime_templates[].runtime_template_id]' "$POLICY")
        [ "$(jq -c '.roots[0] | [.root_id, .path, .target_path, .max_ttl_secs, .runtime_template_ids]' "$XP")" = \
                "[\"projects\",\"$T/projects\",\"/workspace\",604800,$tid]" ] || fail "defaults: $(jq -c . "$XP")"
        [ "$(jq -c '[.roots[0].access[] | [.access, .materialization, .cleanup_policy, .max_bytes]]' "$XP")" = \
                '[["ephemeral_write","copy","remove",1073741824],["read","bind","remove",1073741824],["retained_write","copy","retain",1073741824]]' ] ||
                fail "modes: $(jq -c .roots[0].access "$XP")"
        "$GLOVE" policy validate --file "$XP" >"$T/v" || fail "glove policy validate refused it"
        grep -q ": ok: exposure policy, 1 root, sha256 " "$T/v" || fail "validate: $(cat "$T/v")"
        "$GLOVE" policy explain --file "$XP" >"$T/e" || fail "glove policy explain refused it"
        grep -q "^root projects: $T/projects, exposed at /workspace, for at most 168h" "$T/e" || fail "explain: $(cat "$T/e")"
        # The owner tightens the root by hand; a re-run keeps it as it is.
        jq '.roots[0].max_ttl_secs = 3600' "$XP" >"$T/x" && install -m 600 "$T/x" "$XP"
        before=$(snapshot)
        g setup --path-root "$T/projects" --json
        expect_status 0
        [ "$(jq -r '.items[] | select(.item == "exposure_policy") | .result' <<<"$output")" = unchanged ] ||
                fail "not unchanged: $(results)"
        [ "$(snapshot)" = "$before" ] || fail "the exposure policy was rewritten"
        # A second root extends it; the first stays tightened.
        g setup --path-root "$T/more" --json
        expect_status 0
        [ "$(jq -r '.items[] | select(.item == "exposure_policy") | .result' <<<"$output")" = updated ] || fail "not updated"
        [ "$(jq -c '[.roots[] | [.root_id, .max_ttl_secs]]' "$XP")" = '[["more",604800],["projects",3600]]' ] ||
                fail "extension: $(jq -c . "$XP")"
        # A root inside an existing one is refused; nothing is written.
        mkdir -m 0755 "$T/projects/sub"
        before=$(snapshot)
        g setup --path-root "$T/projects/sub"
        expect_status 1
        [[ "$stderr" == "glove: setup.root_overlap: "*"$T/projects"*"; what to do: "* ]] || fail "overlap: $stderr"
        [ "$(snapshot)" = "$before" ] || fail "a refused root changed a file: $(diff <(echo "$before") <(snapshot))"
        # An exposure policy that does not decode is refused, never overwritten.
        printf '{"roots":[],"schema_version":1}\n' >"$XP"
        g setup --path-root "$T/more"
        expect_status 1
        [[ "$stderr" == "glove: policy."*"$XP"*"; what to do: "*"never overwrites"* ]] || fail "bad file: $stderr"
        [ "$(cat "$XP")" = '{"roots":[],"schema_version":1}' ] || fail "the bad file was changed"
}

@test "setup: --help is complete; bad usage exits 125" {
        g setup --help
        expect_status 0
        for w in --path-root --json --help "Exit status" session-policy.json config.json receipt.key; do
                [[ "$output" == *"$w"* ]] || fail "--help does not mention $w"
        done
        g -125 setup --bogus
        expect_status 125
        [[ "$stderr" == "glove: usage.setup: "* ]] || fail "usage error line"
        g -125 setup --path-root
        expect_status 125
        g -125 setup extra
        expect_status 125
        env -u XDG_RUNTIME_DIR "$GLOVE" setup 2>"$T/err" && fail "setup without XDG_RUNTIME_DIR must refuse"
        grep -q '^glove: host.no_runtime_dir: ' "$T/err" || fail "no host.no_runtime_dir line: $(cat "$T/err")"
}
