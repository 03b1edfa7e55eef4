/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Endpoint identities in JSON (glove/services/binding.h).
 */
#include "glove/services/binding.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "glove/base/cleanup.h"
#include "glove/base/json.h"

int glove_services_identity_json(const struct glove_services_identity *id, json_t **out, struct glove_error *err) {
        if (!id || !out)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no identity or output pointer");
        *out = NULL;
        if (id->dev > INT64_MAX || id->ino > INT64_MAX)
                return glove_error_set(err, EOVERFLOW, "services.identity_range",
                                       "device %llu or inode %llu is above 2^63-1", (unsigned long long)id->dev,
                                       (unsigned long long)id->ino);
        json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "dev", (json_int_t)id->dev, "ino", (json_int_t)id->ino,
                              "mode", (json_int_t)id->mode, "nlink", (json_int_t)id->nlink, "uid",
                              (json_int_t)id->uid);
        if (!o)
                return glove_error_set(err, ENOMEM, "services.no_memory", "out of memory");
        *out = o;
        return 0;
}

static int get(const json_t *v, const char *key, const char *path, int64_t max, uint64_t *out,
               struct glove_error *err) {
        struct glove_error jerr = { 0 };
        int64_t x = 0;
        int r = glove_json_get_int(v, key, path, 0, max, &x, &jerr);
        if (r < 0)
                return glove_error_set(err, EINVAL, "services.identity_invalid", "%s", jerr.message);
        *out = (uint64_t)x;
        return 0;
}

int glove_services_identity_from_json(const json_t *v, const char *path, struct glove_services_identity *out,
                                      struct glove_error *err) {
        static const char *const keys[] = { "dev", "ino", "mode", "nlink", "uid", NULL };
        if (!out)
                return glove_error_set(err, EINVAL, "services.invalid_argument", "no output pointer");
        if (!v || !json_is_object(v))
                return glove_error_set(err, EINVAL, "services.identity_invalid", "%s: must be an object",
                                       path ? path : "$");
        struct glove_error jerr = { 0 };
        if (glove_json_check_keys(v, keys, path, &jerr) < 0)
                return glove_error_set(err, EINVAL, "services.identity_invalid", "%s", jerr.message);
        uint64_t dev, ino, mode, nlink, uid;
        int r;
        if ((r = get(v, "dev", path, INT64_MAX, &dev, err)) < 0 || (r = get(v, "ino", path, INT64_MAX, &ino, err)) < 0 ||
            (r = get(v, "mode", path, UINT32_MAX, &mode, err)) < 0 ||
            (r = get(v, "nlink", path, UINT32_MAX, &nlink, err)) < 0 ||
            (r = get(v, "uid", path, UINT32_MAX, &uid, err)) < 0)
                return r;
        *out = (struct glove_services_identity){
                .dev = dev, .ino = ino, .uid = (uint32_t)uid, .mode = (uint32_t)mode, .nlink = (uint32_t)nlink,
        };
        return 0;
}
