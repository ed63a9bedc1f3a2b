#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# btl_devmem where clusters launch jobs: a Slurm cluster of two nodes (test/slurm/slurm.sh:
# munge, slurmctld and two slurmd in the two namespaced hosts), devmem-helperd on each node
# as a site runs it, and the batch script of doc/admin-guide.md's Slurm section, as written
# (its block marked "slurm batch script"), which loads the installed modulefile and runs
#   (a) srun --mpi=pmix ./app (the pingpong program), 2 ranks a node; after it the test's own
#       lines run
#   (b) mpirun inside the allocation, 2 ranks a node,
#   (c) devmem-check --launch with srun, one rank a node: it must PASS between the two nodes
#       and put its table beside btl/tcp's and other lanes' and threads' (6 more steps),
# all over the emulated device path through the helpers (btl_devmem_mode require), every
# byte checked, tokens balanced, each node's 2 ranks sharing the helper's 4 queues (2 each).
# Then scancel of a running step: no rank is left, and neither helper holds a binding, rule
# or RSS context.
set -u
here=$(cd "$(dirname "$0")" && pwd)
NETNS_LINK=eth1 # the page's devmem NIC
. "$here/../lib/testlib.sh"
. "$here/../net/netns.sh"
. "$here/slurm.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the device path is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong soak
[ -d "$DEVMEM_PREFIX/share/modulefiles" ] || devmem_skip "no modulefiles (make install first)"
[ -r /usr/share/modules/init/bash ] || [ -r /usr/share/lmod/lmod/init/bash ] ||
    devmem_skip "no environment modules (environment-modules or lmod)"
netns_setup
trap 'slurm_cleanup; _netns_exit' EXIT
slurm_setup "interface lo queues 1-4" "interface $NETNS_LINK queues 1-4" "allow-group root" \
    "max-bytes 1G" || devmem_finish

# The job: the page's batch script, with what the test bed needs set before its commands (the
# site's module path, the emulated kernel and the helper's socket, root, the device path
# required and the stats, so that the checks below can see it), then the test's own legs.
awk -v out="$SLURM_T" -v page=doc/admin-guide.md -v first=1 -f "$here/../lib/doc-blocks.awk" \
    "$DEVMEM_SRC/doc/admin-guide.md"
k=$(awk -F'\t' '$4 == "slurm batch script" { print $1; exit }' "$SLURM_T/index")
page=$SLURM_T/block-${k:-none}.sh
if [ -z "$k" ] || ! grep -q '^srun ' "$page"; then
    devmem_step_fail "doc/admin-guide.md has no block marked 'slurm batch script' with an srun line"
    devmem_finish
fi
mkdir -p "$SLURM_T/work" && cp "$DEVMEM_MPI_BIN/pingpong" "$SLURM_T/work/app"
{
    # its "#!" and "#SBATCH" lines first, as sbatch reads them
    awk '/^#!/ || /^#SBATCH/ { print; next } { exit }' "$page"
    cat <<JOB
set -e
if [ -r /usr/share/modules/init/bash ]; then . /usr/share/modules/init/bash; else . /usr/share/lmod/lmod/init/bash; fi
module use $DEVMEM_PREFIX/share/modulefiles
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_devmem_kernel=emulated OMPI_MCA_btl_devmem_mode=require
export OMPI_MCA_btl_devmem_helper=/run/devmem-helperd/helperd.sock OMPI_MCA_btl_devmem_stats=1
echo "== srun"
JOB
    awk 'go || !(/^#!/ || /^#SBATCH/) { go = 1; print }' "$page"
    cat <<JOB
echo "== mpirun"
mpirun --mca oob_tcp_if_include $NETNS_LINK --mca btl_devmem_verbose 1 $DEVMEM_MPI_BIN/pingpong -m 16M
echo "== devmem-check"
devmem-check --launch "srun --mpi=pmix -n 2 --ntasks-per-node 1" --quick
JOB
} >"$SLURM_T/job.sh"
echo "---- the job (doc/admin-guide.md's batch script, between the test bed's lines):"
sed 's/^/    /' "$SLURM_T/job.sh"
out=$SLURM_T/job.out
echo "---- sbatch (the page's #SBATCH lines): srun --mpi=pmix ./app, then mpirun"
jobid=$(slurm_cmd sbatch --parsable -D "$SLURM_T/work" -o "$out" "$SLURM_T/job.sh")
wait_gone() { # JOBID SECONDS
    for _ in $(seq $(($2 * 5))); do
        [ -z "$(slurm_cmd squeue -h -j "$1" -o %T 2>/dev/null)" ] && return 0
        sleep 0.2
    done
    return 1
}
wait_gone "$jobid" 240 || devmem_step_fail "job $jobid still in the queue after 240 s"
cat "$out" 2>/dev/null
state=$(slurm_cmd sacct -n -j "$jobid" -o State 2>/dev/null | head -n 1)
# one leg's output: its section of the job's
leg() { awk -v want="== $1" '/^== / { on = ($0 == want); next } on' "$out" >"$SLURM_T/$1.out"; }
for how in srun mpirun; do
    leg "$how"
    DEVMEM_LAST_OUT=$SLURM_T/$how.out
    if grep -q "^pingpong: OK np=4 " "$DEVMEM_LAST_OUT"; then
        devmem_step_ok "$how: $(grep -m1 '^pingpong: OK' "$DEVMEM_LAST_OUT")"
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
        # a node's 2 ranks share the helper's 4 queues: 2 each, whoever launched them
        for r in 0 1 2 3; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_queues -eq 2
        done
    else
        devmem_step_fail "$how: no 'pingpong: OK np=4' (job $jobid ${state:-})"
    fi
done
pat="uid 0: RX binding [0-9]+ on $NETNS_LINK queues [0-9]+-[0-9]+, port [0-9]+ steered"
# devmem-check, one rank a node under srun (the modulefile put it on PATH)
leg devmem-check
verdict=$(grep '^devmem-check: \(PASS\|FAIL\)' "$SLURM_T/devmem-check.out" | tail -n 1)
if [[ "$verdict" == "devmem-check: PASS: the device path works between $SLURM_NODE_A and $SLURM_NODE_B "* ]]; then
    devmem_step_ok "devmem-check under srun: $(echo "$verdict" | cut -c1-120)"
else
    devmem_step_fail "devmem-check under srun: want a PASS between $SLURM_NODE_A and $SLURM_NODE_B, got '${verdict:-nothing}'"
fi
if grep -Eq '^  btl/tcp +btl=tcp,self ' "$SLURM_T/devmem-check.out" &&
    grep -Eq '^ +64 MiB( +[0-9.]+){7}$' "$SLURM_T/devmem-check.out"; then
    devmem_step_ok "devmem-check --launch srun: the table beside btl/tcp, lanes and threads, every column"
else
    devmem_step_fail "devmem-check --launch srun: no btl/tcp job, or a column missing at 64 MiB"
fi
n=$(grep -Ec "$pat" "$SLURM_T/helperd-a.log"; grep -Ec "$pat" "$SLURM_T/helperd-b.log")
if [ "$(echo $n)" = "11 11" ]; then
    devmem_step_ok "each node's helper made the RX bindings of its ranks: 2 for srun, 2 for mpirun, 7 for devmem-check's jobs"
else
    devmem_step_fail "RX bindings made by the helpers of node a and b: $(echo $n) (want 11 11)"
    cat "$SLURM_T/helperd-a.log"
fi

# scancel of a running step: no rank left, nothing left in either helper
cat >"$SLURM_T/soak.sh" <<JOB
#!/bin/bash
$(sed -n '2,/^echo "== srun"/p' "$SLURM_T/job.sh" | sed -e '$d' -e '/^#SBATCH/d')
module load btl_devmem
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=devmem,self OMPI_MCA_btl_devmem_if_include=$NETNS_LINK
srun --mpi=pmix $DEVMEM_MPI_BIN/soak -t 120 -m 1M
JOB
echo "---- a soak step, cancelled once its bindings are made"
jobid=$(slurm_cmd sbatch --parsable -N 2 --ntasks-per-node 2 -o "$SLURM_T/soak.out" "$SLURM_T/soak.sh")
bound=
for _ in $(seq 300); do
    if [[ "$(slurm_helper_status a)" == *" bindings=2 "* && "$(slurm_helper_status b)" == *" bindings=2 "* ]]; then
        bound=1
        break
    fi
    sleep 0.2
done
[ -n "$bound" ] && devmem_step_ok "the soak's 4 ranks hold their bindings (2 a node)" ||
    devmem_step_fail "the soak's bindings never showed: a: $(slurm_helper_status a | head -n1); b: $(slurm_helper_status b | head -n1)"
sleep 1
slurm_cmd scancel "$jobid"
cancelled=$EPOCHREALTIME
wait_gone "$jobid" 60 || devmem_step_fail "job $jobid still in the queue 60 s after scancel"
left=$(pgrep -f "$DEVMEM_MPI_BIN/soak" | tr '\n' ' ')
[ -z "$left" ] && devmem_step_ok "scancel: no rank left ($(_devmem_elapsed "$cancelled") s)" ||
    devmem_step_fail "scancel: ranks left: $left"
for node in a b; do
    for _ in $(seq 50); do
        st=$(slurm_helper_status $node | head -n 1)
        [[ "$st" == *"bindings=0 rules=0 contexts=0 "* ]] && break
        sleep 0.2
    done
    [[ "$st" == *"bindings=0 rules=0 contexts=0 "* ]] &&
        devmem_step_ok "scancel: node $node's helper holds nothing ($st)" ||
        devmem_step_fail "scancel: node $node's helper still holds: $st"
done
devmem_finish
