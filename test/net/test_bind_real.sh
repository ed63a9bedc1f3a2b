#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The real kernel on devices without devmem support: bind-rx and bind-tx must fail with
# EOPNOTSUPP and report the kernel's extack (its words, or the attribute it flagged), and
# devmem-probe must say plainly that devmem is unsupported there, in the same words.
# Runs on lo here, and on lo and a veth pair inside a network namespace made for this run
# (198.51.100.0/24), which is removed on every exit, failures included.
# Exit 0 pass, 1 fail, 77 skip (not root, no ip, no libmnl, kernel without bind-rx).
set -u

# shellcheck source=../lib/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/env.sh"

prog=$DEVMEM_BUILD/test/unit/test_netlink_kernel
probe=$DEVMEM_PREFIX/bin/devmem-probe
[ -x "$probe" ] || probe=$DEVMEM_BUILD/tools/devmem-probe

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root to create a network namespace (bind-rx needs CAP_NET_ADMIN too)"
    exit 77
fi
if ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: no ip(8) to create the namespace and the veth pair"
    exit 77
fi
for p in "$prog" "$probe"; do
    if [ ! -x "$p" ]; then
        echo "FAIL: $p is not built (make -C test/unit check; make -C tools)"
        exit 1
    fi
done

ns=dmbind-$$
va=dmba$$
vb=dmbb$$
va=${va:0:15}
vb=${vb:0:15}

cleanup() {
    ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
check() {
    local what=$1
    shift
    if "$@"; then
        echo "ok  : $what"
    else
        echo "FAIL: $what"
        failures=$((failures + 1))
    fi
}

# The kernel's words for one call, as test_netlink_kernel printed them.
said() { # output op ifname
    printf '%s\n' "$1" | sed -n "s/^kernel-said: $2 $3: errno [0-9]*: //p" | head -n 1
}

# run_prog NS IFNAME: the C checks (EOPNOTSUPP + extack, EINVAL, ENODEV, EPERM) on one device.
last_out=
run_prog() {
    local where=$1 ifname=$2 rc
    if [ -n "$where" ]; then
        last_out=$(ip netns exec "$where" "$prog" -i "$ifname" 2>&1)
    else
        last_out=$("$prog" -i "$ifname" 2>&1)
    fi
    rc=$?
    printf '%s\n' "$last_out" | sed 's/^/    /'
    if [ "$rc" -eq 77 ]; then
        echo "SKIP: $(printf '%s\n' "$last_out" | sed -n 's/^SKIP: //p' | tail -n 1)"
        exit 77
    fi
    check "test_netlink_kernel -i $ifname${where:+ (in $ns)} passes" [ "$rc" -eq 0 ]
}

# EOPNOTSUPP in words, then the kernel's extack: its message, or the attribute it flagged.
extack_re='Operation not supported \((kernel: .+|kernel gave no message; it flagged .+)\)'

# probe_matches NS IFNAME PROG_OUTPUT: devmem-probe says "unsupported" in the kernel's words.
probe_matches() {
    local where=$1 ifname=$2 prog_out=$3 out rc rx tx
    if [ -n "$where" ]; then
        out=$(ip netns exec "$where" "$probe" -i "$ifname" 2>&1)
    else
        out=$("$probe" -i "$ifname" 2>&1)
    fi
    rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    check "devmem-probe -i $ifname exits 0" [ "$rc" -eq 0 ]
    check "devmem-probe -i $ifname: verdict 'devmem unsupported'" \
        grep -q "verdict: *$ifname: devmem unsupported: RX: Operation not supported" <<<"$out"
    check "devmem-probe -i $ifname: says it passed a memfd instead of a dmabuf" \
        grep -q "memfd standing in for a dmabuf" <<<"$out"
    rx=$(said "$prog_out" bind-rx "$ifname")
    tx=$(said "$prog_out" bind-tx "$ifname")
    check "bind-rx on $ifname: errno text and kernel extack reported ('$rx')" \
        grep -Eq "$extack_re" <<<"$rx"
    check "devmem-probe -i $ifname reports bind-rx in the same words" \
        grep -qF "bind-rx:       refused: $rx" <<<"$out"
    if [ -n "$tx" ]; then
        check "bind-tx on $ifname: errno text and kernel extack reported ('$tx')" \
            grep -Eq "$extack_re" <<<"$tx"
        check "devmem-probe -i $ifname reports bind-tx in the same words" \
            grep -qF "bind-tx:       refused: $tx" <<<"$out"
    fi
}

echo "== lo in this namespace"
run_prog "" lo
probe_matches "" lo "$last_out"

echo "== namespace $ns with veth $va <-> $vb"
if ! ip netns add "$ns"; then
    echo "SKIP: cannot create a network namespace here"
    exit 77
fi
check "veth pair created" ip -n "$ns" link add "$va" type veth peer name "$vb"
check "addresses 198.51.100.1/24 and .2/24" \
    bash -c "ip -n '$ns' addr add 198.51.100.1/24 dev '$va' &&
             ip -n '$ns' addr add 198.51.100.2/24 dev '$vb'"
check "links up" bash -c "ip -n '$ns' link set lo up && ip -n '$ns' link set '$va' up &&
                          ip -n '$ns' link set '$vb' up"

run_prog "$ns" "$va"
probe_matches "$ns" "$va" "$last_out"
run_prog "$ns" lo

# Every interface of the namespace: one verdict each, all "unsupported".
out=$(ip netns exec "$ns" "$probe" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/    /'
check "devmem-probe over the whole namespace exits 0" [ "$rc" -eq 0 ]
n=$(grep -c "^  verdict: .*: devmem unsupported: " <<<"$out")
check "one 'devmem unsupported' verdict for each of lo, $va, $vb ($n)" [ "$n" -eq 3 ]

"$probe" --help >/dev/null 2>&1
check "devmem-probe --help exits 0" [ $? -eq 0 ]
"$probe" -i no-such-if0 >/dev/null 2>&1
check "devmem-probe -i on a missing interface exits 2" [ $? -eq 2 ]

cleanup
check "namespace $ns removed" bash -c "! ip netns list | grep -qw '$ns'"

if [ "$failures" -ne 0 ]; then
    echo "FAIL: $failures check(s) failed"
    exit 1
fi
echo "PASS"
exit 0
