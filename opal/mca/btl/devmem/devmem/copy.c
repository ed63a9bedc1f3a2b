/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The copier (see copy.h).
 */
#include "build_config.h"

#include "copy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void devmem_copier_init(struct devmem_copier *c)
{
    memset(c, 0, sizeof(*c));
    c->ordinal = -1;
}

void devmem_copier_fini(struct devmem_copier *c)
{
    free(c->d2d);
    free(c->other);
    devmem_copier_init(c);
}

static int push(struct devmem_copy **v, size_t *n, size_t *cap, void *dst, const void *src,
                size_t len, struct devmem_err *err)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        struct devmem_copy *nv = realloc(*v, ncap * sizeof(**v));

        if (NULL == nv) {
            return devmem_err_set(err, ENOMEM, "copier: no memory for %zu pieces", ncap);
        }
        *v = nv;
        *cap = ncap;
    }
    (*v)[*n].dst = dst;
    (*v)[*n].src = src;
    (*v)[*n].len = len;
    (*n)++;
    return 0;
}

int devmem_copier_add(struct devmem_copier *c, void *dst, int dst_dev, const void *src,
                      int src_dev, size_t len, int ordinal, struct devmem_err *err)
{
    int rc;

    if (0 == len) {
        return 0;
    }
    if (!dst_dev && !src_dev) {
        memcpy(dst, src, len);
        c->stats.host_bytes += len;
        return 0;
    }
    if (c->ordinal >= 0 && c->ordinal != ordinal && 0 != (rc = devmem_copier_flush(c, err))) {
        return rc;
    }
    c->ordinal = ordinal;
    if (dst_dev && src_dev) {
        return push(&c->d2d, &c->n_d2d, &c->cap_d2d, dst, src, len, err);
    }
    return push(&c->other, &c->n_other, &c->cap_other, dst, src, len, err);
}

int devmem_copier_flush(struct devmem_copier *c, struct devmem_err *err)
{
    int rc = 0;
    size_t n = c->n_d2d + c->n_other;

    if (0 == n) {
        return 0;
    }
    if (c->n_d2d > 0) {
        rc = devmem_cuda_copy_batch(c->ordinal, c->d2d, c->n_d2d, 1, err);
        c->stats.kernels += c->n_d2d > 1;
    }
    if (0 == rc && c->n_other > 0) {
        rc = devmem_cuda_copy_batch(c->ordinal, c->other, c->n_other, 0, err);
    }
    if (0 == rc) {
        for (size_t i = 0; i < c->n_d2d; i++) {
            c->stats.device_bytes += c->d2d[i].len;
        }
        for (size_t i = 0; i < c->n_other; i++) {
            c->stats.device_bytes += c->other[i].len;
        }
        c->stats.pieces += n;
        c->stats.flushes++;
    }
    c->n_d2d = c->n_other = 0;
    c->ordinal = -1;
    return rc;
}
