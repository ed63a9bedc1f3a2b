#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Strangers on our listen ports during a running, validated job: each connection that sends
# garbage, a hello with the right magic but a wrong secret, or stays silent past the
# handshake timeout must be dropped and counted (conn_refused); one that closes before a
# byte looks like a peer's lost connect race and is counted apart (conn_races); and the job
# must finish with every byte correct. The job runs the device path through the emulated kernel, so the
# device-flow ports get the same visitors: nothing on them is read before a control
# connection names the connection; unnamed ones are dropped when they close (a race, as a lane
# its peer retired while connecting) or at the handshake timeout.
# Loopback only.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "strangers are a btl_devmem test (BTL is $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong

out=$(mktemp)
cleanup() { [ -n "${job:-}" ] && kill "$job" 2>/dev/null; rm -f "$out"; }
trap cleanup EXIT

# A long enough job: ping-pong over lo only, with the ports printed at verbosity 10.
devmem_mpirun 120 -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo \
    --mca btl_devmem_kernel emulated --mca btl_devmem_mode require \
    --mca btl_devmem_verbose 10 --mca btl_devmem_stats 1 --mca btl_devmem_handshake_timeout 1 \
    "$DEVMEM_MPI_BIN/pingpong" -m 4M -i 200 >"$out" 2>&1 &
job=$!

ports=()
for _ in $(seq 100); do
    mapfile -t ports < <(sed -n 's/.*btl:devmem: module [0-9]*: lo 127\.0\.0\.1\/8 port \([0-9]*\) .*/\1/p' "$out" | sort -u)
    [ ${#ports[@]} -ge 2 ] && break
    sleep 0.1
done
if [ ${#ports[@]} -lt 2 ]; then
    devmem_step_fail "found the 2 ranks' listen ports in the verbose output (got ${#ports[@]})"
    cat "$out"
    devmem_finish
fi
devmem_step_ok "listen ports of the 2 ranks: ${ports[*]}"
mapfile -t dports < <(sed -n 's/.*device path on lo: .* device flows on port \([0-9]*\)$/\1/p' "$out" | sort -u)
if [ ${#dports[@]} -eq 2 ]; then
    devmem_step_ok "device-flow ports of the 2 ranks: ${dports[*]}"
    ports+=("${dports[@]}")
else
    devmem_step_fail "found the 2 ranks' device-flow ports in the verbose output (got ${#dports[@]})"
fi

strangers=0
races=0 # connect-and-close: a lost connect race (control port) or a retired lane (device flow)
proto=$(sed -n 's/^#define MCA_BTL_DEVMEM_PROTO_VERSION \([0-9]*\)$/\1/p' \
    "$DEVMEM_SRC/opal/mca/btl/devmem/base/btl_devmem_hdr.h")
hello_wrong_secret() {
    # magic "BMDM", this version (MCA_BTL_DEVMEM_PROTO_VERSION), status REQUEST, name 1.0, a
    # secret nobody published, link 0, frag limit 64 KiB, header size 24: well formed except
    # for the secret
    printf "BMDM\\x$(printf %02x "$proto")"
    printf '\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xde\xad\xbe\xef\xde\xad\xbe\xef\x00\x00\x00\x00\x00\x00\x01\x00\x18\x00\x00\x00\x00\x00\x00\x00'
}
for port in "${ports[@]}"; do
    # 1: connect and close at once
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && races=$((races + 1))
    # 2: 4 KiB of garbage
    (exec 3<>"/dev/tcp/127.0.0.1/$port" && head -c 4096 /dev/urandom >&3) 2>/dev/null \
        && strangers=$((strangers + 1))
    # 3: the right magic and layout, a wrong secret
    (exec 3<>"/dev/tcp/127.0.0.1/$port" && hello_wrong_secret >&3 && sleep 0.2) 2>/dev/null \
        && strangers=$((strangers + 1))
    # 4: a header claiming a huge fragment, as if the handshake had happened
    (exec 3<>"/dev/tcp/127.0.0.1/$port" \
        && printf '\x01\x41\x00\x00\xff\xff\xff\xff%.0s' 1 2 3 4 5 >&3) 2>/dev/null \
        && strangers=$((strangers + 1))
    # 5: connect and say nothing until the handshake timeout (1 s) drops us
    (exec 3<>"/dev/tcp/127.0.0.1/$port" && sleep 2) 2>/dev/null &
    strangers=$((strangers + 1))
done
wait_silent=$(jobs -p | grep -v "^$job$")
[ -n "$wait_silent" ] && wait $wait_silent 2>/dev/null
devmem_step_ok "$strangers stranger connections made"

if wait "$job"; then
    devmem_step_ok "the job finished with exit status 0"
else
    devmem_step_fail "the job failed while strangers connected"
fi
job=
devmem_expect_line "$out" '^pingpong: OK np=2' "every byte of the ping-pong validated"
refused=$(devmem_stat_sum "$out" conn_refused)
if [ "${refused:-0}" -eq "$strangers" ]; then
    devmem_step_ok "conn_refused=$refused: every stranger was dropped and counted"
else
    devmem_step_fail "conn_refused=${refused:-none}, expected $strangers"
    grep -E 'dropped|stats' "$out"
fi
# the job's own connect races may add to it
raced=$(devmem_stat_sum "$out" conn_races)
if [ "${raced:-0}" -ge "$races" ]; then
    devmem_step_ok "conn_races=$raced: the $races connect-and-close ones were counted as races"
else
    devmem_step_fail "conn_races=${raced:-none}, expected at least $races"
fi
devmem_expect_line "$out" 'dropped a connection .*wrong job secret' "the wrong secret is named in the log"
devmem_expect_line "$out" 'dropped a connection .*no hello before the handshake timeout' \
    "the silent stranger timed out"
devmem_expect_line "$out" 'dropped a device-flow connection .*no control connection named it' \
    "strangers on the device-flow ports were dropped unread"
devmem_expect_line "$out" 'dropped a device-flow connection .*closed by its peer before' \
    "a device-flow connection closed unnamed was dropped at once"
devmem_expect_device_path "$out" 2 1
devmem_finish
