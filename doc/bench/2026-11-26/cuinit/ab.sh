#!/bin/bash
# The A/B behind this directory's files, as run on the H200 machine (16 cores, Open MPI
# 5.0.10 built with CUDA): interleaved rounds of mpi_bench over loopback, two builds of the
# component and btl/tcp. COMPONENTS: name=dir pairs (a dir holding mca_btl_devmem.so);
# SHIM=1 starts CUDA in each rank first, as a GPU application would (cuinit_shim.c, built
# with `gcc -O2 -fPIC -shared -o cuinit_shim.so cuinit_shim.c`).
#   COMPONENTS="new=/opt/devmem-gpu/build/install/lib/openmpi old=/tmp/old" REPS=6 ./ab.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${COMPONENTS:?name=dir pairs}" "${MPI_BENCH:=/opt/devmem-gpu/build/bench/mpi_bench}"
sys=$(dirname "$(command -v mpirun)")/../lib/openmpi
shim=()
[ "${SHIM:-0}" = 1 ] && shim=(-x LD_PRELOAD="$here/cuinit_shim.so")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for rep in $(seq 1 "${REPS:-6}"); do
    for kind in lat bw; do
        for v in $COMPONENTS tcp; do
            name=${v%%=*}
            if [ "$v" = tcp ]; then
                args=(--mca btl tcp,self --mca btl_tcp_if_include lo)
            else
                args=(--mca mca_base_component_path "${v#*=}:$sys" --mca btl devmem,self
                    --mca btl_devmem_if_include lo)
            fi
            timeout 60 mpirun -np 2 "${shim[@]}" "${args[@]}" "$MPI_BENCH" -t "$kind" -s 8,4k \
                -x 0.5 -T 1 2>/dev/null | grep -v '^#' | sed "s/^/$rep $name /"
        done
    done
done
