/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One error report for the whole kernel layer: an errno-style code and the words that go
 * with it (the kernel's extack text, a provider's reason for being unavailable, ...).
 * Callers pass a struct devmem_err * that may be NULL when they do not want the words.
 */
#ifndef DEVMEM_ERR_H
#define DEVMEM_ERR_H

#include <stddef.h>

#define DEVMEM_ERR_MSG_MAX 256

struct devmem_err {
    int code;                       /* positive errno, 0 when no error */
    char msg[DEVMEM_ERR_MSG_MAX];   /* human-readable, never ends in a newline */
};

/* Record code and a printf-style message; returns -code so callers can `return devmem_err_set(...)`. */
int devmem_err_set(struct devmem_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Forget a previous error. */
void devmem_err_clear(struct devmem_err *err);

#endif /* DEVMEM_ERR_H */
