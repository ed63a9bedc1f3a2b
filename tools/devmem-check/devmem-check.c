/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-check: whether btl_devmem's device path works between two hosts, and if not, the
 * first thing that keeps it off and what to do about it.
 *
 *   mpirun -np 2 --host A,B devmem-check [--report FILE] [--quick]     (or srun -N 2 -n 2)
 *
 * 1. Each rank runs devmem-probe (before MPI_Init, so that its bind checks meet queues the
 *    component has not bound yet) and keeps what it says of the interfaces the component
 *    uses, read after MPI_Init from btl_devmem_device_paths.
 * 2. The device path must be on in both ranks (btl_devmem_mode require, judged here rather
 *    than by MPI_Init, so that a refusal becomes a verdict instead of an abort).
 * 3. Validated transfers both ways, host to host and, where CUDA works, device to device,
 *    device to host and host to device; the device path must have carried the large ones
 *    (bytes landed in the RX pool) and every token must have gone back.
 * 4. The table: this job's latency and bandwidth beside raw TCP between the same ranks.
 *
 * devmem-check --launch CMD runs outside MPI: the check through CMD, then the jobs it cannot
 * be (btl/tcp, other lane and thread counts), side by side (check_compare.c).
 *
 * The last line is "devmem-check: PASS ..." or "devmem-check: FAIL <why>; <what to do>"; the
 * exit status is 0 on PASS only. --report FILE writes all of it, both hosts' facts included.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check.h"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support, where Open MPI has it */
#endif

struct text report;
int my_rank;

void text_printf(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        size_t room = t->cap - t->len;

        va_start(ap, fmt);
        n = vsnprintf(t->s + t->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if ((size_t) n < room) {
            t->len += (size_t) n;
            return;
        }
        char *s = realloc(t->s, t->cap + (size_t) n + 4096);
        if (NULL == s) {
            return;
        }
        t->s = s;
        t->cap += (size_t) n + 4096;
    }
}

void text_free(struct text *t)
{
    free(t->s);
    memset(t, 0, sizeof(*t));
}

void say(const char *fmt, ...)
{
    char *line = NULL;
    va_list ap;
    int n;

    if (0 != my_rank) {
        return;
    }
    va_start(ap, fmt);
    n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    printf("%s\n", line);
    fflush(stdout);
    text_printf(&report, "%s\n", line);
    free(line);
}

/* ---------------------------------------------------------------- facts */

/* devmem-probe beside this program, or on PATH: its whole report. */
static void run_probe(struct text *out)
{
    char self[PATH_MAX], cmd[PATH_MAX + 64], line[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    FILE *p;

    snprintf(cmd, sizeof(cmd), "devmem-probe 2>&1");
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (NULL != slash) {
            *slash = '\0';
            char probe[PATH_MAX + 16];

            snprintf(probe, sizeof(probe), "%s/devmem-probe", self);
            if (0 == access(probe, X_OK)) {
                snprintf(cmd, sizeof(cmd), "'%s' 2>&1", probe);
            }
        }
    }
    if (NULL == (p = popen(cmd, "r"))) {
        text_printf(out, "devmem-probe: cannot run it: %s\n", strerror(errno));
        return;
    }
    while (NULL != fgets(line, sizeof(line), p)) {
        text_printf(out, "%s", line);
    }
    if (0 != pclose(p)) {
        text_printf(out, "(devmem-probe did not finish cleanly: is it installed beside "
                         "devmem-check or on PATH?)\n");
    }
}

/* btl_devmem_device_paths, a line an interface: "NAME on: ..." or "NAME off: why". The line
 * after l, or NULL; whether l says on; the length of its name. */
static const char *next_line(const char *l)
{
    const char *nl = strchr(l, '\n');

    return NULL != nl && '\0' != nl[1] ? nl + 1 : NULL;
}

static size_t name_len(const char *l)
{
    return strcspn(l, " \n");
}

static bool line_on(const char *l)
{
    return 0 == strncmp(l + name_len(l), " on: ", 5);
}

/* Whether paths has a line for interface ifname. */
static int paths_name(const char *paths, const char *ifname)
{
    for (const char *l = paths; NULL != l && '\0' != *l; l = next_line(l)) {
        if (name_len(l) == strlen(ifname) && 0 == strncmp(l, ifname, name_len(l))) {
            return 1;
        }
    }
    return 0;
}

/* The probe's report cut to its header and the interfaces in paths. */
static void probe_for(const struct text *probe, const char *paths, struct text *out)
{
    int keep = 1;

    for (const char *l = probe->s; NULL != l && '\0' != *l;) {
        const char *end = strchr(l, '\n');
        size_t len = NULL != end ? (size_t) (end - l) + 1 : strlen(l);

        /* an interface's section starts "NAME (ifindex N)" after a blank line */
        if (0 != len && ' ' != l[0] && '\n' != l[0] && NULL != strstr(l, " (ifindex ")
            && strstr(l, " (ifindex ") < l + len) {
            char name[IF_NAMESIZE + 1];
            size_t k = (size_t) (strchr(l, ' ') - l);

            snprintf(name, sizeof(name), "%.*s", (int) (k < IF_NAMESIZE ? k : IF_NAMESIZE), l);
            keep = paths_name(paths, name);
        }
        if (keep) {
            text_printf(out, "%.*s", (int) len, l);
        }
        l = NULL != end ? end + 1 : NULL;
    }
}

/* One address of ifname (IPv4 first), for the raw TCP column. */
static int if_address(const char *ifname, char *out, size_t len)
{
    struct ifaddrs *all, *a;
    int found = 0;

    if (0 != getifaddrs(&all)) {
        return -1;
    }
    for (int fam = 0; fam < 2 && !found; fam++) {
        for (a = all; NULL != a && !found; a = a->ifa_next) {
            int want = 0 == fam ? AF_INET : AF_INET6;

            if (NULL == a->ifa_addr || want != a->ifa_addr->sa_family
                || 0 != strcmp(a->ifa_name, ifname)) {
                continue;
            }
            if (AF_INET == want) {
                inet_ntop(AF_INET, &((struct sockaddr_in *) a->ifa_addr)->sin_addr, out,
                          (socklen_t) len);
            } else {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) a->ifa_addr;
                if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) {
                    continue;
                }
                inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t) len);
            }
            found = 1;
        }
    }
    freeifaddrs(all);
    return found ? 0 : -1;
}

/* paths without its loopback interfaces: between two hosts they carry nothing, and a check
 * that judged lo's device path (never on with the real kernel) would fail every pair of nodes. */
static char *between_hosts(const char *paths)
{
    struct ifaddrs *all = NULL;
    struct text out = {0};

    (void) getifaddrs(&all);
    for (const char *l = paths; NULL != l && '\0' != *l; l = next_line(l)) {
        size_t n = name_len(l), len = strcspn(l, "\n");
        bool lo = false;

        for (struct ifaddrs *a = all; NULL != a && !lo; a = a->ifa_next) {
            lo = strlen(a->ifa_name) == n && 0 == strncmp(a->ifa_name, l, n)
                 && 0 != (a->ifa_flags & IFF_LOOPBACK);
        }
        if (!lo) {
            text_printf(&out, "%.*s\n", (int) len, l);
        }
    }
    if (NULL != all) {
        freeifaddrs(all);
    }
    return NULL != out.s ? out.s : strdup("");
}

/* The first interface of paths that is on (or the first at all), into name. */
static void first_if(const char *paths, char *name, size_t len)
{
    const char *pick = paths;

    for (const char *l = paths; NULL != l && '\0' != *l; l = next_line(l)) {
        if (line_on(l)) {
            pick = l;
            break;
        }
    }
    snprintf(name, len, "%.*s", (int) name_len(pick), pick);
}

/* Rank 1's text to rank 0 (malloc'd there; NULL on rank 1). */
static char *from_rank1(const char *mine)
{
    int n = NULL != mine ? (int) strlen(mine) + 1 : 1;
    char *theirs = NULL;

    if (1 == my_rank) {
        MPI_Send(&n, 1, MPI_INT, 0, 90, MPI_COMM_WORLD);
        MPI_Send(NULL != mine ? mine : "", n, MPI_CHAR, 0, 91, MPI_COMM_WORLD);
    } else if (0 == my_rank) {
        MPI_Recv(&n, 1, MPI_INT, 1, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        theirs = calloc(1, (size_t) n + 1);
        MPI_Recv(theirs, n, MPI_CHAR, 1, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return theirs;
}

/* ---------------------------------------------------------------- verdict */

/* What to do about a reason the component or the kernel gave. */
static const char *remedy(const char *why)
{
    static const struct {
        const char *words, *todo;
    } table[] = {
        {"btl_devmem_mode is off", "drop btl_devmem_mode off"},
        {"Operation not supported",
         "this interface's driver, or this kernel, has no devmem TCP (devmem-probe names the "
         "drivers that have it and since which kernel); name the devmem NIC with "
         "btl_devmem_if_include"},
        {"Operation not permitted",
         "binding a NIC queue needs CAP_NET_ADMIN: start devmem-helperd on every node "
         "(contrib/devmem-helperd.service) so that ranks bind through it"},
        {"CAP_NET_ADMIN",
         "start devmem-helperd on every node (contrib/devmem-helperd.service) so that ranks "
         "bind through it"},
        {"devmem-helperd", "look at devmem-helperd's status and log (journalctl -u "
                           "devmem-helperd) and at its policy"},
        {"header split", "turn header split on: ethtool -G IFACE tcp-data-split on hds-thresh 0"},
        {"tcp-data-split", "turn header split on: ethtool -G IFACE tcp-data-split on hds-thresh 0"},
        {"hds-thresh", "ethtool -G IFACE hds-thresh 0"},
        {"ntuple", "turn flow steering on: ethtool -K IFACE ntuple on"},
        {"dmabuf", "no dmabuf exporter works here: install the GPU driver (CUDA 12.x with "
                   "dmabuf support) or load udmabuf (modprobe udmabuf)"},
        {"nearer", "a nearer NIC has the device path: restrict btl_devmem_if_include to it"},
    };

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (NULL != strstr(why, table[i].words)) {
            return table[i].todo;
        }
    }
    return "see devmem-probe's report above and doc/first-run.md";
}

/* When no interface of paths is on: the first one's "NAME: why"; NULL when one is on. */
static const char *first_off(const char *paths, char *out, size_t len)
{
    size_t name, line;

    if (NULL == paths || '\0' == paths[0]) {
        snprintf(out, len, "the component said nothing of its device path (is btl_devmem "
                           "loaded, and this Open MPI's MPI_T working?)");
        return out;
    }
    for (const char *l = paths; NULL != l && '\0' != *l; l = next_line(l)) {
        if (line_on(l)) {
            return NULL;
        }
    }
    name = name_len(paths);
    line = strcspn(paths, "\n");
    if (0 == strncmp(paths + name, " off: ", 6)) {
        snprintf(out, len, "%.*s: %.*s", (int) name, paths, (int) (line - name - 6),
                 paths + name + 6);
    } else {
        snprintf(out, len, "%.*s", (int) line, paths);
    }
    return out;
}

/* Whether device buffers reach btl_devmem untouched by the CPU: a CUDA-aware Open MPI, or
 * contrib/devmem-device-buffers.conf's parameters (no inline sends, every message RGET). */
static int gpu_routed(void)
{
    char *sendi = cvar_text("btl_devmem_sendi"), *eager = cvar_text("btl_devmem_eager_limit");
    int ok = 0;

#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    ok = 1 == MPIX_Query_cuda_support();
#endif
    if (!ok && NULL != sendi && NULL != eager) {
        ok = 0 == atoi(sendi) && strtoull(eager, NULL, 10) <= 128;
    }
    free(sendi);
    free(eager);
    return ok;
}

/* --table-only (a --launch variant): what this job runs with, then the table alone. */
static int table_variant(int have_counters, int quick)
{
    char *btl = cvar_text("btl"), *lanes = cvar_text("btl_devmem_devflows");
    char *paths = cvar_text("btl_devmem_device_paths");
    unsigned long long v[CNT_N] = {0}, threads1 = 0;

    counters_read(v);
    MPI_Reduce(&v[CNT_RX_THREADS], &threads1, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0,
               MPI_COMM_WORLD);
    if (0 == my_rank) {
        char threads[24] = "-";

        if (have_counters) {
            snprintf(threads, sizeof(threads), "%llu", threads1);
        }
        printf(CHECK_VARIANT "btl=%s devflows=%s threads=%s path=%s\n",
               NULL != btl ? btl : "?", NULL != lanes ? lanes : "-", threads,
               NULL != paths && NULL != strstr(paths, " on: ") ? "device" : "host");
        fflush(stdout);
    }
    check_table(NULL, quick ? 3 : 5, quick, 1);
    free(btl);
    free(lanes);
    free(paths);
    counters_close();
    (void) MPI_T_finalize();
    MPI_Finalize();
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mpirun -np 2 --host A,B devmem-check [--report FILE] [--quick]\n"
            "       srun -N 2 -n 2 devmem-check [--report FILE] [--quick]\n"
            "       devmem-check --launch 'mpirun -np 2 --host A,B' [--report FILE] [--quick]\n"
            "Check btl_devmem's device path between two hosts: what devmem-probe finds on\n"
            "each, whether the device path comes up, validated transfers (host and, with\n"
            "CUDA, GPU buffers) that must take it, and latency and bandwidth beside raw TCP.\n"
            "MCA parameters are passed as usual (--mca btl_devmem_if_include ...); unless\n"
            "given, btl is devmem,self and pml ob1.\n"
            "\n"
            "  --report FILE  write everything, both hosts' facts included, to FILE\n"
            "  --quick        fewer iterations in the table\n"
            "  --launch CMD   run the check with the launch command CMD (not under MPI),\n"
            "                 then its table again from jobs of btl/tcp, of 1 and 4 lanes\n"
            "                 and of 0 and 1 receiving thread, side by side\n"
            "\n"
            "Last line: \"devmem-check: PASS ...\" or \"devmem-check: FAIL <why>; <what to do>\".\n"
            "Exit status: 0 on PASS, 1 on FAIL, 2 on bad usage.\n");
}

int main(int argc, char **argv)
{
    const char *report_path = NULL;
    struct text probe = {0}, mine = {0};
    char host[256] = "", *paths, *used, *paths1, *facts1, *host1, why[512] = "";
    char ifname[IF_NAMESIZE + 1];
    char addr[INET6_ADDRSTRLEN] = "", *addr1, gpu_why[256] = "", *lanes, *threads, twhy[256];
    unsigned long long before[CNT_N], after[CNT_N], sum[CNT_N];
    int quick = 0, size, fail = 0, have_counters, gpu_ok, gpus, hbad, tprov, apart;
    int table_only = 0;
    const char *launch = NULL;
    struct utsname un;

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--report") && i + 1 < argc) {
            report_path = argv[++i];
        } else if (0 == strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (0 == strcmp(argv[i], "--launch") && i + 1 < argc) {
            launch = argv[++i];
        } else if (0 == strcmp(argv[i], "--table-only")) { /* for --launch: a variant */
            table_only = 1;
        } else if (0 == strcmp(argv[i], "--help") || 0 == strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (NULL != launch) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        self[n > 0 ? n : 0] = '\0';
        return check_compare(n > 0 ? self : "devmem-check", launch, report_path, quick);
    }
    /* before MPI_Init: its bind checks must not meet queues the component holds */
    if (!table_only) {
        run_probe(&probe);
    }
    /* the check is of btl_devmem: not shared memory between ranks of one host, not UCX */
    setenv("OMPI_MCA_btl", "devmem,self", 0);
    setenv("OMPI_MCA_pml", "ob1", 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size) {
        if (0 == my_rank) {
            fprintf(stderr, "devmem-check: run it with exactly 2 ranks, one per host (it has "
                            "%d)\n", size);
        }
        MPI_Finalize();
        return 2;
    }
    (void) gethostname(host, sizeof(host) - 1);
    (void) MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov);
    have_counters = 0 == counters_open();
    if (table_only) {
        return table_variant(have_counters, quick);
    }
    paths = cvar_text("btl_devmem_device_paths");
    lanes = cvar_text("btl_devmem_devflows");
    threads = cvar_text("btl_devmem_rx_threads");
    if (NULL == paths) {
        paths = strdup("");
    }
    host1 = from_rank1(host);
    apart = 0 == my_rank && NULL != host1 && 0 != strcmp(host, host1);
    MPI_Bcast(&apart, 1, MPI_INT, 0, MPI_COMM_WORLD);
    used = apart ? between_hosts(paths) : strdup(paths);
    first_if(used, ifname, sizeof(ifname));
    (void) if_address(ifname, addr, sizeof(addr));

    /* 1. facts, each host's in turn */
    uname(&un);
    text_printf(&mine, "host %s (rank %d), %s %s\n", host, my_rank, un.sysname, un.release);
    text_printf(&mine, "btl_devmem device paths:\n%s", '\0' != paths[0] ? paths : "  (none)\n");
    text_printf(&mine, "devmem-probe, for those interfaces:\n");
    probe_for(&probe, paths, &mine);
    facts1 = from_rank1(mine.s);
    paths1 = from_rank1(used);
    addr1 = from_rank1(addr);
    say("devmem-check: %s and %s", host, 0 == my_rank ? host1 : "");
    say("==== rank 0 ====\n%s==== rank 1 ====\n%s====", mine.s, 0 == my_rank ? facts1 : "");
    {
        /* what btl_devmem_rx_threads -1 chose on each host */
        unsigned long long v[CNT_N];
        char mine_n[32], *theirs;

        counters_read(v);
        if (have_counters) {
            snprintf(mine_n, sizeof(mine_n), "%llu", v[CNT_RX_THREADS]);
        } else {
            snprintf(mine_n, sizeof(mine_n), "?");
        }
        theirs = from_rank1(mine_n);
        if (0 == my_rank) {
            say("this job: btl_devmem_devflows %s, btl_devmem_rx_threads %s (receiving threads "
                "started: %s on rank 0, %s on rank 1)",
                NULL != lanes ? lanes : "?", NULL != threads ? threads : "?", mine_n,
                NULL != theirs ? theirs : "?");
        }
        free(theirs);
    }

    /* 2. the device path, as btl_devmem_mode require would have it */
    if (0 == my_rank) {
        char off[512];
        const char *o;

        if (!have_counters) {
            snprintf(why, sizeof(why), "btl_devmem is not in this job (its counters are "
                     "missing): run with --mca btl devmem,self");
        } else if (apart && '\0' == used[0] && '\0' != paths[0]) {
            snprintf(why, sizeof(why), "btl_devmem has no interface but loopback on %s, which "
                     "carries nothing between two hosts; bring the NIC up with an address, or "
                     "name it with btl_devmem_if_include", host);
        } else if (NULL != (o = first_off(used, off, sizeof(off)))) {
            snprintf(why, sizeof(why), "device path off on %s %s; %s", host, o, remedy(o));
        } else if (NULL != (o = first_off(paths1, off, sizeof(off)))) {
            snprintf(why, sizeof(why), "device path off on %s %s; %s", host1, o, remedy(o));
        }
        fail = '\0' != why[0];
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);

    /* 3. transfers: host always (the host path must work whatever the verdict) */
    counters_read(before);
    hbad = 0 != check_transfers('H', 'H', 64u << 20, twhy, sizeof(twhy));
    if (hbad) {
        /* wrong bytes outrank a device path that is off */
        fail = 1;
        snprintf(why, sizeof(why), "transfers host to host: %s", twhy);
    }
    say("transfers host to host, 1 B to 64 MiB each way: %s",
        hbad ? "FAILED" : "every byte checked");
    gpu_ok = 0 == check_gpu_usable(gpu_why, sizeof(gpu_why)) ? 1 : 0;
    if (gpu_ok && !gpu_routed()) {
        gpu_ok = -1;
    }
    MPI_Allreduce(&gpu_ok, &gpus, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    for (int k = 0; 1 == gpus && k < 3; k++) {
        static const char kinds[][3] = {"DD", "DH", "HD"};
        const char *from = 'D' == kinds[k][0] ? "device" : "host";
        const char *to = 'D' == kinds[k][1] ? "device" : "host";
        int bad = 0 != check_transfers(kinds[k][0], kinds[k][1], 64u << 20, twhy, sizeof(twhy));

        if (bad && !fail) {
            fail = 1;
            snprintf(why, sizeof(why), "transfers %s to %s: %s", from, to, twhy);
        }
        say("transfers %s to %s, 1 B to 64 MiB each way: %s", from, to,
            bad ? "FAILED" : "every byte checked");
    }
    if (1 != gpus) {
        /* rank 0 says why, for either rank */
        char *gwhy1 = from_rank1(gpu_why);
        int g1 = gpu_ok;

        MPI_Bcast(&g1, 1, MPI_INT, 1, MPI_COMM_WORLD);
        if (0 == my_rank) {
            const char *who = 1 != gpu_ok ? host : host1;
            int g = 1 != gpu_ok ? gpu_ok : g1;

            say("transfers with GPU buffers: skipped (%s: %s)", who,
                -1 == g ? "this Open MPI is not CUDA-aware: run with --tune "
                          "PREFIX/share/btl_devmem/devmem-device-buffers.conf to route device "
                          "buffers through btl_devmem"
                        : (1 != gpu_ok ? gpu_why : gwhy1));
        }
        free(gwhy1);
    }
    counters_read(after);
    for (int k = 0; k < CNT_N; k++) {
        after[k] -= before[k];
    }
    /* the device path must have carried them, and every token gone back (read again at
     * the end: the last ones go back as the receiver finishes) */
    MPI_Reduce(after, sum, CNT_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == my_rank) {
        say("device path: %llu bytes landed in RX pools, %llu sent with devmem TX, %llu tokens "
            "handed out, %llu returned, %llu protocol errors", sum[CNT_RX_DMABUF],
            sum[CNT_TX_DEVMEM], sum[CNT_TOKENS_RECEIVED], sum[CNT_TOKENS_RETURNED],
            sum[CNT_PROTO_ERRORS]);
        if (!hbad && 0 == sum[CNT_TX_HOST] + sum[CNT_TX_DEVMEM]) {
            const char *pml = getenv("OMPI_MCA_pml");

            /* the root cause, whatever step 2 found */
            fail = 1;
            snprintf(why, sizeof(why), "btl_devmem carried none of the check's messages: the "
                     "job runs on pml %s, which uses no BTL; run it with --mca pml ob1 (the "
                     "check's default where the launch command names no PML)",
                     NULL != pml ? pml : "other than ob1");
        } else if (!fail && 0 == sum[CNT_RX_DMABUF]) {
            fail = 1;
            snprintf(why, sizeof(why), "the device path is on but carried nothing: the large "
                     "transfers went by host TCP; look for \"fell back\" lines with "
                     "--mca btl_devmem_verbose 1");
        } else if (!fail && sum[CNT_PROTO_ERRORS] > 0) {
            fail = 1;
            snprintf(why, sizeof(why), "%llu protocol errors on the way",
                     sum[CNT_PROTO_ERRORS]);
        }
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);

    /* 4. the table, whatever the verdict: it says what the host path gives too */
    say("table: this job beside raw TCP between the same ranks over %s (%s), medians of %d "
        "runs (btl/tcp cannot run beside btl_devmem in one job: devmem-check --launch runs "
        "it too)", ifname, 0 == my_rank ? addr1 : "", quick ? 3 : 5);
    check_table(0 == my_rank ? addr1 : NULL, quick ? 3 : 5, quick, 0);

    /* tokens: all back once both ranks are done receiving */
    MPI_Barrier(MPI_COMM_WORLD);
    counters_read(after);
    MPI_Reduce(after, sum, CNT_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == my_rank) {
        if (!fail && sum[CNT_TOKENS_RECEIVED] != sum[CNT_TOKENS_RETURNED]) {
            fail = 1;
            snprintf(why, sizeof(why), "%llu tokens handed out but %llu returned: the RX "
                     "pool leaks", sum[CNT_TOKENS_RECEIVED], sum[CNT_TOKENS_RETURNED]);
        }
        char verdict[1024];

        if (fail) {
            snprintf(verdict, sizeof(verdict), "devmem-check: FAIL %s", why);
        } else {
            snprintf(verdict, sizeof(verdict), "devmem-check: PASS: the device path works "
                     "between %s and %s (%llu bytes through RX pools, %llu tokens all "
                     "returned%s)", host, host1, sum[CNT_RX_DMABUF], sum[CNT_TOKENS_RETURNED],
                     1 == gpus ? "; GPU buffers checked" : "; GPU buffers not checked");
        }
        /* the verdict is the last line: the report goes first */
        text_printf(&report, "%s\n", verdict);
        if (NULL != report_path) {
            FILE *f = fopen(report_path, "w");

            if (NULL == f || fwrite(report.s, 1, report.len, f) != report.len
                || 0 != fclose(f)) {
                fprintf(stderr, "devmem-check: cannot write the report to %s: %s\n",
                        report_path, strerror(errno));
                fail = 1;
            } else {
                printf("devmem-check: report written to %s\n", report_path);
            }
        }
        printf("%s\n", verdict);
        fflush(stdout);
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    counters_close();
    (void) MPI_T_finalize();
    free(paths);
    free(used);
    free(lanes);
    free(threads);
    free(facts1);
    free(paths1);
    free(host1);
    free(addr1);
    text_free(&mine);
    text_free(&probe);
    text_free(&report);
    MPI_Finalize();
    return fail ? 1 : 0;
}
