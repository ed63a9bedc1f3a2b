#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The table of bench/run.sh from its results.csv: per setting, yield and kind, the median of
# each transport per size with its spread ((max - min) / median over the repetitions), and the
# ratios of devmem to tcp, to ucx and to raw TCP (busy).
#   lat:  one-way microseconds, lower is better; a ratio < 1 means devmem is faster
#   bw, bibw: MB/s (10^6 bytes/s); rate: messages/s; higher is better, a ratio > 1 means faster
#   netpipe: NetPIPE's own figures (one run): microseconds and MB/s
# A ratio pairs the runs of one repetition (run.sh runs the transports of a repetition one
# after the other, so a slow minute of the machine hits both) and gives the median of the
# per-repetition ratios with the interval of the middle ones: with n repetitions, the k-th
# smallest to the k-th largest, k = n/4 + 1 (5 reps: the middle three). The mark after it:
#   =   inside the noise: the interval holds 1, or there are fewer than 3 repetitions
#   +   devmem better outside the noise,  -   devmem worse outside the noise
# At the end, the cells that miss issue 19's targets: devmem more than 3 % slower than tcp
# (median ratio past 1.03, or under 1/1.03 for bw and rate) and marked -, and every - against
# ucx; a - within 3 % of tcp (two transports at line rate, say) is counted apart.
# Usage: bench/summarize.sh results.csv
#        bench/summarize.sh --calls calls.csv   per setting, kind and yield of devmem's runs:
#            receive calls, SO_DEVMEM_DONTNEED calls, tokens and gathers (batches) per MiB
#            received (the medians
#            over the repetitions), on the host path (rx_host) or the device path (rx_device)
#        bench/summarize.sh --ab results.csv   per setting, yield, kind and size, what each
#            mechanism brings: for every column devmem-NAME of run.sh --ab, the gain of devmem
#            over it (its time / devmem's for lat, devmem's rate / its rate otherwise;
#            paired per repetition as above), marked + where the mechanism wins outside the
#            noise and - where it loses; at the end, each variant's + and - cells
set -u
# The awk functions the three programs below share. Insertion sort: a list is the few
# repetitions of one cell. med takes a list " x y z", as the programs build them.
common='
function sort(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function median_of(a, n) {
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function med(list,    a, n) {
    n = split(substr(list, 2), a, " "); sort(a, n)
    return median_of(a, n)
}
# n paired ratios q (sorted in place): the median, returned, and the interval of the middle
# ones, k-th smallest to k-th largest with k = n/4 + 1, in spread_lo and spread_hi
function paired(q, n,    k) {
    sort(q, n)
    k = int(n / 4) + 1
    spread_lo = q[k]; spread_hi = q[n + 1 - k]
    return median_of(q, n)
}
'
if [ $# -eq 2 ] && [ "$1" = --ab ] && [ -f "$2" ]; then
    awk -F, "$common"'
    function gain(d, v, low,    n, i, r, q, m, lo, hi, mark) {
        last_mark = ""
        if (!(d in reps) || !(v in reps)) return sprintf("%19s", "-")
        n = 0
        split(reps[d], r, " ")
        for (i in r) if ((v, r[i]) in val && val[v, r[i]] > 0 && val[d, r[i]] > 0)
            q[++n] = low ? val[v, r[i]] / val[d, r[i]] : val[d, r[i]] / val[v, r[i]]
        if (n == 0) return sprintf("%19s", "-")
        m = paired(q, n); lo = spread_lo; hi = spread_hi
        mark = (n < 3 || (lo <= 1 && hi >= 1)) ? "=" : (lo > 1 ? "+" : "-")
        last_mark = mark
        return sprintf("%5.2f (%4.2f-%4.2f) %s", m, lo, hi, mark)
    }
    NR == 1 { next }
    {
        metric = $4 == "lat" ? $7 : ($4 == "rate" ? $9 : $8)
        if (metric == "" || $3 !~ /^devmem/) next
        if ($3 != "devmem" && !($3 in isvar)) { isvar[$3] = 1; vars[++nv] = $3 }
        grp = $1 SUBSEP $2 SUBSEP $4
        if (!(grp in seen)) { seen[grp] = 1; order[++ngrp] = grp }
        if (!((grp, $6) in sz)) { sz[grp, $6] = 1; sizes[grp] = sizes[grp] " " $6 }
        key = grp SUBSEP $3 SUBSEP $6
        if (!((key, $5) in val)) reps[key] = reps[key] " " $5
        val[key, $5] = metric
    }
    END {
        if (!nv) exit
        printf "\n== A/B: gain of devmem over devmem-NAME (> 1: the mechanism helps; + / - outside the noise)\n"
        for (g = 1; g <= ngrp; g++) {
            split(order[g], p, SUBSEP)
            low = p[3] == "lat"
            printf "\n-- %s, yield %s: %s\n%9s", p[1], p[2], p[3], "size"
            for (j = 1; j <= nv; j++) printf " %19s", substr(vars[j], 8)
            printf "\n"
            n = split(substr(sizes[order[g]], 2), s, " ")
            for (i = 1; i <= n; i++) {
                k = order[g] SUBSEP
                printf "%9s", s[i]
                for (j = 1; j <= nv; j++) {
                    printf " %s", gain(k "devmem" SUBSEP s[i], k vars[j] SUBSEP s[i], low)
                    if (last_mark == "+") plus[j]++
                    if (last_mark == "-") { minus[j]++; lost[j] = lost[j] sprintf(" %s/y%s/%s/%s", p[1], p[2], p[3], s[i]) }
                }
                printf "\n"
            }
        }
        printf "\n== A/B verdicts: cells where the mechanism wins (+) and loses (-) outside the noise\n"
        for (j = 1; j <= nv; j++)
            printf "%-16s +%d -%d%s\n", substr(vars[j], 8), plus[j], minus[j], minus[j] ? "  lost:" lost[j] : ""
    }' "$2"
    exit 0
fi
if [ $# -eq 2 ] && [ "$1" = --calls ] && [ -f "$2" ]; then
    awk -F, "$common"'
    NR == 1 { next }
    {
        mib = ($8 + $9) / 1048576
        if (mib <= 0) next
        g = $1 SUBSEP $3 SUBSEP $2
        if (!(g in seen)) { seen[g] = 1; order[++n] = g }
        path[g] = $8 > $9 ? "device" : "host"
        rc[g] = rc[g] " " $5 / mib; dn[g] = dn[g] " " $6 / mib; tk[g] = tk[g] " " $7 / mib
        gb[g] = gb[g] " " ($10 == "" ? 0 : $10) / mib
        mb[g] = mb[g] " " mib
    }
    END {
        if (!n) exit
        printf "\n== devmem calls per MiB received (medians over the repetitions)\n"
        printf "%-12s %-5s %5s %-6s %10s %12s %14s %10s %12s\n", "setting", "kind", "yield",
               "path", "MiB/run", "recv/MiB", "DONTNEED/MiB", "tokens/MiB", "gathers/MiB"
        for (i = 1; i <= n; i++) {
            split(order[i], p, SUBSEP)
            printf "%-12s %-5s %5s %-6s %10.0f %12.2f %14.2f %10.1f %12.2f\n", p[1], p[2],
                   p[3], path[order[i]], med(mb[order[i]]), med(rc[order[i]]),
                   med(dn[order[i]]), med(tk[order[i]]), med(gb[order[i]])
        }
    }' "$2"
    exit 0
fi
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 results.csv | --calls calls.csv | --ab results.csv" >&2; exit 2; }

awk -F, "$common"'
function cell(key,    n, i, a, m, s, r) {
    if (!(key in reps)) return sprintf("%14s", "-")
    n = split(reps[key], r, " ")
    for (i = 1; i <= n; i++) a[i] = val[key, r[i]]
    sort(a, n)
    m = median_of(a, n)
    s = m > 0 ? 100 * (a[n] - a[1]) / m : 0
    return sprintf("%9.*f %3.0f%%", m >= 100 ? 0 : 2, m, s)
}
# devmem/other over the repetitions both have: "median (lo-hi) mark"
function ratio(a, b, lower_better,    n, i, r, q, m, lo, hi, mark) {
    last_mark = ""
    if (!(a in reps) || !(b in reps)) return sprintf("%20s", "-")
    n = 0
    split(reps[a], r, " ")
    for (i in r) if ((b, r[i]) in val && val[b, r[i]] > 0) q[++n] = val[a, r[i]] / val[b, r[i]]
    if (n == 0) return sprintf("%20s", "-")
    m = paired(q, n); lo = spread_lo; hi = spread_hi
    if (n < 3 || (lo <= 1 && hi >= 1)) mark = "="
    else if ((lo > 1) == !lower_better) mark = "+"
    else mark = "-"
    last_m = m; last_mark = mark
    return sprintf("%6.2f (%4.2f-%4.2f) %s", m, lo, hi, mark)
}
NR == 1 { next }
{
    metric = ($4 == "lat" || $4 == "netpipe") ? $7 : ($4 == "rate" ? $9 : $8)
    if (metric == "") next
    grp = $1 SUBSEP $2 SUBSEP $4
    if (!(grp in seen)) { seen[grp] = 1; order[++ngrp] = grp }
    if (!((grp, $6) in sz)) { sz[grp, $6] = 1; sizes[grp] = sizes[grp] " " $6 }
    key = grp SUBSEP $3 SUBSEP $6
    if (!((key, $5) in val)) reps[key] = reps[key] " " $5
    val[key, $5] = metric
}
END {
    for (g = 1; g <= ngrp; g++) {
        split(order[g], p, SUBSEP)
        low = p[3] == "lat" || p[3] == "netpipe"
        unit = p[3] == "lat" ? "usec, lower is better" : p[3] == "rate" ? "messages/s" : \
               p[3] == "netpipe" ? "usec, NetPIPE half round trip" : "MB/s"
        printf "\n== %s, yield %s: %s (%s)\n", p[1], p[2], p[3], unit
        printf "%9s %14s %14s %14s %14s %14s %20s %20s %8s\n", "size", "devmem", "tcp", "ucx",
               "raw-busy", "raw-block", "dm/tcp", "dm/ucx", "dm/raw"
        n = split(substr(sizes[order[g]], 2), s, " ")
        for (i = 1; i <= n; i++) {
            k = order[g] SUBSEP
            d = k "devmem" SUBSEP s[i]
            raw = "-"
            if ((d in reps) && ((k "raw-busy" SUBSEP s[i]) in reps)) {
                raw = ratio(d, k "raw-busy" SUBSEP s[i], low)
                sub(/^ +/, "", raw); sub(/ .*/, "", raw)
            }
            where = sprintf("%s, yield %s, %s %s: ", p[1], p[2], p[3], s[i])
            vs_tcp = ratio(d, k "tcp" SUBSEP s[i], low)
            if (last_mark == "-") {
                if (low ? last_m > 1.03 : last_m < 1 / 1.03) miss[++nmiss] = where "dm/tcp" vs_tcp
                else near[++nnear] = where "dm/tcp" vs_tcp
            }
            vs_ucx = ratio(d, k "ucx" SUBSEP s[i], low)
            if (last_mark == "-") ucxmiss[++nucx] = where "dm/ucx" vs_ucx
            printf "%9s %s %s %s %s %s %s %s %8s\n", s[i], cell(d),
                   cell(k "tcp" SUBSEP s[i]), cell(k "ucx" SUBSEP s[i]),
                   cell(k "raw-busy" SUBSEP s[i]), cell(k "raw-block" SUBSEP s[i]),
                   vs_tcp, vs_ucx, raw
        }
    }
    printf "\n== targets: devmem more than 3 %% slower than tcp, outside the noise: %d cell(s)\n", nmiss
    for (i = 1; i <= nmiss; i++) print "  " miss[i]
    printf "== devmem slower than tcp outside the noise but within 3 %%: %d cell(s)\n", nnear
    for (i = 1; i <= nnear; i++) print "  " near[i]
    printf "== devmem slower than ucx outside the noise: %d cell(s)\n", nucx
    for (i = 1; i <= nucx; i++) print "  " ucxmiss[i]
}' "$1"
