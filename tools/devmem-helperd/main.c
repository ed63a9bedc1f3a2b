/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-helperd: options, the listening socket, the event loop, and --status.
 * See devmem-helperd(8) and helperd.h for the parts.
 */
#include "config.h"

#include "helperd.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "helper_client.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif
#define HD_CONFIG_DEFAULT SYSCONFDIR "/devmem-helperd.conf"
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14 */
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: devmem-helperd [options]\n"
            "Binds NIC queues to dmabufs and steers device flows for ranks without "
            "CAP_NET_ADMIN.\n\n"
            "  --socket PATH      listen here (default %s)\n"
            "  --config FILE      policy file (default %s; a missing default file means\n"
            "                     built-in defaults, under which no interface may be bound)\n"
            "  --kernel KIND      real (default): netlink and ethtool; emulated: bookkeeping\n"
            "                     only, for ranks running btl_devmem_kernel=emulated (tests)\n"
            "  --foreground       stay in the foreground and log to stderr\n"
            "  --verbose          log every connection too\n"
            "  --status           ask the helper at --socket what it holds, print it, exit\n"
            "  --check-config     read the policy file, print what it allows, exit\n"
            "  --version, --help\n",
            DEVMEM_HELPER_SOCKET_DEFAULT, HD_CONFIG_DEFAULT);
}

static int print_status(const char *path)
{
    struct devmem_helper_client *c = NULL;
    static char text[DEVMEM_HELPER_BODY_MAX];
    struct devmem_err e;

    if (0 != devmem_helper_connect(&c, path, 5000, &e) || 0 != devmem_helper_status(c, text,
                                                                                    sizeof(text),
                                                                                    &e)) {
        fprintf(stderr, "devmem-helperd: %s\n", e.msg);
        devmem_helper_close(c);
        return 1;
    }
    fputs(text, stdout);
    devmem_helper_close(c);
    return 0;
}

/* Bind the listening socket at path: refuse to take over a live helper's socket, remove a
 * stale one, and never remove anything that is not a socket. */
static int open_socket(const char *path, const struct hd_policy *p)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    char dir[sizeof(sa.sun_path)];
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        hd_log(LOG_ERR, "socket path too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    strcpy(dir, path);
    if (0 == strcmp(path, DEVMEM_HELPER_SOCKET_DEFAULT) && 0 != mkdir(dirname(dir), 0755)
        && EEXIST != errno) {
        hd_log(LOG_ERR, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (0 == lstat(path, &st)) {
        struct devmem_helper_client *c = NULL;
        struct devmem_err e = {0, ""};

        if (!S_ISSOCK(st.st_mode)) {
            hd_log(LOG_ERR, "%s exists and is not a socket: not touching it", path);
            return -1;
        }
        if (0 == devmem_helper_connect(&c, path, 2000, &e) || ECONNREFUSED != e.code) {
            /* answered, or refused us (full, policy): someone is there */
            devmem_helper_close(c);
            hd_log(LOG_ERR, "a helper already listens at %s (%s)", path,
                   0 == e.code ? "it answers" : e.msg);
            return -1;
        }
        unlink(path); /* stale: nobody listens */
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || 0 != bind(fd, (struct sockaddr *) &sa, sizeof(sa))) {
        hd_log(LOG_ERR, "cannot listen at %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    /* only root, or root and the socket group; allow-group is checked again per client */
    if (0 != chmod(path, p->has_socket_group ? 0660 : 0600)
        || (p->has_socket_group && 0 != chown(path, (uid_t) -1, p->socket_gid))
        || 0 != listen(fd, 128)) {
        hd_log(LOG_ERR, "cannot set up %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

/* Accept what is waiting. Out of descriptors, stop listening for a moment rather than spin
 * on a socket that stays readable; say so at most once a minute. */
static long accept_paused_until;

static void accept_all(struct helperd *hd, int lfd)
{
    static long last_complaint = -60000;

    for (int i = 0; i < 64; i++) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (cfd >= 0) {
            hd_client_accept(hd, cfd);
            continue;
        }
        if (EINTR == errno) {
            continue;
        }
        if (EMFILE == errno || ENFILE == errno || ENOBUFS == errno || ENOMEM == errno) {
            long now = hd_now_ms();
            accept_paused_until = now + 100;
            if (now - last_complaint >= 60000) {
                last_complaint = now;
                hd_log(LOG_ERR, "accept: %s (serving %u connections): new ones wait",
                       strerror(errno), hd->nclients);
            }
        } else if (EAGAIN != errno && EWOULDBLOCK != errno) {
            hd_log(LOG_ERR, "accept: %s", strerror(errno));
        }
        return;
    }
}

/* What each user may still have answered in this wakeup, over all its connections: a user
 * with many connections gets no more of the loop than one with a single connection. turns
 * has a slot for every client. */
struct turn {
    uid_t uid;
    int left;
};

static int *turn_of(struct turn *turns, size_t *n, uid_t uid)
{
    for (size_t i = 0; i < *n; i++) {
        if (turns[i].uid == uid) {
            return &turns[i].left;
        }
    }
    turns[*n] = (struct turn){uid, HD_MSGS_PER_USER};
    return &turns[(*n)++].left;
}

/* One poll slot: a client connection, or the held listening socket of a binding. */
struct slot {
    struct hd_client *client;
    struct hd_binding *binding;
};

static int serve(struct helperd *hd, int lfd, int sfd, int wfd)
{
    struct pollfd *pfd = NULL;
    struct slot *who = NULL;
    struct turn *turns = NULL;
    size_t cap = 0, nturns, first = 0;
    long last_recheck = 0, room_complaint = -60000;
    int rc = 0;

    for (;;) {
        struct hd_closer_counts closing;
        bool room;
        size_t n = 3, want = 3 + hd->nclients;
        int r;

        for (struct hd_client *c = hd->clients; NULL != c; c = c->next) {
            for (struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
                want += b->listen_fd >= 0;
            }
        }
        if (cap < want) {
            cap = want + 64;
            pfd = realloc(pfd, cap * sizeof(*pfd));
            who = realloc(who, cap * sizeof(*who));
            turns = realloc(turns, cap * sizeof(*turns));
            if (NULL == pfd || NULL == who || NULL == turns) {
                hd_log(LOG_ERR, "out of memory");
                rc = 1;
                break;
            }
        }
        room = hd_fds_room(hd);
        if (!room && hd_now_ms() - room_complaint >= 60000) {
            room_complaint = hd_now_ms();
            hd_log(LOG_WARNING, "near RLIMIT_NOFILE with descriptors being closed: no client "
                   "is accepted or read until they are");
        }
        pfd[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        /* a negative fd is skipped by poll: accepting is paused */
        pfd[1] = (struct pollfd){.fd = !room || hd_now_ms() < accept_paused_until ? -1 : lfd,
                                 .events = POLLIN};
        pfd[2] = (struct pollfd){.fd = wfd, .events = POLLIN}; /* a user may be read again */
        /* held sockets first: releasing a binding frees nothing a later slot points to,
         * while dropping a client frees its bindings */
        for (struct hd_client *c = hd->clients; NULL != c; c = c->next) {
            for (struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
                if (b->listen_fd >= 0) {
                    who[n] = (struct slot){NULL, b};
                    /* no events asked: poll still reports POLLHUP when the client shuts the
                     * socket down, and POLLIN would only mean connections to accept */
                    pfd[n++] = (struct pollfd){.fd = b->listen_fd, .events = 0};
                }
            }
        }
        /* the connections from a place that moves on by one each turn: a user's share of a
         * turn goes to the first of its connections with something to read, and no
         * connection of a user with many waits behind the others for more than a round */
        first = 0 != hd->nclients ? (first + 1) % hd->nclients : 0;
        for (int pass = 0; pass < 2; pass++) {
            size_t k = 0;
            for (struct hd_client *c = hd->clients; NULL != c; c = c->next, k++) {
                if ((0 == pass) != (k >= first)) {
                    continue;
                }
                /* a user whose descriptors are still being closed sends no more for now, nor
                 * does anyone while descriptors are short; a hang-up is noticed all the same */
                bool readable = room && !hd_closer_backlogged(c->uid);

                who[n] = (struct slot){c, NULL};
                pfd[n++] = (struct pollfd){.fd = c->fd, .events = readable ? POLLIN : 0};
            }
        }
        hd_closer_counts(&closing);
        r = poll(pfd, n, hd_now_ms() < accept_paused_until || 0 != closing.threads ? 100 : 1000);
        if (r < 0 && EINTR != errno) {
            hd_log(LOG_ERR, "poll: %s", strerror(errno));
            rc = 1;
            break;
        }
        if (r > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (sizeof(si) == read(sfd, &si, sizeof(si))) {
                hd_log(LOG_NOTICE, "signal %u: undoing every binding and stopping", si.ssi_signo);
                break;
            }
        }
        if (r > 0 && (pfd[2].revents & POLLIN)) {
            uint64_t drained;
            (void) !read(wfd, &drained, sizeof(drained));
        }
        nturns = 0;
        for (size_t i = 3; r > 0 && i < n; i++) {
            if (0 == pfd[i].revents) {
                continue;
            }
            if (NULL != who[i].binding) {
                hd_binding_lost(hd, who[i].binding, "its socket was shut down or closed");
            } else if (!(pfd[i].events & POLLIN)) {
                /* gone while not read: what it still had queued goes with it, unread */
                hd_client_drop(hd, who[i].client, "closed by the client");
            } else if (0 != hd_client_readable(hd, who[i].client,
                                               turn_of(turns, &nturns, who[i].client->uid))) {
                hd_client_drop(hd, who[i].client, who[i].client->closing
                                                      ? "refused" : "closed by the client");
            }
        }
        if (r > 0 && (pfd[1].revents & POLLIN)) {
            accept_all(hd, lfd);
        }
        hd_clients_expire(hd, hd_now_ms());
        hd_closer_tick();
        if (hd_now_ms() - last_recheck >= 1000) {
            last_recheck = hd_now_ms();
            hd_bindings_recheck(hd);
            hd_ifaces_restore(hd, false);
        }
    }
    while (NULL != hd->clients) {
        hd_client_drop(hd, hd->clients, "helper stopping");
    }
    hd_ifaces_restore(hd, true);
    hd_closer_drain(2000);
    free(pfd);
    free(who);
    free(turns);
    return rc;
}

/* Room for max-clients connections with their descriptors: raise the soft limit to the hard
 * one, and say when even that is short. */
static void raise_fd_limit(const struct hd_policy *p)
{
    struct rlimit rl;
    /* per connection: its socket and the two descriptors of the message being read (more
     * are refused and closed); and a held listening socket per binding */
    rlim_t need = (rlim_t) p->max_clients * (3 + p->max_bindings) + 64;

    if (0 != getrlimit(RLIMIT_NOFILE, &rl)) {
        return;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < need) {
        hd_log(LOG_WARNING, "RLIMIT_NOFILE %llu is short of the %llu descriptors max-clients %u "
               "may need: connections beyond it wait", (unsigned long long) rl.rlim_cur,
               (unsigned long long) need, p->max_clients);
    }
}

/* The network namespace the helper serves, as the kernel names it. */
static int netns_cookie(int fd, uint64_t *cookie)
{
    socklen_t len = sizeof(*cookie);

    if (0 != getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len)) {
        hd_log(LOG_ERR, "SO_NETNS_COOKIE: %s (Linux 5.14+ is needed to tell which network "
               "namespace a passed socket belongs to)", strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'}, {"config", required_argument, NULL, 'c'},
        {"kernel", required_argument, NULL, 'k'}, {"foreground", no_argument, NULL, 'f'},
        {"status", no_argument, NULL, 'S'},       {"check-config", no_argument, NULL, 'C'},
        {"verbose", no_argument, NULL, 'v'},      {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    static struct helperd hd;
    const char *path = DEVMEM_HELPER_SOCKET_DEFAULT, *config = NULL, *kernel = "real";
    bool foreground = false, status = false, check = false, verbose = false;
    struct devmem_err e;
    sigset_t mask;
    int o, lfd, sfd, wfd, rc;

    while (-1 != (o = getopt_long(argc, argv, "", opts, NULL))) {
        switch (o) {
        case 's': path = optarg; break;
        case 'c': config = optarg; break;
        case 'k': kernel = optarg; break;
        case 'f': foreground = true; break;
        case 'S': status = true; break;
        case 'C': check = true; break;
        case 'v': verbose = true; break;
        case 'V': printf("devmem-helperd %s\n", PACKAGE_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    hd_log_setup(true, verbose);
    if (status) {
        return print_status(path);
    }
    if (0 == strcmp(kernel, "real")) {
        hd.be = &hd_backend_real;
    } else if (0 == strcmp(kernel, "emulated")) {
        hd.be = &hd_backend_emulated;
    } else {
        fprintf(stderr, "devmem-helperd: --kernel %s: real or emulated\n", kernel);
        return 2;
    }
    if (NULL == config && 0 == access(HD_CONFIG_DEFAULT, F_OK)) {
        config = HD_CONFIG_DEFAULT;
    }
    if (0 != hd_policy_load(&hd.policy, config, &e)) {
        fprintf(stderr, "devmem-helperd: %s\n", e.msg);
        return 1;
    }
    if (check) {
        static char text[DEVMEM_HELPER_BODY_MAX];
        struct hd_client root = {.uid = 0};
        hd_status_text(&hd, &root, text, sizeof(text));
        fputs(strstr(text, "policy for uid"), stdout); /* without the empty state */
        return 0;
    }
    if (0 != geteuid()) {
        hd_log(LOG_WARNING, "not running as root: %s", &hd_backend_real == hd.be
               ? "bindings and steering will fail without CAP_NET_ADMIN"
               : "only this user's ranks can connect unless socket-group is set");
    }
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    wfd = hd_closer_init();
    {
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, NULL); /* only a closing thread takes it */
    }
    if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
        hd_log(LOG_ERR, "signalfd: %s", strerror(errno));
        return 1;
    }
    if ((lfd = open_socket(path, &hd.policy)) < 0) {
        return 1;
    }
    if (0 != netns_cookie(lfd, &hd.netns_cookie)) {
        close(lfd);
        unlink(path);
        return 1;
    }
    raise_fd_limit(&hd.policy);
    if (!foreground) {
        if (0 != daemon(0, 0)) {
            hd_log(LOG_ERR, "daemon: %s", strerror(errno));
            return 1;
        }
    }
    hd_log_setup(foreground, verbose);
    hd_log(LOG_NOTICE, "listening at %s (kernel %s, policy %s, %zu interface(s))", path,
           hd.be->name, '\0' != hd.policy.path[0] ? hd.policy.path : "built-in defaults",
           hd.policy.nifaces);
    hd_ifaces_check(&hd);
    rc = serve(&hd, lfd, sfd, wfd);
    close(lfd);
    unlink(path);
    hd_log(LOG_NOTICE, "stopped: served %llu, refused %llu", (unsigned long long) hd.served,
           (unsigned long long) hd.refused);
    return rc;
}
