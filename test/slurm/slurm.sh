# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# A Slurm cluster of two nodes for the tests, from Debian's packages (slurmctld, slurmd,
# munge): the two namespaced "hosts" of test/net/netns.sh, each slurmd in its host's network
# namespace with the host's name and a mount namespace of its own (so that each node has its
# own /run/devmem-helperd, where devmem-helperd runs as a site runs it), slurmctld beside the
# first, one munged for both (its socket is a file). Everything lives under the test's
# directory with its own configuration; nothing under /etc. Sourced after testlib.sh and
# netns.sh; netns_cleanup (at exit) stops every daemon with the namespaces.
#
#   slurm_setup HELPER-POLICY-LINES...   the cluster, a helper on each node; skips without
#                                         the packages
#   slurm_cmd CMD...                      a Slurm client command (sbatch, squeue, ...)
#   slurm_helper_status NODE              devmem-helperd --status of NODE (a or b)
#   SLURM_T                               the cluster's directory

SLURM_T=
_slurm_made_run=
SLURM_NODE_A=nodea
SLURM_NODE_B=nodeb

slurm_cmd() {
    ip netns exec "$NETNS_A" env SLURM_CONF="$SLURM_T/slurm.conf" "$@"
}

# the helper's socket as ranks of NODE see it, from the root namespace
slurm_helper_status() {
    "$DEVMEM_PREFIX/sbin/devmem-helperd" --status --socket "$SLURM_T/run-$1/helperd.sock" 2>&1
}

_slurm_conf() {
    cat <<CONF
ClusterName=devmemtest
SlurmctldHost=$SLURM_NODE_A($NETNS_ADDR_A)
AuthType=auth/munge
AuthInfo=socket=$SLURM_T/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_T/ctld
SlurmdSpoolDir=$SLURM_T/spool-%n
SlurmctldPidFile=$SLURM_T/ctld.pid
SlurmdPidFile=$SLURM_T/slurmd-%n.pid
SlurmctldLogFile=$SLURM_T/ctld.log
SlurmdLogFile=$SLURM_T/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
KillWait=5
NodeName=$SLURM_NODE_A NodeAddr=$NETNS_ADDR_A CPUs=2 State=UNKNOWN
NodeName=$SLURM_NODE_B NodeAddr=$NETNS_ADDR_B CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$SLURM_NODE_A,$SLURM_NODE_B Default=YES MaxTime=10 State=UP
CONF
}

# _slurm_node NODE NS: devmem-helperd and slurmd on NODE, in namespace NS with its name and
# its own /run/devmem-helperd
_slurm_node() {
    local node=$1 ns=$2 x=${1: -1}
    mkdir -p "$SLURM_T/run-$x" "$SLURM_T/tmp-$x" "$SLURM_T/spool-$node"
    ip netns exec "$ns" unshare --uts --mount --propagation private -- sh -c '
        hostname "$1" && mount --bind "$2/run-$3" /run/devmem-helperd || exit 1
        # the PMIx client directories of both nodes would meet in one /tmp
        mount --bind "$2/tmp-$3" /var/tmp || exit 1
        # slurmd wants cgroup file systems even with proctrack/linuxproc and task/none; the
        # /sys of "ip netns exec" has none: the v1 hierarchies this process is in
        mount -t tmpfs cgroup /sys/fs/cgroup || exit 1
        for c in cpu cpuacct cpuset memory devices freezer pids blkio; do
            mkdir -p "/sys/fs/cgroup/$c" && mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" || true
        done
        "$4/sbin/devmem-helperd" --foreground --verbose --kernel emulated \
            --config "$2/helperd.conf" >"$2/helperd-$3.log" 2>&1 &
        exec slurmd -D -N "$1" -f "$2/slurm.conf" >"$2/slurmd-$1.out" 2>&1' \
        sh "$node" "$SLURM_T" "$x" "$DEVMEM_PREFIX" &
}

# munged, the one daemon outside the namespaces (netns_cleanup stops the others)
slurm_cleanup() {
    local pid
    if [ -n "$SLURM_T" ] && pid=$(cat "$SLURM_T/munge/munged.pid" 2>/dev/null); then
        kill -TERM "$pid" 2>/dev/null
    fi
    if [ -n "$_slurm_made_run" ]; then
        rmdir /run/devmem-helperd 2>/dev/null
    fi
}

slurm_setup() {
    local c
    for c in munged slurmctld slurmd sbatch srun scancel squeue sinfo; do
        command -v "$c" >/dev/null 2>&1 || devmem_skip "'$c' not found (Debian's slurmctld, slurmd, munge, slurm-client)"
    done
    [ -x "$DEVMEM_PREFIX/sbin/devmem-helperd" ] || devmem_skip "devmem-helperd is not installed (make install)"
    SLURM_T=$DEVMEM_TEST_TMP/slurm
    mkdir -p "$SLURM_T/munge" "$SLURM_T/ctld"
    # each node's own /run/devmem-helperd is mounted on it (in the node's mount namespace)
    if [ ! -d /run/devmem-helperd ]; then
        mkdir /run/devmem-helperd && _slurm_made_run=1
    fi
    chmod 700 "$SLURM_T/munge"
    dd if=/dev/urandom of="$SLURM_T/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$SLURM_T/munge/munge.key"
    munged --force --socket="$SLURM_T/munge/munge.sock" --key-file="$SLURM_T/munge/munge.key" \
        --pid-file="$SLURM_T/munge/munged.pid" --log-file="$SLURM_T/munge/munged.log" \
        --seed-file="$SLURM_T/munge/munged.seed" ||
        { devmem_step_fail "munged did not start"; return 1; }
    _slurm_conf >"$SLURM_T/slurm.conf"
    echo "CgroupPlugin=cgroup/v1" >"$SLURM_T/cgroup.conf"
    echo "PMIxCliTmpDirBase=/var/tmp" >"$SLURM_T/mpi.conf"
    printf '%s\n' "$@" >"$SLURM_T/helperd.conf"
    ip netns exec "$NETNS_A" unshare --uts -- sh -c 'hostname "$1" && exec slurmctld -D -f "$2/slurm.conf"' \
        sh "$SLURM_NODE_A" "$SLURM_T" >"$SLURM_T/ctld.out" 2>&1 &
    _slurm_node "$SLURM_NODE_A" "$NETNS_A"
    _slurm_node "$SLURM_NODE_B" "$NETNS_B"
    for _ in $(seq 100); do
        if [ "$(slurm_cmd sinfo -h -o '%T' -N 2>/dev/null | sort -u | tr '\n' ' ')" = "idle " ]; then
            devmem_step_ok "a Slurm cluster of 2 nodes: $(slurm_cmd sinfo -h -N -o '%N %T' | tr '\n' ' ')"
            return 0
        fi
        sleep 0.2
    done
    devmem_step_fail "the Slurm cluster did not come up: $(slurm_cmd sinfo -N 2>&1 | tr '\n' ' ')"
    tail -n 20 "$SLURM_T"/ctld.log "$SLURM_T"/slurmd-*.log "$SLURM_T"/*.out 2>/dev/null
    return 1
}
