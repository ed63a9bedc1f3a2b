#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# devmem-helperd end to end: the helper as root, ranks and hostile clients as other users.
#   1. hostile clients against a helper on the emulated kernel (test/unit/helperd_clients):
#      garbage, wrong versions, oversized and truncated messages, wrong descriptors, a
#      socket that is not the client's listening port, a pipe for a dmabuf, another
#      connection's binding id, limits, TX sharing across users, a connection flood; each
#      refused with its reason while a good client keeps its binding
#   2. a uid outside allow-group is refused at hello, and allow-tx no refuses TX bindings
#      (a second helper, allow-group root); and steering rules no binding of this helper made
#      (DEVMEM_HELPERD_EMUL_STRAYS: one into a queue, one into an RSS context) keep their
#      queues out of every binding, each named in the log with the command that deletes it
#   hostile local users (test/unit/helperd_attacks as nobody, beside a user made for the run):
#      lingering TCP sockets handed over past the descriptor limit, behind a malformed message
#      and with their own peer; 24,000 passed descriptors, also against a helper with 400;
#      connections past the cap carrying descriptors; 12 bindings released at once; rules for
#      ports where another user's connection lives; an epoll file with every watch it can
#      have; a log flood; more queues than a share; FUSE files whose flush never ends. After
#      each: the other user served within 1 s, the helper's descriptors, threads and memory
#      back where they were
#   3. a validated 2-rank MPI run as user nobody with btl_devmem_kernel emulated and
#      btl_devmem_mode require, every binding and rule through the helper, tokens balanced;
#      each rank's pool on 4 RX queues with an RSS context over them; and with a policy of
#      max-queues 1, the ranks' fallback to one queue
#   4. the ranks killed with SIGKILL mid-run: within seconds the helper holds nothing, RSS
#      contexts included
#      (and devmem-probe, as nobody, reports the helper and the policy it applies to nobody)
#   5. the real kernel's refusal of lo (EOPNOTSUPP, its extack) relayed to a rank and printed
#      in the require-mode message; and of a veth, in a namespace made for this run; a socket
#      from that namespace refused by the helper outside it
#   6. rx-buf-len: bad values stop the helper naming the line; on a veth, whose driver has no
#      ring parameters, the helper says once why it cannot set it, serves on, and puts back
#      nothing when it stops
#   7. the helper killed and restarted under a running job: the job goes on (every byte
#      checked), each rank says once that its binding is gone and gives back every token; a
#      job started after the restart binds again
# Exit 0 pass, 1 fail, 77 skip (not root, no runuser, no nobody/nogroup).
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the helper serves btl_devmem (btl: $DEVMEM_TEST_BTL)"
[ "$(id -u)" -eq 0 ] || devmem_skip "needs root to run the helper and ranks as another user"
command -v runuser >/dev/null 2>&1 || devmem_skip "no runuser(1) to run ranks as nobody"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
    devmem_skip "no user nobody or group nogroup"
devmem_require_programs pingpong soak

helperd=$DEVMEM_PREFIX/sbin/devmem-helperd
clients=$DEVMEM_BUILD/test/unit/helperd_clients
for p in "$helperd" "$clients"; do
    [ -x "$p" ] || { echo "FAIL: $p is not built (make install; make -C test/unit check)"; exit 1; }
done

# Everything here must be reachable by nobody: the sockets, a home and a TMPDIR for mpirun.
T=$DEVMEM_TEST_TMP
chmod 755 "$T"
mkdir -p "$T/home"
chown nobody "$T/home"
ns=dmhelper-$$
helper_pids=()
cleanup() {
    local p
    for p in "${helper_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    pkill -KILL -u nobody -f "$DEVMEM_MPI_BIN/soak" 2>/dev/null
    pkill -KILL -f "helperd_attacks $T/attack.sock" 2>/dev/null
    pkill -TERM -f "fuse_stall $T/fuse" 2>/dev/null
    umount -l "$T/fuse" 2>/dev/null
    userdel "dmvictim$$" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    devmem_testlib_cleanup
}
trap cleanup EXIT

# start_helper NAME KERNEL POLICY-LINES...: a helper in the foreground, its log in $T/NAME.log;
# waits until it answers. $NETNS_EXEC may put it in a namespace.
start_helper() {
    local name=$1 kernel=$2
    shift 2
    printf '%s\n' "$@" >"$T/$name.conf"
    ${NETNS_EXEC:-} "$helperd" --foreground --verbose --kernel "$kernel" --config "$T/$name.conf" \
        --socket "$T/$name.sock" >"$T/$name.log" 2>&1 &
    helper_pids+=($!)
    for _ in $(seq 50); do
        "$helperd" --status --socket "$T/$name.sock" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    devmem_step_fail "helper $name did not start:"
    cat "$T/$name.log"
    return 1
}

status_of() { "$helperd" --status --socket "$T/$1.sock" 2>&1; }

# wait_status NAME GLOB TRIES: poll helper NAME's status every 0.1 s until it matches GLOB;
# the last status in $st; status 1 when it never did.
wait_status() {
    local _
    for _ in $(seq "$3"); do
        st=$(status_of "$1")
        # shellcheck disable=SC2053 # GLOB is a pattern
        [[ "$st" == $2 ]] && return 0
        sleep 0.1
    done
    return 1
}

# as_nobody CMD...: the command as nobody, with what mpirun needs and the component path.
as_nobody() {
    runuser -u nobody -- env HOME="$T/home" TMPDIR="$T/home" PATH="$PATH" \
        OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path" \
        OMPI_MCA_plm_rsh_agent=false "$@"
}

# ---- 1, 2: hostile clients
if start_helper hostile emulated "interface lo queues 1-4" "allow-group root nogroup" \
    "socket-group nogroup" "max-bindings 3" "max-rules 3" "max-bytes 64M" \
    "max-clients-per-user 20"; then
    echo "---- helperd_clients $T/hostile.sock"
    if "$clients" "$T/hostile.sock"; then
        devmem_step_ok "hostile clients: every one refused with its reason, the good client served"
    else
        devmem_step_fail "hostile clients (see the FAIL lines above; helper log follows)"
        cat "$T/hostile.log"
    fi
fi
if start_helper closed emulated "interface lo queues 1-4" "allow-group root" \
    "socket-group nogroup" "allow-tx no"; then
    if "$clients" "$T/closed.sock" refused-user; then
        devmem_step_ok "a uid outside allow-group is refused at hello; allow-tx no refuses TX"
    else
        devmem_step_fail "a uid outside allow-group"
    fi
fi

# ---- rules that no binding of this helper made (a killed helper's, an administrator's): the
# queues they steer to, directly or through an RSS context, are left out of every binding
if DEVMEM_HELPERD_EMUL_STRAYS="lo:3 lo:ctx:5-6" start_helper strays emulated \
    "interface lo queues 1-8" "allow-group root"; then
    if "$clients" "$T/strays.sock" strays; then
        devmem_step_ok "stray rules: bindings get queues 1-2, 4 and 7-8, never 3 or 5-6"
    else
        devmem_step_fail "stray rules (helper log follows)"
        cat "$T/strays.log"
    fi
    devmem_expect_line "$T/strays.log" "lo: rule [0-9]+ steers to queue 3, and no binding of this helper made it.*ethtool -N lo delete" \
        "the helper names the stray rule into queue 3 and how to delete it"
    devmem_expect_line "$T/strays.log" "lo: rule [0-9]+ steers into RSS context [0-9]+ \(queues 5-6\), and no binding of this helper made it.*ethtool -N lo delete" \
        "the helper names the stray rule into the RSS context, its queues, and how to delete it"
fi

# ---- a node's ranks share the queues: each gets its share of the range, none takes all
if start_helper share emulated "interface lo queues 1-4" "allow-group root" "max-bindings 8" \
    "max-rules 8"; then
    if "$clients" "$T/share.sock" share; then
        devmem_step_ok "sharing: 4 sharers get a queue each, 2 get 2 each, the fifth hears the holders"
    else
        devmem_step_fail "sharing (helper log follows)"
        cat "$T/share.log"
    fi
fi

# ---- hostile local users: each attack (test/unit/helperd_attacks) runs as nobody, and a user
# made for this run is served beside it; after each the helper serves that user within 1 s and
# its descriptors, threads and memory are back to where they were
victim=dmvictim$$
if useradd --no-create-home --no-user-group --gid nogroup --shell /usr/sbin/nologin "$victim" &&
    start_helper attack emulated "interface lo queues 1-16" "allow-group nogroup" \
        "socket-group nogroup" "max-bindings 16" "max-rules 16"; then
    hpid=${helper_pids[-1]}
    helper_now() {
        fds=$(find "/proc/$hpid/fd" -mindepth 1 | wc -l)
        threads=$(awk '/^Threads:/ { print $2 }' "/proc/$hpid/status")
        rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$hpid/status")
    }
    # served NAME: the made user's status round trip takes under 1 s
    served() {
        local t0=$EPOCHREALTIME ms
        if ! runuser -u "$victim" -- timeout 5 "$helperd" --status --socket "$T/attack.sock" \
            >"$T/victim-status.out" 2>&1; then
            devmem_step_fail "$1: the other user is not served: $(head -c 300 "$T/victim-status.out")"
            return 1
        fi
        ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
        [ "$ms" -lt 1000 ] && devmem_step_ok "$1: the other user is served in $ms ms" ||
            devmem_step_fail "$1: the other user waited $ms ms for an answer"
    }
    # baseline NAME: descriptors and threads back to where they were within 5 s, memory
    # within 8 MiB
    baseline() {
        local _
        for _ in $(seq 50); do
            helper_now
            [ "$fds" -le "$base_fds" ] && [ "$threads" -le "$base_threads" ] && break
            sleep 0.1
        done
        [ "$fds" -le "$base_fds" ] && [ "$threads" -le "$base_threads" ] &&
            [ "$rss" -le $((base_rss + 8192)) ] &&
            devmem_step_ok "$1: the helper is back to $fds descriptors, $threads thread(s), $rss kB (before: $base_fds, $base_threads, $base_rss kB)" ||
            devmem_step_fail "$1: the helper holds $fds descriptors, $threads thread(s), $rss kB (before: $base_fds, $base_threads, $base_rss kB)"
    }
    attack() { # attack NAME ARGS...: run it as nobody; its output in $T/attack-NAME.out
        local name=$1
        shift
        as_nobody timeout 60 "$DEVMEM_BUILD/test/unit/helperd_attacks" "$T/attack.sock" "$@" \
            >"$T/attack-$name.out" 2>&1
    }
    status_of attack >/dev/null
    helper_now
    base_fds=$fds base_threads=$threads base_rss=$rss

    # 1. descriptors whose close waits (a lingering TCP socket its peer never reads): with
    # more than a message takes, behind a malformed message, with their own peer
    attack freeze freeze &
    apid=$!
    for _ in $(seq 100); do grep -q '^sent' "$T/attack-freeze.out" 2>/dev/null && break; sleep 0.1; done
    sleep 0.5 # the helper is closing them now
    served "lingering sockets being closed"
    if wait "$apid"; then
        devmem_step_ok "lingering sockets passed in every way a message allows"
    else
        devmem_step_fail "the freeze attack:"
        cat "$T/attack-freeze.out"
    fi
    baseline "after the lingering sockets"
    st=$(status_of attack)
    if [[ "$st" =~ closing:\ 0\ queued,\ 0\ in\ progress,\ 0\ thread\(s\),\ 0\ user\(s\)\ held\ back\;\ [0-9]+\ closed,\ ([0-9]+)\ interrupted ]] &&
        [ "${BASH_REMATCH[1]}" -gt 0 ]; then
        devmem_step_ok "the lingering closes were interrupted, not waited for: $(grep '^closing:' <<<"$st")"
    else
        devmem_step_fail "the helper's closes: $(grep '^closing:' <<<"$st")"
    fi
    devmem_expect_line "$T/attack.log" "uid 65534: .*more than 2 descriptors" \
        "a message with 10 descriptors is refused, naming the limit"

    # 2. descriptors by the tens of thousands, connections past the cap carrying some, and 12
    # bindings released at once
    attack fd-flood fd-flood || { devmem_step_fail "the fd flood:"; cat "$T/attack-fd-flood.out"; }
    served "after 24,000 passed descriptors"
    baseline "after 24,000 passed descriptors"
    # the same against a helper with 400 descriptors (RLIMIT_NOFILE), which reads no message
    # without room for all a message can carry: it must still serve, and never run out
    if NETNS_EXEC="prlimit --nofile=400:400" start_helper tight emulated \
        "interface lo queues 1-16" "allow-group nogroup" "socket-group nogroup"; then
        as_nobody timeout 60 "$DEVMEM_BUILD/test/unit/helperd_attacks" "$T/tight.sock" fd-flood \
            >"$T/attack-tight.out" 2>&1
        if runuser -u "$victim" -- timeout 5 "$helperd" --status --socket "$T/tight.sock" \
            >"$T/tight-status.out" 2>&1 && ! grep -q "Too many open files" "$T/tight.log"; then
            devmem_step_ok "a helper with 400 descriptors: the flood ran out none ($(grep -c 'more than 2 descriptors' "$T/tight.log") refusals logged), the other user served"
        else
            devmem_step_fail "a helper with 400 descriptors after the flood: $(tail -n 3 "$T/tight.log")"
        fi
        kill -TERM "${helper_pids[-1]}"
    fi
    if attack many many-bindings; then
        devmem_step_ok "12 bindings of one connection released at once"
    else
        devmem_step_fail "12 bindings:"
        cat "$T/attack-many.out"
    fi
    baseline "after 12 bindings released at once (their listening sockets closed)"

    # 3. rules for ports another user's connections use (listener gone, SO_REUSEADDR trick)
    vport=$((62000 + $$ % 1000))
    coproc VICTIM { runuser -u "$victim" -- timeout 60 "$DEVMEM_BUILD/test/unit/helperd_attacks" \
        "$T/attack.sock" victim "$vport" 2>&1; }
    read -r -t 10 vline <&"${VICTIM[0]}"
    if [ "${vline:-}" = ready ]; then
        if attack steal steal "$vport"; then
            devmem_step_ok "no rule for another user's port; user-share holds while another user holds a queue"
        else
            devmem_step_fail "rules for another user's ports, or more than a share:"
            cat "$T/attack-steal.out"
        fi
    else
        devmem_step_fail "the victim's connections were not made: ${vline:-nothing}"
    fi
    exec {VICTIM[1]}>&-
    wait "$VICTIM_PID" 2>/dev/null
    st=$(status_of attack)
    grep -Eq "port ($vport|$((vport + 1))), " <<<"$st" &&
        devmem_step_fail "a binding steers the victim's port: $st" ||
        devmem_step_ok "no binding steers port $vport or $((vport + 1))"
    baseline "after the port attacks"

    # 4. an epoll file with up to 100,000 watches where a dmabuf or socket is expected; a log flood
    if attack epoll epoll; then
        devmem_step_ok "an epoll file is refused by its name, its watches never read"
    else
        devmem_step_fail "the epoll attack:"
        cat "$T/attack-epoll.out"
    fi
    served "after the epoll file"
    # the epoll file closed before the next attack (a user whose closes pile up waits)
    baseline "after the epoll file"
    # requests by the hundreds over many connections: a user's share of the loop is what one
    # connection would get
    attack requests request-flood &
    apid=$!
    for _ in $(seq 100); do grep -q '^sent' "$T/attack-requests.out" 2>/dev/null && break; sleep 0.1; done
    served "960 bind requests queued over 60 connections"
    if wait "$apid"; then
        devmem_step_ok "960 bind requests over 60 connections, each answered"
    else
        devmem_step_fail "the request flood:"
        cat "$T/attack-requests.out"
        # what the helper said of the connections it closed
        grep -E "uid 65534: (connection closed|refused)" "$T/attack.log" |
            grep -Ev "closed by the client|bind-rx on lo" | tail -n 5
    fi
    before=$(grep -c "uid 65534" "$T/attack.log")
    attack log-flood log-flood || { devmem_step_fail "the log flood:"; cat "$T/attack-log-flood.out"; }
    lines=$(( $(grep -c "uid 65534" "$T/attack.log") - before ))
    refusals=$(awk '/^refusals/ { print $2 }' "$T/attack-log-flood.out")
    [ "$lines" -le 150 ] && grep -q "uid 65534: [0-9]* line(s) left out of the log" "$T/attack.log" &&
        devmem_step_ok "$refusals refusals in 3 s wrote $lines log lines, and said how many it left out" ||
        devmem_step_fail "$refusals refusals in 3 s wrote $lines log lines"
    baseline "after the epoll file and the log flood"

    # 5. closes no signal ends: FUSE files whose server never answers a flush. Their user is
    # turned away while its closes pile up, everyone else is served; when the FUSE server
    # stops (its connection aborted) the helper is back where it was
    mkdir -p "$T/fuse"
    "$DEVMEM_BUILD/test/unit/fuse_stall" "$T/fuse" >"$T/fuse.out" 2>&1 &
    fpid=$!
    for _ in $(seq 50); do grep -q '^mounted' "$T/fuse.out" 2>/dev/null && break; sleep 0.1; done
    if ! grep -q '^mounted' "$T/fuse.out"; then
        wait "$fpid"
        [ $? -eq 77 ] && echo "note: no FUSE here ($(cat "$T/fuse.out")): the stalled closes are not tried" ||
            devmem_step_fail "the FUSE server did not start: $(cat "$T/fuse.out")"
    else
        attack fuse fuse "$T/fuse/f" &
        apid=$!
        for _ in $(seq 150); do grep -q '^sent' "$T/attack-fuse.out" 2>/dev/null && break; sleep 0.1; done
        served "a user's closes stalled on FUSE"
        st=$(status_of attack)
        grep -q "^closing: .* 1 user(s) held back" <<<"$st" &&
            devmem_step_ok "the status names the user held back: $(grep '^closing:' <<<"$st")" ||
            devmem_step_fail "the status while closes stall: $(grep '^closing:' <<<"$st")"
        kill -TERM "$fpid"
        wait "$fpid"
        if wait "$apid"; then
            devmem_step_ok "the FUSE files' user was turned away while its closes stalled"
        else
            cp "$T/attack.log" /tmp/attack-debug.log; devmem_step_fail "the FUSE attack:"
            cat "$T/attack-fuse.out"
        fi
        baseline "after the FUSE server stopped"
    fi
    umount -l "$T/fuse" 2>/dev/null
fi
userdel "$victim" 2>/dev/null

# ---- 3, 4: MPI as nobody through the helper
mca=("${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_helper "$T/mpi.sock" --mca btl_devmem_if_include lo
    --mca btl_devmem_stats 1 --mca btl_devmem_verbose 1)
if start_helper mpi emulated "interface lo queues 1-8" "allow-group nogroup" \
    "socket-group nogroup" "max-bytes 1G"; then
    if devmem_run_checked "pingpong np=2 as nobody through the helper" pingpong 2 \
        "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 2 "${mca[@]}" "$DEVMEM_MPI_BIN/pingpong" -m 16M; then
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
        devmem_expect_line "$DEVMEM_LAST_OUT" "bindings and steering: devmem-helperd at $T/mpi.sock" \
            "the ranks asked the helper"
        n=$(grep -c "uid 65534: RX binding" "$T/mpi.log")
        [ "$n" -eq 2 ] && devmem_step_ok "the helper made 2 RX bindings for uid 65534" ||
            devmem_step_fail "the helper made $n RX bindings for uid 65534, expected 2"
        n=$(grep -Ec "uid 65534: RX binding [0-9]+ on lo queues [0-9]+-[0-9]+, port [0-9]+ steered \(rule [0-9]+, into RSS context [0-9]+\)" "$T/mpi.log")
        [ "$n" -eq 2 ] && devmem_step_ok "each binding: 4 queues, its port steered into an RSS context" ||
            devmem_step_fail "$n bindings steered into an RSS context, expected 2 (see $T/mpi.log)"
        for r in 0 1; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_queues -eq 4
            devmem_expect_spread "$DEVMEM_LAST_OUT" "$r" queues 4
        done
    fi
    # the same over IPv6 (::1): the helper steers device-flow ports of IPv6 listen sockets
    if devmem_run_checked "pingpong np=2 as nobody through the helper, IPv6" pingpong 2 \
        "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 2 "${mca[@]}" --mca btl_devmem_family ipv6 \
        "$DEVMEM_MPI_BIN/pingpong" -m 16M; then
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
        n=$(grep -c "uid 65534: RX binding" "$T/mpi.log")
        [ "$n" -eq 4 ] && devmem_step_ok "the helper made 2 more RX bindings, for ::1" ||
            devmem_step_fail "the helper made $n RX bindings for uid 65534, expected 4"
    fi
    probe=$DEVMEM_PREFIX/bin/devmem-probe
    if as_nobody "$probe" -n -i lo --helper "$T/mpi.sock" >"$T/probe.out" 2>&1 &&
        grep -q "^helper: devmem-helperd answers at $T/mpi.sock" "$T/probe.out" &&
        grep -q "policy for uid 65534 .*interfaces lo queues 1-8" "$T/probe.out"; then
        devmem_step_ok "devmem-probe as nobody reports the helper and what it allows nobody"
    else
        devmem_step_fail "devmem-probe's helper report:"
        cat "$T/probe.out"
    fi
    sleep 0.3
    st=$(status_of mpi)
    [[ "$st" == "clients=1 bindings=0 rules=0 "* ]] &&
        devmem_step_ok "after the job: ${st%%$'\n'*}" ||
        devmem_step_fail "after the job the helper still holds: $st"

    # SIGKILL mid-run
    out=$T/killed.out
    echo "---- soak as nobody, killed with SIGKILL once its bindings are made"
    as_nobody timeout --kill-after=10 60 mpirun --oversubscribe -np 2 "${mca[@]}" \
        "$DEVMEM_MPI_BIN/soak" -t 50 -m 1M >"$out" 2>&1 &
    job=$!
    if ! wait_status mpi '* bindings=2 rules=2 contexts=2 *' 100; then
        devmem_step_fail "the soak's bindings never showed: $st"
    else
        sleep 1
        pkill -KILL -u nobody -f "$DEVMEM_MPI_BIN/soak"
        killed=$EPOCHREALTIME
        if wait_status mpi 'clients=1 bindings=0 rules=0 contexts=0 *' 50; then
            devmem_step_ok "ranks killed with SIGKILL: $(_devmem_elapsed "$killed")s later the helper holds nothing (${st%%$'\n'*})"
        else
            devmem_step_fail "5 s after SIGKILL the helper still holds: $st"
        fi
    fi
    wait "$job" 2>/dev/null
    # a rank that finalizes releases its binding itself; only the killed ones leave theirs
    n=$(grep -c "connection closed (closed by the client), 1 binding(s) undone" "$T/mpi.log")
    [ "$n" -eq 2 ] &&
        devmem_step_ok "the helper undid the bindings of both killed ranks when their connections closed" ||
        devmem_step_fail "the helper log shows $n killed connections with a binding undone, expected 2"
fi

# ---- 7: the helper killed and restarted under a running job. Its connection closes, and
# with it (on the real kernel, its netlink sockets) every binding it made: the ranks must go
# on (every byte checked), each say once that its binding is gone, and give back every token;
# a job started after the restart binds again through the new helper.
if start_helper restart emulated "interface lo queues 1-8" "allow-group nogroup" \
    "socket-group nogroup" "max-bytes 1G"; then
    re=("${mca[@]/$T\/mpi.sock/$T/restart.sock}")
    re=("${re[@]/require/auto}")
    out=$T/restart.out
    echo "---- soak as nobody through a helper killed and restarted under it"
    as_nobody timeout --kill-after=10 60 mpirun --oversubscribe -np 2 "${re[@]}" \
        "$DEVMEM_MPI_BIN/soak" -t 6 -m 1M >"$out" 2>&1 &
    job=$!
    bound=
    wait_status restart '* bindings=2 *' 100 && bound=1
    sleep 1
    kill -KILL "${helper_pids[-1]}"
    wait "${helper_pids[-1]}" 2>/dev/null
    sleep 1
    start_helper restart emulated "interface lo queues 1-8" "allow-group nogroup" \
        "socket-group nogroup" "max-bytes 1G"
    wait "$job"
    rc=$?
    cat "$out"
    if [ -z "$bound" ]; then
        devmem_step_fail "the soak's bindings never showed in the first helper"
    elif [ "$rc" -eq 0 ] && grep -q "^soak: OK np=2 " "$out"; then
        devmem_step_ok "the job outlived its helper: $(grep -m1 '^soak: OK' "$out")"
    else
        devmem_step_fail "the job did not survive its helper's restart (exit $rc)"
    fi
    DEVMEM_LAST_OUT=$out
    n=$(grep -c "device path off on lo: RX binding [0-9]* is gone (devmem-helperd, which made it, closed its connection" "$out")
    [ "$n" -eq 2 ] && devmem_step_ok "each rank said once that its binding is gone" ||
        devmem_step_fail "$n ranks said their binding is gone (want 2)"
    for r in 0 1; do
        devmem_expect_stat "$out" "$r" bindings_lost -eq 1
        got=$(devmem_stat "$out" "$r" tokens_received) || got=x
        back=$(devmem_stat "$out" "$r" tokens_returned) || back=y
        [ "$got" = "$back" ] && devmem_step_ok "rank $r: tokens $got out, $back back" ||
            devmem_step_fail "rank $r: tokens $got out, $back back"
    done
    if devmem_run_checked "pingpong np=2 as nobody through the restarted helper" pingpong 2 \
        "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 2 "${mca[@]/$T\/mpi.sock/$T/restart.sock}" \
        "$DEVMEM_MPI_BIN/pingpong" -m 16M; then
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    fi
fi

# a node of 4 ranks and a NIC of 4 queues (the default is 4 a rank): with btl_devmem_mode
# require, every rank gets its share, one queue, and the job runs on the device path; while
# it runs, the helper's status shows each queue held by another rank
if start_helper four emulated "interface lo queues 1-4" "allow-group nogroup" \
    "socket-group nogroup" "max-bytes 1G"; then
    four=("${mca[@]/$T\/mpi.sock/$T/four.sock}")
    out4=$T/four-status.out
    : >"$out4"
    ( for _ in $(seq 200); do
        st=$(status_of four)
        if [[ "$st" == *" bindings=4 "* ]]; then echo "$st" >"$out4"; break; fi
        sleep 0.1
    done ) &
    watcher=$!
    if devmem_run_checked "collectives np=4 as nobody, helper queues 1-4, mode require" \
        collectives 4 "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 4 "${four[@]}" "$DEVMEM_MPI_BIN/collectives" -m 1M; then
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
        for r in 0 1 2 3; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_queues -eq 1
        done
        n=$(grep -Ec "uid 65534: RX binding [0-9]+ on lo queues ([1-4])-\1, .*; 4 asked, 4 sharer\(s\)" "$T/four.log")
        [ "$n" -eq 4 ] && devmem_step_ok "the helper granted each of the 4 ranks one queue of 1-4" ||
            devmem_step_fail "the helper logs $n one-queue bindings for 4 sharers, expected 4 (see $T/four.log)"
    fi
    wait "$watcher"
    if grep -Eq "^interface lo: queues 1-4, 4 bound \(1 pid [0-9]+, 2 pid [0-9]+, 3 pid [0-9]+, 4 pid [0-9]+\)" "$out4"; then
        devmem_step_ok "during the job the status shows who holds each queue: $(grep -Eo '^interface lo: queues 1-4, 4 bound \([^)]*\)' "$out4")"
    else
        devmem_step_fail "the status never showed the 4 queues each held by a rank: $(cat "$out4")"
    fi
fi

# a policy of one queue per binding: the ranks wish for 4 and are granted 1
if start_helper oneq emulated "interface lo queues 1-8" "allow-group nogroup" \
    "socket-group nogroup" "max-bytes 1G" "max-queues 1"; then
    oneq=("${mca[@]/$T\/mpi.sock/$T/oneq.sock}")
    if devmem_run_checked "pingpong np=2 as nobody, helper policy max-queues 1" pingpong 2 \
        "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 2 "${oneq[@]}" "$DEVMEM_MPI_BIN/pingpong" -m 16M; then
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
        devmem_expect_line "$DEVMEM_LAST_OUT" "devmem-helperd granted 1 of 4 RX queues on lo \(its policy's range and max-queues, what is free, shared among 2 local rank\(s\)\)" \
            "each rank hears it was granted 1 of the 4 it wished for"
        n=$(grep -Ec "RX binding [0-9]+ on lo queues ([0-9]+)-\1, .*; 4 asked, 2 sharer\(s\), max-queues 1" "$T/oneq.log")
        [ "$n" -eq 2 ] && devmem_step_ok "the helper logs 2 one-queue bindings, 4 asked by each of 2 sharers, max-queues 1" ||
            devmem_step_fail "the helper logs $n one-queue bindings with their ask, expected 2 (see $T/oneq.log)"
        for r in 0 1; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_queues -eq 1
        done
    fi
fi

# ---- 6: rx-buf-len values the helper refuses to start with, naming the line
for v in 5000 2K 128K 32x; do
    printf 'allow-group root\ninterface lo queues 1-4 rx-buf-len %s\n' "$v" >"$T/rxbad.conf"
    if out=$("$helperd" --check-config --config "$T/rxbad.conf" 2>&1); then
        devmem_step_fail "rx-buf-len $v was accepted: $out"
    elif [[ "$out" == *"rxbad.conf:2: rx-buf-len \"$v\": a power of two from 4K to 64K bytes"* ]]; then
        devmem_step_ok "rx-buf-len $v refused at start, naming the line: $out"
    else
        devmem_step_fail "rx-buf-len $v refused without the reason: $out"
    fi
done
printf 'interface lo queues 1-4 rx-buf-len 32K\n' >"$T/rxgood.conf"
out=$("$helperd" --check-config --config "$T/rxgood.conf" 2>&1) &&
    [[ "$out" == *"interfaces lo queues 1-4 rx-buf-len 32768;"* ]] &&
    devmem_step_ok "rx-buf-len 32K is taken and shown as 32768" ||
    devmem_step_fail "rx-buf-len 32K: $out"

# ---- 5: the real kernel's refusal, relayed
if start_helper real real "interface lo queues 0-0" "allow-group nogroup" "socket-group nogroup"; then
    refusal="the kernel refuses bind-rx on lo \(RX queue 0\): .*Operation not supported \(kernel"
    [ "$DEVMEM_HAVE_LIBMNL" = 1 ] || refusal="built without libmnl"
    devmem_expect_failure "require on lo as nobody through a real-kernel helper" \
        "lo: devmem-helperd refused bind-rx on lo: $refusal" \
        "$DEVMEM_MPI_LIMIT" as_nobody timeout --kill-after=10 "$DEVMEM_MPI_LIMIT" \
        mpirun --oversubscribe -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_mode require \
        --mca btl_devmem_helper "$T/real.sock" --mca btl_devmem_if_include lo \
        "$DEVMEM_MPI_BIN/pingpong" -m 64k
fi
if command -v ip >/dev/null 2>&1 && ip netns add "$ns" 2>/dev/null; then
    va=dmh$$a vb=dmh$$b
    va=${va:0:15} vb=${vb:0:15}
    ip -n "$ns" link add "$va" type veth peer name "$vb" &&
        ip -n "$ns" link set "$va" up && ip -n "$ns" link set "$vb" up
    ip -n "$ns" link set lo up
    if ip netns exec "$ns" "$clients" "$T/hostile.sock" foreign-netns; then
        devmem_step_ok "a socket from another network namespace is refused"
    else
        devmem_step_fail "a socket from another network namespace"
    fi
    # ---- 6: rx-buf-len on a driver that cannot set it (the other end of the pair), and the
    # kernel's words relayed from a veth: a build without libmnl asks the kernel nothing
    if [ "$DEVMEM_HAVE_LIBMNL" = 0 ]; then
        echo "note: the veth parts (real kernel through the helper) not run: built without libmnl"
    elif NETNS_EXEC="ip netns exec $ns" start_helper rxbuf real \
        "interface $vb queues 0-0 rx-buf-len 32K"; then
        rxpid=${helper_pids[-1]}
        ip -n "$ns" addr add 198.51.100.2/24 dev "$vb"
        ok=1
        for _ in 1 2; do
            ip netns exec "$ns" "$clients" "$T/rxbuf.sock" kernel-refuses "$vb" 198.51.100.2 \
                >>"$T/rxbuf.clients" 2>&1 || ok=
        done
        st=$(status_of rxbuf)
        [ -n "$ok" ] && [[ "$st" == "clients=1 bindings=0 "* ]] &&
            [[ "$st" == *"interface $vb: "*"rx-buf-len not set"* ]] &&
            [[ "$st" != *"changed:"* ]] &&
            devmem_step_ok "rx-buf-len refused by the veth driver: the helper serves on, changed nothing" ||
            { devmem_step_fail "rx-buf-len on a veth: clients ok=${ok:-no}, status: $st"; cat "$T/rxbuf.clients"; }
        n=$(grep -c "$vb: rx-buf-len 32768 (policy line 1) not set, its queues keep the driver's RX buffer length: cannot read its ring parameters: .*Operation not supported" "$T/rxbuf.log")
        [ "$n" -eq 1 ] && devmem_step_ok "the helper logs once why rx-buf-len is not set on $vb" ||
            { devmem_step_fail "$n log lines on rx-buf-len for $vb, expected 1:"; cat "$T/rxbuf.log"; }
        kill -TERM "$rxpid" && wait "$rxpid" 2>/dev/null
        if grep -q "stopped:" "$T/rxbuf.log" && ! grep -Eq "rx-buf-len [0-9]+ back|settings restored" "$T/rxbuf.log"; then
            devmem_step_ok "stopping, the helper puts nothing back on $vb (it changed nothing)"
        else
            devmem_step_fail "the rx-buf-len helper's stop:"
            cat "$T/rxbuf.log"
        fi
    fi
    if [ "$DEVMEM_HAVE_LIBMNL" = 1 ] &&
        NETNS_EXEC="ip netns exec $ns" start_helper veth real "interface $va queues 0-0"; then
        # the client in the helper's namespace: a socket from any other is refused
        ip -n "$ns" addr add 198.51.100.1/24 dev "$va"
        if ip netns exec "$ns" "$clients" "$T/veth.sock" kernel-refuses "$va" 198.51.100.1; then
            devmem_step_ok "a veth: the kernel's refusal comes back through the helper"
        else
            devmem_step_fail "a veth: the kernel's refusal"
        fi
    fi
else
    echo "note: the veth part did not run: no ip(8) or no network namespace here"
fi
devmem_finish
