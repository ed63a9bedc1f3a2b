#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The table of bench/run.sh from its results.csv: per setting, yield and kind, the median of
# each transport per size with its spread ((max - min) / median over the repetitions), and the
# ratios devmem/tcp and devmem/raw TCP (busy).
#   lat:  one-way microseconds, lower is better; a ratio < 1 means devmem is faster
#   bw, bibw: MB/s (10^6 bytes/s); rate: messages/s; higher is better, a ratio > 1 means faster
#   netpipe: NetPIPE's own figures (one run): microseconds and MB/s
# Usage: bench/summarize.sh results.csv
set -u
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 results.csv" >&2; exit 2; }

awk -F, '
function median(key,    n, i, j, t, a) {
    n = cnt[key]
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    lo[key] = a[1]; hi[key] = a[n]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function cell(key,    m, s) {
    if (!(key in cnt)) return sprintf("%16s", "-")
    m = median(key)
    s = m > 0 ? 100 * (hi[key] - lo[key]) / m : 0
    return sprintf("%11.*f %3.0f%%", m >= 100 ? 0 : 2, m, s)
}
function ratio(a, b) {
    if (!(a in cnt) || !(b in cnt)) return sprintf("%8s", "-")
    return sprintf("%8.2f", median(a) / median(b))
}
NR == 1 { next }
{
    metric = ($4 == "lat" || $4 == "netpipe") ? $7 : ($4 == "rate" ? $9 : $8)
    if (metric == "") next
    grp = $1 SUBSEP $2 SUBSEP $4
    if (!(grp in seen)) { seen[grp] = 1; order[++ngrp] = grp }
    if (!((grp, $6) in sz)) { sz[grp, $6] = 1; sizes[grp] = sizes[grp] " " $6 }
    key = grp SUBSEP $3 SUBSEP $6
    val[key, ++cnt[key]] = metric
}
END {
    for (g = 1; g <= ngrp; g++) {
        split(order[g], p, SUBSEP)
        unit = p[3] == "lat" ? "usec, lower is better" : p[3] == "rate" ? "messages/s" : \
               p[3] == "netpipe" ? "usec, NetPIPE half round trip" : "MB/s"
        printf "\n== %s, yield %s: %s (%s)\n", p[1], p[2], p[3], unit
        printf "%9s %16s %16s %16s %16s %8s %8s\n", "size", "devmem", "tcp", "raw-busy",
               "raw-block", "dm/tcp", "dm/raw"
        n = split(substr(sizes[order[g]], 2), s, " ")
        for (i = 1; i <= n; i++) {
            k = order[g] SUBSEP
            printf "%9s %s %s %s %s %s %s\n", s[i], cell(k "devmem" SUBSEP s[i]),
                   cell(k "tcp" SUBSEP s[i]), cell(k "raw-busy" SUBSEP s[i]),
                   cell(k "raw-block" SUBSEP s[i]),
                   ratio(k "devmem" SUBSEP s[i], k "tcp" SUBSEP s[i]),
                   ratio(k "devmem" SUBSEP s[i], k "raw-busy" SUBSEP s[i])
        }
    }
}' "$1"
