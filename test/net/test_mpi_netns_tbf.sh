#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI across two namespaced "hosts" (see test_mpi_netns.sh) with the veth shaped by a token
# bucket (tc tbf, 1 Gbit/s) at both ends: packets queue and are released in bursts, as on a slow
# real link. Moderate sizes keep it short. Also checks that the shaper really carried the traffic.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_programs pingpong nonblocking unexpected collectives
netns_setup
command -v tc >/dev/null 2>&1 || devmem_skip "'tc' not found (iproute2)"
netns_shape root tbf rate 1gbit burst 128kb latency 20ms
limit=$DEVMEM_MPI_LIMIT

run() { # PROG NA NB PROG-ARGS...
    local prog=$1 na=$2 nb=$3
    shift 3
    devmem_run_checked "$prog $na+$nb ranks, tbf 1gbit${*:+ $*}" "$prog" $((na + nb)) "$limit" \
        netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/$prog" "$@"
}
run pingpong 1 1 -m 4M
run nonblocking 2 2 -n 50 -m 256k
run unexpected 1 1 -m 1M
run collectives 2 2 -m 1M

# tbf counts what it sent: it must have carried megabytes (the ping-pong alone moves > 8 MiB)
sent=$(tc -s -n "$NETNS_A" qdisc show dev "$NETNS_LINK" | awk '/Sent/ { print $2; exit }')
if [ -n "$sent" ] && [ "$sent" -gt $((8 << 20)) ]; then
    devmem_step_ok "tbf on $NETNS_HOST_A's end sent $((sent >> 20)) MiB"
else
    devmem_step_fail "tbf on $NETNS_HOST_A's end sent '${sent:-nothing}' bytes (want > 8 MiB)"
fi
devmem_finish
