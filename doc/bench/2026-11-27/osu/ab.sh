#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ab.sh OSU_PT2PT_DIR: OSU point-to-point benchmarks over loopback, 2 ranks with Open MPI's
# default binding, btl/devmem builds and btl/tcp interleaved per round. Prints "## round R
# TEST VARIANT" before each run's own output; ratios.py reads it.
# Env: ROUNDS (3), TESTS ("osu_latency osu_bw"), ARGS (passed to each test),
# VARIANTS ("new=devmem old=devmem:COMPONENT_DIR tcp=tcp": a devmem build other than this
# tree's ./build is named by the directory holding its mca_btl_devmem.so).
set -u
. "$(dirname "$0")/../../../../test/lib/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pt2pt=$1
for r in $(seq "${ROUNDS:-3}"); do
  for t in ${TESTS:-osu_latency osu_bw}; do
    for v in ${VARIANTS:-new=devmem tcp=tcp}; do
      n=${v%%=*} b=${v#*=} dir=
      case $b in *:*) dir=${b#*:} b=${b%%:*} ;; esac
      echo "## round $r $t $n"
      (
        [ -n "$dir" ] && export OMPI_MCA_mca_base_component_path="$dir:$DEVMEM_OMPI_PKGLIBDIR"
        # shellcheck disable=SC2086
        timeout 300 mpirun -np 2 --mca pml ob1 --mca btl "$b,self" --mca "btl_${b}_if_include" lo \
          "$pt2pt/$t" ${ARGS:-} 2>&1 | grep -v '^#'
        echo "rc=${PIPESTATUS[0]}"
      )
    done
  done
done
