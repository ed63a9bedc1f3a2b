/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A FUSE file system whose server never answers a flush: the one wait of a close that no
 * signal ends (the kernel waits for a forced request without interruption). Run as root by
 * test/helper/test_helperd.sh: it mounts itself at MOUNTPOINT with one file, "f" (mode 0666,
 * allow_other), prints "mounted", and serves until SIGTERM; then it closes /dev/fuse, which
 * aborts the connection and ends every waiting close, and unmounts.
 *
 * usage: fuse_stall MOUNTPOINT
 * Speaks the kernel's FUSE protocol directly (linux/fuse.h): INIT, LOOKUP, GETATTR, OPEN and
 * RELEASE are answered, FLUSH and INTERRUPT never, anything else with ENOSYS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define FILE_INO 2

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void) sig;
    stop = 1;
}

static void reply(int dev, uint64_t unique, int error, const void *body, size_t len)
{
    struct fuse_out_header h = {(uint32_t) (sizeof(h) + (error ? 0 : len)), -error, unique};
    struct iovec iov[2] = {{&h, sizeof(h)}, {(void *) body, error ? 0 : len}};

    if (writev(dev, iov, 2) < 0 && ENOENT != errno) { /* ENOENT: the request was interrupted */
        perror("fuse_stall: reply");
    }
}

static void attr_of(uint64_t ino, struct fuse_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->ino = ino;
    a->mode = FILE_INO == ino ? S_IFREG | 0666 : S_IFDIR | 0755;
    a->nlink = FILE_INO == ino ? 1 : 2;
    a->blksize = 4096;
}

static void serve_one(int dev, const struct fuse_in_header *in, const void *arg)
{
    switch (in->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *init = arg;
        struct fuse_init_out out;

        memset(&out, 0, sizeof(out));
        out.major = FUSE_KERNEL_VERSION;
        out.minor = init->minor < FUSE_KERNEL_MINOR_VERSION ? init->minor
                                                            : FUSE_KERNEL_MINOR_VERSION;
        out.max_readahead = init->max_readahead;
        out.max_write = 4096;
        reply(dev, in->unique, 0, &out, sizeof(out));
        break;
    }
    case FUSE_LOOKUP: {
        struct fuse_entry_out out;

        if (FUSE_ROOT_ID != in->nodeid || 0 != strcmp(arg, "f")) {
            reply(dev, in->unique, ENOENT, NULL, 0);
            break;
        }
        memset(&out, 0, sizeof(out));
        out.nodeid = FILE_INO;
        out.entry_valid = out.attr_valid = 3600;
        attr_of(FILE_INO, &out.attr);
        reply(dev, in->unique, 0, &out, sizeof(out));
        break;
    }
    case FUSE_GETATTR: {
        struct fuse_attr_out out;

        memset(&out, 0, sizeof(out));
        out.attr_valid = 3600;
        attr_of(in->nodeid, &out.attr);
        reply(dev, in->unique, 0, &out, sizeof(out));
        break;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
        struct fuse_open_out out;

        memset(&out, 0, sizeof(out));
        out.fh = 1;
        reply(dev, in->unique, 0, &out, sizeof(out));
        break;
    }
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
        reply(dev, in->unique, 0, NULL, 0);
        break;
    case FUSE_FLUSH:
    case FUSE_INTERRUPT:
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
        break; /* never answered (a forget never is) */
    default:
        reply(dev, in->unique, ENOSYS, NULL, 0);
    }
}

int main(int argc, char **argv)
{
    static char buf[FUSE_MIN_READ_BUFFER + 65536];
    struct sigaction sa = {.sa_handler = on_term};
    char opts[128];
    int dev;

    if (2 != argc) {
        fprintf(stderr, "usage: fuse_stall MOUNTPOINT\n");
        return 2;
    }
    if ((dev = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
        printf("no /dev/fuse: %s\n", strerror(errno));
        return 77;
    }
    snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev);
    if (0 != mount("fuse_stall", argv[1], "fuse.fuse_stall", MS_NOSUID | MS_NODEV, opts)) {
        printf("cannot mount a FUSE file system: %s\n", strerror(errno));
        return 77;
    }
    sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: the read below returns */
    sigaction(SIGINT, &sa, NULL);
    printf("mounted\n");
    fflush(stdout);
    while (!stop) {
        ssize_t n = read(dev, buf, sizeof(buf));

        if (n < 0 && (EINTR == errno || ENOENT == errno)) {
            continue;
        }
        if (n < (ssize_t) sizeof(struct fuse_in_header)) {
            break;
        }
        serve_one(dev, (const struct fuse_in_header *) buf, buf + sizeof(struct fuse_in_header));
    }
    close(dev); /* aborts the connection: every flush still waiting ends */
    umount2(argv[1], MNT_DETACH);
    return 0;
}
