/* SPDX-License-Identifier: BSD-3-Clause */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int devmem_err_set(struct devmem_err *err, int code, const char *fmt, ...)
{
    if (NULL != err) {
        va_list ap;
        size_t len;

        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        len = strlen(err->msg);
        while (len > 0 && '\n' == err->msg[len - 1]) {
            err->msg[--len] = '\0';
        }
    }
    return -code;
}

void devmem_err_clear(struct devmem_err *err)
{
    if (NULL != err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}
