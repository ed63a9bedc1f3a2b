/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The unit tests' one assertion: print "ok" or "FAIL" and the description for every check,
 * count the failures, and turn the count into the exit status (0 pass, 1 fail).
 */
#ifndef DEVMEM_TEST_CHECK_H
#define DEVMEM_TEST_CHECK_H

#include <stdio.h>

static int failures;

/* cond is evaluated once: some conditions parse or consume, and must not run twice */
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        int check_ok_ = (cond);                                                            \
        printf("%s ", check_ok_ ? "ok  " : "FAIL");                                        \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
        if (!check_ok_) {                                                                  \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* The summary line and the exit status for main() to return. */
static inline int check_finish(void)
{
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}

#endif /* DEVMEM_TEST_CHECK_H */
