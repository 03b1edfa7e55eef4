/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libcrypto functions src/base/digest.c and src/apply/trust.c (Ed25519)
 * use, resolved with dlopen(3) on first use instead of at program start.
 * Every libcrypto function that code linked into glove calls needs its
 * wrapper here, or the executable links libcrypto at start again.
 *
 * Linked into the glove executable only (gloved and the tests link libcrypto
 * normally). Why: loading OpenSSL's libcrypto costs about 1.4 ms at every
 * start of the process on the reference machine, more than a fifth of the
 * whole `glove exec` start-up, and glove exec computes no digest. Definitions
 * in the executable take precedence over any shared object, so digest.c
 * calls libcrypto as usual and the linker (--as-needed) drops libcrypto from
 * the executable's dependencies.
 *
 * If libcrypto cannot be loaded, the functions fail the way libcrypto
 * reports failure (0 or NULL), which digest.c turns into "digest.crypto_failed".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

static void *sym(const char *name) {
        static void *handle;
        static int failed;
        if (!handle && !failed) {
                handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
                if (!handle) {
                        failed = 1;
                        fprintf(stderr, "glove: digest.libcrypto: cannot load libcrypto.so.3: %s\n", dlerror());
                }
        }
        return handle ? dlsym(handle, name) : NULL;
}

#define LAZY(type, fail, name, params, args)                           \
        type name params {                                             \
                static type(*fn) params;                               \
                if (!fn)                                               \
                        fn = (type(*) params)sym(#name);               \
                return fn ? fn args : (fail);                          \
        }

#define LAZY_VOID(name, params, args)                                  \
        void name params {                                             \
                static void(*fn) params;                               \
                if (!fn)                                               \
                        fn = (void(*) params)sym(#name);               \
                if (fn)                                                \
                        fn args;                                       \
        }

LAZY(const EVP_MD *, NULL, EVP_sha256, (void), ())
LAZY(EVP_MD *, NULL, EVP_MD_fetch, (OSSL_LIB_CTX * libctx, const char *algorithm, const char *properties),
     (libctx, algorithm, properties))
LAZY_VOID(EVP_MD_free, (EVP_MD * md), (md))
LAZY(EVP_MD_CTX *, NULL, EVP_MD_CTX_new, (void), ())
LAZY_VOID(EVP_MD_CTX_free, (EVP_MD_CTX * ctx), (ctx))
LAZY(int, 0, EVP_DigestInit_ex2, (EVP_MD_CTX * ctx, const EVP_MD *type, const OSSL_PARAM params[]), (ctx, type, params))
LAZY(int, 0, EVP_DigestUpdate, (EVP_MD_CTX * ctx, const void *d, size_t cnt), (ctx, d, cnt))
LAZY(int, 0, EVP_DigestFinal_ex, (EVP_MD_CTX * ctx, unsigned char *md, unsigned int *s), (ctx, md, s))
LAZY(int, 0, EVP_Digest,
     (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl),
     (data, count, md, size, type, impl))
LAZY(EVP_MAC *, NULL, EVP_MAC_fetch, (OSSL_LIB_CTX * libctx, const char *algorithm, const char *properties),
     (libctx, algorithm, properties))
LAZY_VOID(EVP_MAC_free, (EVP_MAC * mac), (mac))
LAZY(EVP_MAC_CTX *, NULL, EVP_MAC_CTX_new, (EVP_MAC * mac), (mac))
LAZY_VOID(EVP_MAC_CTX_free, (EVP_MAC_CTX * ctx), (ctx))
LAZY(int, 0, EVP_MAC_init, (EVP_MAC_CTX * ctx, const unsigned char *key, size_t keylen, const OSSL_PARAM params[]),
     (ctx, key, keylen, params))
LAZY(int, 0, EVP_MAC_update, (EVP_MAC_CTX * ctx, const unsigned char *data, size_t datalen), (ctx, data, datalen))
LAZY(int, 0, EVP_MAC_final, (EVP_MAC_CTX * ctx, unsigned char *out, size_t *outl, size_t outsize), (ctx, out, outl, outsize))
/* Ed25519 (src/apply/trust.c). */
LAZY(EVP_PKEY *, NULL, EVP_PKEY_new_raw_private_key, (int type, ENGINE *e, const unsigned char *priv, size_t len),
     (type, e, priv, len))
LAZY(EVP_PKEY *, NULL, EVP_PKEY_new_raw_public_key, (int type, ENGINE *e, const unsigned char *pub, size_t len),
     (type, e, pub, len))
LAZY(int, 0, EVP_PKEY_get_raw_public_key, (const EVP_PKEY *pkey, unsigned char *pub, size_t *len), (pkey, pub, len))
LAZY_VOID(EVP_PKEY_free, (EVP_PKEY * pkey), (pkey))
LAZY(int, 0, EVP_DigestSignInit, (EVP_MD_CTX * ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey),
     (ctx, pctx, type, e, pkey))
LAZY(int, 0, EVP_DigestSign,
     (EVP_MD_CTX * ctx, unsigned char *sigret, size_t *siglen, const unsigned char *tbs, size_t tbslen),
     (ctx, sigret, siglen, tbs, tbslen))
LAZY(int, 0, EVP_DigestVerifyInit,
     (EVP_MD_CTX * ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey), (ctx, pctx, type, e, pkey))
/* A failure to load libcrypto is "does not verify" (0): fail closed. */
LAZY(int, 0, EVP_DigestVerify,
     (EVP_MD_CTX * ctx, const unsigned char *sigret, size_t siglen, const unsigned char *tbs, size_t tbslen),
     (ctx, sigret, siglen, tbs, tbslen))
LAZY(int, 0, RAND_bytes, (unsigned char *buf, int num), (buf, num))
LAZY(unsigned long, 0, ERR_get_error, (void), ())
LAZY_VOID(ERR_clear_error, (void), ())
LAZY_VOID(ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len))

/* Without libcrypto every comparison reports "different": fail closed. */
LAZY(int, 1, CRYPTO_memcmp, (const void *a, const void *b, size_t len), (a, b, len))

OSSL_PARAM OSSL_PARAM_construct_utf8_string(const char *key, char *buf, size_t bsize) {
        static OSSL_PARAM (*fn)(const char *, char *, size_t);
        if (!fn)
                fn = (OSSL_PARAM(*)(const char *, char *, size_t))sym("OSSL_PARAM_construct_utf8_string");
        if (fn)
                return fn(key, buf, bsize);
        OSSL_PARAM p;
        memset(&p, 0, sizeof(p));
        return p;
}

OSSL_PARAM OSSL_PARAM_construct_end(void) {
        static OSSL_PARAM (*fn)(void);
        if (!fn)
                fn = (OSSL_PARAM(*)(void))sym("OSSL_PARAM_construct_end");
        if (fn)
                return fn();
        OSSL_PARAM p;
        memset(&p, 0, sizeof(p));
        return p;
}
