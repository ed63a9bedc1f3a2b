/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-check --launch CMD: the check and its table beside the jobs it cannot run itself.
 * Open MPI's ob1 drives one BTL per peer, and lanes and receiving threads are fixed when a
 * job starts, so btl/tcp, 1 and 4 lanes and 0 and 1 receiving thread each take a job of
 * their own. This program, run outside MPI, launches them with the admin's launch command
 * (mpirun or srun, the two hosts named in it): first the whole check, then the table from
 * fresh jobs (devmem-check --table-only): the launch command's own settings, and each variant
 * set through OMPI_MCA_ variables, which both launchers pass on; and prints them side by side
 * (all measured alike: the check's own job does more than the table, and reads slower). The
 * devmem and btl/tcp columns, whose ratio is the headline, each take two jobs, one near each
 * end of the run (devmem first and last, btl/tcp second and second to last), and keep the
 * better figure of the two: on a small VM the first job after the check reads slower at small
 * sizes, and one order would bias the ratio. A column whose job did not run what its title
 * says (the launch command's --mca outranks OMPI_MCA_) is flagged, and no ratio is drawn from
 * it. The check's verdict stays the last line and its exit status the exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

enum { LAT_N = CHECK_LAT_N, BW_N = CHECK_BW_N, COLS = 6 };

/* A column: the jobs that gave it and its figures (-1: none). */
struct column {
    const char *title;    /* "devmem", "btl/tcp", "1 lane" ... */
    const char *env[2];   /* the OMPI_MCA_ settings of its jobs, NAME=VALUE */
    const char *want[2];  /* what its jobs must say they ran with, KEY=VALUE */
    char ran[160];        /* what the last job said it ran with */
    int failed;           /* the exit status of a job that failed, else 0 */
    double lat[LAT_N], bw[BW_N];
};

/* The order of the jobs after the check: the first two columns (their ratio is the
 * headline) at both ends, so that neither gains from its place. */
static const int job_order[] = {0, 1, 2, 3, 4, 5, 1, 0};

/* The value of the key (keylen bytes at key) in a variant line "btl=X devflows=Y threads=Z
 * path=P", or NULL. */
static const char *ran_value(const char *ran, const char *key, size_t keylen)
{
    for (const char *at = ran; '\0' != *at; at += strcspn(at, " "), at += strspn(at, " ")) {
        if (0 == strncmp(at, key, keylen) && '=' == at[keylen]) {
            return at + keylen + 1;
        }
    }
    return NULL;
}

/* Whether the column's jobs said they ran with something other than its title says: a
 * value they did not report, or "-" (counters not readable), is not held against them. */
static int column_differs(const struct column *col, const char **which)
{
    for (int k = 0; k < 2 && NULL != col->want[k]; k++) {
        size_t keylen = strcspn(col->want[k], "=");
        const char *want = col->want[k] + keylen + 1;
        const char *got = ran_value(col->ran, col->want[k], keylen);
        size_t gotlen = NULL != got ? strcspn(got, " ") : 0;

        if (NULL != got && !(1 == gotlen && '-' == *got)
            && (gotlen != strlen(want) || 0 != strncmp(got, want, gotlen))) {
            *which = col->want[k];
            return 1;
        }
    }
    return 0;
}

static int size_index(const size_t *sizes, int n, size_t s)
{
    for (int i = 0; i < n; i++) {
        if (sizes[i] == s) {
            return i;
        }
    }
    return -1;
}

/* One figure line into col; 0 when line is one. */
static int take_row(const char *line, struct column *col)
{
    char kind[8];
    size_t size;
    double job, raw;
    int i;

    if (4 != sscanf(line + strlen(CHECK_ROW), "%7s %zu %lf %lf", kind, &size, &job, &raw)) {
        return -1;
    }
    if (job < 0) {
        return 0;
    }
    /* a column of two jobs keeps the better figure: the lower latency, the higher bandwidth */
    if (0 == strcmp(kind, "lat") && (i = size_index(check_lat_sizes, LAT_N, size)) >= 0) {
        if (col->lat[i] < 0 || job < col->lat[i]) {
            col->lat[i] = job;
        }
    } else if (0 == strcmp(kind, "bw") && (i = size_index(check_bw_sizes, BW_N, size)) >= 0) {
        if (job > col->bw[i]) {
            col->bw[i] = job;
        }
    }
    return 0;
}

/*
 * Run cmd (through the shell), its output into col (figures and what it ran with; none where
 * col is NULL) and the rest into out: echoed as it comes when echo is set. Returns its exit
 * status (-1: did not run).
 */
static int run(const char *cmd, struct column *col, struct text *out, int echo)
{
    char line[4096];
    FILE *p = popen(cmd, "r");
    int st;

    if (NULL == p) {
        fprintf(stderr, "devmem-check: cannot run '%s': %s\n", cmd, strerror(errno));
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), p)) {
        if (NULL != col && 0 == strncmp(line, CHECK_ROW, strlen(CHECK_ROW))) {
            (void) take_row(line, col);
            continue;
        }
        if (NULL != col && 0 == strncmp(line, CHECK_VARIANT, strlen(CHECK_VARIANT))) {
            const char *what = line + strlen(CHECK_VARIANT);

            snprintf(col->ran, sizeof(col->ran), "%.*s", (int) strcspn(what, "\n"), what);
            continue;
        }
        if (NULL != out) {
            text_printf(out, "%s", line);
        }
        if (echo) {
            fputs(line, stdout);
            fflush(stdout);
        }
    }
    st = pclose(p);
    return -1 == st ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The interface the check's table ran over, from its line "... over IFNAME (ADDR) ...". */
static void table_interface(const char *text, char *ifname, size_t len)
{
    const char *at = strstr(text, "between the same ranks over ");

    ifname[0] = '\0';
    if (NULL != at) {
        at += strlen("between the same ranks over ");
        snprintf(ifname, len, "%.*s", (int) strcspn(at, " \n"), at);
    }
}

/* The check's last verdict line, or "" */
static void verdict_of(const char *text, char *verdict, size_t len)
{
    const char *at = text, *last = NULL;

    while (NULL != (at = strstr(at, "devmem-check: "))) {
        if (at == text || '\n' == at[-1]) {
            if (0 == strncmp(at, "devmem-check: PASS", 18)
                || 0 == strncmp(at, "devmem-check: FAIL", 18)) {
                last = at;
            }
        }
        at++;
    }
    verdict[0] = '\0';
    if (NULL != last) {
        snprintf(verdict, len, "%.*s", (int) strcspn(last, "\n"), last);
    }
}

static void cell(struct text *t, double v, const char *fmt)
{
    if (v < 0) {
        text_printf(t, "  %10s", "-");
    } else {
        text_printf(t, fmt, v);
    }
}

/* One half of the table: latency (bw 0) or bandwidth (bw 1), a row a size, a column a job,
 * then the ratio of the first two (devmem over btl/tcp) where ratio is set. */
static void print_half(struct text *t, const struct column *cols, int ncols, int bw, int ratio)
{
    const size_t *sizes = bw ? check_bw_sizes : check_lat_sizes;
    const char *fmt = bw ? "  %10.0f" : "  %10.2f";
    int n = bw ? BW_N : LAT_N;
    char name[32];

    text_printf(t, "%-10s %8s", bw ? "bandwidth MB/s" : "latency us", bw ? "" : "size");
    for (int c = 0; c < ncols; c++) {
        text_printf(t, "  %10s", cols[c].title);
    }
    text_printf(t, "  %10s\n", "devmem/tcp");
    for (int i = 0; i < n; i++) {
        double dm = bw ? cols[0].bw[i] : cols[0].lat[i], tcp = bw ? cols[1].bw[i] : cols[1].lat[i];

        check_size_name(sizes[i], name, sizeof(name));
        text_printf(t, "%-10s %8s", "", name);
        for (int c = 0; c < ncols; c++) {
            cell(t, bw ? cols[c].bw[i] : cols[c].lat[i], fmt);
        }
        cell(t, ratio && dm > 0 && tcp > 0 ? dm / tcp : -1, "  %10.2f");
        text_printf(t, "\n");
    }
}

int check_compare(const char *self, const char *launch, const char *report_path, int quick)
{
    static char tcp_if[96];
    struct column cols[COLS] = {
        {"devmem", {NULL, NULL}, {"path=device", NULL}, "", 0, {0}, {0}},
        {"btl/tcp", {"OMPI_MCA_btl=tcp,self", tcp_if}, {"btl=tcp,self", NULL}, "", 0, {0}, {0}},
        {"1 lane", {"OMPI_MCA_btl_devmem_devflows=1", NULL}, {"devflows=1", "path=device"}, "",
         0, {0}, {0}},
        {"4 lanes", {"OMPI_MCA_btl_devmem_devflows=4", NULL}, {"devflows=4", "path=device"}, "",
         0, {0}, {0}},
        {"0 threads", {"OMPI_MCA_btl_devmem_rx_threads=0", NULL}, {"threads=0", "path=device"},
         "", 0, {0}, {0}},
        {"1 thread", {"OMPI_MCA_btl_devmem_rx_threads=1", NULL}, {"threads=1", "path=device"},
         "", 0, {0}, {0}},
    };
    struct text out = {0}, table = {0}, said = {0};
    char *cmd = NULL, ifname[64], verdict[1024];
    int rc, ratio = 1;

    for (int c = 0; c < COLS; c++) {
        for (int i = 0; i < LAT_N; i++) {
            cols[c].lat[i] = -1;
        }
        for (int i = 0; i < BW_N; i++) {
            cols[c].bw[i] = -1;
        }
    }
    /* 1. the check itself, its output shown as it comes */
    if (asprintf(&cmd, "%s '%s'%s 2>&1", launch, self, quick ? " --quick" : "") < 0) {
        return 1;
    }
    rc = run(cmd, NULL, &out, 1);
    free(cmd);
    verdict_of(NULL != out.s ? out.s : "", verdict, sizeof(verdict));
    if ('\0' == verdict[0]) {
        snprintf(verdict, sizeof(verdict), "devmem-check: FAIL the check did not finish "
                 "(exit %d): see its output above; is '%s' the launch command of 2 ranks on "
                 "two hosts, with devmem-check installed at %s on both?", rc, launch, self);
        rc = 1;
    }
    /* 2. the jobs it cannot run itself, once it passed */
    if (0 == rc && 0 == strncmp(verdict, "devmem-check: PASS", 18)) {
        table_interface(out.s, ifname, sizeof(ifname));
        snprintf(tcp_if, sizeof(tcp_if), "OMPI_MCA_btl_tcp_if_include=%s", ifname);
        if ('\0' == ifname[0]) {
            cols[1].env[1] = NULL;
        }
        for (size_t j = 0; j < sizeof(job_order) / sizeof(job_order[0]); j++) {
            int c = job_order[j], vrc;

            printf("devmem-check: the table again, %s (%s%s%s)\n", cols[c].title,
                   NULL != cols[c].env[0] ? cols[c].env[0] : "the launch command's settings",
                   NULL != cols[c].env[1] ? " " : "",
                   NULL != cols[c].env[1] ? cols[c].env[1] : "");
            fflush(stdout);
            for (int k = 0; k < 2 && NULL != cols[c].env[k]; k++) {
                (void) putenv((char *) cols[c].env[k]);
            }
            if (asprintf(&cmd, "%s '%s' --table-only%s 2>&1", launch, self,
                         quick ? " --quick" : "") < 0) {
                return 1;
            }
            vrc = run(cmd, &cols[c], &said, 0);
            free(cmd);
            if (0 != vrc) { /* what it said, for the admin and the report */
                printf("%s", NULL != said.s ? said.s : "");
                text_printf(&out, "the %s job (exit %d) said:\n%s", cols[c].title, vrc,
                            NULL != said.s ? said.s : "");
            }
            text_free(&said);
            for (int k = 0; k < 2 && NULL != cols[c].env[k]; k++) {
                char name[64];

                snprintf(name, sizeof(name), "%.*s", (int) strcspn(cols[c].env[k], "="),
                         cols[c].env[k]);
                unsetenv(name);
            }
            if (0 != vrc) {
                cols[c].failed = vrc;
            }
        }
        text_printf(&table, "side by side: each column its own jobs, launched as '%s', "
                    "medians of %d runs; devmem and btl/tcp: the better of two jobs, one near "
                    "each end of the run\n", launch, quick ? 3 : 5);
        for (int c = 0; c < COLS; c++) {
            const char *which = NULL;
            int differs = column_differs(&cols[c], &which);

            if (0 != cols[c].failed) {
                text_printf(&table, "  %-9s a job failed (exit %d)%s%s\n", cols[c].title,
                            cols[c].failed,
                            '\0' != cols[c].ran[0] ? "; a job said it ran with " : "",
                            cols[c].ran);
            } else {
                text_printf(&table, "  %-9s %s%s%s%s\n", cols[c].title,
                            '\0' != cols[c].ran[0] ? cols[c].ran : "(said nothing)",
                            differs ? ": NOT " : "", differs ? which : "",
                            differs ? ": the launch command sets it, and its --mca outranks "
                                      "OMPI_MCA_" : "");
            }
            if (c < 2 && (differs || 0 != cols[c].failed)) {
                ratio = 0;
            }
        }
        if (!ratio) {
            text_printf(&table, "  no devmem/tcp ratio: the devmem or btl/tcp column is not what "
                        "its title says (leave btl and the parameters the columns vary off the "
                        "launch command: devmem-check sets btl itself)\n");
        }
        print_half(&table, cols, COLS, 0, ratio);
        print_half(&table, cols, COLS, 1, ratio);
        fputs(table.s, stdout);
        text_printf(&out, "%s", table.s);
    } else {
        printf("devmem-check: no side-by-side table: the check did not pass\n");
        text_printf(&out, "devmem-check: no side-by-side table: the check did not pass\n");
    }
    /* the verdict last, in the report too */
    text_printf(&out, "%s\n", verdict);
    if (NULL != report_path) {
        FILE *f = fopen(report_path, "w");

        if (NULL == f || fwrite(out.s, 1, out.len, f) != out.len || 0 != fclose(f)) {
            fprintf(stderr, "devmem-check: cannot write the report to %s: %s\n", report_path,
                    strerror(errno));
            rc = 1;
        } else {
            printf("devmem-check: report written to %s\n", report_path);
        }
    }
    printf("%s\n", verdict);
    text_free(&out);
    text_free(&table);
    return 0 == rc && 0 == strncmp(verdict, "devmem-check: PASS", 18) ? 0 : 1;
}
