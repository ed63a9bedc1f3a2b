#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PNG plots of bench/run.sh results with gnuplot: for every setting, yield and kind, the
# median of each transport against the message size (log-log); windowed bandwidth also as a
# message rate (<group>-bw-msgrate.png).
# Usage: bench/plot.sh results.csv OUTDIR
set -u
[ $# -eq 2 ] && [ -f "$1" ] || { echo "usage: $0 results.csv OUTDIR" >&2; exit 2; }
csv=$1 out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one data file per group and transport: size median
awk -F, -v dir="$tmp" '
NR == 1 { next }
{
    metric = ($4 == "lat" || $4 == "netpipe") ? $7 : ($4 == "rate" ? $9 : $8)
    if (metric == "") next
    key = $1 "-y" $2 "-" $4 "\t" $3 "\t" $6
    v[key, ++n[key]] = metric
    if ($4 == "bw" && $9 != "") {  # the same runs as a message rate: small sizes read better
        key = $1 "-y" $2 "-bw-msgrate\t" $3 "\t" $6
        v[key, ++n[key]] = $9
    }
}
END {
    for (key in n) {
        m = n[key]
        for (i = 1; i <= m; i++) a[i] = v[key, i]
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        split(key, k, "\t")
        print k[3], med > (dir "/" k[1] "@" k[2] ".dat")
    }
}' "$csv"

for grp in $(ls "$tmp" | sed 's/@.*//' | sort -u); do
    case "$grp" in
        *-lat | *-netpipe) ylabel="one-way latency (us)" ;;
        *-rate | *-msgrate) ylabel="messages/s" ;;
        *) ylabel="bandwidth (MB/s)" ;;
    esac
    plots=()
    for f in "$tmp/$grp"@*.dat; do
        sort -n -o "$f" "$f"
        t=${f##*@}
        plots+=("'$f' using 1:2 with linespoints title '${t%.dat}'")
    done
    gnuplot <<GP
set terminal pngcairo size 900,600
set output '$out/$grp.png'
set title '$grp'
set logscale x 2
set format x '%.0b%B'
set logscale y
set xlabel 'message size (bytes)'
set ylabel '$ylabel'
set key left top
set grid
plot $(IFS=,; echo "${plots[*]}")
GP
done
