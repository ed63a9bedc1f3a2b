#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI-4 sessions (test/mpi/sessions.c) across two namespaced "hosts" (see test_mpi_netns.sh):
# communicators from the mpi://WORLD process set, two sessions at once, a third after both
# ended, with checked data, at 1+1 and 2+2 ranks; the host path, then the emulated device
# path (btl_devmem_mode require: tokens balanced, no protocol error). Skips where the MPI has
# no sessions (Open MPI 4.1).
# The program holds PMIx open throughout (-P), so that MPI and this component shut down and
# start again but PMIx does not: when PMIx restarts too, Open MPI 5.0.7 hangs now and then
# (1 run in 10-20 on two hosts) in the fence of the restarted instance, one rank still in
# MPI_Session_init while the others wait in PMIx_Group_construct, whatever the BTL
# (openpmix/openpmix#3931, open-mpi/ompi#14125; see sessions.c). btl/tcp cannot start again
# under a held PMIx (it dials its first life's ports): with it a session 0 keeps MPI up (-k).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_sessions
netns_setup
limit=$DEVMEM_MPI_LIMIT

hold=-P
[ "$DEVMEM_BTL_NAME" = devmem ] || hold=-k

run() { # DMABUF NA NB PROG-ARGS...; DMABUF -: host path, no device-path checks
    local dmabuf=$1 na=$2 nb=$3
    shift 3
    devmem_run_checked "sessions $na+$nb ranks $hold${*:+ $*}${tag:+, $tag}" sessions \
        $((na + nb)) "$limit" netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/sessions" \
        "$hold" "$@" || return 1
    [ "$dmabuf" = - ] && return 0
    devmem_expect_device_path "$DEVMEM_LAST_OUT" $((na + nb)) "$dmabuf"
    # a stats line each time the component closes: two lives in every rank
    local lives
    lives=$(grep -ac 'btl_devmem stats: rank=' "$DEVMEM_LAST_OUT")
    if [ "$lives" -ge $((2 * (na + nb))) ]; then
        devmem_step_ok "$lives stats lines for $((na + nb)) ranks: the component closed and" \
            "opened again in each"
    else
        devmem_step_fail "$lives stats lines for $((na + nb)) ranks (want $((2 * (na + nb))))"
    fi
}
before=$(netns_link_bytes)
run - 1 1 -m 4M
run - 2 2 -m 2M
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
        --mca btl_devmem_stats 1)
    tag="emulated device path" run 1 1 1 -m 4M
    tag="emulated device path" run 1 2 2 -m 2M
fi
after=$(netns_link_bytes)
crossed=$((after - before))
if [ "$crossed" -gt $((16 << 20)) ]; then
    devmem_step_ok "$((crossed >> 20)) MiB crossed the veth"
else
    devmem_step_fail "only $crossed bytes crossed the veth (want > 16 MiB): did the BTL use it?"
fi
devmem_finish
