#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One list of counters (base/btl_devmem_counters.h) makes the struct, the stats line and the MPI_T
# variables; doc/user-guide.md's table of keys (the one headed "| key | meaning |") is prose and
# follows it by hand: this says where it does not, key by key and in order.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

list=$(sed -n 's/^ *X(\([a-z_]*\), \(COUNTER\|HIGHWATER\|DERIVED\),.*/\1/p' \
    "$DEVMEM_SRC/opal/mca/btl/devmem/base/btl_devmem_counters.h")
table=$(awk '/^\| key \| meaning \|/ { on = 1; next } on && !/^\|/ { exit }
    on && match($0, /^\| `[a-z_]+`/) { print substr($0, 4, RLENGTH - 4) }' "$DEVMEM_SRC/doc/user-guide.md")
n=$(wc -w <<<"$list")
if [ "$n" -lt 20 ]; then
    devmem_step_fail "only $n keys read from btl_devmem_counters.h: has the list's format changed?"
elif [ "$list" = "$table" ]; then
    devmem_step_ok "doc/user-guide.md's table lists the $n keys of btl_devmem_counters.h, in order"
else
    diff <(echo "$list") <(echo "$table") | sed 's/^/  /'
    devmem_step_fail "doc/user-guide.md's table of stats keys differs from btl_devmem_counters.h (<: the list, >: the guide)"
fi
devmem_finish
