#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Pack what the GPU checks need on a GPU node that has no Open MPI and no package registry
# (a lent accelerator machine): this machine's Open MPI runtime (Debian's 4.1 packages, at
# their own paths under DIR/root, relocated with OPAL_PREFIX), the libraries it and the
# build load that a CUDA image may lack, the tools the namespace harness calls, and a slim
# copy of the build (installed component and tools, MPI test programs, benchmarks). Then on
# the node, from a copy of this source tree with DIR in it: test/gpu/node-checks.sh DIR.
#
#   test/gpu/node-bundle.sh [DIR]     (default: .gpunode in the source tree, ignored by git)
#
# Needs a build with `make install` and `make check` done (DEVMEM_BUILD, default ./build) and
# Debian's openmpi-bin. The node must be x86-64 with a glibc at least as new as this one's.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${DEVMEM_BUILD:-$src/build}
dir=${1:-$src/.gpunode}
[ -d "$build/install/lib/openmpi" ] || { echo "node-bundle: no installed build in $build" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/root" "$dir/lib" "$dir/bin" "$dir/build"

# Open MPI's own files, at their Debian paths (no compilers' data, no Fortran or Java)
for pkg in openmpi-bin libopenmpi3 openmpi-common libpmix2; do
    dpkg -L "$pkg" | while read -r f; do
        case "$f" in /usr/share/doc/* | /usr/share/man/* | */java/* | *fortran* | *mpifh* | *usempi* | */include/*) continue ;; esac
        [ -f "$f" ] || [ -L "$f" ] || continue
        mkdir -p "$dir/root$(dirname "$f")"
        cp -a "$f" "$dir/root$f"
    done
done
ln -sf orterun "$dir/root/usr/bin/mpirun"
ln -sf orterun "$dir/root/usr/bin/mpiexec"

# what the namespace harness calls, which a container image may not have
for t in ip pgrep pkill unshare hostname nsenter taskset; do
    p=$(command -v "$t") && cp -L "$p" "$dir/bin/" || echo "node-bundle: no $t here"
done

# the build, as the tests find it (DEVMEM_BUILD)
cp -a "$build/install" "$dir/build/"
cp "$build/config.h" "$dir/build/"
mkdir -p "$dir/build/test/mpi" "$dir/build/test/unit" "$dir/build/bench"
for f in "$build"/test/mpi/* "$build"/test/unit/test_cuda "$build"/test/unit/test_copy; do
    [ -f "$f" ] && [ -x "$f" ] && file "$f" | grep -q ELF && cp "$f" "$dir/build/${f#"$build"/}"
done
for f in mpi_bench tcp_bench overlap_bench cpu_work gather_bench; do
    cp "$build/bench/$f" "$dir/build/bench/"
done

# the libraries all of it loads, less the C library's own and the basics every image has
find "$dir/root" "$dir/bin" "$dir/build" -type f -exec sh -c 'file "$1" | grep -q "ELF.*dynamic" && echo "$1"' _ {} \; >"$dir/.elfs"
LD_LIBRARY_PATH=$dir/root/usr/lib/x86_64-linux-gnu:$dir/root/usr/lib/x86_64-linux-gnu/openmpi/lib \
    xargs -a "$dir/.elfs" ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|libgcc_s|libstdc\+\+|libz|libcuda|libmvec)\.so' |
    grep -v "^$dir/" | while read -r l; do cp -L "$l" "$dir/lib/"; done
rm -f "$dir/.elfs"
echo "$build" >"$dir/build-path" # compiled into the component (its help files' directory)
echo "node-bundle: $(du -sh "$dir" | cut -f1) in $dir (build from $build)"
