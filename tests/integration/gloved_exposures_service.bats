#!/usr/bin/env bats
# gloved with path exposures (--path-exposure-policy and
# --path-exposure-journal): the owner secret and the owner role, the
# capability rows, the redacted catalog a controller reads (glove ctl
# exposures), and start-up refusals of a journal that is locked, altered or
# insecure. docs/control-protocol.md, "Roles" and "Path exposures".

load helpers
load "$GLOVE_IT_LIB/gloved"

setup() {
        T=$(realpath "$BATS_TEST_TMPDIR")
        require_gloved
        # One root with a project beneath it; the policy and journal live
        # outside it, in 0700 directories of their own.
        mkdir -p "$T/src/proj"
        install -d -m 700 "$T/cfg" "$T/xs"
        XPOL=$T/cfg/exposure-policy.json
        XJRN=$T/xs/exposures.journal
        jq -n --arg root "$T/src" '{schema_version: 1, roots: [{root_id: "src", path: $root,
                target_path: "/workspace", max_ttl_secs: 86400,
                access: [{access: "ephemeral_write", materialization: "copy", cleanup_policy: "remove",
                          max_bytes: 1048576},
                         {access: "read", materialization: "bind", cleanup_policy: "remove", max_bytes: 1048576}],
                runtime_template_ids: ["pyrt"]}]}' >"$XPOL"
        chmod 600 "$XPOL"
        XOPTS=(--path-exposure-policy "$XPOL" --path-exposure-journal "$XJRN")
}

teardown() {
        gloved_teardown
        return 0
}

# owner ITEM...: ctlframe.py exchange with the owner secret.
owner() {
        frames exchange --secret "$(cat "$RT/owner-secret")" "$@"
}

# create_proj: the owner enrolls $T/src/proj; sets XID.
create_proj() {
        owner "{\"id\":1,\"method\":\"exposure_create\",\"params\":{\"path\":\"$T/src/proj\",\"ttl_secs\":3600}}"
        expect_status 0
        [[ "${lines[0]}" == 'auth {"id":0,"result":{"authenticated":true,"protocol_version":1,"role":"owner"'* ]] ||
                fail "the owner secret must authenticate as the owner: ${lines[0]}"
        XID=$(jq -r '.result.exposure_id' <<<"${lines[1]}")
        [[ "$XID" =~ ^exp-[0-9a-f]{32}$ ]] || fail "no exposure created: ${lines[1]}"
}

@test "exposures: both options write a fresh 0600 owner-secret, advertise the rows, and remove it at exit" {
        start_gloved "$T/a" "${XOPTS[@]}"
        [ "$(stat -c %a "$RT/owner-secret")" = 600 ] || fail "owner-secret mode $(stat -c %a "$RT/owner-secret")"
        grep -qxE '[0-9a-f]{64}' "$RT/owner-secret" || fail "the owner secret is not 64 lowercase hex"
        cmp -s "$RT/owner-secret" "$RT/bootstrap-secret" && fail "the owner secret is the bootstrap secret"
        local first
        first=$(cat "$RT/owner-secret")
        ctl --json capabilities
        expect_status 0
        jq -e '.path_exposure_schema_version == 1
               and .owner_methods == ["exposure_create", "exposure_list", "exposure_revoke"]
               and (.methods | index("exposure_catalog")) != null
               and (.methods | index("exposure_create")) == null' <<<"$output" >/dev/null ||
                fail "capabilities: $output"
        ctl exposures
        expect_status 0
        expect_line "no exposures"
        stop_gloved
        [ "$WSTATUS" -eq 0 ] || fail "gloved exited $WSTATUS after SIGTERM"
        [ ! -e "$RT/owner-secret" ] || fail "the owner secret is left behind"
        [ ! -e "$RT/bootstrap-secret" ] || fail "the bootstrap secret is left behind"
        start_gloved "$T/a" "${XOPTS[@]}"
        [ "$(cat "$RT/owner-secret")" != "$first" ] || fail "the owner secret did not change across starts"
}

@test "exposures: without the options no rows and no owner-secret; the methods say which options are missing" {
        mkdir -p "$T/a/run" && chmod 700 "$T/a" "$T/a/run"
        echo stale >"$T/a/run/owner-secret"
        start_gloved "$T/a"
        [ ! -e "$RT/owner-secret" ] || fail "a stale owner-secret survived a start without exposures"
        ctl --json capabilities
        expect_status 0
        jq -e '.path_exposure_schema_version == 0 and .owner_methods == []
               and (.methods | index("exposure_catalog")) == null' <<<"$output" >/dev/null ||
                fail "capabilities: $output"
        ctl exposures
        expect_refused method_not_found
        [[ "$stderr" == *"--path-exposure-policy FILE and --path-exposure-journal FILE"* ]] ||
                fail "the refusal does not name the options: $stderr"
        frames exchange '{"id":1,"method":"exposure_create","params":{"path":"/x"}}' \
                '{"id":2,"method":"exposure_list","params":{}}'
        expect_status 0
        local l
        for l in "${lines[1]}" "${lines[2]}"; do
                jq -e '.error.code == "method_not_found" and .error.data.reason == "option_missing"' <<<"$l" \
                        >/dev/null || fail "expected method_not_found option_missing: $l"
        done
}

@test "exposures: one of the two options alone is a usage error; --help is not" {
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" --path-exposure-policy "$XPOL"
        expect_status 2
        [[ "$stderr" == "gloved: usage.exposure_options_pair: --path-exposure-policy needs --path-exposure-journal"* ]] ||
                fail "stderr: $stderr"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" --path-exposure-journal "$XJRN"
        expect_status 2
        [[ "$stderr" == "gloved: usage.exposure_options_pair: "* ]] || fail "stderr: $stderr"
        [ ! -e "$XJRN" ] || fail "a usage error created the journal"
        gloved_fails --path-exposure-journal "$XJRN" --help
        expect_status 0
        [[ "$output" == *"--path-exposure-policy FILE"* ]] || fail "--help does not list the option"
}

@test "exposures: a controller is refused the owner methods; the owner enrolls; the catalog shows no path or inode" {
        start_gloved "$T/a" "${XOPTS[@]}"
        frames exchange "{\"id\":1,\"method\":\"exposure_create\",\"params\":{\"path\":\"$T/src/proj\"}}" \
                '{"id":2,"method":"exposure_list","params":{}}'
        expect_status 0
        [[ "${lines[0]}" == *'"role":"controller"'* ]] || fail "the bootstrap secret is not a controller: ${lines[0]}"
        local l
        for l in "${lines[1]}" "${lines[2]}"; do
                jq -e '.error.code == "auth.owner_required" and (.error.message | contains("owner-secret"))' \
                        <<<"$l" >/dev/null || fail "expected auth.owner_required: $l"
        done
        ctl exposures
        expect_status 0
        expect_line "no exposures"

        # Strict params, and the registry's own refusal passed through.
        owner '{"id":1,"method":"exposure_create","params":{"path":"/x","extra":1}}' \
                "{\"id\":2,\"method\":\"exposure_create\",\"params\":{\"path\":\"$T/cfg\"}}"
        expect_status 0
        jq -e '.error.code == "invalid_params"' <<<"${lines[1]}" >/dev/null || fail "unknown member: ${lines[1]}"
        jq -e '.error.code == "exposure.outside_roots"' <<<"${lines[2]}" >/dev/null || fail "outside: ${lines[2]}"

        create_proj
        owner '{"id":3,"method":"exposure_list","params":{}}'
        jq -e --arg p "$T/src/proj" '.result.exposures[0].path == $p' <<<"${lines[1]}" >/dev/null ||
                fail "the owner's list has no path: ${lines[1]}"

        ctl --json exposures
        expect_status 0
        jq -e --arg id "$XID" '.exposures | length == 1 and .[0].exposure_id == $id and .[0].generation == 1
                and .[0].state == "live" and .[0].label == "proj" and (.[0].scope_digest | test("^[0-9a-f]{64}$"))
                and (.[0] | has("path") or has("root_id") | not)' <<<"$output" >/dev/null ||
                fail "catalog: $output"
        local cat_json=$output
        ctl exposures
        expect_status 0
        grep -qE "^ID +GEN +STATE +EXPIRES +MODES +RUNTIMES +LABEL$" <<<"$output" || fail "no header: $output"
        grep -qE "^$XID +1 +live +[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z +ephemeral_write,read +pyrt +proj$" \
                <<<"$output" || fail "no row for $XID: $output"
        # No path, root or inode in what a controller reads.
        local text="$cat_json"$'\n'"$output" ino rino
        ino=$(stat -c %i "$T/src/proj")
        rino=$(stat -c %i "$T/src")
        [[ "$text" != *"$T/src"* ]] || fail "the catalog holds the root or project path"
        [[ "$text" != *"$T"* ]] || fail "the catalog holds a host path"
        ! grep -qw -e "$ino" -e "$rino" <<<"$text" || fail "the catalog holds an inode number ($ino, $rino)"
}

@test "exposures: a root that is a symbolic link starts gloved with one warning naming it; exposure_create says why" {
        mv "$T/src" "$T/src-real"
        ln -s "$T/src-real" "$T/src"
        start_gloved "$T/a" "${XOPTS[@]}"
        local warn
        warn=$(grep -c '"code":"exposure.root_unavailable"' "$GD_ERR" || true)
        [ "$warn" -eq 1 ] || fail "expected one warning for the root, got $warn: $(cat "$GD_ERR")"
        grep '"code":"exposure.root_unavailable"' "$GD_ERR" | grep -q 'symbolic link' ||
                fail "the warning does not say why: $(cat "$GD_ERR")"
        owner "{\"id\":1,\"method\":\"exposure_create\",\"params\":{\"path\":\"$T/src/proj\"}}"
        expect_status 0
        jq -e '.error.code == "exposure.root_unavailable" and (.error.message | contains("symbolic link"))
                and (.error.message | contains("once it exists") | not)' <<<"${lines[1]}" >/dev/null ||
                fail "create: ${lines[1]}"
}

@test "exposures: a second gloved on the same journal is journal.locked" {
        start_gloved "$T/a" "${XOPTS[@]}"
        gloved_fails --runtime-dir "$T/b/run" --state-dir "$T/b/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"journal.locked"'* ]] || fail "stderr: $stderr"
        [ ! -e "$T/b/run/owner-secret" ] && [ ! -e "$T/b/run/bootstrap-secret" ] || fail "a refused gloved left a secret"
}

@test "exposures: an exposure policy of mode 0644, or one with no root, refuses the start; no journal is made" {
        chmod 644 "$XPOL"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"policy.file_mode"'* ]] || fail "stderr: $stderr"
        echo '{"roots":[],"schema_version":1}' >"$XPOL"
        chmod 600 "$XPOL"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" =~ \"code\":\"policy\.[a-z_]+\" ]] || fail "stderr: $stderr"
        [ ! -e "$XJRN" ] || fail "a refused start made the journal"
        [ ! -e "$T/a/run/bootstrap-secret" ] && [ ! -e "$T/a/run/owner-secret" ] || fail "a refused start left a secret"
}

@test "exposures: restart replays to the same catalog; an altered, 0644, foreign or truncated journal refuses the start" {
        start_gloved "$T/a" "${XOPTS[@]}"
        create_proj
        owner "{\"id\":1,\"method\":\"exposure_revoke\",\"params\":{\"exposure_id\":\"$XID\",\"generation\":1}}"
        jq -e '.result.state == "revoked"' <<<"${lines[1]}" >/dev/null || fail "revoke: ${lines[1]}"
        create_proj
        ctl --json exposures
        local before=$output
        jq -e '.exposures[0].generation == 2 and .exposures[0].state == "live"' <<<"$before" >/dev/null ||
                fail "catalog: $before"
        stop_gloved
        start_gloved "$T/a" "${XOPTS[@]}"
        ctl --json exposures
        [ "$output" = "$before" ] || fail "the catalog changed across a restart: $before -> $output"
        stop_gloved

        # One byte changed inside the first record: refused, nothing repaired.
        cp "$XJRN" "$T/journal.orig"
        "$PY" -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(64 + 4 + 20); b = f.read(1); f.seek(64 + 4 + 20)
f.write(bytes([b[0] ^ 0x20])); f.close()' "$XJRN"
        cp "$XJRN" "$T/journal.flipped"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"journal.chain_mismatch"'* ]] || fail "stderr: $stderr"
        cmp -s "$XJRN" "$T/journal.flipped" || fail "the refused start changed the journal"
        [ ! -e "$T/a/run/owner-secret" ] || fail "a refused start wrote the owner secret"

        cp "$T/journal.orig" "$XJRN"
        chmod 644 "$XJRN"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"journal.file_insecure"'* ]] || fail "stderr: $stderr"
        chmod 600 "$XJRN"
        # Another owner's journal; then one cut short by a few bytes.
        chown 65534 "$XJRN"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"journal.file_insecure"'* ]] || fail "another owner's journal: $stderr"
        chown "$(id -u)" "$XJRN"
        truncate -s -3 "$XJRN"
        gloved_fails --runtime-dir "$T/a/run" --state-dir "$T/a/state" "${XOPTS[@]}"
        expect_status 1
        [[ "$stderr" == *'"code":"journal.truncated"'* ]] || fail "a truncated journal: $stderr"
        cp "$T/journal.orig" "$XJRN"
        start_gloved "$T/a" "${XOPTS[@]}"
        ctl --json exposures
        [ "$output" = "$before" ] || fail "the restored journal replays to another catalog: $output"
}
