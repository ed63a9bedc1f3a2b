# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair, for MPI runs that
# cross a real (virtual) link. Sourced by test/net/test_*.sh, after test/lib/testlib.sh.
#
#   netns_setup            create the namespaces and the link (skips the test, exit 77, where
#                          namespaces cannot be made: not root, no ip/unshare); removes it all
#                          again on exit, ^C or TERM
#   netns_add_link NAME ADDR_A ADDR_B
#                          a second veth pair NAME between the namespaces (IPv4 addresses /24
#                          in a subnet of their own, or IPv6 ones /64 and only those), removed
#                          with the namespaces
#   netns_shape ARGS...    tc qdisc on the veth in both namespaces, e.g. root tbf rate 1gbit ...
#   netns_unshape          remove that qdisc again
#   netns_mpirun SECONDS NA NB MPIRUN-ARGS...
#                          mpirun started in the first namespace (hostname $NETNS_HOST_A) with NA
#                          ranks there and NB on the second "host" (launched through
#                          netns-agent.sh in the second namespace, hostname $NETNS_HOST_B);
#                          Open MPI's out-of-band and the BTL restricted to the veth (the BTL
#                          to $NETNS_BTL_IF when set, e.g. two links),
#                          --bind-to $NETNS_BIND (default none: each "host" would bind its
#                          first rank to core 0, so two 1-rank hosts share one core and two
#                          spinning ranks take turns of a whole time slice, 4 ms per message),
#                          mpi_yield_when_idle $NETNS_YIELD (default 0 for btl/devmem, which
#                          yields by itself when its connections are quiet; 1 for other BTLs,
#                          since 2+2 ranks oversubscribe 2 cores), the test's BTL list and
#                          extra arguments
#   netns_loss PERMILLE [syn]
#                          drop PERMILLE of every 1000 packets that arrive on the veth, in
#                          both namespaces (syn: only connection requests, SYN without ACK),
#                          with nftables' numgen random (this kernel has no netem); replaces
#                          the rule of an earlier call; skips the test where nft is missing
#   netns_loss_clear       no more drops
#   netns_link_bytes [LINK] bytes sent on the veth (or LINK) so far, both directions together
#   netns_cleanup          what the exit trap does (idempotent)
#
# Names are unique per run (the shell's pid): namespaces devmem-<pid>-a/-b, link dmv<pid> (the
# same name at both ends, so that one *_if_include value fits both hosts), hostnames
# dmnode-<pid>-a/-b; a test may set NETNS_LINK, NETNS_HOST_A and NETNS_HOST_B before sourcing
# this file (the documentation's commands run on hosts A and B with eth1). Addresses: 198.51.100.1 and .2/24 (TEST-NET-2; the host's eth0 uses
# TEST-NET-1, 192.0.2.0/24). Traffic goes only between these two namespaces.

NETNS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NETNS_AGENT=$NETNS_DIR/netns-agent.sh
NETNS_A=devmem-$$-a
NETNS_B=devmem-$$-b
NETNS_LINK=${NETNS_LINK:-dmv$$}
NETNS_LINK=${NETNS_LINK:0:15}
NETNS_HOST_A=${NETNS_HOST_A:-dmnode-$$-a}
NETNS_HOST_B=${NETNS_HOST_B:-dmnode-$$-b}
NETNS_ADDR_A=198.51.100.1
NETNS_ADDR_B=198.51.100.2
NETNS_PREFIXLEN=24
_netns_created=()

netns_cleanup() {
    local ns pids
    for ns in "${_netns_created[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
        if [ -n "${pids// /}" ]; then
            echo "netns: stopping processes left in $ns: $pids"
            # shellcheck disable=SC2086
            kill -TERM $pids 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
                [ -n "${pids// /}" ] || break
                sleep 0.5
            done
            if [ -n "${pids// /}" ]; then
                echo "netns: killing processes left in $ns: $pids"
                # shellcheck disable=SC2086
                kill -KILL $pids 2>/dev/null
                sleep 0.5
            fi
        fi
    done
    for ns in "${_netns_created[@]}"; do
        ip netns del "$ns" 2>/dev/null || echo "netns: could not delete namespace $ns" >&2
    done
    _netns_created=()
}

_netns_exit() {
    local rc=$?
    netns_cleanup
    devmem_testlib_cleanup
    return "$rc"
}

_netns_setup_fail() {
    echo "netns: $*" >&2
    netns_cleanup
    exit 1
}

netns_setup() {
    local ns c
    [ "$(id -u)" -eq 0 ] || devmem_skip "network namespaces need root (uid is $(id -u))"
    for c in ip unshare timeout pgrep; do
        command -v "$c" >/dev/null 2>&1 || devmem_skip "'$c' not found (iproute2/util-linux/procps)"
    done
    trap _netns_exit EXIT

    for ns in "$NETNS_A" "$NETNS_B"; do
        if ! ip netns add "$ns" 2>"$DEVMEM_TEST_TMP/netns.err"; then
            netns_cleanup
            devmem_skip "cannot create a network namespace: $(head -n1 "$DEVMEM_TEST_TMP/netns.err")"
        fi
        _netns_created+=("$ns")
    done
    ip link add "$NETNS_LINK" netns "$NETNS_A" type veth peer name "$NETNS_LINK" netns "$NETNS_B" ||
        _netns_setup_fail "cannot create the veth pair $NETNS_LINK"
    ip -n "$NETNS_A" addr add "$NETNS_ADDR_A/$NETNS_PREFIXLEN" dev "$NETNS_LINK" &&
        ip -n "$NETNS_B" addr add "$NETNS_ADDR_B/$NETNS_PREFIXLEN" dev "$NETNS_LINK" ||
        _netns_setup_fail "cannot address the veth pair"
    for ns in "$NETNS_A" "$NETNS_B"; do
        ip -n "$ns" link set lo up && ip -n "$ns" link set "$NETNS_LINK" up ||
            _netns_setup_fail "cannot bring up the links in $ns"
    done
    # The agent finds a host's namespace here (mpirun passes its environment on to it).
    export DEVMEM_NETNS_HOSTS="$NETNS_HOST_A=$NETNS_A $NETNS_HOST_B=$NETNS_B"
    echo "netns: $NETNS_HOST_A ($NETNS_A, $NETNS_ADDR_A) <-> $NETNS_HOST_B ($NETNS_B," \
        "$NETNS_ADDR_B) over veth $NETNS_LINK"
}

netns_add_link() {
    local name=${1:0:15} a=$2 b=$3 ns len=24 opt=()
    case "$a" in
        *:*) len=64 opt=(nodad) ;; # IPv6: usable at once, no duplicate detection
    esac
    ip link add "$name" netns "$NETNS_A" type veth peer name "$name" netns "$NETNS_B" ||
        _netns_setup_fail "cannot create the veth pair $name"
    ip -n "$NETNS_A" addr add "$a/$len" dev "$name" "${opt[@]}" &&
        ip -n "$NETNS_B" addr add "$b/$len" dev "$name" "${opt[@]}" ||
        _netns_setup_fail "cannot address the veth pair $name"
    for ns in "$NETNS_A" "$NETNS_B"; do
        ip -n "$ns" link set "$name" up || _netns_setup_fail "cannot bring up $name in $ns"
    done
    echo "netns: second link $name: $a <-> $b"
}

netns_shape() {
    local ns
    for ns in "$NETNS_A" "$NETNS_B"; do
        tc -n "$ns" qdisc add dev "$NETNS_LINK" "$@" ||
            _netns_setup_fail "tc qdisc add dev $NETNS_LINK $* failed in $ns"
    done
    echo "netns: both ends of $NETNS_LINK: $(tc -n "$NETNS_A" qdisc show dev "$NETNS_LINK" | head -n1)"
}

netns_unshape() {
    local ns
    for ns in "$NETNS_A" "$NETNS_B"; do
        tc -n "$ns" qdisc del dev "$NETNS_LINK" root 2>/dev/null
    done
    echo "netns: $NETNS_LINK unshaped"
}

netns_loss() {
    local permille=$1 what=packets match= ns
    command -v nft >/dev/null 2>&1 || devmem_skip "'nft' not found (nftables): no packet loss"
    if [ "${2:-}" = syn ]; then
        what="connection requests (SYN)" match="tcp flags & (syn | ack) == syn"
    fi
    netns_loss_clear
    for ns in "$NETNS_A" "$NETNS_B"; do
        printf 'table inet devmem_loss {\n chain in {\n  type filter hook input priority 0; policy accept;\n  iifname "%s" %s numgen random mod 1000 < %s drop\n }\n}\n' \
            "$NETNS_LINK" "$match" "$permille" | ip netns exec "$ns" nft -f - ||
            _netns_setup_fail "cannot add the loss rule in $ns"
    done
    echo "netns: dropping $permille of 1000 $what arriving on $NETNS_LINK, both ends"
}

netns_loss_clear() {
    local ns
    for ns in "$NETNS_A" "$NETNS_B"; do
        ip netns exec "$ns" nft delete table inet devmem_loss 2>/dev/null
    done
    return 0
}

netns_link_bytes() { # [LINK]: the first veth by default
    local d=/sys/class/net/${1:-$NETNS_LINK}/statistics
    ip netns exec "$NETNS_A" sh -c "echo \$(( \$(cat $d/tx_bytes) + \$(cat $d/rx_bytes) ))"
}

# netns_expect_job_failed LABEL RC ELAPSED WHAT: a job that lost a peer (WHAT, e.g. "the data
# link went down") exited non-zero on its own within 30 s of it, not at its time limit.
netns_expect_job_failed() {
    local label=$1 rc=$2 elapsed=$3 what=$4
    if [ "$rc" -eq 0 ]; then
        devmem_step_fail "$label: mpirun exited 0 although $what"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        devmem_step_fail "$label: mpirun still running ${elapsed}s after $what (killed at the limit)"
    elif awk -v e="$elapsed" 'BEGIN { exit !(e < 30) }'; then
        devmem_step_ok "$label: mpirun exited $rc ${elapsed}s after $what"
    else
        devmem_step_fail "$label: mpirun took ${elapsed}s to exit after $what (want < 30 s)"
    fi
}

netns_mpirun() {
    local limit=$1 na=$2 nb=$3
    shift 3
    local btl_args=() yield=${NETNS_YIELD:-}
    if [ -n "$DEVMEM_BTL_NAME" ]; then
        btl_args=(--mca "btl_${DEVMEM_BTL_NAME}_if_include" "${NETNS_BTL_IF:-$NETNS_LINK}")
    fi
    if [ -z "$yield" ]; then
        yield=1
        [ "$DEVMEM_BTL_NAME" = devmem ] && yield=0
    fi
    timeout --kill-after=10 "$limit" \
        ip netns exec "$NETNS_A" unshare --uts -- "$NETNS_AGENT" --enter "$NETNS_HOST_A" \
        mpirun --oversubscribe -np $((na + nb)) --host "$NETNS_HOST_A:$na,$NETNS_HOST_B:$nb" \
        --mca plm_rsh_agent "$NETNS_AGENT" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include "$NETNS_LINK" \
        --bind-to "${NETNS_BIND:-none}" --mca mpi_yield_when_idle "$yield" \
        --mca orte_report_silent_errors 1 \
        "${DEVMEM_MCA_ARGS[@]}" "${btl_args[@]}" "$@"
}
