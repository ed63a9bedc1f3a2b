/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Our help texts (help-mpi-btl-devmem.txt), rendered and printed on this process's stderr.
 *
 * Inside an Open MPI tree the file is Open MPI's to find (in its data directory up to 5.0,
 * compiled into the library from 6.0 on). Built outside, the component reads its installed
 * copy itself: Open MPI 6.0 no longer reads help files at run time, so the directory 4.1 and
 * 5.0 were told of (opal_show_help_add_dir) is never searched there, and every message of
 * ours came out as "Sorry! ... I couldn't find that help topic".
 */
#include "opal_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/btl_devmem_ompi_compat.h"

#define HELP_FILE "help-mpi-btl-devmem.txt"

#ifdef DEVMEM_HELP_DIR
/* Open MPI's frame around a help message */
#define HELP_RULE "--------------------------------------------------------------------------\n"

/* The text of [topic] in our installed help file, framed, as a format (malloc'd); NULL
 * where the file or the topic is missing. As Open MPI reads such files: '#' lines are
 * comments, a topic runs to the next line that starts with '['. */
static char *topic_format(const char *topic)
{
    char line[1024], *fmt = NULL;
    size_t len = 0, tlen = strlen(topic);
    FILE *f = fopen(DEVMEM_HELP_DIR "/" HELP_FILE, "r");
    FILE *out;
    int in = 0, found = 0;

    if (NULL == f) {
        return NULL;
    }
    if (NULL == (out = open_memstream(&fmt, &len))) {
        fclose(f);
        return NULL;
    }
    fputs(HELP_RULE, out);
    while (NULL != fgets(line, sizeof(line), f)) {
        if ('[' == line[0]) {
            in = 0 == strncmp(line + 1, topic, tlen) && 0 == strcmp(line + 1 + tlen, "]\n");
            found |= in;
            continue;
        }
        if (in && '#' != line[0]) {
            fputs(line, out);
        }
    }
    fputs(HELP_RULE, out);
    fclose(f);
    if (0 != fclose(out) || !found) {
        free(fmt);
        return NULL;
    }
    return fmt;
}
#endif

void mca_btl_devmem_show_help_local(const char *topic, ...)
{
    char *text = NULL;
    va_list ap;

#ifdef DEVMEM_HELP_DIR
    char *fmt = topic_format(topic);

    if (NULL != fmt) {
        va_start(ap, topic);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* our own help file, as Open MPI's are */
        if (vasprintf(&text, fmt, ap) < 0) {
            text = NULL;
        }
#pragma GCC diagnostic pop
        va_end(ap);
        free(fmt);
    }
#endif
    if (NULL == text) {
        va_start(ap, topic);
        text = opal_show_help_vstring(HELP_FILE, topic, true, ap);
        va_end(ap);
    }
    opal_output(0, "%s", NULL != text ? text : topic);
    free(text);
}
