/* SPDX-License-Identifier: Apache-2.0 */
#ifndef GLOVE_BASE_BASE64_H
#define GLOVE_BASE_BASE64_H

/*
 * Base64 as RFC 4648 section 4 defines it: the standard alphabet
 * (A-Z a-z 0-9 + /), padding with '=' required, no line breaks, no
 * whitespace. The encoders always pad. The decoders are strict: the text is
 * a multiple of 4 characters, '=' appears only as the last one or two
 * characters, every other character is of the alphabet, and the bits that
 * padding drops are zero (canonical padding bits, section 3.5), so each byte
 * string has exactly one accepted text. Used by the control protocol
 * (session output, stdin, transcripts) and by the egress proxy's
 * Proxy-Authorization credentials. Pure, thread-safe, no allocation except
 * in glove_base64_encode and glove_base64_decode.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Characters of the padded base64 of n bytes (n at most
 * GLOVE_BASE64_INPUT_MAX, so that it does not overflow). */
#define GLOVE_BASE64_LEN(n) (((n) + 2) / 3 * 4)
/* Bytes that len characters of base64 decode to at most. */
#define GLOVE_BASE64_DECODED_MAX(len) ((len) / 4 * 3)
/* Largest input the encoders take. */
#define GLOVE_BASE64_INPUT_MAX ((SIZE_MAX - 1) / 4 * 3 - 2)

/*
 * Writes the padded base64 of data[0..n) (borrowed) to out, which has room
 * for GLOVE_BASE64_LEN(n) characters; no NUL is written. Returns the number
 * of characters written (GLOVE_BASE64_LEN(n)). n at most
 * GLOVE_BASE64_INPUT_MAX.
 */
size_t glove_base64_encode_into(const void *data, size_t n, char *out);

/*
 * Writes the padded base64 of data[0..n) and a NUL to out (out_size bytes).
 * Returns the length written without the NUL, or -ENOBUFS (nothing written)
 * when out_size < GLOVE_BASE64_LEN(n) + 1 or the length would not fit an int.
 */
int glove_base64_encode_cstr(const void *data, size_t n, char *out, size_t out_size);

/* A new NUL-terminated base64 string of data[0..n) (free() it); NULL on
 * ENOMEM or when n exceeds GLOVE_BASE64_INPUT_MAX. */
char *glove_base64_encode(const void *data, size_t n);

/*
 * Decodes strict base64 text[0..len) (borrowed; NUL bytes are not special and
 * are refused like any character outside the alphabet) into out, which has
 * room for GLOVE_BASE64_DECODED_MAX(len) bytes. Returns the bytes written, or
 * -EINVAL for text that is not strict base64 (out then holds garbage).
 */
ssize_t glove_base64_decode_into(const char *text, size_t len, uint8_t *out);

/*
 * Decodes strict base64 text[0..len) into a new buffer: 0 with *out
 * malloc'd (free() it; never NULL on success, even for 0 bytes) holding *n
 * bytes; -EINVAL for text that is not strict base64 (a length that is not a
 * multiple of 4 is refused before the bound is checked); -EMSGSIZE when the
 * decoded bytes would exceed max (nothing decoded); -ENOMEM. On failure
 * *out is NULL and *n is 0.
 */
int glove_base64_decode(const char *text, size_t len, size_t max, uint8_t **out, size_t *n);

#endif
