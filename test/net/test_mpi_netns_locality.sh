#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# NIC locality across two namespaced "hosts" joined by two veth pairs (see netns.sh), through
# the emulated kernel. A made-up topology (test/unit/data/topo-two-sockets.xml, read through
# btl_devmem_testing topology=) puts the second link under the GPU's PCIe switch and the first
# on the other socket: with btl_devmem_near at that GPU only the second link gets a device path, and
# the verbose output says why the first did not, while both still carry validated MPI
# traffic. Loopback, in the list too, keeps its device path (it serves other peers than the
# links). btl_devmem_mode require must accept that (the far link was no candidate). With
# btl_devmem_near none, every interface gets one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "NIC locality is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
netns_setup
near=dmw$$
near=${near:0:15}
far=$NETNS_LINK
# the second link in a subnet of its own (TEST-NET-1, inside the namespaces only)
netns_add_link "$near" 192.0.2.101 192.0.2.102
# loopback too: it serves only the peers of its own host, so it is never the farther choice
NETNS_BTL_IF=lo,$far,$near

topo=$DEVMEM_TEST_TMP/topology.xml
sed -e "s/@NEAR@/$near/" -e "s/@FAR@/$far/" "$DEVMEM_SRC/test/unit/data/topo-two-sockets.xml" >"$topo"
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_stats 1
    --mca btl_devmem_testing "topology=$topo" --mca btl_devmem_verbose 1)
limit=$DEVMEM_MPI_LIMIT

run() { # LABEL NEAR MODE
    devmem_run_checked "pingpong 1+1 ranks, two links, btl_devmem_near $2, mode $3" pingpong 2 \
        "$limit" netns_mpirun "$limit" 1 1 --mca btl_devmem_near "$2" --mca btl_devmem_mode "$3" \
        "$DEVMEM_MPI_BIN/pingpong" -m 16M
}

if run near 0000:03:00.0 require; then
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devmem_modules -eq 2 # lo and the near link
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" get_dmabuf -gt 0
    done
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    devmem_expect_line "$DEVMEM_LAST_OUT" "device path on $near: .*path to PCI device 0000:03:00.0 .*: switch" \
        "the near link got the device path"
    devmem_expect_line "$DEVMEM_LAST_OUT" "device path off on $far: $near is nearer to PCI device 0000:03:00.0 .*\(path: switch\) than $far \(path: system\)" \
        "the far link says why it did not"
fi
if run none none auto; then
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devmem_modules -eq 3
    done
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
fi
# a device the topology does not have: said, and every link is tried
if run absent 0000:9a:00.0 auto; then
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 devmem_modules -eq 3
    devmem_expect_line "$DEVMEM_LAST_OUT" "NIC locality unknown.*0000:9a:00.0" \
        "an absent device is named"
fi
devmem_finish
