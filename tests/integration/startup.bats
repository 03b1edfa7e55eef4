#!/usr/bin/env bats
# What glove exec's start-up does not pay for (docs: src/cli/*_lazy.c):
# libsystemd and libcrypto are resolved lazily, the seccomp program is
# prebuilt, so none of the three is loaded when the process starts.

load helpers

@test "startup: glove loads neither libsystemd, libcrypto nor libseccomp at start" {
        command -v readelf >/dev/null || skip "readelf (binutils) is not installed"
        run readelf -d "$GLOVE"
        expect_status 0
        [[ "$output" == *"(NEEDED)"*"libc.so"* ]] || fail "positive control: no NEEDED entries read: $output"
        for lib in libsystemd libcrypto libseccomp; do
                [[ "$output" != *"[$lib"* ]] || fail "glove needs $lib at start"
        done
        # And they are still used where needed: glove run and egress work
        # (tests run_*.bats, egress.bats); gloved links them normally.
        run readelf -d "$(dirname "$GLOVE")/gloved"
        [[ "$output" == *"[libsystemd"* && "$output" == *"[libcrypto"* ]] || fail "gloved should link libsystemd and libcrypto"
}
