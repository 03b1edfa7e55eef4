/* SPDX-License-Identifier: Apache-2.0 */
/* glove/remote/backend.h: the remote backend file and the checks of its
 * values, one case per rule (the integration tests keep one per code). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "glove/base/cleanup.h"
#include "glove/remote/backend.h"
#include "helpers.h"
#include "keys.h"

#define JP "$.x"

static void expect_code(int r, const struct glove_error *e, const char *code, const char *what) {
        if (r == 0)
                fail_msg("%s: accepted, expected %s", what, code);
        if (!e->code || strcmp(e->code, code) != 0)
                fail_msg("%s: got %s (%s), expected %s", what, e->code ? e->code : "(none)", e->message, code);
}

/* ---- container_identity ---- */

static void test_identity_accepted(void **state) {
        (void)state;
        static const char *const ok[] = {
                "registry.example.net/glove/runtime@sha256:" HEX64,
                "glove/runtime@sha256:" HEX64,
                "runtime@sha256:" HEX64,
                "localhost/runtime@sha256:" HEX64,
                "localhost:5000/a/b@sha256:" HEX64,
                "10.0.0.1:5000/a@sha256:" HEX64,
                "[::1]:5000/a@sha256:" HEX64,
                "[2001:db8::1]/a@sha256:" HEX64,
                "Registry.Example.NET/a@sha256:" HEX64, /* the host may have upper case */
                "example.net/a.b/c_d/e__f/g-h/i---j/k0@sha256:" HEX64,
                "example.com@sha256:" HEX64, /* one component: a path, not a host */
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                struct glove_error e = { 0 };
                if (glove_remote_check_identity(ok[i], JP, &e) != 0)
                        fail_msg("%s refused: %s: %s", ok[i], e.code, e.message);
        }
}

static void test_identity_tagged(void **state) {
        (void)state;
        static const char *const tagged[] = {
                "registry.example.net/glove/runtime:1.0@sha256:" HEX64,
                "runtime:latest@sha256:" HEX64,
                "localhost:5000/a:v1@sha256:" HEX64,
                "registry.example.net/glove/runtime:1.0", /* and no digest */
                "runtime:latest",
        };
        for (size_t i = 0; i < sizeof(tagged) / sizeof(tagged[0]); i++) {
                struct glove_error e = { 0 };
                expect_code(glove_remote_check_identity(tagged[i], JP, &e), &e, "remote.image_tagged", tagged[i]);
                assert_non_null(strstr(e.message, JP ": "));
        }
}

static void test_identity_invalid(void **state) {
        (void)state;
        char long_name[400];
        memset(long_name, 'a', 256);
        snprintf(long_name + 256, sizeof(long_name) - 256, "@sha256:%s", HEX64);
        const char *const bad[] = {
                "",
                "runtime",                                          /* not pinned */
                "runtime@sha256:" HEX64 "@sha256:" HEX64,           /* a second '@' */
                "runtime@sha256:" HEX64 " ",                        /* trailing text */
                "runtime@sha256:" HEX64 "0",                        /* 65 digits */
                "runtime@sha256:" HEX64 "/x",
                "runtime@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", /* upper case */
                "runtime@sha256:0123",                              /* short */
                "runtime@sha512:" HEX64 HEX64,                      /* another algorithm */
                "runtime@" HEX64,                                   /* no algorithm */
                "@sha256:" HEX64,                                   /* empty name */
                "Glove/runtime@sha256:" HEX64,                      /* upper-case path component */
                "example.net/Runtime@sha256:" HEX64,
                "example.net//runtime@sha256:" HEX64,               /* empty component */
                "example.net/runtime/@sha256:" HEX64,
                "/runtime@sha256:" HEX64,
                "example.net/@sha256:" HEX64,
                "example.net:0/a@sha256:" HEX64,                    /* port 0 */
                "example.net:65536/a@sha256:" HEX64,
                "example.net:080/a@sha256:" HEX64,                  /* leading zero */
                "example.net:/a@sha256:" HEX64,
                "registry-.example.net/a@sha256:" HEX64,            /* bad host label */
                "registry..example.net/a@sha256:" HEX64,
                "[zz]/a@sha256:" HEX64,                             /* bad IPv6 literal */
                "[::1/a@sha256:" HEX64,
                "a/-b@sha256:" HEX64,                               /* separators */
                "a/b.@sha256:" HEX64,
                "a/b...c@sha256:" HEX64,
                "a/b___c@sha256:" HEX64,
                "a/b._c@sha256:" HEX64,
                "runtime:@sha256:" HEX64,                           /* ':' with no tag */
                "runtime:-x@sha256:" HEX64,
                "run time@sha256:" HEX64,                           /* whitespace */
                "run\ttime@sha256:" HEX64,
                "runtime%@sha256:" HEX64,
                long_name,                                          /* 256-byte name */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error e = { 0 };
                expect_code(glove_remote_check_identity(bad[i], JP, &e), &e, "remote.image_invalid", bad[i]);
                assert_non_null(strstr(e.message, JP ": "));
        }
        /* 255 bytes of name are fine. */
        memset(long_name, 'a', 255);
        snprintf(long_name + 255, sizeof(long_name) - 255, "@sha256:%s", HEX64);
        assert_int_equal(glove_remote_check_identity(long_name, JP, NULL), 0);
}

static void test_digest(void **state) {
        (void)state;
        assert_int_equal(glove_remote_check_digest("sha256:" HEX64, JP, NULL), 0);
        static const char *const bad[] = {
                "", HEX64, "sha256:" HEX64 "0", "sha256:0123", "SHA256:" HEX64, "sha512:" HEX64,
                "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF", "sha256: " HEX64,
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error e = { 0 };
                expect_code(glove_remote_check_digest(bad[i], JP, &e), &e, "remote.image_digest_invalid", bad[i]);
        }
}

/* ---- host_key ---- */

static void test_host_key(void **state) {
        (void)state;
        char text[512];
        uint8_t key[32];
        struct glove_error e = { 0 };
        tk_key_text("ssh-ed25519", "ssh-ed25519", 32, text, sizeof(text));
        assert_int_equal(strlen(text), GLOVE_REMOTE_HOST_KEY_TEXT_LEN);
        assert_int_equal(glove_remote_check_host_key(text, JP, key, &e), 0);
        for (int i = 0; i < 32; i++)
                assert_int_equal(key[i], i + 1);
        /* The known prefix of every ssh-ed25519 key text. */
        assert_memory_equal(text, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 37);

        static const char *const other_types[] = { "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp521",
                                                   "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
                                                   "ssh-ed25519-cert-v01@openssh.com", "ssh-dss", "SSH-ED25519" };
        for (size_t i = 0; i < sizeof(other_types) / sizeof(other_types[0]); i++) {
                tk_key_text(other_types[i], other_types[i], 32, text, sizeof(text));
                memset(&e, 0, sizeof(e));
                expect_code(glove_remote_check_host_key(text, JP, NULL, &e), &e, "remote.host_key_type", text);
                assert_non_null(strstr(e.message, other_types[i]));
        }

        char good[512], buf[600];
        tk_key_text("ssh-ed25519", "ssh-ed25519", 32, good, sizeof(good));
        const char *b64 = good + 12;
        struct {
                const char *what;
                char text[600];
        } bad[16];
        size_t n = 0;
        bad[n].text[0] = '\0', bad[n++].what = "empty";
        snprintf(bad[n].text, sizeof(bad[n].text), "ssh-ed25519"), bad[n++].what = "type alone";
        snprintf(bad[n].text, sizeof(bad[n].text), "ssh-ed25519 "), bad[n++].what = "no key";
        snprintf(bad[n].text, sizeof(bad[n].text), "%s host@example", good), bad[n++].what = "a comment";
        snprintf(bad[n].text, sizeof(bad[n].text), "%s ", good), bad[n++].what = "trailing space";
        snprintf(bad[n].text, sizeof(bad[n].text), "%s\n", good), bad[n++].what = "trailing newline";
        snprintf(bad[n].text, sizeof(bad[n].text), "ssh-ed25519  %s", b64), bad[n++].what = "two spaces";
        snprintf(bad[n].text, sizeof(bad[n].text), "ssh-ed25519\t%s", b64), bad[n++].what = "a tab";
        snprintf(bad[n].text, sizeof(bad[n].text), " %s", good), bad[n++].what = "leading space";
        snprintf(buf, sizeof(buf), "%s", good);
        buf[40] = '!';
        snprintf(bad[n].text, sizeof(bad[n].text), "%s", buf), bad[n++].what = "not base64";
        tk_key_text("ssh-ed25519", "ssh-ed25519", 31, bad[n].text, sizeof(bad[n].text)), bad[n++].what = "31-byte key";
        tk_key_text("ssh-ed25519", "ssh-ed25519", 33, bad[n].text, sizeof(bad[n].text)), bad[n++].what = "33-byte key";
        tk_key_text("ssh-ed25519", "ssh-ed25518", 32, bad[n].text, sizeof(bad[n].text)), bad[n++].what = "blob names another type";
        tk_key_text("ssh-ed25519", "ssh-rsa", 36, bad[n].text, sizeof(bad[n].text)), bad[n++].what = "an RSA blob";
        snprintf(bad[n].text, sizeof(bad[n].text), "ssh-ed25519 %.64s", b64), bad[n++].what = "cut base64";
        for (size_t i = 0; i < n; i++) {
                memset(&e, 0, sizeof(e));
                expect_code(glove_remote_check_host_key(bad[i].text, JP, NULL, &e), &e, "remote.host_key_invalid",
                            bad[i].what);
                assert_non_null(strstr(e.message, JP ": "));
        }
}

/* ---- ssh_destination ---- */

static void test_host(void **state) {
        (void)state;
        static const char *const ok[] = { "builder.example.net", "localhost", "a", "a-b.c", "xn--bcher-kva.example",
                                          "10.0.0.1", "127.0.0.1", "::1", "2001:db8::1", "1a", "1.0.0.0",
                                          "223.255.255.255", "fe80::1" };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                struct glove_error e = { 0 };
                if (glove_remote_check_host(ok[i], JP, &e) != 0)
                        fail_msg("%s refused: %s", ok[i], e.message);
        }
        char label64[80], long_name[300];
        memset(label64, 'a', 64);
        label64[64] = '\0';
        for (size_t i = 0; i < 254; i++)
                long_name[i] = i % 2 ? '.' : 'a';
        long_name[253] = 'a';
        long_name[254] = '\0';
        static const char *fixed[] = {
                "", "-oProxyCommand=x", "-a", "Builder.example.net", "a..b", "a.", ".a", "a-", "a-.b", "a b",
                "a\tb", "a%b", "a%h", "user@host", "host:22", "[::1]", "fe80::1%eth0", "010.0.0.1", "2001:DB8::1",
                "2001:db8:0:0:0:0:0:1", "1.2.3", "a.123", "a_b", "a/b", "a,b", "\"a\"", "a\nb", "*", "a.*",
                /* addresses that name no remote host */
                "0.0.0.0", "0.1.2.3", "::", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
                "ff02::1",
        };
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
                struct glove_error e = { 0 };
                expect_code(glove_remote_check_host(fixed[i], JP, &e), &e, "remote.destination_host", fixed[i]);
        }
        struct glove_error e = { 0 };
        expect_code(glove_remote_check_host(label64, JP, &e), &e, "remote.destination_host", "64-byte label");
        memset(&e, 0, sizeof(e));
        expect_code(glove_remote_check_host(long_name, JP, &e), &e, "remote.destination_host", "254 bytes");
        long_name[253] = '\0'; /* 253 bytes, ending in 'a' */
        assert_int_equal(glove_remote_check_host(long_name, JP, NULL), 0);
}

static void test_user(void **state) {
        (void)state;
        static const char *const ok[] = { "glove", "a", "A", "a.b_c-d", "u0", "abcdefghijklmnopqrstuvwxyz012345" };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                assert_int_equal(glove_remote_check_user(ok[i], JP, NULL), 0);
        static const char *const bad[] = { "", "-x", "a b", "a@b", "a%u", "a:b", "a/b", "\xc3\xa9",
                                           "abcdefghijklmnopqrstuvwxyz0123456" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct glove_error e = { 0 };
                expect_code(glove_remote_check_user(bad[i], JP, &e), &e, "remote.destination_user", bad[i]);
        }
}

/* ---- the document ---- */

static char key_text[256];

static int group_setup(void **state) {
        (void)state;
        tk_key_text("ssh-ed25519", "ssh-ed25519", 32, key_text, sizeof(key_text));
        return 0;
}

static int decode(const char *doc, struct glove_remote_backend *b, struct glove_error *e) {
        return glove_remote_backend_decode(doc, strlen(doc), b, e);
}

static void test_decode_valid(void **state) {
        (void)state;
        _cleanup_free_ char *doc = tk_document("builder.example.net", 2222, "glove", key_text,
                                               "registry.example.net/glove/runtime@sha256:" HEX64, "sha256:" HEX64, "");
        struct glove_remote_backend b;
        struct glove_error e = { 0 };
        assert_int_equal(decode(doc, &b, &e), 0);
        assert_string_equal(b.host, "builder.example.net");
        assert_int_equal(b.port, 2222);
        assert_string_equal(b.user, "glove");
        assert_string_equal(b.host_key_text, key_text);
        assert_int_equal(b.host_key[0], 1);
        assert_string_equal(b.container_identity, "registry.example.net/glove/runtime@sha256:" HEX64);
        assert_string_equal(b.container_image_digest, "sha256:" HEX64);
}

struct doc_case {
        const char *what, *code, *path;
        char *doc;
};

static void test_decode_refusals(void **state) {
        (void)state;
        const char *id = "registry.example.net/glove/runtime@sha256:" HEX64, *dg = "sha256:" HEX64;
        const char *other = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
        struct doc_case c[] = {
                { "apple_container", "remote.backend_conflict", "$.apple_container",
                  tk_document("h", 22, "u", key_text, id, dg, ", \"apple_container\": {}") },
                { "unknown top member", "remote.unknown_field", "$.extra",
                  tk_document("h", 22, "u", key_text, id, dg, ", \"extra\": 1") },
                { "mismatch", "remote.image_digest_mismatch", "$.remote_backend.container_identity",
                  tk_document("h", 22, "u", key_text, id, other, "") },
                { "tagged", "remote.image_tagged", "$.remote_backend.container_identity",
                  tk_document("h", 22, "u", key_text, "registry.example.net/glove/runtime:1@sha256:" HEX64, dg, "") },
                { "bad digest", "remote.image_digest_invalid", "$.remote_backend.container_image_digest",
                  tk_document("h", 22, "u", key_text, id, "sha256:ABC", "") },
                { "port 0", "remote.destination_port", "$.remote_backend.ssh_destination.port",
                  tk_document("h", 0, "u", key_text, id, dg, "") },
                { "port 65536", "remote.destination_port", "$.remote_backend.ssh_destination.port",
                  tk_document("h", 65536, "u", key_text, id, dg, "") },
                { "bad host", "remote.destination_host", "$.remote_backend.ssh_destination.host",
                  tk_document("-oProxyCommand=x", 22, "u", key_text, id, dg, "") },
                { "bad user", "remote.destination_user", "$.remote_backend.ssh_destination.user",
                  tk_document("h", 22, "-u", key_text, id, dg, "") },
                { "rsa key", "remote.host_key_type", "$.remote_backend.host_key",
                  tk_document("h", 22, "u", "ssh-rsa AAAAB3NzaC1yc2E=", id, dg, "") },
                { "bad key", "remote.host_key_invalid", "$.remote_backend.host_key",
                  tk_document("h", 22, "u", "ssh-ed25519 AAAA", id, dg, "") },
                { "trailing data", "remote.invalid_json", "$", tk_document("h", 22, "u", key_text, id, dg, "} x") },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                assert_non_null(c[i].doc);
                struct glove_remote_backend b;
                struct glove_error e = { 0 };
                expect_code(decode(c[i].doc, &b, &e), &e, c[i].code, c[i].what);
                if (strncmp(e.message, c[i].path, strlen(c[i].path)) != 0)
                        fail_msg("%s: the message does not start with %s: %s", c[i].what, c[i].path, e.message);
                free(c[i].doc);
        }
        static const struct {
                const char *doc, *code, *path;
        } raw[] = {
                { "", "remote.invalid_json", "$" },
                { "[]", "remote.invalid_json", "$" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"schema\":\"x\"}", "remote.duplicate_key", "$" },
                { "{\"schema\":\"glove.remote-backend-v2\",\"remote_backend\":{}}", "remote.unsupported_schema",
                  "$.schema" },
                { "{\"schema\":\"glove.remote-backend-v1\"}", "remote.missing_field", "$.remote_backend" },
                { "{\"remote_backend\":{}}", "remote.missing_field", "$.schema" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"remote_backend\":[]}", "remote.wrong_type",
                  "$.remote_backend" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"remote_backend\":{\"x\":1}}", "remote.unknown_field",
                  "$.remote_backend.x" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"remote_backend\":{}}", "remote.missing_field",
                  "$.remote_backend.ssh_destination" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"remote_backend\":{\"ssh_destination\":{\"host\":\"h\","
                  "\"port\":\"22\",\"user\":\"u\"}}}",
                  "remote.destination_port", "$.remote_backend.ssh_destination.port" },
                { "{\"schema\":\"glove.remote-backend-v1\",\"remote_backend\":{\"ssh_destination\":{\"host\":\"h\","
                  "\"port\":22,\"user\":\"u\",\"identity_file\":\"/k\"}}}",
                  "remote.unknown_field", "$.remote_backend.ssh_destination.identity_file" },
                { "{\"apple_container\":{},\"remote_backend\":{},\"schema\":\"glove.remote-backend-v1\"}",
                  "remote.backend_conflict", "$.apple_container" },
        };
        for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
                struct glove_remote_backend b;
                struct glove_error e = { 0 };
                expect_code(decode(raw[i].doc, &b, &e), &e, raw[i].code, raw[i].doc);
                if (strncmp(e.message, raw[i].path, strlen(raw[i].path)) != 0)
                        fail_msg("%s: the message does not start with %s: %s", raw[i].doc, raw[i].path, e.message);
        }
}

/* ---- the file ---- */

static void write_file(const char *path, const char *text, mode_t mode) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(chmod(path, mode), 0);
}

static void test_load(void **state) {
        (void)state;
        char *dir = th_tempdir();
        _cleanup_free_ char *doc = tk_document("h", 22, "u", key_text, "a@sha256:" HEX64, "sha256:" HEX64, "");
        _cleanup_free_ char *ok = th_join(dir, "ok.json"), *open_ = th_join(dir, "open.json"),
                            *lnk = th_join(dir, "link.json"), *hard = th_join(dir, "hard.json"),
                            *big = th_join(dir, "big.json"), *missing = th_join(dir, "missing.json");
        write_file(ok, doc, 0600);
        write_file(open_, doc, 0644);
        assert_int_equal(symlink(ok, lnk), 0);
        struct glove_remote_backend b;
        struct glove_error e = { 0 };
        assert_int_equal(glove_remote_backend_load(ok, geteuid(), &b, &e), 0);
        assert_string_equal(b.host, "h");
        struct {
                const char *path, *code;
                uid_t owner;
        } c[] = {
                { "relative.json", "remote.file_path_relative", geteuid() },
                { missing, "remote.file_open", geteuid() },
                { open_, "remote.file_mode", geteuid() },
                { lnk, "remote.file_symlink", geteuid() },
                { dir, "remote.file_not_regular", geteuid() },
                { ok, "remote.file_owner", geteuid() + 1 },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                memset(&e, 0, sizeof(e));
                expect_code(glove_remote_backend_load(c[i].path, c[i].owner, &b, &e), &e, c[i].code, c[i].code);
        }
        assert_int_equal(link(ok, hard), 0);
        memset(&e, 0, sizeof(e));
        expect_code(glove_remote_backend_load(ok, geteuid(), &b, &e), &e, "remote.file_links", "two links");
        assert_int_equal(unlink(hard), 0);
        char *large = malloc(GLOVE_REMOTE_FILE_MAX + 2);
        memset(large, ' ', GLOVE_REMOTE_FILE_MAX + 1);
        large[GLOVE_REMOTE_FILE_MAX + 1] = '\0';
        write_file(big, large, 0600);
        free(large);
        memset(&e, 0, sizeof(e));
        expect_code(glove_remote_backend_load(big, geteuid(), &b, &e), &e, "remote.file_too_large", "64 KiB + 1");
        /* A decoding error names the file, then the JSON path. */
        write_file(ok, "{\"schema\":\"glove.remote-backend-v1\",\"apple_container\":{}}", 0600);
        memset(&e, 0, sizeof(e));
        expect_code(glove_remote_backend_load(ok, geteuid(), &b, &e), &e, "remote.backend_conflict", "apple");
        assert_non_null(strstr(e.message, "ok.json: $.apple_container: "));
        th_rmtree(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_identity_accepted), cmocka_unit_test(test_identity_tagged),
                cmocka_unit_test(test_identity_invalid),  cmocka_unit_test(test_digest),
                cmocka_unit_test(test_host_key),          cmocka_unit_test(test_host),
                cmocka_unit_test(test_user),              cmocka_unit_test(test_decode_valid),
                cmocka_unit_test(test_decode_refusals),   cmocka_unit_test(test_load),
        };
        return cmocka_run_group_tests(tests, group_setup, NULL);
}
