#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The component's layers (doc/design.md, "Layers"), bottom first: a file may call functions of
# its own layer and of the layers below. A call to a layer above is a failure unless it is one
# of the known ones listed here (none: what a lower layer tells a higher one goes through
# callbacks the higher one registered); a listed one that is gone fails too, so that the list
# only shrinks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"

dir=$DEVMEM_SRC/opal/mca/btl/devmem
# layer of each file: btl_devmem_NAME.c -> NAME, and a header's static inline functions ->
# NAME.h (the counters of stats.h and the activity reports of progress.h are what lower layers
# tell the policy above without calling it)
layers='
1 wire: hdr.h rxframe rxframe.h frag frag.h fault tsan.h btl_devmem.h ompi.h stats.h progress.h
2 sockets: if if.h sock watch watch.h waitway near helper
3 device memory: dev dev_watch
4 connections: conn endpoint endpoint.h proc
5 get and put: rdma rdma.h push reg
6 device flows: devflow devflow_int devflow_int.h devflow_tx devflow_rx devflow_gather devflow_stripe devflow_want rxthread
7 module and component: module component params progress liveness stats
'
# caller>callee pairs of files that still call up (none now; a pair added here must say why)
known='
'

# FILE FUNCTION for every function a file defines (headers: static inline ones)
defs() {
    local f
    for f in "$dir"/btl_devmem_*.c "$dir"/btl_devmem_*.h; do
        awk -v f="$(basename "$f" | sed 's/^btl_devmem_//; s/\.c$//')" -v hdr="${f##*.}" '
            /^[A-Za-z_]/ && !/;[ \t]*$/ && match($0, /mca_btl_devmem_[a-z0-9_]+\(/) {
                if (hdr == "h" && $0 !~ /static inline/) next
                print f, substr($0, RSTART, RLENGTH - 1) }' "$f"
    done
}
# CALLER CALLEE_FUNCTION for every call in a .c file
calls() {
    local f
    for f in "$dir"/btl_devmem_*.c; do
        grep -o 'mca_btl_devmem_[a-z0-9_]*(' "$f" | sed 's/($//' |
            sed "s/^/$(basename "$f" .c | sed 's/^btl_devmem_//') /"
    done
}
up=$(awk -v layers="$layers" '
    BEGIN {
        n = split(layers, l, "\n")
        for (i = 1; i <= n; i++) {
            if (l[i] == "") continue
            m = split(l[i], w, " ")
            for (j = 2; j <= m; j++) if (w[j] !~ /:$/) layer[w[j]] = w[1]
        }
    }
    FNR == NR { owner[$2] = $1; next }
    ($2 in owner) && owner[$2] != $1 {
        c = $1; d = owner[$2]
        if (!(c in layer) || !(d in layer)) { print "unplaced " c ">" d; next }
        if (layer[d] > layer[c]) print c ">" d
    }' <(defs) <(calls) | sort -u)

unplaced=$(echo "$up" | sed -n 's/^unplaced //p')
if [ -n "$unplaced" ]; then
    devmem_step_fail "files with no layer (add them to this test and doc/design.md): $unplaced"
fi
new=$(comm -23 <(echo "$up" | grep -v '^unplaced' | grep .) <(echo "$known" | grep . | sort))
gone=$(comm -13 <(echo "$up" | grep -v '^unplaced' | grep .) <(echo "$known" | grep . | sort))
if [ -n "$new" ]; then
    devmem_step_fail "calls to a layer above, new: $(echo $new) (register a callback instead)"
else
    devmem_step_ok "no new call to a layer above"
fi
if [ -n "$gone" ]; then
    devmem_step_fail "calls up that are gone: $(echo $gone) (take them off this test's list)"
else
    devmem_step_ok "$(echo "$known" | grep -c .) known calls up (doc/design.md, Layers)"
fi
devmem_finish
