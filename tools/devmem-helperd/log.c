/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper's log, to stderr (--foreground) or syslog. A line a user's request causes is
 * counted against that user: HD_LOG_BURST at once, then one a second, and the next line that
 * passes says how many were left out. One user's refused requests in a loop cannot flood the
 * journal, whose own rate limit would then hide every other line of the helper.
 */
#include "config.h"

#include "helperd.h"

#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#define HD_LOG_BURST 100  /* lines one user may cause at once (a job of a node: a few each rank) */
#define HD_LOG_PER_S 10   /* then this many a second */
#define HD_LOG_USERS 256  /* users remembered; past that the quietest is forgotten */

static bool log_to_stderr = true;
static bool log_verbose;

void hd_log_setup(bool to_stderr, bool verbose)
{
    log_to_stderr = to_stderr;
    log_verbose = verbose;
    if (!to_stderr) {
        openlog("devmem-helperd", LOG_PID, LOG_DAEMON);
    }
}

static void vlog(int prio, const char *fmt, va_list ap)
{
    if (LOG_DEBUG == prio && !log_verbose) {
        return;
    }
    if (log_to_stderr) {
        fprintf(stderr, "devmem-helperd: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    } else {
        vsyslog(prio, fmt, ap);
    }
}

void hd_log(int prio, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(prio, fmt, ap);
    va_end(ap);
}

/* A token bucket per uid, in thousandths of a line. */
static struct {
    uid_t uid;
    bool used;
    long tokens, at_ms;
    unsigned long dropped;
} users[HD_LOG_USERS];

void hd_log_user(uid_t uid, int prio, const char *fmt, ...)
{
    long now = hd_now_ms();
    size_t i, slot = 0;
    va_list ap;

    if (LOG_DEBUG == prio && !log_verbose) {
        return;
    }
    for (i = 0; i < HD_LOG_USERS && !(users[i].used && users[i].uid == uid); i++) {
        /* the slot to reuse: a free one, else the one that logged longest ago */
        if (!users[i].used || (users[slot].used && users[i].at_ms < users[slot].at_ms)) {
            slot = i;
        }
    }
    if (HD_LOG_USERS == i) {
        i = slot;
        users[i].used = true;
        users[i].uid = uid;
        users[i].tokens = HD_LOG_BURST * 1000L;
        users[i].dropped = 0;
        users[i].at_ms = now;
    }
    users[i].tokens += (now - users[i].at_ms) * HD_LOG_PER_S;
    if (users[i].tokens > HD_LOG_BURST * 1000L) {
        users[i].tokens = HD_LOG_BURST * 1000L;
    }
    users[i].at_ms = now;
    if (users[i].tokens < 1000) {
        users[i].dropped++;
        return;
    }
    users[i].tokens -= 1000;
    if (0 != users[i].dropped) {
        hd_log(LOG_NOTICE, "uid %u: %lu line(s) left out of the log (more than %d at once, "
               "then %d a second)", (unsigned) uid, users[i].dropped, HD_LOG_BURST,
               HD_LOG_PER_S);
        users[i].dropped = 0;
    }
    va_start(ap, fmt);
    vlog(prio, fmt, ap);
    va_end(ap);
}
