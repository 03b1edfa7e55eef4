/* SPDX-License-Identifier: Apache-2.0 */
// fuzz-sources: src/store/journal.c src/store/journal_rewrite.c src/store/store.c src/store/store_records.c src/store/store_compact.c src/store/checkpoint.c src/store/session.c src/store/index.c src/store/dirs.c
/*
 * libFuzzer target: strict replay of the gloved session store
 * (glove/store/store.h, journal.h). The first input byte selects a mode:
 *
 *   even  raw journal bytes (header, lengths, tags, torn tails) replayed
 *         with glove_store_replay_bytes;
 *   odd   record payloads separated by '\n', framed into a journal whose
 *         header and SHA-256 chain are computed here, so that the fuzzer
 *         reaches the record decoder and the lifecycle rules instead of
 *         stopping at the chain; then replayed. With bit 1 of the mode byte
 *         set, the first 1024 bytes after it are a seal that the framed
 *         journal is checked against (glove_store_journal_seal_verify).
 *
 * Invariants besides memory safety: a replay either fails with a stable
 * store.*, journal.* or checkpoint.* code or yields a store whose record count equals the
 * records framed and whose every session is in a valid state with a
 * well-formed history, whose runtime identity, if any, came with its
 * transition to running and is one canonical object. Built and run by
 * scripts/fuzz.sh; seeds in fuzz/corpus/journal_replay/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glove/base/buffer.h"
#include "glove/base/json.h"
#include "glove/store/journal.h"
#include "glove/store/store.h"

static void check_result(int r, const struct glove_error *e, struct glove_store *st) {
        if (r < 0) {
                /* checkpoint.*: a journal whose header says it continues
                 * a checkpoint that replay from bytes alone does not have. */
                if (!e->code || (strncmp(e->code, "store.", 6) != 0 && strncmp(e->code, "journal.", 8) != 0 &&
                                 strncmp(e->code, "checkpoint.", 11) != 0))
                        abort();
                return;
        }
        if (glove_store_sessions(st) > glove_store_records(st))
                abort();
        /* A runtime identity only comes with the transition to running, and
         * is the canonical encoding of one object within its bound. */
        for (size_t i = 0; i < glove_store_sessions(st); i++) {
                const struct glove_store_session *s = glove_store_at(st, i);
                bool ran = false;
                for (size_t h = 0; h < s->n_history; h++)
                        ran |= s->history[h].to == GLOVE_STORE_SESSION_RUNNING;
                if (!s->runtime)
                        continue;
                if (!ran || s->runtime_len > GLOVE_STORE_RUNTIME_MAX || strlen(s->runtime) != s->runtime_len ||
                    glove_json_is_canonical(s->runtime, s->runtime_len, GLOVE_STORE_RUNTIME_MAX,
                                            GLOVE_JSON_OBJECT_ONLY, NULL) != 1)
                        abort();
        }
}

static void replay_raw(const uint8_t *data, size_t size) {
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        int r = glove_store_replay_bytes(data, size, &st, &e);
        check_result(r, &e, st);
        glove_store_close(st);
}

static void replay_framed(const uint8_t *data, size_t size, const uint8_t *seal) {
        const struct glove_store_journal_format *fmt = &glove_store_format;
        struct glove_buffer j;
        uint8_t param[GLOVE_STORE_JOURNAL_PARAM_LEN] = { 0 }, header[GLOVE_STORE_JOURNAL_HEADER_LEN];
        uint8_t tag[GLOVE_STORE_JOURNAL_TAG_LEN];
        glove_buffer_init(&j, fmt->max_bytes);
        glove_store_journal_header_build(fmt, param, header);
        if (fmt->genesis(NULL, header, tag, NULL) < 0 || glove_buffer_append(&j, header, sizeof(header)) < 0)
                abort();
        uint64_t n = 0;
        for (size_t off = 0; off < size && n < fmt->max_records;) {
                const uint8_t *nl = memchr(data + off, '\n', size - off);
                size_t len = nl ? (size_t)(nl - (data + off)) : size - off;
                if (len > 0 && len <= fmt->max_payload) {
                        uint8_t prefix[4];
                        glove_put_be32(prefix, (uint32_t)len);
                        if (fmt->chain(NULL, tag, n + 1, data + off, len, tag, NULL) < 0)
                                abort();
                        if (glove_buffer_append(&j, prefix, 4) < 0 || glove_buffer_append(&j, data + off, len) < 0 ||
                            glove_buffer_append(&j, tag, sizeof(tag)) < 0)
                                break;
                        n++;
                }
                off += len + 1;
        }
        struct glove_store *st = NULL;
        struct glove_error e = { 0 };
        int r = glove_store_replay_bytes(j.data, j.len, &st, &e);
        check_result(r, &e, st);
        if (r == 0 && glove_store_records(st) != n)
                abort();
        glove_store_close(st);
        if (seal) {
                struct glove_store_journal_scan scan;
                bool unsealed = false;
                struct glove_error se = { 0 };
                if (glove_store_journal_scan(fmt, j.data, j.len, NULL, NULL, &scan, NULL) == 0 &&
                    glove_store_journal_seal_verify(&scan, seal, GLOVE_STORE_JOURNAL_SEAL_LEN, &unsealed, &se) < 0 &&
                    strcmp(se.code, "journal.seal_corrupt") != 0 && strcmp(se.code, "journal.resized") != 0 &&
                    strcmp(se.code, "journal.record_lost") != 0)
                        abort();
        }
        glove_buffer_free(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0)
                return 0;
        if ((data[0] & 3) == 3 && size > 1 + GLOVE_STORE_JOURNAL_SEAL_LEN)
                replay_framed(data + 1 + GLOVE_STORE_JOURNAL_SEAL_LEN, size - 1 - GLOVE_STORE_JOURNAL_SEAL_LEN,
                              data + 1);
        else if (data[0] & 1)
                replay_framed(data + 1, size - 1, NULL);
        else
                replay_raw(data + 1, size - 1);
        return 0;
}
