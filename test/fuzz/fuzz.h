/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the fuzz targets share: a promise the code under test makes, checked on every input.
 * A broken one aborts, so libFuzzer keeps the input that broke it.
 */
#ifndef DEVMEM_FUZZ_H
#define DEVMEM_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_MUST(cond, what)                                                              \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s: broken promise: %s\n", __FILE__, (what));                 \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#endif /* DEVMEM_FUZZ_H */
