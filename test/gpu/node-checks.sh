#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU checks and the measurements a GPU node is lent for, on a node without Open MPI, with
# the bundle test/gpu/node-bundle.sh made (run from the root of a copy of this source tree):
#   env      the node: CPUs, GPU, driver, kernel, the bundle's Open MPI and our component
#   unit     test_cuda and test_copy (the CUDA driver layer, every gather way)
#   check    test/gpu/test_gpu_check.sh: devmem-check D D, D H, H D across two namespaces
#   buffers  test/gpu/test_gpu_buffers.sh: GPU buffers through the component, lanes, threads
#   rxt      bench/rx_threads.sh: receiving threads' overlap, bandwidth and work beside
#   host     bench/run.sh: the host path beside btl/tcp across two namespaces, small sizes
# Each stage is capped and writes into OUT (default ./gpunode-results) as it goes.
#
#   test/gpu/node-checks.sh [DIR] [STAGE,...]   (DIR: the bundle, default .gpunode)
#
# Where only a few result files come back (a lent machine's $OUT), write elsewhere and pack:
#   OUT=/tmp/r test/gpu/node-checks.sh .gpunode; tar czf "$OUT/results.tgz" -C /tmp r
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(cd "${1:-$src/.gpunode}" && pwd) || exit 1
stages=${2:-env,unit,check,buffers,rxt,host}
out=${OUT:-$PWD/gpunode-results}
mkdir -p "$out"
cd "$src" || exit 1
start=$(date +%s)
stage() { echo "=== [$(($(date +%s) - start))s] $*"; }
want() { case ",$stages," in *",$1,"*) return 0 ;; esac; return 1; }

# the build's own path, compiled into the component, leads to the bundle's copy
orig=$(cat "$dir/build-path")
if [ ! -e "$orig" ]; then
    mkdir -p "$(dirname "$orig")" && ln -s "$dir/build" "$orig"
fi
export PATH=$dir/bin:$dir/root/usr/bin:$PATH
export LD_LIBRARY_PATH=$dir/lib:$dir/root/usr/lib/x86_64-linux-gnu:$dir/root/usr/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$dir/root/usr
export PMIX_MCA_mca_base_component_path=$dir/root/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export OMPI_MCA_mtl='^ofi,psm,psm2'
export DEVMEM_BUILD=$dir/build DEVMEM_MPI_LIMIT=${DEVMEM_MPI_LIMIT:-90}

if want env; then
    stage env
    {
        echo "CPUs: $(nproc)"
        nvidia-smi -L 2>&1
        nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1
        uname -r
        head -n 2 /etc/os-release
        mpirun --version | head -n 1
        ompi_info --path pkglibdir 2>&1
        . "$src/test/lib/env.sh" && ompi_info 2>&1 | grep -E 'btl: (devmem|tcp)'
    } 2>&1 | tee "$out/env.txt"
fi
if want unit; then
    stage unit
    for t in test_cuda test_copy; do
        timeout 120 "$DEVMEM_BUILD/test/unit/$t" >"$out/$t.txt" 2>&1
        echo "$t: exit $?; $(tail -n 1 "$out/$t.txt")"
    done
fi
if want check; then
    stage check
    timeout 240 bash test/gpu/test_gpu_check.sh >"$out/check.txt" 2>&1
    echo "test_gpu_check: exit $?"
    grep -E '^(ok|FAIL|SKIP)|^devmem-check: ' "$out/check.txt" | cut -c1-200
fi
if want buffers; then
    stage buffers
    timeout 300 bash test/gpu/test_gpu_buffers.sh >"$out/buffers.txt" 2>&1
    echo "test_gpu_buffers: exit $?; $(grep -c '^ok' "$out/buffers.txt") steps ok"
    grep -E '^(FAIL|SKIP)' "$out/buffers.txt" | cut -c1-200
fi
if want rxt; then
    stage rxt
    timeout 300 bench/rx_threads.sh --reps 3 --out "$out/rxt" >"$out/rxt.txt" 2>&1
    echo "rx_threads.sh: exit $?"
    cat "$out/rxt/summary.txt" 2>/dev/null
fi
if want host; then
    stage host
    timeout 240 bench/run.sh --settings ns --yield 0,1 --transports devmem,tcp --kinds lat,bw \
        --sizes 8,64,4k,1m --reps 5 --scale 0.3 --limit 0.5 --ab idley=idle:yield \
        --out "$out/host" >"$out/host.txt" 2>&1
    echo "bench/run.sh: exit $?"
    sed -n '/^== ns, yield/,$p' "$out/host/summary.txt" 2>/dev/null | head -n 60
fi
stage finished
