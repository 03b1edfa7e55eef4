#!/usr/bin/env bats
# glove policy detect | stage | generate | explain | validate (issue 12;
# docs/host.md, "The policy workflow") on a real npm-installed CLI (codex,
# from tests/node_modules) copied into a group-writable directory: detect
# says it is untrusted and why; stage copies it into a protected directory
# with the documented digest and never over an entry point; generate's
# policy is accepted by gloved and validate; a tampered digest and a 0644
# file get gloved's own codes; explain names the warnings.

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$BATS_TEST_TMPDIR
        umask 022
        [ -n "${GLOVE_NODE_MODULES:-}" ] && [ -d "$GLOVE_NODE_MODULES/@openai/codex" ] ||
                skip "tests/node_modules is not installed (scripts/deps.sh installs it)"
        # The codex package, as npm lays it out, in a group-writable tree.
        mkdir -p "$T/gw/node_modules/@openai" "$T/gw/node_modules/.bin"
        cp -r "$GLOVE_NODE_MODULES/@openai/codex" "$T/gw/node_modules/@openai/"
        ln -s ../@openai/codex/bin/codex.js "$T/gw/node_modules/.bin/codex"
        # Its platform package for this host, an optional dependency stage
        # must find: a stand-in of a few bytes (the real one is 400 MB; the
        # README test stages and runs that one).
        case $(uname -m) in x86_64) ARCH=x64 ;; aarch64) ARCH=arm64 ;; *) ARCH=$(uname -m) ;; esac
        PLATFORM=@openai/codex-linux-$ARCH
        mkdir -p "$T/gw/node_modules/$PLATFORM"
        printf '{"name":"@openai/codex","version":"0.0.0-linux-%s"}' "$ARCH" >"$T/gw/node_modules/$PLATFORM/package.json"
        chmod -R g+w "$T/gw"
        PROT=$T/prot
}

teardown() {
        gloved_teardown
        return 0
}

# stage ARGS...: glove policy stage of the group-writable codex into $PROT, captured.
stage() { g policy stage --runtime codex --source "$T/gw/node_modules/.bin/codex" --directory "$PROT" "$@"; }

@test "policy detect: the group-writable copy is found but untrusted, naming the directory and its mode" {
        g policy detect --search-path "$T/gw/node_modules/.bin" --json
        expect_status 1
        local d
        d=$(jq -c '.adapters[] | select(.runtime_id == "codex") | .directories[0]' <<<"$output")
        [ "$(jq -r .found <<<"$d")" = true ] || fail "codex not found: $d"
        [ "$(jq -r .trusted <<<"$d")" = false ] || fail "a group-writable chain was trusted: $d"
        [ "$(jq -r .resolves_to <<<"$d")" = "$T/gw/node_modules/@openai/codex/bin/codex.js" ] || fail "resolves_to: $d"
        [ "$(jq -r .reason <<<"$d")" = "$T/gw is writable by group (mode 0775)" ] || fail "reason: $d"
        [ "$(jq -r '.adapters[] | select(.runtime_id == "pi") | .directories[0].found' <<<"$output")" = false ] ||
                fail "pi is not in the copy"
        # The text form says the same.
        g policy detect --search-path "$T/gw/node_modules/.bin"
        expect_status 1
        expect_line "codex: not usable for discovery"
        expect_line "  $T/gw/node_modules/.bin: found $T/gw/node_modules/.bin/codex -> $T/gw/node_modules/@openai/codex/bin/codex.js; untrusted: $T/gw is writable by group (mode 0775)"
}

@test "policy detect: the root-owned npm tree is trusted for all five adapters" {
        # Discovery refuses a symbolic-link directory: name the real one.
        local nm
        nm=$(realpath "$GLOVE_NODE_MODULES")
        [ -x "$nm/.bin" ] && [ "$(stat -c %u "$nm")" = 0 ] || skip "tests/node_modules ($nm) is not root-owned and reachable in this run"
        g policy detect --search-path "$T/gw/node_modules/.bin" --search-path "$nm/.bin" --json
        expect_status 0
        [ "$(jq -r '[.adapters[] | select(.usable) | .runtime_id] | join(",")' <<<"$output")" = \
                claude-code,codex,copilot,opencode,pi ] || fail "not all five usable: $output"
        [ "$(jq -r '.adapters[] | select(.runtime_id == "codex") | .selected.directory' <<<"$output")" = \
                "$nm/.bin" ] || fail "the trusted directory was not the one selected"
}

@test "policy stage: refuses without --dry-run or --yes; --dry-run writes nothing; --yes copies with the documented digest" {
        stage
        expect_status 125
        [[ "$stderr" == *"--dry-run"*"--yes"* ]] || fail "no hint: $stderr"
        [ ! -e "$PROT" ] || fail "a refused stage created $PROT"
        stage --dry-run --json
        expect_status 0
        local dry=$output
        [ ! -e "$PROT" ] || fail "--dry-run created $PROT"
        [ "$(jq -r .dry_run <<<"$dry")" = true ] && [ "$(jq -r .files <<<"$dry")" -ge 2 ] || fail "$dry"
        stage --yes --json
        expect_status 0
        local digest
        digest=$(jq -r .digest <<<"$output")
        [ "$digest" = "$(jq -r .digest <<<"$dry")" ] || fail "the dry run's digest differs from the copy's"
        [ "$(jq -r .bytes <<<"$output")" = "$(jq -r .bytes <<<"$dry")" ] || fail "bytes differ"
        [ "$(stat -c '%a %u' "$PROT")" = "700 $(id -u)" ] || fail "$PROT is not 0700 and mine"
        [ "$(readlink "$PROT/codex")" = "closures/$digest/node_modules/@openai/codex/bin/codex.js" ] ||
                fail "entry point: $(readlink "$PROT/codex")"
        [ "$(jq -r .executable <<<"$output")" = "$(realpath "$PROT/codex")" ] || fail "executable"
        cmp "$PROT/codex" "$T/gw/node_modules/@openai/codex/bin/codex.js" || fail "the copy differs"
        # Nothing group- or other-writable, no temporary directory left.
        [ -z "$(find "$PROT" -perm /022 ! -type l)" ] || fail "writable by others: $(find "$PROT" -perm /022 ! -type l)"
        [ -z "$(find "$PROT" -name '.stage-*')" ] || fail "a temporary directory was left"
        # The digest is the staged_closure_digest of docs/digests.md,
        # computed here independently from the copied tree.
        [ "$("$PY" - "$PROT/closures/$digest" <<'EOF'
import hashlib, os, stat, struct, sys
root = sys.argv[1]
def s(b): return struct.pack(">I", len(b)) + b
ents = []
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        p = os.path.join(d, n); rel = os.path.relpath(p, root).encode()
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode): ents.append((rel, b"l" + struct.pack(">I", 0o777) + s(os.readlink(p).encode())))
        elif stat.S_ISDIR(st.st_mode): ents.append((rel, b"d" + struct.pack(">I", 0o755)))
        else:
            data = open(p, "rb").read()
            ents.append((rel, b"f" + struct.pack(">I", stat.S_IMODE(st.st_mode)) + struct.pack(">Q", len(data)) + hashlib.sha256(data).digest()))
ents.sort()
h = hashlib.sha256(s(b"glove.staged-closure") + b"\x01" + struct.pack(">I", len(ents)))
for rel, rest in ents: h.update(s(rel) + rest)
print(h.hexdigest())
EOF
)" = "$digest" ] || fail "the digest is not the documented encoding of the copy"
        # Discovery now trusts it.
        g policy detect --search-path "$PROT" --json
        expect_status 0
        [ "$(jq -r '.adapters[] | select(.runtime_id == "codex") | .usable' <<<"$output")" = true ] || fail "$output"
        # A second stage into the same directory never replaces the entry point.
        local before
        before=$(stat -c '%i %Y' "$PROT/codex")
        echo "// changed" >>"$T/gw/node_modules/@openai/codex/bin/codex.js"
        stage --yes
        expect_glove_error 1 stage.entry_exists
        [ "$(stat -c '%i %Y' "$PROT/codex")" = "$before" ] || fail "the entry point was touched"
        [ "$(ls "$PROT/closures")" = "$digest" ] || fail "a second closure was written: $(ls "$PROT/closures")"
}

@test "policy stage: refuses a harness home, a link leaving the package, an untrusted directory" {
        export HOME=$T/home
        mkdir -p "$HOME/.codex/node_modules/@openai"
        cp -r "$T/gw/node_modules/@openai/codex" "$HOME/.codex/node_modules/@openai/"
        g policy stage --runtime codex --source "$HOME/.codex/node_modules/@openai/codex" --directory "$PROT" --dry-run
        expect_glove_error 1 stage.harness_home
        g policy stage --runtime codex --source "$T/gw/node_modules/.bin/codex" --directory "$HOME/.codex/x" --dry-run
        expect_glove_error 1 stage.harness_home
        # A link to outside the copied packages.
        ln -s /etc/passwd "$T/gw/node_modules/@openai/codex/passwd"
        stage --dry-run
        expect_glove_error 1 stage.link_outside
        rm "$T/gw/node_modules/@openai/codex/passwd"
        # A link inside the package is kept as a link.
        ln -s bin/codex.js "$T/gw/node_modules/@openai/codex/main.js"
        stage --yes --json
        expect_status 0
        [ "$(readlink "$(jq -r .closure <<<"$output")/node_modules/@openai/codex/main.js")" = bin/codex.js ] ||
                fail "the inner link was not copied as a link"
        # A protected directory below a group-writable one is refused, and not created.
        g policy stage --runtime codex --source "$T/gw/node_modules/.bin/codex" --directory "$T/gw/prot" --yes
        expect_glove_error 1 stage.directory_untrusted
        [ ! -e "$T/gw/prot" ] || fail "created below an untrusted directory"
        # A package whose dependency is hoisted outside the root is refused.
        mkdir -p "$T/solo/pkg"
        printf '{"name":"x","version":"1.0.0","bin":{"codex":"c.js"},"dependencies":{"left-pad":"1"}}' >"$T/solo/pkg/package.json"
        printf '#!/bin/sh\n' >"$T/solo/pkg/c.js"
        chmod 755 "$T/solo/pkg/c.js"
        g policy stage --runtime codex --source "$T/solo/pkg" --directory "$T/p2" --dry-run
        expect_glove_error 1 stage.not_single_root
}

@test "policy stage: an optional dependency built for this host must be installed; --source may be relative; explain warns when a staged closure lacks one" {
        # Without the platform package: refused, naming it (the other
        # platforms' packages are not this host's and may be absent).
        mv "$T/gw/node_modules/$PLATFORM" "$T/platform-aside"
        stage --dry-run
        expect_glove_error 1
        [ "$(glove_error_code)" = stage.optional_missing ] || fail "expected stage.optional_missing: $stderr"
        [[ "$stderr" == *"built for this host (linux-$ARCH)"*"are not installed beneath $T/gw/node_modules: $PLATFORM (of @openai/codex);"* ]] ||
                fail "the error does not name the missing package: $stderr"
        [[ "$stderr" != *darwin* ]] || fail "another platform's package was named: $stderr"
        mv "$T/platform-aside" "$T/gw/node_modules/$PLATFORM"
        # A relative --source, from the working directory.
        cd "$T/gw/node_modules"
        g policy stage --runtime codex --source .bin/codex --directory "$PROT" --yes --json
        expect_status 0
        [ "$(jq -r .source <<<"$output")" = "$T/gw/node_modules/@openai/codex/bin/codex.js" ] || fail "source: $output"
        [ "$(jq -r .packages <<<"$output")" = 2 ] || fail "the platform package was not staged: $output"
        local closure
        closure=$(jq -r .closure <<<"$output")
        [ -f "$closure/node_modules/$PLATFORM/package.json" ] || fail "no $PLATFORM in the closure"
        cd "$T"
        g policy generate --runtime codex --search-path "$PROT" --read-only "$closure" --template-id codex-safe \
                --arg exec --env PATH=/usr/bin:/bin --policy
        expect_status 0
        mkdir -p -m 700 "$T/cfg"
        (umask 077; printf '%s\n' "$output" >"$T/cfg/policy.json")
        g policy explain --file "$T/cfg/policy.json" --json
        expect_status 0
        [ "$(jq -r '[.warnings[] | select(.code == "explain.optional_missing")] | length' <<<"$output")" = 0 ] ||
                fail "a complete closure was warned about: $output"
        # The closure loses it (a hand-made or older staging): explain warns.
        rm -r "${closure:?}/node_modules/$PLATFORM"
        g policy explain --file "$T/cfg/policy.json"
        expect_status 0
        expect_line "warning: explain.optional_missing: \$.runtime_templates[0].launch.read_only_paths[0]: template codex-safe: the staged closure $closure lacks $PLATFORM, an optional dependency of node_modules/@openai/codex built for this host (linux-$ARCH) that the package loads at run time: the runtime will fail to start; stage it again from a tree that has it installed"
}

# staged_policy FILE [GENERATE-ARGS...]: stage codex, then generate --policy
# for it (discovery in the protected directory, the closure read-only) into
# FILE (0600).
staged_policy() {
        local file=$1
        shift
        stage --yes --json
        expect_status 0
        CLOSURE=$(jq -r .closure <<<"$output")
        g policy generate --runtime codex --search-path "$PROT" --read-only "$CLOSURE" --template-id codex-safe \
                --arg exec --env PATH=/usr/bin:/bin "$@" --policy
        expect_status 0
        mkdir -p -m 700 "$(dirname "$file")"
        (umask 077; printf '%s\n' "$output" >"$file")
}

@test "policy generate: gloved accepts the staged template and its digest; validate agrees; a tampered digest is refused by both with one code" {
        require_gloved
        staged_policy "$T/cfg/policy.json"
        jq -e '.runtime_templates[0].launch.runtime_discovery == "codex"' "$T/cfg/policy.json" >/dev/null || fail "no discovery"
        g policy validate --file "$T/cfg/policy.json"
        expect_status 0
        [[ "$output" == "$T/cfg/policy.json: ok: revision 1, max_plan_ttl_ms 600000, sha256 "* ]] || fail "$output"
        # The single entry is the same template.
        g policy generate --runtime codex --search-path "$PROT" --read-only "$CLOSURE" --template-id codex-safe \
                --arg exec --env PATH=/usr/bin:/bin
        expect_status 0
        [ "$(jq -c -S . <<<"$output")" = "$(jq -c -S '.runtime_templates[0]' "$T/cfg/policy.json")" ] ||
                fail "the entry differs from the policy's template"
        start_gloved "$T/g" --session-policy "$T/cfg/policy.json"
        ctl --json capabilities
        expect_status 0
        [ "$(jq -r .policy_revision <<<"$output")" = 1 ] || fail "gloved did not load the policy"
        # A plan naming the template with the generated digest validates.
        jq -c -S --argjson now "$(date +%s%3N)" '
                (.resource_profiles[] | select(.profile_id == "small") | del(.profile_id)) as $lim |
                .runtime_templates[0] as $t |
                {adapter_command_digest: $t.adapter_command_digest, egress_policy_id: "no-network",
                 expires_at_ms: ($now + 300000), library_projections: [], limits: $lim, path_grants: [],
                 policy_revision: .revision, runtime_id: $t.runtime_id, runtime_template_id: $t.runtime_template_id,
                 sandbox_backend: $t.sandbox_backend, schema_version: 1, secret_handles: [],
                 tool_policy_id: "no-tools"}' "$T/cfg/policy.json" | tr -d '\n' >"$T/p.plan"
        ctl validate-plan "$T/p.plan"
        expect_status 0
        [[ "$output" == "valid plan: plan_content_digest "* ]] || fail "$output"
        # Tampered: one hex digit of the digest changed.
        (umask 077; jq '.runtime_templates[0].adapter_command_digest |= (if .[0:1] == "0" then "1" else "0" end) + .[1:]' \
                "$T/cfg/policy.json" >"$T/cfg/bad.json")
        g policy validate --file "$T/cfg/bad.json"
        expect_glove_error 1 policy.adapter_digest_mismatch
        [[ "$stderr" == *'$.runtime_templates[0].adapter_command_digest'* ]] || fail "no JSON path: $stderr"
        gloved_fails --runtime-dir "$T/g2/run" --state-dir "$T/g2/state" --session-policy "$T/cfg/bad.json"
        expect_status 1
        [[ "$stderr" == '{"ts":"'*'","level":"error","code":"policy.adapter_digest_mismatch","msg":"policy.adapter_digest_mismatch: '* ]] ||
                fail "gloved: $stderr"
}

@test "policy validate: a 0644 file gets gloved's code; explain refuses it too" {
        require_gloved
        staged_policy "$T/cfg/policy.json"
        chmod 0644 "$T/cfg/policy.json"
        g policy validate --file "$T/cfg/policy.json"
        expect_glove_error 1 policy.file_mode
        local mine=${stderr#glove: }
        gloved_fails --runtime-dir "$T/g/run" --state-dir "$T/g/state" --session-policy "$T/cfg/policy.json"
        expect_status 1
        [ "$(jq -r .msg <<<"$stderr")" = "$mine" ] || fail "gloved said '$stderr', validate said '$mine'"
        g policy explain --file "$T/cfg/policy.json"
        expect_glove_error 1 policy.file_mode
}

@test "policy explain: says what the policy allows and names the warnings" {
        staged_policy "$T/cfg/gen.json" --read-only /etc --env FAKE_API_KEY=k
        # Add a retained_write alias, a private egress target and a secret
        # without a mount (the template digest is unchanged).
        (umask 077; jq '.path_aliases = [{alias: "work", host_path: "/srv/work", target_path: "/workspace",
                        max_ttl_secs: 600, access: [{access: "read", materialization: "bind", create_policy: "never",
                        cleanup_policy: "retain", max_bytes: 1}, {access: "retained_write", materialization: "copy",
                        create_policy: "never", cleanup_policy: "retain", max_bytes: 17179869184}]}]
                | .runtime_templates[0].allowed_path_aliases = ["work"]
                | .egress_policy_ids = ["model", "no-network"]
                | .egress_policies = [{policy_id: "model", targets: [{host: "127.0.0.1", port: 8443, allow_private: true}]},
                                      {policy_id: "no-network", targets: []}]
                | .secret_handles = ["token"]' "$T/cfg/gen.json" >"$T/cfg/policy.json")
        g policy validate --file "$T/cfg/policy.json"
        expect_status 0
        g policy explain --file "$T/cfg/policy.json"
        expect_status 0
        expect_line "  codex-safe (runtime codex, native adapter, linux_production): discovers codex in its search directories (the first trusted one)"
        expect_line "  work: /srv/work at /workspace in the sandbox, grants for at most 600 s"
        expect_line "    127.0.0.1 port 8443 (PRIVATE address allowed)"
        expect_line "  token: not mounted (no secret_mounts entry)"
        expect_no_text "=k"
        local codes
        codes=$(grep -o '^warning: [a-z_.]*' <<<"$output" | sort -u | tr '\n' ' ')
        [ "$codes" = "warning: explain.credential_in_environment warning: explain.large_quota warning: explain.private_egress warning: explain.retained_write warning: explain.secret_unmounted warning: explain.wide_read_only_path warning: explain.writable_alias " ] ||
                fail "warnings: $codes"
        g policy explain --file "$T/cfg/policy.json" --json
        expect_status 0
        [ "$(jq -r '.warnings[] | select(.code == "explain.wide_read_only_path") | .path' <<<"$output")" = \
                '$.runtime_templates[0].launch.read_only_paths[0]' ] || fail "$output"
        [ "$(jq -r '.egress_policies[0].targets[0].private' <<<"$output")" = true ] || fail "private not flagged"
        # The closure's own read-only path is not wide; the guided policy alone has no warnings.
        g policy explain --file "$T/cfg/gen.json" --json
        [ "$(jq -r '[.warnings[].code] | sort | join(",")' <<<"$output")" = \
                explain.credential_in_environment,explain.wide_read_only_path ] || fail "$output"
}

@test "policy: usage errors exit 125, unknown commands too" {
        g policy frobnicate
        expect_status 125
        g policy generate --runtime codex --template-id x
        expect_status 125
        g policy generate --runtime codex --template-id x --executable /bin/true --alias a --policy
        expect_status 125
        g policy validate
        expect_status 125
}

@test "policy explain: strings from the policy file reach the terminal escaped (ESC, BEL, C1, bidi controls), as glove ctl shows them" {
        # Found by the review: explain printed a template's strings raw, so a
        # policy file could retitle the operator's terminal (OSC ... BEL),
        # clear it (C1 CSI) or reorder what it reads (a bidi override). A
        # launch argument may hold any of them and still validate.
        staged_policy "$T/cfg/policy.json" --arg "$(printf 'x\033]0;owned\007\302\2332J\342\200\256abc')"
        g policy explain --file "$T/cfg/policy.json"
        expect_status 0
        expect_line '    arguments: exec x\x1b]0;owned\x07\x9b2J\u{202E}abc'
        ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]\|\xe2\x80[\xaa-\xae]' <<<"$output" ||
                fail "a raw control reached the terminal: $output"
}

@test "policy detect: a name found on disk reaches the terminal escaped" {
        # An entry's link target is a file name anyone who can write the
        # directory chooses: OSC ... BEL and C1 CSI in it are shown escaped.
        local name
        name=$(printf 'real\033]0;owned\007\302\233')
        mkdir -p "$T/det/bin"
        printf '#!/bin/sh\n' >"$T/det/$name"
        chmod 755 "$T/det/$name"
        ln -s "../$name" "$T/det/bin/codex"
        g policy detect --search-path "$T/det/bin"
        [[ "$output" == *"$T"'/det/real\x1b]0;owned\x07\x9b (in '* ]] || fail "not shown escaped: $output"
        ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' <<<"$output" || fail "a raw control reached the terminal: $output"
}
