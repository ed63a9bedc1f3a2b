/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing what users passed, off the event loop. Closing a user's object runs that object's
 * flush and, at the last reference, its release, and both can wait as long as the user
 * likes: a TCP socket with SO_LINGER waits for its send queue to drain, a FUSE file for its
 * server, a client connection for every descriptor still queued in it. So every descriptor
 * a user passed, and every connection of a user, is closed here: queued for that user's own
 * closing threads (at most HD_CLOSERS_PER_USER), never dropped and never left open. A close
 * that lasts is interrupted every HD_CLOSE_NUDGE_MS (SIGUSR1, no SA_RESTART), which ends every
 * wait a signal can end. A user whose closes still pile up (a wait no signal ends: a FUSE
 * server that never answers) has its connections left unread until they drain: it stalls
 * itself, never the event loop nor another user.
 */
#include "config.h"

#include "helperd.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#define HD_CLOSERS_PER_USER 4  /* closing threads one user's descriptors may occupy */
#define HD_CLOSE_NUDGE_MS 100  /* a close running this long is interrupted, and again after */
#define HD_CLOSE_BACKLOG 64    /* queued closes at which a user's messages wait */
#define HD_CLOSE_RESUME 16     /* and down to which they wait: a slow drain does not flap */

struct closer_user {
    uid_t uid;
    int *fds; /* a ring of queued descriptors */
    size_t head, n, cap;
    unsigned int threads, busy; /* busy: threads in a close */
    long held_ms;               /* since when: from HD_CLOSE_BACKLOG queued down to
                                 * HD_CLOSE_RESUME; 0 when not held */
    struct closer_user *next;
};

struct closer_thread {
    pthread_t t;
    uid_t uid;
    long since_ms, nudged_ms; /* since: 0 while between two closes */
    struct closer_thread *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int wakeup_fd = -1; /* the loop's: a user's closes drained below the backlog */
static struct closer_user *users;
static struct closer_thread *threads;
static unsigned long long closed_total, nudges_total;

static void nudged(int sig)
{
    (void) sig; /* its delivery is the point: the wait it interrupts returns */
}

int hd_closer_init(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = nudged;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART */
    wakeup_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return wakeup_fd;
}

/* uid's record; a new one when create (NULL when out of memory or absent). Under lock. */
static struct closer_user *user_of(uid_t uid, bool create)
{
    struct closer_user *u;

    for (u = users; NULL != u; u = u->next) {
        if (u->uid == uid) {
            return u;
        }
    }
    if (!create || NULL == (u = calloc(1, sizeof(*u)))) {
        return NULL;
    }
    u->uid = uid;
    u->next = users;
    users = u;
    return u;
}

/* A record with nothing queued and no thread goes, so that the table stays as small as the
 * set of users with closes in flight. Under lock. */
static void user_tidy(struct closer_user *u)
{
    if (0 != u->n || 0 != u->threads) {
        return;
    }
    for (struct closer_user **pu = &users; NULL != *pu; pu = &(*pu)->next) {
        if (*pu == u) {
            *pu = u->next;
            break;
        }
    }
    free(u->fds);
    free(u);
}

static void *closer_main(void *arg)
{
    struct closer_thread *me = arg;
    sigset_t usr1;

    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
    pthread_mutex_lock(&lock);
    for (;;) {
        struct closer_user *u = user_of(me->uid, false);
        int fd;

        if (NULL == u || 0 == u->n) {
            break;
        }
        fd = u->fds[u->head];
        u->head = (u->head + 1) % u->cap;
        if (--u->n <= HD_CLOSE_RESUME && 0 != u->held_ms) {
            uint64_t one = 1; /* this user may be read again: the loop may be asleep */
            u->held_ms = 0;
            if (wakeup_fd >= 0) {
                (void) !write(wakeup_fd, &one, sizeof(one));
            }
        }
        u->busy++;
        me->since_ms = me->nudged_ms = hd_now_ms();
        pthread_mutex_unlock(&lock);
        close(fd); /* the descriptor is gone whatever close says */
        pthread_mutex_lock(&lock);
        me->since_ms = 0;
        closed_total++;
        if (NULL != (u = user_of(me->uid, false))) {
            u->busy--;
        }
    }
    /* off the list under the lock: a thread the watchdog can see is still running */
    for (struct closer_thread **pt = &threads; NULL != *pt; pt = &(*pt)->next) {
        if (*pt == me) {
            *pt = me->next;
            break;
        }
    }
    {
        struct closer_user *u = user_of(me->uid, false);
        if (NULL != u) {
            u->threads--;
            user_tidy(u);
        }
    }
    pthread_mutex_unlock(&lock);
    free(me);
    return NULL;
}

/* One more closing thread for u, when it may have one. Under lock. */
static void thread_start(struct closer_user *u)
{
    struct closer_thread *t;
    pthread_attr_t attr;
    sigset_t all, old;
    int rc;

    /* one more while queued closes outnumber the threads not in a close: a close that
     * does not end holds up no other one of the user's, up to its share of threads */
    if (u->threads >= HD_CLOSERS_PER_USER || u->threads - u->busy >= u->n
        || NULL == (t = calloc(1, sizeof(*t)))) {
        return;
    }
    t->uid = u->uid;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    /* born with every signal blocked; it unblocks SIGUSR1 alone */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t->t, &attr, closer_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (0 != rc) {
        free(t); /* the queue waits for this user's running thread, or the next close */
        hd_log(LOG_ERR, "uid %u: no thread to close passed descriptors (%s): they wait",
               (unsigned) u->uid, strerror(rc));
        return;
    }
    t->next = threads;
    threads = t;
    u->threads++;
}

void hd_close_passed(uid_t uid, int fd)
{
    struct closer_user *u;

    if (fd < 0) {
        return;
    }
    pthread_mutex_lock(&lock);
    u = user_of(uid, true);
    if (NULL != u && u->n == u->cap) {
        size_t cap = 0 != u->cap ? 2 * u->cap : 16;
        int *fds = malloc(cap * sizeof(*fds));

        if (NULL != fds) {
            for (size_t i = 0; i < u->n; i++) {
                fds[i] = u->fds[(u->head + i) % u->cap];
            }
            free(u->fds);
            u->fds = fds;
            u->cap = cap;
            u->head = 0;
        }
    }
    if (NULL == u || u->n == u->cap) {
        pthread_mutex_unlock(&lock);
        /* out of memory: better a stall here than a descriptor that stays open */
        hd_log(LOG_ERR, "uid %u: out of memory queueing a close: closed in the event loop",
               (unsigned) uid);
        close(fd);
        return;
    }
    u->fds[(u->head + u->n) % u->cap] = fd;
    if (++u->n >= HD_CLOSE_BACKLOG && 0 == u->held_ms) {
        u->held_ms = hd_now_ms();
    }
    thread_start(u);
    pthread_mutex_unlock(&lock);
}

void hd_closer_tick(void)
{
    long now = hd_now_ms();

    pthread_mutex_lock(&lock);
    for (struct closer_thread *t = threads; NULL != t; t = t->next) {
        if (0 != t->since_ms && now - t->nudged_ms >= HD_CLOSE_NUDGE_MS) {
            t->nudged_ms = now;
            nudges_total++;
            pthread_kill(t->t, SIGUSR1);
        }
    }
    /* a thread that failed to start earlier: try again */
    for (struct closer_user *u = users; NULL != u; u = u->next) {
        thread_start(u);
    }
    pthread_mutex_unlock(&lock);
}

long hd_closer_held_ms(uid_t uid)
{
    struct closer_user *u;
    long since;

    pthread_mutex_lock(&lock);
    u = user_of(uid, false);
    since = NULL != u ? u->held_ms : 0;
    pthread_mutex_unlock(&lock);
    return 0 != since ? hd_now_ms() - since + 1 : 0;
}

bool hd_closer_backlogged(uid_t uid)
{
    return 0 != hd_closer_held_ms(uid);
}

void hd_closer_counts(struct hd_closer_counts *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&lock);
    for (const struct closer_user *u = users; NULL != u; u = u->next) {
        out->queued += u->n;
        out->threads += u->threads;
        out->users += 0 != u->held_ms;
    }
    for (const struct closer_thread *t = threads; NULL != t; t = t->next) {
        out->closing += 0 != t->since_ms;
    }
    out->closed = closed_total;
    out->nudges = nudges_total;
    pthread_mutex_unlock(&lock);
}

void hd_closer_drain(long wait_ms)
{
    long until = hd_now_ms() + wait_ms;

    for (;;) {
        struct hd_closer_counts c;

        hd_closer_counts(&c);
        if (0 == c.queued && 0 == c.threads) {
            return;
        }
        if (hd_now_ms() >= until) {
            hd_log(LOG_WARNING, "stopping with %zu passed descriptor(s) still closing", c.queued
                   + c.closing);
            return;
        }
        hd_closer_tick();
        usleep(1000);
    }
}
